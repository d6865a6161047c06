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
    /// Stochastic MuZero: the afterstate value's, sigma's cross-entropy and the
    /// commitment's (0 for MuZero).
    pub(crate) q: f64,
    pub(crate) sigma: f64,
    pub(crate) commitment: f64,
}

/// Stochastic MuZero's networks (Antonoglou et al., ICLR 2022; docs/muzero.md,
/// "Stochastic MuZero"):
/// - phi, the afterstate dynamics: input s then the action's one-hot; `logits` the afterstate
///   before its scaling (its `value` output unused; board games have no afterstate reward);
/// - psi, the afterstate prediction: input the afterstate; `logits` sigma's logits over the
///   C codes, `value` tanh(Q) for the side to move after chance;
/// - e, the encoder: input the game's planes of the observation after chance; `logits` the
///   encoder's output before its softmax (the code is the one-hot of its argmax).
///
/// The dynamics g then reads the afterstate and the code's one-hot (C features).
#[derive(Clone, Debug)]
pub(crate) struct ChanceNets {
    pub(crate) phi: Net,
    pub(crate) psi: Net,
    pub(crate) e: Net,
    /// C.
    pub(crate) codes: usize,
    /// beta.
    pub(crate) commitment: f64,
    /// delta, the diversity loss's weight.
    pub(crate) diversity: f64,
}

/// The MuZero learner's model (docs/muzero.md).
pub struct MuZero<G: Game> {
    pub(crate) settings: MuZeroSettings,
    pub(crate) encoder: Encoder<G>,
    pub(crate) optim: OptimConfig,
    pub(crate) h: Net,
    pub(crate) g: Net,
    pub(crate) f: Net,
    /// Stochastic MuZero's networks (None: MuZero).
    pub(crate) chance: Option<ChanceNets>,
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
    /// Stochastic MuZero: phi's, psi's and e's scratch, and phi's input.
    pub(crate) chance: Option<(Scratch, Scratch, Scratch, Vec<f32>)>,
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
        let chance = settings.stochastic.as_ref().map(|st| {
            let c = st.codes as usize;
            ChanceNets {
                phi: Net::new(
                    &st.afterstate_dynamics,
                    flat(hs + a),
                    hs,
                    &optim,
                    seed,
                    "afterstate_dynamics",
                ),
                psi: Net::new(
                    &st.afterstate_prediction,
                    flat(hs),
                    c,
                    &optim,
                    seed,
                    "afterstate_prediction",
                ),
                e: Net::new(&st.encoder, encoder.planes(), c, &optim, seed, "encoder"),
                codes: c,
                commitment: st.commitment,
                diversity: st.diversity,
            }
        });
        // MuZero's dynamics reads an action, Stochastic MuZero's a chance code.
        let moves = chance.as_ref().map_or(a, |c| c.codes);
        let gn = Net::new(
            &settings.dynamics,
            flat(hs + moves),
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
            chance,
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
            chance: self.chance.clone(),
            losses: self.losses,
            buffer: self.buffer,
            actions: self.actions,
        }
    }

    /// Parameters of all the networks together.
    pub fn parameters(&self) -> usize {
        self.nets().iter().map(|n| n.params.len()).sum()
    }

    /// The networks in checkpoint order: h, g, f, then phi, psi, e (Stochastic MuZero).
    pub(crate) fn nets(&self) -> Vec<&Net> {
        let mut out = vec![&self.h, &self.g, &self.f];
        if let Some(c) = &self.chance {
            out.extend([&c.phi, &c.psi, &c.e]);
        }
        out
    }

    /// The networks in checkpoint order, mutable.
    pub(crate) fn nets_mut(&mut self) -> Vec<&mut Net> {
        let mut out = vec![&mut self.h, &mut self.g, &mut self.f];
        if let Some(c) = &mut self.chance {
            out.extend([&mut c.phi, &mut c.psi, &mut c.e]);
        }
        out
    }

    /// C, the codebook's size (0 for MuZero).
    pub(crate) fn codes(&self) -> usize {
        self.chance.as_ref().map_or(0, |c| c.codes)
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
            gin: vec![0.0; self.g.layout.input().len()],
            chance: self.chance.as_ref().map(|c| {
                (
                    c.phi.layout.scratch(),
                    c.psi.layout.scratch(),
                    c.e.layout.scratch(),
                    vec![0.0; c.phi.layout.input().len()],
                )
            }),
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

    /// The afterstate phi(s, a), scaled, into `out` (Stochastic MuZero only: a MuZero model
    /// leaves `out` as it is).
    pub(crate) fn afterstate(&self, state: &[f32], a: Action, sc: &mut MuScratch, out: &mut [f32]) {
        let (Some(c), Some((phi, _, _, ain))) = (&self.chance, &mut sc.chance) else {
            return;
        };
        afterstate_of(&c.phi, state, a, (phi, ain.as_mut_slice()), out);
    }

    /// psi(afterstate): sigma over the C codes into `sigma`; returns Q on the [0, 1] scale
    /// for the side to move after chance (Stochastic MuZero only; 0.5 otherwise).
    pub(crate) fn afterstate_predict(
        &self,
        afterstate: &[f32],
        sc: &mut MuScratch,
        sigma: &mut Vec<f64>,
    ) -> f64 {
        sigma.clear();
        let (Some(c), Some((_, psi, _, _))) = (&self.chance, &mut sc.chance) else {
            return 0.5;
        };
        chance_of(&c.psi, c.codes, afterstate, psi, sigma)
    }

    /// The code e assigns to the observation `s` after the game's `past`: the argmax of
    /// its output (ties to the first; Stochastic MuZero only, 0 otherwise).
    pub(crate) fn code(&self, s: &G::State, past: &[G::State], sc: &mut MuScratch) -> usize {
        let (Some(c), Some((_, _, e, _))) = (&self.chance, &mut sc.chance) else {
            return 0;
        };
        self.encoder.encode(s, past, &mut sc.x);
        let n = &c.e;
        n.layout.forward_batch(&n.params, &n.weights, &sc.x, 1, e);
        argmax(&e.logits[..c.codes])
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

/// The softmax of `logits` (f64, max-shifted, sums in index order) into `out`.
pub(crate) fn softmax(logits: &[f32], out: &mut Vec<f64>) {
    out.clear();
    let max = logits
        .iter()
        .map(|&x| f64::from(x))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for &x in logits {
        let p = (f64::from(x) - max).exp();
        total += p;
        out.push(p);
    }
    for p in out.iter_mut() {
        *p /= total;
    }
}

/// The index of the largest element (ties to the first).
pub(crate) fn argmax(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] {
            best = i;
        }
    }
    best
}

/// The encoder's code and the straight-through step (Antonoglou et al. 2022, Section 4; van
/// den Oord et al. 2017): the encoder's output c^e = softmax(logits), the code c the one-hot
/// of its argmax (the codebook's nearest entry: the C one-hot vectors). The forward pass
/// reads c; the backward pass copies the gradient `dc` reaching c onto c^e (the
/// straight-through estimator) and adds the commitment loss beta ||c - c^e||^2's gradient,
/// then goes through the softmax into `dlogits` (weighted `w`). Returns the code and the
/// unweighted commitment loss.
pub(crate) fn straight_through(
    logits: &[f32],
    dc: &[f32],
    beta: f64,
    w: f64,
    dlogits: &mut [f32],
) -> (usize, f64) {
    let mut p = Vec::with_capacity(logits.len());
    softmax(logits, &mut p);
    let code = argmax(logits);
    let mut commit = 0.0;
    // d/dc^e: the straight-through copy plus the commitment's -2 beta (c - c^e).
    let mut dp = vec![0.0f64; p.len()];
    for (j, (d, &pj)) in dp.iter_mut().zip(&p).enumerate() {
        let c = if j == code { 1.0 } else { 0.0 };
        commit += (c - pj) * (c - pj);
        *d = f64::from(dc[j]) + w * beta * 2.0 * (pj - c);
    }
    let dot: f64 = dp.iter().zip(&p).map(|(d, q)| d * q).sum();
    for ((o, &d), &pj) in dlogits.iter_mut().zip(&dp).zip(&p) {
        *o = (pj * (d - dot)) as f32;
    }
    (code, commit)
}

/// The codebook diversity loss (Baevski et al. 2020, wav2vec 2.0, Section 3.2, for one
/// codebook): delta (1 - H(p_mean) / log C), p_mean the mean over `rows` rows of the
/// encoder's softmax c^e, which is low when the minibatch's observations spread over the
/// codes. Adds `scale` times its gradient with respect to each row's logits to `dlogits`
/// (rows in index order, so the sums are the same bits on every thread) and returns the
/// unweighted loss 1 - H / log C. A named addition to SMZ's loss against the codebook's
/// collapse (docs/muzero.md, "The codebook's collapse").
pub(crate) fn diversity(
    logits: &[f32],
    codes: usize,
    delta: f64,
    scale: f64,
    dlogits: &mut [f32],
) -> f64 {
    let rows = logits.len() / codes;
    if rows == 0 {
        return 0.0;
    }
    let mut p = Vec::with_capacity(codes);
    let mut mean = vec![0.0f64; codes];
    for r in 0..rows {
        softmax(&logits[r * codes..(r + 1) * codes], &mut p);
        for (m, &q) in mean.iter_mut().zip(&p) {
            *m += q / rows as f64;
        }
    }
    let log_c = (codes as f64).ln();
    let entropy: f64 = -mean.iter().map(|&m| m * m.max(1e-300).ln()).sum::<f64>();
    // dL/dp_mean = delta (log p_mean + 1) / log C; each row's softmax carries 1/rows of it.
    let v: Vec<f64> = mean
        .iter()
        .map(|&m| scale * delta * (m.max(1e-300).ln() + 1.0) / (log_c * rows as f64))
        .collect();
    for r in 0..rows {
        let span = r * codes..(r + 1) * codes;
        softmax(&logits[span.clone()], &mut p);
        let dot: f64 = v.iter().zip(&p).map(|(d, q)| d * q).sum();
        for ((o, &d), &q) in dlogits[span].iter_mut().zip(&v).zip(&p) {
            *o += (q * (d - dot)) as f32;
        }
    }
    1.0 - entropy / log_c
}

/// The afterstate phi(s, a), scaled, into `out` (phi's input written into `ain`): one pass
/// of `phi`, shared by the model ([`MuZero::afterstate`]) and the search's chance table
/// (learned.rs), so both give the same bits.
pub(crate) fn afterstate_of(
    phi: &Net,
    state: &[f32],
    a: Action,
    (sc, ain): (&mut Scratch, &mut [f32]),
    out: &mut [f32],
) {
    encode_dynamics_input(state, a, ain);
    phi.layout
        .forward_batch(&phi.params, &phi.weights, ain, 1, sc);
    min_max(&sc.logits[..out.len()], out);
}

/// psi(afterstate): sigma, the softmax over the first `codes` logits, into `sigma`; returns
/// Q on the [0, 1] scale for the side to move after chance. Shared as [`afterstate_of`].
pub(crate) fn chance_of(
    psi: &Net,
    codes: usize,
    afterstate: &[f32],
    sc: &mut Scratch,
    sigma: &mut Vec<f64>,
) -> f64 {
    psi.layout
        .forward_batch(&psi.params, &psi.weights, afterstate, 1, sc);
    softmax(&sc.logits[..codes], sigma);
    unit(sc.values[0])
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
