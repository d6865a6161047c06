//! Runs: tabular AlphaZero driven by a run spec, every record content-addressed in the store.
//!
//! A run is created from a validated [`RunConfig`]: its `settings/v1` and `run/v1` records are
//! stored and a `runs` row made. Then, before training, the untrained table is evaluated
//! (iteration 0, an `evaluation/v1` outside the chain), and each iteration i = 1..N:
//!
//! 1. plays M self-play games with the table frozen (game g from stream `self-play(i,g)`), in
//!    parallel, committing each batch of finished games (records plus `run_games` rows) in one
//!    transaction;
//! 2. trains on the samples of the last K iterations' games (in game order, move by move),
//!    positions in parallel, with the schedule's beta;
//! 3. measures the metrics ([`crate::learner::metrics`]);
//! 4. commits in one transaction the table snapshot (chunks: a full checkpoint every
//!    `checkpoint_every` iterations, else the rows this iteration changed), the evaluation, the
//!    `iteration/v1` record (run, i, settings, games, snapshot, evaluation, previous) and the
//!    run's new head.
//!
//! Store writes run on a writer thread of their own, fed in commit order through a short
//! queue, so recording overlaps self-play; the loop computes every address itself
//! ([`crate::store::address`]) and so never waits for a write unless the queue is full. The
//! `iterations` table's `store_seconds` is the writer's busy time for the iteration.
//!
//! Everything random derives from the run seed by named streams and every reduction runs in a
//! fixed order, so the head is a pure function of (variant, settings, seed, N), whatever the
//! thread count. Times, thread counts and sizes go to plain columns.
//!
//! Resume, branch, verify and checkout ([`life`]) rest on this: games are committed in
//! batches as they finish; an iteration's snapshot, evaluation and record land together;
//! samples are derived from stored game records alone
//! ([`crate::learner::self_play::samples_from_record`]); the coverage count `seen` is derived
//! from the stored games. The loop (`Loop::iterate`) starts from any committed iteration
//! (`StartPoint`, rebuilt from the store) and sends its records to a sink: the writer for a
//! run, a comparison with the stored records for `verify`. A run is locked while a process
//! works on it.

pub mod life;
pub mod records;
pub mod spec;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use crate::game::{Game, Player};
use crate::learner::self_play::{GameSamples, samples_from_record, self_play_game};
use crate::learner::{Metrics, MetricsPlan, Sample, Table, TableEval, Truth, metrics, train};
use crate::record::{GameRecord, ReplayError};
use crate::search::{Search, SearchError};
use crate::solver::fasthash::FastSet;
use crate::store::{
    EvaluationRow, IterationRow, NewRun, ObjectHash, RunGameRow, RunStatus, Store, StoreError,
    address,
};

pub use life::{
    Resumed, branch_seed, check_references, checkout_at, create_branch, resume, verify,
};
pub use records::{EvaluationRecord, IterationRecord, RunRecord, SnapshotRecord, TableChunk};
pub use spec::{EvalSettings, RunConfig, Settings, SpecError};

/// Self-play games committed per transaction (a batch is also the unit of progress reports).
pub const GAME_BATCH: u32 = 256;

/// Errors of a run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("self-play: {0}")]
    Search(#[from] SearchError),
    #[error("a self-play record does not re-play: {0}")]
    Replay(#[from] ReplayError),
    #[error("the metrics need the exact solution: {0}")]
    Solution(String),
    /// A request that cannot be met (an unknown run, an iteration beyond the committed ones,
    /// a setting that cannot change); the text says what is allowed.
    #[error("{0}")]
    Usage(String),
    /// `verify`: a re-executed record differs from the stored one (the text names it).
    #[error("verify: {0}")]
    Differs(String),
}

/// One finished iteration, for progress lines.
#[derive(Clone, Debug)]
pub struct IterationSummary {
    pub iteration: u32,
    pub head: ObjectHash,
    pub metrics: Metrics,
    pub games: u32,
    pub samples: u64,
    pub beta: f64,
    pub self_play_seconds: f64,
    pub training_seconds: f64,
    pub evaluation_seconds: f64,
    /// Seconds the loop waited on the store writer during this iteration (its writes run
    /// beside self-play on a thread of their own; the busy time is in the `iterations` table).
    pub store_wait_seconds: f64,
    pub snapshot_bytes: u64,
    pub games_bytes: u64,
}

/// What a run reports as it goes.
pub trait Observer {
    /// Called once the run's records and row exist.
    fn created(&mut self, run_id: i64, run_hash: &ObjectHash, seed: u64) {
        let _ = (run_id, run_hash, seed);
    }
    /// Called once the state to continue from is rebuilt: `done` iterations committed,
    /// `reused` games of the next already stored, `restart_seconds` since the process began
    /// working on the run.
    fn resumed(&mut self, done: u32, reused: u32, restart_seconds: f64) {
        let _ = (done, reused, restart_seconds);
    }
    /// Called after each committed batch of self-play games.
    fn games_done(&mut self, iteration: u32, done: u32, of: u32) {
        let _ = (iteration, done, of);
    }
    /// Called with the untrained table's metrics.
    fn baseline(&mut self, metrics: &Metrics) {
        let _ = metrics;
    }
    /// Called after each committed iteration.
    fn iteration_done(&mut self, summary: &IterationSummary) {
        let _ = summary;
    }
}

/// An observer that reports nothing.
pub struct Quiet;

impl Observer for Quiet {}

/// The end of a run.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub run_id: i64,
    /// The `run/v1` hash.
    pub run_hash: ObjectHash,
    pub head: Option<ObjectHash>,
    pub iterations: u32,
    /// The untrained table's metrics (measured by the process that started the run).
    pub baseline: Option<Metrics>,
    pub last: Option<IterationSummary>,
    /// Wall-clock seconds of the whole run.
    pub seconds: f64,
    /// Seconds the store writer thread was busy (encoding, inserting, committing).
    pub store_seconds: f64,
    /// Seconds the iteration loop waited on the writer (a full queue, the final flush).
    pub store_wait_seconds: f64,
    /// Seconds from the start of the process's work on the run (lock, solution, rebuilding
    /// the table, window, coverage and reused games from the store) to its first new work.
    pub restart_seconds: f64,
}

/// Creates the run's records and row, locked by this process; returns (run id, run hash).
pub fn create_run(
    store: &mut Store,
    cfg: &RunConfig,
    spec_toml: &str,
    threads: u32,
) -> Result<(i64, ObjectHash), RunError> {
    let settings_json = serde_json::to_string(&cfg.settings).unwrap_or_default();
    let ids = store.write(|w| {
        let settings = w.put(&cfg.settings)?;
        let run = RunRecord {
            variant: cfg.game.variant(),
            seed: cfg.seed,
            settings,
            parent: None,
        };
        let hash = w.put(&run)?;
        let id = w.create_run(&NewRun {
            hash,
            name: cfg.name.clone(),
            variant: run.variant.clone(),
            seed: cfg.seed,
            seed_drawn: cfg.seed_drawn,
            settings,
            settings_json: settings_json.clone(),
            spec_toml: spec_toml.to_string(),
            iterations_planned: cfg.iterations,
            parent: None,
            threads,
        })?;
        // Locked from the start: no other process can take it up before this one works.
        w.lock_run(id)?;
        Ok((id, hash))
    })?;
    Ok(ids)
}

/// Creates a run from `cfg` and runs it to the end on the current rayon pool. The solution
/// the metrics need is loaded from the store (solved and saved first if missing). The run is
/// locked while it is worked on.
pub fn start(
    store: &mut Store,
    cfg: &RunConfig,
    spec_toml: &str,
    threads: u32,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    cfg.validate()?;
    let (run_id, run_hash) = create_run(store, cfg, spec_toml, threads)?;
    observer.created(run_id, &run_hash, cfg.seed);
    let work = Work {
        run_id,
        run_hash,
        line: run_hash,
        table_seed: cfg.seed,
        done: 0,
        head: None,
        baseline: true,
        since: Instant::now(),
    };
    run_locked(store, cfg, &work, observer)
}

/// What a process works on: a run (locked) from its last committed iteration.
pub(crate) struct Work {
    pub run_id: i64,
    pub run_hash: ObjectHash,
    /// The `run` field of the run's iteration records: the run record with `parent` left out
    /// (for a root run, the run record itself).
    pub line: ObjectHash,
    /// The seed of the table's initial entries (`table-init`) and of evaluation: the root
    /// run's seed, inherited by branches (they continue the same table).
    pub table_seed: u64,
    /// Iterations committed (a branch's shared ones included) and the head.
    pub done: u32,
    pub head: Option<ObjectHash>,
    /// Whether the untrained table's evaluation is still to be stored.
    pub baseline: bool,
    /// When this process began working on the run.
    pub since: Instant,
}

/// Runs a locked run to its end, releasing the lock whatever happens.
pub(crate) fn run_locked(
    store: &mut Store,
    cfg: &RunConfig,
    work: &Work,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    let out = with_truth(store, cfg, |store, truth| {
        crate::with_game!(&cfg.game, |g| execute(
            g,
            cfg,
            truth_for(g, truth),
            store,
            work,
            observer
        ))
    });
    if out.is_err() {
        // Best effort: the error being reported matters more than this one.
        let _ = store.set_run_status(work.run_id, RunStatus::Failed);
    }
    let _ = store.unlock_run(work.run_id);
    out
}

/// The exact solution the metrics need, type-erased so one closure serves every game.
pub(crate) type AnyTruth = Option<Box<dyn std::any::Any>>;

/// Loads (or solves) what the metrics of `cfg` need and calls `f` with it.
pub(crate) fn with_truth<T>(
    store: &mut Store,
    cfg: &RunConfig,
    f: impl FnOnce(&mut Store, &AnyTruth) -> Result<T, RunError>,
) -> Result<T, RunError> {
    let need_truth = cfg.settings.eval.wr_p || cfg.settings.eval.errors;
    let truth: AnyTruth = if need_truth {
        crate::with_solvable_game!(
            &cfg.game,
            |g| {
                let sol = crate::players::load_or_solve(g, store)
                    .map_err(|e| RunError::Solution(e.to_string()))?;
                let tests = crate::solver::Solvable::test_positions(g);
                let t = Truth::new(g, Arc::new(sol), &tests).map_err(RunError::Solution)?;
                Some(Box::new(t) as Box<dyn std::any::Any>)
            },
            |_other| None
        )
    } else {
        None
    };
    f(store, &truth)
}

/// The truth of game `G`, if `truth` holds one.
pub(crate) fn truth_for<'a, G: Game>(_g: &G, truth: &'a AnyTruth) -> Option<&'a Truth<G>> {
    truth.as_ref().and_then(|t| t.downcast_ref::<Truth<G>>())
}

/// Runs iterations `work.done + 1 ..= N` of a locked run (see the module docs), reusing the
/// self-play games of iteration `done + 1` already committed.
pub(crate) fn execute<G: Game>(
    g: &G,
    cfg: &RunConfig,
    truth: Option<&Truth<G>>,
    store: &mut Store,
    work: &Work,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    let started = Instant::now();
    let start = start_point(
        g,
        store,
        &cfg.settings,
        work.table_seed,
        work.head,
        work.done,
    )?;
    // Games of the next iteration committed before an interruption: reused, not re-played.
    let mut reuse = Vec::new();
    if work.done < cfg.iterations {
        for (k, (game, h)) in store
            .run_games(work.run_id, work.done + 1)?
            .into_iter()
            .enumerate()
        {
            if game as usize != k {
                return Err(StoreError::Query(format!(
                    "run {} iteration {}: stored games are not a prefix (game {game} at {k})",
                    work.run_id,
                    work.done + 1
                ))
                .into());
            }
            reuse.push(store.get::<GameRecord>(&h)?);
        }
    }
    let restart_seconds = work.since.elapsed().as_secs_f64();
    observer.resumed(work.done, reuse.len() as u32, restart_seconds);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Job<G::Key>>(WRITE_QUEUE);
    let run_id = work.run_id;
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || write_jobs(store, run_id, rx));
        let mut sink = |job: Job<G::Key>, wait: &mut f64| send(&tx, job, wait);
        let loop_ = Loop {
            g,
            cfg,
            truth,
            run_id,
            line: work.line,
            run_hash: work.run_hash,
            last: cfg.iterations,
            baseline: work.baseline,
        };
        let out = loop_.iterate(start, reuse, &mut sink, observer, started);
        drop(tx);
        let t = Instant::now();
        // A writer error explains a failed send, so it comes first.
        let busy = writer
            .join()
            .unwrap_or_else(|_| Err(StoreError::Query("the store writer panicked".into())))?;
        let mut out = out?;
        out.store_wait_seconds += t.elapsed().as_secs_f64();
        out.store_seconds = busy;
        out.seconds = started.elapsed().as_secs_f64();
        out.restart_seconds = restart_seconds;
        Ok(out)
    })
}

/// The learner's state after an iteration: everything the next iteration needs.
pub(crate) struct StartPoint<K: crate::game::PositionKey> {
    pub done: u32,
    pub table: Table<K>,
    pub window: VecDeque<Vec<Sample<K>>>,
    pub seen: FastSet<K>,
    pub previous: Option<ObjectHash>,
    pub previous_snapshot: Option<ObjectHash>,
}

/// The iteration records of the chain ending at `head`, oldest first.
pub fn chain(store: &Store, head: Option<ObjectHash>) -> Result<Vec<IterationRecord>, RunError> {
    let mut out = Vec::new();
    let mut cur = head;
    while let Some(h) = cur {
        let r: IterationRecord = store.get(&h)?;
        cur = r.previous;
        out.push(r);
    }
    out.reverse();
    for (k, r) in out.iter().enumerate() {
        if r.iteration != k as u32 + 1 {
            return Err(StoreError::Query(format!(
                "iteration record {} says iteration {}, but it is number {} of its chain",
                address(r)?.0,
                r.iteration,
                k + 1
            ))
            .into());
        }
    }
    Ok(out)
}

/// Rebuilds the learner's state after iteration `done` from the store alone: the table from
/// its snapshot, the training window and the coverage set from the stored games.
pub(crate) fn start_point<G: Game>(
    g: &G,
    store: &Store,
    s: &Settings,
    table_seed: u64,
    head: Option<ObjectHash>,
    done: u32,
) -> Result<StartPoint<G::Key>, RunError> {
    let records = chain(store, head)?;
    if records.len() != done as usize {
        return Err(StoreError::Query(format!(
            "the run says {done} iterations are committed, but its head's chain has {}",
            records.len()
        ))
        .into());
    }
    let mut table = Table::new(g.num_actions(), table_seed, s.init_std);
    let mut previous_snapshot = None;
    if let Some(last) = records.last() {
        table = checkout(store, &last.snapshot, table_seed, s.init_std)?;
        previous_snapshot = Some(last.snapshot);
    }
    let mut window = VecDeque::new();
    let mut seen: FastSet<G::Key> = FastSet::default();
    let first_in_window = done.saturating_sub(s.window) + 1;
    for r in &records {
        let games: Vec<GameRecord> = r
            .games
            .iter()
            .map(|h| store.get::<GameRecord>(h))
            .collect::<Result<_, _>>()?;
        let samples: Vec<GameSamples<G::Key>> = games
            .par_iter()
            .map(|rec| samples_from_record(g, rec))
            .collect::<Result<_, _>>()?;
        let mut iteration_samples = Vec::new();
        for gs in samples {
            seen.extend(gs.positions);
            if r.iteration >= first_in_window {
                iteration_samples.extend(gs.samples);
            }
        }
        if r.iteration >= first_in_window {
            window.push_back(iteration_samples);
        }
    }
    Ok(StartPoint {
        done,
        table,
        window,
        seen,
        previous: head,
        previous_snapshot,
    })
}

/// Store work queued for the writer thread, in commit order.
pub(crate) enum Job<K: crate::game::PositionKey> {
    /// A batch of finished self-play games: records and rows in one transaction.
    Games {
        iteration: u32,
        records: Vec<GameRecord>,
        rows: Vec<RunGameRow>,
    },
    /// The untrained table's evaluation.
    Baseline(Box<(EvaluationRecord, EvaluationRow)>),
    /// An iteration: snapshot chunks and record, evaluation, iteration record, rows and the
    /// run's progress, in one transaction. `row.store_seconds` is filled in by the writer.
    Iteration(Box<IterationJob<K>>),
}

pub(crate) struct IterationJob<K: crate::game::PositionKey> {
    pub chunks: Vec<TableChunk<K>>,
    pub snapshot: SnapshotRecord,
    pub evaluation: EvaluationRecord,
    pub record: IterationRecord,
    pub evaluation_row: EvaluationRow,
    pub row: IterationRow,
    pub status: RunStatus,
}

/// Jobs waiting for the writer at most; self-play blocks beyond (memory stays bounded).
const WRITE_QUEUE: usize = 4;

/// The writer thread: commits jobs in order; returns its busy seconds.
fn write_jobs<K: crate::game::PositionKey>(
    store: &mut Store,
    run_id: i64,
    rx: std::sync::mpsc::Receiver<Job<K>>,
) -> Result<f64, StoreError> {
    let mut total = 0.0;
    let mut this_iteration = 0.0;
    for job in rx {
        let t = Instant::now();
        let ends_iteration = matches!(job, Job::Iteration(_));
        match job {
            Job::Games {
                iteration,
                records,
                rows,
            } => store.write(|w| {
                for r in &records {
                    w.put(r)?;
                }
                w.add_run_games(run_id, iteration, &rows)
            })?,
            Job::Baseline(job) => store.write(|w| {
                w.put(&job.0)?;
                w.add_evaluation(&job.1)
            })?,
            Job::Iteration(mut job) => store.write(|w| {
                for c in &job.chunks {
                    w.put(c)?;
                }
                w.put(&job.snapshot)?;
                w.put(&job.evaluation)?;
                let head = w.put(&job.record)?;
                w.add_evaluation(&job.evaluation_row)?;
                w.set_run_progress(run_id, job.record.iteration, Some(&head), job.status)?;
                // The commit itself is cheap (WAL, synchronous=NORMAL: no fsync per commit).
                job.row.store_seconds = this_iteration + t.elapsed().as_secs_f64();
                w.add_iteration(&job.row)
            })?,
        }
        let dt = t.elapsed().as_secs_f64();
        total += dt;
        this_iteration = if ends_iteration {
            0.0
        } else {
            this_iteration + dt
        };
    }
    Ok(total)
}

/// Sends `job` to the writer, adding the time blocked to `wait`. A closed queue means the
/// writer stopped on an error, which `execute` reports.
fn send<K: crate::game::PositionKey>(
    tx: &std::sync::mpsc::SyncSender<Job<K>>,
    job: Job<K>,
    wait: &mut f64,
) -> Result<(), RunError> {
    let t = Instant::now();
    let sent = tx.send(job);
    *wait += t.elapsed().as_secs_f64();
    sent.map_err(|_| RunError::Store(StoreError::Query("the store writer stopped".into())))
}

/// Where the jobs of the loop go: the writer (a run) or a comparison (verify).
pub(crate) type Sink<'s, K> = dyn FnMut(Job<K>, &mut f64) -> Result<(), RunError> + 's;

/// The iteration loop's fixed inputs.
pub(crate) struct Loop<'a, G: Game> {
    pub g: &'a G,
    pub cfg: &'a RunConfig,
    pub truth: Option<&'a Truth<G>>,
    pub run_id: i64,
    pub run_hash: ObjectHash,
    pub line: ObjectHash,
    /// The last iteration to run.
    pub last: u32,
    /// Whether to measure and emit the untrained table's evaluation first.
    pub baseline: bool,
}

impl<G: Game> Loop<'_, G> {
    /// Runs iterations `start.done + 1 ..= self.last`; every record goes to `sink` in commit
    /// order. `reuse` holds the first self-play games of iteration `start.done + 1`, already
    /// committed: they are used as they are, not re-played or re-sent.
    pub(crate) fn iterate(
        &self,
        start: StartPoint<G::Key>,
        reuse: Vec<GameRecord>,
        sink: &mut Sink<'_, G::Key>,
        observer: &mut dyn Observer,
        started: Instant,
    ) -> Result<RunOutcome, RunError> {
        let (g, cfg, truth, run_id) = (self.g, self.cfg, self.truth, self.run_id);
        let s = &cfg.settings;
        let plan = MetricsPlan {
            wr_p_games: if s.eval.wr_p { s.eval.games } else { 0 },
            errors: s.eval.errors,
        };
        let settings_hash = address(s)?.0;
        let StartPoint {
            done,
            mut table,
            mut window,
            mut seen,
            mut previous,
            mut previous_snapshot,
        } = start;
        let mut wait = 0.0;
        let mut reuse = Some(reuse);

        let mut baseline = None;
        if self.baseline {
            let m = metrics::measure(g, &table, truth, plan, 0, 0);
            let record = EvaluationRecord {
                iteration: 0,
                metrics: m.clone(),
            };
            let row = evaluation_row(run_id, 0, address(&record)?.0, &m);
            sink(Job::Baseline(Box::new((record, row))), &mut wait)?;
            observer.baseline(&m);
            baseline = Some(m);
        }

        let mut last = None;
        for i in done + 1..=self.last {
            // 1. Self-play; each batch of finished games goes to the writer.
            let t_self = Instant::now();
            let wait_before = wait;
            let m = s.games_per_iteration;
            let mut game_hashes = Vec::with_capacity(m as usize);
            let mut samples: Vec<Sample<G::Key>> = Vec::new();
            let mut games_bytes = 0u64;
            let reused = reuse.take().unwrap_or_default();
            let mut start = 0;
            if !reused.is_empty() {
                let played: Vec<PlayedGame<G::Key>> = reused
                    .into_par_iter()
                    .map(|record| -> Result<_, RunError> {
                        let samples = samples_from_record(g, &record)?;
                        let (hash, size) = address(&record)?;
                        Ok(PlayedGame {
                            record,
                            samples,
                            hash,
                            size,
                        })
                    })
                    .collect::<Result<_, _>>()?;
                start = played.len() as u32;
                for p in played {
                    game_hashes.push(p.hash);
                    games_bytes += p.size as u64;
                    samples.extend(p.samples.samples);
                    seen.extend(p.samples.positions);
                }
                observer.games_done(i, start, m);
            }
            while start < m {
                let end = (start + GAME_BATCH).min(m);
                let played: Vec<PlayedGame<G::Key>> = (start..end)
                    .into_par_iter()
                    .map_init(
                        || {
                            (
                                Search::<G>::new(s.search).expect("validated search settings"),
                                TableEval::new(&table),
                            )
                        },
                        |(search, eval), gi| -> Result<_, RunError> {
                            let record = self_play_game(g, search, eval, cfg.seed, i, gi)?;
                            let samples = samples_from_record(g, &record)?;
                            let (hash, size) = address(&record)?;
                            Ok(PlayedGame {
                                record,
                                samples,
                                hash,
                                size,
                            })
                        },
                    )
                    .collect::<Result<_, _>>()?;
                let mut records = Vec::with_capacity(played.len());
                let mut rows = Vec::with_capacity(played.len());
                for (k, p) in played.into_iter().enumerate() {
                    rows.push(RunGameRow {
                        game: start + k as u32,
                        hash: p.hash,
                        plies: p.record.plies() as u32,
                        score_p0: p.record.end.result().score(Player::P0),
                    });
                    game_hashes.push(p.hash);
                    games_bytes += p.size as u64;
                    records.push(p.record);
                    samples.extend(p.samples.samples);
                    seen.extend(p.samples.positions);
                }
                sink(
                    Job::Games {
                        iteration: i,
                        records,
                        rows,
                    },
                    &mut wait,
                )?;
                start = end;
                observer.games_done(i, start, m);
            }
            let self_play_seconds = t_self.elapsed().as_secs_f64() - (wait - wait_before);

            // 2. Training on the window of the last K iterations' games.
            let t_train = Instant::now();
            window.push_back(samples);
            while window.len() > s.window as usize {
                window.pop_front();
            }
            let refs: Vec<&Sample<G::Key>> = window.iter().flatten().collect();
            let beta = s.beta(i);
            let report = train(&mut table, &refs, beta);
            drop(refs);
            let full = i % s.checkpoint_every == 0;
            let rows = if full {
                table.sorted_rows()
            } else {
                report.rows.clone()
            };
            let chunks = records::chunks(&table, &rows);
            let training_seconds = t_train.elapsed().as_secs_f64();

            // 3. Metrics.
            let t_eval = Instant::now();
            let metrics = metrics::measure(g, &table, truth, plan, i, seen.len() as u64);
            let evaluation_seconds = t_eval.elapsed().as_secs_f64();

            // 4. Records: addresses here, the writer commits them in one transaction.
            let mut chunk_hashes = Vec::with_capacity(chunks.len());
            let mut snapshot_bytes = 0u64;
            for c in &chunks {
                let (h, size) = address(c)?;
                chunk_hashes.push(h);
                snapshot_bytes += size as u64;
            }
            let snapshot = SnapshotRecord {
                iteration: i,
                num_actions: g.num_actions() as u32,
                full,
                base: if full { None } else { previous_snapshot },
                entries: table.len() as u64,
                chunks: chunk_hashes,
            };
            let (snapshot_hash, size) = address(&snapshot)?;
            snapshot_bytes += size as u64;
            let evaluation = EvaluationRecord {
                iteration: i,
                metrics: metrics.clone(),
            };
            let evaluation_hash = address(&evaluation)?.0;
            let record = IterationRecord {
                run: self.line,
                iteration: i,
                settings: settings_hash,
                games: game_hashes,
                snapshot: snapshot_hash,
                evaluation: evaluation_hash,
                previous,
            };
            let head = address(&record)?.0;
            let status = if i == cfg.iterations {
                RunStatus::Done
            } else {
                RunStatus::Running
            };
            let row = IterationRow {
                run_id,
                iteration: i,
                hash: head,
                snapshot: snapshot_hash,
                evaluation: evaluation_hash,
                snapshot_full: full,
                games: m,
                samples: report.samples,
                rows_trained: report.rows.len() as u64,
                beta,
                self_play_seconds,
                training_seconds,
                evaluation_seconds,
                store_seconds: 0.0,
                snapshot_bytes,
                games_bytes,
            };
            let wait_before = wait;
            sink(
                Job::Iteration(Box::new(IterationJob {
                    chunks,
                    snapshot,
                    evaluation,
                    record,
                    evaluation_row: evaluation_row(run_id, i, evaluation_hash, &metrics),
                    row,
                    status,
                })),
                &mut wait,
            )?;
            let summary = IterationSummary {
                iteration: i,
                head,
                metrics,
                games: m,
                samples: report.samples,
                beta,
                self_play_seconds,
                training_seconds,
                evaluation_seconds,
                store_wait_seconds: wait - wait_before,
                snapshot_bytes,
                games_bytes,
            };
            previous = Some(head);
            previous_snapshot = Some(snapshot_hash);
            observer.iteration_done(&summary);
            last = Some(summary);
        }
        Ok(RunOutcome {
            run_id,
            run_hash: self.run_hash,
            head: previous,
            iterations: self.last,
            baseline,
            last,
            seconds: started.elapsed().as_secs_f64(),
            store_seconds: 0.0,
            store_wait_seconds: wait,
            restart_seconds: 0.0,
        })
    }
}

/// A finished self-play game with its samples and address.
struct PlayedGame<K> {
    record: GameRecord,
    samples: GameSamples<K>,
    hash: ObjectHash,
    size: usize,
}

/// Reconstructs the table a snapshot describes: the last full checkpoint at or before it, then
/// every delta after it, in order. `seed` and `init_std` are the run's (unmaterialised rows
/// are their initial entries).
pub fn checkout<K: crate::game::PositionKey>(
    store: &Store,
    snapshot: &ObjectHash,
    seed: u64,
    init_std: f64,
) -> Result<Table<K>, RunError> {
    let mut chain = Vec::new();
    let mut cur = Some(*snapshot);
    while let Some(h) = cur {
        let s: SnapshotRecord = store.get(&h)?;
        cur = if s.full { None } else { s.base };
        chain.push((h, s));
    }
    let num_actions = chain.first().map_or(0, |c| c.1.num_actions as usize);
    let mut table = Table::new(num_actions, seed, init_std);
    let stride = table.stride();
    for (_, s) in chain.iter().rev() {
        for c in &s.chunks {
            let chunk: TableChunk<K> = store.get(c)?;
            if chunk.rows.len() != chunk.keys.len() * stride
                || chunk.updates.len() != chunk.keys.len()
            {
                return Err(StoreError::Corrupt {
                    hash: *c,
                    reason: "a table chunk's rows do not match its keys".into(),
                }
                .into());
            }
            for (j, key) in chunk.keys.iter().enumerate() {
                table.set_row(
                    *key,
                    &chunk.rows[j * stride..(j + 1) * stride],
                    chunk.updates[j],
                );
            }
        }
    }
    if let Some((h, s)) = chain.first()
        && s.entries != table.len() as u64
    {
        return Err(StoreError::Corrupt {
            hash: *h,
            reason: format!(
                "the snapshot promises {} rows; its chain holds {}",
                s.entries,
                table.len()
            ),
        }
        .into());
    }
    Ok(table)
}

fn evaluation_row(run_id: i64, iteration: u32, hash: ObjectHash, m: &Metrics) -> EvaluationRow {
    EvaluationRow {
        run_id,
        iteration,
        hash: Some(hash),
        wr_p: m.wr_p.as_ref().map(|w| w.score),
        wr_p_ci95: m.wr_p.as_ref().map(|w| w.ci95),
        wr_p_counts: m
            .wr_p
            .as_ref()
            .map(|w| [w.games, w.wins, w.draws, w.losses]),
        err_p: m.err_p,
        mae_v: m.mae_v,
        updated: m.updated,
        seen: m.seen,
        err_p_updated: m.err_p_updated,
        mae_v_updated: m.mae_v_updated,
        err_p_updated_w: m.err_p_updated_weighted,
        mae_v_updated_w: m.mae_v_updated_weighted,
    }
}
