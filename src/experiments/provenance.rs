//! What a figure says about itself (issue 48): every `tabula plot` figure and every figure of
//! `tabula report` carries a caption naming the metric, the number of seeds behind each point,
//! the interval drawn, the sweep, the commit(s) its runs were built from and the dates they
//! ran. The commits, hosts and dates are the store's (`run_sessions`: one row per process
//! that worked on a run, docs/store.md "Provenance"), never the clock of the command that
//! draws: the same store gives the same bytes.

use super::ExperimentError;
use super::chart::Series;
use crate::store::{Store, Value};

/// Where a sweep's runs come from: their sessions' builds, machines and dates.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Provenance {
    /// Each distinct build: its commit (10 hex digits, or `unknown`) and tree state
    /// (`clean`, `dirty`, `unknown`), sorted.
    pub commits: Vec<(String, String)>,
    /// The hosts the runs ran on, sorted.
    pub hosts: Vec<String>,
    /// The first session's start and the last one's end (UTC dates, `YYYY-MM-DD`).
    pub first: Option<String>,
    pub last: Option<String>,
}

impl Provenance {
    /// The sessions of runs `ids` (a store written before sessions were recorded has none).
    pub(crate) fn of_runs(store: &Store, ids: &[i64]) -> Result<Provenance, ExperimentError> {
        if ids.is_empty() {
            return Ok(Provenance::default());
        }
        let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let text = |v: &Value| match v {
            Value::Null => None,
            v => Some(v.to_text()),
        };
        let q = store.query(&format!(
            "SELECT DISTINCT substr(engine_commit, 1, 10), engine_tree FROM run_sessions \
             WHERE run_id IN ({list}) ORDER BY 1, 2"
        ))?;
        let commits = q
            .rows
            .iter()
            .filter_map(|r| Some((text(&r[0])?, text(&r[1])?)))
            .collect();
        let q = store.query(&format!(
            "SELECT DISTINCT host FROM run_sessions WHERE run_id IN ({list}) ORDER BY 1"
        ))?;
        let hosts = q.rows.iter().filter_map(|r| text(&r[0])).collect();
        let q = store.query(&format!(
            "SELECT substr(min(started_at), 1, 10), \
             substr(max(coalesce(ended_at, started_at)), 1, 10) \
             FROM run_sessions WHERE run_id IN ({list})"
        ))?;
        let (first, last) = q
            .rows
            .first()
            .map_or((None, None), |r| (text(&r[0]), text(&r[1])));
        Ok(Provenance {
            commits,
            hosts,
            first,
            last,
        })
    }

    /// `commit 1a2b3c4d5e (clean)`, or `commits a (clean), b (dirty)`.
    pub(crate) fn commits_text(&self) -> String {
        let each: Vec<String> = self
            .commits
            .iter()
            .map(|(c, t)| format!("{c} ({t})"))
            .collect();
        match each.len() {
            0 => "commit not recorded".into(),
            1 => format!("commit {}", each[0]),
            _ => format!("commits {}", each.join(", ")),
        }
    }

    /// `run 2026-11-29`, `runs 2026-11-20 to 2026-11-22`.
    pub(crate) fn dates_text(&self) -> String {
        match (&self.first, &self.last) {
            (Some(a), Some(b)) if a == b => format!("run {a}"),
            (Some(a), Some(b)) => format!("run {a} to {b}"),
            _ => "dates not recorded".into(),
        }
    }
}

/// How many seeds stand behind each point of `series`, and the interval drawn, in words:
/// (`mean over 3 seeds a point`, `95% Student-t interval over the seeds`); one seed has no
/// interval.
pub(crate) fn seeds_text(series: &[Series]) -> (String, &'static str) {
    let ns = series.iter().flat_map(|s| s.points.iter().map(|p| p.1.n));
    let (lo, hi) = ns.fold((usize::MAX, 0), |(lo, hi), n| (lo.min(n), hi.max(n)));
    if hi == 0 {
        return ("no points".into(), "none");
    }
    let seeds = if lo == hi {
        format!("{lo} seed{}", if lo == 1 { "" } else { "s" })
    } else {
        format!("{lo} to {hi} seeds")
    };
    let interval = if hi < 2 {
        "none (one seed)"
    } else if lo < 2 {
        "95% Student-t interval over the seeds (none where one seed)"
    } else {
        "95% Student-t interval over the seeds"
    };
    (format!("mean over {seeds} a point"), interval)
}

/// A figure's caption, line by line: the metric and what a point is, the interval, then the
/// sweep, the build and the dates.
pub(crate) fn caption(
    metric: &str,
    series: &[Series],
    sweep: (&str, &str),
    p: &Provenance,
) -> Vec<String> {
    let (seeds, interval) = seeds_text(series);
    vec![
        format!("{metric}: {seeds}"),
        format!("interval: {interval}"),
        format!(
            "sweep {} ({}); {}; {}",
            sweep.0,
            &sweep.1[..sweep.1.len().min(12)],
            p.commits_text(),
            p.dates_text()
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::plot::Stat;

    fn series(ns: &[usize]) -> Vec<Series> {
        vec![Series {
            label: String::new(),
            points: ns
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let s = Stat {
                        mean: 0.5,
                        lo: 0.4,
                        hi: 0.6,
                        n,
                    };
                    (i as f64, s)
                })
                .collect(),
        }]
    }

    #[test]
    fn the_caption_says_seeds_interval_sweep_commit_and_dates() {
        let p = Provenance {
            commits: vec![("1a2b3c4d5e".into(), "clean".into())],
            hosts: vec!["box".into()],
            first: Some("2026-11-20".into()),
            last: Some("2026-11-22".into()),
        };
        let c = caption("wr_p", &series(&[3, 3]), ("grid", "abcdef0123456789"), &p);
        assert_eq!(
            c,
            [
                "wr_p: mean over 3 seeds a point",
                "interval: 95% Student-t interval over the seeds",
                "sweep grid (abcdef012345); commit 1a2b3c4d5e (clean); run 2026-11-20 to 2026-11-22"
            ]
        );
        assert_eq!(
            seeds_text(&series(&[1])),
            ("mean over 1 seed a point".to_string(), "none (one seed)")
        );
        let (seeds, interval) = seeds_text(&series(&[1, 2]));
        assert!(seeds.contains("1 to 2 seeds") && interval.contains("none where one seed"));
        assert_eq!(Provenance::default().commits_text(), "commit not recorded");
    }
}
