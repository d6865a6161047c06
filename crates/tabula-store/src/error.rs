//! The store's errors, and the mapping of SQLite's errors onto them.

use std::path::Path;
use std::time::Duration;

use super::{LockHolder, ObjectHash, resolve};

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store {path}: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "store {path} has schema version {found}, newer than this tabula understands ({supported}); \
         use a newer tabula"
    )]
    TooNew {
        path: String,
        found: i64,
        supported: i64,
    },
    #[error(
        "store {path} has schema version {found}, older than this tabula's ({current}); \
         commands that only read never change a store: this store needs `tabula --db {path} \
         migrate` first (after which builds older than this one cannot read it)"
    )]
    NeedsMigration {
        path: String,
        found: i64,
        current: i64,
    },
    #[error(
        "run {run} iteration {iteration}: metric `{metric}` is {value}, not a finite number: the \
         model diverged; lower the learning rate (or another rate), then branch from an earlier \
         iteration"
    )]
    NotFinite {
        run: i64,
        iteration: u32,
        metric: String,
        value: f64,
    },
    #[error("no store at {0} (run a command that writes, e.g. `tabula solve`, to create one)")]
    Missing(String),
    #[error(
        "{path} is {what}, not a store file; give the path of a SQLite file \
         (e.g. ./tabula.db; a new one is created by commands that write)"
    )]
    NotAFile { path: String, what: &'static str },
    #[error("{path} is not a tabula store: {reason}")]
    NotAStore { path: String, reason: String },
    #[error(
        "cannot create a store at {path}: the directory {dir} does not exist (create it first)"
    )]
    NoDirectory { path: String, dir: String },
    /// A new store could not be made; nothing was left at its path.
    #[error("store {path} could not be created ({why}); nothing was left at that path")]
    Create { path: String, why: String },
    #[error(
        "store {path} cannot be written (the file or its directory is read-only); commands \
         that only read it (ls, show, sql, fsck, checkout, verify, replay) still work"
    )]
    CannotWrite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "store {0} has a write-ahead log ({0}-wal, commits not yet folded into the file) but no \
         {0}-shm, and SQLite cannot create one in its read-only directory; copy the store with \
         its -wal to a writable directory, or run a command that writes on it once"
    )]
    LogWithoutIndex(String),
    #[error("store {0} is open read-only here; this step writes and needs a writable store")]
    ReadOnly(String),
    #[error(
        "store {0} was changed by another process while this command read it without a lock \
         (a writer started meanwhile); what was read may mix old and new pages: run the command again"
    )]
    ChangedWhileReading(String),
    #[error("object {0} is not in the store")]
    NotFound(ObjectHash),
    #[error("object {hash} is damaged: {reason}")]
    Corrupt { hash: ObjectHash, reason: String },
    #[error("object {hash} is a `{found}` record, expected `{expected}`")]
    WrongKind {
        hash: ObjectHash,
        found: String,
        expected: &'static str,
    },
    #[error("encoding a `{kind}` record: {source}")]
    Encode {
        kind: &'static str,
        #[source]
        source: postcard::Error,
    },
    #[error("the query failed: {0}")]
    Query(String),
    /// A note or tag that cannot be stored (too long, a control character).
    #[error("{0}")]
    Annotation(String),
    #[error("empty query: give one SQL statement, e.g. `tabula sql \"SELECT * FROM runs_hex\"`")]
    EmptyQuery,
    #[error(
        "`{0}` is not allowed: `tabula sql` only reads (SELECT, WITH, VALUES, EXPLAIN, and \
         the PRAGMAs that report, without a value, e.g. `PRAGMA table_info(runs)`; \
         `tabula sql --help` lists them)"
    )]
    QueryDenied(String),
    #[error(
        "the query returns more than {0} rows (the limit; raise it with --max-rows N, 0 for none, \
         or narrow the query with WHERE or LIMIT); the first {0} rows were printed"
    )]
    TooManyRows(u64),
    #[error(
        "the query was stopped after {} s of work (the limit; raise it with --timeout SECONDS, \
         0 for none)", .0.as_secs_f64()
    )]
    QueryTimedOut(Duration),
    #[error("writing the query's rows: {0}")]
    Output(#[source] std::io::Error),
    #[error(
        "run {run} is locked: process {} on host {} has worked on it since {} \
         (wait for it to finish or stop it; a lock whose process on this host has died is \
         taken over by itself; if that host's process is gone, `tabula resume {run} \
         --take-over` takes the lock)",
        holder.pid, holder.host, holder.since
    )]
    Locked { run: i64, holder: LockHolder },
    #[error(
        "`{text}` names more than one {what}{}:\n{}\ngive more hex digits of the hash{}",
        if candidates.len() > resolve::MAX_LISTED { " (the first listed)" } else { "" },
        candidates.iter().take(resolve::MAX_LISTED).map(|c| format!("  {c}")).collect::<Vec<_>>().join("\n"),
        if *what == "run" { ", or the run's id or name" } else { "" }
    )]
    Ambiguous {
        what: &'static str,
        text: String,
        candidates: Vec<String>,
    },
    #[error(
        "a run named `{name}` is already in the store (run {id}, {status}, run record {hash}); \
         run names are unique: continue that run with `tabula resume {id}`, or give the new \
         run another name (`name = \"...\"` in the spec, or `--set name=NEW`)"
    )]
    NameTaken {
        name: String,
        id: i64,
        status: &'static str,
        hash: String,
    },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

pub(super) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

pub(super) fn sqlite(path: &Path, source: rusqlite::Error) -> StoreError {
    let path = path.display().to_string();
    // SQLite's "attempt to write a readonly database" (and its variants): the file or its
    // directory cannot be written by this process.
    if source.sqlite_error_code() == Some(rusqlite::ErrorCode::ReadOnly) {
        return StoreError::CannotWrite { path, source };
    }
    StoreError::Sqlite { path, source }
}
