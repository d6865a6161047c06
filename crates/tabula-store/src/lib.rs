//! The experiment store: one SQLite file holding every record, content-addressed.
//!
//! Design (docs/store.md): a record is a versioned Rust struct ([`Record`]) serialised with
//! postcard; its address is `blake3(kind tag || 0x00 || bytes)` ([`ObjectHash`]). Objects are
//! deduplicated by hash, and relational tables index them for SQL. The object bytes are the
//! source of truth; [`Store::fsck`] recomputes every hash. How the bytes are kept is the
//! store's choice, never part of an address (docs/store.md "Packs and codecs"): small
//! objects of one kind committed together (self-play games) go into one compressed pack,
//! large ones may be compressed, and an object listing a pack's members (an iteration
//! record) may leave their addresses to the pack.
//!
//! The public face is small: [`Store`], [`ObjectHash`], [`Record`], [`StoreError`] and the
//! query/report types. Table layouts and encodings stay private to this module (like redb's
//! `db.rs` over a private `tree_store/`); the schema itself lives in `schema/` as numbered,
//! commented migrations applied on open.
//!
//! Durability: WAL mode, `synchronous=NORMAL` (never corrupts; after a power loss the last
//! commits may roll back), write transactions `BEGIN IMMEDIATE`, batches rather than a commit
//! per row. A writer's close copies the log into the file, except that
//! [`Store::close_leaving_log`] leaves a small one for the next writer.
//!
//! Opening (docs/store.md, "Opening a store"): `--db` must name a regular file (a directory,
//! FIFO, socket or device is refused before SQLite sees it, so nothing hangs on a FIFO) that
//! is a SQLite database; a writer refuses a SQLite file that is not a tabula store rather
//! than adding tables to it. A read-only open writes nothing at all, not even the `-wal` and
//! `-shm` files SQLite makes for a WAL database: with no write-ahead log beside the store it
//! reads the file as immutable (no locks, no side files) and remembers the file's identity,
//! size and modification time so that a writer that started meanwhile is detected
//! ([`Store::check_unchanged`]); with a log present (a live writer, one that was killed, or
//! a log left on purpose) it reads through the log in SQLite's shared mode and never checkpoints it.

mod batch;
mod clock;
mod encoded;
mod error;
mod failpoint;
mod gc;
mod hash;
mod index;
mod merge;
mod objects;
mod open;
mod packs;
mod paths;
mod prepare;
mod provenance;
mod query;
mod resolve;
mod retention;
mod runs;
mod schema;
mod solutions;
mod sweeps;
mod usage;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::Connection;

pub use clock::utc_now_rfc3339;
pub use encoded::Encoded;
pub use error::{Result, StoreError};
pub use gc::Collected;
pub use hash::ObjectHash;
pub use merge::{Equivalent, MergedSource};
pub use objects::Record;
pub use packs::PreparedPack;
pub use prepare::{Prepared, address, prepare, prepare_against, prepare_pack};
pub use provenance::{
    Annotations, Build, Outcome, SessionRow, Subject, check_note, check_tag, command_line,
};
pub use query::{Cell, QueryLimits, QueryResult, READ_PRAGMAS, RowSink, Value};
pub use resolve::MIN_PREFIX;
pub use runs::{
    EvaluationRow, IterationRow, LockHolder, NewRun, RunGameRow, RunRow, RunStatus, host_name,
};
pub use schema::SchemaProblem;
pub use solutions::SolutionRow;
pub use sweeps::{SweepMember, SweepRow};
pub use usage::{KindUsage, RunUsage, Usage};
pub use writer::{PackLedger, Writer};

use error::{is_busy, sqlite};
use open::PAGE_CACHE_KIB;
use paths::FileStamp;

/// An open store. One writer connection per process.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    read_only: bool,
    /// The console's authorizer and clock (read-only stores only).
    guard: Option<Arc<query::Guard>>,
    /// The file as it was when opened immutable (read-only, no write-ahead log beside it).
    stamp: Option<FileStamp>,
    /// Packs read and the map from member address prefixes to packs.
    packs: packs::Cache,
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
    /// [`Store::write`] with the page cache held to `kib` KiB for the transaction: a bulk
    /// write (a solution of tens of megabytes) would otherwise keep every page it dirties in
    /// the 64 MiB cache until the commit; with a small cache SQLite spills them to the
    /// write-ahead log as it goes. The bytes stored are the same either way.
    pub fn write_bulk<T>(
        &mut self,
        kib: i64,
        f: impl FnOnce(&Writer<'_>) -> Result<T>,
    ) -> Result<T> {
        self.conn
            .pragma_update(None, "cache_size", -kib.max(1))
            .map_err(|e| self.err(e))?;
        let out = self.write(f);
        let restored = self
            .conn
            .pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
            .map_err(|e| self.err(e));
        let out = out?;
        restored?;
        Ok(out)
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
        objects::get(&self.conn, &self.packs, hash).map_err(|e| self.lift(e))
    }

    /// Reads many objects of one kind, in order: like [`Store::get`] on each (same checks,
    /// same errors), with the objects and everything they are stored against decoded in
    /// parallel on the current rayon pool (a checkpoint's chunks).
    pub fn get_many<R: Record + Send>(&self, hashes: &[ObjectHash]) -> Result<Vec<R>> {
        objects::get_many(&self.conn, &self.packs, hashes).map_err(|e| self.lift(e))
    }

    /// Reads an object of any kind and checks its bytes against its address; returns its
    /// kind.
    pub fn check(&self, hash: &ObjectHash) -> Result<String> {
        objects::check(&self.conn, &self.packs, hash).map_err(|e| self.lift(e))
    }

    /// Whether an object is stored.
    pub fn contains(&self, hash: &ObjectHash) -> Result<bool> {
        objects::contains(&self.conn, &self.packs, hash).map_err(|e| self.lift(e))
    }

    /// Runs `f` inside one `BEGIN IMMEDIATE` transaction: all its writes land together or
    /// not at all.
    pub fn write<T>(&mut self, f: impl FnOnce(&Writer<'_>) -> Result<T>) -> Result<T> {
        if self.read_only {
            return Err(StoreError::ReadOnly(self.path.display().to_string()));
        }
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
        // The write steps a fault-injection test fails one at a time (failpoint.rs).
        let step = |point| failpoint::hit(point).map_err(|e| sqlite(&path, e));
        let out = step("begin")
            .and_then(|()| {
                f(&Writer {
                    tx: &tx,
                    path: &path,
                })
            })
            .and_then(|out| step("commit").map(|()| out))
            .and_then(|out| tx.commit().map_err(|e| sqlite(&path, e)).map(|()| out))
            .and_then(|out| step("committed").map(|()| out));
        if out.is_err() {
            // Rolled back: pack ids read in this transaction may be reused.
            self.packs.clear();
        }
        out
    }

    /// Runs `f` inside one read transaction of this connection: every read `f` makes of the
    /// store sees one snapshot, the state at one commit, whatever a writer commits meanwhile
    /// (a check of a store a run is writing, `merge`'s check of a running shard).
    pub fn in_snapshot<T>(&self, f: impl FnOnce(&Store) -> T) -> Result<T> {
        // A read-only store's authorizer refuses transaction statements (the SQL console's
        // guard); these two are the store's own, let through one at a time.
        let own = |on: bool| {
            if let Some(g) = &self.guard {
                g.allow_own_transaction(on);
            }
        };
        own(true);
        let tx = self.conn.unchecked_transaction();
        own(false);
        let tx = tx.map_err(|e| self.err(e))?;
        let out = f(self);
        own(true);
        // Nothing was written: ending it is a rollback.
        drop(tx);
        own(false);
        Ok(out)
    }

    /// Recomputes every object's hash from its kind and bytes.
    pub fn fsck(&self, mut progress: impl FnMut(u64, u64)) -> Result<FsckReport> {
        objects::fsck(&self.conn, &mut progress).map_err(|e| self.lift(e))
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
