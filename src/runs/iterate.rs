//! The iteration loop (see the module docs of [`crate::runs`]): from a [`StartPoint`], each
//! iteration plays its self-play games ([`Loop::play`], play.rs), takes them in (the start
//! policy, the coverage set and the samples), trains and checkpoints the model, evaluates it
//! and commits the iteration. Every record goes to a [`CommitSink`] in commit order: the writer
//! thread for a run, a comparison with the stored records for `verify`. The state carried
//! from one iteration to the next is the [`StartPoint`] itself.

use std::time::Instant;

use super::checkpoint::{DeltaBase, keeps_full, prepare_checkpoint};
use super::play::IterationGames;
use super::records::NotMeasured;
use super::writer::IterationCommit;
use super::{
    Commit, CommitSink, GameYield, IterationRecord, IterationSummary, Observer, RunConfig,
    RunError, RunOutcome, StartPoint, Truth, settings_hash,
};
use crate::eval::MetricValues;
use crate::eval::MetricsPlan;
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::learners::{Checkpoint, EvalContext, Learner, LearnerContext, TrainReport};
use crate::store::{Encoded, EvaluationRow, IterationRow, ObjectHash, RunStatus, address};

/// The iteration loop's fixed inputs.
pub(crate) struct Loop<'a, G: Abilities, L: Learner<G>> {
    pub g: &'a G,
    pub cfg: &'a RunConfig,
    pub truth: Option<&'a Truth<G>>,
    pub run_id: i64,
    pub run_hash: ObjectHash,
    pub line: ObjectHash,
    /// The last iteration to run.
    pub last: u32,
    /// Whether to measure and emit the untrained model's evaluation first.
    pub baseline: bool,
    /// The root run's seed: the model's initial parameters and evaluation streams.
    pub(crate) model_seed: u64,
    /// The stored chain being re-executed (`verify`): an iteration of a timed budget plays
    /// exactly the games its record lists (runs/budget.rs). `None`: a run's own work.
    pub recorded: Option<&'a [IterationRecord]>,
    /// Where self-play games are played: by the processes serving this exchange
    /// (runs/exchange), or here (`None`).
    pub exchange: Option<&'a super::Exchange>,
    pub learner: std::marker::PhantomData<L>,
}

/// Where the loop's jobs go: the sink, the seconds spent waiting on it, and the last kept
/// checkpoint this loop stored (the one the next kept checkpoint is stored against).
pub(super) struct Outbox<'x, 's> {
    sink: &'x mut CommitSink<'s>,
    pub wait: f64,
    delta_base: Option<DeltaBase>,
}

impl Outbox<'_, '_> {
    /// Hands `job` to the sink, adding the time blocked to `wait`.
    pub(super) fn send(&mut self, job: Commit) -> Result<(), RunError> {
        (self.sink)(job, &mut self.wait)
    }
}

/// The model trained on an iteration's window, and its checkpoint.
struct Trained {
    report: TrainReport,
    /// The objects to store: all of a kept checkpoint's, only the root otherwise.
    checkpoint: Checkpoint,
    /// Whether the checkpoint's bytes are kept ([`keeps_full`]).
    kept: bool,
    seconds: f64,
}

/// An evaluation of the model: its metric values and its record, encoded. `metrics` is
/// `None` for an iteration the evaluation interval skips (`[eval] every`): its record is
/// [`NotMeasured`] and it has no `evaluations` row.
struct Evaluated {
    metrics: Option<MetricValues>,
    encoded: Encoded,
    seconds: f64,
}

impl Evaluated {
    /// The evaluation of an iteration that is not measured.
    fn skipped() -> Evaluated {
        Evaluated {
            metrics: None,
            encoded: NotMeasured::encoded(),
            seconds: 0.0,
        }
    }
}

impl<'a, G: Abilities, L: Learner<G>> Loop<'a, G, L> {
    /// Runs iterations `start.done + 1 ..= self.last`; every record goes to `sink` in commit
    /// order. `reuse` holds the first self-play games of iteration `start.done + 1`, already
    /// committed: they are used as they are, not re-played or re-sent.
    pub(crate) fn iterate(
        &self,
        mut start: StartPoint<G, L>,
        mut reuse: Vec<GameRecord>,
        sink: &mut CommitSink<'_>,
        observer: &mut dyn Observer,
        started: Instant,
    ) -> Result<RunOutcome, RunError> {
        let settings = settings_hash(&self.cfg.settings)?;
        let mut out = Outbox {
            sink,
            wait: 0.0,
            delta_base: None,
        };
        let baseline = match self.baseline {
            true => Some(self.baseline(&start.model, &mut out, observer)?),
            false => None,
        };
        let mut last = None;
        let resumed_from = start.done;
        for i in start.done + 1..=self.last {
            let (t_self, wait_before) = (Instant::now(), out.wait);
            let reused = std::mem::take(&mut reuse);
            let mut games = self.play(&start, i, reused, &mut out, observer)?;
            let samples = self.take_in(&mut start, i, std::mem::take(&mut games.derived));
            games.seconds = t_self.elapsed().as_secs_f64() - (out.wait - wait_before);
            let trained = self.train_and_checkpoint(&mut start, i, samples)?;
            let evaluated = self.evaluate_at(&start, i)?;
            let done = (games, trained, evaluated);
            let summary = self.commit(&mut start, i, settings, done, &mut out)?;
            observer.iteration_done(&summary);
            last = Some(summary);
        }
        Ok(RunOutcome {
            run_id: self.run_id,
            run_hash: self.run_hash,
            head: start.previous,
            iterations: self.last,
            resumed_from,
            baseline,
            last,
            seconds: started.elapsed().as_secs_f64(),
            store_seconds: 0.0,
            store_cpu_seconds: 0.0,
            store_wait_seconds: out.wait,
            restart_seconds: 0.0,
        })
    }

    /// What the learner is told of its run.
    pub(super) fn ctx(&self) -> LearnerContext<'a> {
        self.cfg.learner_context(self.model_seed)
    }

    /// The untrained model's evaluation, sent to the sink; returns its metric values.
    fn baseline(
        &self,
        model: &L,
        out: &mut Outbox<'_, '_>,
        observer: &mut dyn Observer,
    ) -> Result<MetricValues, RunError> {
        let e = self.evaluate(model, 0, 0, None)?;
        let metrics = e.metrics.unwrap_or_default();
        let row = evaluation_row(self.run_id, 0, e.encoded.hash, &metrics);
        out.send(Commit::Baseline(Box::new((e.encoded, row))))?;
        observer.baseline(&metrics);
        Ok(metrics)
    }

    /// Iteration `i`'s evaluation of the trained model, or [`Evaluated::skipped`] when the
    /// evaluation interval skips `i` ([`crate::runs::EvalSettings::measures`]: every K-th
    /// iteration and the run's last planned one are measured). The metrics an accumulating
    /// metric continues from are the last *measured* iteration's (from iteration 1 on).
    fn evaluate_at(&self, start: &StartPoint<G, L>, i: u32) -> Result<Evaluated, RunError> {
        if !self.cfg.settings.eval.measures(i, self.cfg.iterations) {
            return Ok(Evaluated::skipped());
        }
        let previous = start.previous_metrics.as_ref().filter(|_| i >= 2);
        self.evaluate(&start.model, i, start.coverage.seen.len() as u64, previous)
    }

    /// The start policy and the coverage set take in iteration `i`'s games, in game order;
    /// returns their training samples in the same order.
    fn take_in(
        &self,
        start: &mut StartPoint<G, L>,
        i: u32,
        derived: Vec<(GameRecord, GameYield<G, L>)>,
    ) -> Vec<L::Sample> {
        let mut samples = Vec::new();
        let (g, seed) = (self.g, self.cfg.seed);
        // The model that played the iteration, one evaluator for all its games.
        let mut eval = start.model.evaluator();
        for (k, (record, d)) in derived.into_iter().enumerate() {
            let slot = crate::rng::GameSlot::new(seed, i, k as u32);
            start
                .start
                .observe(g, slot, &record, &d.states, &d.tree, &mut eval);
            start.coverage.extend(d.positions);
            samples.extend(d.samples);
        }
        samples
    }

    /// Trains the model on the window of the last K iterations' samples (`samples`, iteration
    /// `i`'s, joins it) and takes its checkpoint, of which only the root is stored unless its
    /// bytes are kept.
    fn train_and_checkpoint(
        &self,
        start: &mut StartPoint<G, L>,
        i: u32,
        samples: Vec<L::Sample>,
    ) -> Result<Trained, RunError> {
        let (s, t) = (&self.cfg.settings, Instant::now());
        start.window.push_back(samples);
        while start.window.len() > s.window as usize {
            start.window.pop_front();
        }
        let refs: Vec<&L::Sample> = start.window.iter().flatten().collect();
        let report = start.model.train(self.ctx(), i, &refs);
        drop(refs);
        let previous = start.previous_snapshot;
        let mut checkpoint = start.model.checkpoint(self.g, self.ctx(), i, previous)?;
        let kept = checkpoint.full
            && keeps_full(
                L::KEEP_FULL_EVERY,
                s.checkpoint_every,
                i,
                self.cfg.iterations,
            );
        if !kept {
            // Derived snapshot (docs/store.md): only the root is stored; the rest is
            // rebuilt from the games by `restore_at`, checked against the root's address.
            checkpoint.objects.retain(|o| o.hash == checkpoint.root);
            checkpoint.bytes = checkpoint
                .objects
                .iter()
                .map(|o| o.bytes.len() as u64)
                .sum();
        }
        Ok(Trained {
            report,
            checkpoint,
            kept,
            seconds: t.elapsed().as_secs_f64(),
        })
    }

    /// The model's evaluation at `iteration` (0: untrained), `seen` positions covered so far
    /// and the previous iteration's metrics (`previous`, from iteration 2 on).
    fn evaluate(
        &self,
        model: &L,
        iteration: u32,
        seen: u64,
        previous: Option<&MetricValues>,
    ) -> Result<Evaluated, RunError> {
        let t = Instant::now();
        let plan = MetricsPlan {
            wr_p_games: match self.cfg.settings.eval.wr_p {
                true => self.cfg.settings.eval.games,
                false => 0,
            },
            errors: self.cfg.settings.eval.errors,
        };
        let e = EvalContext {
            truth: self.truth,
            plan,
            iteration,
            seen,
            previous,
        };
        let evaluation = model.evaluate(self.g, self.ctx(), e);
        let metrics = L::metric_values(&evaluation);
        let encoded = Encoded::of(&evaluation)?;
        Ok(Evaluated {
            metrics: Some(metrics),
            encoded,
            seconds: t.elapsed().as_secs_f64(),
        })
    }

    /// Commits iteration `i` (settings record `settings`): its record's address is computed
    /// here, the sink commits its games, checkpoint, evaluation, record and rows in one
    /// transaction. `start` moves on to the iteration.
    fn commit(
        &self,
        start: &mut StartPoint<G, L>,
        i: u32,
        settings: ObjectHash,
        (mut games, trained, evaluated): (IterationGames<G, L>, Trained, Evaluated),
        out: &mut Outbox<'_, '_>,
    ) -> Result<IterationSummary, RunError> {
        // The games kept (M, or what a budget kept), counted before the list moves out.
        let (m, snapshot) = (games.hashes.len() as u32, trained.checkpoint.root);
        games.kept = m;
        let (evaluation, report) = (evaluated.encoded.hash, &trained.report);
        let record = IterationRecord {
            run: self.line,
            iteration: i,
            settings,
            games: std::mem::take(&mut games.hashes),
            snapshot,
            evaluation,
            previous: start.previous,
        };
        let head = address(&record)?.0;
        let status = match i == self.cfg.iterations {
            true => RunStatus::Done,
            false => RunStatus::Running,
        };
        let row = self.iteration_row(i, head, &games, &trained, &evaluated);
        let wait_before = out.wait;
        // Compressed here (in parallel), not on the writer thread.
        let objects = trained.checkpoint.objects;
        let checkpoint = prepare_checkpoint(objects, snapshot, trained.kept, &mut out.delta_base);
        let coverage = start.coverage.commit()?;
        out.send(Commit::Iteration(Box::new(IterationCommit {
            games: games.held,
            checkpoint,
            coverage,
            evaluation: evaluated.encoded,
            record,
            evaluation_row: (evaluated.metrics.as_ref())
                .map(|m| evaluation_row(self.run_id, i, evaluation, m)),
            row,
            status,
        })))?;
        start.done = i;
        start.previous = Some(head);
        start.previous_snapshot = Some(snapshot);
        // An unmeasured iteration leaves the last measured one's metrics in place.
        if let Some(m) = &evaluated.metrics {
            start.previous_metrics = Some(m.clone());
        }
        Ok(IterationSummary {
            iteration: i,
            head,
            metrics: evaluated.metrics.unwrap_or_default(),
            games: m,
            samples: report.samples,
            beta: report.beta,
            self_play_seconds: games.seconds,
            training_seconds: trained.seconds,
            evaluation_seconds: evaluated.seconds,
            store_wait_seconds: out.wait - wait_before,
        })
    }
    /// The `iterations` row of iteration `i` (record `head`): what it stored and how long
    /// each phase took (`store_seconds` is the writer's to fill in).
    fn iteration_row(
        &self,
        i: u32,
        head: ObjectHash,
        games: &IterationGames<G, L>,
        trained: &Trained,
        evaluated: &Evaluated,
    ) -> IterationRow {
        let report = &trained.report;
        IterationRow {
            run_id: self.run_id,
            iteration: i,
            hash: head,
            snapshot: trained.checkpoint.root,
            evaluation: evaluated.encoded.hash,
            snapshot_full: trained.checkpoint.full,
            snapshot_kept: trained.kept,
            games: games.kept,
            samples: report.samples,
            rows_trained: report.units,
            beta: report.beta,
            self_play_seconds: games.seconds,
            training_seconds: trained.seconds,
            evaluation_seconds: evaluated.seconds,
            store_seconds: 0.0,
            snapshot_bytes: trained.checkpoint.bytes,
            games_bytes: games.bytes,
        }
    }
}

/// The `evaluations` row of an evaluation and its metric values.
fn evaluation_row(
    run_id: i64,
    iteration: u32,
    hash: ObjectHash,
    values: &MetricValues,
) -> EvaluationRow {
    EvaluationRow {
        run_id,
        iteration,
        hash: Some(hash),
        values: values.clone(),
    }
}
