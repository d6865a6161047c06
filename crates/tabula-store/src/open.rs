//! Opening a store: for writing (migrating it), read-only (writing nothing), and closing it
//! leaving its log; the connection's settings (module docs of `store`; docs/store.md
//! "Opening a store").

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::paths::{FileStamp, check_path, file_uri, side_file};
use super::{Result, SchemaProblem, Store, StoreError, is_busy, packs, query, schema, sqlite};

/// How long a writer waits for another (SQLite's busy timeout).
const BUSY_WAIT: Duration = Duration::from_secs(30);

/// The page cache of a store connection, in KiB.
pub(super) const PAGE_CACHE_KIB: i64 = 65536;

/// The largest write-ahead log [`Store::close_leaving_log`] leaves beside a store: about
/// SQLite's automatic checkpoint size (1000 frames of a 4 KiB page).
const LEFT_LOG_MAX: u64 = 4 << 20;

/// Where the store lives when neither `--db` nor `TABULA_DB` says otherwise.
const DEFAULT_PATH: &str = "tabula.db";

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
    ///
    /// A new store is made whole or not at all ([`create`]): a failure while making it (a full
    /// disk, an I/O error), or a kill, leaves nothing at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        if check_path(path, true)?.is_none() {
            create(path)?;
        }
        Store::open_existing_or_new(path)
    }

    /// [`Store::open`] after its path check: opens (SQLite creating a missing file), configures
    /// and migrates.
    fn open_existing_or_new(path: &Path) -> Result<Store> {
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
        // A write step of its own (failpoint.rs): the file is open, its schema not yet checked.
        super::failpoint::hit("open").map_err(|e| store.err(e))?;
        schema::migrate(&mut store.conn)
            .map_err(|e| store.schema_err(e))
            .map_err(cannot_write)?;
        Ok(store)
    }

    /// A private store in memory, with this build's schema: scratch space for a process
    /// that needs objects in store form without a file (a self-play worker holds the model
    /// it was sent here: runs/exchange). Nothing of it outlives the value.
    pub fn in_memory() -> Result<Store> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| sqlite(&path, e))?;
        let mut store = Store {
            conn,
            path,
            read_only: false,
            guard: None,
            stamp: None,
            packs: packs::Cache::default(),
        };
        store
            .conn
            .pragma_update(None, "foreign_keys", true)
            .map_err(|e| store.err(e))?;
        schema::migrate(&mut store.conn).map_err(|e| store.schema_err(e))?;
        Ok(store)
    }

    /// Brings the store at `path` to this build's schema explicitly (`tabula migrate`; a
    /// writing command does it when it opens a store): returns the schema versions before and
    /// after. The migrations move data losslessly, all in one transaction.
    pub fn migrate(path: &Path) -> Result<(i64, i64)> {
        if check_path(path, false)? == Some(0) {
            return Err(StoreError::NotAStore {
                path: path.display().to_string(),
                reason: "the file is empty".into(),
            });
        }
        // `migrate` brings a tabula store up to date; it does not make one. An empty SQLite
        // file (version 0, no tables) would otherwise get the whole schema and the report
        // "nothing to do".
        if schema::is_blank(path) {
            return Err(StoreError::NotAStore {
                path: path.display().to_string(),
                reason: "an empty SQLite database (no tabula schema yet); `migrate` updates a \
                         tabula store, a writing command (`run`, `solve`) creates one"
                    .into(),
            });
        }
        let before = schema::older(path).unwrap_or(schema::VERSION);
        drop(Store::open(path)?);
        Ok((before, schema::VERSION))
    }

    /// Opens an existing store read-only, writing nothing (see the module docs): no
    /// statement on this connection can change it, and the SQL console's authorizer refuses
    /// anything but reads. A store written by an older build is refused
    /// ([`StoreError::NeedsMigration`]): `tabula migrate` brings it to this build's schema.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let len = check_path(path, false)?;
        if len == Some(0) {
            return Err(StoreError::NotAStore {
                path: path.display().to_string(),
                reason: "the file is empty".into(),
            });
        }
        // Never migrated here: a read-only command changes nothing, and a store migrated in
        // place can no longer be read by the build that wrote it.
        if let Some(found) = schema::older(path) {
            return Err(StoreError::NeedsMigration {
                path: path.display().to_string(),
                found,
                current: schema::VERSION,
            });
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
        let mut conn = read_only_connection(path, query)?;
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

    /// For a store opened read-only and kept open (a server): whether this connection still
    /// reads the store's latest commits. One opened immutable is, while no write-ahead log has
    /// appeared beside the file (a writer started) and the file is the one opened; one opened
    /// through the log is, while the log is there (a writer's last close removes it). When
    /// not, open the store again.
    pub fn still_current(&self) -> bool {
        if !self.read_only {
            return true;
        }
        let logged = side_file(&self.path, "-wal").exists();
        match self.stamp {
            Some(stamp) => !logged && FileStamp::of(&self.path).is_ok_and(|now| now == stamp),
            None => logged,
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
}

/// A read-only connection to `path` opened with the URI parameters `query` (`mode=ro` or
/// `immutable=1`), set up never to checkpoint the log and to change nothing.
fn read_only_connection(path: &Path, query: &str) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn =
        Connection::open_with_flags(file_uri(path, query), flags).map_err(|e| sqlite(path, e))?;
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
    Ok(conn)
}

/// Makes a new store at `path`, whole or not at all: its schema is written into a file beside
/// it (`.NAME.new-PID-N`), which is closed and then hard-linked to `path`. A link never replaces
/// a file, so a store another process made at `path` meanwhile is kept (and this one dropped);
/// a failure or a kill before the link leaves nothing at `path` (a kill may leave the hidden
/// file beside it). On a file system without hard links the file is renamed instead.
fn create(path: &Path) -> Result<()> {
    let name = path
        .file_name()
        .map_or_else(|| "store".into(), |n| n.to_string_lossy().into_owned());
    // Unique per process and per call: two threads may create one store at once.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.new-{}-{call}", std::process::id()));
    let remove = |p: &Path| {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
        }
    };
    remove(&tmp);
    // The error names the store the user asked for, not the file beside it.
    let named = |e: StoreError| StoreError::Create {
        path: path.display().to_string(),
        why: e
            .to_string()
            .replace(&tmp.display().to_string(), &path.display().to_string()),
    };
    let made = Store::open_existing_or_new(&tmp).map(drop).map_err(named);
    let linked = made.and_then(|()| match std::fs::hard_link(&tmp, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(_) if !path.exists() => std::fs::rename(&tmp, path).map_err(|e| StoreError::Create {
            path: path.display().to_string(),
            why: e.to_string(),
        }),
        Err(e) => Err(StoreError::Create {
            path: path.display().to_string(),
            why: e.to_string(),
        }),
    });
    remove(&tmp);
    linked
}
