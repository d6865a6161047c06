//! MuZero as a [`Learner`]: build, restore, samples, training, checkpoints, planning and
//! evaluation.

use super::MUZERO_METRICS;
use super::eval::MuEval;
use super::model::{MuLosses, MuZero, Net};
use super::records::{MuCheckpointRecord, MuZeroEvaluation};
use super::settings::settings_of;
use super::train::MuTrainer;
use super::unroll::{MuSample, game_samples};
use crate::error::SettingError;
use crate::eval::phases::timed;
use crate::eval::{MetricDef, MetricValues, WinRate, win_rate_of};
use crate::game::Action;
use crate::game_record::{GameRecord, ReplayError};
use crate::games::Abilities;
use crate::learners::network::{OptimizerRecord, ParamsRecord};
use crate::learners::{
    Checkpoint, CheckpointRefs, EvalContext, Learner, LearnerContext, LearnerError, ModelSummary,
    Reference, SettingsCheck, TrainReport,
};
use crate::rng::{StreamRng, stream_fmt, uniform_index};
use crate::search::{SearchConfig, SearchError, SearchResult};
use crate::store::{Encoded, ObjectHash, Store};

/// The networks' names, in checkpoint order (the last three Stochastic MuZero's).
/// How the dynamics graph's `value` output reads (docs/muzero.md, "Checkpoints and export").
const REWARD_WORDS: &str = "linear: the reward r, on the [-1, 1] scale (not squashed)";

/// Whether network `name`'s value output is linear: g's is the reward, trained and read as
/// the raw output; every other value head is read through tanh.
fn linear_value(name: &str) -> bool {
    name == "dynamics"
}

const NETS: [&str; 6] = [
    "representation",
    "dynamics",
    "prediction",
    "afterstate_dynamics",
    "afterstate_prediction",
    "encoder",
];

impl<G: Abilities> Learner<G> for MuZero<G> {
    const NAME: &'static str = "muzero";
    const METRICS: &'static [MetricDef] = MUZERO_METRICS;
    const PLANS: bool = true;

    type Sample = MuSample;
    type Eval<'a> = MuEval<'a, G>;
    type Evaluation = MuZeroEvaluation;

    fn validate(check: SettingsCheck<'_>) -> Result<(), SettingError> {
        settings_of(check.learner).validate(check)
    }

    fn new(g: &G, ctx: LearnerContext<'_>) -> Result<Self, LearnerError> {
        MuZero::build(g, ctx)
    }

    fn stored(store: &Store, root: &ObjectHash) -> Result<bool, LearnerError> {
        // Every MuZero checkpoint is full: stored whole, never derived.
        let c: MuCheckpointRecord = store.get(root)?;
        for h in c.params.iter().chain(&c.optimizers) {
            if !store.contains(h)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn restore(
        g: &G,
        ctx: LearnerContext<'_>,
        store: &Store,
        root: Option<&ObjectHash>,
    ) -> Result<Self, LearnerError> {
        let mut m = MuZero::build(g, ctx)?;
        let Some(root) = root else {
            return Ok(m);
        };
        let c: MuCheckpointRecord = store.get(root)?;
        let optim = m.optim;
        let nets = m.nets().len();
        if c.params.len() != nets || c.optimizers.len() != nets {
            return Err(LearnerError::Usage(format!(
                "muzero checkpoint {root}: {} networks where the run's settings have {nets} \
                 (learner.muzero.stochastic adds three)",
                c.params.len()
            )));
        }
        for (k, net) in m.nets_mut().into_iter().enumerate() {
            let params: ParamsRecord = store.get(&c.params[k])?;
            let opt: OptimizerRecord = store.get(&c.optimizers[k])?;
            let n = net.layout.params();
            if params.values.len() != n || !opt.state.fits(&optim, n) {
                return Err(LearnerError::Usage(format!(
                    "muzero checkpoint {root}: the {} network has {} parameters and an \
                     optimiser state that do not fit the run's {n}",
                    NETS[k],
                    params.values.len()
                )));
            }
            net.params = params.values;
            net.opt = opt.state;
            net.repack();
        }
        m.losses = MuLosses {
            value: c.loss_value,
            reward: c.loss_reward,
            policy: c.loss_policy,
            q: c.loss_q,
            sigma: c.loss_sigma,
            commitment: c.loss_commitment,
        };
        m.buffer = c.buffer;
        Ok(m)
    }

    fn references(store: &Store, root: &ObjectHash) -> Result<CheckpointRefs, LearnerError> {
        let c: MuCheckpointRecord = store.get(root)?;
        let mut references = Vec::new();
        for ((name, &p), &o) in NETS.iter().zip(&c.params).zip(&c.optimizers) {
            for (what, hash) in [("params", p), ("optimizer", o)] {
                references.push(Reference {
                    what: format!("{name} {what}"),
                    hash,
                    stored: true,
                });
            }
        }
        Ok(CheckpointRefs {
            kind: "muzero checkpoint",
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
                 .onnx or .safetensors; a MuZero model has no rows: export it as PATH.onnx \
                 (one file per network: PATH.representation.onnx, PATH.dynamics.onnx, \
                 PATH.prediction.onnx, and for Stochastic MuZero \
                 PATH.afterstate_dynamics.onnx, PATH.afterstate_prediction.onnx, \
                 PATH.encoder.onnx)"
                    .into(),
            ));
        }
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

    /// One graph per network (docs/muzero.md, "Export"): h reads the game's planes and
    /// writes s^0 before its scaling as `policy` (its `value` output is unused); g reads s
    /// then the action's one-hot features and writes s' before its scaling as `policy` and
    /// the reward as `value`; f reads s and writes the policy logits and tanh(v).
    /// Stochastic MuZero adds phi (s then the action's one-hot; the afterstate before its
    /// scaling as `policy`), psi (the afterstate; sigma's logits and tanh(Q)) and e (the
    /// game's planes; the code's logits: the code is their argmax).
    fn graphs(&self) -> Result<Vec<(&'static str, crate::nn::export::Graph)>, LearnerError> {
        let mut out = Vec::with_capacity(6);
        for (name, net) in NETS.into_iter().zip(self.nets()) {
            let mut graph = crate::nn::export::Graph::of(&net.layout, &net.params)
                .map_err(|e| LearnerError::Usage(format!("muzero {name} network: {e}")))?;
            if linear_value(name) {
                graph = graph.with_linear_value(REWARD_WORDS);
            }
            out.push((name, graph));
        }
        Ok(out)
    }

    fn evaluator(&self) -> MuEval<'_, G> {
        self.eval()
    }

    fn greedy_action(&self, _: &G, s: &G::State, past: &[G::State], legal: &[Action]) -> Action {
        self.eval().greedy_value(s, past, legal).0
    }

    fn plan(
        &self,
        g: &G,
        config: SearchConfig,
        at: (&G::State, &[G::State]),
        ply: u32,
        rng: &mut StreamRng,
    ) -> Option<Result<SearchResult, SearchError>> {
        Some(MuZero::plan(self, g, config, at, ply, rng))
    }

    fn samples(
        g: &G,
        ctx: LearnerContext<'_>,
        record: &GameRecord,
        states: &[G::State],
        out: &mut Vec<MuSample>,
    ) -> Result<(), ReplayError> {
        let settings = settings_of(ctx.learner);
        // The run's input (the model was built with it, so it exists).
        let Ok(enc) = g.input(settings.input.as_deref()) else {
            return Ok(());
        };
        let k = settings.unroll_steps as usize;
        game_samples(
            g,
            &enc,
            (k, settings.stochastic.is_some()),
            record,
            states,
            out,
        );
        Ok(())
    }

    fn train(
        &mut self,
        ctx: LearnerContext<'_>,
        iteration: u32,
        window: &[&MuSample],
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
        let buffer = &window[start..];
        self.buffer = buffer.len() as u64;
        let steps = if buffer.is_empty() {
            0
        } else {
            self.settings.train_steps
        };
        let mut rng = stream_fmt(ctx.model_seed, format_args!("muzero-train({iteration})"));
        let b = self.settings.batch_size as usize;
        let mut trainer = MuTrainer::new(self);
        let mut batch: Vec<&MuSample> = Vec::with_capacity(b);
        timed("train", || {
            for _ in 0..steps {
                batch.clear();
                for _ in 0..b {
                    batch.push(buffer[uniform_index(&mut rng, buffer.len())]);
                }
                self.train_step(&batch, lr, &mut trainer);
            }
        });
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

    fn evaluate(&self, g: &G, ctx: LearnerContext<'_>, e: EvalContext<'_, G>) -> MuZeroEvaluation {
        let mut out = MuZeroEvaluation {
            iteration: e.iteration,
            wr_p: None,
            err_p: None,
            mae_v: None,
            seen: e.seen,
            loss_value: self.losses.value,
            loss_reward: self.losses.reward,
            loss_policy: self.losses.policy,
            buffer: self.buffer,
            mae_v_depth: Vec::new(),
            mae_root_model: None,
            mae_root_rules: None,
            loss_q: None,
            loss_sigma: None,
            loss_commitment: None,
            code_usage: None,
            tv_chance: None,
        };
        if self.chance.is_some() {
            out.loss_q = Some(self.losses.q);
            out.loss_sigma = Some(self.losses.sigma);
            out.loss_commitment = Some(self.losses.commitment);
        }
        let Some(truth) = e.truth else {
            return out;
        };
        let config = ctx.search.at_iteration(e.iteration.max(1)).as_evaluation();
        if e.plan.wr_p_games > 0 {
            out.wr_p = Some(timed("wr_p", || {
                self.planned_win_rate(
                    g,
                    truth,
                    ctx.model_seed,
                    (e.iteration, e.plan.wr_p_games),
                    config,
                )
            }));
        }
        if e.plan.errors {
            let mut ev = self.eval();
            let (err, mae) = timed("errors", || {
                truth.test_errors(g, |s, legal, priors| ev.priors_value(s, &[], legal, priors))
            });
            out.err_p = Some(err);
            out.mae_v = Some(mae);
            let at = (e.iteration, ctx.model_seed);
            let roots = timed("mae_root", || self.root_errors(g, truth, config, at));
            out.mae_root_model = roots.map(|r| r.0);
            out.mae_root_rules = roots.map(|r| r.1);
            out.mae_v_depth = timed("mae_v_depth", || {
                self.mae_by_depth(g, truth, e.iteration, ctx.model_seed)
            });
            if self.chance.is_some() {
                let (usage, tv) = timed("chance", || self.chance_errors(g, truth));
                out.code_usage = usage;
                out.tv_chance = tv;
            }
        }
        out
    }

    fn metric_values(e: &MuZeroEvaluation) -> MetricValues {
        let depth = |k: usize| e.mae_v_depth.get(k).copied();
        let values = WinRate::values(e.wr_p.as_ref())
            .into_iter()
            .chain([
                e.err_p,
                e.mae_v,
                Some(e.seen as f64),
                Some(e.loss_value),
                Some(e.loss_reward),
                Some(e.loss_policy),
                Some(e.buffer as f64),
            ])
            .chain((0..super::DEPTHS).map(depth))
            .chain([e.mae_root_model, e.mae_root_rules])
            .chain([
                e.loss_q,
                e.loss_sigma,
                e.loss_commitment,
                e.code_usage,
                e.tv_chance,
            ]);
        MUZERO_METRICS
            .iter()
            .zip(values)
            .map(|(d, v)| (d.name, v))
            .collect()
    }
}

impl<G: Abilities> MuZero<G> {
    /// WR_p of the search in the learned model (the run's search at evaluation settings: no
    /// root noise, the most visited move) against the optimal player. A decision's draws
    /// (its ties) come from the stream `muzero-wr_p(i,PLY,KEY)` of the model seed, a
    /// function of the position, so a game's moves do not depend on the thread playing it.
    fn planned_win_rate(
        &self,
        g: &G,
        truth: &crate::eval::Truth<G>,
        seed: u64,
        (i, games): (u32, u32),
        config: SearchConfig,
    ) -> WinRate {
        win_rate_of(
            g,
            truth,
            seed,
            i,
            games,
            || (),
            |_, s, past, legal| {
                let key = g.key(s);
                let name = format_args!("muzero-wr_p({i},{},{key:?})", past.len());
                let mut rng = stream_fmt(seed, name);
                let ply = past.len() as u32;
                match MuZero::plan(self, g, config, (s, past), ply, &mut rng) {
                    Ok(r) => r.action,
                    Err(_) => self.eval().greedy_value(s, past, legal).0,
                }
            },
        )
    }

    /// The checkpoint of iteration `iteration`: each network's weights and optimiser state,
    /// then the root.
    fn encode_checkpoint(&self, iteration: u32) -> Result<Checkpoint, LearnerError> {
        let nets: Vec<&Net> = self.nets();
        let mut objects = Vec::with_capacity(2 * nets.len() + 1);
        let mut params = Vec::with_capacity(nets.len());
        let mut optimizers = Vec::with_capacity(nets.len());
        for net in &nets {
            let p = Encoded::of(&ParamsRecord {
                values: net.params.clone(),
            })?;
            let o = Encoded::of(&OptimizerRecord {
                state: net.opt.clone(),
            })?;
            params.push(p.hash);
            optimizers.push(o.hash);
            objects.push(p);
            objects.push(o);
        }
        let root = Encoded::of(&MuCheckpointRecord {
            iteration,
            parameters: nets.iter().map(|n| n.params.len() as u64).collect(),
            params,
            optimizers,
            loss_value: self.losses.value,
            loss_reward: self.losses.reward,
            loss_policy: self.losses.policy,
            loss_q: self.losses.q,
            loss_sigma: self.losses.sigma,
            loss_commitment: self.losses.commitment,
            buffer: self.buffer,
        })?;
        let root_hash = root.hash;
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

impl<G: Abilities> MuZero<G> {
    /// The exported networks' names and input lengths, in the order of the files
    /// `checkout --export` writes ([`Learner::graphs`]).
    #[doc(hidden)]
    pub fn exported_inputs(&self) -> Vec<(&'static str, usize)> {
        NETS.into_iter()
            .zip(self.nets())
            .map(|(name, n)| (name, n.layout.input().len()))
            .collect()
    }

    /// Runs exported network `index` on one input `x` as tabula does: its logits, and its
    /// value as the export's `value` output reads (tanh of the value head, the raw reward
    /// for the dynamics). What ONNX Runtime must give on the exported files
    /// (tests/onnx_export.rs); `None` for an index past the last network or an input of
    /// another length.
    #[doc(hidden)]
    pub fn run_exported(&self, index: usize, x: &[f32]) -> Option<(Vec<f32>, f64)> {
        let net = *self.nets().get(index)?;
        if x.len() != net.layout.input().len() {
            return None;
        }
        let mut sc = net.layout.scratch();
        net.layout
            .forward_batch(&net.params, &net.weights, x, 1, &mut sc);
        let pre = f64::from(sc.values[0]);
        let value = if linear_value(NETS[index]) {
            pre
        } else {
            pre.tanh()
        };
        Some((sc.logits[..net.layout.actions()].to_vec(), value))
    }
}
