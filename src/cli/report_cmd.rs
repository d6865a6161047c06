//! `tabula report SWEEP --out DIR`: one self-contained HTML page.

use std::path::{Path, PathBuf};

use clap::Args;
use tabula::experiments::report::write;
use tabula::store::Store;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The sweep: its name or a hash prefix.
    pub sweep: String,
    /// The directory to write index.html into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print one JSON object (page, figures, runs).
    #[arg(long)]
    pub json: bool,
}

pub fn report(db: Option<&Path>, args: &ReportArgs) -> anyhow::Result<()> {
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
