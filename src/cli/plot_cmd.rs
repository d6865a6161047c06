//! `tabula plot`: a metric of a sweep against iteration, as SVG.

use std::path::Path;

use tabula::experiments::plot::{curves, load, parse_filter, svg};
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
    let mut title = format!("{} — {}", data.stored.row.name, args.metric);
    if !args.filter.is_empty() {
        title = format!("{title} ({})", args.filter.join(", "));
    }
    let picture = svg(&cs, &title, &args.metric, (800, 500))?;
    out.write(&db, |w| w.write_all(picture.as_bytes()))?;
    if args.csv {
        outln!("label,iteration,mean,lo,hi,seeds");
        for c in &cs {
            for (i, s) in &c.points {
                outln!("\"{}\",{i},{},{},{},{}", c.label, s.mean, s.lo, s.hi, s.n);
            }
        }
    } else {
        outln!("{} lines written to {}", cs.len(), args.out.display());
    }
    Ok(())
}
