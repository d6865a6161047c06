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
mod encoded;
mod hash;
mod merge;
mod objects;
mod packs;
mod query;
mod resolve;
mod runs;
mod schema;
mod solutions;
mod sweeps;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags};

pub use encoded::Encoded;
pub use hash::ObjectHash;
pub use merge::MergedSource;
pub use objects::Record;
pub use packs::PreparedPack;
pub use query::{Cell, QueryLimits, QueryResult, READ_PRAGMAS, RowSink, Value};

/// How long a writer waits for another (SQLite's busy timeout).
const BUSY_WAIT: Duration = Duration::from_secs(30);

/// The page cache of a store connection, in KiB.
const PAGE_CACHE_KIB: i64 = 65536;

/// The largest write-ahead log [`Store::close_leaving_log`] leaves beside a store: about
/// SQLite's automatic checkpoint size (1000 frames of a 4 KiB page).
const LEFT_LOG_MAX: u64 = 4 << 20;
pub use resolve::{MIN_PREFIX, hex_prefix};
pub use runs::{
    EvaluationRow, IterationRow, LockHolder, NewRun, RunGameRow, RunRow, RunStatus, host_name,
};
pub use schema::SchemaProblem;
pub use solutions::SolutionRow;
pub use sweeps::{SweepMember, SweepRow};

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
    #[error(
        "--db {path} is {what}, not a store file; give the path of a SQLite file \
         (e.g. ./tabula.db; a new one is created by commands that write)"
    )]
    NotAFile { path: String, what: &'static str },
    #[error("--db {path} is not a tabula store: {reason}")]
    NotAStore { path: String, reason: String },
    #[error(
        "cannot create a store at {path}: the directory {dir} does not exist (create it first)"
    )]
    NoDirectory { path: String, dir: String },
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

/// What identifies a file's content cheaply: device, inode, size, modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileStamp {
    fn of(path: &Path) -> std::io::Result<FileStamp> {
        let m = std::fs::metadata(path)?;
        #[cfg(unix)]
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        };
        #[cfg(not(unix))]
        let (dev, ino) = (0, 0);
        Ok(FileStamp {
            dev,
            ino,
            len: m.len(),
            modified: m.modified().ok(),
        })
    }
}

/// The file beside the store with `suffix` appended to its name (`-wal`, `-shm`).
fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// What a path that is not a regular file is, in words; None for a regular file (symbolic
/// links are followed). Only `stat` is used: opening a FIFO would block.
fn not_a_file(m: &std::fs::Metadata) -> Option<&'static str> {
    let t = m.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_char_device() || t.is_block_device() {
            return Some("a device");
        }
    }
    Some("not a regular file")
}

/// The 16 bytes every SQLite database file starts with.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Checks a store path before SQLite opens it: an existing path must be a regular file that
/// is empty or starts with SQLite's header; a missing one is refused for reading, and for
/// writing needs an existing directory. Returns the file's length (None: it does not exist).
fn check_path(path: &Path, writing: bool) -> Result<Option<u64>> {
    let shown = || path.display().to_string();
    let m = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !writing {
                return Err(StoreError::Missing(shown()));
            }
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            return match std::fs::metadata(dir) {
                Ok(d) if d.is_dir() => Ok(None),
                _ => Err(StoreError::NoDirectory {
                    path: shown(),
                    dir: dir.display().to_string(),
                }),
            };
        }
        Err(e) => {
            return Err(StoreError::NotAStore {
                path: shown(),
                reason: format!("it cannot be examined ({e})"),
            });
        }
    };
    if let Some(what) = not_a_file(&m) {
        return Err(StoreError::NotAFile {
            path: shown(),
            what,
        });
    }
    if m.len() == 0 {
        return Ok(Some(0));
    }
    let mut head = [0u8; 16];
    let read = std::fs::File::open(path).and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut head)
    });
    match read {
        Ok(()) if &head == SQLITE_HEADER => Ok(Some(m.len())),
        Ok(()) => Err(StoreError::NotAStore {
            path: shown(),
            reason: "it is not a SQLite database (its first bytes are not SQLite's header)".into(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(StoreError::NotAStore {
            path: shown(),
            reason: format!("it is not a SQLite database (only {} bytes long)", m.len()),
        }),
        Err(e) => Err(StoreError::NotAStore {
            path: shown(),
            reason: format!("it cannot be read ({e})"),
        }),
    }
}

/// A `file:` URI for `path` with `query` appended, every byte outside the unreserved set
/// percent-encoded (so `?`, `#` and `%` in a file name mean themselves).
fn file_uri(path: &Path, query: &str) -> String {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().into_owned().into_bytes();
    // An absolute path gets an empty authority (`file:///abs`), so `//x` is never a host.
    let mut uri = String::from(if bytes.first() == Some(&b'/') {
        "file://"
    } else {
        "file:"
    });
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
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

    /// The checks [`Store::open`] makes on `path` before SQLite sees it (a missing path
    /// needs an existing directory; an existing one must be a regular file that is empty or
    /// a SQLite database), without opening it: a command that opens the store later (on
    /// another thread, `tabula solve`) refuses a bad `--db` at once.
    pub fn check_path_to_open(path: &Path) -> Result<()> {
        check_path(path, true).map(|_| ())
    }

    /// Opens (creating if needed) a store for reading and writing, applying any pending
    /// migrations. A store written by a newer tabula is refused, and so is a path that is not
    /// a regular file, a file that is not SQLite, and a SQLite database that is not a tabula
    /// store (so its tables are never added to someone else's database).
    pub fn open(path: &Path) -> Result<Store> {
        check_path(path, true)?;
        let conn = Connection::open(path).map_err(|e| sqlite(path, e))?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            read_only: false,
            guard: None,
            stamp: None,
            packs: packs::Cache::default(),
        };
        // SQLite cannot open the `-wal`/`-shm` files of a store in a read-only directory.
        let cannot_write = |e: StoreError| match e {
            StoreError::Sqlite { path, source }
                if source.sqlite_error_code() == Some(rusqlite::ErrorCode::CannotOpen) =>
            {
                StoreError::CannotWrite { path, source }
            }
            e => e,
        };
        store.refuse_foreign()?;
        store.configure().map_err(cannot_write)?;
        schema::migrate(&mut store.conn)
            .map_err(|e| store.schema_err(e))
            .map_err(cannot_write)?;
        Ok(store)
    }

    /// Opens an existing store read-only, writing nothing (see the module docs): no
    /// statement on this connection can change it, and the SQL console's authorizer refuses
    /// anything but reads. A store written by an older build is first brought to this
    /// build's schema (its migrations move data losslessly; the one write a read-only
    /// command makes), so read-only commands see the current tables.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let len = check_path(path, false)?;
        if len == Some(0) {
            return Err(StoreError::NotAStore {
                path: path.display().to_string(),
                reason: "the file is empty".into(),
            });
        }
        if schema::older(path) {
            drop(Store::open(path)?);
        }
        let wal = side_file(path, "-wal");
        let shm = side_file(path, "-shm").exists();
        let logged = match std::fs::metadata(&wal) {
            Ok(m) => m.len() > 0 || shm,
            Err(_) => false,
        };
        // Immutable: SQLite takes no locks and opens no side file. Safe while no writer
        // exists; the stamp detects one that starts (it can only reach the file through a
        // checkpoint, which changes the file's size or modification time).
        let (query, stamp) = if logged {
            ("mode=ro", None)
        } else {
            let stamp = FileStamp::of(path).map_err(|e| StoreError::NotAStore {
                path: path.display().to_string(),
                reason: format!("it cannot be examined ({e})"),
            })?;
            ("immutable=1", Some(stamp))
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let mut conn = Connection::open_with_flags(file_uri(path, query), flags)
            .map_err(|e| sqlite(path, e))?;
        let c = &conn;
        let setup = || -> rusqlite::Result<()> {
            // Closing the last connection to a WAL store normally checkpoints the log into
            // the file and deletes it: a reader must not.
            c.set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            )?;
            c.busy_timeout(Duration::from_secs(10))?;
            c.pragma_update(None, "query_only", true)
        };
        setup().map_err(|e| sqlite(path, e))?;
        let guard = query::install(&mut conn).map_err(|e| sqlite(path, e))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
            read_only: true,
            guard: Some(guard),
            stamp,
            packs: packs::Cache::default(),
        };
        // The first read opens the log; with no `-shm` beside it SQLite must create one (the
        // log's index), which a read-only directory forbids.
        let first_read = schema::check_version(&store.conn).map_err(|e| store.schema_err(e));
        match first_read {
            Err(StoreError::Sqlite { source, .. })
                if logged
                    && !shm
                    && source.sqlite_error_code() == Some(rusqlite::ErrorCode::CannotOpen) =>
            {
                return Err(StoreError::LogWithoutIndex(path.display().to_string()));
            }
            r => r?,
        }
        store.refuse_foreign()?;
        Ok(store)
    }

    /// Closes the store, leaving its write-ahead log beside the file for the next writer to
    /// copy in, when the log is small (at most `LEFT_LOG_MAX` bytes, 4 MiB, about SQLite's own
    /// automatic checkpoint size); a larger log is checkpointed as on any close. The close of a
    /// writer normally copies the log into the file and `fsync`s both, tens of milliseconds
    /// for a few megabytes; a command whose last act is one commit (`tabula solve`) need not
    /// wait for that. Nothing is lost but that wait: the store stays consistent (a reader
    /// reads through the log, as beside a live writer), and the durability is the one
    /// `synchronous=NORMAL` gives every commit (module docs): after a power loss before the
    /// system writes the log out, the last commit may roll back.
    pub fn close_leaving_log(self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let log = std::fs::metadata(side_file(&self.path, "-wal"));
        if log.is_ok_and(|m| m.len() <= LEFT_LOG_MAX) {
            self.conn
                .set_db_config(
                    rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                    true,
                )
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Refuses a SQLite database that tabula did not make: schema version 0 with objects in
    /// it (a new, empty file is fine: migrations will fill it).
    fn refuse_foreign(&self) -> Result<()> {
        let (version, objects): (i64, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT user_version FROM pragma_user_version),
                        (SELECT count(*) FROM sqlite_master)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::NotADatabase) => StoreError::NotAStore {
                    path: self.path.display().to_string(),
                    reason: format!("it is not a SQLite database ({e})"),
                },
                _ => self.err(e),
            })?;
        if version == 0 && objects > 0 {
            return Err(StoreError::NotAStore {
                path: self.path.display().to_string(),
                reason: format!(
                    "a SQLite database with {objects} tables, views or indexes but no tabula schema \
                     version (PRAGMA user_version is 0)"
                ),
            });
        }
        if version == 0 && self.read_only {
            return Err(StoreError::NotAStore {
                path: self.path.display().to_string(),
                reason: "an empty SQLite database (no tabula schema yet)".into(),
            });
        }
        Ok(())
    }

    /// For a store opened read-only without a write-ahead log beside it: whether the file is
    /// still the one that was opened, unchanged. Commands that read for long call this at the
    /// end, so a writer that started meanwhile turns into a clear error, not a wrong answer.
    pub fn check_unchanged(&self) -> Result<()> {
        let Some(stamp) = self.stamp else {
            return Ok(());
        };
        match FileStamp::of(&self.path) {
            // A log appearing is not itself a change: a writer writes the log first and the
            // file only at a checkpoint.
            Ok(now) if now == stamp => Ok(()),
            _ => Err(StoreError::ChangedWhileReading(
                self.path.display().to_string(),
            )),
        }
    }

    /// Compares the store's schema with the one the migrations create at its schema version
    /// (every table, column, index, view and trigger; nothing more): the list of differences,
    /// empty when it matches.
    pub fn check_schema(&self) -> Result<Vec<SchemaProblem>> {
        schema::check(&self.conn).map_err(|e| self.err(e))
    }

    fn configure(&self) -> Result<()> {
        let c = &self.conn;
        c.busy_timeout(BUSY_WAIT).map_err(|e| self.err(e))?;
        // Two processes creating one store at once (`tabula run` twice on a new `--db`): the
        // switch of the new file to WAL needs it alone, and SQLite answers "database is
        // locked" at once instead of waiting out the busy timeout; so the switch is retried
        // for as long as that timeout.
        let start = std::time::Instant::now();
        loop {
            match c.pragma_update(None, "journal_mode", "WAL") {
                Ok(()) => break,
                Err(e) if is_busy(&e) && start.elapsed() < BUSY_WAIT => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(e) => return Err(self.err(e)),
            }
        }
        c.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| self.err(e))?;
        c.pragma_update(None, "foreign_keys", true)
            .map_err(|e| self.err(e))?;
        // 64 MiB page cache (negative = KiB).
        c.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Lets the write-ahead log grow to `pages` pages (4 KiB each) before a commit copies it
    /// into the file (SQLite's default: 1,000). A run's writer raises it so that the copies,
    /// and their two fsyncs each, happen rarely and mostly when the store closes, not beside
    /// self-play; the bytes stored are the same.
    pub fn set_checkpoint_pages(&self, pages: u32) -> Result<()> {
        self.conn
            .pragma_update(None, "wal_autocheckpoint", pages)
            .map_err(|e| self.err(e))
    }

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
        let out = f(&Writer {
            tx: &tx,
            path: &path,
        })
        .and_then(|out| tx.commit().map_err(|e| sqlite(&path, e)).map(|()| out));
        if out.is_err() {
            // Rolled back: pack ids read in this transaction may be reused.
            self.packs.clear();
        }
        out
    }

    /// Recomputes every object's hash from its kind and bytes.
    pub fn fsck(&self, mut progress: impl FnMut(u64, u64)) -> Result<FsckReport> {
        objects::fsck(&self.conn, &mut progress).map_err(|e| self.lift(e))
    }

    /// Runs one SQL statement on a read-only connection and returns its rows (at most
    /// [`QueryLimits::default`]'s). For results of any size use [`Store::query_stream`].
    pub fn query(&self, sql: &str) -> Result<QueryResult> {
        let mut all = query::Collect::default();
        self.query_stream(sql, &QueryLimits::default(), &mut all)?;
        Ok(all.result)
    }

    /// Runs one read-only SQL statement, handing its rows to `sink` as SQLite produces them
    /// (memory stays flat whatever the result's size); returns how many rows it handed over.
    /// Only a store opened with [`Store::open_read_only`] runs queries. Errors:
    /// [`StoreError::EmptyQuery`], [`StoreError::QueryDenied`] (anything but a read),
    /// [`StoreError::TooManyRows`] and [`StoreError::QueryTimedOut`] (past `limits`, after the
    /// rows before the limit reached the sink), [`StoreError::Output`] (the sink failed).
    pub fn query_stream(
        &self,
        sql: &str,
        limits: &QueryLimits,
        sink: &mut dyn RowSink,
    ) -> Result<u64> {
        let Some(guard) = &self.guard else {
            return Err(StoreError::Query(
                "queries run only on a store opened with Store::open_read_only".into(),
            ));
        };
        let out = query::stream(&self.conn, guard, sql, limits, sink);
        // Rows read while a writer checkpointed into an immutable file are not to be trusted.
        match out {
            Err(StoreError::Output(e)) => Err(StoreError::Output(e)),
            Err(e) => {
                self.check_unchanged()?;
                Err(e)
            }
            Ok(n) => {
                self.check_unchanged()?;
                Ok(n)
            }
        }
    }

    /// The stored solution of `variant`, if any.
    pub fn solution(&self, variant: &str) -> Result<Option<SolutionRow>> {
        solutions::find(&self.conn, variant).map_err(|e| self.err(e))
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunRow>> {
        runs::list(&self.conn).map_err(|e| self.err(e))
    }

    /// A run by id, by name, or by a hash prefix (at least [`MIN_PREFIX`] hex digits) of its
    /// run hash or head (docs/store.md); several are [`StoreError::Ambiguous`].
    pub fn find_run(&self, text: &str) -> Result<Option<RunRow>> {
        match runs::find(&self.conn, text).map_err(|e| self.err(e))? {
            resolve::Found::None => Ok(None),
            resolve::Found::One(r) => Ok(Some(r)),
            resolve::Found::Many(rows) => Err(StoreError::Ambiguous {
                what: "run",
                text: text.trim().to_string(),
                candidates: rows.iter().map(RunRow::candidate).collect(),
            }),
        }
    }

    /// `base` if no run has that name, else the first of `base-2`, `base-3`, ... that is
    /// free (names a branch gets by default; docs/store.md).
    pub fn unused_run_name(&self, base: &str) -> Result<String> {
        let mut name = base.to_string();
        let mut n = 1u64;
        while !runs::named(&self.conn, &name)
            .map_err(|e| self.err(e))?
            .is_empty()
        {
            n += 1;
            name = format!("{base}-{n}");
        }
        Ok(name)
    }

    /// The stored object of kind `kind` (e.g. `game/v1`) whose hash starts with `text` (at
    /// least [`MIN_PREFIX`] hex digits; docs/store.md); `None` if none does or `text` is not
    /// a prefix; several are [`StoreError::Ambiguous`].
    pub fn find_object(&self, text: &str, kind: &'static str) -> Result<Option<ObjectHash>> {
        let Some(prefix) = hex_prefix(text) else {
            return Ok(None);
        };
        let found = resolve::objects(&self.conn, &prefix, kind).map_err(|e| self.err(e))?;
        let (lo, hi) = resolve::bounds(&prefix);
        let packed = packs::in_range(
            &self.conn,
            &self.packs,
            &lo,
            &hi,
            kind,
            resolve::MAX_LISTED + 1,
        )
        .map_err(|e| self.lift(e))?;
        let found = found.with(packed);
        match found {
            resolve::Found::None => Ok(None),
            resolve::Found::One(h) => Ok(Some(h)),
            resolve::Found::Many(hashes) => {
                let mut candidates = Vec::new();
                for h in &hashes {
                    let owner = match self.game_owner(h)? {
                        Some((run, it, game)) => {
                            format!("  (run {run}, iteration {it}, game {game})")
                        }
                        None => String::new(),
                    };
                    candidates.push(format!("{h}{owner}"));
                }
                Err(StoreError::Ambiguous {
                    what: kind.split('/').next().unwrap_or(kind),
                    text: text.trim().to_string(),
                    candidates,
                })
            }
        }
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

    /// `resume --take-over`: clears a run's lock held on another host (its process cannot be
    /// checked from here; the caller vouches that it is gone) or by a dead process of this
    /// host; returns the holder it cleared. A live process of this host keeps its lock
    /// ([`StoreError::Locked`]).
    pub fn take_over_run(&mut self, run_id: i64) -> Result<Option<LockHolder>> {
        let r = self.write(|w| runs::take_over(w.tx, run_id).map_err(|e| sqlite(w.path, e)))?;
        r.map_err(|holder| StoreError::Locked {
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
        let rows = runs::games_of(&self.conn, run_id, iteration).map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(rows.len());
        for (game, hash, place) in rows {
            let hash = match (hash, place) {
                (Some(h), _) => h,
                (None, Some((pack, slot))) => {
                    let p = packs::load(&self.conn, &self.packs, pack).map_err(|e| self.lift(e))?;
                    match p.members.get(slot as usize) {
                        Some((h, _)) => *h,
                        None => {
                            return Err(StoreError::Corrupt {
                                hash: p.hash,
                                reason: format!(
                                    "pack: run {run_id} iteration {iteration} game {game} is \
                                     its slot {slot}, but it has {} members",
                                    p.members.len()
                                ),
                            });
                        }
                    }
                }
                (None, None) => {
                    return Err(StoreError::Query(format!(
                        "run {run_id} iteration {iteration} game {game}: neither an address \
                         nor a pack"
                    )));
                }
            };
            out.push((game, hash));
        }
        Ok(out)
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

    /// Snapshots whose objects were deliberately not all stored (full checkpoints derived
    /// like deltas; see [`crate::learners::Learner::KEEP_FULL_EVERY`]).
    pub fn unkept_snapshots(&self) -> Result<Vec<ObjectHash>> {
        runs::unkept_snapshots(&self.conn).map_err(|e| self.err(e))
    }

    /// The (run id, iteration, game index) of a stored self-play game.
    pub fn game_owner(&self, hash: &ObjectHash) -> Result<Option<(i64, u32, u32)>> {
        if let Some(owner) = runs::game_owner(&self.conn, hash).map_err(|e| self.err(e))? {
            return Ok(Some(owner));
        }
        let Some((pack, slot)) =
            packs::place(&self.conn, &self.packs, hash).map_err(|e| self.lift(e))?
        else {
            return Ok(None);
        };
        runs::packed_game_owner(&self.conn, pack, slot).map_err(|e| self.err(e))
    }

    /// Every hash the run tables hold, labelled with where it sits (run, iteration, game).
    pub fn run_references(&self) -> Result<Vec<(String, ObjectHash)>> {
        runs::references(&self.conn).map_err(|e| self.err(e))
    }

    /// Copies every record of the stores at `sources` into this one, by address, in one
    /// transaction (see `merge.rs`): all of it lands, or nothing.
    pub fn merge_from(&mut self, sources: &[PathBuf]) -> Result<Vec<MergedSource>> {
        merge::merge(self, sources)
    }

    /// Checks that `path` is a store this build can merge (exactly its schema version).
    pub fn check_mergeable(path: &Path) -> Result<()> {
        merge::open_source(path).map(|_| ())
    }

    /// Every sweep, oldest first.
    pub fn sweeps(&self) -> Result<Vec<SweepRow>> {
        sweeps::list(&self.conn).map_err(|e| self.err(e))
    }

    /// A sweep by name or by a hash prefix (docs/store.md); several are
    /// [`StoreError::Ambiguous`].
    pub fn find_sweep(&self, text: &str) -> Result<Option<SweepRow>> {
        match sweeps::find(&self.conn, text).map_err(|e| self.err(e))? {
            resolve::Found::None => Ok(None),
            resolve::Found::One(r) => Ok(Some(r)),
            resolve::Found::Many(rows) => Err(StoreError::Ambiguous {
                what: "sweep",
                text: text.trim().to_string(),
                candidates: rows
                    .iter()
                    .map(|s| {
                        format!(
                            "sweep {}  {}  {} points x {} seeds  created {}",
                            s.name, s.hash, s.points, s.seeds, s.created_at
                        )
                    })
                    .collect(),
            }),
        }
    }

    /// The runs of a sweep present in this store, in grid order.
    pub fn sweep_members(&self, sweep: &ObjectHash) -> Result<Vec<SweepMember>> {
        sweeps::members(&self.conn, sweep).map_err(|e| self.err(e))
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

/// Prepares a batch of encoded records of one kind for [`Writer::add_packed_games`]:
/// compressed here, so the work can run beside self-play rather than on the writer thread.
/// `None` for an empty batch.
pub fn prepare_pack(records: &[crate::learners::Encoded]) -> Result<Option<PreparedPack>> {
    let Some(kind) = records.first().map(|r| r.kind) else {
        return Ok(None);
    };
    if records.iter().any(|r| r.kind != kind) {
        return Err(StoreError::Query("a pack holds records of one kind".into()));
    }
    let members: Vec<(ObjectHash, &[u8])> = records
        .iter()
        .map(|r| (r.hash, r.bytes.as_slice()))
        .collect();
    packs::prepare(kind, &members)
        .map(Some)
        .map_err(|e| e.into_store_error(Path::new("")))
}

/// An encoded object with the form the store will keep it in (compressed when that saves;
/// docs/store.md "Packs and codecs"), chosen by [`prepare`] off the writer thread.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub kind: &'static str,
    pub hash: ObjectHash,
    /// The record's encoded length.
    pub size: usize,
    codec: i64,
    stored: Vec<u8>,
}

/// Chooses how `e` is stored (see [`Prepared`]).
pub fn prepare(e: crate::learners::Encoded) -> Prepared {
    let size = e.bytes.len();
    let (codec, stored) = match packs::compress(&e.bytes) {
        Some(c) => c,
        None => (packs::PLAIN, e.bytes),
    };
    Prepared {
        kind: e.kind,
        hash: e.hash,
        size,
        codec,
        stored,
    }
}

/// [`prepare`], also trying `e` compressed against `refs` (objects already stored, with their
/// record bytes): codec 4, kept when it is the smallest form. A learner's kept checkpoint
/// against the previous kept one stores mostly the rows that changed (docs/store.md,
/// "Checkpoints against the previous one").
pub fn prepare_against(e: crate::learners::Encoded, refs: &[(ObjectHash, &[u8])]) -> Prepared {
    let refs: Vec<&(ObjectHash, &[u8])> = refs.iter().filter(|(h, _)| *h != e.hash).collect();
    let against = (!refs.is_empty())
        .then(|| {
            let hashes: Vec<ObjectHash> = refs.iter().map(|(h, _)| *h).collect();
            let mut prefix = Vec::with_capacity(refs.iter().map(|(_, b)| b.len()).sum());
            for (_, b) in &refs {
                prefix.extend_from_slice(b);
            }
            packs::compress_against(&e.bytes, &hashes, &prefix)
        })
        .flatten();
    let mut p = prepare(e);
    if let Some(a) = against
        && a.len() < p.stored.len()
    {
        p.codec = packs::AGAINST;
        p.stored = a;
    }
    p
}

/// The packs one writer stored for an iteration's games, in game order (what
/// [`Writer::add_packed_games`] noted): lets [`Writer::put_encoded_over_games`] elide the
/// iteration's record without reading its `run_games` rows back. It knows only whole
/// iterations it saw from game 0; anything else is answered from the store.
#[derive(Debug, Default)]
pub struct PackLedger {
    run_id: i64,
    iteration: u32,
    /// The next game expected; `None` once a batch did not follow on.
    next_game: Option<u32>,
    packs: Vec<(ObjectHash, usize, String)>,
}

impl PackLedger {
    pub fn new() -> PackLedger {
        PackLedger::default()
    }

    fn note(&mut self, run_id: i64, iteration: u32, rows: &[RunGameRow], pack: &PreparedPack) {
        if (run_id, iteration) != (self.run_id, self.iteration) {
            *self = PackLedger {
                run_id,
                iteration,
                next_game: Some(0),
                packs: Vec::new(),
            };
        }
        // Rows in slot order, consecutive games following the last batch.
        self.next_game = match self.next_game {
            Some(n)
                if rows.first().is_some_and(|r| r.game == n)
                    && rows.windows(2).all(|w| w[1].game == w[0].game + 1)
                    && rows.len() == pack.members() =>
            {
                self.packs
                    .push((pack.hash(), pack.members(), pack.kind().to_string()));
                Some(n + rows.len() as u32)
            }
            _ => None,
        };
    }

    fn packs_of(
        &self,
        run_id: i64,
        iteration: u32,
        count: usize,
    ) -> Option<Vec<(ObjectHash, usize, String)>> {
        ((run_id, iteration) == (self.run_id, self.iteration)
            && self.next_game == Some(count as u32)
            && count > 0)
            .then(|| self.packs.clone())
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

    /// Declares metrics (name, description) in order; see `schema/0005_metrics_long.sql`.
    pub fn declare_metrics(&self, defs: &[(&str, &str)]) -> Result<()> {
        runs::declare_metrics(self.tx, defs).map_err(|e| sqlite(self.path, e))
    }

    /// Stores an already encoded object (if not already there; large ones compressed when
    /// that saves, docs/store.md "Packs and codecs"); returns its address.
    pub fn put_encoded(&self, e: &crate::learners::Encoded) -> Result<ObjectHash> {
        objects::put_compressed(self.tx, e.kind, &e.bytes, &e.hash)
            .map_err(|e| e.into_store_error(self.path))?;
        Ok(e.hash)
    }

    /// Stores a batch of a run's self-play games as one pack (prepared with
    /// [`prepare_pack`]) and indexes them (`rows[k]` is the pack's member k).
    pub fn add_packed_games(
        &self,
        run_id: i64,
        iteration: u32,
        rows: &[RunGameRow],
        pack: Option<&PreparedPack>,
        ledger: &mut PackLedger,
    ) -> Result<()> {
        let Some(pack) = pack else {
            return if rows.is_empty() {
                Ok(())
            } else {
                Err(StoreError::Query("game rows without their pack".into()))
            };
        };
        let id = packs::insert(self.tx, pack).map_err(|e| e.into_store_error(self.path))?;
        runs::add_packed_games(self.tx, run_id, iteration, rows, id)
            .map_err(|e| sqlite(self.path, e))?;
        ledger.note(run_id, iteration, rows, pack);
        Ok(())
    }

    /// Stores an object prepared with [`prepare`] (if not already there); returns its
    /// address.
    pub fn put_prepared(&self, p: &Prepared) -> Result<ObjectHash> {
        objects::put_coded(self.tx, p.kind, p.size, p.codec, &p.stored, &p.hash)
            .map_err(|e| e.into_store_error(self.path))?;
        Ok(p.hash)
    }

    /// Stores an object whose bytes list, contiguously, the addresses of the games of
    /// `run_id`'s iteration `iteration` (`games`, in order: an iteration record): when every
    /// game is packed, those addresses are kept once, in the packs (codec 2), else the bytes
    /// are stored as they are. Returns its address.
    pub fn put_encoded_over_games(
        &self,
        e: &crate::learners::Encoded,
        run_id: i64,
        iteration: u32,
        games: &[ObjectHash],
        ledger: &PackLedger,
    ) -> Result<ObjectHash> {
        // The packs this writer stored for the iteration, else (games of an earlier session,
        // reused on resume) the packs its `run_games` rows name. Either way `elide` checks
        // each pack's address against the record's list of games.
        let packs = match ledger.packs_of(run_id, iteration, games.len()) {
            Some(p) => Some(p),
            None => runs::packs_of(self.tx, run_id, iteration, games.len())
                .map_err(|e| sqlite(self.path, e))?,
        };
        let kind = packs.as_ref().and_then(|p| p.first()).map(|p| p.2.clone());
        let elided = match (&packs, kind) {
            (Some(p), Some(kind)) => {
                let p: Vec<(ObjectHash, usize)> = p.iter().map(|(h, n, _)| (*h, *n)).collect();
                packs::elide(&e.bytes, &kind, games, &p)
            }
            _ => None,
        };
        let done = match elided {
            Some(el) => match postcard::to_stdvec(&el) {
                Ok(stored) => objects::put_coded(
                    self.tx,
                    e.kind,
                    e.bytes.len(),
                    packs::ELIDED,
                    &stored,
                    &e.hash,
                ),
                Err(source) => {
                    return Err(StoreError::Encode {
                        kind: e.kind,
                        source,
                    });
                }
            },
            None => objects::put_raw(self.tx, e.kind, &e.bytes, &e.hash),
        };
        done.map_err(|e| e.into_store_error(self.path))?;
        Ok(e.hash)
    }

    /// Stores a record (if not already there); returns its address and encoded size.
    pub fn put_sized<R: Record>(&self, record: &R) -> Result<(ObjectHash, usize)> {
        objects::put_sized(self.tx, record).map_err(|e| e.into_store_error(self.path))
    }

    /// Creates a run's row (its run and settings records must be stored); returns its id.
    /// Run names are unique in a store (docs/store.md): a name already taken is
    /// [`StoreError::NameTaken`].
    pub fn create_run(&self, run: &NewRun) -> Result<i64> {
        let taken = runs::named(self.tx, &run.name).map_err(|e| sqlite(self.path, e))?;
        if let Some(old) = taken.first() {
            return Err(StoreError::NameTaken {
                name: run.name.clone(),
                id: old.id,
                status: old.status.as_str(),
                hash: old.hash.short(),
            });
        }
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

    /// Indexes a sweep (its `sweep/v1` record must be stored); a known sweep is left as is.
    pub fn add_sweep(&self, row: &SweepRow) -> Result<()> {
        sweeps::add(self.tx, row).map_err(|e| sqlite(self.path, e))
    }

    /// Links a run to its sweep's grid point and seed.
    pub fn add_sweep_member(&self, sweep: &ObjectHash, member: &SweepMember) -> Result<()> {
        sweeps::add_member(self.tx, sweep, member).map_err(|e| sqlite(self.path, e))
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
    let path = path.display().to_string();
    // SQLite's "attempt to write a readonly database" (and its variants): the file or its
    // directory cannot be written by this process.
    if source.sqlite_error_code() == Some(rusqlite::ErrorCode::ReadOnly) {
        return StoreError::CannotWrite { path, source };
    }
    StoreError::Sqlite { path, source }
}
