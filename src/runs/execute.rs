//! Creating a run and running it to its end: the run's records and row, its lock, the exact
//! solution its metrics need, and [`execute`], which rebuilds the state of the last committed
//! iteration and runs the loop beside the store writer thread.

use std::time::Instant;

use super::exchange::{Current, Exchange};
use super::writer::{WRITE_QUEUE, send, write_commits};
use super::{
    Commit, Loop, Observer, RunConfig, RunError, RunOutcome, RunRecord, Truth, settings_record,
    start_point,
};
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::learners::Learner;
use crate::store::{NewRun, ObjectHash, Outcome, RunStatus, Store};

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
            annotations: cfg.annotations.clone(),
        })?;
        w.set_keep_games(id, &cfg.keep_games.to_string())?;
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
    start_on(store, cfg, spec_toml, threads, None, observer)
}

/// [`start`], its self-play games played by the processes serving `exchange` where one is
/// given (runs/exchange: the same head).
pub fn start_on(
    store: &mut Store,
    cfg: &RunConfig,
    spec_toml: &str,
    threads: u32,
    exchange: Option<&Exchange>,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    cfg.validate()?;
    if let Some(x) = exchange {
        x.set_current(&Current::Starting)?;
    }
    let (run_id, run_hash) = create_run(store, cfg, spec_toml, threads)?;
    observer.created(run_id, &run_hash, cfg.seed);
    let work = LockedRun {
        run_id,
        run_hash,
        line: run_hash,
        model_seed: cfg.seed,
        done: 0,
        head: None,
        baseline: true,
        since: Instant::now(),
        exchange: exchange.cloned(),
    };
    run_locked(store, cfg, &work, observer)
}

/// What a process works on: a run (locked) from its last committed iteration.
#[derive(Clone)]
pub(crate) struct LockedRun {
    pub run_id: i64,
    pub run_hash: ObjectHash,
    /// The `run` field of the run's iteration records: the run record with `parent` left out
    /// (for a root run, the run record itself).
    pub line: ObjectHash,
    /// The seed of the model's initial parameters (tabular: `table-init`) and of evaluation:
    /// the root run's seed, inherited by branches (they continue the same model).
    pub(crate) model_seed: u64,
    /// Iterations committed (a branch's shared ones included) and the head.
    pub done: u32,
    pub head: Option<ObjectHash>,
    /// Whether the untrained model's evaluation is still to be stored.
    pub baseline: bool,
    /// When this process began working on the run.
    pub since: Instant,
    /// Where self-play games are played: by the processes serving this exchange
    /// (runs/exchange), or here (`None`).
    pub exchange: Option<Exchange>,
}

/// The build this process runs, captured by build.rs at compile time (docs/store.md,
/// "Provenance").
fn this_build() -> crate::store::Build {
    crate::store::Build {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("TABULA_GIT_COMMIT"),
        tree: env!("TABULA_GIT_TREE"),
        profile: env!("TABULA_BUILD_PROFILE"),
    }
}

/// The build in one line (version, commit, tree, profile): what a task of an exchange
/// carries, so a worker of another build refuses it.
pub(crate) fn build_line() -> String {
    let b = this_build();
    format!("{} {} {} {}", b.version, b.commit, b.tree, b.profile)
}

/// Runs a locked run to its end, releasing the lock whatever happens.
pub(crate) fn run_locked(
    store: &mut Store,
    cfg: &RunConfig,
    work: &LockedRun,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    // Provenance (docs/store.md): which build, host and command line worked on the run,
    // from which iteration to which. Best effort: it never stops a run.
    let session = store
        .begin_session(
            &this_build(),
            work.run_id,
            work.done,
            rayon::current_num_threads(),
        )
        .ok();
    let out = crate::with_game!(&cfg.game, |g| execute_any(g, cfg, store, work, observer));
    if out.is_err() {
        // Best effort: the error being reported matters more than this one.
        let _ = store.set_run_status(work.run_id, RunStatus::Failed);
    }
    if let Some(s) = &session {
        let (done, outcome) = match &out {
            Ok(o) if o.iterations >= cfg.iterations => (o.iterations, Outcome::Done),
            Ok(o) => (o.iterations, Outcome::Stopped),
            Err(_) => {
                let row = store.find_run(&work.run_id.to_string());
                let done = row.ok().flatten().map_or(work.done, |r| r.iterations_done);
                (done, Outcome::Failed)
            }
        };
        let _ = store.end_session(s, done, outcome);
    }
    let _ = store.unlock_run(work.run_id);
    if let Some(x) = &work.exchange {
        // Its workers stop; best effort: a worker that does not hear it stops when idle.
        let _ = x.set_current(&Current::Finished);
        x.remove_tasks();
    }
    out
}

/// [`execute`] with the run's learner and its truth, one stage after another
/// (runs/stages.rs): each stage's iterations run with the settings in force in it, and the
/// next stage starts from the store as a resumed run does.
fn execute_any<G: Abilities>(
    g: &G,
    cfg: &RunConfig,
    store: &mut Store,
    work: &LockedRun,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    let truth = super::truth(g, store, cfg)?;
    let (mut done, mut head, mut baseline) = (work.done, work.head, work.baseline);
    let mut first: Option<RunOutcome> = None;
    loop {
        let stage = cfg.in_force(done + 1)?;
        let last = cfg.stage_end(done + 1);
        if let Some((k, _)) = cfg.settings.stage_of(done + 1) {
            observer.stage(k, &cfg.settings.stages[k].name, done + 1, last);
        }
        let part = LockedRun {
            done,
            head,
            baseline,
            ..work.clone()
        };
        // Crossing into a stage rebuilds from the store, but it is no resumption to report.
        let mut crossing = Crossing(&mut *observer);
        let observer: &mut dyn Observer = match first {
            Some(_) => &mut crossing,
            None => observer,
        };
        let out = crate::with_learner!(stage.settings.learner.kind, L => {
            execute::<G, L<G>>(g, &stage, truth.as_ref(), store, &part, last, observer)
        })?;
        (done, head, baseline) = (last.max(done), out.head, false);
        let out = match first.take() {
            None => out,
            Some(f) => joined(f, out),
        };
        if done >= cfg.iterations {
            // What the store keeps of the finished run (docs/store.md, "Keeping fewer games").
            let row = super::find(store, &work.run_id.to_string())?;
            crate::with_learner!(stage.settings.learner.kind, L => {
                super::retention::apply::<G, L<G>>(g, store, &stage, &row)
            })?;
            return Ok(out);
        }
        first = Some(out);
    }
}

/// An observer at a stage boundary crossed in the same process: everything but the
/// resumption is reported.
struct Crossing<'o>(&'o mut dyn Observer);

impl Observer for Crossing<'_> {
    fn created(&mut self, run_id: i64, run_hash: &ObjectHash, seed: u64) {
        self.0.created(run_id, run_hash, seed);
    }
    fn stage(&mut self, index: usize, name: &str, first: u32, last: u32) {
        self.0.stage(index, name, first, last);
    }
    fn games_done(&mut self, iteration: u32, done: u32, of: u32) {
        self.0.games_done(iteration, done, of);
    }
    fn baseline(&mut self, metrics: &crate::eval::MetricValues) {
        self.0.baseline(metrics);
    }
    fn iteration_done(&mut self, summary: &super::IterationSummary) {
        self.0.iteration_done(summary);
    }
}

/// The outcome of two consecutive stages' work as one.
fn joined(a: RunOutcome, b: RunOutcome) -> RunOutcome {
    RunOutcome {
        resumed_from: a.resumed_from,
        baseline: a.baseline,
        last: b.last.or(a.last),
        seconds: a.seconds + b.seconds,
        store_seconds: a.store_seconds + b.store_seconds,
        store_cpu_seconds: a.store_cpu_seconds + b.store_cpu_seconds,
        store_wait_seconds: a.store_wait_seconds + b.store_wait_seconds,
        restart_seconds: a.restart_seconds,
        ..b
    }
}

/// Runs iterations `work.done + 1 ..= last` of a locked run (see the module docs), reusing the
/// self-play games of iteration `done + 1` already committed; `cfg` holds the settings in
/// force in them (one stage's).
pub(crate) fn execute<G: Abilities, L: Learner<G>>(
    g: &G,
    cfg: &RunConfig,
    truth: Option<&Truth<G>>,
    store: &mut Store,
    work: &LockedRun,
    last: u32,
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
                return Err(RunError::Inconsistent(format!(
                    "run {} iteration {}: stored games are not a prefix (game {game} at {k})",
                    work.run_id,
                    work.done + 1
                )));
            }
            reuse.push(store.get::<GameRecord>(&h)?);
        }
    }
    let defs: Vec<(&str, &str)> = L::METRICS.iter().map(|d| (d.name, d.description)).collect();
    // The settings in force (a stage's own, which the run record does not hold): its
    // iteration records name them, so they are stored (an object already there is kept).
    let in_force = settings_record(&cfg.settings)?;
    store.write(|w| {
        w.declare_metrics(&defs)?;
        w.put_encoded(&in_force).map(|_| ())
    })?;
    let restart_seconds = work.since.elapsed().as_secs_f64();
    observer.resumed(work.done, reuse.len() as u32, restart_seconds);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Commit>(WRITE_QUEUE);
    let run_id = work.run_id;
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || write_commits(store, run_id, rx));
        let mut sink = |commit: Commit, wait: &mut f64| send(&tx, commit, wait);
        let loop_ = Loop::<G, L> {
            g,
            cfg,
            truth,
            run_id,
            line: work.line,
            run_hash: work.run_hash,
            last,
            baseline: work.baseline,
            model_seed: work.model_seed,
            recorded: None,
            exchange: work.exchange.as_ref(),
            learner: std::marker::PhantomData,
        };
        let out = loop_.iterate(start, reuse, &mut sink, observer, started);
        drop(tx);
        let t = Instant::now();
        // A writer error explains a failed send, so it comes first.
        let (busy, cpu) = match writer.join() {
            Ok(written) => written?,
            Err(_) => return Err(RunError::WriterPanicked),
        };
        let mut out = out?;
        out.store_wait_seconds += t.elapsed().as_secs_f64();
        out.store_seconds = busy;
        out.store_cpu_seconds = cpu;
        out.seconds = started.elapsed().as_secs_f64();
        out.restart_seconds = restart_seconds;
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::this_build;

    #[test]
    fn the_build_is_known_in_a_checkout() {
        let b = this_build();
        assert!(
            b.commit == "unknown"
                || (b.commit.len() == 40 && b.commit.chars().all(|c| c.is_ascii_hexdigit())),
            "{b:?}"
        );
        assert!(["clean", "dirty", "unknown"].contains(&b.tree), "{b:?}");
        assert!(!b.profile.is_empty());
    }
}
