//! The network learner's model: the weights, the optimiser and the inference over a batch.

use super::{NetEval, NetworkSettings, settings_of};
use crate::game::Game;
use crate::games::Abilities;
use crate::learners::gate::{GateResult, gate_score};
use crate::learners::{LearnerContext, LearnerError, TrainReport};
use crate::nn::encode::Encoder;
use crate::nn::{
    Example, Layout, Losses, OptimConfig, OptimState, Scratch, Trainer, Weights, train_step,
};
use crate::rng::{stream, stream_fmt, uniform_index};

/// One training sample: the example, and whether it is its game's first.
#[derive(Clone, Debug)]
pub struct NetSample {
    pub example: Example,
    pub first: bool,
}

/// The network learner's model.
pub struct Network<G: Game> {
    pub(super) settings: NetworkSettings,
    pub(super) layout: Layout,
    pub(super) params: Vec<f32>,
    /// `params` packed for inference (rebuilt whenever `params` changes).
    pub(super) weights: Weights,
    pub(super) optim: OptimConfig,
    pub(super) opt: OptimState,
    pub(super) encoder: Encoder<G>,
    pub(super) losses: Losses,
    pub(super) buffer: u64,
    /// The game (the gating match plays it).
    pub(super) game: G,
    /// Under gating, the best model M*: what self-play, evaluation and `model:RUN@I` use
    /// (learners/gate.rs). `None` without gating.
    pub(super) best: Option<Box<Network<G>>>,
    /// The last gating match.
    pub(super) gate: Option<GateResult>,
}

impl<G: Game> std::fmt::Debug for Network<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("arch", &self.settings.arch)
            .field("parameters", &self.params.len())
            .finish()
    }
}

impl<G: Abilities> Network<G> {
    pub(super) fn build(g: &G, ctx: LearnerContext<'_>) -> Result<Network<G>, LearnerError> {
        let settings = settings_of(ctx.learner);
        let encoder = super::input_of(g, ctx.learner)
            .map_err(|e| LearnerError::Usage(format!("learner.network.input: {e}")))?;
        let layout = Layout::try_new(&settings.arch(), encoder.planes(), g.num_actions())
            .map_err(|e| LearnerError::Usage(format!("learner.network.stem: {e}")))?
            .with_arith(settings.arith())
            .with_value_head(settings.value_head.head());
        let params = layout.init(&mut stream(ctx.model_seed, "network-init"));
        let optim = settings.optim();
        let opt = OptimState::new(&optim, layout.params());
        let weights = layout.weights(&params);
        let mut net = Network {
            settings,
            layout,
            weights,
            params,
            optim,
            opt,
            encoder,
            losses: Losses::default(),
            buffer: 0,
            game: g.clone(),
            best: None,
            gate: None,
        };
        net.best = net.settings.gate.is_some().then(|| Box::new(net.copy()));
        Ok(net)
    }

    /// A copy of the model (weights, settings, optimiser state) without M*.
    pub(super) fn copy(&self) -> Network<G> {
        Network {
            settings: self.settings.clone(),
            layout: self.layout.clone(),
            weights: self.weights.clone(),
            params: self.params.clone(),
            optim: self.optim,
            opt: self.opt.clone(),
            encoder: self.encoder.clone(),
            losses: self.losses,
            buffer: self.buffer,
            game: self.game.clone(),
            best: None,
            gate: None,
        }
    }

    /// The model that plays: M* under gating, else the trained model.
    pub(super) fn playing(&self) -> &Network<G> {
        self.best.as_deref().unwrap_or(self)
    }

    /// Under gating, the trained model plays M* after iteration `iteration`'s training and
    /// replaces it when its score is above the threshold (learners/gate.rs).
    pub(super) fn gate(&mut self, ctx: LearnerContext<'_>, iteration: u32) {
        let (Some(gate), Some(best)) = (&self.settings.gate, &self.best) else {
            return;
        };
        let search = ctx.search.at_iteration(iteration).as_evaluation();
        let score = gate_score(
            &self.game,
            gate,
            search,
            ctx.model_seed,
            iteration,
            || self.eval(),
            || best.eval(),
        );
        let promoted = score > gate.threshold;
        if promoted {
            self.best = Some(Box::new(self.copy()));
        }
        self.gate = Some(GateResult { score, promoted });
    }

    /// `train_epochs` passes over `buffer`: pass k takes the buffer in the order of a
    /// permutation (Fisher-Yates, from the identity, drawn from the stream
    /// `network-epochs(i)` of the model seed, passes one after another), in minibatches of
    /// `batch_size` (the last one shorter), one optimiser step each.
    pub(super) fn train_epochs(
        &mut self,
        ctx: LearnerContext<'_>,
        iteration: u32,
        lr: f64,
        epochs: u32,
        buffer: &[&Example],
    ) -> TrainReport {
        let mut rng = stream_fmt(ctx.model_seed, format_args!("network-epochs({iteration})"));
        let b = self.settings.batch_size as usize;
        let mut order: Vec<usize> = Vec::with_capacity(buffer.len());
        let mut trainer = Trainer::new(&self.layout);
        for _ in 0..epochs {
            order.clear();
            order.extend(0..buffer.len());
            for i in (1..order.len()).rev() {
                order.swap(i, uniform_index(&mut rng, i + 1));
            }
            for batch in order.chunks(b) {
                self.losses = train_step(
                    &self.layout,
                    &mut self.params,
                    &mut self.opt,
                    &self.optim,
                    lr,
                    buffer,
                    batch,
                    &mut trainer,
                );
            }
        }
        if !buffer.is_empty() {
            self.weights = self.layout.weights(&self.params);
        }
        TrainReport {
            samples: u64::from(epochs) * buffer.len() as u64,
            units: self.buffer,
            beta: lr,
        }
    }

    /// The input planes of `s`, after the game's `past` (oldest first), into `x` (the
    /// layout's input length).
    pub fn encode(&self, s: &G::State, past: &[G::State], x: &mut [f32]) {
        self.encoder.encode(s, past, x);
    }

    /// How many earlier decision states the input reads (docs/network.md, "Inputs").
    pub fn past(&self) -> usize {
        self.encoder.past()
    }

    /// The learning rate of iteration `i` (`lr`).
    pub(crate) fn lr_at(&self, i: u32) -> f64 {
        self.settings.lr_at(i)
    }

    /// One Deep Q-Learning step ([`crate::nn::q_train_step`]); the inference weights follow.
    /// Returns the mean Huber loss and mean |TD error| before the step.
    pub(crate) fn q_step(
        &mut self,
        lr: f64,
        delta: f64,
        examples: &[crate::nn::QExample<'_>],
        trainer: &mut Trainer,
    ) -> (f64, f64) {
        let out = crate::nn::q_train_step(
            &self.layout,
            &mut self.params,
            &mut self.opt,
            &self.optim,
            lr,
            delta,
            examples,
            trainer,
        );
        self.weights = self.layout.weights(&self.params);
        out
    }

    /// Parameters in all.
    pub fn parameters(&self) -> usize {
        self.params.len()
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn params(&self) -> &[f32] {
        &self.params
    }

    /// The logits and the value (before the value head's squashing) of decision state `s`
    /// after the game's `past`, with caller buffers.
    pub fn infer(
        &self,
        s: &G::State,
        past: &[G::State],
        x: &mut [f32],
        scratch: &mut Scratch,
    ) -> f32 {
        self.encoder.encode(s, past, x);
        self.layout
            .forward_batch(&self.params, &self.weights, x, 1, scratch);
        scratch.values[0]
    }

    /// The values (before the value head's squashing) and logits (|A| per position, in
    /// order) of a batch of decision states, each with its game's past, evaluated as one
    /// batch: each position's outputs are the bits it gets alone (docs/network.md).
    pub fn infer_batch<'s>(
        &self,
        states: impl ExactSizeIterator<Item = (&'s G::State, &'s [G::State])>,
        values: &mut Vec<f32>,
        logits: &mut Vec<f32>,
    ) where
        G::State: 's,
    {
        let n = states.len();
        let mut scratch = self.layout.scratch();
        self.forward_states(states, &mut scratch);
        values.clear();
        values.extend_from_slice(&scratch.values[..n]);
        logits.clear();
        logits.extend_from_slice(&scratch.logits[..n * self.layout.actions()]);
    }

    /// Encodes `states` (each with its game's past) into the scratch's batch and runs the
    /// forward pass over them.
    pub(super) fn forward_states<'s>(
        &self,
        states: impl ExactSizeIterator<Item = (&'s G::State, &'s [G::State])>,
        scratch: &mut Scratch,
    ) where
        G::State: 's,
    {
        let n = states.len();
        let len = self.layout.input().len();
        scratch.ensure(n);
        let mut x = std::mem::take(&mut scratch.x);
        for (row, (s, past)) in x.chunks_exact_mut(len).zip(states) {
            self.encoder.encode(s, past, row);
        }
        self.layout
            .forward_batch(&self.params, &self.weights, &x, n, scratch);
        scratch.x = x;
    }

    /// A leaf evaluator with buffers of its own.
    pub fn eval(&self) -> NetEval<'_, G> {
        NetEval {
            net: self,
            x: vec![0.0; self.layout.input().len()],
            scratch: self.layout.scratch(),
            cache: None,
            staged: Vec::new(),
            rows: Vec::new(),
            fresh: Vec::new(),
            inputs: Vec::new(),
            computed: 0,
        }
    }
}
