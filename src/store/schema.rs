//! Migrations: the numbered SQL files of `schema/`, applied in order on open.
//! `PRAGMA user_version` holds how many have been applied.

use rusqlite::Connection;

/// The migrations, in order. Append only: an applied migration never changes.
const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_objects",
        include_str!("../../schema/0001_objects.sql"),
    ),
    (
        "0002_solutions",
        include_str!("../../schema/0002_solutions.sql"),
    ),
    ("0003_runs", include_str!("../../schema/0003_runs.sql")),
    (
        "0004_lifecycle",
        include_str!("../../schema/0004_lifecycle.sql"),
    ),
];

/// The schema version this build writes and understands.
pub(super) const VERSION: i64 = MIGRATIONS.len() as i64;

fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

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

/// Refuses stores newer than this build.
pub(super) fn check_version(conn: &Connection) -> Result<(), SchemaError> {
    let found = version(conn)?;
    if found > VERSION {
        return Err(SchemaError::TooNew(found));
    }
    Ok(())
}

/// Applies every migration the store lacks, each in its own IMMEDIATE transaction.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), SchemaError> {
    loop {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let v = version(&tx)?;
        if v > VERSION {
            return Err(SchemaError::TooNew(v));
        }
        if v == VERSION {
            return Ok(());
        }
        let (_, sql) = MIGRATIONS[v as usize];
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", v + 1)?;
        tx.commit()?;
    }
}
