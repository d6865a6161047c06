//! `tabula note`: show or change the note and tags of a run or a sweep (docs/store.md,
//! "Provenance"). The only write besides runs, sweeps and merges; it never changes a hash.

use std::path::Path;

use anyhow::bail;
use serde::Serialize;
use tabula::store::{Store, Subject};

use super::args::NoteArgs;
use super::output::{JsonLayout, Report, emit};

pub(crate) fn note(db: Option<&Path>, args: &NoteArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    if !path.exists() {
        bail!("no store at {}", path.display());
    }
    let changes =
        args.text.is_some() || args.clear || !args.tags.is_empty() || !args.untags.is_empty();
    // Checked before the store is opened for writing: a bad note or tag changes nothing.
    if let Some(t) = &args.text {
        tabula::store::check_note(t).map_err(|why| anyhow::anyhow!("the note: {why}"))?;
    }
    for t in args.tags.iter().chain(&args.untags) {
        tabula::store::check_tag(t).map_err(|why| anyhow::anyhow!("--tag/--untag: {why}"))?;
    }
    let mut store = if changes {
        Store::open(&path)?
    } else {
        Store::open_read_only(&path)?
    };
    let (on, what) = subject(&store, &args.target, args.sweep)?;
    if changes {
        if let Some(t) = &args.text {
            store.set_note(&on, Some(t))?;
        } else if args.clear {
            store.set_note(&on, None)?;
        }
        store.set_tags(&on, &args.tags, true)?;
        store.set_tags(&on, &args.untags, false)?;
    }
    let a = store.annotations(&on)?;
    let report = NoteReport {
        target: what,
        note: a.note,
        tags: a.tags,
    };
    emit(&report, args.json)
}

/// `note`: a run's or sweep's note and tags (after the changes asked for).
#[derive(Serialize)]
struct NoteReport {
    target: String,
    note: Option<String>,
    tags: Vec<String>,
}

impl Report for NoteReport {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for NoteReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", self.target)?;
        writeln!(f, "note  {}", self.note.as_deref().unwrap_or("(none)"))?;
        let tags = if self.tags.is_empty() {
            "(none)".to_string()
        } else {
            self.tags.join(", ")
        };
        writeln!(f, "tags  {tags}")
    }
}

/// The run or sweep `target` names, and how to say it.
fn subject(store: &Store, target: &str, sweep: bool) -> anyhow::Result<(Subject, String)> {
    if sweep {
        if !store.sweeps()?.iter().any(|s| s.name == target) {
            bail!(
                "no sweep named `{target}` in {} (`tabula sql \"SELECT DISTINCT name FROM \
                 sweeps\"` lists them)",
                store.path().display()
            );
        }
        return Ok((
            Subject::Sweep(target.to_string()),
            format!("sweep {target}"),
        ));
    }
    let run = tabula::runs::find(store, target)?;
    Ok((
        Subject::Run(run.id),
        format!("run {} ({})", run.id, run.name),
    ))
}
