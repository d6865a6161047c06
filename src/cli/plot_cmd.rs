//! `tabula plot`: a metric of a sweep against iteration, or its final value against an axis,
//! as SVG.

use std::path::Path;

use tabula::experiments::plot::{At, curves, finals, load, parse_filter, svg};
use tabula::store::Store;

use super::args::PlotArgs;
use super::output::{OutputFile, outln};

pub(crate) fn plot(db: Option<&Path>, args: &PlotArgs) -> anyhow::Result<()> {
    let db = Store::resolve_path(db);
    let out = OutputFile {
        flag: "--out",
        path: &args.out,
    };
    out.check(&db, false)?;
    let store = Store::open_read_only(&db)?;
    let data = load(&store, &args.sweep)?;
    let filter = parse_filter(&args.filter, &data)?;
    if !args.with.is_empty() || !args.metrics.is_empty() {
        if args.x.is_some() || args.by.is_some() {
            anyhow::bail!(
                "--with and --metrics draw curves against iteration or metrics along x; --x and \
                 --by draw one sweep's axis (leave out one or the other)"
            );
        }
        let mut sweeps = vec![data];
        for w in &args.with {
            sweeps.push(load(&store, w)?);
        }
        return plot_compared(&sweeps, args, &filter, (&out, &db));
    }
    if let Some(x) = &args.x {
        return plot_finals(&data, args, x, &filter, (&out, &db));
    }
    if args.by.is_some() || args.at != "final" {
        anyhow::bail!(
            "--by and --at go with --x AXIS (a final value against an axis); against iteration \
             the lines are the grid points matching --where"
        );
    }
    let cs = curves(&data, &args.metric, &filter);
    if cs.is_empty() {
        anyhow::bail!(
            "--where {}: no grid point of sweep {} matches them all",
            args.filter.join(" --where "),
            data.stored.row.name
        );
    }
    if cs.iter().all(|c| c.points.is_empty()) {
        let known: std::collections::BTreeSet<&String> =
            data.metrics.values().flat_map(|m| m.keys()).collect();
        anyhow::bail!(
            "--metric {}: no values in sweep {}; metrics there: {}",
            args.metric,
            data.stored.row.name,
            known.into_iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let title = titled(format!("{} — {}", data.stored.row.name, args.metric), args);
    let picture = svg(
        std::slice::from_ref(&data),
        &cs,
        &title,
        &args.metric,
        (860, 500),
    )?;
    out.write(&db, |w| w.write_all(picture.as_bytes()))?;
    print_curves(&cs, args);
    Ok(())
}

/// A figure's title, with the `--where` filters if any.
fn titled(title: String, args: &PlotArgs) -> String {
    if args.filter.is_empty() {
        title
    } else {
        format!("{title} ({})", args.filter.join(", "))
    }
}

/// The curves' data as CSV with `--csv`, else a line saying where the figure went.
fn print_curves(cs: &[tabula::experiments::plot::Curve], args: &PlotArgs) {
    if args.csv {
        outln!("label,iteration,mean,lo,hi,seeds");
        for c in cs {
            for (i, s) in &c.points {
                outln!("\"{}\",{i},{},{},{},{}", c.label, s.mean, s.lo, s.hi, s.n);
            }
        }
    } else {
        outln!("{} lines written to {}", cs.len(), args.out.display());
    }
}

/// `--x AXIS`: the metric's value at `--at` against the axis, a line per value of `--by`.
fn plot_finals(
    data: &tabula::experiments::plot::SweepData,
    args: &PlotArgs,
    x: &str,
    filter: &[(String, serde_json::Value)],
    (out, db): (&OutputFile<'_>, &Path),
) -> anyhow::Result<()> {
    let at: At = args.at.parse()?;
    let f = finals(data, &args.metric, at, x, args.by.as_deref(), filter)?;
    let title = titled(
        format!(
            "{} — {} {} by {}",
            data.stored.row.name,
            args.metric,
            at.name(),
            x.rsplit('.').next().unwrap_or(x)
        ),
        args,
    );
    let counts = tabula::experiments::plot::is_count_metric(data, &args.metric);
    let picture = f.svg(data, &title, (860, 500), None, counts);
    out.write(db, |w| w.write_all(picture.as_bytes()))?;
    if args.csv {
        outln!("line,x,mean,lo,hi,seeds");
        for (label, pts) in &f.lines {
            for (i, s) in pts {
                csv_row(label, &f.x_values[*i], s);
            }
        }
    } else {
        outln!(
            "{} lines of {} {} against {x} written to {}",
            f.lines.len(),
            args.metric,
            at.name(),
            args.out.display()
        );
    }
    if f.unfinished > 0 {
        eprintln!(
            "note: {} unfinished runs left out (their last value is not a final one)",
            f.unfinished
        );
    }
    Ok(())
}

/// `--with` or `--metrics`: several sweeps in one figure (`tabula::experiments::compare`).
fn plot_compared(
    sweeps: &[tabula::experiments::plot::SweepData],
    args: &PlotArgs,
    filter: &[(String, serde_json::Value)],
    (out, db): (&OutputFile<'_>, &Path),
) -> anyhow::Result<()> {
    use tabula::experiments::compare;
    let names: Vec<&str> = sweeps.iter().map(|d| d.stored.row.name.as_str()).collect();
    if args.metrics.is_empty() {
        if args.at != "final" {
            anyhow::bail!(
                "--at goes with --x or --metrics; against iteration every value is drawn"
            );
        }
        let cs = compare::compared_curves(sweeps, &args.metric, filter);
        let title = titled(format!("{} — {}", names.join(" / "), args.metric), args);
        let picture = svg(sweeps, &cs, &title, &args.metric, (860, 500))?;
        out.write(db, |w| w.write_all(picture.as_bytes()))?;
        print_curves(&cs, args);
        return Ok(());
    }
    if args.metric != "wr_p" {
        anyhow::bail!(
            "--metric {} and --metrics: give the metrics in --metrics alone",
            args.metric
        );
    }
    let at: tabula::experiments::plot::At = args.at.parse()?;
    let (lines, unfinished) = compare::metric_lines(sweeps, &args.metrics, at, filter);
    let (axis, labels) = compare::metric_axis(&args.metrics);
    let title = titled(
        format!(
            "{} — {} ({})",
            names.join(" / "),
            axis.trim_end_matches('_'),
            at.name()
        ),
        args,
    );
    let picture = compare::metrics_svg(
        sweeps,
        lines.clone(),
        (&args.metrics, at),
        &title,
        (860, 500),
    )?;
    out.write(db, |w| w.write_all(picture.as_bytes()))?;
    if args.csv {
        outln!("line,x,mean,lo,hi,seeds");
        for l in &lines {
            for (x, s) in &l.points {
                csv_row(&l.label, &labels[*x as usize], s);
            }
        }
    } else {
        outln!(
            "{} lines of {} metrics written to {}",
            lines.len(),
            args.metrics.len(),
            args.out.display()
        );
    }
    if unfinished > 0 {
        eprintln!(
            "note: {unfinished} unfinished runs left out (their last value is not a final one)"
        );
    }
    Ok(())
}

/// One CSV row of a final-value figure: line, x, mean, lo, hi, seeds.
fn csv_row(line: &str, x: &str, s: &tabula::experiments::plot::Stat) {
    outln!("\"{line}\",\"{x}\",{},{},{},{}", s.mean, s.lo, s.hi, s.n);
}
