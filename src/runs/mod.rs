//! Runs: one driver for every learner ([`crate::learners::Learner`]) and start policy
//! ([`crate::start::StartPolicy`]), driven by a run spec, every record content-addressed in
//! the store (docs/architecture.md, docs/learners.md).
//!
//! A run is created from a validated [`RunConfig`]: its settings and `run/v1` records are
//! stored and a `runs` row made. Then, before training, the untrained model is evaluated
//! (iteration 0, an evaluation outside the chain), and each iteration i = 1..N:
//!
//! 1. plays M self-play games with the model frozen as the search's leaf evaluator (game g
//!    from stream `self-play(i,g)`, starting where the start policy says), in parallel,
//!    committing each batch of finished games (one pack of records plus `run_games` rows) in one
//!    transaction;
//! 2. asks the learner for the samples of the last K iterations' games (a pure function of
//!    the stored records) and trains it on them;
//! 3. asks the learner for its evaluation (the metrics it declares);
//! 4. commits in one transaction the learner's checkpoint (its objects, of which the driver
//!    stores all for a full checkpoint and only the root otherwise: the rest is derived,
//!    rebuilt by re-training in `restore_at`, docs/store.md), the evaluation, the
//!    `iteration/v1` record (run, i, settings, games, checkpoint root, evaluation, previous)
//!    and the run's new head.
//!
//! Store writes run on a writer thread of their own, fed in commit order through a short
//! queue, so recording overlaps self-play; the loop computes every address itself
//! ([`crate::store::address`]) and compresses what is stored compressed (packs of games,
//! checkpoint chunks: [`crate::store::prepare_pack`], [`crate::store::prepare`]), so the writer
//! only inserts rows, and the loop never waits for a write unless the queue is full. The
//! `iterations` table's `store_seconds` is the writer's busy time for the iteration.
//!
//! Everything random derives from the run seed by named streams and every reduction runs in a
//! fixed order, so the head is a pure function of (variant, settings, seed, N), whatever the
//! thread count. Times, thread counts and sizes go to plain columns.
//!
//! Resume, branch, verify and checkout ([`life`]) rest on this: games are committed in
//! batches as they finish; an iteration's checkpoint, evaluation and record land together;
//! samples are derived from stored game records alone; the coverage count `seen` is derived
//! from the stored games. The loop (`Loop::iterate`) starts from any committed iteration
//! (`StartPoint`, rebuilt from the store) and sends its records to a sink: the writer for a
//! run, a comparison with the stored records for `verify`. A run is locked while a process
//! works on it. The driver knows no learner's records: what a checkpoint holds, how it is
//! described by `checkout` and which objects it references (for `fsck`) are the learner's.

mod iterate;
pub mod legacy;
pub mod life;
mod play;
pub mod records;
pub mod spec;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use crate::eval::Truth;
use crate::game::Turn;
use crate::games::Abilities;
use crate::learners::{Encoded, Learner, LearnerContext, LearnerError, MetricValues};
use crate::record::{GameRecord, ReplayError};
use crate::search::{Search, SearchError};
use crate::selfplay::self_play_game;
use crate::solver::fasthash::FastSet;
use crate::start::StartPolicy;
use crate::store::{
    EvaluationRow, IterationRow, NewRun, ObjectHash, Prepared, PreparedPack, RunGameRow, RunStatus,
    Store, StoreError, address,
};

pub(crate) use iterate::Loop;

pub use legacy::{load_settings, settings_hash, settings_record};
pub use life::{
    Resumed, branch_seed, check_references, checkout_at, create_branch, resume, verify,
};
pub use records::{IterationRecord, RunRecord};
pub use spec::{EvalSettings, LearnerSettings, RunConfig, Settings, SpecError};

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
    #[error(transparent)]
    Learner(#[from] LearnerError),
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
    /// The learner's declared metrics, in declaration order.
    pub metrics: MetricValues,
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
    /// Called with the untrained model's metrics.
    fn baseline(&mut self, metrics: &MetricValues) {
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
    /// The untrained model's metrics (measured by the process that started the run).
    pub baseline: Option<MetricValues>,
    pub last: Option<IterationSummary>,
    /// Wall-clock seconds of the whole run.
    pub seconds: f64,
    /// Seconds the store writer thread was busy (encoding, inserting, committing), wall
    /// clock: on a loaded machine this includes time the thread waited for a core.
    pub store_seconds: f64,
    /// CPU seconds the store writer thread used (its own clock, `CLOCK_THREAD_CPUTIME_ID`):
    /// the writer's work whatever the load. 0 where the platform has no thread clock.
    pub store_cpu_seconds: f64,
    /// Seconds the iteration loop waited on the writer (a full queue, the final flush).
    pub store_wait_seconds: f64,
    /// Seconds from the start of the process's work on the run (lock, solution, rebuilding
    /// the model, window, coverage and reused games from the store) to its first new work.
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
    let settings_record = settings_record(&cfg.settings)?;
    let ids = store.write(|w| {
        let settings = w.put_encoded(&settings_record)?;
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
        model_seed: cfg.seed,
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
    /// The seed of the model's initial parameters (tabular: `table-init`) and of evaluation:
    /// the root run's seed, inherited by branches (they continue the same model).
    pub model_seed: u64,
    /// Iterations committed (a branch's shared ones included) and the head.
    pub done: u32,
    pub head: Option<ObjectHash>,
    /// Whether the untrained model's evaluation is still to be stored.
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
    let out = crate::with_game!(&cfg.game, |g| execute_any(g, cfg, store, work, observer));
    if out.is_err() {
        // Best effort: the error being reported matters more than this one.
        let _ = store.set_run_status(work.run_id, RunStatus::Failed);
    }
    let _ = store.unlock_run(work.run_id);
    out
}

/// The exact solution and test positions the metrics of `cfg` measure against, loaded (or
/// solved and stored first); `None` when the run measures nothing against them or the game
/// has no exact solver.
pub fn truth<G: Abilities>(
    g: &G,
    store: &mut Store,
    cfg: &RunConfig,
) -> Result<Option<Truth<G>>, RunError> {
    if !(cfg.settings.eval.wr_p || cfg.settings.eval.errors) {
        return Ok(None);
    }
    let Some(solution) = g.solution(store) else {
        return Ok(None);
    };
    let solution = solution.map_err(|e| RunError::Solution(e.to_string()))?;
    let t = Truth::new(g, Arc::new(solution), &g.test_positions()).map_err(RunError::Solution)?;
    Ok(Some(t))
}

/// [`execute`] with the run's learner and its truth.
fn execute_any<G: Abilities>(
    g: &G,
    cfg: &RunConfig,
    store: &mut Store,
    work: &Work,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    let truth = truth(g, store, cfg)?;
    crate::with_learner!(cfg.settings.learner.kind, L => {
        execute::<G, L<G>>(g, cfg, truth.as_ref(), store, work, observer)
    })
}

/// Runs iterations `work.done + 1 ..= N` of a locked run (see the module docs), reusing the
/// self-play games of iteration `done + 1` already committed.
pub(crate) fn execute<G: Abilities, L: Learner<G>>(
    g: &G,
    cfg: &RunConfig,
    truth: Option<&Truth<G>>,
    store: &mut Store,
    work: &Work,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    let started = Instant::now();
    let start = start_point::<G, L>(g, store, cfg, work.model_seed, work.head, work.done)?;
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
    let defs: Vec<(&str, &str)> = L::METRICS.iter().map(|d| (d.name, d.description)).collect();
    store.write(|w| w.declare_metrics(&defs))?;
    let restart_seconds = work.since.elapsed().as_secs_f64();
    observer.resumed(work.done, reuse.len() as u32, restart_seconds);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(WRITE_QUEUE);
    let run_id = work.run_id;
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || write_jobs(store, run_id, rx));
        let mut sink = |job: Job, wait: &mut f64| send(&tx, job, wait);
        let loop_ = Loop::<G, L> {
            g,
            cfg,
            truth,
            run_id,
            line: work.line,
            run_hash: work.run_hash,
            last: cfg.iterations,
            baseline: work.baseline,
            model_seed: work.model_seed,
            learner: std::marker::PhantomData,
        };
        let out = loop_.iterate(start, reuse, &mut sink, observer, started);
        drop(tx);
        let t = Instant::now();
        // A writer error explains a failed send, so it comes first.
        let (busy, cpu) = writer
            .join()
            .unwrap_or_else(|_| Err(StoreError::Query("the store writer panicked".into())))?;
        let mut out = out?;
        out.store_wait_seconds += t.elapsed().as_secs_f64();
        out.store_seconds = busy;
        out.store_cpu_seconds = cpu;
        out.seconds = started.elapsed().as_secs_f64();
        out.restart_seconds = restart_seconds;
        Ok(out)
    })
}

/// The learner's state after an iteration: everything the next iteration needs.
pub(crate) struct StartPoint<G: Abilities, L: Learner<G>> {
    pub done: u32,
    pub model: L,
    pub window: VecDeque<Vec<L::Sample>>,
    pub seen: FastSet<G::Key>,
    pub start: Box<dyn StartPolicy<G>>,
    pub previous: Option<ObjectHash>,
    pub previous_snapshot: Option<ObjectHash>,
    /// The metric values of iteration `done` (`None` when `done` is 0).
    pub previous_metrics: Option<MetricValues>,
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

/// The iteration records of one chain, 1-based: a whole chain already read, or one read from
/// its top down only as far as a reader asks ([`Records::down_from`]). `RUN@I` readers need
/// the records from I down to the stored checkpoint they restore from and its window, not the
/// whole chain: each elided record re-hashes its packs' games when read (docs/store.md,
/// "Elided iteration records"), which made reading the 280 records under a late PPPP
/// iteration cost half a second.
pub(crate) enum Records<'a> {
    Whole(&'a [IterationRecord]),
    Down {
        store: &'a Store,
        top: u32,
        /// Newest first: iterations `top`, `top - 1`, ...
        read: Vec<IterationRecord>,
        /// The record below the lowest read (`None`: the chain ends there).
        next: Option<ObjectHash>,
    },
}

impl<'a> Records<'a> {
    /// The chain whose iteration `top` has the record `hash`, read lazily downwards.
    pub(crate) fn down_from(store: &'a Store, hash: ObjectHash, top: u32) -> Records<'a> {
        Records::Down {
            store,
            top,
            read: Vec::new(),
            next: Some(hash),
        }
    }

    /// Iteration `i`'s record (1 <= i <= the top), reading the records above it first. Each
    /// record read must carry its place's iteration number, and only the first may have no
    /// previous record.
    pub(crate) fn get(&mut self, i: u32) -> Result<&IterationRecord, RunError> {
        match self {
            Records::Whole(all) => {
                if i == 0 || i as usize > all.len() {
                    return Err(RunError::Usage(format!(
                        "iteration {i} is not in a chain of {} iteration records",
                        all.len()
                    )));
                }
                Ok(&all[i as usize - 1])
            }
            Records::Down {
                store,
                top,
                read,
                next,
            } => {
                if i == 0 || i > *top {
                    return Err(RunError::Usage(format!(
                        "iteration {i} is not in a chain of {top} iteration records"
                    )));
                }
                while *top - (read.len() as u32) >= i {
                    let want = *top - read.len() as u32;
                    let Some(h) = *next else {
                        return Err(StoreError::Query(format!(
                            "the chain of iteration records ends above iteration {want}"
                        ))
                        .into());
                    };
                    let r: IterationRecord = store.get(&h)?;
                    if r.iteration != want || (want == 1) != r.previous.is_none() {
                        return Err(StoreError::Query(format!(
                            "iteration record {h} says iteration {} (previous {}), but it is \
                             number {want} of its chain",
                            r.iteration,
                            if r.previous.is_some() { "set" } else { "none" }
                        ))
                        .into());
                    }
                    *next = r.previous;
                    read.push(r);
                }
                Ok(&read[(*top - i) as usize])
            }
        }
    }

    /// The snapshot after iteration `i` (`None` for 0, the untrained model).
    fn snapshot(&mut self, i: u32) -> Result<Option<ObjectHash>, RunError> {
        Ok(if i == 0 {
            None
        } else {
            Some(self.get(i)?.snapshot)
        })
    }
}

/// Rebuilds the learner's state after iteration `done` from the store alone: the model from
/// its checkpoint, the training window, the coverage set and the start policy from the stored
/// games (and, for a start policy that wants search-tree states, from their searches
/// re-played with the model each was played with).
pub(crate) fn start_point<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &Store,
    cfg: &RunConfig,
    model_seed: u64,
    head: Option<ObjectHash>,
    done: u32,
) -> Result<StartPoint<G, L>, RunError> {
    let s = &cfg.settings;
    let ctx = s.learner_context(model_seed);
    let records = chain(store, head)?;
    if records.len() != done as usize {
        return Err(StoreError::Query(format!(
            "the run says {done} iterations are committed, but its head's chain has {}",
            records.len()
        ))
        .into());
    }
    let model = restore_at::<G, L>(g, store, s, model_seed, &mut Records::Whole(&records), done)?;
    let previous_snapshot = records.last().map(|r| r.snapshot);
    let previous_metrics = match records.last() {
        Some(r) => Some(L::metric_values(
            &store.get::<L::Evaluation>(&r.evaluation)?,
        )),
        None => None,
    };
    let mut window = VecDeque::new();
    let mut seen: FastSet<G::Key> = FastSet::default();
    let mut start = s.start.policy(g);
    let first_in_window = done.saturating_sub(s.window) + 1;
    let mut before: Option<&IterationRecord> = None;
    for r in &records {
        let games: Vec<GameRecord> = r
            .games
            .iter()
            .map(|h| store.get::<GameRecord>(h))
            .collect::<Result<_, _>>()?;
        // The model the games were played with: for search-state archives only.
        let replay_model = if start.wants_tree_states() {
            Some(restore_at::<G, L>(
                g,
                store,
                s,
                model_seed,
                &mut Records::Whole(&records),
                before.map_or(0, |b| b.iteration),
            )?)
        } else {
            None
        };
        let derived: Vec<Derived<G, L>> = games
            .par_iter()
            .enumerate()
            .map(|(k, rec)| {
                let tree = match &replay_model {
                    Some(m) if rec.start.is_none() => {
                        replay_tree(g, m, cfg, rec, r.iteration, k as u32)?
                    }
                    _ => Vec::new(),
                };
                derive::<G, L>(g, ctx, rec, tree)
            })
            .collect::<Result<_, _>>()?;
        let mut iteration_samples = Vec::new();
        for (k, (d, rec)) in derived.into_iter().zip(&games).enumerate() {
            seen.extend(d.positions);
            start.observe(g, cfg.seed, r.iteration, k as u32, rec, &d.states, &d.tree);
            if r.iteration >= first_in_window {
                iteration_samples.extend(d.samples);
            }
        }
        if r.iteration >= first_in_window {
            window.push_back(iteration_samples);
        }
        before = Some(r);
    }
    Ok(StartPoint {
        done,
        model,
        window,
        seen,
        start,
        previous: head,
        previous_snapshot,
        previous_metrics,
    })
}

/// The model after iteration `done` of the chain `records` (oldest first, at least `done`
/// long; `done` 0: the untrained model, made with `settings`).
///
/// Derived snapshots (docs/store.md): only full checkpoints keep their bytes in the store, so
/// the model is restored from the latest checkpoint at or before `done` that is stored
/// ([`Learner::stored`]) and re-trained from there, iteration by iteration, exactly as the run
/// trained it: iteration i's window of the last K stored games' samples, with the settings its
/// record names. Every rebuilt checkpoint must hash to the snapshot address its iteration
/// record holds, else the store is damaged and the error says which iteration.
pub(crate) fn restore_at<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &Store,
    settings: &Settings,
    model_seed: u64,
    records: &mut Records<'_>,
    done: u32,
) -> Result<L, RunError> {
    let mut base = done;
    while let Some(h) = records.snapshot(base)?
        && !L::stored(store, &h)?
    {
        base -= 1;
    }
    let ctx = settings.learner_context(model_seed);
    let mut model = L::restore(g, ctx, store, records.snapshot(base)?.as_ref())?;
    // The settings of each iteration (a branch's differ from its parent's), read once.
    let mut known: Vec<(ObjectHash, Settings)> = Vec::new();
    let settings_of = |known: &mut Vec<(ObjectHash, Settings)>,
                       records: &mut Records<'_>,
                       i: u32|
     -> Result<usize, RunError> {
        let h = records.get(i)?.settings;
        Ok(match known.iter().position(|(k, _)| *k == h) {
            Some(k) => k,
            None => {
                known.push((h, load_settings(store, &h)?));
                known.len() - 1
            }
        })
    };
    let mut window: VecDeque<(u32, Vec<L::Sample>)> = VecDeque::new();
    // Iteration i + 1's new games are read and replayed on this thread while iteration i
    // trains and hashes its checkpoint on another: neither reads what the other writes, and
    // each iteration trains on exactly the samples it would have sequentially.
    let mut next: Option<(u32, Vec<L::Sample>)> = None;
    for i in base + 1..=done {
        let snapshot = records.get(i)?.snapshot;
        let previous = records.snapshot(i - 1)?;
        let k = settings_of(&mut known, records, i)?;
        let next_k = match i < done {
            true => Some(settings_of(&mut known, records, i + 1)?),
            false => None,
        };
        let s = &known[k].1;
        let ctx = s.learner_context(model_seed);
        let first = i.saturating_sub(s.window) + 1;
        while window.front().is_some_and(|(j, _)| *j < first) {
            window.pop_front();
        }
        window.extend(next.take());
        for j in first..=i {
            if !window.iter().any(|(k, _)| *k == j) {
                window.push_back((j, window_samples::<G, L>(g, store, records, j, ctx)?));
            }
        }
        // Samples in their stored order: iteration by iteration, game by game.
        window.make_contiguous().sort_by_key(|(j, _)| *j);
        let refs: Vec<&L::Sample> = window.iter().flat_map(|(_, v)| v).collect();
        let model_ref = &mut model;
        let (rebuilt, read) = std::thread::scope(|scope| {
            let trainer = scope.spawn(move || {
                model_ref.train(ctx, i, &refs);
                model_ref.checkpoint(g, ctx, i, previous)
            });
            let read = next_k.map(|k| {
                let ctx = known[k].1.learner_context(model_seed);
                window_samples::<G, L>(g, store, records, i + 1, ctx)
            });
            let rebuilt = trainer
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (rebuilt, read)
        });
        let rebuilt = rebuilt?;
        if let Some(read) = read {
            next = Some((i + 1, read?));
        }
        if rebuilt.root != snapshot {
            return Err(StoreError::Corrupt {
                hash: snapshot,
                reason: format!(
                    "iteration {i}'s snapshot is derived (its bytes are not stored), and \
                     re-training it from the stored games gives {}",
                    rebuilt.root
                ),
            }
            .into());
        }
    }
    Ok(model)
}

/// The training samples of iteration `j`'s stored games, in game order (read through their
/// addresses, so a changed byte is named), replayed in parallel.
fn window_samples<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &Store,
    records: &mut Records<'_>,
    j: u32,
    ctx: LearnerContext<'_>,
) -> Result<Vec<L::Sample>, RunError> {
    let games: Vec<GameRecord> = records
        .get(j)?
        .games
        .iter()
        .map(|h| store.get::<GameRecord>(h))
        .collect::<Result<_, _>>()?;
    let per_game: Vec<Vec<L::Sample>> = games
        .par_iter()
        .map(|rec| -> Result<_, RunError> {
            let states = rec.states(g)?;
            let mut out = Vec::new();
            L::samples(g, ctx, rec, &states, &mut out)?;
            Ok(out)
        })
        .collect::<Result<_, _>>()?;
    Ok(per_game.into_iter().flatten().collect())
}

/// What the driver takes from one stored self-play game.
pub(crate) struct Derived<G: Abilities, L: Learner<G>> {
    pub samples: Vec<L::Sample>,
    /// Keys of every decision position on the trajectory (coverage).
    pub positions: Vec<G::Key>,
    pub states: Vec<G::State>,
    /// Decision states of its search trees (only when the start policy wants them).
    pub tree: Vec<G::State>,
}

/// The decision states among a game's `states` (chance and terminal states left out): the
/// positions a run's coverage `seen` counts.
pub(crate) fn decision_states<'a, G: Abilities>(
    g: &'a G,
    states: &'a [G::State],
) -> impl Iterator<Item = &'a G::State> + 'a {
    states
        .iter()
        .filter(|s| matches!(g.turn(s), Turn::Player(_)))
}

fn derive<G: Abilities, L: Learner<G>>(
    g: &G,
    ctx: LearnerContext<'_>,
    record: &GameRecord,
    tree: Vec<G::State>,
) -> Result<Derived<G, L>, RunError> {
    let states = record.states(g)?;
    let mut samples = Vec::new();
    L::samples(g, ctx, record, &states, &mut samples)?;
    let positions = decision_states(g, &states).map(|s| g.key(s)).collect();
    Ok(Derived {
        samples,
        positions,
        states,
        tree,
    })
}

/// The search-tree states of self-play game `game` of iteration `iteration` (a game from the
/// game's start), re-played with `model`, the model it was played with, and the seed of its
/// record (a branch's shared games were played with its parent's).
fn replay_tree<G: Abilities, L: Learner<G>>(
    g: &G,
    model: &L,
    cfg: &RunConfig,
    record: &GameRecord,
    iteration: u32,
    game: u32,
) -> Result<Vec<G::State>, RunError> {
    let mut search = Search::<G>::new(cfg.settings.search)
        .map_err(|e| RunError::Usage(format!("the run's search settings: {e}")))?;
    let mut eval = model.evaluator();
    let mut tree = Vec::new();
    self_play_game(
        g,
        &mut search,
        &mut eval,
        record.seed,
        iteration,
        game,
        None,
        Some(&mut tree),
    )?;
    Ok(tree)
}

/// Whether the bytes of iteration `i`'s full checkpoint are kept: every `every`-th full
/// checkpoint (counting `i / checkpoint_every`) and the run's last planned iteration
/// ([`Learner::KEEP_FULL_EVERY`]).
fn keeps_full(every: u32, checkpoint_every: u32, i: u32, planned: u32) -> bool {
    i == planned || (i / checkpoint_every.max(1)).is_multiple_of(every.max(1))
}

/// A kept checkpoint is stored against the previous kept one's objects (codec 4), except
/// every this-many-th, stored on its own: reading a kept checkpoint then decodes at most
/// `KEY_EVERY - 1` earlier ones. Measured on the whole PPPP literature run (docs/store.md,
/// "Checkpoints against the previous one"): 5 keeps its table bytes under the 1 MB an
/// iteration of issue 10.
const KEY_EVERY: u32 = 5;

/// The objects (root left out) of the last kept checkpoint this loop stored, and how many
/// kept checkpoints back its chain of references reaches one stored on its own.
struct LastKept {
    depth: u32,
    objects: Vec<(ObjectHash, Vec<u8>)>,
}

/// The stored forms of a checkpoint's objects, chosen in parallel off the writer thread. A
/// kept checkpoint's object at position k is tried against the last kept checkpoint's objects
/// at positions k - 3 ..= k: a learner lists a checkpoint's objects in a stable order (a
/// table's chunks by key), and rows added since only shift later ones to higher positions
/// (early in a PPPP run, 20 iterations add about three chunks of rows; adding k + 1 saved
/// nothing, measured). Only how bytes are kept depends on this, never an address: a resumed
/// run starts a new chain.
fn prepare_checkpoint(
    objects: Vec<Encoded>,
    root: ObjectHash,
    kept: bool,
    last: &mut Option<LastKept>,
) -> Vec<Prepared> {
    if !kept {
        return objects.into_iter().map(crate::store::prepare).collect();
    }
    let base = last.take().filter(|l| l.depth + 1 < KEY_EVERY);
    let keep: Vec<(ObjectHash, Vec<u8>)> = objects
        .iter()
        .filter(|o| o.hash != root)
        .map(|o| (o.hash, o.bytes.clone()))
        .collect();
    let prepared = objects
        .into_par_iter()
        .enumerate()
        .map(|(k, e)| match &base {
            Some(b) if e.hash != root => {
                let hi = (k + 1).min(b.objects.len());
                let refs: Vec<(ObjectHash, &[u8])> = b.objects[k.saturating_sub(3).min(hi)..hi]
                    .iter()
                    .map(|(h, v)| (*h, v.as_slice()))
                    .collect();
                crate::store::prepare_against(e, &refs)
            }
            _ => crate::store::prepare(e),
        })
        .collect();
    *last = Some(LastKept {
        depth: base.map_or(0, |b| b.depth + 1),
        objects: keep,
    });
    prepared
}

/// One batch of self-play games ([`GAME_BATCH`] at most) as the writer takes it.
pub(crate) struct GameBatch {
    /// The batch's new records as one pack (`None`: reused games, already stored).
    pub pack: Option<PreparedPack>,
    pub rows: Vec<RunGameRow>,
}

/// Finished games are sent to the writer at least this often during self-play; the rest go
/// with the iteration's own job: cheap self-play then costs one commit an iteration, not one a
/// batch. What is committed when changes nothing that is recorded, only what a crash loses
/// (resume plays it again).
const GAMES_FLUSH: std::time::Duration = std::time::Duration::from_millis(500);

/// Store work queued for the writer thread, in commit order.
pub(crate) enum Job {
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
    Iteration(Box<IterationJob>),
}

pub(crate) struct IterationJob {
    /// The iteration's games not yet sent (those of its last [`GAMES_FLUSH`]).
    pub games: Vec<GameBatch>,
    pub checkpoint: Vec<Prepared>,
    pub evaluation: Encoded,
    pub record: IterationRecord,
    pub evaluation_row: EvaluationRow,
    pub row: IterationRow,
    pub status: RunStatus,
}

/// The write-ahead log a run's writer lets grow before copying it into the store file
/// (64 MiB; [`Store::set_checkpoint_pages`]).
const WRITER_CHECKPOINT_PAGES: u32 = 16_384;

/// Jobs waiting for the writer at most; self-play blocks beyond (memory stays bounded).
const WRITE_QUEUE: usize = 4;

/// CPU seconds the calling thread has used (0 where there is no thread clock).
fn thread_cpu_seconds() -> f64 {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid, writable timespec; the call only writes it.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9;
        }
    }
    0.0
}

/// The writer thread: commits jobs in order; returns its busy seconds (wall clock) and the
/// CPU seconds it used. Jobs already waiting when one arrives are committed with it, in one
/// transaction (a group commit: fewer commits when the loop outpaces the writer; a crash
/// loses at most the group, which resume plays again).
fn write_jobs(
    store: &mut Store,
    run_id: i64,
    rx: std::sync::mpsc::Receiver<Job>,
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
                    Job::Games { iteration, batches } => {
                        add_batches(w, run_id, iteration, &batches, &mut ledger)?;
                    }
                    Job::Baseline(job) => {
                        w.put_encoded(&job.0)?;
                        w.add_evaluation(&job.1)?;
                    }
                    Job::Iteration(mut job) => {
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
                        w.add_evaluation(&job.evaluation_row)?;
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
fn send(tx: &std::sync::mpsc::SyncSender<Job>, job: Job, wait: &mut f64) -> Result<(), RunError> {
    let t = Instant::now();
    let sent = tx.send(job);
    *wait += t.elapsed().as_secs_f64();
    sent.map_err(|_| RunError::Store(StoreError::Query("the store writer stopped".into())))
}

/// Where the jobs of the loop go: the writer (a run) or a comparison (verify).
pub(crate) type Sink<'s> = dyn FnMut(Job, &mut f64) -> Result<(), RunError> + 's;
