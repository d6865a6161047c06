//! `tabula merge A.db B.db ... --into ALL.db`: copy stores into one by address.

use std::path::{Path, PathBuf};

use anyhow::bail;
use tabula::store::Store;

use super::args::MergeArgs;
use super::output::outln;

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
    for s in &args.sources {
        Store::check_mergeable(s)?;
        let problems = tabula::runs::check_run_rows(&Store::open_read_only(s)?)?;
        if let Some(first) = problems.first() {
            bail!(
                "merge: {}: {} run row(s) disagree with their chains (the first: {first}); \
                 `tabula --db {} fsck` lists them; nothing was merged",
                s.display(),
                problems.len(),
                s.display()
            );
        }
    }
    let existed = args.into.exists();
    let result = Store::open(&args.into).and_then(|mut into| into.merge_from(&args.sources));
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
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&merged)?);
        return Ok(());
    }
    for m in &merged {
        outln!(
            "{}: {} objects new ({} present), runs: {} new, {} extended, {} present; {} sweeps \
             new; {} rows new",
            m.path,
            m.objects_new,
            m.objects_present,
            m.runs_new,
            m.runs_extended,
            m.runs_present,
            m.sweeps_new,
            m.rows_new
        );
        for (from, to) in &m.renumbered {
            outln!("  run {from} is run {to} in {}", args.into.display());
        }
    }
    outln!(
        "merged {} stores into {}",
        merged.len(),
        args.into.display()
    );
    Ok(())
}
