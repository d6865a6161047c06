//! Curves of a sweep: a metric against iteration, one line per grid point (so, with the
//! other axes fixed, one line per value of an axis), the mean over the point's seeds with a
//! 95% band (Student's t over the seeds; no band for one seed). Figures are SVG drawn with
//! `plotters`' SVG backend (no system fonts needed).
//!
//! Everything is read through SQL views: `sweep_runs` for the members, `metrics_long` for the
//! values (read by position: run, iteration, metric name, value), `run_settings` for the
//! settings table. The summary measures follow the papers: the final value, the area under
//! the curve over iterations 1..N (Go-Exploit's sum of the per-step values), and the first
//! iteration with WR_p >= 0.49 (tabular AlphaZero's "close to 50%" mark).

use std::collections::BTreeMap;

use plotters::prelude::*;
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
}

/// Reads a sweep and its runs' metrics from a store opened read-only.
pub fn load(store: &Store, sweep: &str) -> Result<SweepData, ExperimentError> {
    let stored = find(store, sweep)?;
    let ids: std::collections::BTreeSet<i64> = stored.members.iter().map(|m| m.run_id).collect();
    let q = store.query("SELECT * FROM metrics_long")?;
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
    Ok(SweepData { stored, metrics })
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

/// The curves of `metric` for the grid points matching `filter`.
pub fn curves(
    data: &SweepData,
    metric: &str,
    filter: &[(String, serde_json::Value)],
) -> Vec<Curve> {
    let pts = points(data, filter);
    // Label by the axes that vary among the chosen points.
    let keys: Vec<String> = axis_keys(data)
        .into_iter()
        .filter(|k| {
            let first = pts.first().and_then(|p| p.1.get(k));
            pts.iter().any(|p| p.1.get(k) != first)
        })
        .collect();
    pts.iter()
        .map(|(point, values, runs)| {
            let mut by_it: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
            for r in runs {
                if let Some(series) = data.metrics.get(r).and_then(|m| m.get(metric)) {
                    for (&i, &v) in series {
                        by_it.entry(i).or_default().push(v);
                    }
                }
            }
            Curve {
                label: label(values, &keys),
                point: *point,
                points: by_it
                    .into_iter()
                    .filter_map(|(i, xs)| Stat::of(&xs).map(|s| (i, s)))
                    .collect(),
            }
        })
        .collect()
}

/// Tableau's ten colours: distinct, readable on white.
const COLOURS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Draws curves as an SVG document (`width` x `height` pixels).
pub fn svg(
    curves: &[Curve],
    title: &str,
    y_label: &str,
    size: (u32, u32),
) -> Result<String, ExperimentError> {
    let (mut x1, mut y0, mut y1) = (1u32, f64::INFINITY, f64::NEG_INFINITY);
    for c in curves {
        for (i, s) in &c.points {
            x1 = x1.max(*i);
            y0 = y0.min(s.lo);
            y1 = y1.max(s.hi);
        }
    }
    if !y0.is_finite() || !y1.is_finite() {
        return Err(ExperimentError::Usage(format!(
            "no values of `{y_label}` to plot (is the metric measured by these runs?)"
        )));
    }
    let pad = ((y1 - y0) * 0.05).max(1e-6);
    let (y0, y1) = (y0 - pad, y1 + pad);
    let mut out = String::new();
    let draw = |out: &mut String| -> Result<(), Box<dyn std::error::Error + '_>> {
        let root = SVGBackend::with_string(out, size).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..f64::from(x1), y0..y1)?;
        chart
            .configure_mesh()
            .x_desc("iteration")
            .x_labels((x1 as usize + 1).min(11))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc(y_label)
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        for (k, c) in curves.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            if c.points.iter().any(|(_, s)| s.n > 1) {
                let upper = c.points.iter().map(|(i, s)| (f64::from(*i), s.hi));
                let lower = c.points.iter().rev().map(|(i, s)| (f64::from(*i), s.lo));
                chart.draw_series(std::iter::once(Polygon::new(
                    upper.chain(lower).collect::<Vec<_>>(),
                    colour.mix(0.18),
                )))?;
            }
            chart
                .draw_series(LineSeries::new(
                    c.points.iter().map(|(i, s)| (f64::from(*i), s.mean)),
                    colour.stroke_width(2),
                ))?
                .label(c.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw(&mut out).map_err(|e| ExperimentError::Usage(format!("drawing the figure: {e}")))?;
    Ok(out)
}

/// A grid point's summary: for each metric, the final value and the area under the curve;
/// the first iteration with WR_p >= 0.49; each as a mean and 95% interval over the seeds.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct PointSummary {
    pub point: u32,
    pub label: String,
    pub seeds: usize,
    /// metric -> (final value, area under the curve over iterations 1..N).
    pub metrics: BTreeMap<String, (Option<Stat>, Option<Stat>)>,
    /// Over the seeds that reached it; `reached` of `seeds` did.
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
            let mut out = BTreeMap::new();
            for m in metrics {
                let mut finals = Vec::new();
                let mut areas = Vec::new();
                for r in runs {
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
            PointSummary {
                point: *point,
                label: label(values, &keys),
                seeds: runs.len(),
                metrics: out,
                reached: firsts.len(),
                first_wr_049: Stat::of(&firsts),
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
