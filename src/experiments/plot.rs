//! Figures of a sweep, two forms:
//!
//! - curves: a metric against iteration, one line per grid point (so, with the other axes
//!   fixed, one line per value of an axis), the mean over the point's seeds with a 95% band
//!   (Student's t over the seeds; no band for one seed);
//! - final values ([`finals`]): a run's final value, maximum or area under the curve of a
//!   metric against the values of one axis, one line per value of another (`--by`), the mean
//!   and 95% interval over the seeds: the 2023 study's Fig. 20 form (last WR_p against N_sim,
//!   a line per initial W/N). Only finished runs count: an unfinished run's last value is not
//!   its final one, so it is left out and the figure and table say how many were.
//!
//! Figures are SVG written by [`super::chart`] (no system fonts needed).
//!
//! Everything is read through SQL views: `sweep_runs` for the members, `metrics_long` for the
//! values (read by position: run, iteration, metric name, value), `run_settings` for the
//! settings table. The summary measures follow the papers: the final value, the area under
//! the curve over iterations 1..N (Go-Exploit's sum of the per-step values), and the first
//! iteration with WR_p >= 0.49 (tabular AlphaZero's "close to 50%" mark).

use std::collections::BTreeMap;

use serde::Serialize;

use super::ExperimentError;
use super::sweep::{Stored, find};
use crate::store::{Store, Value};

/// A run's metrics: metric name -> iteration -> value.
pub(crate) type RunMetrics = BTreeMap<String, BTreeMap<u32, f64>>;

/// A sweep and the metrics of its runs.
pub struct SweepData {
    pub stored: Stored,
    pub metrics: BTreeMap<i64, RunMetrics>,
    /// The member runs that have run all their planned iterations.
    pub finished: std::collections::BTreeSet<i64>,
    /// The builds, hosts and dates of the member runs' sessions (the figures' captions).
    pub provenance: super::provenance::Provenance,
}

/// Reads a sweep and its runs' metrics from a store opened read-only.
pub fn load(store: &Store, sweep: &str) -> Result<SweepData, ExperimentError> {
    let stored = find(store, sweep)?;
    let ids: std::collections::BTreeSet<i64> = stored.members.iter().map(|m| m.run_id).collect();
    // Only the members' rows (SQLite applies the filter inside each arm of the view).
    let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    let q = store.query(&format!(
        "SELECT * FROM metrics_long WHERE run_id IN ({list})"
    ))?;
    if q.columns.len() < 4 {
        return Err(ExperimentError::Usage(format!(
            "the view metrics_long has columns {:?}; expected (run, iteration, metric, value)",
            q.columns
        )));
    }
    let mut metrics: BTreeMap<i64, RunMetrics> = BTreeMap::new();
    for row in &q.rows {
        let (Value::Integer(run), Value::Integer(it)) = (&row[0], &row[1]) else {
            continue;
        };
        if !ids.contains(run) {
            continue;
        }
        let name = row[2].to_text();
        let v = match row[3] {
            Value::Integer(i) => i as f64,
            Value::Real(r) => r,
            _ => continue,
        };
        metrics
            .entry(*run)
            .or_default()
            .entry(name)
            .or_default()
            .insert(*it as u32, v);
    }
    let mut finished = std::collections::BTreeSet::new();
    for m in &stored.members {
        let row = super::run_specs::find_run(store, m.run_id)?;
        if row.iterations_done >= row.iterations_planned {
            finished.insert(m.run_id);
        }
    }
    let ids: Vec<i64> = ids.into_iter().collect();
    let provenance = super::provenance::Provenance::of_runs(store, &ids)?;
    Ok(SweepData {
        stored,
        metrics,
        finished,
        provenance,
    })
}

/// The two-sided 95% critical value of Student's t with `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.wrapping_sub(1)).copied().unwrap_or(1.960)
}

/// A mean over seeds with its 95% interval (`lo == hi == mean` for one seed).
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct Stat {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    pub n: usize,
}

impl Stat {
    /// Mean and 95% t-interval of `xs` (summed in the given order); `None` when empty.
    pub(crate) fn of(xs: &[f64]) -> Option<Stat> {
        let n = xs.len();
        if n == 0 {
            return None;
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let half = if n > 1 {
            let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
            t95(n - 1) * (var / n as f64).sqrt()
        } else {
            0.0
        };
        Some(Stat {
            mean,
            lo: mean - half,
            hi: mean + half,
            n,
        })
    }

    /// `mean [lo, hi]` with `digits` decimals.
    pub(crate) fn show(&self, digits: usize) -> String {
        if self.n > 1 {
            format!(
                "{:.d$} [{:.d$}, {:.d$}]",
                self.mean,
                self.lo,
                self.hi,
                d = digits
            )
        } else {
            format!("{:.d$}", self.mean, d = digits)
        }
    }
}

/// One line of a figure: a grid point's mean curve.
#[derive(Clone, Debug, Serialize)]
pub struct Curve {
    pub label: String,
    pub point: u32,
    /// (iteration, stat over the seeds that have it).
    pub points: Vec<(u32, Stat)>,
}

/// A grid point: its index, its axis values and the run ids of its seeds.
type GridPoint = (u32, serde_json::Map<String, serde_json::Value>, Vec<i64>);

/// Grid points whose axis values match every `(key, value)` of `filter`, each with the run
/// ids of its seeds (grid order).
pub(crate) fn points(
    data: &SweepData,
    filter: &[(String, serde_json::Value)],
) -> Vec<(u32, serde_json::Map<String, serde_json::Value>, Vec<i64>)> {
    let mut out: Vec<(u32, serde_json::Map<String, serde_json::Value>, Vec<i64>)> = Vec::new();
    for m in &data.stored.members {
        let values: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&m.point_json).unwrap_or_default();
        if !filter.iter().all(|(k, v)| values.get(k) == Some(v)) {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.0 == m.point => last.2.push(m.run_id),
            _ => out.push((m.point, values, vec![m.run_id])),
        }
    }
    out
}

fn show_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A point's label: the values of the axes that vary among `keys` (short key names).
fn label(values: &serde_json::Map<String, serde_json::Value>, keys: &[String]) -> String {
    let parts: Vec<String> = keys
        .iter()
        .filter_map(|k| {
            values
                .get(k)
                .map(|v| format!("{}={}", k.rsplit('.').next().unwrap_or(k), show_value(v)))
        })
        .collect();
    if parts.is_empty() {
        "all runs".into()
    } else {
        parts.join(", ")
    }
}

/// The sweep's axis keys, in grid order.
fn axis_keys(data: &SweepData) -> Vec<String> {
    data.stored
        .record
        .axes
        .iter()
        .map(|(k, _)| k.clone())
        .collect()
}

/// The labels of grid points `pts`: the values of the axes that vary among them.
pub(crate) fn point_labels(data: &SweepData, pts: &[GridPoint]) -> Vec<String> {
    let keys: Vec<String> = axis_keys(data)
        .into_iter()
        .filter(|k| {
            let first = pts.first().and_then(|p| p.1.get(k));
            pts.iter().any(|p| p.1.get(k) != first)
        })
        .collect();
    pts.iter()
        .map(|(_, values, _)| label(values, &keys))
        .collect()
}

/// The values of `metric` at `at` of the finished runs among `runs` (in order), and how
/// many of `runs` are unfinished (left out: their last value is not a final one).
pub(crate) fn finished_values(
    data: &SweepData,
    runs: &[i64],
    metric: &str,
    at: At,
) -> (Vec<f64>, usize) {
    let mut xs = Vec::new();
    let mut unfinished = 0;
    for r in runs {
        if !data.finished.contains(r) {
            unfinished += 1;
            continue;
        }
        if let Some(v) = data
            .metrics
            .get(r)
            .and_then(|m| m.get(metric))
            .and_then(|s| at.of(s))
        {
            xs.push(v);
        }
    }
    (xs, unfinished)
}

/// The curves of `metric` for the grid points matching `filter`.
pub fn curves(
    data: &SweepData,
    metric: &str,
    filter: &[(String, serde_json::Value)],
) -> Vec<Curve> {
    let pts = points(data, filter);
    pts.iter()
        .zip(point_labels(data, &pts))
        .map(|((point, _, runs), label)| {
            let mut by_it: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
            for r in runs {
                if let Some(series) = data.metrics.get(r).and_then(|m| m.get(metric)) {
                    for (&i, &v) in series {
                        by_it.entry(i).or_default().push(v);
                    }
                }
            }
            Curve {
                label,
                point: *point,
                points: by_it
                    .into_iter()
                    .filter_map(|(i, xs)| Stat::of(&xs).map(|s| (i, s)))
                    .collect(),
            }
        })
        .collect()
}

/// Whether a metric counts things (its every value an integer: positions, games): its ticks
/// are integers.
pub fn is_count_metric(data: &SweepData, metric: &str) -> bool {
    let mut any = false;
    for m in data.metrics.values() {
        if let Some(series) = m.get(metric) {
            for v in series.values() {
                any = true;
                if v.fract() != 0.0 {
                    return false;
                }
            }
        }
    }
    any
}

/// The reference line a metric's figures get: WR_p 0.5, an even score against the optimal
/// player (what a perfect model reaches in a game whose start is even).
pub(crate) fn reference(metric: &str) -> Option<(f64, String)> {
    (metric == "wr_p").then(|| (0.5, "0.5".to_string()))
}

/// A figure's caption (its provenance, [`super::provenance`]): `metric` and what its points
/// are, the interval, then one line per sweep drawn (its name, hash, runs' commits and
/// dates; one sweep, or a study's arms drawn together, [`super::compare`]).
pub(crate) fn caption(
    sweeps: &[SweepData],
    metric: &str,
    series: &[super::chart::Series],
) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, data) in sweeps.iter().enumerate() {
        let row = &data.stored.row;
        let c = super::provenance::caption(
            metric,
            series,
            (&row.name, &row.hash.to_hex()),
            &data.provenance,
        );
        if i == 0 {
            lines.extend(c);
        } else if let Some(last) = c.last() {
            lines.push(last.clone());
        }
    }
    lines
}

/// Draws curves (a metric against iteration) of `sweeps` (one sweep, or several drawn
/// together) as an SVG document (`width` x `height` pixels, and a caption saying where they
/// come from).
pub fn svg(
    sweeps: &[SweepData],
    curves: &[Curve],
    title: &str,
    y_label: &str,
    size: (u32, u32),
) -> Result<String, ExperimentError> {
    svg_styled(sweeps, curves, title, y_label, size, None, false)
}

/// [`svg`] with a given y-range (shared with other figures) and integer ticks for counts.
pub(crate) fn svg_styled(
    sweeps: &[SweepData],
    curves: &[Curve],
    title: &str,
    y_label: &str,
    size: (u32, u32),
    y_range: Option<(f64, f64)>,
    integer_y: bool,
) -> Result<String, ExperimentError> {
    let series: Vec<super::chart::Series> = curves
        .iter()
        .map(|c| super::chart::Series {
            label: c.label.clone(),
            points: c.points.iter().map(|(i, s)| (f64::from(*i), *s)).collect(),
        })
        .collect();
    let reference = reference(y_label);
    if super::chart::data_range(&series, None).is_none() {
        return Err(ExperimentError::Usage(format!(
            "no values of `{y_label}` to plot (is the metric measured by these runs?)"
        )));
    }
    Ok(super::chart::Chart {
        title: title.to_string(),
        x: super::chart::XAxis::Numeric {
            name: "iteration".into(),
        },
        y_name: y_label.to_string(),
        y_range,
        integer_y,
        reference,
        caption: caption(sweeps, y_label, &series),
        series,
        size,
    }
    .svg())
}

/// Where along a finished run its value for a final-value figure is read.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum At {
    /// The last iteration's value.
    Final,
    /// The largest value over iterations 1..N.
    Max,
    /// The sum over iterations 1..N (the area under the learning curve).
    Auc,
}

impl std::str::FromStr for At {
    type Err = ExperimentError;

    fn from_str(s: &str) -> Result<At, ExperimentError> {
        match s {
            "final" => Ok(At::Final),
            "max" => Ok(At::Max),
            "auc" => Ok(At::Auc),
            _ => Err(ExperimentError::Usage(format!(
                "--at {s}: allowed: final (the last iteration's value), max (the largest over \
                 iterations 1..N), auc (the sum over iterations 1..N)"
            ))),
        }
    }
}

impl At {
    pub fn name(self) -> &'static str {
        match self {
            At::Final => "final",
            At::Max => "max",
            At::Auc => "AUC",
        }
    }

    /// The value of a run's series of a metric (iteration -> value) at this point.
    pub(crate) fn of(self, series: &BTreeMap<u32, f64>) -> Option<f64> {
        let after = series.range(1..).map(|(_, v)| *v);
        match self {
            At::Final => series.iter().next_back().map(|(_, v)| *v),
            At::Max => after.fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v)))),
            At::Auc => Some(after.sum()),
        }
    }
}

/// A final-value figure's data: x values (an axis's values, in its order), a line per value of
/// the `by` axis.
#[derive(Clone, Debug, Serialize)]
pub struct Finals {
    pub metric: String,
    pub at: At,
    pub x: String,
    pub x_values: Vec<String>,
    pub by: Option<String>,
    /// (label, per x index: the stat over the seeds' finished runs).
    pub lines: Vec<(String, Vec<(usize, Stat)>)>,
    /// Runs of the chosen points left out because they are not finished.
    pub unfinished: usize,
}

/// The axis `key` of the sweep, or an error naming the axes.
fn axis<'a>(data: &'a SweepData, key: &str, flag: &str) -> Result<&'a [String], ExperimentError> {
    let axes = &data.stored.record.axes;
    axes.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_slice())
        .ok_or_else(|| {
            ExperimentError::Usage(format!(
                "{flag} {key}: not an axis of sweep {}; axes: {}",
                data.stored.row.name,
                axes.iter()
                    .map(|(a, _)| a.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// The values of `metric` at `at` against axis `x`, one line per value of axis `by`, over the
/// grid points matching `filter` (every other axis must then have one value: fixed by the
/// filter or by the grid).
pub fn finals(
    data: &SweepData,
    metric: &str,
    at: At,
    x: &str,
    by: Option<&str>,
    filter: &[(String, serde_json::Value)],
) -> Result<Finals, ExperimentError> {
    let x_values = axis(data, x, "--x")?.to_vec();
    let by_values = match by {
        Some(b) if b == x => {
            return Err(ExperimentError::Usage(format!(
                "--by {b}: the same axis as --x; give another axis for the lines"
            )));
        }
        Some(b) => axis(data, b, "--by")?.to_vec(),
        None => vec![String::new()],
    };
    let pts = points(data, filter);
    one_value_elsewhere(data, &pts, x, by)?;
    let parse = |t: &String| serde_json::from_str::<serde_json::Value>(t).unwrap_or_default();
    let mut unfinished = 0;
    let mut lines = Vec::new();
    let along = Along {
        data,
        pts: &pts,
        metric,
        at,
    };
    for bv in &by_values {
        let line = along.line(x, &x_values, by.map(|b| (b, bv.as_str())), &mut unfinished);
        let label = match by {
            Some(b) => format!(
                "{}={}",
                b.rsplit('.').next().unwrap_or(b),
                show_value(&parse(bv))
            ),
            None => metric.to_string(),
        };
        lines.push((label, line));
    }
    if lines.iter().all(|(_, l)| l.is_empty()) {
        let known: std::collections::BTreeSet<&String> =
            data.metrics.values().flat_map(|m| m.keys()).collect();
        return Err(ExperimentError::Usage(format!(
            "--metric {metric}: no {} values among the finished runs of sweep {} ({unfinished} \
             unfinished left out); metrics there: {}",
            at.name(),
            data.stored.row.name,
            known.into_iter().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(Finals {
        metric: metric.to_string(),
        at,
        x: x.to_string(),
        x_values: x_values.iter().map(|v| show_value(&parse(v))).collect(),
        by: by.map(str::to_string),
        lines,
        unfinished,
    })
}

/// Refuses grid points `pts` where an axis other than `x` and `by` has several values (a
/// line would mix them): it must be fixed with `--where` or drawn with `--by`.
fn one_value_elsewhere(
    data: &SweepData,
    pts: &[GridPoint],
    x: &str,
    by: Option<&str>,
) -> Result<(), ExperimentError> {
    for (k, _) in &data.stored.record.axes {
        if k == x || Some(k.as_str()) == by {
            continue;
        }
        let mut seen: Vec<&serde_json::Value> = Vec::new();
        for (_, values, _) in pts {
            if let Some(v) = values.get(k)
                && !seen.contains(&v)
            {
                seen.push(v);
            }
        }
        if seen.len() > 1 {
            return Err(ExperimentError::Usage(format!(
                "axis `{k}` has several values among the chosen grid points ({}): fix it with \
                 --where {k}=VALUE, or draw a line per value with --by {k}",
                seen.iter()
                    .map(|v| show_value(v))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    Ok(())
}

/// One line of [`finals`]: the metric's values at `at` over the grid points `pts`.
struct Along<'a> {
    data: &'a SweepData,
    pts: &'a [GridPoint],
    metric: &'a str,
    at: At,
}

impl Along<'_> {
    /// The line's points: per value of axis `x` (by index) the statistic over the finished
    /// runs of the points with that value (and with `by`'s axis at its value); the runs not
    /// finished are counted into `unfinished`.
    fn line(
        &self,
        x: &str,
        x_values: &[String],
        by: Option<(&str, &str)>,
        unfinished: &mut usize,
    ) -> Vec<(usize, Stat)> {
        let parse = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap_or_default();
        let mut line = Vec::new();
        for (xi, xv) in x_values.iter().enumerate() {
            let mut xs = Vec::new();
            for (_, values, runs) in self.pts {
                if values.get(x) != Some(&parse(xv)) {
                    continue;
                }
                if let Some((b, bv)) = by
                    && values.get(b) != Some(&parse(bv))
                {
                    continue;
                }
                let (vs, left_out) = finished_values(self.data, runs, self.metric, self.at);
                xs.extend(vs);
                *unfinished += left_out;
            }
            if let Some(st) = Stat::of(&xs) {
                line.push((xi, st));
            }
        }
        line
    }
}

impl Finals {
    /// The series a chart draws (x at the value's index).
    pub(crate) fn series(&self) -> Vec<super::chart::Series> {
        self.lines
            .iter()
            .map(|(label, pts)| super::chart::Series {
                label: label.clone(),
                points: pts.iter().map(|(i, s)| (*i as f64, *s)).collect(),
            })
            .collect()
    }

    /// The figure as SVG, its caption saying where it comes from (`data`, its sweep);
    /// `y_range` shared with other figures if given.
    pub fn svg(
        &self,
        data: &SweepData,
        title: &str,
        size: (u32, u32),
        y_range: Option<(f64, f64)>,
        integer_y: bool,
    ) -> String {
        let series = self.series();
        super::chart::Chart {
            caption: caption(
                std::slice::from_ref(data),
                &format!("{} ({}, finished runs)", self.metric, self.at.name()),
                &series,
            ),
            title: title.to_string(),
            x: super::chart::XAxis::Categories {
                name: self.x.clone(),
                labels: self.x_values.clone(),
            },
            y_name: format!("{} ({})", self.metric, self.at.name()),
            y_range,
            integer_y: integer_y && self.at != At::Auc,
            reference: if self.at == At::Auc {
                None
            } else {
                reference(&self.metric)
            },
            series,
            size,
        }
        .svg()
    }
}

/// A grid point's summary: for each metric, the final value and the area under the curve;
/// the first iteration with WR_p >= 0.49; each as a mean and 95% interval over the seeds.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct PointSummary {
    pub point: u32,
    pub label: String,
    pub seeds: usize,
    /// Runs of the point not finished: left out of every value below.
    pub unfinished: usize,
    /// metric -> (final value, area under the curve over iterations 1..N), over the
    /// finished runs.
    pub metrics: BTreeMap<String, (Option<Stat>, Option<Stat>)>,
    /// Over the finished runs that reached it (`reached` did), the interval clamped to the
    /// iterations the runs have (1..N).
    pub(crate) first_wr_049: Option<Stat>,
    pub reached: usize,
}

/// The WR_p mark of the summary.
pub(crate) const WR_MARK: f64 = 0.49;

/// Summaries of every grid point for `metrics`.
pub(crate) fn summaries(data: &SweepData, metrics: &[&str]) -> Vec<PointSummary> {
    let pts = points(data, &[]);
    let keys = axis_keys(data);
    pts.iter()
        .map(|(point, values, runs)| {
            let series = |r: &i64, m: &str| data.metrics.get(r).and_then(|x| x.get(m)).cloned();
            // An unfinished run's last value is not its final one: left out, and counted.
            let unfinished = runs.iter().filter(|r| !data.finished.contains(r)).count();
            let runs: Vec<i64> = runs
                .iter()
                .copied()
                .filter(|r| data.finished.contains(r))
                .collect();
            let last = runs
                .iter()
                .filter_map(|r| series(r, "wr_p")?.keys().next_back().copied())
                .max()
                .unwrap_or(1);
            let mut out = BTreeMap::new();
            for m in metrics {
                let mut finals = Vec::new();
                let mut areas = Vec::new();
                for r in &runs {
                    if let Some(s) = series(r, m) {
                        if let Some((_, v)) = s.iter().next_back() {
                            finals.push(*v);
                        }
                        areas.push(s.range(1..).map(|(_, v)| v).sum::<f64>());
                    }
                }
                out.insert(m.to_string(), (Stat::of(&finals), Stat::of(&areas)));
            }
            let firsts: Vec<f64> = runs
                .iter()
                .filter_map(|r| {
                    series(r, "wr_p")?
                        .iter()
                        .find(|(_, v)| **v >= WR_MARK)
                        .map(|(i, _)| f64::from(*i))
                })
                .collect();
            let first = Stat::of(&firsts).map(|s| Stat {
                lo: s.lo.max(1.0),
                hi: s.hi.min(f64::from(last)),
                ..s
            });
            PointSummary {
                point: *point,
                label: label(values, &keys),
                seeds: runs.len(),
                unfinished,
                metrics: out,
                reached: firsts.len(),
                first_wr_049: first,
            }
        })
        .collect()
}

/// Parses `--where key=value` filters (values as JSON, bare words as strings).
pub fn parse_filter(
    texts: &[String],
    data: &SweepData,
) -> Result<Vec<(String, serde_json::Value)>, ExperimentError> {
    let axes = &data.stored.record.axes;
    texts
        .iter()
        .map(|t| {
            let (k, v) = t.split_once('=').ok_or_else(|| {
                ExperimentError::Usage(format!(
                    "--where {t}: give key=value, e.g. search.simulations=6"
                ))
            })?;
            let k = k.trim();
            let Some((_, values)) = axes.iter().find(|(a, _)| a == k) else {
                return Err(ExperimentError::Usage(format!(
                    "--where {t}: `{k}` is not an axis of sweep {}; axes: {}",
                    data.stored.row.name,
                    axes.iter()
                        .map(|(a, _)| a.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            let value = serde_json::to_value(super::run_specs::parse_value(v))
                .unwrap_or(serde_json::Value::Null);
            if !values
                .iter()
                .any(|x| serde_json::from_str::<serde_json::Value>(x).ok() == Some(value.clone()))
            {
                return Err(ExperimentError::Usage(format!(
                    "--where {t}: {v} is not a value of axis `{k}`; values: {}",
                    values.join(", ")
                )));
            }
            Ok((k.to_string(), value))
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|filter| {
            // Two values of one axis match no point: the filters contradict each other.
            for (i, (k, v)) in filter.iter().enumerate() {
                if let Some((_, w)) = filter[..i].iter().find(|(j, _)| j == k) {
                    return Err(ExperimentError::Usage(format!(
                        "--where {k}={v}: `{k}` is already given (={w}); give each axis once"
                    )));
                }
            }
            Ok(filter)
        })
}
