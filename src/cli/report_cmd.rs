//! `tabula report SWEEP --out DIR`: one self-contained HTML page.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;
use tabula::experiments::report::{Written, page};
use tabula::store::Store;

use super::args::ReportArgs;
use super::output::{JsonLayout, OutputFile, Report, emit};

pub(crate) fn report(db: Option<&Path>, args: &ReportArgs) -> anyhow::Result<()> {
    let db = Store::resolve_path(db);
    let dir = OutputFile {
        flag: "--out",
        path: &args.out,
    };
    let index = args.out.join("index.html");
    let file = OutputFile {
        flag: "--out",
        path: &index,
    };
    dir.check(&db, true)?;
    // A directory made later holds no file yet: only an existing one's page is checked now.
    if args.out.is_dir() {
        file.check(&db, false)?;
    }
    let store = Store::open_read_only(&db)?;
    let p = page(&store, &args.sweep)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("--out {}: creating the directory", args.out.display()))?;
    file.write(&db, |w| w.write_all(p.html.as_bytes()))?;
    let w = Written {
        page: index,
        figures: p.figures,
        runs: p.runs,
    };
    emit(&PageWritten(w), args.json)
}

/// `report`: the page written, the library's record of it as it is.
#[derive(Serialize)]
#[serde(transparent)]
struct PageWritten(Written);

impl Report for PageWritten {
    const JSON: JsonLayout = JsonLayout::Line;
    const SORTED_KEYS: bool = false;
}

impl std::fmt::Display for PageWritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let w = &self.0;
        writeln!(
            f,
            "{}: {} figures over {} runs",
            w.page.display(),
            w.figures,
            w.runs
        )
    }
}
