//! `tabula plot`: a metric of a sweep against iteration, or its final value against an axis,
//! as SVG.

use std::path::Path;

use anyhow::Context;
use tabula::experiments::plot::{At, curves, finals, load, parse_filter, svg};
use tabula::store::Store;

use super::args::PlotArgs;

pub(crate) fn plot(db: Option<&Path>, args: &PlotArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&Store::resolve_path(db))?;
    let data = load(&store, &args.sweep)?;
    let filter = parse_filter(&args.filter, &data)?;
    if let Some(x) = &args.x {
        return plot_finals(&data, args, x, &filter);
    }
    if args.by.is_some() || args.at != "final" {
        anyhow::bail!(
            "--by and --at go with --x AXIS (a final value against an axis); against iteration \
             the lines are the grid points matching --where"
        );
    }
    let cs = curves(&data, &args.metric, &filter);
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
    let mut title = format!("{} — {}", data.stored.row.name, args.metric);
    if !args.filter.is_empty() {
        title = format!("{title} ({})", args.filter.join(", "));
    }
    let picture = svg(&cs, &title, &args.metric, (860, 500))?;
    std::fs::write(&args.out, picture)
        .with_context(|| format!("writing {}", args.out.display()))?;
    if args.csv {
        println!("label,iteration,mean,lo,hi,seeds");
        for c in &cs {
            for (i, s) in &c.points {
                println!("\"{}\",{i},{},{},{},{}", c.label, s.mean, s.lo, s.hi, s.n);
            }
        }
    } else {
        println!("{} lines written to {}", cs.len(), args.out.display());
    }
    Ok(())
}

/// `--x AXIS`: the metric's value at `--at` against the axis, a line per value of `--by`.
fn plot_finals(
    data: &tabula::experiments::plot::SweepData,
    args: &PlotArgs,
    x: &str,
    filter: &[(String, serde_json::Value)],
) -> anyhow::Result<()> {
    let at: At = args.at.parse()?;
    let f = finals(data, &args.metric, at, x, args.by.as_deref(), filter)?;
    let mut title = format!(
        "{} — {} {} by {}",
        data.stored.row.name,
        args.metric,
        at.name(),
        x.rsplit('.').next().unwrap_or(x)
    );
    if !args.filter.is_empty() {
        title = format!("{title} ({})", args.filter.join(", "));
    }
    let counts = tabula::experiments::plot::is_count_metric(data, &args.metric);
    std::fs::write(&args.out, f.svg(&title, (860, 500), None, counts))
        .with_context(|| format!("writing {}", args.out.display()))?;
    if args.csv {
        println!("line,x,mean,lo,hi,seeds");
        for (label, pts) in &f.lines {
            for (i, s) in pts {
                println!(
                    "\"{label}\",\"{}\",{},{},{},{}",
                    f.x_values[*i], s.mean, s.lo, s.hi, s.n
                );
            }
        }
    } else {
        println!(
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
