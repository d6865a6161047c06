//! Runs: one driver for every learner ([`crate::learners::Learner`]) and start policy
//! ([`crate::start::StartPolicy`]), driven by a run spec, every record content-addressed in
//! the store (docs/architecture.md, docs/learners.md).
//!
//! A run is created from a validated [`RunConfig`]: its settings and `run/v1` records are
//! stored and a `runs` row made. Then, before training, the untrained model is evaluated
//! (iteration 0, an evaluation outside the chain), and each iteration i = 1..N:
//!
//! 1. plays M self-play games (or, with a budget, the shortest prefix of games reaching it:
//!    budget.rs) with the model frozen as the search's leaf evaluator (game g
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
//! Resume, branch, verify, replay and checkout rest on this: games are committed in batches
//! as they finish; an iteration's checkpoint, evaluation and record land together; samples
//! are derived from stored game records alone; the coverage count `seen` is derived from the
//! stored games. The loop (`Loop::iterate`) starts from any committed iteration
//! (`StartPoint`, rebuilt from the store) and sends its records to a sink: the writer for a
//! run, a comparison with the stored records for `verify`. A run is locked while a process
//! works on it. The driver knows no learner's records: what a checkpoint holds, how it is
//! described by `checkout` and which objects it references (for `fsck`) are the learner's.
//!
//! Where things are:
//! - execute.rs: creating a run and running it to its end (the writer thread beside the loop);
//! - iterate.rs, play.rs: the iteration loop and its phases, self-play first;
//! - writer.rs: the store writer thread and what the loop sends it; checkpoint.rs: how a
//!   checkpoint's bytes are stored (kept or derived, against the previous kept one);
//! - chain.rs: a chain of iteration records; restore.rs: the state after any committed
//!   iteration, rebuilt from the store; game_yield.rs: what the driver takes from a game;
//! - stored_run.rs (finding a run, its configuration), resume.rs, branch.rs, verify.rs,
//!   replay.rs, checkout.rs (a model at an iteration) and references.rs (fsck's reference
//!   check);
//! - spec.rs (the run spec), settings_codec.rs (the settings records), records.rs (`run/v1`,
//!   `iteration/v1`), truth.rs (the exact solution the metrics need), budget.rs (self-play
//!   budgets per iteration instead of M, and their prefix rule: docs/budgets.md).

mod branch;
pub mod budget;
mod chain;
mod checkout;
mod checkpoint;
mod exchange;
mod execute;
mod game_yield;
mod iterate;
pub mod overrides;
mod play;
pub mod progress;
pub mod records;
mod references;
mod replay;
mod restore;
mod resume;
mod retention;
mod settings_codec;
pub mod spec;
mod stages;
mod stored_run;
mod truth;
mod verify;
mod writer;

use crate::eval::MetricValues;
use crate::eval::Truth;
use crate::game_record::ReplayError;
use crate::learners::LearnerError;
use crate::search::SearchError;
use crate::store::{ObjectHash, StoreError};

pub use branch::{branch_name, branch_seed, create_branch};
pub use budget::{Budget, BudgetKind};
pub use chain::chain;
pub use checkout::{
    CheckedOut, ExportFormat, ExportedModel, checkout_at, export_model_at, load_model, model_at,
    model_errors, visited_positions,
};
pub use exchange::{Exchange, MIN_LEASE, SlicePlayed, WorkOptions, WorkSummary, work};
pub use execute::{create_run, start, start_on};
pub use overrides::{Overridden, SELF_PLAY_KEYS, apply_overrides, setting_keys, settings_json};
pub use records::{IterationRecord, RunRecord};
pub use references::{
    Dangling, References, check_derived_rows, check_references, check_run_rows, reachable,
};
pub use replay::{SelfPlayReplay, replay_self_play};
pub use resume::{Resumed, resume, resume_on};
pub use retention::{KeepChanged, KeepGames, Retained, change_keep_games};
pub(crate) use settings_codec::{load_settings, settings_hash, settings_record};
pub use spec::{EvalSettings, LearnerSettings, RunConfig, Settings, SpecError};
pub use stages::Stage;
pub use stored_run::{find, line_of, load_config, model_seed_of};
pub use verify::{Verified, verify};

pub(crate) use chain::Chain;
pub(crate) use execute::{LockedRun, run_locked};
pub(crate) use game_yield::{GameYield, decision_states, game_yield, replay_tree};
pub(crate) use iterate::Loop;
pub(crate) use restore::{StartPoint, restore_at, start_point};
pub use truth::truth;
pub(crate) use writer::{Commit, CommitSink};

/// Self-play games committed per transaction (a batch is also the unit of progress reports).
pub(crate) const GAME_BATCH: u32 = 256;

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
    /// A run's stored records do not fit together (a damaged or hand-edited store): an
    /// iteration record out of its place in the chain, a run row that disagrees with its
    /// head's chain, stored games that are not a prefix. The text says where.
    #[error("{0}")]
    Inconsistent(String),
    /// The store writer thread stopped taking commits: it failed, and its own error (reported
    /// instead where there is one) says why.
    #[error("the store writer stopped")]
    WriterStopped,
    #[error("the store writer panicked")]
    WriterPanicked,
    /// The exchange of a run spread over worker processes (runs/exchange): a file that
    /// cannot be read or written, a task a worker cannot take. The text says which.
    #[error("exchange: {0}")]
    Exchange(String),
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
    /// Called when a run with stages (runs/stages.rs) starts working in stage `index`
    /// (0-based) named `name`, at iteration `first`, the stage's last being `last`.
    fn stage(&mut self, index: usize, name: &str, first: u32, last: u32) {
        let _ = (index, name, first, last);
    }
    /// Called after each committed batch of self-play games.
    fn games_done(&mut self, iteration: u32, done: u32, of: u32) {
        let _ = (iteration, done, of);
    }
    /// Called with the untrained model's metrics.
    fn baseline(&mut self, metrics: &MetricValues) {
        let _ = metrics;
    }
    /// Called after each iteration, once its records are handed to the store's writer
    /// thread, which commits them a moment later: the store, not this call, says what is
    /// committed (a process killed right after it may resume before that iteration).
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
    /// The run's last iteration (its planned iterations).
    pub iterations: u32,
    /// Iterations committed before this process began (a resumed run's earlier work, a
    /// branch's inherited iterations): this process ran `resumed_from + 1 ..= iterations`.
    pub resumed_from: u32,
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
