//! A small neural network on the CPU, written out by hand: a multilayer perceptron or a
//! residual convolutional net with a policy head and a value head, its gradients, and the
//! optimisers (SGD with momentum, Nesterov and weight decay; Adam). See docs/network.md.
//!
//! **Bit-exactness** (docs/network.md, docs/conventions.md): every output element and every
//! gradient element is a sum computed by this code in one fixed order (inputs ascending, then
//! kernel taps), never reassociated (Rust does not contract or reorder float arithmetic;
//! vectorised loops run across independent output elements, not along a sum). A batch is
//! evaluated one position after another with the same code, so a position's output does not
//! depend on the batch it is in. A training step splits its minibatch into fixed chunks of
//! [`CHUNK`] samples (whatever the thread count), accumulates each chunk's gradient in sample
//! order, and adds the chunk gradients in chunk order; so a step gives the same bits on any
//! number of threads. There is no batch normalisation (its statistics would tie a position's
//! output to its batch).

pub(crate) mod encode;
pub(crate) mod export;
pub(crate) mod optim;

use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

use crate::rng::StreamRng;
use encode::Planes;

pub(crate) use optim::{OptimConfig, OptimState};

/// Samples per gradient chunk of a training step (fixed, so the sum's order is too).
pub(crate) const CHUNK: usize = 16;

/// The architecture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Fully connected layers of these widths (ReLU), over the flattened planes.
    Mlp { hidden: Vec<usize> },
    /// A 3x3 convolution to `channels` planes (ReLU), then `blocks` residual blocks of two
    /// 3x3 convolutions (ReLU after the first and after the skip sum).
    ResNet { blocks: usize, channels: usize },
}

/// A fully connected layer: weights `[n_in][n_out]` at `w`, biases at `b` (offsets into the
/// parameter vector).
#[derive(Copy, Clone, Debug)]
struct Dense {
    w: usize,
    b: usize,
    n_in: usize,
    n_out: usize,
}

/// A 3x3 convolution with zero padding: weights `[out][in][3][3]` at `w`, biases at `b`.
#[derive(Copy, Clone, Debug)]
struct Conv {
    w: usize,
    b: usize,
    cin: usize,
    cout: usize,
}

#[derive(Clone, Debug)]
enum Trunk {
    Mlp(Vec<Dense>),
    Res { stem: Conv, blocks: Vec<[Conv; 2]> },
}

/// A network's shape: where each layer's parameters are, and how many there are.
#[derive(Clone, Debug)]
pub struct Layout {
    input: Planes,
    actions: usize,
    trunk: Trunk,
    policy: Dense,
    value: Dense,
    params: usize,
    /// Fan-in of each parameter range (for initialisation), in layout order: (start, len,
    /// fan_in, is_bias).
    ranges: Vec<(usize, usize, usize, bool)>,
}

impl Layout {
    pub fn new(arch: &Arch, input: Planes, actions: usize) -> Layout {
        let mut next = 0usize;
        let mut ranges = Vec::new();
        let mut alloc = |len: usize, fan_in: usize, bias: bool| {
            let at = next;
            ranges.push((at, len, fan_in, bias));
            next += len;
            at
        };
        let mut dense = |n_in: usize, n_out: usize| Dense {
            w: alloc(n_in * n_out, n_in, false),
            b: alloc(n_out, n_in, true),
            n_in,
            n_out,
        };
        let (trunk, feat) = match arch {
            Arch::Mlp { hidden } => {
                let mut layers = Vec::new();
                let mut n = input.len();
                for &h in hidden {
                    layers.push(dense(n, h));
                    n = h;
                }
                (Trunk::Mlp(layers), n)
            }
            Arch::ResNet { blocks, channels } => {
                let area = input.height * input.width;
                let mut conv = |cin: usize, cout: usize| Conv {
                    w: alloc(cout * cin * 9, cin * 9, false),
                    b: alloc(cout, cin * 9, true),
                    cin,
                    cout,
                };
                let stem = conv(input.channels, *channels);
                let blocks = (0..*blocks)
                    .map(|_| [conv(*channels, *channels), conv(*channels, *channels)])
                    .collect();
                (Trunk::Res { stem, blocks }, channels * area)
            }
        };
        let mut dense = |n_in: usize, n_out: usize| Dense {
            w: alloc(n_in * n_out, n_in, false),
            b: alloc(n_out, n_in, true),
            n_in,
            n_out,
        };
        let policy = dense(feat, actions);
        let value = dense(feat, 1);
        Layout {
            input,
            actions,
            trunk,
            policy,
            value,
            params: next,
            ranges,
        }
    }

    /// Parameters in all.
    pub fn params(&self) -> usize {
        self.params
    }

    pub fn input(&self) -> Planes {
        self.input
    }

    pub fn actions(&self) -> usize {
        self.actions
    }

    /// Initial parameters: weights Normal(0, sqrt(2 / fan_in)) (He et al. 2015), the heads'
    /// Normal(0, sqrt(1 / fan_in)), biases 0; drawn in layout order from `rng`.
    pub fn init(&self, rng: &mut StreamRng) -> Vec<f32> {
        let mut p = vec![0.0f32; self.params];
        let heads = self.policy.w;
        for &(at, len, fan_in, bias) in &self.ranges {
            if bias {
                continue;
            }
            let gain = if at >= heads { 1.0 } else { 2.0 };
            let std = (gain / fan_in.max(1) as f64).sqrt();
            // A finite, positive std: the Normal cannot fail.
            let normal = Normal::new(0.0, std).unwrap_or_else(|_| unreachable!());
            for x in &mut p[at..at + len] {
                *x = normal.sample(rng) as f32;
            }
        }
        p
    }

    /// Activation buffers for one position.
    pub fn scratch(&self) -> Scratch {
        let sizes: Vec<usize> = match &self.trunk {
            Trunk::Mlp(layers) => std::iter::once(self.input.len())
                .chain(layers.iter().map(|d| d.n_out))
                .collect(),
            Trunk::Res { stem, blocks } => {
                let n = stem.cout * self.input.height * self.input.width;
                std::iter::once(self.input.len())
                    .chain(std::iter::repeat_n(n, 1 + 2 * blocks.len()))
                    .collect()
            }
        };
        let max = sizes.iter().copied().max().unwrap_or(0);
        Scratch {
            acts: sizes.iter().map(|&n| vec![0.0; n]).collect(),
            logits: vec![0.0; self.actions],
            value_pre: 0.0,
            d: vec![0.0; max],
            d2: vec![0.0; max],
            d3: vec![0.0; max],
        }
    }

    /// The forward pass of one position (`x`: its planes): fills `s.logits` and returns the
    /// value head's output before tanh.
    pub(crate) fn forward(&self, p: &[f32], x: &[f32], s: &mut Scratch) -> f32 {
        s.acts[0].copy_from_slice(x);
        match &self.trunk {
            Trunk::Mlp(layers) => {
                for (l, d) in layers.iter().enumerate() {
                    let (prev, next) = s.acts.split_at_mut(l + 1);
                    dense_forward(p, d, &prev[l], &mut next[0]);
                    relu(&mut next[0]);
                }
            }
            Trunk::Res { stem, blocks } => {
                let (h, w) = (self.input.height, self.input.width);
                let (prev, next) = s.acts.split_at_mut(1);
                conv_forward(p, stem, h, w, &prev[0], &mut next[0]);
                relu(&mut next[0]);
                for (b, [c1, c2]) in blocks.iter().enumerate() {
                    let at = 1 + 2 * b;
                    let (prev, next) = s.acts.split_at_mut(at + 1);
                    let (u, rest) = next.split_at_mut(1);
                    conv_forward(p, c1, h, w, &prev[at], &mut u[0]);
                    relu(&mut u[0]);
                    conv_forward(p, c2, h, w, &u[0], &mut rest[0]);
                    for (o, &skip) in rest[0].iter_mut().zip(prev[at].iter()) {
                        *o += skip;
                    }
                    relu(&mut rest[0]);
                }
            }
        }
        let feat = s.acts.last().map_or(&[][..], |v| &v[..]);
        dense_forward(p, &self.policy, feat, &mut s.logits);
        let mut v = [0.0f32];
        dense_forward(p, &self.value, feat, &mut v);
        s.value_pre = v[0];
        v[0]
    }

    /// Adds to `g` the gradient of one position's loss, given the forward pass in `s` and the
    /// loss's gradients with respect to the logits (`dlogits`) and the value before tanh.
    pub(crate) fn backward(
        &self,
        p: &[f32],
        s: &mut Scratch,
        dlogits: &[f32],
        dvalue: f32,
        g: &mut [f32],
    ) {
        let Scratch {
            acts, d, d2, d3, ..
        } = s;
        let feat = acts.last().map_or(&[][..], |v| &v[..]);
        let nf = feat.len();
        d[..nf].fill(0.0);
        dense_backward(p, &self.policy, feat, dlogits, g, Some(&mut d[..nf]));
        dense_backward(p, &self.value, feat, &[dvalue], g, Some(&mut d[..nf]));
        match &self.trunk {
            Trunk::Mlp(layers) => {
                for (l, dl) in layers.iter().enumerate().rev() {
                    // d holds dL/d(output of layer l, after ReLU).
                    let out = &acts[l + 1];
                    for (dd, &a) in d[..dl.n_out].iter_mut().zip(out) {
                        if a <= 0.0 {
                            *dd = 0.0;
                        }
                    }
                    let din = (l > 0).then(|| {
                        d2[..dl.n_in].fill(0.0);
                        &mut d2[..dl.n_in]
                    });
                    dense_backward(p, dl, &acts[l], &d[..dl.n_out], g, din);
                    if l > 0 {
                        d[..dl.n_in].copy_from_slice(&d2[..dl.n_in]);
                    }
                }
            }
            Trunk::Res { stem, blocks } => {
                let (h, w) = (self.input.height, self.input.width);
                let n = stem.cout * h * w;
                for (b, [c1, c2]) in blocks.iter().enumerate().rev() {
                    let at = 1 + 2 * b;
                    // d: dL/d(block output, after ReLU) -> before the ReLU.
                    for (dd, &a) in d[..n].iter_mut().zip(&acts[at + 2]) {
                        if a <= 0.0 {
                            *dd = 0.0;
                        }
                    }
                    // Through the second convolution into d2 = dL/du.
                    d2[..n].fill(0.0);
                    conv_backward(p, c2, h, w, &acts[at + 1], &d[..n], g, Some(&mut d2[..n]));
                    for (dd, &a) in d2[..n].iter_mut().zip(&acts[at + 1]) {
                        if a <= 0.0 {
                            *dd = 0.0;
                        }
                    }
                    // Through the first into d3; the skip passes d on unchanged.
                    d3[..n].fill(0.0);
                    conv_backward(p, c1, h, w, &acts[at], &d2[..n], g, Some(&mut d3[..n]));
                    for (dd, &x) in d[..n].iter_mut().zip(&d3[..n]) {
                        *dd += x;
                    }
                }
                for (dd, &a) in d[..n].iter_mut().zip(&acts[1]) {
                    if a <= 0.0 {
                        *dd = 0.0;
                    }
                }
                conv_backward(p, stem, h, w, &acts[0], &d[..n], g, None);
            }
        }
    }
}

/// Per-position buffers: activations of the forward pass, the heads' outputs, and gradient
/// buffers for the backward pass.
#[derive(Clone, Debug)]
pub struct Scratch {
    acts: Vec<Vec<f32>>,
    pub logits: Vec<f32>,
    pub(crate) value_pre: f32,
    d: Vec<f32>,
    d2: Vec<f32>,
    d3: Vec<f32>,
}

fn relu(v: &mut [f32]) {
    for x in v {
        if *x < 0.0 {
            *x = 0.0;
        }
    }
}

/// `out[o] = b[o] + sum_i x[i] w[i][o]`, the sum in ascending i.
fn dense_forward(p: &[f32], d: &Dense, x: &[f32], out: &mut [f32]) {
    out.copy_from_slice(&p[d.b..d.b + d.n_out]);
    for (i, &xi) in x.iter().enumerate() {
        if xi == 0.0 {
            // Inputs are often sparse planes: zero terms are skipped, the same way for every
            // position and batch, so the bits stay a function of the position.
            continue;
        }
        let row = &p[d.w + i * d.n_out..d.w + (i + 1) * d.n_out];
        for (o, &w) in out.iter_mut().zip(row) {
            *o += xi * w;
        }
    }
}

/// Adds the layer's weight and bias gradients to `g`, and `W dout` to `din` when asked.
fn dense_backward(
    p: &[f32],
    d: &Dense,
    x: &[f32],
    dout: &[f32],
    g: &mut [f32],
    din: Option<&mut [f32]>,
) {
    for (gb, &dy) in g[d.b..d.b + d.n_out].iter_mut().zip(dout) {
        *gb += dy;
    }
    for (i, &xi) in x.iter().enumerate() {
        if xi == 0.0 {
            continue;
        }
        let row = &mut g[d.w + i * d.n_out..d.w + (i + 1) * d.n_out];
        for (gw, &dy) in row.iter_mut().zip(dout) {
            *gw += xi * dy;
        }
    }
    if let Some(din) = din {
        for (i, di) in din.iter_mut().enumerate() {
            let row = &p[d.w + i * d.n_out..d.w + (i + 1) * d.n_out];
            let mut acc = 0.0f32;
            for (&w, &dy) in row.iter().zip(dout) {
                acc += w * dy;
            }
            *di += acc;
        }
    }
}

/// The valid output range along one axis for kernel offset `k` (0..3) of a same-padded 3x3
/// convolution of length `n`: output positions `lo..hi` read input `pos + k - 1`.
#[inline]
fn span(k: usize, n: usize) -> (usize, usize) {
    match k {
        0 => (1, n),
        1 => (0, n),
        _ => (0, n.saturating_sub(1)),
    }
}

/// `out[o][y][x] = b[o] + sum_{i, ky, kx} w[o][i][ky][kx] in[i][y+ky-1][x+kx-1]` (zero
/// outside the board), the sum in the order (i, ky, kx): for each input plane and tap, the
/// shifted plane is formed once and added, scaled, to every output plane (the inner loop runs
/// along a whole plane, across independent output elements).
fn conv_forward(p: &[f32], c: &Conv, h: usize, w: usize, input: &[f32], out: &mut [f32]) {
    let area = h * w;
    for o in 0..c.cout {
        out[o * area..(o + 1) * area].fill(p[c.b + o]);
    }
    let mut shifted = vec![0.0f32; area];
    for i in 0..c.cin {
        let src = &input[i * area..(i + 1) * area];
        for ky in 0..3 {
            let (y0, y1) = span(ky, h);
            for kx in 0..3 {
                let (x0, x1) = span(kx, w);
                shifted.fill(0.0);
                for y in y0..y1 {
                    let sy = y + ky - 1;
                    shifted[y * w + x0..y * w + x1]
                        .copy_from_slice(&src[sy * w + x0 + kx - 1..sy * w + x1 + kx - 1]);
                }
                for o in 0..c.cout {
                    let wt = p[c.w + ((o * c.cin + i) * 3 + ky) * 3 + kx];
                    let plane = &mut out[o * area..(o + 1) * area];
                    for (d, &v) in plane.iter_mut().zip(&shifted) {
                        *d += wt * v;
                    }
                }
            }
        }
    }
}

/// Adds the convolution's weight and bias gradients to `g`, and its input gradient to `din`
/// when asked (each element summed over (o, ky, kx) in that order).
#[allow(clippy::too_many_arguments)]
fn conv_backward(
    p: &[f32],
    c: &Conv,
    h: usize,
    w: usize,
    input: &[f32],
    dout: &[f32],
    g: &mut [f32],
    mut din: Option<&mut [f32]>,
) {
    let area = h * w;
    for o in 0..c.cout {
        let dplane = &dout[o * area..(o + 1) * area];
        let mut gb = 0.0f32;
        for &v in dplane {
            gb += v;
        }
        g[c.b + o] += gb;
        for i in 0..c.cin {
            let src = &input[i * area..(i + 1) * area];
            for ky in 0..3 {
                let (y0, y1) = span(ky, h);
                for kx in 0..3 {
                    let (x0, x1) = span(kx, w);
                    let at = c.w + ((o * c.cin + i) * 3 + ky) * 3 + kx;
                    let mut acc = 0.0f32;
                    for y in y0..y1 {
                        let sy = y + ky - 1;
                        let dd = &dplane[y * w + x0..y * w + x1];
                        let s = &src[sy * w + x0 + kx - 1..sy * w + x1 + kx - 1];
                        for (&a, &b) in dd.iter().zip(s) {
                            acc += a * b;
                        }
                    }
                    g[at] += acc;
                    if let Some(din) = din.as_deref_mut() {
                        let wt = p[at];
                        let dst_plane = &mut din[i * area..(i + 1) * area];
                        for y in y0..y1 {
                            let sy = y + ky - 1;
                            let dd = &dplane[y * w + x0..y * w + x1];
                            let dst = &mut dst_plane[sy * w + x0 + kx - 1..sy * w + x1 + kx - 1];
                            for (d, &v) in dst.iter_mut().zip(dd) {
                                *d += wt * v;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The softmax of `logits` over the `legal` actions, into `out` (same length as `legal`),
/// computed in f64.
pub(crate) fn legal_softmax(logits: &[f32], legal: &[u16], out: &mut [f64]) {
    let max = legal
        .iter()
        .map(|&a| f64::from(logits[a as usize]))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for (o, &a) in out.iter_mut().zip(legal) {
        *o = (f64::from(logits[a as usize]) - max).exp();
        total += *o;
    }
    for o in out.iter_mut() {
        *o /= total;
    }
}

/// The value head's output on the [0, 1] scale: (tanh(pre) + 1) / 2.
pub(crate) fn unit_value(pre: f32) -> f64 {
    (f64::from(pre).tanh() + 1.0) / 2.0
}

/// One training example: planes, legal actions, the search's visit distribution over them,
/// and the outcome for the side to move on the [0, 1] scale.
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    pub x: Vec<f32>,
    pub legal: Vec<u16>,
    pub target: Vec<f32>,
    pub(crate) z: f32,
}

/// Mean losses of a training step.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub(crate) struct Losses {
    pub policy: f64,
    pub value: f64,
}

/// The loss of one example (policy cross-entropy over the legal actions plus the squared
/// error of the value on the [-1, 1] scale, as in AlphaZero), its gradient added to `g`.
fn example_grad(
    l: &Layout,
    p: &[f32],
    e: &Example,
    s: &mut Scratch,
    g: &mut [f32],
    dl: &mut [f32],
) -> (f64, f64) {
    let pre = l.forward(p, &e.x, s);
    let mut probs = vec![0.0f64; e.legal.len()];
    legal_softmax(&s.logits, &e.legal, &mut probs);
    dl.fill(0.0);
    let mut lp = 0.0;
    for ((&a, &pa), &t) in e.legal.iter().zip(&probs).zip(&e.target) {
        dl[a as usize] = (pa - f64::from(t)) as f32;
        if t > 0.0 {
            lp -= f64::from(t) * pa.max(1e-30).ln();
        }
    }
    let v = f64::from(pre).tanh();
    let target = 2.0 * f64::from(e.z) - 1.0;
    let dv = (2.0 * (v - target) * (1.0 - v * v)) as f32;
    l.backward(p, s, dl, dv, g);
    (lp, (v - target) * (v - target))
}

/// One optimiser step on the minibatch `batch` (indices into `examples`): the mean gradient,
/// computed in fixed chunks (see the module docs), then the update. Returns the mean losses
/// before the update.
pub(crate) fn train_step(
    l: &Layout,
    params: &mut [f32],
    opt: &mut OptimState,
    cfg: &OptimConfig,
    lr: f64,
    examples: &[&Example],
    batch: &[usize],
) -> Losses {
    let p: &[f32] = params;
    let parts: Vec<(Vec<f32>, f64, f64)> = batch
        .par_chunks(CHUNK)
        .map(|chunk| {
            let mut g = vec![0.0f32; l.params];
            let mut s = l.scratch();
            let mut dl = vec![0.0f32; l.actions];
            let (mut lp, mut lv) = (0.0, 0.0);
            for &i in chunk {
                let (a, b) = example_grad(l, p, examples[i], &mut s, &mut g, &mut dl);
                lp += a;
                lv += b;
            }
            (g, lp, lv)
        })
        .collect();
    let mut grad = vec![0.0f32; l.params];
    let (mut lp, mut lv) = (0.0, 0.0);
    for (g, a, b) in &parts {
        for (t, &x) in grad.iter_mut().zip(g) {
            *t += x;
        }
        lp += a;
        lv += b;
    }
    let scale = 1.0 / batch.len().max(1) as f32;
    for x in &mut grad {
        *x *= scale;
    }
    opt.step(cfg, lr, params, &grad);
    let n = batch.len().max(1) as f64;
    Losses {
        policy: lp / n,
        value: lv / n,
    }
}

#[cfg(test)]
mod tests;
