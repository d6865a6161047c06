//! `tabula export`: a run's or a sweep's results as one tidy table (CSV or JSON) on stdout,
//! one row per run and iteration (docs/python.md, "A tidy table").

use std::path::Path;

use tabula::experiments::tidy::{Target, tidy_sql};
use tabula::store::{QueryLimits, Store};

use super::args::ExportArgs;
use super::rows;

pub(crate) fn export(db: Option<&Path>, args: &ExportArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&Store::resolve_path(db))?;
    let target = if args.sweep {
        Target::Sweep(args.target.clone())
    } else {
        Target::Run(args.target.clone())
    };
    let sql = tidy_sql(&store, &target)?;
    let out = std::io::BufWriter::with_capacity(1 << 16, super::output::Stdout);
    let mut sink = rows::sink(out, args.json, !args.json);
    // A table of any length, for as long as it takes; SQLite's memory stays bounded.
    let limits = QueryLimits {
        max_rows: None,
        timeout: None,
        ..QueryLimits::default()
    };
    match store.query_stream(&sql, &limits, sink.as_row_sink()) {
        Ok(n) => sink.finish(Some(n))?,
        Err(e) => {
            let _ = sink.finish(None);
            return Err(e.into());
        }
    }
    Ok(())
}
