//! `tabula merge A.db B.db ... --into ALL.db`: copy stores into one by address.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::bail;
use serde::Serialize;
use tabula::games::AnyGame;
use tabula::store::{Equivalent, MergedSource, ObjectHash, Store};

use super::args::MergeArgs;
use super::output::{JsonLayout, Report, emit};

fn remove_store_files(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

pub(crate) fn merge(args: &MergeArgs) -> anyhow::Result<()> {
    // Every source is checked before the destination is touched: a store this build can
    // merge, whose run rows agree with their chains (as fsck checks them), so a damaged row
    // ("99/6 done") is never copied into a healthy store.
    let mut sources = Vec::with_capacity(args.sources.len());
    for s in &args.sources {
        Store::check_mergeable(s)?;
        let source = Store::open_read_only(s)?;
        // One snapshot, as the merge reads it: a running shard's rows as of one commit.
        let problems = source.in_snapshot(tabula::runs::check_run_rows)??;
        if let Some(first) = problems.first() {
            bail!(
                "merge: {}: {} run row(s) disagree with their chains (the first: {first}); \
                 `tabula --db {} fsck` lists them; nothing was merged",
                s.display(),
                problems.len(),
                s.display()
            );
        }
        sources.push(source);
    }
    let equivalent = equivalent_solutions(&args.into, sources)?;
    let existed = args.into.exists();
    let result =
        Store::open(&args.into).and_then(|mut into| into.merge_from(&args.sources, &equivalent));
    let merged = match result {
        Ok(m) => m,
        Err(e) => {
            if !existed {
                // Nothing half-written: a destination this command created goes away.
                remove_store_files(&args.into);
            }
            bail!("{e}");
        }
    };
    let report = MergeReport {
        merged,
        into: args.into.display().to_string(),
    };
    emit(&report, args.json)
}

/// `merge`: per source what it brought (the library's records as they are), and where to.
#[derive(Serialize)]
#[serde(transparent)]
struct MergeReport {
    merged: Vec<MergedSource>,
    #[serde(skip)]
    into: String,
}

impl Report for MergeReport {
    const JSON: JsonLayout = JsonLayout::Pretty;
    const SORTED_KEYS: bool = false;
}

impl std::fmt::Display for MergeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for m in &self.merged {
            writeln!(
                f,
                "{}: {} objects new ({} present), runs: {} new, {} extended, {} present; {} \
                 sweeps new; {} rows new",
                m.path,
                m.objects_new,
                m.objects_present,
                m.runs_new,
                m.runs_extended,
                m.runs_present,
                m.sweeps_new,
                m.rows_new
            )?;
            for variant in &m.solutions_equivalent {
                writeln!(
                    f,
                    "  the solution of {variant} has the destination's values in other bytes \
                     (another solver version); the destination's is kept"
                )?;
            }
            for (from, to) in &m.renumbered {
                writeln!(f, "  run {from} is run {to} in {}", self.into)?;
            }
        }
        writeln!(f, "merged {} stores into {}", self.merged.len(), self.into)
    }
}

/// The solutions of the sources that differ from the first one stored of their variant (the
/// destination's, else an earlier source's) in their address but not in their content: the
/// solver compares them position by position ([`AnyGame::solutions_agree`]); the store, which
/// does not know a solution's layout, keeps the first.
fn equivalent_solutions(into: &Path, sources: Vec<Store>) -> anyhow::Result<Equivalent> {
    let mut stores = Vec::with_capacity(sources.len() + 1);
    if into.exists() {
        stores.push(Store::open_read_only(into)?);
    }
    stores.extend(sources);
    let mut first: BTreeMap<String, (usize, ObjectHash)> = BTreeMap::new();
    let mut same = Equivalent::new();
    for (i, store) in stores.iter().enumerate() {
        for variant in store.solved_variants()? {
            let Some(row) = store.solution(&variant)? else {
                continue;
            };
            match first.get(&variant) {
                None => {
                    first.insert(variant, (i, row.hash));
                }
                Some(&(j, hash)) if hash != row.hash => {
                    let Ok(game) = variant.parse::<AnyGame>() else {
                        continue;
                    };
                    if game.solutions_agree(&stores[j], store)? == Some(true) {
                        same.insert((variant, row.hash));
                    }
                }
                Some(_) => {}
            }
        }
    }
    Ok(same)
}
