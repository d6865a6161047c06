//! `tabula du`, `tabula rm`, `tabula gc` and `tabula keep`: what a store's bytes are spent
//! on, removing runs and the objects no run reaches (docs/store.md, "What a store holds: du,
//! rm and gc"), and changing which games a run keeps ("Keeping fewer games").

use std::path::Path;

use anyhow::bail;
use serde::Serialize;
use tabula::runs::KeepChanged;
use tabula::store::{Collected, Store, Usage};

use super::args::{DuArgs, GcArgs, KeepArgs, RmArgs};
use super::output::{JsonLayout, Report, emit};

pub(crate) fn du(db: Option<&Path>, args: &DuArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    let store = Store::open_read_only(&path)?;
    let report = DuReport {
        store: path.display().to_string(),
        usage: store.usage()?,
    };
    emit(&report, args.json)
}

#[derive(Serialize)]
struct DuReport {
    store: String,
    #[serde(flatten)]
    usage: Usage,
}

impl Report for DuReport {
    const JSON: JsonLayout = JsonLayout::Pretty;
}

fn mb(b: u64) -> String {
    format!("{:.2} MB", b as f64 / 1e6)
}

impl std::fmt::Display for DuReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let u = &self.usage;
        writeln!(
            f,
            "{}: {} ({} of it free pages, given back by `tabula gc`)",
            self.store,
            mb(u.file_bytes),
            mb(u.free_bytes)
        )?;
        writeln!(
            f,
            "\n{:<24} {:>10} {:>12} {:>12}",
            "kind", "records", "stored", "decoded"
        )?;
        for k in &u.kinds {
            writeln!(
                f,
                "{:<24} {:>10} {:>12} {:>12}",
                k.kind,
                k.count,
                mb(k.stored_bytes),
                mb(k.record_bytes)
            )?;
        }
        writeln!(
            f,
            "\n{:>4} {:<28} {:<9} {:>10} {:>9} {:>12} {:>12}",
            "run", "name", "keeps", "iterations", "games", "game packs", "checkpoints"
        )?;
        for r in &u.runs {
            writeln!(
                f,
                "{:>4} {:<28} {:<9} {:>10} {:>9} {:>12} {:>12}",
                r.id,
                r.name,
                r.keep_games,
                format!("{}/{}", r.iterations_with_games, r.iterations),
                r.games,
                mb(r.game_bytes),
                mb(r.checkpoint_bytes)
            )?;
        }
        writeln!(
            f,
            "\n(iterations: those with their games stored / all; a pack shared by runs counts \
             for each)"
        )
    }
}

pub(crate) fn rm(db: Option<&Path>, args: &RmArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    let mut store = Store::open(&path)?;
    let row = tabula::runs::find(&store, &args.run)?;
    let runs = store.runs()?;
    // The run and its branches, theirs too, parents first.
    let mut ids = vec![row.id];
    let mut k = 0;
    while k < ids.len() {
        let p = ids[k];
        ids.extend(
            runs.iter()
                .filter(|r| r.parent.map(|x| x.0) == Some(p))
                .map(|r| r.id),
        );
        k += 1;
    }
    let named = |id: &i64| {
        let r = runs.iter().find(|r| r.id == *id);
        format!("{id} ({})", r.map_or("", |r| r.name.as_str()))
    };
    if ids.len() > 1 && !args.with_branches {
        bail!(
            "run {} has branches that continue from its iterations: {}; `tabula rm {} \
             --with-branches` removes them too",
            named(&row.id),
            ids[1..].iter().map(named).collect::<Vec<_>>().join(", "),
            row.id
        );
    }
    let removed: Vec<String> = ids.iter().map(named).collect();
    let collected = store.collect_garbage(&ids, tabula::runs::reachable)?;
    emit(
        &SpaceReport {
            store: path.display().to_string(),
            removed,
            collected,
        },
        args.json,
    )
}

pub(crate) fn gc(db: Option<&Path>, args: &GcArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    let mut store = Store::open(&path)?;
    let collected = store.collect_garbage(&[], tabula::runs::reachable)?;
    emit(
        &SpaceReport {
            store: path.display().to_string(),
            removed: Vec::new(),
            collected,
        },
        args.json,
    )
}

pub(crate) fn keep(db: Option<&Path>, args: &KeepArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    let mut store = Store::open(&path)?;
    let changed = tabula::runs::change_keep_games(&mut store, &args.run, args.keep)?;
    let (vacuumed, file_bytes_before, file_bytes_after) = match changed.retained.iterations_removed
    {
        0 => (false, 0, 0),
        _ => store.vacuum()?,
    };
    emit(
        &KeepReport {
            store: path.display().to_string(),
            changed,
            vacuumed,
            file_bytes_before,
            file_bytes_after,
        },
        args.json,
    )
}

/// What `keep` did.
#[derive(Serialize)]
struct KeepReport {
    store: String,
    #[serde(flatten)]
    changed: KeepChanged,
    /// Whether `VACUUM` gave the freed pages back (only when games were removed), and the
    /// file's size before and after it.
    vacuumed: bool,
    file_bytes_before: u64,
    file_bytes_after: u64,
}

impl Report for KeepReport {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for KeepReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.changed;
        write!(
            f,
            "run {} ({}) keeps games \"{}\" (it kept \"{}\")",
            c.run_id, c.name, c.keep, c.was
        )?;
        if !c.applied {
            writeln!(f, "; applied when it finishes its last iteration")?;
        } else {
            writeln!(f)?;
            let r = &c.retained;
            if r.iterations_removed > 0 {
                writeln!(
                    f,
                    "removed the games of {} iterations: {} packs ({}); their iteration \
                     records are kept whole, with the games' addresses",
                    r.iterations_removed,
                    r.packs_removed,
                    mb(r.pack_bytes_removed)
                )?;
            }
        }
        if !c.iterations_without_games.is_empty() && c.keep == "all" {
            writeln!(
                f,
                "the games of {} iterations were removed before and cannot be brought back \
                 (`verify` still re-plays them and checks their addresses)",
                c.iterations_without_games.len()
            )?;
        }
        match (c.retained.iterations_removed, self.vacuumed) {
            (0, _) => Ok(()),
            (_, true) => writeln!(
                f,
                "{}: {} -> {} (VACUUM)",
                self.store,
                mb(self.file_bytes_before),
                mb(self.file_bytes_after)
            ),
            (_, false) => writeln!(
                f,
                "{}: {} (VACUUM could not run: another process has the store open; `tabula \
                 gc` gives the freed pages back when it is idle)",
                self.store,
                mb(self.file_bytes_after)
            ),
        }
    }
}

/// What `rm` and `gc` did.
#[derive(Serialize)]
struct SpaceReport {
    store: String,
    /// The runs removed, as `ID (NAME)`.
    removed: Vec<String>,
    #[serde(flatten)]
    collected: Collected,
}

impl Report for SpaceReport {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for SpaceReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.collected;
        if !self.removed.is_empty() {
            writeln!(f, "removed run {}", self.removed.join(", "))?;
        }
        writeln!(
            f,
            "freed {} objects ({}) and {} packs of games ({}) no run reaches",
            c.objects,
            mb(c.object_bytes),
            c.packs,
            mb(c.pack_bytes)
        )?;
        match c.vacuumed {
            true => writeln!(
                f,
                "{}: {} -> {} (VACUUM)",
                self.store,
                mb(c.file_bytes_before),
                mb(c.file_bytes_after)
            ),
            false => writeln!(
                f,
                "{}: {} (VACUUM could not run: another process has the store open; the freed \
                 pages are reused by later writes, and `tabula gc` gives them back when it is \
                 idle)",
                self.store,
                mb(c.file_bytes_after)
            ),
        }
    }
}
