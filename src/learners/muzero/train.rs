//! One MuZero training step (Schrittwieser et al. 2020, Appendix G "Training", and the
//! supplementary pseudocode's `update_weights`): the representation on each sample's root,
//! K steps through the dynamics along the real actions, the prediction at every step; the
//! value, reward and policy losses of each step, the unrolled steps' scaled by 1/K; the
//! gradient entering each hidden state that the next dynamics reads scaled by 1/2.
//!
//! Where the pseudocode writes `hidden_state = scale_gradient(hidden_state, 0.5)` after each
//! `recurrent_inference`, the scaled copy feeds only the next dynamics: so the gradient into
//! s^k (k >= 1) is f's plus half of the next g's, and s^0's (from `initial_inference`, not
//! scaled) is f's plus the first g's, whole. (muzero-general's hook halves f's share too.)
//!
//! Losses (board games, the pseudocode's `scalar_loss` is the squared error): value
//! (tanh(v) - (2z - 1))^2, reward (r - r_target)^2 (steps 1..K), policy the cross-entropy of
//! the softmax over *every* action against the visit distribution (the model is not told the
//! legal moves; the search masks them at the root only). The gradient is the minibatch's mean;
//! L2 weight decay is the optimiser's.
//!
//! Bits: every network's passes are the engine's (fixed chunks, fixed order, the same on any
//! thread count); the scaling's sums and the chunk gradients' sums run in index order.

use crate::game::Game;
use crate::nn::{Layout, Scratch, Weights};

use super::model::{
    MinMax, MuLosses, MuZero, Net, encode_dynamics_input, min_max, min_max_backward,
};
use super::unroll::MuSample;

/// Working memory of training steps (kept between them).
pub(crate) struct MuTrainer {
    hw: Weights,
    gw: Weights,
    fw: Weights,
    hs: Scratch,
    /// One per unrolled dynamics step: each keeps its activations for the backward pass.
    gsc: Vec<Scratch>,
    fs: Scratch,
    grads: [Vec<Vec<f32>>; 3],
}

impl MuTrainer {
    pub(crate) fn new<G: Game>(m: &MuZero<G>) -> MuTrainer {
        let k = m.settings.unroll_steps as usize;
        MuTrainer {
            hw: Weights::default(),
            gw: Weights::default(),
            fw: Weights::default(),
            hs: m.h.layout.scratch(),
            gsc: (0..k).map(|_| m.g.layout.scratch()).collect(),
            fs: m.f.layout.scratch(),
            grads: [Vec::new(), Vec::new(), Vec::new()],
        }
    }
}

#[cfg(test)]
impl MuTrainer {
    /// Each network's gradient: its chunk vectors summed in order (h, g, f).
    pub(crate) fn grads_for_test(&self) -> [Vec<f32>; 3] {
        self.grads.clone().map(|gs| {
            let mut out = vec![0.0f32; gs.first().map_or(0, Vec::len)];
            for g in &gs {
                for (x, &y) in out.iter_mut().zip(g) {
                    *x += y;
                }
            }
            out
        })
    }
}

/// Zeroed chunk gradients for `n` positions of `l`.
fn zeroed(gs: &mut Vec<Vec<f32>>, l: &Layout, n: usize) {
    let c = Layout::grad_chunks(n);
    gs.resize(c.max(gs.len()), Vec::new());
    for g in gs.iter_mut() {
        g.clear();
        g.resize(l.params(), 0.0);
    }
}

/// What the forward pass leaves for the backward one.
struct Forward {
    /// s^0..s^K, step-major: `[(K + 1) * b * hs]`.
    states: Vec<f32>,
    /// Their scalings, step-major.
    mm: Vec<MinMax>,
    /// r^1..r^K, step-major: `[K * b]`.
    rewards: Vec<f32>,
}

/// The gradients of the prediction's and the dynamics' outputs, and the losses.
struct OutputGrads {
    dlog_f: Vec<f32>,
    dval_f: Vec<f32>,
    /// Step-major `[K * b]`: the rewards' gradients.
    dval_g: Vec<f32>,
    losses: MuLosses,
}

impl<G: Game> MuZero<G> {
    /// One optimiser step of all three networks on `batch` at learning rate `lr`; returns
    /// the mean losses before the step.
    pub(crate) fn train_step(
        &mut self,
        batch: &[&MuSample],
        lr: f64,
        t: &mut MuTrainer,
    ) -> MuLosses {
        let grads = self.gradients(batch, t);
        let b = batch.len();
        let optim = self.optim;
        for (net, gs) in [&mut self.h, &mut self.g, &mut self.f]
            .into_iter()
            .zip(&t.grads)
        {
            step(net, gs, b, &optim, lr);
        }
        self.losses = grads;
        grads
    }

    /// The chunk gradients of the batch's losses into `t.grads` (h, g, f); returns the
    /// mean losses.
    pub(crate) fn gradients(&self, batch: &[&MuSample], t: &mut MuTrainer) -> MuLosses {
        let k = self.settings.unroll_steps as usize;
        let b = batch.len();
        self.h.layout.pack(&self.h.params, true, &mut t.hw);
        self.g.layout.pack(&self.g.params, true, &mut t.gw);
        self.f.layout.pack(&self.f.params, true, &mut t.fw);
        zeroed(&mut t.grads[0], &self.h.layout, b);
        zeroed(&mut t.grads[1], &self.g.layout, b);
        zeroed(&mut t.grads[2], &self.f.layout, (k + 1) * b);
        let fwd = self.forward(batch, t);
        let out = self.output_grads(batch, &fwd, t);
        self.backward(batch, &fwd, &out, t);
        out.losses
    }

    /// h, then g K times, then f over every step's state as one batch.
    fn forward(&self, batch: &[&MuSample], t: &mut MuTrainer) -> Forward {
        let (k, b, hs, a) = (
            self.settings.unroll_steps as usize,
            batch.len(),
            self.state_len(),
            self.actions,
        );
        let px = self.encoder.planes().len();
        let mut xs = vec![0.0f32; b * px];
        for (row, s) in xs.chunks_exact_mut(px).zip(batch) {
            row.copy_from_slice(&s.x);
        }
        let h = &self.h;
        h.layout.forward_train(&h.params, &t.hw, &xs, b, &mut t.hs);
        let mut states = vec![0.0f32; (k + 1) * b * hs];
        let mut mm = Vec::with_capacity((k + 1) * b);
        for i in 0..b {
            let u = &t.hs.logits[i * hs..(i + 1) * hs];
            mm.push(min_max(u, &mut states[i * hs..(i + 1) * hs]));
        }
        let mut rewards = vec![0.0f32; k * b];
        let mut gin = vec![0.0f32; b * (hs + a)];
        let g = &self.g;
        for step in 1..=k {
            let (before, after) = states.split_at_mut(step * b * hs);
            let prev = &before[(step - 1) * b * hs..];
            for (i, s) in batch.iter().enumerate() {
                let row = &mut gin[i * (hs + a)..(i + 1) * (hs + a)];
                encode_dynamics_input(&prev[i * hs..(i + 1) * hs], s.actions[step - 1], row);
            }
            let sc = &mut t.gsc[step - 1];
            g.layout.forward_train(&g.params, &t.gw, &gin, b, sc);
            for i in 0..b {
                let u = &sc.logits[i * hs..(i + 1) * hs];
                mm.push(min_max(u, &mut after[i * hs..(i + 1) * hs]));
                rewards[(step - 1) * b + i] = sc.values[i];
            }
        }
        let f = &self.f;
        f.layout
            .forward_train(&f.params, &t.fw, &states, (k + 1) * b, &mut t.fs);
        Forward {
            states,
            mm,
            rewards,
        }
    }

    /// Each step's losses and their gradients with respect to f's and g's outputs, step 0
    /// weighted 1 and steps 1..K weighted 1/K (the pseudocode's `gradient_scale`).
    fn output_grads(&self, batch: &[&MuSample], fwd: &Forward, t: &MuTrainer) -> OutputGrads {
        let (k, b, a) = (
            self.settings.unroll_steps as usize,
            batch.len(),
            self.actions,
        );
        let mut o = OutputGrads {
            dlog_f: vec![0.0; (k + 1) * b * a],
            dval_f: vec![0.0; (k + 1) * b],
            dval_g: vec![0.0; k * b],
            losses: MuLosses::default(),
        };
        let mut probs = vec![0.0f64; a];
        for step in 0..=k {
            let w = if step == 0 { 1.0 } else { 1.0 / k as f64 };
            for (i, s) in batch.iter().enumerate() {
                let row = step * b + i;
                let logits = &t.fs.logits[row * a..(row + 1) * a];
                let pol = &s.policy[step];
                if !pol.is_empty() {
                    let lp = policy_grad(logits, pol, &mut probs, &mut o.dlog_f[row * a..], w);
                    o.losses.policy += w * lp;
                }
                let v = f64::from(t.fs.values[row]).tanh();
                let target = 2.0 * f64::from(s.value[step]) - 1.0;
                o.losses.value += w * (v - target) * (v - target);
                o.dval_f[row] = (w * 2.0 * (v - target) * (1.0 - v * v)) as f32;
                if step > 0 {
                    let r = f64::from(fwd.rewards[(step - 1) * b + i]);
                    let e = r - f64::from(s.reward[step]);
                    o.losses.reward += w * e * e;
                    o.dval_g[(step - 1) * b + i] = (w * 2.0 * e) as f32;
                }
            }
        }
        let n = b.max(1) as f64;
        o.losses.value /= n;
        o.losses.reward /= n;
        o.losses.policy /= n;
        o
    }

    /// f's backward pass over every step, then g's from step K down to 1 (each state's
    /// gradient its f share plus the next dynamics' share, halved past s^0), then h's.
    fn backward(&self, batch: &[&MuSample], fwd: &Forward, o: &OutputGrads, t: &mut MuTrainer) {
        let (k, b, hs, a) = (
            self.settings.unroll_steps as usize,
            batch.len(),
            self.state_len(),
            self.actions,
        );
        let mut ds_all = vec![0.0f32; (k + 1) * b * hs];
        let (f, g, h) = (&self.f, &self.g, &self.h);
        let out = (o.dlog_f.as_slice(), o.dval_f.as_slice());
        f.layout.backward_to_input(
            &t.fw,
            &mut t.fs,
            (k + 1) * b,
            out,
            &mut t.grads[2],
            &mut ds_all,
        );
        let mut carry = vec![0.0f32; b * hs];
        let mut du = vec![0.0f32; b * hs];
        let mut dgin = vec![0.0f32; b * (hs + a)];
        for step in (1..=k).rev() {
            self.through_scaling(fwd, &ds_all, &carry, step, b, &mut du);
            let dr = &o.dval_g[(step - 1) * b..step * b];
            let sc = &mut t.gsc[step - 1];
            g.layout
                .backward_to_input(&t.gw, sc, b, (&du, dr), &mut t.grads[1], &mut dgin);
            // The state g read at this step is s^{step-1}: halved unless it is s^0.
            let scale = if step > 1 { 0.5 } else { 1.0 };
            for i in 0..b {
                let from = &dgin[i * (hs + a)..i * (hs + a) + hs];
                for (c, &x) in carry[i * hs..(i + 1) * hs].iter_mut().zip(from) {
                    *c = scale * x;
                }
            }
        }
        self.through_scaling(fwd, &ds_all, &carry, 0, b, &mut du);
        let zeros = vec![0.0f32; b];
        let mut dx = vec![0.0f32; b * h.layout.input().len()];
        h.layout
            .backward_to_input(&t.hw, &mut t.hs, b, (&du, &zeros), &mut t.grads[0], &mut dx);
    }

    /// du (the gradient before step `step`'s scaling) from the state's gradient: f's share
    /// plus `carry`, the next dynamics' share.
    fn through_scaling(
        &self,
        fwd: &Forward,
        ds_all: &[f32],
        carry: &[f32],
        step: usize,
        b: usize,
        du: &mut [f32],
    ) {
        let hs = self.state_len();
        let mut ds = vec![0.0f32; hs];
        for i in 0..b {
            let at = (step * b + i) * hs;
            for ((d, &x), &c) in ds
                .iter_mut()
                .zip(&ds_all[at..at + hs])
                .zip(&carry[i * hs..])
            {
                *d = x + c;
            }
            let s = &fwd.states[at..at + hs];
            min_max_backward(fwd.mm[step * b + i], s, &ds, &mut du[i * hs..(i + 1) * hs]);
        }
    }
}

/// The cross-entropy of the softmax of `logits` (every action) against `target` (weighted
/// `w`), its gradient into `dl` (`(p - pi) w`); returns the unweighted loss.
fn policy_grad(
    logits: &[f32],
    target: &[(crate::game::Action, f32)],
    probs: &mut [f64],
    dl: &mut [f32],
    w: f64,
) -> f64 {
    let max = logits
        .iter()
        .map(|&x| f64::from(x))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for (p, &x) in probs.iter_mut().zip(logits) {
        *p = (f64::from(x) - max).exp();
        total += *p;
    }
    for p in probs.iter_mut() {
        *p /= total;
    }
    let mut pi = vec![0.0f64; logits.len()];
    for &(a, t) in target {
        pi[a as usize] = f64::from(t);
    }
    let mut loss = 0.0;
    for (j, (&p, &q)) in probs.iter().zip(&pi).enumerate() {
        dl[j] = (w * (p - q)) as f32;
        if q > 0.0 {
            loss -= q * p.max(1e-30).ln();
        }
    }
    loss
}

/// The mean of the chunk gradients `gs` over `b` samples (chunks added in order), one
/// optimiser step, and the inference weights repacked.
fn step(net: &mut Net, gs: &[Vec<f32>], b: usize, optim: &crate::nn::OptimConfig, lr: f64) {
    let mut grad = vec![0.0f32; net.params.len()];
    for g in gs {
        for (x, &y) in grad.iter_mut().zip(g) {
            *x += y;
        }
    }
    let scale = 1.0 / b.max(1) as f32;
    for x in &mut grad {
        *x *= scale;
    }
    net.opt.step(optim, lr, &mut net.params, &grad, &[]);
    net.repack();
}
