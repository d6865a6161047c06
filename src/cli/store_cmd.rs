//! `tabula sql`, `tabula fsck` and `tabula migrate`.

use std::path::Path;
use std::time::Duration;

use anyhow::bail;
use tabula::store::{QueryLimits, Store};

use super::args::{FsckArgs, MigrateArgs, SqlArgs};
use super::output::outln;
use super::rows;

pub(crate) fn sql(db: Option<&Path>, args: &SqlArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&Store::resolve_path(db))?;
    let limit = |x: f64| Duration::try_from_secs_f64(x).ok().filter(|d| !d.is_zero());
    let limits = QueryLimits {
        max_rows: Some(args.max_rows).filter(|&n| n > 0),
        timeout: limit(args.timeout),
        max_memory: Some(args.max_memory << 20),
    };
    let out = std::io::BufWriter::with_capacity(1 << 16, super::output::Stdout);
    let mut sink = rows::sink(out, args.json, args.csv);
    match store.query_stream(&args.query, &limits, sink.as_row_sink()) {
        Ok(rows) => sink.finish(Some(rows))?,
        Err(e) => {
            // Rows before a limit were the query's: print them (an aligned table's are still
            // buffered), then the error. The output is left unterminated (no row count, no
            // closing `]`) so that it cannot pass for a whole result.
            let _ = sink.finish(None);
            return Err(e.into());
        }
    }
    Ok(())
}

pub(crate) fn fsck(db: Option<&Path>, args: &FsckArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    let store = Store::open_read_only(&path)?;
    // The schema first: the checks below read its tables, and a store whose schema is not
    // the migrations' cannot be trusted by any command.
    let schema = store.check_schema()?;
    if !schema.is_empty() {
        if args.json {
            let out = serde_json::json!({
                "store": path.display().to_string(),
                "schema_problems": schema.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
                "clean": false,
            });
            outln!("{out}");
        } else {
            for p in &schema {
                outln!("SCHEMA {p}");
            }
        }
        bail!(
            "{}: the schema is not the one its migrations create ({} problem(s): the first, {}); \
             objects and references were not checked",
            path.display(),
            schema.len(),
            schema[0]
        );
    }
    let bar = super::progress::bar(0, "checking objects");
    let report = store.fsck(|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    // Runs: every reference resolvable, and where each damaged object sits; every run row
    // agreeing with its chain; SQLite's own check of the file (b-trees, indexes).
    let refs = tabula::runs::check_references(&store)?;
    let rows = tabula::runs::check_run_rows(&store)?;
    let integrity: Vec<String> = store
        .query("PRAGMA integrity_check")?
        .rows
        .iter()
        .filter_map(|r| {
            r.first()
                .map(|v| v.to_json().as_str().unwrap_or("").to_string())
        })
        .filter(|line| line != "ok")
        .collect();
    store.check_unchanged()?;
    let clean =
        report.is_clean() && refs.dangling.is_empty() && rows.is_empty() && integrity.is_empty();
    if args.json {
        let damaged: Vec<_> = report
            .damaged
            .iter()
            .map(|(h, why)| {
                serde_json::json!({
                    "hash": h.to_hex(), "reason": why, "referenced_by": refs.referrers(h),
                })
            })
            .collect();
        let out = serde_json::json!({
            "store": path.display().to_string(),
            "objects": report.objects,
            "bytes": report.bytes,
            "damaged": damaged,
            "references": refs.all.len(),
            "dangling": refs.dangling,
            "run_rows": rows,
            "integrity": integrity,
            "schema_problems": [],
            "clean": clean,
        });
        outln!("{out}");
    } else {
        outln!(
            "{}: {} objects, {} bytes checked",
            path.display(),
            report.objects,
            report.bytes
        );
        for (h, why) in &report.damaged {
            let at = refs.referrers(h);
            if at.is_empty() {
                outln!("DAMAGED {h}: {why}");
            } else {
                outln!("DAMAGED {h}: {why} (referenced by {})", at.join("; "));
            }
        }
        for d in &refs.dangling {
            outln!("DANGLING {}: {} {}", d.at, d.hash, d.problem);
        }
        for p in &rows {
            outln!("RUN ROW {p}");
        }
        for p in &integrity {
            outln!("INTEGRITY {p}");
        }
        outln!("ok: the schema is the one its migrations create");
        if report.is_clean() {
            outln!("ok: every object hashes to its address");
        }
        if refs.dangling.is_empty() {
            outln!(
                "ok: every run reference resolves ({} references checked)",
                refs.all.len()
            );
        }
        if rows.is_empty() {
            outln!("ok: every run row agrees with its chain");
        }
        if integrity.is_empty() {
            outln!("ok: SQLite's integrity check");
        }
    }
    if !clean {
        bail!(
            "{} damaged object(s), {} dangling reference(s), {} run row problem(s), {} \
             integrity problem(s)",
            report.damaged.len(),
            refs.dangling.len(),
            rows.len(),
            integrity.len()
        );
    }
    Ok(())
}

pub(crate) fn migrate(db: Option<&Path>, args: &MigrateArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    let (from, to) = Store::migrate(&path)?;
    if args.json {
        outln!(
            "{}",
            serde_json::json!({"store": path.display().to_string(), "from": from, "to": to})
        );
    } else if from == to {
        outln!(
            "{}: schema version {to}, this build's; nothing to do",
            path.display()
        );
    } else {
        outln!("{}: schema version {from} -> {to}", path.display());
    }
    Ok(())
}
