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

use crate::game::{Action, Game};
use crate::nn::{Layout, Scratch, Weights};

use super::model::{
    MinMax, MuLosses, MuZero, Net, argmax, diversity, encode_dynamics_input, min_max,
    min_max_backward, straight_through,
};
use super::unroll::MuSample;

/// Working memory of training steps (kept between them).
pub(crate) struct MuTrainer {
    /// Each network's training weights, in checkpoint order (h, g, f, then phi, psi, e).
    w: Vec<Weights>,
    hs: Scratch,
    /// One per unrolled dynamics step: each keeps its activations for the backward pass.
    gsc: Vec<Scratch>,
    fs: Scratch,
    /// Stochastic MuZero: phi's per step, psi's and e's over every step.
    phisc: Vec<Scratch>,
    psisc: Option<Scratch>,
    esc: Option<Scratch>,
    /// Each network's chunk gradients, in checkpoint order.
    grads: Vec<Vec<Vec<f32>>>,
}

impl MuTrainer {
    pub(crate) fn new<G: Game>(m: &MuZero<G>) -> MuTrainer {
        let k = m.settings.unroll_steps as usize;
        let n = m.nets().len();
        let c = m.chance.as_ref();
        MuTrainer {
            w: (0..n).map(|_| Weights::default()).collect(),
            hs: m.h.layout.scratch(),
            gsc: (0..k).map(|_| m.g.layout.scratch()).collect(),
            fs: m.f.layout.scratch(),
            phisc: c.map_or(Vec::new(), |c| {
                (0..k).map(|_| c.phi.layout.scratch()).collect()
            }),
            psisc: c.map(|c| c.psi.layout.scratch()),
            esc: c.map(|c| c.e.layout.scratch()),
            grads: vec![Vec::new(); n],
        }
    }
}

#[cfg(test)]
impl MuTrainer {
    /// Each network's gradient: its chunk vectors summed in order (checkpoint order).
    pub(crate) fn grads_for_test(&self) -> Vec<Vec<f32>> {
        self.grads
            .iter()
            .map(|gs| {
                let mut out = vec![0.0f32; gs.first().map_or(0, Vec::len)];
                for g in gs {
                    for (x, &y) in out.iter_mut().zip(g) {
                        *x += y;
                    }
                }
                out
            })
            .collect()
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
    /// Stochastic MuZero: the afterstates as^1..as^K, step-major `[K * b * hs]`, their
    /// scalings, and the codes c^1..c^K (`[K * b]`).
    after: Vec<f32>,
    after_mm: Vec<MinMax>,
    codes: Vec<usize>,
}

/// The gradients of the networks' outputs, and the losses.
struct OutputGrads {
    dlog_f: Vec<f32>,
    dval_f: Vec<f32>,
    /// Step-major `[K * b]`: the rewards' gradients.
    dval_g: Vec<f32>,
    /// Stochastic MuZero: psi's (sigma's logits, Q), step-major `[K * b * C]`, `[K * b]`.
    dlog_psi: Vec<f32>,
    dval_psi: Vec<f32>,
    losses: MuLosses,
}

impl<G: Game> MuZero<G> {
    /// One optimiser step of every network on `batch` at learning rate `lr`; returns the
    /// mean losses before the step.
    pub(crate) fn train_step(
        &mut self,
        batch: &[&MuSample],
        lr: f64,
        t: &mut MuTrainer,
    ) -> MuLosses {
        let grads = self.gradients(batch, t);
        let b = batch.len();
        let optim = self.optim;
        for (net, gs) in self.nets_mut().into_iter().zip(&t.grads) {
            step(net, gs, b, &optim, lr);
        }
        self.losses = grads;
        grads
    }

    /// The chunk gradients of the batch's losses into `t.grads` (checkpoint order);
    /// returns the mean losses.
    pub(crate) fn gradients(&self, batch: &[&MuSample], t: &mut MuTrainer) -> MuLosses {
        let k = self.settings.unroll_steps as usize;
        let b = batch.len();
        let rows = [b, b, (k + 1) * b, b, k * b, k * b];
        for (j, net) in self.nets().into_iter().enumerate() {
            net.layout.pack(&net.params, true, &mut t.w[j]);
            zeroed(&mut t.grads[j], &net.layout, rows[j]);
        }
        let fwd = self.forward(batch, t);
        let mut out = self.output_grads(batch, &fwd, t);
        out.losses.commitment = self.backward(batch, &fwd, &out, t);
        out.losses
    }

    /// h, then g K times (Stochastic MuZero: phi then g, the code from e), then f over every
    /// step's state as one batch (and psi over every afterstate).
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
        h.layout
            .forward_train(&h.params, &t.w[0], &xs, b, &mut t.hs);
        let mut states = vec![0.0f32; (k + 1) * b * hs];
        let mut mm = Vec::with_capacity((k + 1) * b);
        for i in 0..b {
            let u = &t.hs.logits[i * hs..(i + 1) * hs];
            mm.push(min_max(u, &mut states[i * hs..(i + 1) * hs]));
        }
        let mut fwd = Forward {
            states,
            mm,
            rewards: vec![0.0f32; k * b],
            after: Vec::new(),
            after_mm: Vec::new(),
            codes: Vec::new(),
        };
        // Stochastic MuZero: every step's code from the encoder, one pass.
        if let (Some(c), Some(esc)) = (&self.chance, &mut t.esc) {
            let mut os = vec![0.0f32; k * b * px];
            for step in 1..=k {
                for (i, s) in batch.iter().enumerate() {
                    let at = ((step - 1) * b + i) * px;
                    os[at..at + px].copy_from_slice(&s.chance[step - 1]);
                }
            }
            c.e.layout
                .forward_train(&c.e.params, &t.w[5], &os, k * b, esc);
            fwd.codes = (0..k * b)
                .map(|r| argmax(&esc.logits[r * c.codes..(r + 1) * c.codes]))
                .collect();
            fwd.after = vec![0.0f32; k * b * hs];
        }
        let gl = self.g.layout.input().len();
        let mut gin = vec![0.0f32; b * gl];
        let mut pin = vec![0.0f32; b * (hs + a)];
        let g = &self.g;
        for step in 1..=k {
            let (before, after) = fwd.states.split_at_mut(step * b * hs);
            let prev = &before[(step - 1) * b * hs..];
            if let Some(c) = &self.chance {
                // as = phi(s^{k-1}, a^k), then s^k = g(as, c^k).
                for (i, s) in batch.iter().enumerate() {
                    let row = &mut pin[i * (hs + a)..(i + 1) * (hs + a)];
                    encode_dynamics_input(&prev[i * hs..(i + 1) * hs], s.actions[step - 1], row);
                }
                let sc = &mut t.phisc[step - 1];
                c.phi
                    .layout
                    .forward_train(&c.phi.params, &t.w[3], &pin, b, sc);
                let at = (step - 1) * b * hs;
                for i in 0..b {
                    let u = &sc.logits[i * hs..(i + 1) * hs];
                    let out = &mut fwd.after[at + i * hs..at + (i + 1) * hs];
                    fwd.after_mm.push(min_max(u, out));
                    let row = &mut gin[i * gl..(i + 1) * gl];
                    encode_dynamics_input(out, fwd.codes[(step - 1) * b + i] as Action, row);
                }
            } else {
                for (i, s) in batch.iter().enumerate() {
                    let row = &mut gin[i * gl..(i + 1) * gl];
                    encode_dynamics_input(&prev[i * hs..(i + 1) * hs], s.actions[step - 1], row);
                }
            }
            let sc = &mut t.gsc[step - 1];
            g.layout.forward_train(&g.params, &t.w[1], &gin, b, sc);
            for i in 0..b {
                let u = &sc.logits[i * hs..(i + 1) * hs];
                fwd.mm.push(min_max(u, &mut after[i * hs..(i + 1) * hs]));
                fwd.rewards[(step - 1) * b + i] = sc.values[i];
            }
        }
        let f = &self.f;
        f.layout
            .forward_train(&f.params, &t.w[2], &fwd.states, (k + 1) * b, &mut t.fs);
        if let (Some(c), Some(psisc)) = (&self.chance, &mut t.psisc) {
            c.psi
                .layout
                .forward_train(&c.psi.params, &t.w[4], &fwd.after, k * b, psisc);
        }
        fwd
    }

    /// Each step's losses and their gradients with respect to f's and g's outputs (and
    /// psi's), step 0 weighted 1 and steps 1..K weighted 1/K (the pseudocode's
    /// `gradient_scale`).
    fn output_grads(&self, batch: &[&MuSample], fwd: &Forward, t: &MuTrainer) -> OutputGrads {
        let (k, b, a) = (
            self.settings.unroll_steps as usize,
            batch.len(),
            self.actions,
        );
        let cn = self.codes();
        let mut o = OutputGrads {
            dlog_f: vec![0.0; (k + 1) * b * a],
            dval_f: vec![0.0; (k + 1) * b],
            dval_g: vec![0.0; k * b],
            dlog_psi: vec![0.0; k * b * cn],
            dval_psi: vec![0.0; k * b],
            losses: MuLosses::default(),
        };
        let mut probs = vec![0.0f64; a];
        let mut cprobs = vec![0.0f64; cn];
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
                // Stochastic MuZero: the afterstate as^step's Q against the value target of
                // the state after chance (the same side to move), and sigma's cross-entropy
                // against the encoder's code (a target: no gradient into e from it).
                if let (true, Some(psisc)) = (step > 0, &t.psisc) {
                    let r = (step - 1) * b + i;
                    let q = f64::from(psisc.values[r]).tanh();
                    o.losses.q += w * (q - target) * (q - target);
                    o.dval_psi[r] = (w * 2.0 * (q - target) * (1.0 - q * q)) as f32;
                    let code = [(fwd.codes[r] as Action, 1.0f32)];
                    let sl = &psisc.logits[r * cn..(r + 1) * cn];
                    let ce = policy_grad(sl, &code, &mut cprobs, &mut o.dlog_psi[r * cn..], w);
                    o.losses.sigma += w * ce;
                }
            }
        }
        let n = b.max(1) as f64;
        o.losses.value /= n;
        o.losses.reward /= n;
        o.losses.policy /= n;
        o.losses.q /= n;
        o.losses.sigma /= n;
        o
    }

    /// f's backward pass over every step, then g's from step K down to 1 (each state's
    /// gradient its f share plus the next dynamics' share, halved past s^0), then h's.
    /// Stochastic MuZero: psi's over every afterstate first; at each step g's gradient
    /// reaches the afterstate (plus psi's share) and the code; the afterstate's goes
    /// through phi to s^{k-1} (halved past s^0, at the start of the recurrent step); the
    /// codes' go straight through to e, with the commitment loss. Returns the mean
    /// commitment loss (weighted 1/K per step; 0 for MuZero).
    fn backward(
        &self,
        batch: &[&MuSample],
        fwd: &Forward,
        o: &OutputGrads,
        t: &mut MuTrainer,
    ) -> f64 {
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
            &t.w[2],
            &mut t.fs,
            (k + 1) * b,
            out,
            &mut t.grads[2],
            &mut ds_all,
        );
        let cn = self.codes();
        let mut das_all = vec![0.0f32; k * b * hs];
        if let (Some(c), Some(psisc)) = (&self.chance, &mut t.psisc) {
            let out = (o.dlog_psi.as_slice(), o.dval_psi.as_slice());
            c.psi.layout.backward_to_input(
                &t.w[4],
                psisc,
                k * b,
                out,
                &mut t.grads[4],
                &mut das_all,
            );
        }
        let gl = g.layout.input().len();
        let mut carry = vec![0.0f32; b * hs];
        let mut du = vec![0.0f32; b * hs];
        let mut dgin = vec![0.0f32; b * gl];
        let mut dcodes = vec![0.0f32; k * b * cn];
        let mut dpin = vec![0.0f32; b * (hs + a)];
        let mut dafter = vec![0.0f32; b * hs];
        let zeros = vec![0.0f32; k * b];
        for step in (1..=k).rev() {
            scaling_backward(
                (&fwd.states, &fwd.mm),
                &ds_all,
                &carry,
                (step, b, hs),
                &mut du,
            );
            let dr = &o.dval_g[(step - 1) * b..step * b];
            let sc = &mut t.gsc[step - 1];
            g.layout
                .backward_to_input(&t.w[1], sc, b, (&du, dr), &mut t.grads[1], &mut dgin);
            // The state the recurrent step read is s^{step-1}: halved unless it is s^0.
            let scale = if step > 1 { 0.5 } else { 1.0 };
            if let Some(c) = &self.chance {
                let codes = &mut dcodes[(step - 1) * b * cn..step * b * cn];
                split_rows(&dgin, gl, &mut dafter, codes);
                scaling_backward(
                    (&fwd.after, &fwd.after_mm),
                    &das_all,
                    &dafter,
                    (step - 1, b, hs),
                    &mut du,
                );
                let sc = &mut t.phisc[step - 1];
                let dz = &zeros[..b];
                c.phi.layout.backward_to_input(
                    &t.w[3],
                    sc,
                    b,
                    (&du, dz),
                    &mut t.grads[3],
                    &mut dpin,
                );
                carry_rows(&mut carry, &dpin, hs + a, scale);
            } else {
                carry_rows(&mut carry, &dgin, gl, scale);
            }
        }
        scaling_backward((&fwd.states, &fwd.mm), &ds_all, &carry, (0, b, hs), &mut du);
        let mut dx = vec![0.0f32; b * h.layout.input().len()];
        h.layout.backward_to_input(
            &t.w[0],
            &mut t.hs,
            b,
            (&du, &zeros[..b]),
            &mut t.grads[0],
            &mut dx,
        );
        self.encoder_backward(t, &dcodes, k, b)
    }

    /// The encoder's backward pass (Stochastic MuZero; 0 for MuZero): the codes' gradients
    /// `dcodes` straight through, with the commitment loss. Returns the mean commitment loss
    /// (weighted 1/K per step).
    fn encoder_backward(&self, t: &mut MuTrainer, dcodes: &[f32], k: usize, b: usize) -> f64 {
        let (Some(c), Some(esc)) = (&self.chance, &mut t.esc) else {
            return 0.0;
        };
        let cn = self.codes();
        let zeros = vec![0.0f32; k * b];
        let w = 1.0 / k as f64;
        let mut dle = vec![0.0f32; k * b * cn];
        let mut commit = 0.0;
        for r in 0..k * b {
            let span = r * cn..(r + 1) * cn;
            let logits = &esc.logits[span.clone()];
            let (_, l) = straight_through(
                logits,
                &dcodes[span.clone()],
                c.commitment,
                w,
                &mut dle[span],
            );
            commit += w * c.commitment * l;
        }
        if c.diversity > 0.0 {
            // Over all K b codes of the minibatch; times b because the optimiser step
            // divides the summed gradient by b (the loss is the minibatch's, not a row's).
            diversity(&esc.logits, cn, c.diversity, b as f64, &mut dle);
        }
        let mut dxe = vec![0.0f32; k * b * c.e.layout.input().len()];
        c.e.layout.backward_to_input(
            &t.w[5],
            esc,
            k * b,
            (&dle, &zeros),
            &mut t.grads[5],
            &mut dxe,
        );
        commit / b.max(1) as f64
    }
}

/// Splits each row of `rows` (`width` wide) into its first `head.len() / n` values, to
/// `head`, and the rest, to `tail` (n rows each): g's input gradient into the afterstate's
/// and the code's.
fn split_rows(rows: &[f32], width: usize, head: &mut [f32], tail: &mut [f32]) {
    let n = rows.len() / width;
    let hs = head.len() / n.max(1);
    for i in 0..n {
        let row = &rows[i * width..(i + 1) * width];
        head[i * hs..(i + 1) * hs].copy_from_slice(&row[..hs]);
        tail[i * (width - hs)..(i + 1) * (width - hs)].copy_from_slice(&row[hs..]);
    }
}

/// `carry`'s rows (each `hs = carry.len() / rows` wide) from the first `hs` of each row of
/// `from` (`width` wide), times `scale`: the gradient a recurrent step passes back to the
/// state it read.
fn carry_rows(carry: &mut [f32], from: &[f32], width: usize, scale: f32) {
    let rows = from.len() / width;
    let hs = carry.len() / rows.max(1);
    for i in 0..rows {
        let src = &from[i * width..i * width + hs];
        for (c, &x) in carry[i * hs..(i + 1) * hs].iter_mut().zip(src) {
            *c = scale * x;
        }
    }
}

/// du (the gradient before the scaling of row block `step` of `states`) from the state's
/// gradient: `share`'s rows of that block plus `carry`.
fn scaling_backward(
    (states, mm): (&[f32], &[MinMax]),
    share: &[f32],
    carry: &[f32],
    (step, b, hs): (usize, usize, usize),
    du: &mut [f32],
) {
    let mut ds = vec![0.0f32; hs];
    for i in 0..b {
        let at = (step * b + i) * hs;
        for ((d, &x), &c) in ds.iter_mut().zip(&share[at..at + hs]).zip(&carry[i * hs..]) {
            *d = x + c;
        }
        let s = &states[at..at + hs];
        min_max_backward(mm[step * b + i], s, &ds, &mut du[i * hs..(i + 1) * hs]);
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
