//! The experiment store: one SQLite file holding every record, content-addressed.
//!
//! Design (spec `store.md`): a record is a versioned Rust struct ([`Record`]) serialised with
//! postcard; its address is `blake3(kind tag || 0x00 || bytes)` ([`ObjectHash`]). Objects are
//! deduplicated by hash, and relational tables index them for SQL. The object bytes are the
//! source of truth; [`Store::fsck`] recomputes every hash.
//!
//! The public face is small: [`Store`], [`ObjectHash`], [`Record`], [`StoreError`] and the
//! query/report types. Table layouts and encodings stay private to this module (like redb's
//! `db.rs` over a private `tree_store/`); the schema itself lives in `schema/` as numbered,
//! commented migrations applied on open.
//!
//! Durability: WAL mode, `synchronous=NORMAL` (never corrupts; after a power loss the last
//! commits may roll back), write transactions `BEGIN IMMEDIATE`, batches rather than a commit
//! per row.

mod hash;
mod objects;
mod query;
mod runs;
mod schema;
mod solutions;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

pub use hash::ObjectHash;
pub use objects::Record;
pub use query::{QueryResult, Value};
pub use runs::{
    EvaluationRow, IterationRow, LockHolder, NewRun, RunGameRow, RunRow, RunStatus, host_name,
};
pub use solutions::SolutionRow;

/// Where the store lives when neither `--db` nor `TABULA_DB` says otherwise.
pub const DEFAULT_PATH: &str = "tabula.db";

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
    #[error("no store at {0} (run a command that writes, e.g. `tabula solve`, to create one)")]
    Missing(String),
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
    #[error(
        "run {run} is locked: process {} on host {} has worked on it since {} \
         (wait for it to finish or stop it; a lock whose process has died is taken over)",
        holder.pid, holder.host, holder.since
    )]
    Locked { run: i64, holder: LockHolder },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// An open store. One writer connection per process.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    read_only: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Store {
    /// The store path the user asked for: `--db` first, then `TABULA_DB`, then `./tabula.db`.
    pub fn resolve_path(flag: Option<&Path>) -> PathBuf {
        if let Some(p) = flag {
            return p.to_path_buf();
        }
        match std::env::var_os("TABULA_DB") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => PathBuf::from(DEFAULT_PATH),
        }
    }

    /// Opens (creating if needed) a store for reading and writing, applying any pending
    /// migrations. A store written by a newer tabula is refused.
    pub fn open(path: &Path) -> Result<Store> {
        let conn = Connection::open(path).map_err(|e| sqlite(path, e))?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            read_only: false,
        };
        store.configure()?;
        schema::migrate(&mut store.conn).map_err(|e| store.schema_err(e))?;
        Ok(store)
    }

    /// Opens an existing store read-only: no statement on this connection can change it.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        if !path.exists() {
            return Err(StoreError::Missing(path.display().to_string()));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| sqlite(path, e))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
            read_only: true,
        };
        store
            .conn
            .busy_timeout(Duration::from_secs(10))
            .map_err(|e| store.err(e))?;
        store
            .conn
            .pragma_update(None, "query_only", true)
            .map_err(|e| store.err(e))?;
        schema::check_version(&store.conn).map_err(|e| store.schema_err(e))?;
        Ok(store)
    }

    fn configure(&self) -> Result<()> {
        let c = &self.conn;
        c.busy_timeout(Duration::from_secs(30))
            .map_err(|e| self.err(e))?;
        c.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| self.err(e))?;
        c.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| self.err(e))?;
        c.pragma_update(None, "foreign_keys", true)
            .map_err(|e| self.err(e))?;
        // 64 MiB page cache (negative = KiB).
        c.pragma_update(None, "cache_size", -65536)
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a record (if not already there) and returns its address.
    pub fn put<R: Record>(&self, record: &R) -> Result<ObjectHash> {
        objects::put(&self.conn, record).map_err(|e| self.lift(e))
    }

    /// Loads and decodes a record, checking its hash and kind.
    pub fn get<R: Record>(&self, hash: &ObjectHash) -> Result<R> {
        objects::get(&self.conn, hash).map_err(|e| self.lift(e))
    }

    /// Whether an object is stored.
    pub fn contains(&self, hash: &ObjectHash) -> Result<bool> {
        objects::contains(&self.conn, hash).map_err(|e| self.lift(e))
    }

    /// Runs `f` inside one `BEGIN IMMEDIATE` transaction: all its writes land together or
    /// not at all.
    pub fn write<T>(&mut self, f: impl FnOnce(&Writer<'_>) -> Result<T>) -> Result<T> {
        let path = self.path.clone();
        // The busy timeout waits for other writers; a BEGIN still refused after it (a very
        // long writer elsewhere) is retried a few times before giving up.
        let mut attempts = 0;
        let tx = loop {
            match self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            {
                Ok(tx) => break tx,
                Err(e) if attempts < 3 && is_busy(&e) => attempts += 1,
                Err(e) => return Err(sqlite(&path, e)),
            }
        };
        let out = f(&Writer {
            tx: &tx,
            path: &path,
        })?;
        tx.commit().map_err(|e| sqlite(&path, e))?;
        Ok(out)
    }

    /// Recomputes every object's hash from its kind and bytes.
    pub fn fsck(&self, mut progress: impl FnMut(u64, u64)) -> Result<FsckReport> {
        objects::fsck(&self.conn, &mut progress).map_err(|e| self.lift(e))
    }

    /// Runs one SQL statement on a read-only connection and returns its rows.
    pub fn query(&self, sql: &str) -> Result<QueryResult> {
        if !self.read_only {
            return Err(StoreError::Query(
                "queries run only on a store opened with Store::open_read_only".into(),
            ));
        }
        query::run(&self.conn, sql)
    }

    /// The stored solution of `variant`, if any.
    pub fn solution(&self, variant: &str) -> Result<Option<SolutionRow>> {
        solutions::find(&self.conn, variant).map_err(|e| self.err(e))
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunRow>> {
        runs::list(&self.conn).map_err(|e| self.err(e))
    }

    /// A run by id, by name (the latest of that name), or by a hex prefix of its run hash or
    /// head.
    pub fn find_run(&self, text: &str) -> Result<Option<RunRow>> {
        runs::find(&self.conn, text).map_err(|e| self.err(e))
    }

    /// The metrics table of a run (one row per iteration, 0 = untrained).
    pub fn run_metrics(&self, run_id: i64) -> Result<QueryResult> {
        runs::metrics(&self.conn, run_id)
    }

    /// Marks a run's status (e.g. failed) outside an iteration's transaction.
    pub fn set_run_status(&mut self, run_id: i64, status: RunStatus) -> Result<()> {
        self.write(|w| runs::set_status(w.tx, run_id, status).map_err(|e| sqlite(w.path, e)))
    }

    /// Takes the lock of a run for this process (see [`StoreError::Locked`]); a lock left by
    /// a dead process of this host is taken over, and a failed run is marked running again.
    pub fn lock_run(&mut self, run_id: i64) -> Result<()> {
        let held = self.write(|w| runs::lock(w.tx, run_id).map_err(|e| sqlite(w.path, e)))?;
        held.map_err(|holder| StoreError::Locked {
            run: run_id,
            holder,
        })
    }

    /// Releases the lock of a run if this process holds it.
    pub fn unlock_run(&mut self, run_id: i64) -> Result<()> {
        self.write(|w| runs::unlock(w.tx, run_id).map_err(|e| sqlite(w.path, e)))
    }

    /// The stored self-play games of one iteration of a run: (game index, hash), in order.
    pub fn run_games(&self, run_id: i64, iteration: u32) -> Result<Vec<(u32, ObjectHash)>> {
        runs::games_of(&self.conn, run_id, iteration).map_err(|e| self.err(e))
    }

    /// Whether a run has an evaluation row for an iteration (0: the untrained table).
    pub fn has_evaluation(&self, run_id: i64, iteration: u32) -> Result<bool> {
        runs::has_evaluation(&self.conn, run_id, iteration).map_err(|e| self.err(e))
    }

    /// The `iterations` rows of a run: (iteration, record hash), ascending (a branch's shared
    /// iterations are its parent's rows, not its own).
    pub fn iteration_hashes(&self, run_id: i64) -> Result<Vec<(u32, ObjectHash)>> {
        runs::iteration_hashes(&self.conn, run_id).map_err(|e| self.err(e))
    }

    /// The (run id, iteration, game index) of a stored self-play game.
    pub fn game_owner(&self, hash: &ObjectHash) -> Result<Option<(i64, u32, u32)>> {
        runs::game_owner(&self.conn, hash).map_err(|e| self.err(e))
    }

    /// Every hash the run tables hold, labelled with where it sits (run, iteration, game).
    pub fn run_references(&self) -> Result<Vec<(String, ObjectHash)>> {
        runs::references(&self.conn).map_err(|e| self.err(e))
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        sqlite(&self.path, e)
    }

    fn schema_err(&self, e: schema::SchemaError) -> StoreError {
        match e {
            schema::SchemaError::Sqlite(e) => self.err(e),
            schema::SchemaError::TooNew(found) => StoreError::TooNew {
                path: self.path.display().to_string(),
                found,
                supported: schema::VERSION,
            },
        }
    }

    fn lift(&self, e: objects::Error) -> StoreError {
        e.into_store_error(&self.path)
    }
}

/// A record's address and encoded size, computed without a store (what `put` would return).
pub fn address<R: Record>(record: &R) -> Result<(ObjectHash, usize)> {
    match objects::encode(record) {
        Ok(bytes) => Ok((ObjectHash::of(R::KIND, &bytes), bytes.len())),
        Err(e) => Err(e.into_store_error(Path::new(""))),
    }
}

/// Writes inside one transaction of [`Store::write`].
pub struct Writer<'a> {
    tx: &'a rusqlite::Transaction<'a>,
    path: &'a Path,
}

impl Writer<'_> {
    pub fn put<R: Record>(&self, record: &R) -> Result<ObjectHash> {
        objects::put(self.tx, record).map_err(|e| e.into_store_error(self.path))
    }

    /// Stores a record (if not already there); returns its address and encoded size.
    pub fn put_sized<R: Record>(&self, record: &R) -> Result<(ObjectHash, usize)> {
        objects::put_sized(self.tx, record).map_err(|e| e.into_store_error(self.path))
    }

    /// Creates a run's row (its run and settings records must be stored); returns its id.
    pub fn create_run(&self, run: &NewRun) -> Result<i64> {
        runs::create(self.tx, run).map_err(|e| sqlite(self.path, e))
    }

    /// Takes a run's lock for this process in this transaction (see [`Store::lock_run`]).
    pub fn lock_run(&self, run_id: i64) -> Result<()> {
        runs::lock(self.tx, run_id)
            .map_err(|e| sqlite(self.path, e))?
            .map_err(|holder| StoreError::Locked {
                run: run_id,
                holder,
            })
    }

    /// Indexes a batch of a run's self-play games (their records must be stored).
    pub fn add_run_games(&self, run_id: i64, iteration: u32, games: &[RunGameRow]) -> Result<()> {
        runs::add_games(self.tx, run_id, iteration, games).map_err(|e| sqlite(self.path, e))
    }

    /// Indexes a committed iteration.
    pub fn add_iteration(&self, row: &IterationRow) -> Result<()> {
        runs::add_iteration(self.tx, row).map_err(|e| sqlite(self.path, e))
    }

    /// Records an iteration's metrics as columns.
    pub fn add_evaluation(&self, row: &EvaluationRow) -> Result<()> {
        runs::add_evaluation(self.tx, row).map_err(|e| sqlite(self.path, e))
    }

    /// Sets a run's progress: iterations done, head, status.
    pub fn set_run_progress(
        &self,
        run_id: i64,
        done: u32,
        head: Option<&ObjectHash>,
        status: RunStatus,
    ) -> Result<()> {
        runs::set_progress(self.tx, run_id, done, head, status).map_err(|e| sqlite(self.path, e))
    }

    /// Records (or replaces) the solution row of a variant; its manifest must be stored.
    pub fn put_solution(&self, row: &SolutionRow) -> Result<()> {
        solutions::upsert(self.tx, row).map_err(|e| sqlite(self.path, e))
    }
}

/// What `fsck` found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct FsckReport {
    pub objects: u64,
    pub bytes: u64,
    /// Objects whose bytes no longer hash to their address, with the reason.
    pub damaged: Vec<(ObjectHash, String)>,
}

impl FsckReport {
    pub fn is_clean(&self) -> bool {
        self.damaged.is_empty()
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn sqlite(path: &Path, source: rusqlite::Error) -> StoreError {
    StoreError::Sqlite {
        path: path.display().to_string(),
        source,
    }
}
