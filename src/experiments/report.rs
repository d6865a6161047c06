//! `tabula report SWEEP --out DIR`: one self-contained HTML page (inline SVG, inline CSS, no
//! network) with the settings table, the runs, the curves of WR_p, ERR_p, MAE_v and coverage
//! (positions updated at least once), and a summary per grid point (final value, area under
//! the curve, first iteration with WR_p >= 0.49; mean and 95% interval over the seeds).
//!
//! Layout: the first axis (in the sweep's key order) gives the lines of each figure; every
//! combination of the other axes' values gets its own figure. The page holds no time stamp:
//! the same store gives the same bytes. A few lines of inline script count the drawn curves
//! into `data-curves` on `<body>` (what the browser test reads back).

use std::fmt::Write as _;
use std::path::PathBuf;

use super::plot::{Curve, SweepData, WR_MARK, curves, summaries, svg};
use super::{ExperimentError, run_specs};
use crate::store::Store;

/// The metrics drawn and summarised: (view name, title, decimals).
pub(crate) const METRICS: [(&str, &str, usize); 4] = [
    ("wr_p", "WR_p (vs the optimal player)", 3),
    ("err_p", "ERR_p (test positions)", 4),
    ("mae_v", "MAE_v (test positions)", 4),
    ("updated_1", "coverage (positions updated ≥ 1)", 0),
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// What was written (the page's path, its figures and runs).
#[derive(Debug, serde::Serialize)]
pub struct Written {
    pub page: PathBuf,
    pub figures: usize,
    pub runs: usize,
}

/// Every combination of the values of `axes` (JSON texts), in grid order.
fn combinations(axes: &[(String, Vec<String>)]) -> Vec<Vec<(String, serde_json::Value)>> {
    let mut out: Vec<Vec<(String, serde_json::Value)>> = vec![Vec::new()];
    for (k, values) in axes {
        let mut next = Vec::new();
        for prefix in &out {
            for v in values {
                let mut c = prefix.clone();
                c.push((
                    k.clone(),
                    serde_json::from_str(v).unwrap_or(serde_json::Value::Null),
                ));
                next.push(c);
            }
        }
        out = next;
    }
    out
}

/// The page of sweep `sweep` of the store (opened read-only), to be written as
/// `DIR/index.html` (the command line writes it, through its guarded output files).
pub struct Page {
    pub html: String,
    pub figures: usize,
    pub runs: usize,
}

/// The page of sweep `sweep`.
pub fn page(store: &Store, sweep: &str) -> Result<Page, ExperimentError> {
    let data = super::plot::load(store, sweep)?;
    let (html, figures) = render(store, &data)?;
    Ok(Page {
        html,
        figures,
        runs: data.stored.members.len(),
    })
}

/// The page and its number of figures. The sections, in page order: the heading, the
/// settings, the curves, the summary per grid point, the runs.
pub(crate) fn render(store: &Store, data: &SweepData) -> Result<(String, usize), ExperimentError> {
    let mut h = String::new();
    heading(&mut h, data);
    settings(&mut h, store, data)?;
    let figures = figures(&mut h, data)?;
    summary(&mut h, data);
    runs(&mut h, store, data)?;
    h.push_str(
        "<script>document.body.dataset.curves = String(document.querySelectorAll('.fig svg polyline, .fig svg path').length); document.body.dataset.figures = String(document.querySelectorAll('.fig svg').length);</script>\n</body></html>\n",
    );
    Ok((h, figures))
}

/// The document's head (inline CSS) and the page's heading: the sweep, its record, its size.
fn heading(h: &mut String, data: &SweepData) {
    let rec = &data.stored.record;
    let row = &data.stored.row;
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>sweep {name}</title><style>\
         body{{font-family:sans-serif;margin:2em;max-width:1500px;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0;font-size:13px}}\
         td,th{{border:1px solid #bbb;padding:3px 7px;text-align:right}}\
         th{{background:#eee}} td.l,th.l{{text-align:left}}\
         .figs{{display:flex;flex-wrap:wrap;gap:8px}} .fig{{border:1px solid #ddd}}\
         code{{font-size:12px}}</style></head>\n<body>\n<h1>Sweep {name}</h1>\n\
         <p>sweep record <code>{hash}</code>; {points} grid points × {seeds} seeds = {n} runs \
         ({present} in this store).</p>\n",
        name = esc(&row.name),
        hash = row.hash.to_hex(),
        points = row.points,
        seeds = row.seeds,
        n = rec.runs.len(),
        present = data.stored.members.len(),
    );
}

/// Settings: a column per setting, one value when every run shares it.
fn settings(h: &mut String, store: &Store, data: &SweepData) -> Result<(), ExperimentError> {
    let rec = &data.stored.record;
    let ids: std::collections::BTreeSet<i64> =
        data.stored.members.iter().map(|m| m.run_id).collect();
    let q = store.query("SELECT * FROM run_settings")?;
    h.push_str("<h2>Settings</h2>\n<table><tr><th class=\"l\">setting</th><th class=\"l\">value</th></tr>\n");
    for (c, col) in q.columns.iter().enumerate() {
        if matches!(col.as_str(), "run_id" | "name" | "seed") {
            continue;
        }
        let mut values: Vec<String> = Vec::new();
        for r in &q.rows {
            let crate::store::Value::Integer(id) = r[0] else {
                continue;
            };
            if ids.contains(&id) {
                let v = r[c].to_text();
                if !values.contains(&v) {
                    values.push(v);
                }
            }
        }
        let shown = if values.len() > 1 {
            format!("<b>varies:</b> {}", esc(&values.join(" | ")))
        } else {
            esc(&values.concat())
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{shown}</td></tr>",
            esc(col)
        );
    }
    let _ = writeln!(
        h,
        "<tr><td class=\"l\">seeds</td><td class=\"l\">{}</td></tr>",
        rec.seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (k, vs) in &rec.axes {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">axis <b>{}</b></td><td class=\"l\">{}</td></tr>",
            esc(k),
            esc(&vs.join(", "))
        );
    }
    h.push_str("</table>\n");
    Ok(())
}

/// The curves: per metric, a figure per combination of the axes after the first; returns
/// how many figures were drawn.
fn figures(h: &mut String, data: &SweepData) -> Result<usize, ExperimentError> {
    let rec = &data.stored.record;
    h.push_str(
        "<h2>Curves</h2>\n<p>Mean over seeds; the band is the 95% interval (Student's t).</p>\n",
    );
    let facets = combinations(rec.axes.get(1..).unwrap_or(&[]));
    let mut figures = 0;
    for (metric, title, _) in METRICS {
        let _ = writeln!(h, "<h3>{}</h3>\n<div class=\"figs\">", esc(title));
        for facet in &facets {
            let cs: Vec<Curve> = curves(data, metric, facet)
                .into_iter()
                .filter(|c| !c.points.is_empty())
                .collect();
            if cs.is_empty() {
                continue;
            }
            let facet_text: Vec<String> = facet
                .iter()
                .map(|(k, v)| format!("{}={}", k.rsplit('.').next().unwrap_or(k), v))
                .collect();
            let fig_title = if facet_text.is_empty() {
                metric.to_string()
            } else {
                format!("{metric}, {}", facet_text.join(", ")).replace('"', "")
            };
            let picture = svg(&cs, &fig_title, metric, (480, 330))?;
            let _ = writeln!(
                h,
                "<div class=\"fig\" data-metric=\"{metric}\">{}</div>",
                strip_xml_header(&picture)
            );
            figures += 1;
        }
        h.push_str("</div>\n");
    }
    Ok(figures)
}

/// The summary per grid point: final value, AUC and the first iteration at the WR_p mark.
fn summary(h: &mut String, data: &SweepData) {
    let metric_names: Vec<&str> = METRICS.iter().map(|m| m.0).collect();
    let sums = summaries(data, &metric_names);
    h.push_str(
        "<h2>Summary per grid point</h2>\n<p>Each cell: mean [95% interval] over the seeds. \
         Final: the last iteration's value. AUC: the sum of the values over iterations 1..N \
         (the area under the learning curve, as Go-Exploit compares them).</p>\n<table><tr>\
         <th class=\"l\">grid point</th><th>seeds</th>",
    );
    for (m, _, _) in METRICS {
        let _ = write!(h, "<th>{m} final</th><th>{m} AUC</th>");
    }
    let _ = writeln!(
        h,
        "<th>first iteration WR_p ≥ {WR_MARK} (reached)</th></tr>"
    );
    for s in &sums {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td>",
            esc(&s.label),
            s.seeds
        );
        for (m, _, d) in METRICS {
            let (fin, auc) = s.metrics.get(m).cloned().unwrap_or((None, None));
            let cell =
                |x: Option<super::plot::Stat>, d: usize| x.map_or("–".to_string(), |x| x.show(d));
            let _ = write!(
                h,
                "<td>{}</td><td>{}</td>",
                cell(fin, d),
                cell(auc, d.min(2))
            );
        }
        let _ = writeln!(
            h,
            "<td>{} ({}/{})</td></tr>",
            s.first_wr_049.map_or("–".to_string(), |x| x.show(1)),
            s.reached,
            s.seeds
        );
    }
    h.push_str("</table>\n");
}

/// The runs: grid point, seed, id, name, status, progress and head.
fn runs(h: &mut String, store: &Store, data: &SweepData) -> Result<(), ExperimentError> {
    h.push_str("<h2>Runs</h2>\n<table><tr><th>point</th><th>seed</th><th>run</th><th class=\"l\">name</th><th class=\"l\">status</th><th>iterations</th><th class=\"l\">head</th></tr>\n");
    for m in &data.stored.members {
        let r = run_specs::find_run(store, m.run_id)?;
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}/{}</td><td class=\"l\"><code>{}</code></td></tr>",
            m.point,
            m.seed,
            m.run_id,
            esc(&r.name),
            r.status.as_str(),
            r.iterations_done,
            r.iterations_planned,
            r.head.map_or("-".to_string(), |x| x.to_hex())
        );
    }
    h.push_str("</table>\n");
    Ok(())
}

/// An SVG document without its XML declaration, for inlining in HTML.
fn strip_xml_header(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}
