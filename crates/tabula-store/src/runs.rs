//! The run tables of `schema/0003_runs.sql`: runs, iterations, run_games, evaluations.

use rusqlite::{Connection, OptionalExtension, params};

use super::query::{QueryResult, run as run_query};
use super::resolve::{Found, by_name_or_prefix};
use super::{ObjectHash, StoreError};

/// A run's state. The table stores `running`, `done` or `failed`; `interrupted` and
/// `created` are derived when a row is read (see [`derive_status`]), never stored.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Done,
    Failed,
    /// Stored as running, but its lock holder is gone (killed, SIGPIPE): `resume` continues it.
    Interrupted,
    /// Stored as running, never locked and no iteration of its own committed (a branch made
    /// with `--no-run`): `resume` runs it.
    Created,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Created => "created",
        }
    }

    fn parse(s: &str) -> RunStatus {
        match s {
            "done" => RunStatus::Done,
            "failed" => RunStatus::Failed,
            _ => RunStatus::Running,
        }
    }
}

/// What a new run's row holds.
#[derive(Clone, Debug)]
pub struct NewRun {
    /// The `run/v1` record (stored).
    pub hash: ObjectHash,
    pub name: String,
    pub variant: String,
    pub seed: u64,
    pub seed_drawn: bool,
    /// The `settings/v1` record (stored) and the same settings as JSON.
    pub settings: ObjectHash,
    pub settings_json: String,
    pub spec_toml: String,
    pub iterations_planned: u32,
    /// Branches: (parent run id, iteration).
    pub parent: Option<(i64, u32)>,
    pub threads: u32,
    /// A note and tags to create it with (not hashed).
    pub annotations: super::Annotations,
}

/// One row of `runs`, as `tabula ls` shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunRow {
    pub id: i64,
    pub name: String,
    pub variant: String,
    pub seed: String,
    #[serde(serialize_with = "hex")]
    pub hash: ObjectHash,
    pub iterations_done: u32,
    pub iterations_planned: u32,
    pub status: RunStatus,
    #[serde(serialize_with = "opt_hex")]
    pub head: Option<ObjectHash>,
    pub settings_json: String,
    pub spec_toml: String,
    pub engine_version: String,
    pub created_at: String,
    pub(crate) updated_at: String,
    /// A branch's parent: (run id, the parent's iteration it continues from).
    pub parent: Option<(i64, u32)>,
}

impl RunRow {
    /// One line naming the run among candidates: id, name, status, run hash and head.
    pub(super) fn candidate(&self) -> String {
        format!(
            "run {}  {}  {}  run record {}  head {}",
            self.id,
            self.name,
            self.status.as_str(),
            self.hash,
            self.head.map_or_else(|| "-".to_string(), |h| h.to_hex())
        )
    }
}

fn hex<S: serde::Serializer>(h: &ObjectHash, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&h.to_hex())
}

fn opt_hex<S: serde::Serializer>(h: &Option<ObjectHash>, s: S) -> Result<S::Ok, S::Error> {
    match h {
        Some(h) => s.serialize_str(&h.to_hex()),
        None => s.serialize_none(),
    }
}

/// A self-play game's row.
#[derive(Clone, Debug)]
pub struct RunGameRow {
    pub game: u32,
    pub hash: ObjectHash,
    pub plies: u32,
    pub score_p0: f64,
}

/// An iteration's row (hashes, counts, plain timings).
#[derive(Clone, Debug)]
pub struct IterationRow {
    pub run_id: i64,
    pub iteration: u32,
    pub hash: ObjectHash,
    pub snapshot: ObjectHash,
    pub evaluation: ObjectHash,
    pub snapshot_full: bool,
    /// Whether the snapshot's objects are all stored (else only its root: derived).
    pub snapshot_kept: bool,
    pub games: u32,
    pub samples: u64,
    pub rows_trained: u64,
    pub beta: f64,
    pub self_play_seconds: f64,
    pub training_seconds: f64,
    pub evaluation_seconds: f64,
    pub store_seconds: f64,
    pub snapshot_bytes: u64,
    pub games_bytes: u64,
}

/// An evaluation's rows: its record, and its metric values by name (`None`: not measured, no
/// row), each name declared before in `metric_defs`.
#[derive(Clone, Debug, Default)]
pub struct EvaluationRow {
    pub run_id: i64,
    pub iteration: u32,
    pub hash: Option<ObjectHash>,
    pub values: Vec<(&'static str, Option<f64>)>,
}

pub(super) fn blob_hash(b: Vec<u8>, col: usize) -> rusqlite::Result<ObjectHash> {
    <[u8; 32]>::try_from(b.as_slice())
        .map(ObjectHash)
        .map_err(|_| {
            rusqlite::Error::FromSqlConversionFailure(
                col,
                rusqlite::types::Type::Blob,
                "hash is not 32 bytes".into(),
            )
        })
}

pub(super) fn create(conn: &Connection, r: &NewRun) -> rusqlite::Result<i64> {
    let now = super::utc_now_rfc3339();
    conn.prepare_cached(
        "INSERT INTO runs (hash, name, variant, seed, seed_drawn, settings, settings_json,
             spec_toml, iterations_planned, iterations_done, status, head, parent_run,
             parent_iteration, engine_version, threads, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0, 'running', NULL, ?10, ?11, ?12, ?13,
             ?14, ?14)",
    )?
    .execute(params![
        &r.hash.0[..],
        r.name,
        r.variant,
        r.seed.to_string(),
        r.seed_drawn,
        &r.settings.0[..],
        r.settings_json,
        r.spec_toml,
        r.iterations_planned,
        r.parent.map(|p| p.0),
        r.parent.map(|p| p.1),
        env!("CARGO_PKG_VERSION"),
        r.threads,
        now,
    ])?;
    let id = conn.last_insert_rowid();
    let on = super::Subject::Run(id);
    if let Some(n) = &r.annotations.note {
        super::provenance::put_note(conn, &on, Some(n), &now)?;
    }
    super::provenance::put_tags(conn, &on, &r.annotations.tags, true)?;
    Ok(id)
}

pub(super) fn add_iteration(conn: &Connection, r: &IterationRow) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO iterations (run_id, iteration, hash, snapshot, evaluation, snapshot_full,
             games, samples, rows_trained, beta, self_play_seconds, training_seconds,
             evaluation_seconds, store_seconds, snapshot_bytes, games_bytes, created_at,
             snapshot_kept)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
             ?18)",
    )?
    .execute(params![
        r.run_id,
        r.iteration,
        &r.hash.0[..],
        &r.snapshot.0[..],
        &r.evaluation.0[..],
        r.snapshot_full,
        r.games,
        r.samples as i64,
        r.rows_trained as i64,
        r.beta,
        r.self_play_seconds,
        r.training_seconds,
        r.evaluation_seconds,
        r.store_seconds,
        r.snapshot_bytes as i64,
        r.games_bytes as i64,
        super::utc_now_rfc3339(),
        r.snapshot_kept,
    ])?;
    Ok(())
}

pub(super) fn add_evaluation(conn: &Connection, r: &EvaluationRow) -> rusqlite::Result<()> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO evaluations (run_id, iteration, hash) VALUES (?1, ?2, ?3)
             ON CONFLICT(run_id, iteration) DO NOTHING",
        )?
        .execute(params![
            r.run_id,
            r.iteration,
            r.hash.as_ref().map(|h| h.0.to_vec())
        ])?;
    if inserted == 0 {
        return Ok(());
    }
    let mut stmt = conn.prepare_cached(
        "INSERT INTO metrics (run_id, iteration, name, value) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (name, value) in &r.values {
        if let Some(v) = value {
            stmt.execute(params![r.run_id, r.iteration, name, v])?;
        }
    }
    Ok(())
}

/// Declares metrics (name, description), in order: new names are appended to
/// `metric_defs` and `metrics_wide` is re-created with a column for each; known ones get
/// their description.
pub(super) fn declare_metrics(conn: &Connection, defs: &[(&str, &str)]) -> rusqlite::Result<()> {
    let mut added = false;
    for (name, description) in defs {
        let known: Option<String> = conn
            .prepare_cached("SELECT description FROM metric_defs WHERE name = ?1")?
            .query_row([name], |r| r.get(0))
            .optional()?;
        match known {
            Some(d) if d == *description => {}
            Some(_) => {
                conn.prepare_cached("UPDATE metric_defs SET description = ?2 WHERE name = ?1")?
                    .execute(params![name, description])?;
            }
            None => {
                conn.prepare_cached(
                    "INSERT INTO metric_defs (name, description, position)
                     SELECT ?1, ?2, coalesce(max(position), 0) + 1 FROM metric_defs",
                )?
                .execute(params![name, description])?;
                added = true;
            }
        }
    }
    if added {
        let names: Vec<String> = conn
            .prepare("SELECT name FROM metric_defs ORDER BY position")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        conn.execute_batch(&format!(
            "DROP VIEW IF EXISTS metrics_wide; {}",
            metrics_wide_sql(&names)
        ))?;
    }
    Ok(())
}

/// The `metrics_wide` view over the declared metrics `names` (as `schema/0005` writes it
/// for tabular AlphaZero's). Names are identifiers (checked: letters, digits, `_`).
fn metrics_wide_sql(names: &[String]) -> String {
    let columns: String = names
        .iter()
        .filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(|n| format!("           max(CASE WHEN m.name = '{n}' THEN m.value END) AS {n},\n"))
        .collect();
    format!(
        "CREATE VIEW metrics_wide AS
    SELECT e.run_id, r.name, r.variant, e.iteration,
{columns}           i.games, i.samples, i.rows_trained, i.beta,
           i.self_play_seconds, i.training_seconds, i.evaluation_seconds, i.store_seconds,
           i.snapshot_bytes, i.games_bytes
    FROM evaluations e
    JOIN runs r ON r.id = e.run_id
    LEFT JOIN metrics m ON m.run_id = e.run_id AND m.iteration = e.iteration
    LEFT JOIN iterations i ON i.run_id = e.run_id AND i.iteration = e.iteration
    GROUP BY e.run_id, e.iteration;"
    )
}

pub(super) fn set_progress(
    conn: &Connection,
    run_id: i64,
    done: u32,
    head: Option<&ObjectHash>,
    status: RunStatus,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE runs SET iterations_done = ?2, head = ?3, status = ?4, updated_at = ?5
         WHERE id = ?1",
    )?
    .execute(params![
        run_id,
        done,
        head.map(|h| h.0.to_vec()),
        status.as_str(),
        super::utc_now_rfc3339()
    ])?;
    Ok(())
}

pub(super) fn set_status(
    conn: &Connection,
    run_id: i64,
    status: RunStatus,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE runs SET status = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![run_id, status.as_str(), super::utc_now_rfc3339()])?;
    Ok(())
}

const RUN_COLUMNS: &str = "id, name, variant, seed, hash, iterations_done, iterations_planned,
    status, head, settings_json, spec_toml, engine_version, created_at, updated_at,
    lock_pid, lock_host, NOT EXISTS (SELECT 1 FROM iterations i WHERE i.run_id = runs.id),
    parent_run, parent_iteration";

/// The status a person should see: a stored `running` whose lock holder is a dead process of
/// this host, or that holds no lock, is not running. (A holder on another host cannot be
/// checked and stays `running`; `resume --take-over` takes such a lock.)
fn derive_status(
    stored: RunStatus,
    lock_pid: Option<i64>,
    lock_host: Option<&str>,
    no_own_iterations: bool,
) -> RunStatus {
    if stored != RunStatus::Running {
        return stored;
    }
    match lock_pid {
        Some(pid) => {
            if lock_host == Some(host_name().as_str()) && !alive(pid) {
                RunStatus::Interrupted
            } else {
                RunStatus::Running
            }
        }
        None if no_own_iterations => RunStatus::Created,
        None => RunStatus::Interrupted,
    }
}

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    let head: Option<Vec<u8>> = r.get(8)?;
    Ok(RunRow {
        id: r.get(0)?,
        name: r.get(1)?,
        variant: r.get(2)?,
        seed: r.get(3)?,
        hash: blob_hash(r.get(4)?, 4)?,
        iterations_done: r.get(5)?,
        iterations_planned: r.get(6)?,
        status: derive_status(
            RunStatus::parse(&r.get::<_, String>(7)?),
            r.get(14)?,
            r.get::<_, Option<String>>(15)?.as_deref(),
            r.get(16)?,
        ),
        head: head.map(|h| blob_hash(h, 8)).transpose()?,
        settings_json: r.get(9)?,
        spec_toml: r.get(10)?,
        engine_version: r.get(11)?,
        created_at: r.get(12)?,
        updated_at: r.get(13)?,
        parent: match (r.get::<_, Option<i64>>(17)?, r.get::<_, Option<u32>>(18)?) {
            (Some(p), Some(i)) => Some((p, i)),
            _ => None,
        },
    })
}

pub(super) fn list(conn: &Connection) -> rusqlite::Result<Vec<RunRow>> {
    let mut stmt = conn.prepare(&format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY id"))?;
    stmt.query_map([], run_row)?.collect()
}

/// A run by id, by name, or by a hash prefix of its run hash or head (the rule of
/// `resolve.rs`): an id first, then a name, then a prefix. Several runs of one name (stores
/// made before names were unique, or merged) or of one prefix are [`Found::Many`].
pub(super) fn find(conn: &Connection, text: &str) -> rusqlite::Result<Found<RunRow>> {
    let text = text.trim();
    if let Ok(id) = text.parse::<i64>() {
        let row = conn
            .prepare(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"))?
            .query_row([id], run_row)
            .optional()?;
        if let Some(row) = row {
            return Ok(Found::One(row));
        }
    }
    by_name_or_prefix(
        conn,
        &format!("SELECT {RUN_COLUMNS} FROM runs"),
        "hash BETWEEN ?1 AND ?2 OR head BETWEEN ?1 AND ?2",
        "id",
        text,
        run_row,
    )
}

/// The runs named `name`, oldest first (for refusing a second run of one name).
pub(super) fn named(conn: &Connection, name: &str) -> rusqlite::Result<Vec<RunRow>> {
    conn.prepare(&format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE name = ?1 ORDER BY id"
    ))?
    .query_map([name], run_row)?
    .collect()
}

/// The metrics table of a run, as `tabula show` prints it.
pub(super) fn metrics(conn: &Connection, run_id: i64) -> Result<QueryResult, StoreError> {
    // Every metric the run measured, in declaration order, then the iteration's timings.
    let names: Vec<String> = conn
        .prepare(
            "SELECT d.name FROM metric_defs d
             WHERE EXISTS (SELECT 1 FROM metrics m WHERE m.run_id = ?1 AND m.name = d.name)
             ORDER BY d.position",
        )
        .and_then(|mut st| {
            st.query_map([run_id], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .map_err(|e| StoreError::Query(e.to_string()))?;
    let columns: String = names
        .iter()
        .filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(|n| format!("CASE WHEN typeof({n}) = 'real' THEN round({n}, 5) ELSE {n} END AS {n}, "))
        .collect();
    // A branch's first iterations are its ancestors' (up to each branch point); the column
    // `from_run` names whose row it is.
    let branch = conn
        .query_row(
            "SELECT parent_run IS NOT NULL FROM runs WHERE id = ?1",
            [run_id],
            |r| r.get::<_, bool>(0),
        )
        .map_err(|e| StoreError::Query(e.to_string()))?;
    let from = if branch {
        "src.source_run AS from_run, "
    } else {
        ""
    };
    run_query(
        conn,
        &format!(
            "WITH RECURSIVE src(source_run, upto) AS (
                 SELECT {run_id}, 4294967295
                 UNION ALL
                 SELECT r.parent_run, min(src.upto, r.parent_iteration)
                 FROM src JOIN runs r ON r.id = src.source_run WHERE r.parent_run IS NOT NULL)
             SELECT iteration AS it, {from}{columns}
                    games, round(self_play_seconds, 2) AS self_play_s,
                    round(training_seconds, 3) AS train_s,
                    round(evaluation_seconds, 2) AS eval_s, round(store_seconds, 3) AS store_s
             FROM metrics_wide m JOIN src ON m.run_id = src.source_run AND m.iteration <= src.upto
             ORDER BY iteration"
        ),
    )
}

/// Who holds a run's lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockHolder {
    pub pid: i64,
    pub host: String,
    pub since: String,
}

/// Whether process `pid` of this host is alive (a zombie is not).
fn alive(pid: i64) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if p <= 0 {
        return false;
    }
    // A zombie (killed, not yet reaped) is dead: its state letter follows the `(comm)` field.
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat"))
        && let Some(rest) = stat.rsplit_once(')').map(|x| x.1)
        && matches!(rest.trim_start().chars().next(), Some('Z' | 'X' | 'x'))
    {
        return false;
    }
    // SAFETY: kill with signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(p, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// This machine's host name (for lock holders).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown-host".to_string())
}

/// Who holds a run's lock (`None`: no one).
fn holder(conn: &Connection, run_id: i64) -> rusqlite::Result<Option<LockHolder>> {
    let held: Option<(Option<i64>, Option<String>, Option<String>)> = conn
        .query_row(
            "SELECT lock_pid, lock_host, lock_since FROM runs WHERE id = ?1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    Ok(match held {
        Some((Some(pid), host, since)) => Some(LockHolder {
            pid,
            host: host.unwrap_or_default(),
            since: since.unwrap_or_default(),
        }),
        _ => None,
    })
}

/// The first run whose lock a live process holds (one on another host counts as live: it
/// cannot be checked), with its holder: what `merge` must not change under a writer.
pub(super) fn first_live_lock(conn: &Connection) -> rusqlite::Result<Option<(i64, LockHolder)>> {
    let ids: Vec<i64> = conn
        .prepare("SELECT id FROM runs WHERE lock_pid IS NOT NULL ORDER BY id")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let host = host_name();
    for id in ids {
        if let Some(h) = holder(conn, id)?
            && (h.host != host || alive(h.pid))
        {
            return Ok(Some((id, h)));
        }
    }
    Ok(None)
}

/// Takes the lock of a run for this process (inside an IMMEDIATE transaction). A lock held by
/// a live process (or by one on another host, which cannot be checked) is returned as `Err`;
/// a lock whose process on this host is dead is taken over.
pub(super) fn lock(
    conn: &Connection,
    run_id: i64,
) -> rusqlite::Result<std::result::Result<(), LockHolder>> {
    let me = i64::from(std::process::id());
    let host = host_name();
    if let Some(holder) = holder(conn, run_id)? {
        let ours = holder.pid == me && holder.host == host;
        let dead = holder.host == host && !alive(holder.pid);
        if !ours && !dead {
            return Ok(Err(holder));
        }
    }
    conn.prepare_cached(
        "UPDATE runs SET lock_pid = ?2, lock_host = ?3, lock_since = ?4, status = CASE
             WHEN status = 'failed' THEN 'running' ELSE status END WHERE id = ?1",
    )?
    .execute(params![run_id, me, host, super::utc_now_rfc3339()])?;
    Ok(Ok(()))
}

/// Clears the lock of a run held on another host (whose process cannot be checked from here;
/// the caller vouches it is gone) or by a dead process of this host, and returns the holder it
/// cleared (`None`: no lock). A live process of this host keeps its lock: `Err(holder)`.
pub(super) fn take_over(
    conn: &Connection,
    run_id: i64,
) -> rusqlite::Result<std::result::Result<Option<LockHolder>, LockHolder>> {
    let Some(holder) = holder(conn, run_id)? else {
        return Ok(Ok(None));
    };
    let pid = holder.pid;
    let mine = pid == i64::from(std::process::id()) && holder.host == host_name();
    if holder.host == host_name() && alive(pid) && !mine {
        return Ok(Err(holder));
    }
    conn.prepare_cached(
        "UPDATE runs SET lock_pid = NULL, lock_host = NULL, lock_since = NULL WHERE id = ?1",
    )?
    .execute([run_id])?;
    Ok(Ok(Some(holder)))
}

/// Releases the lock of a run if this process holds it.
pub(super) fn unlock(conn: &Connection, run_id: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE runs SET lock_pid = NULL, lock_host = NULL, lock_since = NULL
         WHERE id = ?1 AND lock_pid = ?2 AND lock_host = ?3",
    )?
    .execute(params![run_id, i64::from(std::process::id()), host_name()])?;
    Ok(())
}

/// Where the stored self-play games of one iteration of a run are, in order: (game index,
/// address when stored as an object, (pack id, slot) when packed).
#[allow(clippy::type_complexity)]
pub(super) fn games_of(
    conn: &Connection,
    run_id: i64,
    iteration: u32,
) -> rusqlite::Result<Vec<(u32, Option<ObjectHash>, Option<(i64, u32)>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT game, hash, pack, slot FROM run_games WHERE run_id = ?1 AND iteration = ?2
         ORDER BY game",
    )?;
    stmt.query_map(params![run_id, iteration], |r| {
        let hash: Option<Vec<u8>> = r.get(1)?;
        let pack: Option<i64> = r.get(2)?;
        let slot: Option<u32> = r.get(3)?;
        Ok((
            r.get(0)?,
            hash.map(|h| blob_hash(h, 1)).transpose()?,
            pack.zip(slot),
        ))
    })?
    .collect()
}

/// Indexes a batch of packed games: `rows[k]` is slot k of pack `pack`.
pub(super) fn add_packed_games(
    conn: &Connection,
    run_id: i64,
    iteration: u32,
    games: &[RunGameRow],
    pack: i64,
) -> rusqlite::Result<()> {
    // Rows go in `ROWS_PER_INSERT` at a time (one statement's start-up for many rows), the
    // rest one by one.
    const ROWS_PER_INSERT: usize = 32;
    const INSERT: &str = "INSERT INTO run_games (run_id, iteration, game, hash, pack, slot, plies, score_p0) VALUES ";
    // Built once; statements are cached by their text.
    static MANY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{INSERT}{}",
            vec!["(?, ?, ?, NULL, ?, ?, ?, ?)"; ROWS_PER_INSERT].join(", ")
        )
    });
    static ONE: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| format!("{INSERT}(?1, ?2, ?3, NULL, ?4, ?5, ?6, ?7)"));
    let mut chunks = games.chunks_exact(ROWS_PER_INSERT);
    let mut slot = 0i64;
    let mut stmt = conn.prepare_cached(&MANY)?;
    for chunk in chunks.by_ref() {
        let mut k = 1;
        for g in chunk {
            stmt.raw_bind_parameter(k, run_id)?;
            stmt.raw_bind_parameter(k + 1, iteration)?;
            stmt.raw_bind_parameter(k + 2, g.game)?;
            stmt.raw_bind_parameter(k + 3, pack)?;
            stmt.raw_bind_parameter(k + 4, slot)?;
            stmt.raw_bind_parameter(k + 5, g.plies)?;
            stmt.raw_bind_parameter(k + 6, g.score_p0)?;
            k += 7;
            slot += 1;
        }
        stmt.raw_execute()?;
    }
    let mut one = conn.prepare_cached(&ONE)?;
    for g in chunks.remainder() {
        one.execute(params![
            run_id, iteration, g.game, pack, slot, g.plies, g.score_p0
        ])?;
        slot += 1;
    }
    Ok(())
}

/// The packs holding the games of one iteration, in game order, as (address, members,
/// kind), when exactly `count` games are stored and every one is packed, each pack whole and
/// in slot order; `None` otherwise.
pub(super) fn packs_of(
    conn: &Connection,
    run_id: i64,
    iteration: u32,
    count: usize,
) -> rusqlite::Result<Option<Vec<(ObjectHash, usize, String)>>> {
    // One row per pack (NULL: games stored as objects), in game order, aggregated by SQLite.
    let mut stmt = conn.prepare_cached(
        "SELECT g.pack, count(*), min(g.slot), max(g.slot), min(g.game), max(g.game),
                min(g.game - g.slot), max(g.game - g.slot), p.hash, p.members, p.kind
         FROM run_games g LEFT JOIN packs p ON p.id = g.pack
         WHERE g.run_id = ?1 AND g.iteration = ?2
         GROUP BY g.pack ORDER BY min(g.game)",
    )?;
    let mut rows = stmt.query(params![run_id, iteration])?;
    let mut out = Vec::new();
    let mut next_game = 0i64;
    while let Some(r) = rows.next()? {
        let pack: Option<i64> = r.get(0)?;
        let n: i64 = r.get(1)?;
        let (slot_lo, slot_hi, game_lo, game_hi): (i64, i64, i64, i64) =
            (r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?);
        let (shift_lo, shift_hi): (i64, i64) = (r.get(6)?, r.get(7)?);
        let members: Option<i64> = r.get(9)?;
        // Whole packs, each holding consecutive games in slot order, one after another.
        if pack.is_none()
            || slot_lo != 0
            || slot_hi != n - 1
            || game_lo != next_game
            || game_hi != game_lo + n - 1
            || shift_lo != shift_hi
            || members != Some(n)
        {
            return Ok(None);
        }
        next_game = game_hi + 1;
        let hash: Vec<u8> = r.get(8)?;
        out.push((blob_hash(hash, 8)?, n as usize, r.get(10)?));
    }
    if next_game as usize != count {
        return Ok(None);
    }
    Ok(Some(out))
}

/// Whether a run has an evaluation row for an iteration.
pub(super) fn has_evaluation(
    conn: &Connection,
    run_id: i64,
    iteration: u32,
) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM evaluations WHERE run_id = ?1 AND iteration = ?2")?
        .exists(params![run_id, iteration])
}

/// The `evaluations` rows of a run: (iteration, record hash), ascending.
pub(super) fn evaluation_hashes(
    conn: &Connection,
    run_id: i64,
) -> rusqlite::Result<Vec<(u32, ObjectHash)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT iteration, hash FROM evaluations WHERE run_id = ?1 ORDER BY iteration",
    )?;
    stmt.query_map([run_id], |r| Ok((r.get(0)?, blob_hash(r.get(1)?, 1)?)))?
        .collect()
}

/// The `metrics` rows of a run: (iteration, name, value), by iteration then name.
pub(super) fn metric_rows(
    conn: &Connection,
    run_id: i64,
) -> rusqlite::Result<Vec<(u32, String, f64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT iteration, name, value FROM metrics WHERE run_id = ?1 ORDER BY iteration, name",
    )?;
    stmt.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect()
}

/// The stored iteration rows of a run: (iteration, record hash), ascending.
pub(super) fn iteration_hashes(
    conn: &Connection,
    run_id: i64,
) -> rusqlite::Result<Vec<(u32, ObjectHash)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT iteration, hash FROM iterations WHERE run_id = ?1 ORDER BY iteration",
    )?;
    stmt.query_map([run_id], |r| Ok((r.get(0)?, blob_hash(r.get(1)?, 1)?)))?
        .collect()
}

/// Every hash the run tables hold, with where it sits (for fsck's reference check).
pub(super) fn references(conn: &Connection) -> rusqlite::Result<Vec<(String, ObjectHash)>> {
    let mut out = Vec::new();
    let queries: [(&str, &str); 9] = [
        ("SELECT id, hash FROM runs", "run {} record"),
        ("SELECT id, settings FROM runs", "run {} settings"),
        (
            "SELECT id, head FROM runs WHERE head IS NOT NULL",
            "run {} head",
        ),
        (
            "SELECT run_id || ' iteration ' || iteration, hash FROM iterations",
            "run {} record",
        ),
        (
            "SELECT run_id || ' iteration ' || iteration, snapshot FROM iterations",
            "run {} snapshot",
        ),
        (
            "SELECT run_id || ' iteration ' || iteration, evaluation FROM iterations",
            "run {} evaluation",
        ),
        (
            "SELECT run_id || ' iteration ' || iteration || ' game ' || game, hash FROM run_games
             WHERE hash IS NOT NULL",
            "run {}",
        ),
        (
            "SELECT run_id || ' iteration ' || iteration, hash FROM evaluations",
            "run {} evaluation row",
        ),
        (
            "SELECT run_id || ' iteration ' || iteration, hash FROM run_coverage",
            "run {} coverage",
        ),
    ];
    for (sql, label) in queries {
        let mut stmt = conn.prepare(&format!("{sql} ORDER BY 1"))?;
        let rows = stmt.query_map([], |r| {
            let v: rusqlite::types::Value = r.get(0)?;
            let id = match v {
                rusqlite::types::Value::Integer(i) => i.to_string(),
                rusqlite::types::Value::Text(t) => t,
                _ => String::new(),
            };
            Ok((label.replace("{}", &id), blob_hash(r.get(1)?, 1)?))
        })?;
        for row in rows {
            out.push(row?);
        }
    }
    Ok(out)
}

/// The run, iteration and game index of a self-play game stored as an object (the first run
/// that has it).
pub(super) fn game_owner(
    conn: &Connection,
    hash: &ObjectHash,
) -> rusqlite::Result<Option<(i64, u32, u32)>> {
    conn.prepare_cached(
        "SELECT run_id, iteration, game FROM run_games WHERE hash = ?1
         ORDER BY run_id, iteration, game LIMIT 1",
    )?
    .query_row([&hash.0[..]], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
    .optional()
}

/// The run, iteration and game index of the game with address `hash` (or, packed, at
/// `place`), when it is game `game` of iteration `iteration` of some run (its stream says
/// so): one primary-key look-up per run, the first run that has it. `None` when no run has
/// it there.
pub(super) fn game_owner_at(
    conn: &Connection,
    hash: &ObjectHash,
    place: Option<(i64, u32)>,
    iteration: u32,
    game: u32,
) -> rusqlite::Result<Option<(i64, u32, u32)>> {
    // CROSS JOIN keeps this order (runs outside, run_games by its key inside): with a plain
    // JOIN SQLite scanned run_games for the address or pack (0.29 s over 1.2 million games,
    // against 1 ms).
    conn.prepare_cached(
        "SELECT g.run_id, g.iteration, g.game FROM runs r CROSS JOIN run_games g
           ON g.run_id = r.id AND g.iteration = ?2 AND g.game = ?3
         WHERE g.hash = ?1 OR (g.pack = ?4 AND g.slot = ?5)
         ORDER BY r.id LIMIT 1",
    )?
    .query_row(
        params![
            &hash.0[..],
            iteration,
            game,
            place.map(|p| p.0),
            place.map(|p| p.1)
        ],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .optional()
}

/// The run, iteration and game index of the packed game at (pack, slot) (the first run that
/// has it).
pub(super) fn packed_game_owner(
    conn: &Connection,
    pack: i64,
    slot: u32,
) -> rusqlite::Result<Option<(i64, u32, u32)>> {
    conn.prepare_cached(
        "SELECT run_id, iteration, game FROM run_games WHERE pack = ?1 AND slot = ?2
         ORDER BY run_id, iteration, game LIMIT 1",
    )?
    .query_row(params![pack, slot], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
    .optional()
}

/// The snapshots whose objects were deliberately not all stored: full checkpoints derived like
/// deltas (`iterations.snapshot_kept = 0`).
pub(super) fn unkept_snapshots(conn: &Connection) -> rusqlite::Result<Vec<ObjectHash>> {
    hash_column(
        conn,
        "SELECT DISTINCT snapshot FROM iterations WHERE snapshot_kept = 0 ORDER BY snapshot",
        [],
    )
}

/// The hashes of a query's one column, in its rows' order.
pub(super) fn hash_column(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<ObjectHash>> {
    conn.prepare_cached(sql)?
        .query_map(params, |r| blob_hash(r.get(0)?, 0))?
        .collect()
}
