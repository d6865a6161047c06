//! What a sweep's runs cost, in seconds per iteration per grid point: measured from the runs'
//! committed iterations (the `iterations` table's self-play, training and evaluation wall
//! times), or from a short calibration (iteration 1 of a point's first run, played into a
//! temporary store). A point not measured takes the mean of the measured points that share
//! the most axis values with it (on an N_sim grid: the points of its N_sim), so the estimate
//! follows the axes that drive the cost rather than the share of games done.

use std::collections::BTreeMap;

use super::ExperimentError;
use super::sweep::Sweep;
use crate::store::{Store, Value};

/// Measured seconds per iteration, per grid point.
#[derive(Clone, Debug, Default)]
pub struct Costs {
    /// Each grid point's axis values (JSON texts), by point.
    points: BTreeMap<u32, Vec<String>>,
    /// Seconds and iterations measured, by point.
    measured: BTreeMap<u32, (f64, u32)>,
}

impl Costs {
    /// No measurements yet, for the grid of `sweep`.
    pub fn new(sweep: &Sweep) -> Costs {
        let mut points = BTreeMap::new();
        for r in &sweep.runs {
            points.entry(r.point).or_insert_with(|| {
                let v: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(&r.point_json).unwrap_or_default();
                v.values().map(|x| x.to_string()).collect()
            });
        }
        Costs {
            points,
            measured: BTreeMap::new(),
        }
    }

    /// Adds `iterations` iterations that took `seconds` at grid point `point`.
    pub fn add(&mut self, point: u32, seconds: f64, iterations: u32) {
        if iterations == 0 || !seconds.is_finite() || seconds < 0.0 {
            return;
        }
        let e = self.measured.entry(point).or_insert((0.0, 0));
        e.0 += seconds;
        e.1 += iterations;
    }

    /// Whether any iteration of `point` was measured.
    pub fn is_measured(&self, point: u32) -> bool {
        self.measured.contains_key(&point)
    }

    /// Whether anything was measured.
    pub fn is_empty(&self) -> bool {
        self.measured.is_empty()
    }

    /// Seconds per iteration at `point`: its own measurements, else the mean of the measured
    /// points sharing the most axis values with it; `None` when nothing is measured.
    pub fn per_iteration(&self, point: u32) -> Option<f64> {
        if let Some(&(s, n)) = self.measured.get(&point) {
            return Some(s / f64::from(n));
        }
        let mine = self.points.get(&point)?;
        let shared = |p: &u32| {
            self.points
                .get(p)
                .map_or(0, |v| v.iter().zip(mine).filter(|(a, b)| a == b).count())
        };
        let best = self.measured.keys().map(shared).max()?;
        let near: Vec<f64> = self
            .measured
            .iter()
            .filter(|(p, _)| shared(p) == best)
            .map(|(_, &(s, n))| s / f64::from(n))
            .collect();
        Some(near.iter().sum::<f64>() / near.len() as f64)
    }

    /// Seconds of run time for `runs` (grid point, iterations still to run each), one after
    /// another; `None` when nothing is measured.
    pub fn estimate(&self, runs: &[(u32, u32)]) -> Option<f64> {
        let mut total = 0.0;
        for &(point, left) in runs {
            total += self.per_iteration(point)? * f64::from(left);
        }
        Some(total)
    }

    /// The measurements of the sweep's runs found in `store` (opened read-only; by run name,
    /// whichever sweep record links them): every committed iteration's wall time.
    pub fn from_store(store: &Store, sweep: &Sweep) -> Result<Costs, ExperimentError> {
        let mut costs = Costs::new(sweep);
        let q = store.query(
            "SELECT r.name, count(*), total(i.self_play_seconds + i.training_seconds \
             + i.evaluation_seconds) FROM iterations i JOIN runs r ON r.id = i.run_id \
             GROUP BY r.id",
        )?;
        let by_name: BTreeMap<&str, u32> = sweep
            .runs
            .iter()
            .map(|r| (r.cfg.name.as_str(), r.point))
            .collect();
        for row in &q.rows {
            let name = row[0].to_text();
            let (Some(&point), Value::Integer(n), Value::Real(s)) =
                (by_name.get(name.as_str()), &row[1], &row[2])
            else {
                continue;
            };
            costs.add(point, *s, u32::try_from(*n).unwrap_or(0));
        }
        Ok(costs)
    }
}

pub use crate::runs::progress::hms;

/// `2400000` as `2,400,000`: a count for people, its digits grouped by three.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Calibrates the grid points `points` of `sweep`: iteration 1 of each point's first run,
/// played on `threads` threads into a temporary store (solution included) that is removed
/// afterwards; adds each iteration's self-play, training and evaluation time to `costs`.
/// `each` is told every point as it is measured (point, seconds).
pub fn calibrate(
    sweep: &Sweep,
    points: &[u32],
    threads: usize,
    costs: &mut Costs,
    each: &mut dyn FnMut(u32, (u32, u32), f64),
) -> Result<(), ExperimentError> {
    let dir = std::env::temp_dir().join(format!(
        "tabula-calibrate-{}-{}",
        std::process::id(),
        sweep.hash.short()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| ExperimentError::io(&dir, e))?;
    let out = (|| {
        let mut store = Store::open(&dir.join("calibrate.db"))?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()
            .map_err(|e| ExperimentError::Usage(format!("starting {threads} threads: {e}")))?;
        for &p in points {
            let Some(r) = sweep.runs.iter().find(|r| r.point == p) else {
                continue;
            };
            // One iteration of each stage (the run's own settings without stages), weighted
            // by the stage's iterations: a staged run's stages can cost very differently.
            let mut first = 1;
            while first <= r.cfg.iterations {
                let last = r.cfg.stage_end(first);
                let mut cfg = r.cfg.in_force(first)?;
                cfg.iterations = 1;
                // A run of its own in the temporary store (a name holds one run's settings).
                cfg.name = format!("{}@{first}", cfg.name);
                let t = threads.max(1) as u32;
                let run = pool.install(|| {
                    crate::runs::start(&mut store, &cfg, &r.spec, t, &mut crate::runs::Quiet)
                })?;
                if let Some(s) = run.last {
                    let secs = s.self_play_seconds + s.training_seconds + s.evaluation_seconds;
                    let n = last + 1 - first;
                    costs.add(p, secs * f64::from(n), n);
                    each(p, (first, last), secs);
                }
                first = last + 1;
            }
        }
        Ok::<(), ExperimentError>(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_are_grouped_by_three_digits() {
        let g = super::grouped;
        assert_eq!(
            [g(0), g(999), g(1000), g(2_400_000), g(12_345_678)],
            ["0", "999", "1,000", "2,400,000", "12,345,678"]
        );
    }

    use super::*;

    fn costs(points: &[&[&str]]) -> Costs {
        Costs {
            points: points
                .iter()
                .enumerate()
                .map(|(i, v)| (i as u32, v.iter().map(|s| s.to_string()).collect()))
                .collect(),
            measured: BTreeMap::new(),
        }
    }

    /// An unmeasured point costs what the measured points sharing most of its values cost.
    #[test]
    fn unmeasured_points_follow_their_nearest_measured_points() {
        // init_q x simulations: points 0..3 are (loss, 6/12/25), 3..6 (draw, 6/12/25).
        let mut c = costs(&[
            &["loss", "6"],
            &["loss", "12"],
            &["loss", "25"],
            &["draw", "6"],
            &["draw", "12"],
            &["draw", "25"],
        ]);
        assert_eq!(c.estimate(&[(0, 10)]), None);
        c.add(0, 10.0, 10);
        c.add(1, 40.0, 20);
        c.add(2, 80.0, 20);
        assert_eq!(c.per_iteration(1), Some(2.0));
        assert_eq!(c.per_iteration(3), Some(1.0));
        assert_eq!(c.per_iteration(5), Some(4.0));
        assert_eq!(c.estimate(&[(3, 10), (5, 10)]), Some(50.0));
        assert!(c.is_measured(2) && !c.is_measured(4));
        assert_eq!(hms(3725.4), "1:02:05");
    }
}
