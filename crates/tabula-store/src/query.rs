//! Read-only SQL for people and scripts (`tabula sql`): docs/store.md, "The SQL console".
//!
//! Rows are streamed to a [`RowSink`] as SQLite produces them, so a result of any size costs
//! the memory of one row. Three guards keep a query from doing anything but read:
//! - the connection is read-only (and `query_only`), so no statement can change the file;
//! - an authorizer, installed when a store is opened read-only, refuses at prepare time every
//!   action that is not a read: ATTACH/DETACH (which create files beside the store), writes,
//!   schema changes, transactions, and every PRAGMA not in [`READ_PRAGMAS`] or given a value;
//! - a statement SQLite itself does not call read-only (VACUUM, a checkpoint) is refused
//!   before its first step, so it never touches the disk (VACUUM INTO would create its file).
//!
//! Two limits stop a runaway query with a clear error: a row count and a time budget. The
//! time is SQLite's working time only (a progress handler checks it every few thousand VM
//! instructions); time spent in the sink, e.g. blocked on a pager reading the output, is not
//! counted.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::ValueRef;

use super::StoreError;

/// One cell of a query result.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    /// Blobs (object hashes among them) as lowercase hex.
    Blob(String),
}

impl Value {
    /// The cell as text, as a table or CSV shows it.
    pub fn to_text(&self) -> String {
        match self {
            Value::Null => String::new(),
            Value::Integer(i) => i.to_string(),
            Value::Real(r) => r.to_string(),
            Value::Text(t) => t.clone(),
            Value::Blob(h) => h.clone(),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Integer(i) => (*i).into(),
            Value::Real(r) => serde_json::Number::from_f64(*r)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Text(t) | Value::Blob(t) => t.clone().into(),
        }
    }

    /// The owned form of a streamed cell (blobs as lowercase hex).
    pub(crate) fn from_cell(c: Cell<'_>) -> Value {
        match c {
            Cell::Null => Value::Null,
            Cell::Integer(i) => Value::Integer(i),
            Cell::Real(r) => Value::Real(r),
            Cell::Text(t) => Value::Text(t.to_string()),
            Cell::Blob(b) => Value::Blob(hex(b)),
        }
    }
}

/// Lowercase hex of a blob, as every command prints hashes.
fn hex(b: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(2 * b.len());
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// Column names and rows of a query.
#[derive(Clone, Debug, Default)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

/// One cell of the row being streamed, borrowed from SQLite's buffers (text that is not valid
/// UTF-8 arrives with U+FFFD in place of the bad bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell<'a> {
    Null,
    Integer(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

/// Where a streamed result goes: the column names once, then each row's cells in order, each
/// row closed by `end_row`.
pub trait RowSink {
    fn columns(&mut self, names: &[String]) -> std::io::Result<()>;
    fn cell(&mut self, index: usize, cell: Cell<'_>) -> std::io::Result<()>;
    fn end_row(&mut self) -> std::io::Result<()>;
}

/// The limits of one console query. `None` is no limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueryLimits {
    /// A query that would return more rows than this is stopped with
    /// [`StoreError::TooManyRows`] after handing this many rows to the sink.
    pub max_rows: Option<u64>,
    /// A query that has worked longer than this (SQLite's time, not the sink's) is stopped
    /// with [`StoreError::QueryTimedOut`].
    pub timeout: Option<Duration>,
    /// The most memory SQLite may hold while the query runs (its heap, in bytes: one row of
    /// huge values, a sort); past it the query stops with an error saying so.
    pub max_memory: Option<u64>,
}

impl QueryLimits {
    /// `tabula sql`'s default row limit: far above any table a sweep fills (a 20-run sweep of
    /// 100 iterations x 1,000 games has 2 M `run_games` rows), low enough that an endless
    /// query stops within seconds.
    pub const DEFAULT_MAX_ROWS: u64 = 10_000_000;
    /// `tabula sql`'s default working time, in seconds: a full scan of a multi-gigabyte store
    /// takes well under a minute on a laptop.
    pub const DEFAULT_TIMEOUT_SECONDS: f64 = 120.0;
    /// `tabula sql`'s default memory for SQLite: 1 GiB, far above what a query of a store
    /// needs (its largest objects are tens of MB), below what a laptop can spare.
    pub const DEFAULT_MAX_MEMORY: u64 = 1 << 30;
}

impl Default for QueryLimits {
    fn default() -> QueryLimits {
        QueryLimits {
            max_rows: Some(QueryLimits::DEFAULT_MAX_ROWS),
            timeout: Some(Duration::from_secs_f64(
                QueryLimits::DEFAULT_TIMEOUT_SECONDS,
            )),
            max_memory: Some(QueryLimits::DEFAULT_MAX_MEMORY),
        }
    }
}

/// Pragmas the console may run: they report and change nothing. Those in
/// [`ARGUMENT_PRAGMAS`] may name a table or index; every other one must have no value
/// (`PRAGMA user_version` reads, `PRAGMA user_version = 5` would write).
pub const READ_PRAGMAS: &[&str] = &[
    "application_id",
    "auto_vacuum",
    "collation_list",
    "compile_options",
    "data_version",
    "database_list",
    "encoding",
    "foreign_key_check",
    "foreign_key_list",
    "foreign_keys",
    "freelist_count",
    "function_list",
    "index_info",
    "index_list",
    "index_xinfo",
    "integrity_check",
    "journal_mode",
    "module_list",
    "page_count",
    "page_size",
    "pragma_list",
    "query_only",
    "quick_check",
    "schema_version",
    "table_info",
    "table_list",
    "table_xinfo",
    "user_version",
];

/// The read pragmas that take an argument naming what to report on (a table, an index, or
/// for the checks a row limit), never a new setting.
const ARGUMENT_PRAGMAS: &[&str] = &[
    "foreign_key_check",
    "foreign_key_list",
    "index_info",
    "index_list",
    "index_xinfo",
    "integrity_check",
    "quick_check",
    "table_info",
    "table_list",
    "table_xinfo",
];

/// State shared by the authorizer and progress handler of a read-only connection and the
/// query running on it.
#[derive(Default)]
pub(super) struct Guard {
    /// What the authorizer last refused, for the error message.
    denied: Mutex<Option<String>>,
    clock: Mutex<Clock>,
    /// Set only while the store itself begins or ends a read transaction
    /// ([`super::Store::in_snapshot`]): never while a console query is prepared.
    own_transaction: std::sync::atomic::AtomicBool,
}

impl Guard {
    /// Lets the store's own `BEGIN`/`ROLLBACK` through the authorizer while `on`.
    pub(super) fn allow_own_transaction(&self, on: bool) {
        self.own_transaction
            .store(on, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The working-time budget of the running query.
#[derive(Default)]
struct Clock {
    limit: Option<Duration>,
    /// Time SQLite has worked on the query so far, not counting the current step.
    spent: Duration,
    /// When the current step began (None between steps and outside console queries).
    since: Option<Instant>,
    /// The handler stopped the query because the budget ran out.
    tripped: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Installs the authorizer and progress handler of a read-only connection.
pub(super) fn install(conn: &mut Connection) -> rusqlite::Result<Arc<Guard>> {
    let guard = Arc::new(Guard::default());
    let g = Arc::clone(&guard);
    conn.authorizer(Some(move |ctx: AuthContext<'_>| match refusal(&ctx) {
        None => Authorization::Allow,
        Some(_)
            if matches!(ctx.action, AuthAction::Transaction { .. })
                && g.own_transaction.load(std::sync::atomic::Ordering::SeqCst) =>
        {
            Authorization::Allow
        }
        Some(what) => {
            // SQLite stops at the first refusal, so the first names the statement.
            lock(&g.denied).get_or_insert(what);
            Authorization::Deny
        }
    }))?;
    let g = Arc::clone(&guard);
    // About every 10,000 VM instructions: a fraction of a millisecond, and the clock read is
    // cheap beside it.
    conn.progress_handler(
        10_000,
        Some(move || {
            let mut c = lock(&g.clock);
            match (c.limit, c.since) {
                (Some(limit), Some(since)) if c.spent + since.elapsed() > limit => {
                    c.tripped = true;
                    true
                }
                _ => false,
            }
        }),
    )?;
    Ok(guard)
}

/// SQLite's schema tables, which CREATE, DROP and ALTER change.
fn is_schema_table(name: &str) -> bool {
    matches!(
        name,
        "sqlite_master" | "sqlite_temp_master" | "sqlite_schema" | "sqlite_temp_schema"
    )
}

/// Why the console refuses an action, or None when it is a read.
fn refusal(ctx: &AuthContext<'_>) -> Option<String> {
    match ctx.action {
        AuthAction::Select
        | AuthAction::Read { .. }
        | AuthAction::Function { .. }
        | AuthAction::Recursive => None,
        AuthAction::Pragma {
            pragma_name,
            pragma_value,
        } => {
            let name = pragma_name.to_ascii_lowercase();
            let known = READ_PRAGMAS.contains(&name.as_str());
            match pragma_value {
                _ if !known => Some(format!("PRAGMA {name}")),
                Some(v) if !ARGUMENT_PRAGMAS.contains(&name.as_str()) => {
                    Some(format!("PRAGMA {name} = {v}"))
                }
                _ => None,
            }
        }
        AuthAction::Attach { .. } => Some("ATTACH".into()),
        AuthAction::Detach { .. } => Some("DETACH".into()),
        // CREATE, DROP and ALTER are first asked about as a change to the schema table.
        AuthAction::Insert { table_name } if is_schema_table(table_name) => Some("CREATE".into()),
        AuthAction::Delete { table_name } if is_schema_table(table_name) => Some("DROP".into()),
        AuthAction::Update { table_name, .. } if is_schema_table(table_name) => {
            Some("ALTER".into())
        }
        AuthAction::Insert { table_name } => Some(format!("INSERT into {table_name}")),
        AuthAction::Update { table_name, .. } => Some(format!("UPDATE of {table_name}")),
        AuthAction::Delete { table_name } => Some(format!("DELETE from {table_name}")),
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
            Some("a transaction statement".into())
        }
        AuthAction::AlterTable { .. } => Some("ALTER TABLE".into()),
        AuthAction::Reindex { .. } => Some("REINDEX".into()),
        AuthAction::Analyze { .. } => Some("ANALYZE".into()),
        AuthAction::CreateTable { .. }
        | AuthAction::CreateTempTable { .. }
        | AuthAction::CreateIndex { .. }
        | AuthAction::CreateTempIndex { .. }
        | AuthAction::CreateView { .. }
        | AuthAction::CreateTempView { .. }
        | AuthAction::CreateTrigger { .. }
        | AuthAction::CreateTempTrigger { .. }
        | AuthAction::CreateVtable { .. } => Some("CREATE".into()),
        AuthAction::DropTable { .. }
        | AuthAction::DropTempTable { .. }
        | AuthAction::DropIndex { .. }
        | AuthAction::DropTempIndex { .. }
        | AuthAction::DropView { .. }
        | AuthAction::DropTempView { .. }
        | AuthAction::DropTrigger { .. }
        | AuthAction::DropTempTrigger { .. }
        | AuthAction::DropVtable { .. } => Some("DROP".into()),
        // Actions of a newer SQLite than this build knows: refused until someone looks.
        _ => Some("this statement".into()),
    }
}

/// The pieces of SQL that say nothing: whitespace, `--` and `/* */` comments, semicolons.
fn is_empty_sql(sql: &str) -> bool {
    let mut rest = sql;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.split_once('\n').map_or("", |x| x.1);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |x| x.1);
        } else {
            return rest.is_empty();
        }
    }
}

/// Runs one statement and streams its rows to `sink`; returns how many rows it handed over.
pub(super) fn stream(
    conn: &Connection,
    guard: &Guard,
    sql: &str,
    limits: &QueryLimits,
    sink: &mut dyn RowSink,
) -> Result<u64, StoreError> {
    let Some(max) = limits.max_memory else {
        return stream_rows(conn, guard, sql, limits, sink);
    };
    // SQLite's hard heap limit is the process's; set for this query, then put back.
    let max = i64::try_from(max).unwrap_or(i64::MAX).max(1);
    // SAFETY: sets (and returns) SQLite's process-wide heap limit; no pointer is involved.
    let before = unsafe { rusqlite::ffi::sqlite3_hard_heap_limit64(max) };
    let out = stream_rows(conn, guard, sql, limits, sink);
    // SAFETY: as above, restoring the limit there was.
    unsafe { rusqlite::ffi::sqlite3_hard_heap_limit64(before) };
    match out {
        Err(StoreError::Query(m)) if m.contains("out of memory") => {
            Err(StoreError::Query(format!(
                "the query needs more than {} MiB of memory, the console's limit (ask for \
                 fewer or smaller values, e.g. length(bytes) instead of bytes)",
                max >> 20
            )))
        }
        other => other,
    }
}

fn stream_rows(
    conn: &Connection,
    guard: &Guard,
    sql: &str,
    limits: &QueryLimits,
    sink: &mut dyn RowSink,
) -> Result<u64, StoreError> {
    if is_empty_sql(sql) {
        return Err(StoreError::EmptyQuery);
    }
    *lock(&guard.denied) = None;
    let failed = |e: rusqlite::Error| query_error(guard, e);
    let mut stmt = conn.prepare(sql).map_err(failed)?;
    if !stmt.readonly() {
        let verb = sql.split_whitespace().next().unwrap_or(sql).to_uppercase();
        return Err(StoreError::QueryDenied(verb));
    }
    let columns: Vec<String> = stmt.column_names().map(|c| c.to_string()).collect();
    let n = columns.len();
    sink.columns(&columns).map_err(StoreError::Output)?;
    *lock(&guard.clock) = Clock {
        limit: limits.timeout,
        ..Clock::default()
    };
    // Whatever way this returns, the clock stops: a later query on this connection starts
    // from a fresh budget, and internal reads are never timed.
    struct Stop<'a>(&'a Guard);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            *lock(&self.0.clock) = Clock::default();
        }
    }
    let _stop = Stop(guard);
    let step_started = |start: bool| {
        let mut c = lock(&guard.clock);
        if start {
            c.since = Some(Instant::now());
        } else if let Some(s) = c.since.take() {
            c.spent += s.elapsed();
        }
    };
    let mut rows = stmt.query([]).map_err(failed)?;
    let mut count = 0u64;
    loop {
        step_started(true);
        let next = rows.next();
        step_started(false);
        let Some(row) = next.map_err(|e| query_error(guard, e))? else {
            break;
        };
        if limits.max_rows.is_some_and(|m| count >= m) {
            return Err(StoreError::TooManyRows(count));
        }
        send_row(guard, row, n, sink)?;
        count += 1;
    }
    Ok(count)
}

/// Hands the `n` cells of `row` to `sink`, then ends the row.
fn send_row(
    guard: &Guard,
    row: &rusqlite::Row<'_>,
    n: usize,
    sink: &mut dyn RowSink,
) -> Result<(), StoreError> {
    for i in 0..n {
        let v = row.get_ref(i).map_err(|e| query_error(guard, e))?;
        let r = match v {
            ValueRef::Null => sink.cell(i, Cell::Null),
            ValueRef::Integer(x) => sink.cell(i, Cell::Integer(x)),
            ValueRef::Real(x) => sink.cell(i, Cell::Real(x)),
            ValueRef::Text(t) => sink.cell(i, Cell::Text(&String::from_utf8_lossy(t))),
            ValueRef::Blob(b) => sink.cell(i, Cell::Blob(b)),
        };
        r.map_err(StoreError::Output)?;
    }
    sink.end_row().map_err(StoreError::Output)
}

/// A failed prepare or step, named by what caused it.
fn query_error(guard: &Guard, e: rusqlite::Error) -> StoreError {
    if let Some(what) = lock(&guard.denied).take() {
        return StoreError::QueryDenied(what);
    }
    let clock = lock(&guard.clock);
    if clock.tripped
        && let Some(limit) = clock.limit
    {
        return StoreError::QueryTimedOut(limit);
    }
    match e {
        rusqlite::Error::MultipleStatement => {
            StoreError::Query("give one statement at a time (the text holds more than one)".into())
        }
        e => StoreError::Query(e.to_string()),
    }
}

/// Runs one of the store's own queries (fixed SQL, small results) and keeps its rows.
pub(super) fn run(conn: &Connection, sql: &str) -> Result<QueryResult, StoreError> {
    let q = |e: rusqlite::Error| StoreError::Query(e.to_string());
    let mut stmt = conn.prepare(sql).map_err(q)?;
    let columns: Vec<String> = stmt.column_names().map(|c| c.to_string()).collect();
    let n = columns.len();
    let mut rows = stmt.query([]).map_err(q)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(q)? {
        let mut cells = Vec::with_capacity(n);
        for i in 0..n {
            cells.push(match row.get_ref(i).map_err(q)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(v) => Value::Integer(v),
                ValueRef::Real(v) => Value::Real(v),
                ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Value::Blob(hex(b)),
            });
        }
        out.push(cells);
    }
    Ok(QueryResult { columns, rows: out })
}

/// A sink that keeps every row (for library callers and tests; the CLI streams).
#[derive(Default)]
pub(super) struct Collect {
    pub(super) result: QueryResult,
    row: Vec<Value>,
}

impl RowSink for Collect {
    fn columns(&mut self, names: &[String]) -> std::io::Result<()> {
        self.result.columns = names.to_vec();
        Ok(())
    }
    fn cell(&mut self, _index: usize, cell: Cell<'_>) -> std::io::Result<()> {
        self.row.push(Value::from_cell(cell));
        Ok(())
    }
    fn end_row(&mut self) -> std::io::Result<()> {
        self.result.rows.push(std::mem::take(&mut self.row));
        Ok(())
    }
}

impl super::Store {
    /// Runs one SQL statement on a read-only connection and returns its rows (at most
    /// [`QueryLimits::default`]'s). For results of any size use [`Store::query_stream`].
    pub fn query(&self, sql: &str) -> Result<QueryResult, StoreError> {
        let mut all = Collect::default();
        // No heap limit: it is the process's, and other threads may be using SQLite.
        let limits = QueryLimits {
            max_memory: None,
            ..QueryLimits::default()
        };
        self.query_stream(sql, &limits, &mut all)?;
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
    ) -> Result<u64, StoreError> {
        let Some(guard) = &self.guard else {
            return Err(StoreError::Query(
                "queries run only on a store opened with Store::open_read_only".into(),
            ));
        };
        let out = stream(&self.conn, guard, sql, limits, sink);
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
}

#[cfg(test)]
mod tests {
    use super::is_empty_sql;

    #[test]
    fn empty_sql_is_whitespace_comments_and_semicolons() {
        for s in [
            "",
            "  \n",
            ";",
            " ; ;",
            "-- x",
            "-- x\n  /* y */ ;",
            "/* open",
        ] {
            assert!(is_empty_sql(s), "{s:?}");
        }
        for s in ["SELECT 1", "-- x\nSELECT 1", "/* y */ VALUES (1)", "x"] {
            assert!(!is_empty_sql(s), "{s:?}");
        }
    }
}
