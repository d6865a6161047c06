//! A small neural network on the CPU, written out by hand: a multilayer perceptron or a
//! residual convolutional net with a policy head and a value head, its gradients, and the
//! optimisers (SGD with momentum, Nesterov and weight decay; Adam). See docs/network.md.
//!
//! **Bit-exactness** (docs/network.md, docs/conventions.md): every output element and every
//! gradient element is a sum computed by this code in one fixed order (inputs ascending, then
//! kernel taps), never reassociated (Rust does not contract or reorder float arithmetic;
//! vectorised loops run across independent output elements, not along a sum). Every layer
//! is one matrix product over the batch ([`gemm`]) whose kernel runs each output element's
//! chain in that order, so a position's output does not depend on the batch it is in, nor on
//! the vector path the CPU offers. A training step splits its minibatch into fixed chunks of
//! [`CHUNK`] samples (whatever the thread count), accumulates each chunk's gradient in sample
//! order, and adds the chunk gradients in chunk order; so a step gives the same bits on any
//! number of threads. There is no batch normalisation (its statistics would tie a position's
//! output to its batch).

pub(crate) mod encode;
pub(crate) mod gemm;
pub(crate) mod optim;
#[cfg(test)]
mod reference;

use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

use crate::rng::StreamRng;
use encode::Planes;
use gemm::{MatA, NR, Out, Start, Then, gemm, packed_len};

pub use gemm::Simd;

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
/// parameter vector); its packed weights at `fp` (forward) and `bp` (input gradient) of
/// [`Weights`].
#[derive(Copy, Clone, Debug)]
struct Dense {
    w: usize,
    b: usize,
    n_in: usize,
    n_out: usize,
    fp: usize,
    bp: usize,
}

/// A 3x3 convolution with zero padding: weights `[out][in][3][3]` at `w`, biases at `b`;
/// packed weights at `fp` and `bp` of [`Weights`].
#[derive(Copy, Clone, Debug)]
struct Conv {
    w: usize,
    b: usize,
    cin: usize,
    cout: usize,
    fp: usize,
    bp: usize,
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
    /// The vector path of the kernels (`Simd::detect` unless a test or bench asks).
    simd: Simd,
    /// For each 3x3 tap t = 3 ky + kx: the offset of the square it reads, and for each
    /// square whether that square is on the board (all ones) or not (0), `[t][square]`.
    delta: [isize; 9],
    on_board: Vec<u32>,
    /// Floats of the packed weights, forward and backward.
    packed: (usize, usize),
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
            fp: 0,
            bp: 0,
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
                    fp: 0,
                    bp: 0,
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
            fp: 0,
            bp: 0,
        };
        let policy = dense(feat, actions);
        let value = dense(feat, 1);
        let (delta, on_board) = board_taps(input.height, input.width);
        let mut l = Layout {
            input,
            actions,
            trunk,
            policy,
            value,
            params: next,
            simd: Simd::detect(),
            delta,
            on_board,
            packed: (0, 0),
            ranges,
        };
        l.place_packed();
        l
    }

    /// Gives every layer its place in [`Weights`]: forward, the panels of the weights as
    /// the B of the layer's product; backward, those of its input gradient.
    fn place_packed(&mut self) {
        let (mut f, mut b) = (0, 0);
        let mut conv = |c: &mut Conv| {
            c.fp = f;
            f += packed_len(c.cin * 9, c.cout);
            c.bp = b;
            b += packed_len(c.cout * 9, c.cin);
        };
        match &mut self.trunk {
            Trunk::Mlp(_) => {}
            Trunk::Res { stem, blocks } => {
                conv(stem);
                blocks.iter_mut().flatten().for_each(conv);
            }
        }
        let mut dense = |d: &mut Dense| {
            d.fp = f;
            f += packed_len(d.n_in, d.n_out);
            d.bp = b;
            b += packed_len(d.n_out, d.n_in);
        };
        if let Trunk::Mlp(layers) = &mut self.trunk {
            layers.iter_mut().for_each(&mut dense);
        }
        dense(&mut self.policy);
        dense(&mut self.value);
        self.packed = (f, b);
    }

    /// Packs `p`'s weights for the forward products, and for the backward ones when
    /// `backward` (training). Pure copies: the bits of `p` are unchanged.
    pub fn pack(&self, p: &[f32], backward: bool, w: &mut Weights) {
        w.fwd.resize(self.packed.0, 0.0);
        w.bwd.resize(if backward { self.packed.1 } else { 0 }, 0.0);
        let conv = |c: &Conv, w: &mut Weights| {
            let (k, wt) = (c.cin * 9, &p[c.w..c.w + c.cout * c.cin * 9]);
            let fwd = &mut w.fwd[c.fp..c.fp + packed_len(k, c.cout)];
            gemm::pack(k, c.cout, fwd, |n0, panel| {
                pack_cols(wt, k, n0, c.cout, panel)
            });
            if backward {
                let k = c.cout * 9;
                let bwd = &mut w.bwd[c.bp..c.bp + packed_len(k, c.cin)];
                gemm::pack(k, c.cin, bwd, |n0, panel| pack_conv_t(wt, c, n0, panel));
            }
        };
        let dense = |d: &Dense, w: &mut Weights| {
            let wt = &p[d.w..d.w + d.n_in * d.n_out];
            let fwd = &mut w.fwd[d.fp..d.fp + packed_len(d.n_in, d.n_out)];
            gemm::pack(d.n_in, d.n_out, fwd, |n0, panel| {
                pack_rows(wt, d.n_out, n0, d.n_in, panel)
            });
            if backward {
                let bwd = &mut w.bwd[d.bp..d.bp + packed_len(d.n_out, d.n_in)];
                gemm::pack(d.n_out, d.n_in, bwd, |n0, panel| {
                    pack_cols(wt, d.n_out, n0, d.n_in, panel)
                });
            }
        };
        match &self.trunk {
            Trunk::Mlp(layers) => layers.iter().for_each(|d| dense(d, w)),
            Trunk::Res { stem, blocks } => {
                conv(stem, w);
                blocks.iter().flatten().for_each(|c| conv(c, w));
            }
        }
        dense(&self.policy, w);
        dense(&self.value, w);
    }

    /// `p`'s weights packed for inference.
    pub fn weights(&self, p: &[f32]) -> Weights {
        let mut w = Weights::default();
        self.pack(p, false, &mut w);
        w
    }

    /// The same network on another vector path (the bits are the same on every path).
    pub fn with_simd(mut self, simd: Simd) -> Layout {
        self.simd = simd;
        self
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

    /// Buffers for a batch of positions (they grow to the largest batch seen, then stay).
    pub fn scratch(&self) -> Scratch {
        let area = self.area();
        let (sizes, widest): (Vec<usize>, usize) = match &self.trunk {
            Trunk::Mlp(layers) => (
                std::iter::once(self.input.len())
                    .chain(layers.iter().map(|d| d.n_out))
                    .collect(),
                0,
            ),
            Trunk::Res { stem, blocks } => (
                std::iter::once(self.input.len())
                    .chain(std::iter::repeat_n(stem.cout * area, 1 + 2 * blocks.len()))
                    .collect(),
                stem.cin.max(stem.cout),
            ),
        };
        let guard = self.input.width + 1;
        let mut s = Scratch {
            cap: 0,
            acts: vec![Vec::new(); sizes.len()],
            sizes,
            actions: self.actions,
            logits: Vec::new(),
            values: Vec::new(),
            d: Vec::new(),
            d2: Vec::new(),
            d3: Vec::new(),
            x: Vec::new(),
            panel: Vec::new(),
            cols: vec![0.0; widest * 9 * area],
            plane: vec![0.0; area + 2 * guard],
        };
        s.ensure(1);
        s
    }

    fn area(&self) -> usize {
        self.input.height * self.input.width
    }

    /// The forward pass of one position (`x`: its planes) with weights packed from `p`
    /// on the spot: fills `s.logits` and returns the value head's output before tanh. For
    /// tests and one-off evaluations; repeated work packs once ([`Layout::weights`]).
    #[cfg(test)]
    pub(crate) fn forward(&self, p: &[f32], x: &[f32], s: &mut Scratch) -> f32 {
        let w = self.weights(p);
        self.forward_batch(p, &w, x, 1, s);
        s.values[0]
    }

    /// The forward pass of `n` positions (`x`: their planes, one after another), with `w`
    /// packed from `p`: fills `s.logits[..n * actions]` and `s.values[..n]` (before tanh).
    /// Every output element is computed by the same chain of operations whatever `n` and the
    /// position's place in the batch (module docs), so a position's bits do not depend on its
    /// batch.
    pub(crate) fn forward_batch(
        &self,
        p: &[f32],
        w: &Weights,
        x: &[f32],
        n: usize,
        s: &mut Scratch,
    ) {
        s.ensure(n);
        let len = self.input.len();
        s.acts[0][..n * len].copy_from_slice(&x[..n * len]);
        let Scratch {
            acts,
            logits,
            values,
            cols,
            plane,
            ..
        } = s;
        match &self.trunk {
            Trunk::Mlp(layers) => {
                for (l, d) in layers.iter().enumerate() {
                    let (prev, next) = acts.split_at_mut(l + 1);
                    self.dense_forward(p, w, d, n, &prev[l], &mut next[0], Then::Relu);
                }
            }
            Trunk::Res { stem, blocks } => {
                let mut bufs = (&mut cols[..], &mut plane[..]);
                let (prev, next) = acts.split_at_mut(1);
                self.conv_forward(p, w, stem, n, &prev[0], &mut next[0], None, &mut bufs);
                for (b, [c1, c2]) in blocks.iter().enumerate() {
                    let at = 1 + 2 * b;
                    let (prev, next) = acts.split_at_mut(at + 1);
                    let (u, rest) = next.split_at_mut(1);
                    self.conv_forward(p, w, c1, n, &prev[at], &mut u[0], None, &mut bufs);
                    let skip = Some(&prev[at][..]);
                    self.conv_forward(p, w, c2, n, &u[0], &mut rest[0], skip, &mut bufs);
                }
            }
        }
        let feat = acts.last().map_or(&[][..], |v| &v[..]);
        self.dense_forward(p, w, &self.policy, n, feat, logits, Then::Nothing);
        self.dense_forward(p, w, &self.value, n, feat, values, Then::Nothing);
    }

    /// Adds to `g` the gradients of `n` positions' losses, given their forward pass in `s`
    /// (with `w` packed for the backward products too) and the losses' gradients
    /// with respect to the logits (`dlogits`, `n x actions`) and the values before tanh
    /// (`dvalues`). Each parameter's gradient receives one term per position, in position
    /// order, as if the positions were done one by one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn backward_batch(
        &self,
        w: &Weights,
        s: &mut Scratch,
        n: usize,
        dlogits: &[f32],
        dvalues: &[f32],
        g: &mut [f32],
    ) {
        let Scratch {
            acts,
            d,
            d2,
            d3,
            panel,
            cols,
            plane,
            ..
        } = s;
        let feat = acts.last().map_or(&[][..], |v| &v[..]);
        let nf = self.policy.n_in;
        let pol = Some((&mut d[..n * nf], Start::Zero));
        self.dense_backward(w, &self.policy, n, feat, dlogits, g, pol, panel);
        let val = Some((&mut d[..n * nf], Start::AddSum));
        self.dense_backward(w, &self.value, n, feat, dvalues, g, val, panel);
        match &self.trunk {
            Trunk::Mlp(layers) => {
                for (l, dl) in layers.iter().enumerate().rev() {
                    // d holds dL/d(output of layer l, after ReLU).
                    mask(&mut d[..n * dl.n_out], &acts[l + 1]);
                    let din = (l > 0).then(|| (&mut d2[..n * dl.n_in], Start::Zero));
                    self.dense_backward(w, dl, n, &acts[l], &d[..n * dl.n_out], g, din, panel);
                    if l > 0 {
                        d[..n * dl.n_in].copy_from_slice(&d2[..n * dl.n_in]);
                    }
                }
            }
            Trunk::Res { stem, blocks } => {
                let m = n * stem.cout * self.area();
                let (d, d2, d3) = (&mut d[..m], &mut d2[..m], &mut d3[..m]);
                let mut bufs = (&mut cols[..], &mut plane[..], panel);
                for (b, [c1, c2]) in blocks.iter().enumerate().rev() {
                    let at = 1 + 2 * b;
                    // d: dL/d(block output, after ReLU) -> before the ReLU.
                    mask(d, &acts[at + 2]);
                    // Through the second convolution into d2 = dL/du.
                    let din = Some(&mut *d2);
                    self.conv_backward(w, c2, n, &acts[at + 1], d, g, din, &mut bufs);
                    mask(d2, &acts[at + 1]);
                    // Through the first into d3; the skip passes d on unchanged.
                    let din = Some(&mut *d3);
                    self.conv_backward(w, c1, n, &acts[at], d2, g, din, &mut bufs);
                    for (dd, &x) in d.iter_mut().zip(d3.iter()) {
                        *dd += x;
                    }
                }
                mask(d, &acts[1]);
                self.conv_backward(w, stem, n, &acts[0], d, g, None, &mut bufs);
            }
        }
    }

    /// `out[s][o] = b[o] + sum_i x[s][i] w[i][o]`, the sum in ascending i.
    #[allow(clippy::too_many_arguments)]
    fn dense_forward(
        &self,
        p: &[f32],
        w: &Weights,
        d: &Dense,
        n: usize,
        x: &[f32],
        out: &mut [f32],
        then: Then<'_>,
    ) {
        let a = MatA {
            data: x,
            rs: d.n_in,
            ks: 1,
        };
        let b = &w.fwd[d.fp..];
        let bias = Start::ColBias(&p[d.b..d.b + d.n_out]);
        let shape = (n, d.n_out, d.n_in);
        gemm(self.simd, shape, a, b, bias, then, out, Out::rows(d.n_out));
    }

    /// Adds the layer's weight and bias gradients to `g` (one term per position, in order),
    /// and `W dout` to `din` when asked (`Start::Zero`: `din` is overwritten; `AddSum`: the
    /// sum is added to it).
    #[allow(clippy::too_many_arguments)]
    fn dense_backward(
        &self,
        w: &Weights,
        d: &Dense,
        n: usize,
        x: &[f32],
        dout: &[f32],
        g: &mut [f32],
        din: Option<(&mut [f32], Start<'_>)>,
        panel: &mut Vec<f32>,
    ) {
        for row in dout[..n * d.n_out].chunks_exact(d.n_out) {
            for (gb, &dy) in g[d.b..d.b + d.n_out].iter_mut().zip(row) {
                *gb += dy;
            }
        }
        let xt = MatA {
            data: x,
            rs: 1,
            ks: d.n_in,
        };
        grow(panel, packed_len(n, d.n_out));
        gemm::pack(n, d.n_out, panel, |n0, pn| {
            pack_rows(dout, d.n_out, n0, n, pn)
        });
        let gw = &mut g[d.w..d.w + d.n_in * d.n_out];
        let shape = (d.n_in, d.n_out, n);
        let out = Out::rows(d.n_out);
        gemm(
            self.simd,
            shape,
            xt,
            panel,
            Start::Keep,
            Then::Nothing,
            gw,
            out,
        );
        if let Some((din, start)) = din {
            let a = MatA {
                data: dout,
                rs: d.n_out,
                ks: 1,
            };
            let shape = (n, d.n_in, d.n_out);
            let out = Out::rows(d.n_in);
            gemm(
                self.simd,
                shape,
                a,
                &w.bwd[d.bp..],
                start,
                Then::Nothing,
                din,
                out,
            );
        }
    }

    /// `out[s][o][q] = b[o] + sum_{i, t} in[s][i][q + offset(t)] w[o][i][t]` (zero off the
    /// board), the sum in the order (i, t), t = 3 ky + kx the 3x3 taps; then ReLU, after
    /// adding `skip` where given. One product per position: rows its squares (A its im2col
    /// columns), columns the output channels.
    #[allow(clippy::too_many_arguments)]
    fn conv_forward(
        &self,
        p: &[f32],
        w: &Weights,
        c: &Conv,
        n: usize,
        input: &[f32],
        out: &mut [f32],
        skip: Option<&[f32]>,
        (cols, plane): &mut (&mut [f32], &mut [f32]),
    ) {
        let area = self.area();
        let (sin, sout) = (c.cin * area, c.cout * area);
        let bias = Start::ColBias(&p[c.b..c.b + c.cout]);
        for s in 0..n {
            self.im2col(&input[s * sin..(s + 1) * sin], c.cin, false, plane, cols);
            let a = MatA {
                data: cols,
                rs: 1,
                ks: area,
            };
            let then = skip.map_or(Then::Relu, |k| Then::AddRelu(&k[s * sout..(s + 1) * sout]));
            let o = &mut out[s * sout..(s + 1) * sout];
            let shape = (area, c.cout, c.cin * 9);
            gemm(
                self.simd,
                shape,
                a,
                &w.fwd[c.fp..],
                bias,
                then,
                o,
                Out::cols(area),
            );
        }
    }

    /// Adds the convolution's weight and bias gradients to `g` (per position: a sum over
    /// its squares in ascending order, added once), and writes its input gradient to `din`
    /// when asked (each element summed over (o, ky, kx) in that order).
    #[allow(clippy::too_many_arguments)]
    fn conv_backward(
        &self,
        w: &Weights,
        c: &Conv,
        n: usize,
        input: &[f32],
        dout: &[f32],
        g: &mut [f32],
        mut din: Option<&mut [f32]>,
        (cols, plane, panel): &mut (&mut [f32], &mut [f32], &mut Vec<f32>),
    ) {
        let area = self.area();
        let (sin, sout) = (c.cin * area, c.cout * area);
        for s in 0..n {
            let dplane = &dout[s * sout..(s + 1) * sout];
            for (o, gb) in g[c.b..c.b + c.cout].iter_mut().enumerate() {
                let mut acc = 0.0f32;
                for &v in &dplane[o * area..(o + 1) * area] {
                    acc += v;
                }
                *gb += acc;
            }
            // dW[o][(i, t)] += sum_q im2col[(i, t)][q] dout[o][q].
            self.im2col(&input[s * sin..(s + 1) * sin], c.cin, false, plane, cols);
            let a = MatA {
                data: cols,
                rs: area,
                ks: 1,
            };
            grow(panel, packed_len(area, c.cout));
            gemm::pack(area, c.cout, panel, |n0, pn| {
                pack_cols(dplane, area, n0, c.cout, pn)
            });
            let gw = &mut g[c.w..c.w + c.cout * c.cin * 9];
            let shape = (c.cin * 9, c.cout, area);
            let out = Out::cols(c.cin * 9);
            gemm(
                self.simd,
                shape,
                a,
                panel,
                Start::AddSum,
                Then::Nothing,
                gw,
                out,
            );
            // din[i][q] = sum_{(o, t)} dout[o][q - offset(t)] w[o][i][t]: the im2col of
            // dout with the taps mirrored.
            let Some(din) = din.as_deref_mut() else {
                continue;
            };
            self.im2col(dplane, c.cout, true, plane, cols);
            let a = MatA {
                data: cols,
                rs: 1,
                ks: area,
            };
            let di = &mut din[s * sin..(s + 1) * sin];
            let shape = (area, c.cin, c.cout * 9);
            let b = &w.bwd[c.bp..];
            gemm(
                self.simd,
                shape,
                a,
                b,
                Start::Zero,
                Then::Nothing,
                di,
                Out::cols(area),
            );
        }
    }

    /// The im2col of one position's `src` (`ch` planes): `cols[(c * 9 + t) * area + q]` is
    /// `src[c][q + offset(t)]`, or 0 off the board; `mirror` reads tap `8 - t`. Each row is
    /// a shifted copy of the plane (held in `plane` between zero guards) masked by the
    /// board, so it costs no branch.
    fn im2col(&self, src: &[f32], ch: usize, mirror: bool, plane: &mut [f32], cols: &mut [f32]) {
        let area = self.area();
        let guard = self.input.width + 1;
        for c in 0..ch {
            plane[guard..guard + area].copy_from_slice(&src[c * area..(c + 1) * area]);
            for t in 0..9 {
                let tt = if mirror { 8 - t } else { t };
                let from = guard.wrapping_add_signed(self.delta[tt]);
                let shifted = &plane[from..from + area];
                let on = &self.on_board[tt * area..(tt + 1) * area];
                let row = &mut cols[(c * 9 + t) * area..(c * 9 + t + 1) * area];
                for ((x, &v), &m) in row.iter_mut().zip(shifted).zip(on) {
                    *x = f32::from_bits(v.to_bits() & m);
                }
            }
        }
    }
}

/// Weights packed for the kernel's products ([`Layout::pack`]): a function of the parameters,
/// rebuilt when they change.
#[derive(Clone, Debug, Default)]
pub struct Weights {
    fwd: Vec<f32>,
    bwd: Vec<f32>,
}

/// Per-batch buffers: activations of the forward pass, the heads' outputs, gradient buffers
/// for the backward pass and the kernels' im2col and panels. They grow to the largest batch
/// asked for and are reused, so steady work allocates nothing.
#[derive(Clone, Debug)]
pub struct Scratch {
    cap: usize,
    /// Elements per position of each activation.
    sizes: Vec<usize>,
    actions: usize,
    acts: Vec<Vec<f32>>,
    /// The logits, `actions` per position.
    pub logits: Vec<f32>,
    /// The value head's outputs before tanh, one per position.
    pub(crate) values: Vec<f32>,
    d: Vec<f32>,
    d2: Vec<f32>,
    d3: Vec<f32>,
    /// A batch's planes, gathered by callers.
    pub(crate) x: Vec<f32>,
    panel: Vec<f32>,
    /// One position's im2col.
    cols: Vec<f32>,
    /// One plane between zero guards of width + 1.
    plane: Vec<f32>,
}

impl Scratch {
    /// Room for `n` positions.
    pub(crate) fn ensure(&mut self, n: usize) {
        if n <= self.cap {
            return;
        }
        for (a, &len) in self.acts.iter_mut().zip(&self.sizes) {
            a.resize(n * len, 0.0);
        }
        let max = self.sizes.iter().copied().max().unwrap_or(0);
        for b in [&mut self.d, &mut self.d2, &mut self.d3] {
            b.resize(n * max, 0.0);
        }
        self.x.resize(n * self.sizes[0], 0.0);
        self.logits.resize(n * self.actions, 0.0);
        self.values.resize(n, 0.0);
        self.cap = n;
    }
}

fn grow(v: &mut Vec<f32>, len: usize) {
    if v.len() < len {
        v.resize(len, 0.0);
    }
}

/// Zeroes the gradient where the ReLU's output was not positive.
fn mask(d: &mut [f32], out: &[f32]) {
    for (dd, &a) in d.iter_mut().zip(out) {
        *dd = if a <= 0.0 { 0.0 } else { *dd };
    }
}

/// A panel of a row-major `[k][cols]` matrix: rows 0..k, columns n0..n0 + NR (zero past
/// `cols`).
fn pack_rows(m: &[f32], cols: usize, n0: usize, k: usize, panel: &mut [f32]) {
    let w = NR.min(cols - n0);
    for (kk, row) in panel.chunks_exact_mut(NR).take(k).enumerate() {
        row[..w].copy_from_slice(&m[kk * cols + n0..kk * cols + n0 + w]);
        row[w..].fill(0.0);
    }
}

/// A panel of the transpose of a row-major `[rows][k]` matrix: element (kk, j) is
/// `m[(n0 + j) * k + kk]`.
fn pack_cols(m: &[f32], k: usize, n0: usize, rows: usize, panel: &mut [f32]) {
    let w = NR.min(rows - n0);
    for (kk, row) in panel.chunks_exact_mut(NR).take(k).enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            *x = if j < w { m[(n0 + j) * k + kk] } else { 0.0 };
        }
    }
}

/// A panel of a convolution's weights for its input gradient: element ((o, t), i) is
/// `w[o][i][t]`, columns i = n0..n0 + NR.
fn pack_conv_t(wt: &[f32], c: &Conv, n0: usize, panel: &mut [f32]) {
    let w = NR.min(c.cin - n0);
    for (k, row) in panel.chunks_exact_mut(NR).take(c.cout * 9).enumerate() {
        let (o, t) = (k / 9, k % 9);
        for (j, x) in row.iter_mut().enumerate() {
            *x = if j < w {
                wt[(o * c.cin + n0 + j) * 9 + t]
            } else {
                0.0
            };
        }
    }
}

/// For each tap t = 3 ky + kx of an h x w board: the offset of the square it reads,
/// (ky - 1) w + (kx - 1), and for each square q whether q + (ky - 1, kx - 1) is on the
/// board (`u32::MAX`) or not (0), `[t][q]`.
fn board_taps(h: usize, w: usize) -> ([isize; 9], Vec<u32>) {
    let mut delta = [0isize; 9];
    let mut on = vec![0u32; 9 * h * w];
    for ky in 0..3 {
        for kx in 0..3 {
            let t = ky * 3 + kx;
            delta[t] = (ky as isize - 1) * w as isize + kx as isize - 1;
            for y in 0..h {
                for x in 0..w {
                    let (sy, sx) = ((y + ky).wrapping_sub(1), (x + kx).wrapping_sub(1));
                    if sy < h && sx < w {
                        on[t * h * w + y * w + x] = u32::MAX;
                    }
                }
            }
        }
    }
    (delta, on)
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

/// The losses of a chunk of examples (policy cross-entropy over the legal actions plus the
/// squared error of the value on the [-1, 1] scale, as in AlphaZero), their gradients added
/// to `g` (one term per example, in order). Returns the summed losses (in example order).
fn chunk_grad(
    l: &Layout,
    p: &[f32],
    w: &Weights,
    chunk: &[&Example],
    s: &mut Scratch,
    g: &mut [f32],
    dl: &mut Vec<f32>,
) -> (f64, f64) {
    let (n, len, na) = (chunk.len(), l.input.len(), l.actions);
    s.ensure(n);
    for (row, e) in s.x.chunks_exact_mut(len).zip(chunk) {
        row.copy_from_slice(&e.x);
    }
    let x = std::mem::take(&mut s.x);
    l.forward_batch(p, w, &x, n, s);
    s.x = x;
    dl.clear();
    dl.resize(n * na + n, 0.0);
    let (dlogits, dvalues) = dl.split_at_mut(n * na);
    let (mut lp, mut lv) = (0.0, 0.0);
    let mut probs = Vec::new();
    for (k, e) in chunk.iter().enumerate() {
        probs.clear();
        probs.resize(e.legal.len(), 0.0f64);
        legal_softmax(&s.logits[k * na..(k + 1) * na], &e.legal, &mut probs);
        let row = &mut dlogits[k * na..(k + 1) * na];
        let mut lpk = 0.0;
        for ((&a, &pa), &t) in e.legal.iter().zip(&probs).zip(&e.target) {
            row[a as usize] = (pa - f64::from(t)) as f32;
            if t > 0.0 {
                lpk -= f64::from(t) * pa.max(1e-30).ln();
            }
        }
        lp += lpk;
        let v = f64::from(s.values[k]).tanh();
        let target = 2.0 * f64::from(e.z) - 1.0;
        dvalues[k] = (2.0 * (v - target) * (1.0 - v * v)) as f32;
        lv += (v - target) * (v - target);
    }
    l.backward_batch(w, s, n, dlogits, dvalues, g);
    (lp, lv)
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
    let mut w = Weights::default();
    l.pack(p, true, &mut w);
    let w = &w;
    let parts: Vec<(Vec<f32>, f64, f64)> = batch
        .par_chunks(CHUNK)
        .map(|chunk| {
            let mut g = vec![0.0f32; l.params];
            let mut s = l.scratch();
            let mut dl = Vec::new();
            let chunk: Vec<&Example> = chunk.iter().map(|&i| examples[i]).collect();
            let (lp, lv) = chunk_grad(l, p, w, &chunk, &mut s, &mut g, &mut dl);
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
