//! The network as a [`Learner`]: build, restore, samples, training, checkpoints and
//! evaluation.

use rand::RngExt;

use super::settings::{bad, game_name};
use super::{
    AugmentKind, CheckpointRecord, NETWORK_METRICS, NetEval, NetSample, Network, NetworkEvaluation,
    OptimizerRecord, ParamsRecord, SELF_PLAY_LANES, settings_of,
};
use crate::error::SettingError;
use crate::eval::phases::timed;
use crate::eval::reference::{
    GreedyScore, ReferenceEval, ReferenceSettings, c4_scores, c4_search_scores, greedy_scores,
    solver_scores,
};
use crate::eval::{MetricDef, MetricValues, WinRate, win_rate_of};
use crate::game::{Action, GameResult};
use crate::game_record::{GameEnd, GameRecord, ReplayError};
use crate::games::Abilities;
use crate::learners::{
    Checkpoint, CheckpointRefs, EvalContext, Learner, LearnerContext, LearnerError, ModelSummary,
    Reference, SettingsCheck, TrainReport,
};
use crate::nn::{Example, Losses, Trainer, train_step};
use crate::rng::{stream_fmt, uniform_index};
use crate::store::{Encoded, ObjectHash, Store};

impl<G: Abilities> Learner<G> for Network<G> {
    const NAME: &'static str = "network";
    const METRICS: &'static [MetricDef] = NETWORK_METRICS;
    const SELF_PLAY_LANES: usize = SELF_PLAY_LANES;

    type Sample = NetSample;
    type Eval<'a> = NetEval<'a, G>;
    type Evaluation = NetworkEvaluation;

    fn validate(check: SettingsCheck<'_>) -> Result<(), SettingError> {
        let n = settings_of(check.learner);
        n.validate(check)?;
        if n.augment == AugmentKind::Mirror && G::ABILITIES.mirror.is_none() {
            return Err(bad(
                "augment",
                "mirror",
                &format!(
                    "\"none\" for {}: the game has no mirror image ({} one)",
                    game_name::<G>(),
                    crate::games::families_with_text(crate::games::Ability::Mirror)
                ),
            ));
        }
        let greedy = n.reference.as_ref().map_or(0, |r| r.greedy_games);
        if greedy > 0 && G::ABILITIES.greedy_features.is_none() {
            return Err(SettingError::new(
                "learner.network.reference.greedy_games",
                greedy,
                format!(
                    "0 for {}: the game has no greedy player ({} one)",
                    game_name::<G>(),
                    crate::games::families_with_text(crate::games::Ability::Greedy)
                ),
            ));
        }
        Ok(())
    }

    fn new(g: &G, ctx: LearnerContext<'_>) -> Result<Self, LearnerError> {
        Network::build(g, ctx)
    }

    fn stored(store: &Store, root: &ObjectHash) -> Result<bool, LearnerError> {
        // Every network checkpoint is full: stored whole, never derived.
        let c: CheckpointRecord = store.get(root)?;
        Ok(store.contains(&c.params)? && store.contains(&c.optimizer)?)
    }

    fn restore(
        g: &G,
        ctx: LearnerContext<'_>,
        store: &Store,
        root: Option<&ObjectHash>,
    ) -> Result<Self, LearnerError> {
        let mut net = Network::build(g, ctx)?;
        let Some(root) = root else {
            return Ok(net);
        };
        let c: CheckpointRecord = store.get(root)?;
        let params: ParamsRecord = store.get(&c.params)?;
        let opt: OptimizerRecord = store.get(&c.optimizer)?;
        let n = net.layout.params();
        if params.values.len() != n || !opt.state.fits(&net.optim, n) {
            return Err(LearnerError::Usage(format!(
                "network checkpoint {root}: {} parameters and an optimiser state that do not \
                 fit the run's network of {n} parameters",
                params.values.len()
            )));
        }
        net.params = params.values;
        net.weights = net.layout.weights(&net.params);
        net.opt = opt.state;
        net.losses = Losses {
            policy: c.loss_policy,
            value: c.loss_value,
        };
        net.buffer = c.buffer;
        if net.settings.gate.is_some() {
            // M* as stored; a checkpoint from before gating was on starts it at the model.
            let mut best = net.copy();
            if let Some(h) = &c.best {
                let p: ParamsRecord = store.get(h)?;
                if p.values.len() != n {
                    return Err(LearnerError::Usage(format!(
                        "network checkpoint {root}: M* has {} parameters, the run's network {n}",
                        p.values.len()
                    )));
                }
                best.params = p.values;
                best.weights = best.layout.weights(&best.params);
            }
            net.best = Some(Box::new(best));
        }
        Ok(net)
    }

    fn references(store: &Store, root: &ObjectHash) -> Result<CheckpointRefs, LearnerError> {
        // A network checkpoint root names its weights and optimiser state (docs/network.md).
        let c: CheckpointRecord = store.get(root)?;
        let best = c.best.map(|h| ("best", h));
        let references = [("params", c.params), ("optimizer", c.optimizer)]
            .into_iter()
            .chain(best)
            .map(|(what, hash)| Reference {
                what: what.into(),
                hash,
                stored: true,
            })
            .collect();
        Ok(CheckpointRefs {
            kind: "network checkpoint",
            iteration: c.iteration,
            references,
        })
    }

    fn summary(
        &self,
        g: &G,
        ctx: LearnerContext<'_>,
        iteration: u32,
        with_rows: bool,
    ) -> Result<ModelSummary, LearnerError> {
        if with_rows {
            return Err(LearnerError::Usage(
                "checkout --export PATH writes a table's rows where PATH ends in anything but \
                 .onnx or .safetensors; the network learner has no rows: export it as \
                 PATH.onnx (graph and weights, opset 13) or PATH.safetensors (the weights)"
                    .into(),
            ));
        }
        // Every network checkpoint is full, so checkpointing again gives the stored root.
        let c = Learner::checkpoint(self, g, ctx, iteration, None)?;
        Ok(ModelSummary {
            identity: c.root,
            units: self.parameters() as u64,
            unit: "parameters",
            bytes: c.bytes,
            num_actions: g.num_actions(),
            rows: Vec::new(),
        })
    }

    fn graphs(&self) -> Result<Vec<(&'static str, crate::nn::export::Graph)>, LearnerError> {
        let graph = crate::nn::export::Graph::of(self.layout(), self.params())
            .map_err(|e| LearnerError::Usage(format!("network checkpoint: {e}")))?;
        Ok(vec![("", graph)])
    }

    fn evaluator(&self) -> NetEval<'_, G> {
        self.playing().eval()
    }

    fn greedy_action(&self, _: &G, s: &G::State, past: &[G::State], legal: &[Action]) -> Action {
        self.playing().eval().greedy(s, past, legal)
    }

    fn samples(
        g: &G,
        ctx: LearnerContext<'_>,
        record: &GameRecord,
        states: &[G::State],
        out: &mut Vec<NetSample>,
    ) -> Result<(), ReplayError> {
        let settings = ctx.learner.network.as_ref();
        // The run's input (the model was built with it, so it exists).
        let Ok(enc) = super::input_of(g, ctx.learner) else {
            return Ok(());
        };
        let (retain, augment, skip_draws) = settings.map_or((1.0, AugmentKind::None, false), |n| {
            (n.retain, n.augment, n.skip_draws)
        });
        if skip_draws && record.end == GameEnd::Finished(GameResult::Draw) {
            return Ok(());
        }
        let mirror = g.mirror().filter(|_| augment == AugmentKind::Mirror);
        // Which samples are kept: one uniform draw per sample, in order, from a stream named
        // by the record's own seed and stream, so the kept set is a function of the record.
        let mut keep = (retain < 1.0).then(|| {
            stream_fmt(
                record.seed,
                format_args!("network-retain({})", record.stream),
            )
        });
        let mut first = true;
        let mut push =
            |s: &G::State, past: &[G::State], legal: Vec<Action>, target: Vec<f32>, z: f64| {
                let mut x = vec![0.0; enc.planes().len()];
                enc.encode(s, past, &mut x);
                out.push(NetSample {
                    example: Example {
                        x,
                        legal,
                        target,
                        z: z as f32,
                    },
                    first,
                });
                first = false;
            };
        let mut mirrored = Vec::new();
        crate::learners::searched_decisions(g, record, states, |s, past, legal, counts, z| {
            if let Some(rng) = keep.as_mut()
                && rng.random::<f64>() >= retain
            {
                return;
            }
            let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
            let target: Vec<f32> = counts
                .iter()
                .map(|&c| (f64::from(c) / total.max(1) as f64) as f32)
                .collect();
            if let Some(m) = mirror {
                // The image: its legal actions are the images of `legal`, ascending, each
                // with its preimage's target; the side to move, so z, is the same.
                let mut image: Vec<(Action, f32)> = legal
                    .iter()
                    .zip(&target)
                    .map(|(&a, &t)| ((m.action)(g, s, a), t))
                    .collect();
                image.sort_unstable_by_key(|x| x.0);
                // The history is mirrored too: the image is the game played in the mirror.
                let ms = (m.state)(g, s);
                mirrored.clear();
                let read = crate::game::last_past(past, enc.past());
                mirrored.extend(read.iter().map(|t| (m.state)(g, t)));
                push(s, past, legal.to_vec(), target, z);
                push(
                    &ms,
                    &mirrored,
                    image.iter().map(|x| x.0).collect(),
                    image.iter().map(|x| x.1).collect(),
                    z,
                );
            } else {
                push(s, past, legal.to_vec(), target, z);
            }
        });
        Ok(())
    }

    fn train(
        &mut self,
        ctx: LearnerContext<'_>,
        iteration: u32,
        window: &[&NetSample],
    ) -> TrainReport {
        let lr = self.settings.lr_at(iteration);
        let limit = self
            .settings
            .replay_games
            .map_or(usize::MAX, |r| r as usize);
        let (mut games, mut start) = (0usize, window.len());
        while start > 0 && games < limit {
            start -= 1;
            games += usize::from(window[start].first);
        }
        let buffer: Vec<&Example> = window[start..].iter().map(|s| &s.example).collect();
        self.buffer = buffer.len() as u64;
        if let Some(epochs) = self.settings.train_epochs {
            let report = timed("train", || {
                self.train_epochs(ctx, iteration, lr, epochs, &buffer)
            });
            timed("gate", || self.gate(ctx, iteration));
            return report;
        }
        let steps = if buffer.is_empty() {
            0
        } else {
            self.settings.train_steps
        };
        let mut rng = stream_fmt(ctx.model_seed, format_args!("network-train({iteration})"));
        let b = self.settings.batch_size as usize;
        let mut batch = vec![0usize; b];
        let mut trainer = Trainer::new(&self.layout);
        timed("train", || {
            for _ in 0..steps {
                for x in batch.iter_mut() {
                    *x = uniform_index(&mut rng, buffer.len());
                }
                self.losses = train_step(
                    &self.layout,
                    &mut self.params,
                    &mut self.opt,
                    &self.optim,
                    lr,
                    &buffer,
                    &batch,
                    &mut trainer,
                );
            }
            if steps > 0 {
                self.weights = self.layout.weights(&self.params);
            }
        });
        timed("gate", || self.gate(ctx, iteration));
        TrainReport {
            samples: u64::from(steps) * b as u64,
            units: self.buffer,
            beta: lr,
        }
    }

    fn checkpoint(
        &self,
        _: &G,
        _: LearnerContext<'_>,
        iteration: u32,
        _: Option<ObjectHash>,
    ) -> Result<Checkpoint, LearnerError> {
        timed("checkpoint", || self.encode_checkpoint(iteration))
    }

    fn evaluate(&self, g: &G, ctx: LearnerContext<'_>, e: EvalContext<'_, G>) -> NetworkEvaluation {
        let mut out = NetworkEvaluation {
            iteration: e.iteration,
            wr_p: None,
            err_p: None,
            mae_v: None,
            seen: e.seen,
            loss_policy: self.losses.policy,
            loss_value: self.losses.value,
            buffer: self.buffer,
            reference: None,
            gate: self.gate,
        };
        // The model that plays (M* under gating) is the one measured.
        let net = self.playing();
        let reference = self.settings.reference.clone().unwrap_or_default();
        let c4 = timed("c4_sets", || {
            c4_scores(
                g,
                &reference,
                || net.eval(),
                // Test positions: no game before them.
                |ev, s, legal| ev.greedy_value(s, &[], legal),
            )
        });
        let Some(truth) = e.truth else {
            // An unsolved variant: the reference metrics.
            let solver = timed("solver", || {
                solver_scores(
                    g,
                    &reference,
                    ctx.search,
                    ctx.model_seed,
                    e.iteration,
                    e.previous,
                    || net.eval(),
                )
            });
            let c4_search = timed("c4_search", || {
                c4_search_scores(
                    g,
                    &reference,
                    ctx.search,
                    ctx.model_seed,
                    e.iteration,
                    || net.eval(),
                )
            });
            let greedy = self.greedy_eval(g, ctx, e.iteration, &reference);
            if !solver.is_empty() || c4.is_some() || !c4_search.is_empty() || greedy.is_some() {
                out.reference = Some(ReferenceEval {
                    solver,
                    c4: c4.unwrap_or_default(),
                    c4_search,
                    greedy,
                });
            }
            return out;
        };
        if e.plan.wr_p_games > 0 {
            out.wr_p = Some(timed("wr_p", || {
                win_rate_of(
                    g,
                    truth,
                    ctx.model_seed,
                    e.iteration,
                    e.plan.wr_p_games,
                    || net.eval(),
                    |ev, s, past, legal| ev.greedy(s, past, legal),
                )
            }));
        }
        if e.plan.errors {
            let mut ev = net.eval();
            let (err, mae) = timed("errors", || {
                truth.test_errors(g, |s, legal, priors| ev.priors_value(s, &[], legal, priors))
            });
            out.err_p = Some(err);
            out.mae_v = Some(mae);
        }
        // On a solved variant too, the games against the greedy player when asked for (Liu et
        // al.'s measure beside the exact ones); the other reference metrics stand in for an
        // exact truth, so they are not played here. Off (0 games) nothing changes.
        let greedy = self.greedy_eval(g, ctx, e.iteration, &reference);
        if greedy.is_some() {
            out.reference = Some(ReferenceEval {
                greedy,
                ..ReferenceEval::default()
            });
        }
        out
    }

    fn metric_values(e: &NetworkEvaluation) -> MetricValues {
        let w = e.wr_p.as_ref();
        let values = WinRate::values(w)
            .into_iter()
            .chain([
                e.err_p,
                e.mae_v,
                Some(e.seen as f64),
                Some(e.loss_policy),
                Some(e.loss_value),
                Some(e.buffer as f64),
            ])
            .chain(ReferenceEval::values(e.reference.as_ref()))
            .chain([
                e.gate.map(|g| g.score),
                e.gate.map(|g| f64::from(u8::from(g.promoted))),
            ]);
        NETWORK_METRICS
            .iter()
            .zip(values)
            .map(|(d, v)| (d.name, v))
            .collect()
    }
}

impl<G: Abilities> Network<G> {
    /// The games against the greedy player (none at `greedy_games` 0) of the model that plays
    /// (M* under gating), timed as the phase `greedy`.
    fn greedy_eval(
        &self,
        g: &G,
        ctx: LearnerContext<'_>,
        iteration: u32,
        reference: &ReferenceSettings,
    ) -> Option<GreedyScore> {
        let net = self.playing();
        timed("greedy", || {
            greedy_scores(g, reference, ctx.search, ctx.model_seed, iteration, || {
                net.eval()
            })
        })
    }

    /// The checkpoint of iteration `iteration` (see the module docs of the network learner).
    fn encode_checkpoint(&self, iteration: u32) -> Result<Checkpoint, LearnerError> {
        let params = Encoded::of(&ParamsRecord {
            values: self.params.clone(),
        })?;
        let optimizer = Encoded::of(&OptimizerRecord {
            state: self.opt.clone(),
        })?;
        // M* equal to the trained model (just promoted) is the same object: named, not
        // encoded again.
        let best = match &self.best {
            Some(b) if b.params != self.params => Some(Encoded::of(&ParamsRecord {
                values: b.params.clone(),
            })?),
            _ => None,
        };
        let best_hash = (self.best.as_ref()).map(|_| best.as_ref().map_or(params.hash, |b| b.hash));
        let root = Encoded::of(&CheckpointRecord {
            iteration,
            parameters: self.params.len() as u64,
            params: params.hash,
            optimizer: optimizer.hash,
            loss_policy: self.losses.policy,
            loss_value: self.losses.value,
            buffer: self.buffer,
            best: best_hash,
        })?;
        let root_hash = root.hash;
        let mut objects = vec![params, optimizer];
        objects.extend(best);
        objects.push(root);
        let bytes = objects.iter().map(|o| o.bytes.len() as u64).sum();
        Ok(Checkpoint {
            root: root_hash,
            objects,
            full: true,
            bytes,
        })
    }
}
