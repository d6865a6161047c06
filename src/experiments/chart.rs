//! Line charts as SVG text, written by hand so every figure is readable the same way: the
//! legend beside the plot (never over the data), each line with its own colour (Okabe and
//! Ito's colour-blind-safe palette), dash pattern and marker, a 95% interval per point (a
//! band along iterations, whiskers at categorical x values), an optional reference line
//! (WR_p 0.5), a y-range the caller may share across figures, and integer ticks for counts.
//!
//! The elements carry classes a test or a script can find: `g.series[data-label]` holding a
//! `polyline.line`, its `path.marker`s and its interval (`polygon.band` or `line.ci`),
//! `line.ref[data-y]` for the reference line, `g.legend`. Text is plain SVG `<text>`; nothing
//! depends on fonts being installed. The same input gives the same bytes.

use std::fmt::Write as _;

use super::plot::Stat;

/// Okabe and Ito's palette (2008), distinguishable with the common colour-vision
/// deficiencies; yellow last (faint on white).
pub(crate) const COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// Dash patterns, one per line (solid first).
pub(crate) const DASHES: [&str; 6] = ["", "7 4", "2 3", "9 3 2 3", "4 2", "1 4"];

/// Marker shapes, one per line.
#[derive(Clone, Copy)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    Down,
    Cross,
}

const MARKERS: [Marker; 6] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::Down,
    Marker::Cross,
];

/// The height of a caption line, in pixels.
const CAPTION_LINE: f64 = 15.0;

/// One line: a label and its points (x, mean and interval over the seeds).
#[derive(Clone, Debug)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, Stat)>,
}

/// How the x axis reads.
#[derive(Clone, Debug)]
pub enum XAxis {
    /// Numbers (iterations): ticks chosen from the range.
    Numeric { name: String },
    /// Categories (an axis's values) at x = 0, 1, ..., labelled in order.
    Categories { name: String, labels: Vec<String> },
}

/// A figure.
#[derive(Clone, Debug)]
pub struct Chart {
    pub title: String,
    pub x: XAxis,
    pub y_name: String,
    /// The y-range drawn; `None`: from the data.
    pub y_range: Option<(f64, f64)>,
    /// Ticks at integers, printed without decimals (counts).
    pub integer_y: bool,
    /// A horizontal reference line and its label (WR_p's 0.5: even against optimal play).
    pub reference: Option<(f64, String)>,
    pub series: Vec<Series>,
    pub size: (u32, u32),
    /// Lines written under the plot, left-aligned (a figure's provenance: the metric, its
    /// seeds and interval, the sweep, the commit, the dates); the figure grows by a line each.
    pub caption: Vec<String>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" tick step (1, 2 or 5 times a power of ten) for about `n` ticks over `span`.
fn nice_step(span: f64, n: f64, integer: bool) -> f64 {
    let raw = (span / n).max(f64::MIN_POSITIVE);
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let step = p * if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    if integer { step.max(1.0).round() } else { step }
}

/// Ticks from `lo` to `hi` by `step`, and the decimals to print them with.
fn ticks(lo: f64, hi: f64, step: f64) -> (Vec<f64>, usize) {
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    ((first..=last).map(|k| k as f64 * step).collect(), decimals)
}

/// The y-range of `series` (interval ends), with the reference line inside; padded.
pub(crate) fn data_range(series: &[Series], reference: Option<f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for s in series {
        for (_, st) in &s.points {
            lo = lo.min(st.lo);
            hi = hi.max(st.hi);
        }
    }
    if let Some(r) = reference {
        lo = lo.min(r);
        hi = hi.max(r);
    }
    if !lo.is_finite() || !hi.is_finite() {
        return None;
    }
    let pad = ((hi - lo) * 0.05).max(1e-6);
    Some((lo - pad, hi + pad))
}

fn marker(out: &mut String, m: Marker, x: f64, y: f64, colour: &str) {
    let r = 4.0;
    let d = match m {
        Marker::Circle => format!(
            "M{:.1},{y:.1}a{r},{r} 0 1,0 {:.1},0a{r},{r} 0 1,0 {:.1},0Z",
            x - r,
            2.0 * r,
            -2.0 * r
        ),
        Marker::Square => format!(
            "M{:.1},{:.1}h{:.1}v{:.1}h{:.1}Z",
            x - r,
            y - r,
            2.0 * r,
            2.0 * r,
            -2.0 * r
        ),
        Marker::Triangle => format!(
            "M{x:.1},{:.1}L{:.1},{:.1}L{:.1},{:.1}Z",
            y - r - 1.0,
            x + r + 1.0,
            y + r,
            x - r - 1.0,
            y + r
        ),
        Marker::Down => format!(
            "M{x:.1},{:.1}L{:.1},{:.1}L{:.1},{:.1}Z",
            y + r + 1.0,
            x + r + 1.0,
            y - r,
            x - r - 1.0,
            y - r
        ),
        Marker::Diamond => format!(
            "M{x:.1},{:.1}L{:.1},{y:.1}L{x:.1},{:.1}L{:.1},{y:.1}Z",
            y - r - 1.0,
            x + r + 1.0,
            y + r + 1.0,
            x - r - 1.0
        ),
        Marker::Cross => format!(
            "M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}",
            x - r,
            y - r,
            x + r,
            y + r,
            x - r,
            y + r,
            x + r,
            y - r
        ),
    };
    let fill = if matches!(m, Marker::Cross) {
        "none"
    } else {
        colour
    };
    let _ = write!(
        out,
        "<path class=\"marker\" d=\"{d}\" fill=\"{fill}\" stroke=\"{colour}\" stroke-width=\"1.5\"/>"
    );
}

/// Where a figure's parts go: the canvas, the plot area inside its margins (the legend's
/// column at the right) and the data ranges it maps onto it.
struct Frame {
    w: f64,
    h: f64,
    left: f64,
    top: f64,
    /// The plot area's width and height.
    pw: f64,
    ph: f64,
    /// The legend's column width; 0 when there is no legend.
    legend_w: f64,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Frame {
    /// The pixel x of data x.
    fn sx(&self, x: f64) -> f64 {
        self.left + (x - self.x0) / (self.x1 - self.x0).max(1e-12) * self.pw
    }

    /// The pixel y of data y.
    fn sy(&self, y: f64) -> f64 {
        self.top + (1.0 - (y - self.y0) / (self.y1 - self.y0).max(1e-12)) * self.ph
    }
}

/// ` stroke-dasharray="..."` for a dash pattern, nothing for a solid line.
fn dash_attr(dash: &str) -> String {
    if dash.is_empty() {
        String::new()
    } else {
        format!(" stroke-dasharray=\"{dash}\"")
    }
}

impl Chart {
    /// The caption's lines under the x axis's name, `text.caption`.
    fn caption_lines(&self, o: &mut String, f: &Frame) {
        let n = self.caption.len() as f64;
        for (k, line) in self.caption.iter().enumerate() {
            let y = f.h - 6.0 - CAPTION_LINE * (n - 1.0 - k as f64);
            let _ = write!(
                o,
                "<text class=\"caption\" x=\"8\" y=\"{y:.1}\" font-size=\"11\" \
                 fill=\"#444\">{}</text>",
                esc(line)
            );
        }
    }

    /// The figure as an SVG document: the frame, the y axis, the x axis, the box with the
    /// axis names, the reference line, the series, the legend.
    pub fn svg(&self) -> String {
        let f = self.frame();
        let mut o = String::new();
        let _ = write!(
            o,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\
             <rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>\
             <text x=\"{:.1}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">{}</text>",
            f.left + f.pw / 2.0,
            esc(&self.title),
            w = f.w,
            h = f.h,
        );
        self.y_axis(&mut o, &f);
        let x_name = self.x_axis(&mut o, &f);
        self.plot_box(&mut o, &f, x_name);
        self.reference_line(&mut o, &f);
        for (k, s) in self.series.iter().enumerate() {
            self.one_series(&mut o, &f, k, s);
        }
        if f.legend_w > 0.0 {
            self.legend(&mut o, &f);
        }
        self.caption_lines(&mut o, &f);
        o.push_str("</svg>\n");
        o
    }

    /// The layout: margins around the plot (the legend's column as wide as its longest
    /// label, about 7 px a character), the y-range (given, else the data's) and the x-range.
    fn frame(&self) -> Frame {
        let w = f64::from(self.size.0);
        let h = f64::from(self.size.1) + CAPTION_LINE * self.caption.len() as f64;
        let longest = self
            .series
            .iter()
            .map(|s| s.label.chars().count())
            .max()
            .unwrap_or(0);
        let legend_w = if self.series.len() > 1 || !self.series.iter().all(|s| s.label.is_empty()) {
            (longest as f64 * 7.0 + 44.0).clamp(80.0, w * 0.4)
        } else {
            0.0
        };
        let bottom = 48.0 + CAPTION_LINE * self.caption.len() as f64;
        let (left, right, top) = (64.0, 12.0 + legend_w, 34.0);
        let reference = self.reference.as_ref().map(|r| r.0);
        let (y0, y1) = self
            .y_range
            .or_else(|| data_range(&self.series, reference))
            .unwrap_or((0.0, 1.0));
        let (x0, x1) = match &self.x {
            XAxis::Numeric { .. } => {
                let mut hi: f64 = 1.0;
                let mut lo: f64 = 0.0;
                for s in &self.series {
                    for (x, _) in &s.points {
                        hi = hi.max(*x);
                        lo = lo.min(*x);
                    }
                }
                (lo, hi)
            }
            XAxis::Categories { labels, .. } => (-0.5, labels.len().max(1) as f64 - 0.5),
        };
        Frame {
            w,
            h,
            left,
            top,
            pw: w - left - right,
            ph: h - top - bottom,
            legend_w,
            x0,
            x1,
            y0,
            y1,
        }
    }

    /// The y ticks and the grid lines across the plot.
    fn y_axis(&self, o: &mut String, f: &Frame) {
        let step = nice_step(f.y1 - f.y0, 5.0, self.integer_y);
        let (ys, decimals) = ticks(f.y0, f.y1, step);
        for y in ys {
            let py = f.sy(y);
            let _ = write!(
                o,
                "<line class=\"grid\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{py:.1}\" y2=\"{py:.1}\" \
                 stroke=\"#e4e4e4\"/><text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" \
                 text-anchor=\"end\">{y:.decimals$}</text>",
                f.left,
                f.left + f.pw,
                f.left - 6.0,
                py + 4.0
            );
        }
    }

    /// The x ticks (a mark below the axis and its label); returns the axis's name.
    fn x_axis(&self, o: &mut String, f: &Frame) -> &str {
        let x_tick = |o: &mut String, px: f64, label: &str| {
            let _ = write!(
                o,
                "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" \
                 stroke=\"#444\"/><text class=\"tick\" x=\"{px:.1}\" y=\"{:.1}\" \
                 text-anchor=\"middle\">{label}</text>",
                f.top + f.ph,
                f.top + f.ph + 4.0,
                f.top + f.ph + 17.0
            );
        };
        match &self.x {
            XAxis::Numeric { name } => {
                let step = nice_step(f.x1 - f.x0, 8.0, true);
                let (xs, _) = ticks(f.x0, f.x1, step);
                for x in xs {
                    x_tick(o, f.sx(x), &format!("{x:.0}"));
                }
                name
            }
            XAxis::Categories { name, labels } => {
                for (k, l) in labels.iter().enumerate() {
                    x_tick(o, f.sx(k as f64), &esc(l));
                }
                name
            }
        }
    }

    /// The plot's box and the two axis names (the y name turned upright).
    fn plot_box(&self, o: &mut String, f: &Frame, x_name: &str) {
        let _ = write!(
            o,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
             fill=\"none\" stroke=\"#444\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\
             <text transform=\"translate(14,{:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            f.left,
            f.top,
            f.pw,
            f.ph,
            f.left + f.pw / 2.0,
            // 10 px above the bottom margin's end (the caption's lines below it).
            f.top + f.ph + 38.0,
            esc(x_name),
            f.top + f.ph / 2.0,
            esc(&self.y_name)
        );
    }

    /// The dashed reference line across the plot and its label, if the chart has one.
    fn reference_line(&self, o: &mut String, f: &Frame) {
        let Some((y, label)) = &self.reference else {
            return;
        };
        let py = f.sy(*y);
        let _ = write!(
            o,
            "<line class=\"ref\" data-y=\"{y}\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{py:.1}\" \
             y2=\"{py:.1}\" stroke=\"#555\" stroke-width=\"1\" stroke-dasharray=\"3 3\"/>\
             <text class=\"ref-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" \
             fill=\"#555\" font-size=\"11\">{}</text>",
            f.left,
            f.left + f.pw,
            f.left + f.pw - 4.0,
            py - 4.0,
            esc(label)
        );
    }

    /// Series `k`: its interval (a band along numeric x, whiskers at categories), its line
    /// and its markers, in a `g.series`.
    fn one_series(&self, o: &mut String, f: &Frame, k: usize, s: &Series) {
        let categorical = matches!(self.x, XAxis::Categories { .. });
        let colour = COLOURS[k % COLOURS.len()];
        let _ = write!(o, "<g class=\"series\" data-label=\"{}\">", esc(&s.label));
        let banded = s.points.iter().any(|(_, st)| st.n > 1);
        if banded && !categorical {
            band(o, f, s, colour);
        }
        // Categorical points are nudged apart so whiskers of equal x do not overlap.
        let nudge = if categorical && self.series.len() > 1 {
            (k as f64 - (self.series.len() - 1) as f64 / 2.0) * 0.06
        } else {
            0.0
        };
        if categorical && banded {
            for (x, st) in &s.points {
                let px = f.sx(*x + nudge);
                let _ = write!(
                    o,
                    "<line class=\"ci\" x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{:.1}\" \
                     y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"1.5\"/>",
                    f.sy(st.lo),
                    f.sy(st.hi)
                );
            }
        }
        let pts: Vec<String> = s
            .points
            .iter()
            .map(|(x, st)| format!("{:.1},{:.1}", f.sx(*x + nudge), f.sy(st.mean)))
            .collect();
        let _ = write!(
            o,
            "<polyline class=\"line\" points=\"{}\" fill=\"none\" stroke=\"{colour}\" \
             stroke-width=\"2\"{}/>",
            pts.join(" "),
            dash_attr(DASHES[k % DASHES.len()])
        );
        // Markers: every point at categorical x; about ten along a long curve, offset per
        // line so markers of different lines do not sit on each other.
        let every = if categorical {
            1
        } else {
            (s.points.len() / 10).max(1)
        };
        let m = MARKERS[k % MARKERS.len()];
        for (i, (x, st)) in s.points.iter().enumerate() {
            if categorical || (i + k).is_multiple_of(every) {
                marker(o, m, f.sx(*x + nudge), f.sy(st.mean), colour);
            }
        }
        o.push_str("</g>");
    }

    /// The legend in its column right of the plot: per series its line, marker and label.
    fn legend(&self, o: &mut String, f: &Frame) {
        let lx = f.w - f.legend_w;
        let _ = write!(o, "<g class=\"legend\">");
        for (k, s) in self.series.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let ly = f.top + 10.0 + 20.0 * k as f64;
            let _ = write!(
                o,
                "<line x1=\"{lx:.1}\" x2=\"{:.1}\" y1=\"{ly:.1}\" y2=\"{ly:.1}\" \
                 stroke=\"{colour}\" stroke-width=\"2\"{}/>",
                lx + 28.0,
                dash_attr(DASHES[k % DASHES.len()])
            );
            marker(o, MARKERS[k % MARKERS.len()], lx + 14.0, ly, colour);
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                lx + 34.0,
                ly + 4.0,
                esc(&s.label)
            );
        }
        o.push_str("</g>");
    }
}

/// A series' 95% band along numeric x: the upper ends left to right, the lower ends back.
fn band(o: &mut String, f: &Frame, s: &Series, colour: &str) {
    let mut pts: Vec<String> = s
        .points
        .iter()
        .map(|(x, st)| format!("{:.1},{:.1}", f.sx(*x), f.sy(st.hi)))
        .collect();
    pts.extend(
        s.points
            .iter()
            .rev()
            .map(|(x, st)| format!("{:.1},{:.1}", f.sx(*x), f.sy(st.lo))),
    );
    let _ = write!(
        o,
        "<polygon class=\"band\" points=\"{}\" fill=\"{colour}\" fill-opacity=\"0.15\" \
         stroke=\"none\"/>",
        pts.join(" ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Charts of every kind of part: numeric x with bands and a reference line and a legend,
    /// categorical x with whiskers, one unlabelled series without a legend, integer ticks.
    fn sample_charts() -> Vec<Chart> {
        let st = |mean: f64, n: usize| Stat {
            mean,
            lo: mean - 0.05,
            hi: mean + 0.07,
            n,
        };
        let line = |label: &str, shift: f64, n: usize, len: usize| Series {
            label: label.to_string(),
            points: (0..len)
                .map(|i| (i as f64 + 1.0, st(0.3 + shift + 0.01 * i as f64, n)))
                .collect(),
        };
        let numeric = Chart {
            title: "WR_p <&> \"sweep\"".into(),
            x: XAxis::Numeric {
                name: "iteration".into(),
            },
            y_name: "WR_p".into(),
            y_range: None,
            integer_y: false,
            reference: Some((0.5, "even vs optimal".into())),
            series: (0..7)
                .map(|k| line(&format!("lr={k}"), 0.02 * k as f64, 3, 25))
                .collect(),
            size: (720, 420),
            caption: Vec::new(),
        };
        let categorical = Chart {
            title: "finals".into(),
            x: XAxis::Categories {
                name: "search.simulations".into(),
                labels: vec!["25".into(), "50".into(), "100".into()],
            },
            y_name: "seen (final)".into(),
            y_range: Some((0.0, 4000.0)),
            integer_y: true,
            reference: None,
            series: vec![
                Series {
                    label: "a".into(),
                    points: vec![(0.0, st(1000.0, 2)), (2.0, st(3000.0, 2))],
                },
                Series {
                    label: "b".into(),
                    points: vec![(1.0, st(2000.0, 1))],
                },
            ],
            size: (640, 400),
            caption: Vec::new(),
        };
        let single = Chart {
            title: String::new(),
            x: XAxis::Numeric { name: "i".into() },
            y_name: "mae_v".into(),
            y_range: None,
            integer_y: false,
            reference: None,
            series: vec![line("", 0.0, 1, 4)],
            size: (300, 200),
            caption: Vec::new(),
        };
        let empty = Chart {
            series: Vec::new(),
            ..single.clone()
        };
        vec![numeric, categorical, single, empty]
    }

    /// FNV-1a, 64 bits: a digest fixed by its definition (unlike `DefaultHasher`).
    fn fnv(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    /// The bytes of the sample charts, pinned when `svg` was one function and split at its
    /// parts (the split drew the same bytes): a change to any part changes a figure.
    #[test]
    fn the_parts_draw_the_pinned_bytes() {
        let got: Vec<(usize, u64)> = sample_charts()
            .iter()
            .map(|c| {
                let s = c.svg();
                (s.len(), fnv(s.as_bytes()))
            })
            .collect();
        assert_eq!(
            got,
            [
                (21879, 15804151585864008411),
                (2967, 9853298257893744402),
                (2361, 6609040513778326658),
                (1592, 2659920075466055383),
            ]
        );
    }

    /// A caption is written under the plot, a line each, and the figure grows to hold it;
    /// the plot itself is drawn as without one.
    #[test]
    fn a_caption_adds_its_lines_below_the_plot() {
        let plain = sample_charts().swap_remove(2);
        let with = Chart {
            caption: vec!["wr_p: 3 seeds".into(), "sweep <g> & co".into()],
            ..plain.clone()
        };
        let (a, b) = (plain.svg(), with.svg());
        assert!(
            b.contains("height=\"230\"") && a.contains("height=\"200\""),
            "{b}"
        );
        assert_eq!(b.matches("class=\"caption\"").count(), 2);
        assert!(b.contains(">sweep &lt;g&gt; &amp; co</text>"), "{b}");
        let body = |s: &str| {
            s[s.find("</text>").unwrap()..s.find("<text class=\"caption\"").unwrap_or(s.len() - 7)]
                .to_string()
        };
        assert_eq!(body(&a), body(&b), "the plot is drawn the same");
    }

    #[test]
    fn ticks_are_nice_and_integer_for_counts() {
        assert_eq!(nice_step(1.0, 5.0, false), 0.2);
        assert_eq!(nice_step(80000.0, 5.0, true), 20000.0);
        assert_eq!(nice_step(3.0, 5.0, true), 1.0);
        let (t, d) = ticks(0.0, 1.0, 0.2);
        assert_eq!((t.len(), d), (6, 1));
        let (t, d) = ticks(0.0, 80000.0, 20000.0);
        assert_eq!((t, d), (vec![0.0, 20000.0, 40000.0, 60000.0, 80000.0], 0));
    }
}
