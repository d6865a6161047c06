//! `tabula report SWEEP --out DIR`: one self-contained HTML page (inline SVG, inline CSS, no
//! network). It opens with a table of contents and the final-value figures (the 2023 study's
//! Fig. 20 form: each metric's final value against one axis, a line per value of another,
//! mean and 95% interval over the seeds) with their pivoted tables, then the settings table,
//! the curves of WR_p, ERR_p, MAE_v and coverage (positions updated at least once) against
//! iteration, a summary per grid point (final value, area under the curve, first iteration
//! with WR_p >= 0.49) and the runs. The heading states where the runs come from (their
//! commits, hosts and dates, from the store's sessions), every figure carries a caption
//! (`super::provenance`), and the final values get a paired per-seed comparison between
//! lines whose seeds match (`super::paired`).
//!
//! Layout: the final-value figures take the last numeric axis as x (else the last axis) and
//! the first other axis as lines; the curves take the first axis as lines. Every combination
//! of the remaining axes' values gets its own figure. All figures of one metric share one
//! y-range; WR_p has a reference line at 0.5; counts have integer ticks. Unfinished runs are
//! left out of final values and AUC, and the page says how many. The page holds no time
//! stamp: the same store gives the same bytes. A few lines of inline script count the drawn
//! curves into `data-curves` on `<body>` (what the browser test reads back).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use super::plot::{At, Curve, Finals, SweepData, WR_MARK, curves, finals, summaries, svg_styled};
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

/// Which axes the final-value figures use: x (the last axis whose values are all numbers,
/// else the last axis), the lines (the first other axis), and facets (the rest, a figure per
/// combination of their values).
pub(crate) struct Layout {
    pub(crate) x: Option<String>,
    pub(crate) by: Option<String>,
    pub(crate) facets: Vec<Vec<(String, serde_json::Value)>>,
}

impl Layout {
    pub(crate) fn of(data: &SweepData) -> Layout {
        let axes = &data.stored.record.axes;
        let numeric = |vs: &[String]| {
            vs.iter()
                .all(|v| serde_json::from_str::<serde_json::Value>(v).is_ok_and(|j| j.is_number()))
        };
        let x = axes
            .iter()
            .rev()
            .find(|(_, vs)| numeric(vs))
            .or(axes.last())
            .map(|(k, _)| k.clone());
        let by = axes
            .iter()
            .find(|(k, _)| Some(k) != x.as_ref())
            .map(|(k, _)| k.clone());
        let rest: Vec<(String, Vec<String>)> = axes
            .iter()
            .filter(|(k, _)| Some(k) != x.as_ref() && Some(k) != by.as_ref())
            .cloned()
            .collect();
        Layout {
            x,
            by,
            facets: combinations(&rest),
        }
    }
}

/// Whether a metric of the report counts things (integer ticks).
fn counts(metric: &str) -> bool {
    METRICS.iter().any(|m| m.0 == metric && m.2 == 0)
}

/// One y-range per metric, shared by all its figures: the curves' and the final values'
/// intervals (and WR_p's reference line at 0.5).
fn y_ranges(data: &SweepData, layout: &Layout) -> BTreeMap<&'static str, (f64, f64)> {
    let mut out = BTreeMap::new();
    let facets = combinations(data.stored.record.axes.get(1..).unwrap_or(&[]));
    for (metric, _, _) in METRICS {
        let mut series: Vec<super::chart::Series> = Vec::new();
        for facet in &facets {
            for c in curves(data, metric, facet) {
                series.push(super::chart::Series {
                    label: c.label,
                    points: c.points.iter().map(|(i, s)| (f64::from(*i), *s)).collect(),
                });
            }
        }
        if let Some(x) = &layout.x {
            for facet in &layout.facets {
                if let Ok(f) = finals(data, metric, At::Final, x, layout.by.as_deref(), facet) {
                    series.extend(f.series());
                }
            }
        }
        let reference = super::plot::reference(metric).map(|r| r.0);
        if let Some(r) = super::chart::data_range(&series, reference) {
            out.insert(metric, r);
        }
    }
    out
}

/// The table of contents.
fn contents(h: &mut String, layout: &Layout) {
    h.push_str("<nav><h2>Contents</h2><ol>");
    if let Some(x) = &layout.x {
        let _ = write!(
            h,
            "<li><a href=\"#finals\">Final values against {}</a><ol>",
            esc(x)
        );
        for (m, title, _) in METRICS {
            let _ = write!(h, "<li><a href=\"#finals-{m}\">{}</a></li>", esc(title));
        }
        h.push_str(
            "<li><a href=\"#finals-tables\">the pivoted tables</a></li>\
             <li><a href=\"#finals-paired\">paired comparisons, seed by seed</a></li></ol></li>",
        );
    }
    h.push_str("<li><a href=\"#settings\">Settings</a></li><li><a href=\"#curves\">Curves against iteration</a><ol>");
    for (m, title, _) in METRICS {
        let _ = write!(h, "<li><a href=\"#curves-{m}\">{}</a></li>", esc(title));
    }
    h.push_str(
        "</ol></li><li><a href=\"#summary\">Summary per grid point</a></li>\
         <li><a href=\"#runs\">Runs</a></li></ol></nav>\n",
    );
}

/// The final-value figures (Fig. 20 form) and, per metric, the pivoted table of final values
/// (a row per line and facet, a column per x value); returns how many figures were drawn.
fn final_figures(
    h: &mut String,
    data: &SweepData,
    layout: &Layout,
    ranges: &BTreeMap<&str, (f64, f64)>,
) -> Result<usize, ExperimentError> {
    let Some(x) = &layout.x else {
        return Ok(0);
    };
    let short = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
    let _ = writeln!(
        h,
        "<h2 id=\"finals\">Final values against {}</h2>\n<p>Each metric's value at the last \
         iteration against <code>{}</code>{}: mean and 95% interval (Student's t) over the \
         seeds' finished runs, as the 2023 study's Fig. 20 shows the last WR_p against N_sim \
         per initial W/N. Unfinished runs are left out (counted below each table).</p>",
        esc(&short(x)),
        esc(x),
        layout.by.as_ref().map_or(String::new(), |b| format!(
            ", a line per value of <code>{}</code>",
            esc(b)
        ))
    );
    let mut figures = 0;
    // All metrics' figures side by side, then the tables.
    let mut tables: Vec<(String, Finals, usize)> = Vec::new();
    h.push_str("<div class=\"figs\">\n");
    for (metric, _, d) in METRICS {
        for facet in &layout.facets {
            let Ok(f) = finals(data, metric, At::Final, x, layout.by.as_deref(), facet) else {
                continue;
            };
            let facet_text: Vec<String> = facet
                .iter()
                .map(|(k, v)| format!("{}={}", short(k), v).replace('"', ""))
                .collect();
            let fig_title = if facet_text.is_empty() {
                format!("{metric} final")
            } else {
                format!("{metric} final, {}", facet_text.join(", "))
            };
            let picture = f.svg(
                data,
                &fig_title,
                (620, 360),
                ranges.get(metric).copied(),
                counts(metric),
            );
            let id = if tables.iter().any(|t| t.1.metric == metric) {
                String::new()
            } else {
                format!(" id=\"finals-{metric}\"")
            };
            let _ = writeln!(
                h,
                "<div class=\"fig final\"{id} data-metric=\"{metric}\">{}</div>",
                strip_xml_header(&picture)
            );
            figures += 1;
            tables.push((facet_text.join(", "), f, d));
        }
    }
    h.push_str("</div>\n<h3 id=\"finals-tables\">Final values, pivoted</h3>\n");
    for (facet, f, d) in &tables {
        pivot(h, facet, f, *d);
    }
    Ok(figures)
}

/// A pivoted table of final values: a row per line, a column per x value.
fn pivot(h: &mut String, facet: &str, f: &Finals, digits: usize) {
    let _ = write!(
        h,
        "<table class=\"pivot\" data-metric=\"{}\"><tr><th class=\"l\">{} {}{}</th>",
        esc(&f.metric),
        esc(&f.metric),
        f.at.name(),
        if facet.is_empty() {
            String::new()
        } else {
            format!(" ({})", esc(facet))
        }
    );
    for v in &f.x_values {
        let _ = write!(
            h,
            "<th>{}={}</th>",
            esc(f.x.rsplit('.').next().unwrap_or(&f.x)),
            esc(v)
        );
    }
    h.push_str("</tr>\n");
    for (label, pts) in &f.lines {
        let _ = write!(h, "<tr><td class=\"l\">{}</td>", esc(label));
        for i in 0..f.x_values.len() {
            let cell = pts
                .iter()
                .find(|(k, _)| *k == i)
                .map_or("–".to_string(), |(_, s)| s.show(digits));
            let _ = write!(h, "<td>{cell}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    if f.unfinished > 0 {
        let _ = writeln!(
            h,
            "<p class=\"note\">{} unfinished runs left out of this table.</p>",
            f.unfinished
        );
    }
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
    let layout = Layout::of(data);
    let ranges = y_ranges(data, &layout);
    contents(&mut h, &layout);
    let mut figures = final_figures(&mut h, data, &layout, &ranges)?;
    paired_section(&mut h, data, &layout);
    settings(&mut h, store, data)?;
    figures += self::figures(&mut h, data, &ranges)?;
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
         td,th{{border:1px solid #bbb;padding:3px 7px;text-align:right;white-space:nowrap}}\
         th{{background:#eee}} td.l,th.l{{text-align:left}}\
         .figs{{display:grid;grid-template-columns:repeat(auto-fill,minmax(600px,1fr));gap:8px}}\
         .fig{{border:1px solid #ddd}} .fig svg{{width:100%;height:auto;display:block}}\
         .wide{{overflow-x:auto}}\
         code{{font-size:12px}}</style></head>\n<body>\n<h1>Sweep {name}</h1>\n\
         <p>sweep record <code>{hash}</code>; {points} grid points × {seeds} seeds = {n} runs \
         ({present} in this store).</p>\n<p class=\"provenance\">Built from {commits}; ran \
         on {hosts}; {dates}. Every point is a mean over the seeds' runs with a 95% interval \
         (Student's t over the seeds; none for one seed); each figure's caption says how many \
         seeds.</p>\n",
        commits = esc(&data.provenance.commits_text()),
        hosts = esc(&if data.provenance.hosts.is_empty() {
            "hosts not recorded".to_string()
        } else {
            data.provenance.hosts.join(", ")
        }),
        dates = esc(&data.provenance.dates_text()),
        name = esc(&row.name),
        hash = row.hash.to_hex(),
        points = row.points,
        seeds = row.seeds,
        n = rec.runs.len(),
        present = data.stored.members.len(),
    );
}

/// The paired per-seed comparisons of the final-value figures' lines (`super::paired`): per
/// metric, each line against the first at every x value (without lines, each x value against
/// the first), over the seeds both have.
fn paired_section(h: &mut String, data: &SweepData, layout: &Layout) {
    let Some(x) = &layout.x else {
        return;
    };
    let against = match &layout.by {
        Some(b) => format!("each value of <code>{}</code> against its first", esc(b)),
        None => format!("each value of <code>{}</code> against its first", esc(x)),
    };
    let _ = writeln!(
        h,
        "<h3 id=\"finals-paired\">Paired comparisons, seed by seed</h3>\n<p>The final values \
         of {against}, run against run where both runs have the same seed: the difference per \
         seed, its mean and 95% interval (Student's t over the pairs), and how many seeds \
         paired. What two runs of one seed share cancels, so the interval is narrower than the \
         two lines' own when their seeds move together. One pair has no interval.</p>"
    );
    for (metric, _, d) in METRICS {
        let mut rows = String::new();
        for facet in &layout.facets {
            let facet_text: Vec<String> = facet
                .iter()
                .map(|(k, v)| format!("{}={}", k.rsplit('.').next().unwrap_or(k), v))
                .collect();
            for c in super::paired::paired(data, metric, x, layout.by.as_deref(), facet) {
                paired_row(&mut rows, &c, &facet_text.join(", ").replace('"', ""), d);
            }
        }
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            h,
            "<table class=\"paired\" data-metric=\"{metric}\"><tr><th class=\"l\">{metric} \
             final</th><th class=\"l\">at</th><th>seeds paired</th><th>mean difference \
             [95% interval]</th><th class=\"l\">per seed (seed: difference)</th></tr>\n{rows}\
             </table>"
        );
    }
}

/// One comparison's row of the paired table.
fn paired_row(rows: &mut String, c: &super::paired::Comparison, facet: &str, digits: usize) {
    let d = digits.max(3);
    let at = match (c.at.is_empty(), facet.is_empty()) {
        (false, false) => format!("{}, {facet}", c.at),
        (false, true) => c.at.clone(),
        (true, _) => facet.to_string(),
    };
    let mean = match c.stat {
        Some(s) if s.n > 1 => format!("{:+.d$} [{:+.d$}, {:+.d$}]", s.mean, s.lo, s.hi),
        Some(s) => format!("{:+.d$} (one pair: no interval)", s.mean),
        None => "no seed in both".to_string(),
    };
    let each: Vec<String> = c
        .diffs
        .iter()
        .map(|(seed, v)| format!("{seed}: {v:+.d$}"))
        .collect();
    let _ = writeln!(
        rows,
        "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{mean}</td>\
         <td class=\"l\">{}</td></tr>",
        esc(&c.label),
        esc(&at),
        c.diffs.len(),
        esc(&each.join(", "))
    );
}

/// Settings: a column per setting, one value when every run shares it.
fn settings(h: &mut String, store: &Store, data: &SweepData) -> Result<(), ExperimentError> {
    let rec = &data.stored.record;
    let ids: std::collections::BTreeSet<i64> =
        data.stored.members.iter().map(|m| m.run_id).collect();
    let q = store.query("SELECT * FROM run_settings")?;
    h.push_str("<h2 id=\"settings\">Settings</h2>\n<table><tr><th class=\"l\">setting</th><th class=\"l\">value</th></tr>\n");
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
fn figures(
    h: &mut String,
    data: &SweepData,
    ranges: &BTreeMap<&str, (f64, f64)>,
) -> Result<usize, ExperimentError> {
    let rec = &data.stored.record;
    h.push_str(
        "<h2 id=\"curves\">Curves</h2>\n<p>Mean over seeds; the band is the 95% interval \
         (Student's t). All figures of a metric share its y-range.</p>\n",
    );
    let facets = combinations(rec.axes.get(1..).unwrap_or(&[]));
    let mut figures = 0;
    for (metric, title, _) in METRICS {
        let _ = writeln!(
            h,
            "<h3 id=\"curves-{metric}\">{}</h3>\n<div class=\"figs\">",
            esc(title)
        );
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
            let picture = svg_styled(
                std::slice::from_ref(data),
                &cs,
                &fig_title,
                metric,
                (620, 360),
                ranges.get(metric).copied(),
                counts(metric),
            )?;
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
        "<h2 id=\"summary\">Summary per grid point</h2>\n<p>Each cell: mean [95% interval] \
         over the seeds' finished runs (unfinished runs are left out and counted). Final: the \
         last iteration's value. AUC: the sum of the values over iterations 1..N (the area \
         under the learning curve, as Go-Exploit compares them). The first iteration's \
         interval is clamped to the runs' iterations.</p>\n<div class=\"wide\"><table><tr>\
         <th class=\"l\">grid point</th><th>seeds</th><th>unfinished (left out)</th>",
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
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td>",
            esc(&s.label),
            s.seeds,
            s.unfinished
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
    h.push_str("</table></div>\n");
}

/// The runs: grid point, seed, id, name, status, progress and head.
fn runs(h: &mut String, store: &Store, data: &SweepData) -> Result<(), ExperimentError> {
    h.push_str("<h2 id=\"runs\">Runs</h2>\n<table><tr><th>point</th><th>seed</th><th>run</th><th class=\"l\">name</th><th class=\"l\">status</th><th>iterations</th><th class=\"l\">head</th></tr>\n");
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
