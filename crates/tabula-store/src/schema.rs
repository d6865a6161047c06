//! Migrations: the numbered SQL files of `schema/`, applied in order on open.
//! `PRAGMA user_version` holds how many have been applied.

use rusqlite::Connection;

/// The migrations, in order. Append only: an applied migration never changes.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_objects", include_str!("../schema/0001_objects.sql")),
    (
        "0002_solutions",
        include_str!("../schema/0002_solutions.sql"),
    ),
    ("0003_runs", include_str!("../schema/0003_runs.sql")),
    (
        "0004_lifecycle",
        include_str!("../schema/0004_lifecycle.sql"),
    ),
    (
        "0005_metrics_long",
        include_str!("../schema/0005_metrics_long.sql"),
    ),
    ("0006_sweeps", include_str!("../schema/0006_sweeps.sql")),
    (
        "0007_compact_indexes",
        include_str!("../schema/0007_compact_indexes.sql"),
    ),
    ("0008_packs", include_str!("../schema/0008_packs.sql")),
    ("0009_against", include_str!("../schema/0009_against.sql")),
    (
        "0010_codec_index",
        include_str!("../schema/0010_codec_index.sql"),
    ),
    (
        "0011_provenance",
        include_str!("../schema/0011_provenance.sql"),
    ),
    (
        "0012_gumbel_settings",
        include_str!("../schema/0012_gumbel_settings.sql"),
    ),
    (
        "0013_c4_search_setting",
        include_str!("../schema/0013_c4_search_setting.sql"),
    ),
    (
        "0014_network_input_setting",
        include_str!("../schema/0014_network_input_setting.sql"),
    ),
    (
        "0015_chance_rule_setting",
        include_str!("../schema/0015_chance_rule_setting.sql"),
    ),
    (
        "0016_retention",
        include_str!("../schema/0016_retention.sql"),
    ),
    (
        "0017_one_run_name",
        include_str!("../schema/0017_one_run_name.sql"),
    ),
    (
        "0018_pack_members",
        include_str!("../schema/0018_pack_members.sql"),
    ),
    (
        "0019_run_games_pack",
        include_str!("../schema/0019_run_games_pack.sql"),
    ),
];

/// The schema version this build writes and understands.
pub(super) const VERSION: i64 = MIGRATIONS.len() as i64;

fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

#[derive(Debug)]
pub(super) enum SchemaError {
    Sqlite(rusqlite::Error),
    /// The store's schema version, newer than [`VERSION`].
    TooNew(i64),
}

impl From<rusqlite::Error> for SchemaError {
    fn from(e: rusqlite::Error) -> SchemaError {
        SchemaError::Sqlite(e)
    }
}

/// The store's schema version when it is older than this build's (`None` when it is not, or
/// when it cannot be read: opening it then reports why).
///
/// Read through an immutable open, which takes no lock and creates no `-wal`/`-shm` file (a
/// plain read-only open of a WAL store creates `-shm`). Version 0 (an empty or foreign SQLite
/// file) is not an older store: a read-only open must not turn it into one.
pub(super) fn older(path: &std::path::Path) -> Option<i64> {
    version_in_file(path).filter(|v| (1..VERSION).contains(v))
}

/// The schema version in the file at `path` (0: a SQLite file without a tabula schema),
/// read as [`older`] reads it; `None` when it cannot be read.
pub(super) fn version_in_file(path: &std::path::Path) -> Option<i64> {
    immutable(path).and_then(|c| version(&c)).ok()
}

/// Whether the file at `path` is an empty SQLite database: schema version 0, no table, view
/// or index (a foreign database, with tables, is told apart by the writer's own check).
pub(super) fn is_blank(path: &std::path::Path) -> bool {
    let count = |c: Connection| {
        c.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
            r.get::<_, i64>(0)
        })
    };
    version_in_file(path) == Some(0) && immutable(path).and_then(count).ok() == Some(0)
}

/// `path` opened read-only and immutable: no lock, no side file.
fn immutable(path: &std::path::Path) -> rusqlite::Result<Connection> {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
        | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
        | rusqlite::OpenFlags::SQLITE_OPEN_URI;
    Connection::open_with_flags(super::paths::file_uri(path, "immutable=1"), flags)
}

/// Refuses stores newer than this build.
pub(super) fn check_version(conn: &Connection) -> Result<(), SchemaError> {
    let found = version(conn)?;
    if found > VERSION {
        return Err(SchemaError::TooNew(found));
    }
    Ok(())
}

/// Applies every migration the store lacks, all in one IMMEDIATE transaction (a store moves
/// from its version to this build's at once, or stays where it was), then copies the log
/// into the file: the schema version in the file itself is current, which [`older`] reads
/// and which a store closed without its checkpoint (`Store::close_leaving_log`) relies on.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), SchemaError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let v = version(&tx)?;
    if v > VERSION {
        return Err(SchemaError::TooNew(v));
    }
    if v == VERSION {
        return Ok(());
    }
    // A write step (failpoint.rs): inside the migrations' transaction.
    super::failpoint::hit("migrate")?;
    for (_, sql) in &MIGRATIONS[v as usize..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", VERSION)?;
    tx.commit()?;
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
    Ok(())
}

/// Applies the first `version` migrations to a new database, as a build of that schema
/// version left it (migration tests).
#[cfg(test)]
pub(super) fn migrate_to(conn: &Connection, version: usize) -> rusqlite::Result<()> {
    for (_, sql) in &MIGRATIONS[..version] {
        conn.execute_batch(sql)?;
    }
    conn.pragma_update(None, "user_version", version as i64)
}

/// One difference between a store's schema and the one its migrations create.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SchemaProblem {
    /// `table`, `index`, `view` or `trigger`.
    pub kind: String,
    pub name: String,
    /// What is wrong, in words.
    pub problem: String,
}

impl std::fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} `{}`: {}", self.kind, self.name, self.problem)
    }
}

/// A schema object as `sqlite_master` lists it (SQLite's own `sqlite_*` objects left out:
/// automatic indexes follow from their table's definition, `sqlite_stat1` from ANALYZE).
struct Entry {
    kind: String,
    name: String,
    sql: Option<String>,
    /// For a table: its columns as (name, declared type, not null, default, primary key
    /// position, hidden).
    columns: Vec<(String, String, bool, Option<String>, i64, i64)>,
    /// The migration that created it (expected entries only).
    migration: &'static str,
}

fn entries(conn: &Connection) -> rusqlite::Result<Vec<Entry>> {
    let mut out: Vec<Entry> = conn
        .prepare(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
             ORDER BY type, name",
        )?
        .query_map([], |r| {
            Ok(Entry {
                kind: r.get(0)?,
                name: r.get(1)?,
                sql: r.get(2)?,
                columns: Vec::new(),
                migration: "",
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    for e in out.iter_mut().filter(|e| e.kind == "table") {
        e.columns = conn
            .prepare("SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?1)")?
            .query_map([&e.name], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get::<_, i64>(2)? != 0,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
    }
    Ok(out)
}

/// The schema migrations 1..=`version` create, built in a private in-memory database.
fn expected(version: i64) -> rusqlite::Result<Vec<Entry>> {
    let mem = Connection::open_in_memory()?;
    let mut out: Vec<Entry> = Vec::new();
    for (name, sql) in MIGRATIONS.iter().take(version.clamp(0, VERSION) as usize) {
        mem.execute_batch(sql)?;
        for mut e in entries(&mem)? {
            match out
                .iter_mut()
                .find(|o| o.kind == e.kind && o.name == e.name)
            {
                // A later migration may alter an object; it keeps its creator.
                Some(o) => {
                    e.migration = o.migration;
                    *o = e;
                }
                None => {
                    e.migration = name;
                    out.push(e);
                }
            }
        }
        // Objects a migration dropped.
        let now = entries(&mem)?;
        out.retain(|o| now.iter().any(|e| e.kind == o.kind && e.name == o.name));
    }
    Ok(out)
}

/// Compares the store's schema with the one its migrations create at its `user_version`:
/// every table (column by column), index, view and trigger must be there as created, and
/// nothing else. An empty list means the schema is as expected.
pub(super) fn check(conn: &Connection) -> rusqlite::Result<Vec<SchemaProblem>> {
    let v = version(conn)?;
    let want = expected(v)?;
    let have = entries(conn)?;
    let mut problems = Vec::new();
    let mut say = |e: &Entry, problem: String| {
        problems.push(SchemaProblem {
            kind: e.kind.clone(),
            name: e.name.clone(),
            problem,
        })
    };
    for w in &want {
        let Some(h) = have.iter().find(|h| h.kind == w.kind && h.name == w.name) else {
            say(
                w,
                format!(
                    "missing (migration {} creates it; the store is at schema version {v})",
                    w.migration
                ),
            );
            continue;
        };
        if w.kind == "table" {
            table_problems(w, h, &mut say);
        } else if h.sql != w.sql && !(w.kind == "view" && w.name == "metrics_wide") {
            // `metrics_wide` is re-created by the program when a metric is declared (one
            // column per `metric_defs` row; 0005_metrics_long.sql), so its columns may grow.
            say(
                w,
                format!("its definition differs from migration {}", w.migration),
            );
        }
    }
    for h in &have {
        if !want.iter().any(|w| w.kind == h.kind && w.name == h.name) {
            say(
                h,
                format!("not in the schema (no migration up to version {v} creates it)"),
            );
        }
    }
    Ok(problems)
}

/// The problems of table `h` against the table `w` the migrations create: column by column,
/// then (when the columns match) its constraints, through its `CREATE TABLE` text.
fn table_problems(w: &Entry, h: &Entry, say: &mut impl FnMut(&Entry, String)) {
    let mut column_problem = false;
    for c in &w.columns {
        match h.columns.iter().find(|x| x.0 == c.0) {
            None => {
                say(w, format!("column `{}` is missing", c.0));
                column_problem = true;
            }
            Some(x) if x != c => {
                say(
                    w,
                    format!(
                        "column `{}` differs: expected {}, found {}",
                        c.0,
                        column_text(c),
                        column_text(x)
                    ),
                );
                column_problem = true;
            }
            Some(_) => {}
        }
    }
    for x in &h.columns {
        if !w.columns.iter().any(|c| c.0 == x.0) {
            say(
                w,
                format!(
                    "column `{}` is not in the schema (no migration adds it)",
                    x.0
                ),
            );
            column_problem = true;
        }
    }
    if !column_problem && h.sql != w.sql {
        say(
            w,
            format!(
                "its definition (constraints) differs from migration {}",
                w.migration
            ),
        );
    }
}

fn column_text(c: &(String, String, bool, Option<String>, i64, i64)) -> String {
    let mut s = if c.1.is_empty() {
        "no type".to_string()
    } else {
        c.1.clone()
    };
    if c.2 {
        s += " NOT NULL";
    }
    if let Some(d) = &c.3 {
        s += &format!(" DEFAULT {d}");
    }
    if c.4 > 0 {
        s += " PRIMARY KEY";
    }
    if c.5 != 0 {
        s += " (generated or hidden)";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migrated_database_matches_and_a_dropped_table_does_not() {
        let mut c = Connection::open_in_memory().unwrap();
        migrate(&mut c).unwrap();
        assert_eq!(check(&c).unwrap(), vec![]);
        c.execute_batch("DROP VIEW solutions_hex; DROP TABLE solutions; DROP INDEX runs_name;")
            .unwrap();
        let p: Vec<String> = check(&c).unwrap().iter().map(|p| p.to_string()).collect();
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(
            p.iter()
                .any(|p| p.starts_with("table `solutions`: missing (migration 0002_solutions"))
        );
        assert!(
            p.iter()
                .any(|p| p.starts_with("view `solutions_hex`: missing"))
        );
        assert!(
            p.iter()
                .any(|p| p.starts_with("index `runs_name`: missing"))
        );
    }

    #[test]
    fn columns_are_compared_one_by_one() {
        let mut c = Connection::open_in_memory().unwrap();
        migrate(&mut c).unwrap();
        c.execute_batch(
            "ALTER TABLE runs DROP COLUMN threads; ALTER TABLE objects ADD COLUMN extra INTEGER;
             CREATE TABLE mine (x);",
        )
        .unwrap();
        let p: Vec<String> = check(&c).unwrap().iter().map(|p| p.to_string()).collect();
        assert_eq!(
            p,
            [
                "table `objects`: column `extra` is not in the schema (no migration adds it)"
                    .to_string(),
                "table `runs`: column `threads` is missing".to_string(),
                format!(
                    "table `mine`: not in the schema (no migration up to version {VERSION} \
                     creates it)"
                ),
            ],
        );
    }
}
