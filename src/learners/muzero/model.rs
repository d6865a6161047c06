//! MuZero's model: the representation h, the dynamics g and the prediction f, each an MLP
//! of the network engine ([`crate::nn`]), and their inference.
//!
//! Each network is a [`Layout`] whose two outputs are read as the paper's (Schrittwieser et
//! al. 2020, Appendix F "Network architecture"):
//! - h: input the game's planes; `logits` the hidden state s^0 before its scaling; its
//!   `value` output is not read (the engine's layouts always have one; it gets no gradient).
//! - g: input s^{k-1} followed by the action's one-hot plane; `logits` s^k before its
//!   scaling, `value` the reward r^k (linear, on the [-1, 1] scale).
//! - f: input s^k; `logits` the policy over every action, `value` tanh(v) on the [-1, 1]
//!   scale (the [0, 1] value for the side to move is (tanh + 1) / 2).
//!
//! Every hidden state is min-max scaled to [0, 1] per position (Appendix G: "we scale the
//! hidden state to the same range as the action input ... s_scaled = (s - min(s)) /
//! (max(s) - min(s))"), with muzero-general's guard: a range under 1e-5 gets 1e-5 added.

use crate::game::{Action, Game};
use crate::learners::{LearnerContext, LearnerError};
use crate::nn::encode::{Encoder, Planes};
use crate::nn::{Arch, Arith, Layout, OptimConfig, OptimState, Scratch, Weights};

use super::settings::{MuZeroSettings, settings_of};

/// One network: its layout, parameters, inference weights and optimiser state.
#[derive(Clone, Debug)]
pub(crate) struct Net {
    pub(crate) layout: Layout,
    pub(crate) params: Vec<f32>,
    pub(crate) weights: Weights,
    pub(crate) opt: OptimState,
}

impl Net {
    /// An MLP with `hidden` layers over `input` features and `outputs` logits, its initial
    /// weights from the stream `muzero-init(NAME)` of the model seed.
    fn new(
        hidden: &[u32],
        input: Planes,
        outputs: usize,
        optim: &OptimConfig,
        seed: u64,
        name: &str,
    ) -> Net {
        let arch = Arch::Mlp {
            hidden: hidden.iter().map(|&h| h as usize).collect(),
        };
        // An MLP fits any input: `Layout::new` refuses only unpadded residual stems. The
        // arithmetic is pinned (fused, the default of new network runs) so that a change of
        // the engine's default moves no MuZero run's bits.
        let layout = Layout::new(&arch, input, outputs).with_arith(Arith::Fused);
        let params = layout.init(&mut crate::rng::stream_fmt(
            seed,
            format_args!("muzero-init({name})"),
        ));
        let weights = layout.weights(&params);
        let opt = OptimState::new(optim, layout.params());
        Net {
            layout,
            params,
            weights,
            opt,
        }
    }

    /// Repacks the inference weights after the parameters changed.
    pub(crate) fn repack(&mut self) {
        self.weights = self.layout.weights(&self.params);
    }
}

/// A vector's planes: `n` features as `n` channels of one square.
pub(crate) fn flat(n: usize) -> Planes {
    Planes {
        channels: n,
        height: 1,
        width: 1,
    }
}

/// The losses of the last training step (means over the minibatch of each sample's
/// weighted sum over the unrolled steps).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub(crate) struct MuLosses {
    pub(crate) value: f64,
    pub(crate) reward: f64,
    pub(crate) policy: f64,
}

/// The MuZero learner's model (docs/muzero.md).
pub struct MuZero<G: Game> {
    pub(crate) settings: MuZeroSettings,
    pub(crate) encoder: Encoder<G>,
    pub(crate) optim: OptimConfig,
    pub(crate) h: Net,
    pub(crate) g: Net,
    pub(crate) f: Net,
    pub(crate) losses: MuLosses,
    pub(crate) buffer: u64,
    pub(crate) actions: usize,
}

impl<G: Game> std::fmt::Debug for MuZero<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MuZero")
            .field("state", &self.settings.state)
            .field("parameters", &self.parameters())
            .finish()
    }
}

/// A hidden state's min-max scaling, kept for its gradient: the indices of the (first)
/// minimum and maximum and the divisor.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct MinMax {
    pub(crate) lo: usize,
    pub(crate) hi: usize,
    pub(crate) d: f32,
}

/// `out = (u - min u) / d`, d = max u - min u (plus 1e-5 under 1e-5); ties to the first
/// index.
pub(crate) fn min_max(u: &[f32], out: &mut [f32]) -> MinMax {
    let (mut lo, mut hi) = (0, 0);
    for (i, &x) in u.iter().enumerate() {
        if x < u[lo] {
            lo = i;
        }
        if x > u[hi] {
            hi = i;
        }
    }
    let mut d = u[hi] - u[lo];
    if d < 1e-5 {
        d += 1e-5;
    }
    for (o, &x) in out.iter_mut().zip(u) {
        *o = (x - u[lo]) / d;
    }
    MinMax { lo, hi, d }
}

/// The gradient with respect to `u` of the scaling `s = min_max(u)` given `ds`, into `du`:
/// du_j = ds_j / d, then the minimum's element takes (sum_i ds_i s_i - sum_i ds_i) / d and
/// the maximum's -sum_i ds_i s_i / d (d's guard treated as a constant). Sums in index order.
pub(crate) fn min_max_backward(m: MinMax, s: &[f32], ds: &[f32], du: &mut [f32]) {
    let (mut sum, mut dot) = (0.0f32, 0.0f32);
    for (&g, &x) in ds.iter().zip(s) {
        sum += g;
        dot += g * x;
    }
    for (o, &g) in du.iter_mut().zip(ds) {
        *o = g / m.d;
    }
    du[m.lo] += (dot - sum) / m.d;
    du[m.hi] -= dot / m.d;
}

/// Scratch buffers of inference: one per network, and the dynamics' input.
#[derive(Clone, Debug)]
pub(crate) struct MuScratch {
    pub(crate) h: Scratch,
    pub(crate) g: Scratch,
    pub(crate) f: Scratch,
    pub(crate) x: Vec<f32>,
    pub(crate) gin: Vec<f32>,
}

impl<G: crate::games::Abilities> MuZero<G> {
    /// The untrained model of a run: the three networks from their own streams of the
    /// model seed.
    pub(crate) fn build(g: &G, ctx: LearnerContext<'_>) -> Result<MuZero<G>, LearnerError> {
        let settings = settings_of(ctx.learner);
        let encoder = g
            .input(settings.input.as_deref())
            .map_err(|e| LearnerError::Usage(format!("learner.muzero.input: {e}")))?;
        let optim = settings.optim();
        let (hs, a) = (settings.state as usize, g.num_actions());
        let seed = ctx.model_seed;
        let h = Net::new(
            &settings.representation,
            encoder.planes(),
            hs,
            &optim,
            seed,
            "representation",
        );
        let gn = Net::new(
            &settings.dynamics,
            flat(hs + a),
            hs,
            &optim,
            seed,
            "dynamics",
        );
        let f = Net::new(
            &settings.prediction,
            flat(hs),
            a,
            &optim,
            seed,
            "prediction",
        );
        Ok(MuZero {
            settings,
            encoder,
            optim,
            h,
            g: gn,
            f,
            losses: MuLosses::default(),
            buffer: 0,
            actions: a,
        })
    }
}

impl<G: Game> MuZero<G> {
    /// A copy of the model (tests perturb one network of a copy).
    #[cfg(test)]
    pub(crate) fn copy_for_test(&self) -> MuZero<G> {
        MuZero {
            settings: self.settings.clone(),
            encoder: self.encoder.clone(),
            optim: self.optim,
            h: self.h.clone(),
            g: self.g.clone(),
            f: self.f.clone(),
            losses: self.losses,
            buffer: self.buffer,
            actions: self.actions,
        }
    }

    /// Parameters of the three networks together.
    pub fn parameters(&self) -> usize {
        self.h.params.len() + self.g.params.len() + self.f.params.len()
    }

    /// The hidden state's size.
    pub(crate) fn state_len(&self) -> usize {
        self.settings.state as usize
    }

    pub(crate) fn scratch(&self) -> MuScratch {
        MuScratch {
            h: self.h.layout.scratch(),
            g: self.g.layout.scratch(),
            f: self.f.layout.scratch(),
            x: vec![0.0; self.encoder.planes().len()],
            gin: vec![0.0; self.state_len() + self.actions],
        }
    }

    /// s^0 = h(planes of `s` after the game's `past`), scaled, into `out`.
    pub(crate) fn represent(
        &self,
        s: &G::State,
        past: &[G::State],
        sc: &mut MuScratch,
        out: &mut [f32],
    ) {
        self.encoder.encode(s, past, &mut sc.x);
        let n = &self.h;
        n.layout
            .forward_batch(&n.params, &n.weights, &sc.x, 1, &mut sc.h);
        min_max(&sc.h.logits[..out.len()], out);
    }

    /// s^k = g(s^{k-1}, a), scaled, into `out`; returns the reward r^k ([-1, 1] scale).
    pub(crate) fn dynamics(
        &self,
        state: &[f32],
        a: Action,
        sc: &mut MuScratch,
        out: &mut [f32],
    ) -> f32 {
        encode_dynamics_input(state, a, &mut sc.gin);
        let n = &self.g;
        n.layout
            .forward_batch(&n.params, &n.weights, &sc.gin, 1, &mut sc.g);
        min_max(&sc.g.logits[..out.len()], out);
        sc.g.values[0]
    }

    /// f(s^k): the logits over every action into `sc.f.logits`; returns the value on the
    /// [0, 1] scale for the side to move.
    pub(crate) fn predict(&self, state: &[f32], sc: &mut MuScratch) -> f64 {
        let n = &self.f;
        n.layout
            .forward_batch(&n.params, &n.weights, state, 1, &mut sc.f);
        unit(sc.f.values[0])
    }
}

/// The value head's tanh output on the [0, 1] scale.
pub(crate) fn unit(pre: f32) -> f64 {
    (f64::from(pre).tanh() + 1.0) / 2.0
}

/// The dynamics' input: the state, then the action one-hot (Appendix F encodes the action
/// as planes beside the state's; here one feature per action).
pub(crate) fn encode_dynamics_input(state: &[f32], a: Action, out: &mut [f32]) {
    let hs = state.len();
    out[..hs].copy_from_slice(state);
    out[hs..].fill(0.0);
    out[hs + a as usize] = 1.0;
}
