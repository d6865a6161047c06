//! Several sweeps in one figure (`tabula plot A --with B --with C`): the arms of a study
//! that differ in what no sweep axis can vary (a learner kind and its own settings table,
//! docs/experiments.md, "Arms in one figure"), and several metrics' final values along x
//! (`--metrics`: MuZero's value error by unroll depth, docs/muzero.md).
//!
//! Every line is labelled with its sweep's name (and its grid point's varying axes); the
//! caption names every sweep with its hash, commits and dates.

use super::ExperimentError;
use super::chart::{Chart, Series, XAxis};
use super::plot::{
    At, Curve, Stat, SweepData, caption, curves, finished_values, point_labels, points,
};

/// The curves of `metric` against iteration of every sweep (the first one's grid points
/// matching `filter`, every grid point of the others), labelled by sweep.
pub fn compared_curves(
    sweeps: &[SweepData],
    metric: &str,
    filter: &[(String, serde_json::Value)],
) -> Vec<Curve> {
    let mut out = Vec::new();
    for (i, data) in sweeps.iter().enumerate() {
        let f: &[(String, serde_json::Value)] = if i == 0 { filter } else { &[] };
        for mut c in curves(data, metric, f) {
            c.label = labelled(&data.stored.row.name, &c.label);
            out.push(c);
        }
    }
    out
}

/// The final values (`at`) of several metrics, one line per grid point of every sweep (the
/// first one's matching `filter`), x at the metric's index; and how many unfinished runs
/// were left out.
pub fn metric_lines(
    sweeps: &[SweepData],
    metrics: &[String],
    at: At,
    filter: &[(String, serde_json::Value)],
) -> (Vec<Series>, usize) {
    let mut lines = Vec::new();
    let mut unfinished = 0;
    for (i, data) in sweeps.iter().enumerate() {
        let f: &[(String, serde_json::Value)] = if i == 0 { filter } else { &[] };
        let pts = points(data, f);
        for ((_, _, runs), label) in pts.iter().zip(point_labels(data, &pts)) {
            let mut line = Vec::new();
            for (mi, m) in metrics.iter().enumerate() {
                let (xs, left_out) = finished_values(data, runs, m, at);
                // A run is counted once, not once per metric.
                if mi == 0 {
                    unfinished += left_out;
                }
                if let Some(st) = Stat::of(&xs) {
                    line.push((mi as f64, st));
                }
            }
            if line.is_empty() {
                continue; // a sweep without these metrics (an arm that has no model)
            }
            lines.push(Series {
                label: labelled(&data.stored.row.name, &label),
                points: line,
            });
        }
    }
    (lines, unfinished)
}

/// `sweep` or `sweep: point label` (a sweep of one grid point has the label "all runs").
fn labelled(sweep: &str, label: &str) -> String {
    if label.is_empty() || label == "all runs" {
        sweep.to_string()
    } else {
        format!("{sweep}: {label}")
    }
}

/// The metrics' shared name prefix up to an underscore (`mae_v_depth_` for
/// `mae_v_depth_0..5`) and each metric's rest, one word each: the x-axis's name and labels
/// (else `metric` and the whole names).
pub fn metric_axis(metrics: &[String]) -> (String, Vec<String>) {
    let first = &metrics[0];
    let mut cut = first.len();
    for m in &metrics[1..] {
        cut = cut.min(
            first
                .bytes()
                .zip(m.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    let cut = first[..cut].rfind('_').map_or(0, |i| i + 1);
    // Each label one word (`0`, `rules`), or the metrics' whole names.
    if cut == 0
        || metrics
            .iter()
            .any(|m| m.len() == cut || m[cut..].contains('_'))
    {
        return ("metric".into(), metrics.to_vec());
    }
    (
        first[..cut].to_string(),
        metrics.iter().map(|m| m[cut..].to_string()).collect(),
    )
}

/// Several metrics' final values along x as SVG (x labelled by [`metric_axis`]).
pub fn metrics_svg(
    sweeps: &[SweepData],
    lines: Vec<Series>,
    (metrics, at): (&[String], At),
    title: &str,
    size: (u32, u32),
) -> Result<String, ExperimentError> {
    if super::chart::data_range(&lines, None).is_none() {
        return Err(ExperimentError::Usage(format!(
            "--metrics {}: no {} values among the finished runs",
            metrics.join(","),
            at.name()
        )));
    }
    let (name, labels) = metric_axis(metrics);
    let what = format!(
        "{} ({}, finished runs)",
        name.trim_end_matches('_'),
        at.name()
    );
    Ok(Chart {
        title: title.to_string(),
        x: XAxis::Categories { name, labels },
        y_name: what.clone(),
        y_range: None,
        integer_y: false,
        reference: None,
        caption: caption(sweeps, &what, &lines),
        series: lines,
        size,
    }
    .svg())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_metric_axis_is_the_shared_prefix_at_an_underscore() {
        let (name, labels) = metric_axis(&strings(&[
            "mae_v_depth_0",
            "mae_v_depth_1",
            "mae_v_depth_10",
        ]));
        assert_eq!(name, "mae_v_depth_");
        assert_eq!(labels, strings(&["0", "1", "10"]));
        let (name, labels) = metric_axis(&strings(&["wr_p", "err_p"]));
        assert_eq!(name, "metric");
        assert_eq!(labels, strings(&["wr_p", "err_p"]));
        let (name, labels) = metric_axis(&strings(&["mae_root_model", "mae_root_rules"]));
        assert_eq!(
            (name.as_str(), labels),
            ("mae_root_", strings(&["model", "rules"]))
        );
        let (name, _) = metric_axis(&strings(&["mae_v", "mae_v_depth_1"]));
        assert_eq!(name, "metric");
    }

    #[test]
    fn labels_name_the_sweep_and_the_point() {
        assert_eq!(labelled("ewn-az", "all runs"), "ewn-az");
        assert_eq!(
            labelled("ewn-az", "simulations=50"),
            "ewn-az: simulations=50"
        );
    }
}
