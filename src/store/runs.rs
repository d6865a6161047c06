//! The run tables of `schema/0003_runs.sql`: runs, iterations, run_games, evaluations.

use rusqlite::{Connection, OptionalExtension, params};

use super::query::{QueryResult, run as run_query};
use super::{ObjectHash, StoreError};

/// A run's state.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Done,
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
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
    pub updated_at: String,
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

/// An evaluation's row: the metrics as columns.
#[derive(Clone, Debug, Default)]
pub struct EvaluationRow {
    pub run_id: i64,
    pub iteration: u32,
    pub hash: Option<ObjectHash>,
    pub wr_p: Option<f64>,
    pub wr_p_ci95: Option<f64>,
    /// Games, wins, draws, losses.
    pub wr_p_counts: Option<[u32; 4]>,
    pub err_p: Option<f64>,
    pub mae_v: Option<f64>,
    pub updated: [u64; 3],
    pub seen: u64,
    pub err_p_updated: Option<f64>,
    pub mae_v_updated: Option<f64>,
    pub err_p_updated_w: Option<f64>,
    pub mae_v_updated_w: Option<f64>,
}

fn blob_hash(b: Vec<u8>, col: usize) -> rusqlite::Result<ObjectHash> {
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
    let now = crate::util::utc_now_rfc3339();
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
    Ok(conn.last_insert_rowid())
}

pub(super) fn add_games(
    conn: &Connection,
    run_id: i64,
    iteration: u32,
    games: &[RunGameRow],
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO run_games (run_id, iteration, game, hash, plies, score_p0)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for g in games {
        stmt.execute(params![
            run_id,
            iteration,
            g.game,
            &g.hash.0[..],
            g.plies,
            g.score_p0
        ])?;
    }
    Ok(())
}

pub(super) fn add_iteration(conn: &Connection, r: &IterationRow) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO iterations (run_id, iteration, hash, snapshot, evaluation, snapshot_full,
             games, samples, rows_trained, beta, self_play_seconds, training_seconds,
             evaluation_seconds, store_seconds, snapshot_bytes, games_bytes, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
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
        crate::util::utc_now_rfc3339(),
    ])?;
    Ok(())
}

pub(super) fn add_evaluation(conn: &Connection, r: &EvaluationRow) -> rusqlite::Result<()> {
    let c = r.wr_p_counts;
    conn.prepare_cached(
        "INSERT INTO evaluations (run_id, iteration, hash, wr_p, wr_p_ci95, wr_p_games,
             wr_p_wins, wr_p_draws, wr_p_losses, err_p, mae_v, updated_1, updated_4,
             updated_16, seen, err_p_updated, mae_v_updated, err_p_updated_w, mae_v_updated_w)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
             ?18, ?19)
         ON CONFLICT(run_id, iteration) DO NOTHING",
    )?
    .execute(params![
        r.run_id,
        r.iteration,
        r.hash.as_ref().map(|h| h.0.to_vec()),
        r.wr_p,
        r.wr_p_ci95,
        c.map(|c| c[0]),
        c.map(|c| c[1]),
        c.map(|c| c[2]),
        c.map(|c| c[3]),
        r.err_p,
        r.mae_v,
        r.updated[0] as i64,
        r.updated[1] as i64,
        r.updated[2] as i64,
        r.seen as i64,
        r.err_p_updated,
        r.mae_v_updated,
        r.err_p_updated_w,
        r.mae_v_updated_w,
    ])?;
    Ok(())
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
        crate::util::utc_now_rfc3339()
    ])?;
    Ok(())
}

pub(super) fn set_status(
    conn: &Connection,
    run_id: i64,
    status: RunStatus,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE runs SET status = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![
            run_id,
            status.as_str(),
            crate::util::utc_now_rfc3339()
        ])?;
    Ok(())
}

const RUN_COLUMNS: &str = "id, name, variant, seed, hash, iterations_done, iterations_planned,
    status, head, settings_json, spec_toml, engine_version, created_at, updated_at";

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
        status: RunStatus::parse(&r.get::<_, String>(7)?),
        head: head.map(|h| blob_hash(h, 8)).transpose()?,
        settings_json: r.get(9)?,
        spec_toml: r.get(10)?,
        engine_version: r.get(11)?,
        created_at: r.get(12)?,
        updated_at: r.get(13)?,
    })
}

pub(super) fn list(conn: &Connection) -> rusqlite::Result<Vec<RunRow>> {
    let mut stmt = conn.prepare(&format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY id"))?;
    stmt.query_map([], run_row)?.collect()
}

/// A run by id, by name (the latest run of that name), or by a prefix of its run hash or head.
pub(super) fn find(conn: &Connection, text: &str) -> rusqlite::Result<Option<RunRow>> {
    let text = text.trim();
    if let Ok(id) = text.parse::<i64>() {
        let row = conn
            .prepare(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"))?
            .query_row([id], run_row)
            .optional()?;
        if row.is_some() {
            return Ok(row);
        }
    }
    let row = conn
        .prepare(&format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE name = ?1 ORDER BY id DESC LIMIT 1"
        ))?
        .query_row([text], run_row)
        .optional()?;
    if row.is_some() {
        return Ok(row);
    }
    if text.len() >= 6 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        let prefix = text.to_ascii_lowercase();
        return conn
            .prepare(&format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE lower(hex(hash)) LIKE ?1 || '%'
                 OR lower(hex(head)) LIKE ?1 || '%' ORDER BY id DESC LIMIT 1"
            ))?
            .query_row([prefix], run_row)
            .optional();
    }
    Ok(None)
}

/// The metrics table of a run, as `tabula show` prints it.
pub(super) fn metrics(conn: &Connection, run_id: i64) -> Result<QueryResult, StoreError> {
    run_query(
        conn,
        &format!(
            "SELECT iteration AS it, round(wr_p, 4) AS wr_p, round(wr_p_ci95, 4) AS ci95,
                    round(err_p, 5) AS err_p, round(mae_v, 5) AS mae_v,
                    updated_1 AS upd1, updated_4 AS upd4, updated_16 AS upd16, seen,
                    round(err_p_updated, 5) AS err_p_upd, round(mae_v_updated, 5) AS mae_v_upd,
                    games, round(self_play_seconds, 2) AS self_play_s,
                    round(training_seconds, 3) AS train_s,
                    round(evaluation_seconds, 2) AS eval_s, round(store_seconds, 3) AS store_s
             FROM metrics_wide WHERE run_id = {run_id} ORDER BY iteration"
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

/// Takes the lock of a run for this process (inside an IMMEDIATE transaction). A lock held by
/// a live process (or by one on another host, which cannot be checked) is returned as `Err`;
/// a lock whose process on this host is dead is taken over.
pub(super) fn lock(
    conn: &Connection,
    run_id: i64,
) -> rusqlite::Result<std::result::Result<(), LockHolder>> {
    let me = i64::from(std::process::id());
    let host = host_name();
    let held: Option<(Option<i64>, Option<String>, Option<String>)> = conn
        .query_row(
            "SELECT lock_pid, lock_host, lock_since FROM runs WHERE id = ?1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    if let Some((Some(pid), h, since)) = held {
        let h = h.unwrap_or_default();
        let ours = pid == me && h == host;
        let dead = h == host && !alive(pid);
        if !ours && !dead {
            return Ok(Err(LockHolder {
                pid,
                host: h,
                since: since.unwrap_or_default(),
            }));
        }
    }
    conn.prepare_cached(
        "UPDATE runs SET lock_pid = ?2, lock_host = ?3, lock_since = ?4, status = CASE
             WHEN status = 'failed' THEN 'running' ELSE status END WHERE id = ?1",
    )?
    .execute(params![run_id, me, host, crate::util::utc_now_rfc3339()])?;
    Ok(Ok(()))
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

/// The stored self-play games of one iteration of a run: (game index, hash), in order.
pub(super) fn games_of(
    conn: &Connection,
    run_id: i64,
    iteration: u32,
) -> rusqlite::Result<Vec<(u32, ObjectHash)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT game, hash FROM run_games WHERE run_id = ?1 AND iteration = ?2 ORDER BY game",
    )?;
    stmt.query_map(params![run_id, iteration], |r| {
        Ok((r.get(0)?, blob_hash(r.get(1)?, 1)?))
    })?
    .collect()
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
    let queries: [(&str, &str); 8] = [
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
            "SELECT run_id || ' iteration ' || iteration || ' game ' || game, hash FROM run_games",
            "run {}",
        ),
        (
            "SELECT run_id || ' iteration ' || iteration, hash FROM evaluations",
            "run {} evaluation row",
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

/// The run, iteration and game index of a stored self-play game (the first run that has it).
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
