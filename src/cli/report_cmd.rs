//! `tabula report SWEEP --out DIR`: one self-contained HTML page.

use std::path::Path;

use tabula::experiments::report::write;
use tabula::store::Store;

use super::args::ReportArgs;

pub(crate) fn report(db: Option<&Path>, args: &ReportArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&Store::resolve_path(db))?;
    let w = write(&store, &args.sweep, &args.out)?;
    if args.json {
        println!("{}", serde_json::to_string(&w)?);
    } else {
        println!(
            "{}: {} figures over {} runs",
            w.page.display(),
            w.figures,
            w.runs
        );
    }
    Ok(())
}
