//! The store writer thread of a run: it commits what the loop sends ([`Commit`]), in order,
//! grouping what waits into one transaction; the loop has already computed every address and
//! compressed every pack, so the writer only inserts rows.

use std::time::Instant;

use super::{IterationRecord, RunError};
use crate::par::thread_cpu_seconds;
use crate::store::Encoded;
use crate::store::{
    EvaluationRow, IterationRow, Prepared, PreparedPack, RunGameRow, RunStatus, Store, StoreError,
};

/// One batch of self-play games ([`super::GAME_BATCH`] at most) as the writer takes it.
pub(crate) struct GameBatch {
    /// The batch's new records as one pack (`None`: reused games, already stored).
    pub pack: Option<PreparedPack>,
    pub rows: Vec<RunGameRow>,
}

/// Finished games are sent to the writer at least this often during self-play; the rest go
/// with the iteration's own job: cheap self-play then costs one commit an iteration, not one a
/// batch. What is committed when changes nothing that is recorded, only what a crash loses
/// (resume plays it again).
pub(super) const GAMES_FLUSH: std::time::Duration = std::time::Duration::from_millis(500);

/// Store work queued for the writer thread, in commit order.
pub(crate) enum Commit {
    /// Batches of finished self-play games, in game order: records and rows in one
    /// transaction.
    Games {
        iteration: u32,
        batches: Vec<GameBatch>,
    },
    /// The untrained model's evaluation.
    Baseline(Box<(Encoded, EvaluationRow)>),
    /// An iteration: checkpoint objects, evaluation, iteration record, rows and the run's
    /// progress, in one transaction. `row.store_seconds` is filled in by the writer.
    Iteration(Box<IterationCommit>),
}

pub(crate) struct IterationCommit {
    /// The iteration's games not yet sent (those of its last [`GAMES_FLUSH`]).
    pub games: Vec<GameBatch>,
    pub checkpoint: Vec<Prepared>,
    /// The coverage set after the iteration, when it is stored (docs/store.md, "Finding a
    /// game in a big store").
    pub coverage: Option<super::retention::CoverageCommit>,
    pub evaluation: Encoded,
    pub record: IterationRecord,
    /// `None`: the iteration was not measured (`[eval] every`), no `evaluations` row.
    pub(crate) evaluation_row: Option<EvaluationRow>,
    pub row: IterationRow,
    pub status: RunStatus,
}

/// The write-ahead log a run's writer lets grow before copying it into the store file
/// (64 MiB; [`Store::set_checkpoint_pages`]).
const WRITER_CHECKPOINT_PAGES: u32 = 16_384;

/// Jobs waiting for the writer at most; self-play blocks beyond (memory stays bounded).
pub(super) const WRITE_QUEUE: usize = 4;

/// The writer thread: commits jobs in order; returns its busy seconds (wall clock) and the
/// CPU seconds it used. Jobs already waiting when one arrives are committed with it, in one
/// transaction (a group commit: fewer commits when the loop outpaces the writer; a crash
/// loses at most the group, which resume plays again).
pub(super) fn write_commits(
    store: &mut Store,
    run_id: i64,
    rx: std::sync::mpsc::Receiver<Commit>,
) -> Result<(f64, f64), StoreError> {
    let cpu_start = thread_cpu_seconds();
    store.set_checkpoint_pages(WRITER_CHECKPOINT_PAGES)?;
    let mut total = 0.0;
    let mut this_iteration = 0.0;
    let mut ledger = crate::store::PackLedger::new();
    while let Ok(first) = rx.recv() {
        let t = Instant::now();
        let mut group = vec![first];
        while group.len() < WRITE_QUEUE + 1
            && let Ok(job) = rx.try_recv()
        {
            group.push(job);
        }
        // Busy seconds of the current iteration before `since`.
        let mut carried = this_iteration;
        let mut since = t;
        store.write(|w| {
            for job in group {
                match job {
                    Commit::Games { iteration, batches } => {
                        add_batches(w, run_id, iteration, &batches, &mut ledger)?;
                    }
                    Commit::Baseline(job) => {
                        w.put_encoded(&job.0)?;
                        w.add_evaluation(&job.1)?;
                    }
                    Commit::Iteration(mut job) => {
                        add_batches(w, run_id, job.record.iteration, &job.games, &mut ledger)?;
                        for c in &job.checkpoint {
                            w.put_prepared(c)?;
                        }
                        w.put_encoded(&job.evaluation)?;
                        // The record's list of games is kept once, in the games' packs.
                        let head = w.put_encoded_over_games(
                            &Encoded::of(&job.record)?,
                            run_id,
                            job.record.iteration,
                            &job.record.games,
                            &ledger,
                        )?;
                        if let Some(row) = &job.evaluation_row {
                            w.add_evaluation(row)?;
                        }
                        if let Some(c) = &job.coverage {
                            let i = job.record.iteration;
                            w.add_coverage(run_id, i, &head, &c.hash, c.object.as_ref())?;
                        }
                        w.set_run_progress(run_id, job.record.iteration, Some(&head), job.status)?;
                        // The commit itself is cheap (WAL, synchronous=NORMAL: no fsync per
                        // commit) and counts toward the next iteration.
                        job.row.store_seconds = carried + since.elapsed().as_secs_f64();
                        carried = 0.0;
                        since = Instant::now();
                        w.add_iteration(&job.row)?;
                    }
                }
            }
            Ok(())
        })?;
        total += t.elapsed().as_secs_f64();
        this_iteration = carried + since.elapsed().as_secs_f64();
    }
    Ok((total, thread_cpu_seconds() - cpu_start))
}

/// Stores batches of an iteration's games, in game order, noting their packs in `ledger`.
fn add_batches(
    w: &crate::store::Writer<'_>,
    run_id: i64,
    iteration: u32,
    batches: &[GameBatch],
    ledger: &mut crate::store::PackLedger,
) -> Result<(), StoreError> {
    for b in batches {
        w.add_packed_games(run_id, iteration, &b.rows, b.pack.as_ref(), ledger)?;
    }
    Ok(())
}

/// Sends `job` to the writer, adding the time blocked to `wait`. A closed queue means the
/// writer stopped on an error, which `execute` reports.
pub(super) fn send(
    tx: &std::sync::mpsc::SyncSender<Commit>,
    job: Commit,
    wait: &mut f64,
) -> Result<(), RunError> {
    let t = Instant::now();
    let sent = tx.send(job);
    *wait += t.elapsed().as_secs_f64();
    sent.map_err(|_| RunError::WriterStopped)
}

/// Where the jobs of the loop go: the writer (a run) or a comparison (verify).
pub(crate) type CommitSink<'s> = dyn FnMut(Commit, &mut f64) -> Result<(), RunError> + 's;
