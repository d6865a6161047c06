//! `tabula sql`, `tabula fsck` and `tabula migrate`.

use std::path::Path;
use std::time::Duration;

use anyhow::bail;
use tabula::store::{QueryLimits, Store};

use super::args::{FsckArgs, MigrateArgs, SqlArgs};
use serde::Serialize;

use super::output::{JsonLayout, Report, emit};
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
        let report = SchemaReport {
            store: path.display().to_string(),
            schema_problems: schema.iter().map(|p| p.to_string()).collect(),
            clean: false,
        };
        emit(&report, args.json)?;
        bail!(
            "{}: the schema is not the one its migrations create ({} problem(s): the first, {}); \
             objects and references were not checked",
            path.display(),
            schema.len(),
            schema[0]
        );
    }
    let report = FsckReport::check(&store, &path)?;
    emit(&report, args.json)?;
    if !report.clean {
        bail!(
            "{} damaged object(s), {} dangling reference(s), {} run row problem(s), {} \
             integrity problem(s)",
            report.damaged.len(),
            report.dangling.len(),
            report.run_rows.len(),
            report.integrity.len()
        );
    }
    Ok(())
}

/// `fsck` of a store whose schema is not its migrations': the problems, nothing else checked.
#[derive(Serialize)]
struct SchemaReport {
    store: String,
    schema_problems: Vec<String>,
    clean: bool,
}

impl Report for SchemaReport {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for SchemaReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for p in &self.schema_problems {
            writeln!(f, "SCHEMA {p}")?;
        }
        Ok(())
    }
}

/// `fsck`: every object against its address, every run reference, every run row against its
/// chain, and SQLite's own check of the file (b-trees, indexes).
#[derive(Serialize)]
struct FsckReport {
    store: String,
    objects: u64,
    bytes: u64,
    damaged: Vec<Damaged>,
    /// How many run references were checked.
    references: usize,
    dangling: Vec<tabula::runs::Dangling>,
    run_rows: Vec<String>,
    integrity: Vec<String>,
    /// Always empty here: a store with schema problems gets a [`SchemaReport`].
    schema_problems: [String; 0],
    clean: bool,
}

/// An object whose bytes do not hash to its address, and where the runs reference it.
#[derive(Serialize)]
struct Damaged {
    hash: String,
    reason: String,
    referenced_by: Vec<String>,
}

impl FsckReport {
    /// Checks the store at `path` (its schema already checked), with a bar over the objects.
    fn check(store: &Store, path: &Path) -> anyhow::Result<FsckReport> {
        let bar = super::progress::bar(0, "checking objects");
        let objects = store.fsck(|done, total| {
            bar.set_length(total);
            bar.set_position(done);
        })?;
        bar.finish_and_clear();
        let refs = tabula::runs::check_references(store)?;
        let run_rows = tabula::runs::check_run_rows(store)?;
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
        let damaged: Vec<Damaged> = objects
            .damaged
            .iter()
            .map(|(h, why)| Damaged {
                hash: h.to_hex(),
                reason: why.clone(),
                referenced_by: refs.referrers(h).into_iter().map(str::to_string).collect(),
            })
            .collect();
        Ok(FsckReport {
            store: path.display().to_string(),
            objects: objects.objects,
            bytes: objects.bytes,
            clean: damaged.is_empty()
                && refs.dangling.is_empty()
                && run_rows.is_empty()
                && integrity.is_empty(),
            damaged,
            references: refs.all.len(),
            dangling: refs.dangling,
            run_rows,
            integrity,
            schema_problems: [],
        })
    }
}

impl Report for FsckReport {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for FsckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{}: {} objects, {} bytes checked",
            self.store, self.objects, self.bytes
        )?;
        for d in &self.damaged {
            if d.referenced_by.is_empty() {
                writeln!(f, "DAMAGED {}: {}", d.hash, d.reason)?;
            } else {
                let at = d.referenced_by.join("; ");
                writeln!(f, "DAMAGED {}: {} (referenced by {at})", d.hash, d.reason)?;
            }
        }
        for d in &self.dangling {
            writeln!(f, "DANGLING {}: {} {}", d.at, d.hash, d.problem)?;
        }
        for p in &self.run_rows {
            writeln!(f, "RUN ROW {p}")?;
        }
        for p in &self.integrity {
            writeln!(f, "INTEGRITY {p}")?;
        }
        writeln!(f, "ok: the schema is the one its migrations create")?;
        if self.damaged.is_empty() {
            writeln!(f, "ok: every object hashes to its address")?;
        }
        if self.dangling.is_empty() {
            writeln!(
                f,
                "ok: every run reference resolves ({} references checked)",
                self.references
            )?;
        }
        if self.run_rows.is_empty() {
            writeln!(f, "ok: every run row agrees with its chain")?;
        }
        if self.integrity.is_empty() {
            writeln!(f, "ok: SQLite's integrity check")?;
        }
        Ok(())
    }
}

pub(crate) fn migrate(db: Option<&Path>, args: &MigrateArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    let (from, to) = Store::migrate(&path)?;
    let report = MigrateReport {
        store: path.display().to_string(),
        from,
        to,
    };
    emit(&report, args.json)
}

/// `migrate`: the schema version before and after.
#[derive(Serialize)]
struct MigrateReport {
    store: String,
    from: i64,
    to: i64,
}

impl Report for MigrateReport {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for MigrateReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.from == self.to {
            writeln!(
                f,
                "{}: schema version {}, this build's; nothing to do",
                self.store, self.to
            )
        } else {
            writeln!(
                f,
                "{}: schema version {} -> {}",
                self.store, self.from, self.to
            )
        }
    }
}
