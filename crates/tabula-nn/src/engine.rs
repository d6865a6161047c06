//! The forward and backward passes over a [`Graph`], batch at a time (docs/network.md,
//! "Kernels").
//!
//! **Bit-exactness.** Every layer is one matrix product ([`gemm`]) per position (a
//! convolution: rows the squares, columns the output channels, A the im2col of the input) or
//! per chunk of positions (a dense layer), and the kernel computes each output element with one
//! chain of operations in a fixed order, so a position's outputs do not depend on its batch or
//! the vector path. Positions are processed in chunks of [`CHUNK`] in parallel; each chunk has
//! its own gradient vector, each parameter's gradient receiving one term per position in
//! position order, and `train_step` adds the chunks' vectors in chunk order: the bits do not
//! depend on the thread count. Batch normalisation's statistics are sums over the whole batch
//! in (position, square) order in f64.

use rayon::prelude::*;

use super::Layout;
use super::gemm::{self, ColNorm, MatA, NR, Out, Panels, Start, Table, Then, gemm, packed_len};
use super::graph::{Act, Buf, Conv, Dense, Graph, Layer, Norm, Op};

/// Positions per chunk (fixed, so the order of every gradient sum is too).
pub(crate) const CHUNK: usize = 16;

/// The bytes of activations an inference batch keeps in flight per worker: it sends
/// positions through the whole net this many bytes' worth at a time, so that they stay in
/// a core's L2 cache from layer to layer (one layer over a batch of 64 at a time was
/// measured 1.4x slower than one position at a time on the 64-channel nets of
/// docs/network.md), while small nets still get batches of up to 64 for their dense
/// layers. Any chunking gives the same bits.
const INFER_BYTES: usize = 1024 << 10;

/// Positions whose heads run as one product in inference: the trunk goes through in chunks
/// ([`INFER_BYTES`]), but a dense head's weights (a 9 x 64 ResNet's policy layer is 3.7 MB)
/// would be streamed from memory once per chunk of four positions; they are read once per
/// group of this many.
const INFER_GROUP: usize = 64;

/// Batch normalisation's epsilon and running-average momentum (PyTorch's defaults, which
/// Liu et al. trained with).
pub(crate) const BN_EPS: f64 = 1e-5;
pub(crate) const BN_MOMENTUM: f64 = 0.1;

/// Whether batch normalisation uses the batch's statistics (training) or the running ones.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Train,
    Infer,
}

/// Weights packed for the kernel's products ([`Layout::pack`]): a function of the parameters,
/// rebuilt when they change.
#[derive(Clone, Debug, Default)]
pub struct Weights {
    pub(crate) fwd: Panels,
    pub(crate) bwd: Panels,
}

/// One chunk's working buffers.
#[derive(Clone, Debug, Default)]
struct Local {
    /// One position's input planes and output gradient planes, each between zero borders
    /// one square wide (the borders are never written).
    pad_x: Vec<f32>,
    pad_d: Vec<f32>,
    panel: Panels,
}

/// A normalisation's per-channel working buffers, and what it keeps from the forward pass
/// for the backward one (reused from batch to batch: no allocation once grown).
#[derive(Clone, Debug, Default)]
struct NormSaved {
    /// The mean and 1 / sqrt(var + eps) per channel (batch or running statistics).
    mean: Vec<f32>,
    inv: Vec<f32>,
    /// gamma * inv per channel (training).
    scale: Vec<f32>,
    /// The normalised input.
    xhat: Vec<f32>,
    /// The updated running mean and variance (training).
    running: Vec<(usize, f32)>,
    /// The batch's mean per channel and the sum of squared deviations from it (training, f64).
    sums: Vec<f64>,
    sqs: Vec<f64>,
}

/// Per-batch buffers: every activation, their gradients (training), the outputs, and each
/// chunk's working buffers. They grow to the largest batch asked for and are reused, so
/// steady work allocates nothing.
#[derive(Clone, Debug)]
pub struct Scratch {
    cap: usize,
    sizes: Vec<usize>,
    actions: usize,
    pub(crate) bufs: Vec<Vec<f32>>,
    grads: Vec<Vec<f32>>,
    saved: Vec<NormSaved>,
    locals: Vec<Local>,
    /// Floats of a position's widest bordered planes.
    pad_len: usize,
    /// The logits, `actions` per position.
    pub logits: Vec<f32>,
    /// The value head's outputs before its squashing (tanh or sigmoid), one per position.
    pub values: Vec<f32>,
    /// A batch's planes, gathered by callers.
    pub x: Vec<f32>,
    /// 1 / sqrt(var + eps) per channel of the normalisation being run at inference.
    norm_inv: Vec<f32>,
    /// Positions per chunk of a large inference batch ([`INFER_BYTES`]).
    infer_chunk: usize,
    /// Inference of more than `infer_chunk` positions: one scratch per worker for the trunk,
    /// and one for the heads ([`Heads`]).
    subs: Vec<Scratch>,
    heads: Vec<Scratch>,
}

impl Scratch {
    pub(crate) fn new(l: &Layout) -> Scratch {
        let g = &l.graph;
        let mut s = Scratch {
            cap: 0,
            sizes: g.bufs.clone(),
            actions: l.actions,
            bufs: vec![Vec::new(); g.bufs.len()],
            grads: vec![Vec::new(); g.bufs.len()],
            saved: vec![NormSaved::default(); g.ops.len()],
            locals: Vec::new(),
            pad_len: l.bordered.widest() * l.bordered.plane,
            logits: Vec::new(),
            values: Vec::new(),
            x: Vec::new(),
            norm_inv: Vec::new(),
            subs: Vec::new(),
            heads: Vec::new(),
            infer_chunk: (INFER_BYTES / (4 * g.bufs.iter().sum::<usize>()).max(1)).clamp(1, 64),
        };
        s.ensure(1);
        s
    }

    /// Positions per inference chunk, for tests of the chunked path on small nets.
    #[cfg(test)]
    pub(crate) fn set_infer_chunk(&mut self, chunk: usize) {
        self.infer_chunk = chunk;
    }

    /// Room for the planes and outputs of `n` positions.
    pub fn ensure(&mut self, n: usize) {
        grow(&mut self.x, n * self.sizes[0]);
        grow(&mut self.logits, n * self.actions);
        grow(&mut self.values, n);
    }

    /// Room for every layer's activations of `n` positions.
    fn ensure_layers(&mut self, n: usize) {
        self.ensure(n);
        if n <= self.cap {
            return;
        }
        for (b, &len) in self.bufs.iter_mut().zip(&self.sizes) {
            b.resize(n * len, 0.0);
        }
        let chunks = n.div_ceil(CHUNK);
        while self.locals.len() < chunks {
            self.locals.push(self.new_local());
        }
        self.cap = n;
    }

    /// Room for `n` positions in the buffers `bufs` only (the heads' scratch: the trunk's
    /// buffers it never touches stay empty).
    fn ensure_some(&mut self, n: usize, bufs: &[Buf]) {
        self.ensure(n);
        for &b in bufs {
            grow(&mut self.bufs[b], n * self.sizes[b]);
        }
        if self.locals.is_empty() {
            self.locals.push(self.new_local());
        }
    }

    /// A chunk's working buffers, its bordered planes zeroed (their borders stay zero).
    fn new_local(&self) -> Local {
        Local {
            pad_x: vec![0.0; self.pad_len],
            pad_d: vec![0.0; self.pad_len],
            ..Local::default()
        }
    }

    /// Gradient buffers for `n` positions (training only).
    fn ensure_grads(&mut self, n: usize) {
        for (b, &len) in self.grads.iter_mut().zip(&self.sizes) {
            if b.len() < n * len {
                b.resize(n * len, 0.0);
            }
        }
    }

    /// The running statistics a training forward pass computed: (parameter, value).
    pub(crate) fn running(&self) -> impl Iterator<Item = (usize, f32)> + '_ {
        self.saved.iter().flat_map(|s| s.running.iter().copied())
    }
}

impl Layout {
    /// The forward pass of `n` positions (`x`: their planes, one after another) with `w`
    /// packed from `p`: fills `s.logits[..n * actions]` and `s.values[..n]` (before the value
    /// head's squashing).
    pub(crate) fn run_forward(
        &self,
        p: &[f32],
        w: &Weights,
        x: &[f32],
        n: usize,
        s: &mut Scratch,
        mode: Mode,
    ) {
        // Inference: at most `infer_chunk` positions, and no more than a worker's share, go
        // through the layers at a time; a larger batch goes through `infer_in_chunks`.
        let chunk = s.infer_chunk.min(n.div_ceil(rayon::current_num_threads()));
        if mode == Mode::Infer && n > chunk {
            return self.infer_in_chunks(p, w, x, n, chunk, s);
        }
        self.forward_layers(p, w, x, n, s, mode);
    }

    /// The forward pass layer after layer over all `n` positions.
    fn forward_layers(
        &self,
        p: &[f32],
        w: &Weights,
        x: &[f32],
        n: usize,
        s: &mut Scratch,
        mode: Mode,
    ) {
        s.ensure_layers(n);
        let len = self.input.len();
        s.bufs[0][..n * len].copy_from_slice(&x[..n * len]);
        self.forward_ops(p, w, 0..self.graph.ops.len(), n, s, mode);
        self.take_outputs(n, s);
    }

    /// Copies the logits and the values of `n` positions out of their buffers in `s`.
    fn take_outputs(&self, n: usize, s: &mut Scratch) {
        let (g, na) = (&self.graph, self.actions);
        s.logits[..n * na].copy_from_slice(&s.bufs[g.logits][..n * na]);
        s.values[..n].copy_from_slice(&s.bufs[g.value][..n]);
    }

    /// The operations `ops` (in order) over `n` positions whose inputs are in `s`.
    fn forward_ops(
        &self,
        p: &[f32],
        w: &Weights,
        ops: std::ops::Range<usize>,
        n: usize,
        s: &mut Scratch,
        mode: Mode,
    ) {
        // Only the AVX-512 path finishes a normalised tile in registers; the AVX2 path
        // would finish it element by element, slower than the two passes.
        let fusing =
            mode == Mode::Infer && self.fuse_norm && self.kernel.simd == gemm::Simd::Avx512;
        let mut i = ops.start;
        while i < ops.end {
            let op = &self.graph.ops[i];
            let fused = self.conv_norm[i].filter(|_| fusing && i + 1 < ops.end);
            if let Some(layers) = fused {
                self.conv_norm_infer(p, w, layers, (op, &self.graph.ops[i + 1]), n, s);
                i += 2;
                continue;
            }
            self.op_forward(p, w, op, n, s, i, mode);
            i += 1;
        }
    }

    /// A convolution and the batch normalisation after it, at inference, as one product per
    /// position whose finish normalises ([`Then::Norm`]): the bits of the two operations run
    /// one after the other, without writing the convolution's output (a pass over memory
    /// per layer, measured in docs/network.md, "Kernels").
    fn conv_norm_infer(
        &self,
        p: &[f32],
        w: &Weights,
        (cv, nm): (Conv, Norm),
        (conv, norm): (&Op, &Op),
        n: usize,
        s: &mut Scratch,
    ) {
        // No positions, no chunk's working buffers (`Scratch::ensure` made none).
        if n == 0 {
            return;
        }
        let inv = &mut s.norm_inv;
        inv.clear();
        inv.extend((0..nm.ch).map(|c| {
            let var = f64::from(p[nm.var + c]);
            (1.0 / (var + BN_EPS).sqrt()) as f32
        }));
        let (lo, hi) = s.bufs.split_at_mut(norm.y);
        let x = &lo[conv.x][..n * s.sizes[conv.x]];
        let y = &mut hi[0][..n * s.sizes[norm.y]];
        let after = match norm.act {
            Act::AddRelu(k) => Then::AddRelu(&lo[k][..]),
            Act::Relu => Then::Relu,
            Act::Identity => Then::Nothing,
        };
        let cn = ColNorm {
            mean: &p[nm.mean..nm.mean + nm.ch],
            inv,
            gamma: &p[nm.gamma..nm.gamma + nm.ch],
            beta: &p[nm.beta..nm.beta + nm.ch],
            after,
        };
        self.conv_forward(p, w, cv, n, x, y, Then::Norm(&cn), &mut s.locals[0]);
    }

    /// Inference of `n` positions: the batch splits into one run of consecutive positions
    /// per worker, each worker with scratches of its own (inference ties no position to
    /// another, so the bits are those of one position alone). A worker takes its positions
    /// a group ([`INFER_GROUP`]) at a time: the trunk `chunk` positions at a time through
    /// its layers, then the heads ([`Heads`]) over the whole group.
    fn infer_in_chunks(
        &self,
        p: &[f32],
        w: &Weights,
        x: &[f32],
        n: usize,
        chunk: usize,
        s: &mut Scratch,
    ) {
        s.ensure(n);
        let workers = rayon::current_num_threads().min(n.div_ceil(chunk)).max(1);
        // Positions per worker and per group: whole numbers of chunks.
        let share = n.div_ceil(chunk).div_ceil(workers) * chunk;
        let group = INFER_GROUP.div_ceil(chunk) * chunk;
        while s.subs.len() < workers {
            s.subs.push(Scratch::new(self));
            s.heads.push(Scratch::new(self));
        }
        let (len, na) = (self.input.len(), self.actions);
        s.subs[..workers]
            .par_iter_mut()
            .zip(s.heads[..workers].par_iter_mut())
            .zip(x[..n * len].par_chunks(share * len))
            .zip(s.logits[..n * na].par_chunks_mut(share * na))
            .zip(s.values[..n].par_chunks_mut(share))
            .for_each(|((((sub, head), x), logits), values)| {
                for (k, v) in values.chunks_mut(group).enumerate() {
                    let (at, m) = (k * group, v.len());
                    let x = &x[at * len..(at + m) * len];
                    self.infer_group(p, w, x, m, chunk, sub, head);
                    logits[at * na..(at + m) * na].copy_from_slice(&head.logits[..m * na]);
                    v.copy_from_slice(&head.values[..m]);
                }
            });
    }

    /// One group of `m` positions: the trunk in `sub`, `chunk` positions at a time, its
    /// outputs gathered into `head`, then the heads over all `m` in `head`.
    #[allow(clippy::too_many_arguments)]
    fn infer_group(
        &self,
        p: &[f32],
        w: &Weights,
        x: &[f32],
        m: usize,
        chunk: usize,
        sub: &mut Scratch,
        head: &mut Scratch,
    ) {
        let (len, h) = (self.input.len(), &self.heads);
        head.ensure_some(m, &h.bufs);
        for c0 in (0..m).step_by(chunk) {
            let c = chunk.min(m - c0);
            sub.ensure_layers(c);
            sub.bufs[0][..c * len].copy_from_slice(&x[c0 * len..(c0 + c) * len]);
            self.forward_ops(p, w, 0..h.at, c, sub, Mode::Infer);
            for &b in &h.live {
                let size = sub.sizes[b];
                head.bufs[b][c0 * size..(c0 + c) * size].copy_from_slice(&sub.bufs[b][..c * size]);
            }
        }
        let ops = h.at..self.graph.ops.len();
        self.forward_ops(p, w, ops, m, head, Mode::Infer);
        self.take_outputs(m, head);
    }

    #[allow(clippy::too_many_arguments)]
    fn op_forward(
        &self,
        p: &[f32],
        w: &Weights,
        op: &Op,
        n: usize,
        s: &mut Scratch,
        i: usize,
        mode: Mode,
    ) {
        let (lo, hi) = s.bufs.split_at_mut(op.y);
        let (x, y) = (&lo[op.x][..], &mut hi[0][..n * s.sizes[op.y]]);
        let skip = match op.act {
            Act::AddRelu(k) => Some(&lo[k][..]),
            _ => None,
        };
        let (lx, ly) = (s.sizes[op.x], s.sizes[op.y]);
        match op.layer {
            Layer::Norm(nm) => {
                let area = ly / nm.ch;
                self.norm_forward(p, nm, area, n, x, y, skip, op.act, &mut s.saved[i], mode);
            }
            layer => {
                // Training splits the batch into the gradient's chunks; inference runs on one
                // worker (`run_forward`), all its positions at once.
                let chunk = if mode == Mode::Train { CHUNK } else { n.max(1) };
                let locals = &mut s.locals[..n.div_ceil(chunk)];
                y.par_chunks_mut(chunk * ly)
                    .zip(locals.par_iter_mut())
                    .enumerate()
                    .for_each(|(c, (y, local))| {
                        let (s0, m) = (c * chunk, y.len() / ly);
                        let x = &x[s0 * lx..(s0 + m) * lx];
                        let skip = skip.map(|k| &k[s0 * ly..(s0 + m) * ly]);
                        let then = match (op.act, skip) {
                            (Act::AddRelu(_), Some(k)) => Then::AddRelu(k),
                            (Act::Relu, _) => Then::Relu,
                            _ => Then::Nothing,
                        };
                        match layer {
                            Layer::Conv(cv) => self.conv_forward(p, w, cv, m, x, y, then, local),
                            Layer::Dense(d) => self.dense_forward(p, w, d, m, x, y, then),
                            Layer::Norm(_) => unreachable!("handled above"),
                        }
                    });
            }
        }
    }

    /// Adds to the chunks' gradient vectors `gs` (one per [`CHUNK`] positions) the
    /// gradients of `n` positions' losses, given their training forward pass in `s` and the
    /// losses' gradients with respect to the logits (`dlogits`, `n x actions`) and the values
    /// before the value head's squashing (`dvalues`).
    pub(crate) fn run_backward(
        &self,
        w: &Weights,
        s: &mut Scratch,
        n: usize,
        dlogits: &[f32],
        dvalues: &[f32],
        gs: &mut [Vec<f32>],
    ) {
        s.ensure_grads(n);
        let g = &self.graph;
        s.grads[g.logits][..n * self.actions].copy_from_slice(&dlogits[..n * self.actions]);
        s.grads[g.value][..n].copy_from_slice(&dvalues[..n]);
        for (i, op) in g.ops.iter().enumerate().rev() {
            self.op_backward(w, op, n, s, (i, false), gs);
        }
    }

    /// [`Layout::run_backward`], and the gradient with respect to the inputs into `dx`
    /// (`n x input().len()`, overwritten): for networks chained one into another (MuZero's
    /// representation, dynamics and prediction). Every operation reading the input takes the
    /// input-gradient path that its other inputs take, so each element of `dx` is one chain
    /// in a fixed order. The valid stem has no input gradient ([`Layout::input_gradient`]).
    pub(crate) fn run_backward_to_input(
        &self,
        w: &Weights,
        s: &mut Scratch,
        n: usize,
        (dlogits, dvalues): (&[f32], &[f32]),
        gs: &mut [Vec<f32>],
        dx: &mut [f32],
    ) {
        s.ensure_grads(n);
        let g = &self.graph;
        s.grads[g.logits][..n * self.actions].copy_from_slice(&dlogits[..n * self.actions]);
        s.grads[g.value][..n].copy_from_slice(&dvalues[..n]);
        for (i, op) in g.ops.iter().enumerate().rev() {
            self.op_backward(w, op, n, s, (i, true), gs);
        }
        let len = self.input.len();
        dx[..n * len].copy_from_slice(&s.grads[0][..n * len]);
    }

    fn op_backward(
        &self,
        w: &Weights,
        op: &Op,
        n: usize,
        s: &mut Scratch,
        (i, input_grad): (usize, bool),
        gs: &mut [Vec<f32>],
    ) {
        let (ly, lx) = (s.sizes[op.y], s.sizes[op.x]);
        let (glo, ghi) = s.grads.split_at_mut(op.y);
        let dy = &mut ghi[0][..n * ly];
        let y = &s.bufs[op.y][..n * ly];
        // Through the activation: the ReLU's mask, and the skip's share.
        if op.act != Act::Identity {
            mask(dy, y);
        }
        if let Act::AddRelu(k) = op.act {
            let dk = &mut glo[k][..n * ly];
            if op.skip_first {
                dk.copy_from_slice(dy);
            } else {
                for (a, &b) in dk.iter_mut().zip(dy.iter()) {
                    *a += b;
                }
            }
        }
        let dy: &[f32] = dy;
        let want_dx = op.x != 0 || input_grad;
        let dx = &mut glo[op.x][..if want_dx { n * lx } else { 0 }];
        let x = &s.bufs[op.x][..n * lx];
        let start = if op.x_first {
            Start::Zero
        } else {
            Start::AddSum
        };
        match op.layer {
            Layer::Norm(nm) => {
                let area = ly / nm.ch;
                let saved = &s.saved[i];
                self.norm_backward(
                    nm,
                    area,
                    n,
                    dy,
                    saved,
                    want_dx.then_some(dx),
                    start,
                    &mut gs[0],
                );
            }
            layer => {
                let chunks = n.div_ceil(CHUNK);
                let locals = &mut s.locals[..chunks];
                let mut dxs: Vec<&mut [f32]> = if want_dx {
                    dx.chunks_mut(CHUNK * lx).collect()
                } else {
                    (0..chunks).map(|_| &mut [][..]).collect()
                };
                dxs.par_iter_mut()
                    .zip(locals.par_iter_mut())
                    .zip(gs[..chunks].par_iter_mut())
                    .enumerate()
                    .for_each(|(c, ((dx, local), g))| {
                        let (s0, m) = (c * CHUNK, CHUNK.min(n - c * CHUNK));
                        let x = &x[s0 * lx..(s0 + m) * lx];
                        let dy = &dy[s0 * ly..(s0 + m) * ly];
                        let dx = want_dx.then_some(&mut **dx);
                        match layer {
                            Layer::Conv(cv) => {
                                self.conv_backward(w, cv, m, x, dy, g, dx, start, local)
                            }
                            Layer::Dense(d) => {
                                self.dense_backward(w, d, m, x, dy, g, dx, start, &mut local.panel)
                            }
                            Layer::Norm(_) => unreachable!("handled above"),
                        }
                    });
            }
        }
    }

    /// `out[s][o] = b[o] + sum_i x[s][i] w[i][o]`, the sum in ascending i.
    #[allow(clippy::too_many_arguments)]
    fn dense_forward(
        &self,
        p: &[f32],
        w: &Weights,
        d: Dense,
        n: usize,
        x: &[f32],
        out: &mut [f32],
        then: Then<'_>,
    ) {
        let a = MatA::strided(x, d.n_in, 1);
        let bias = Start::ColBias(&p[d.b..d.b + d.n_out]);
        let shape = (n, d.n_out, d.n_in);
        gemm(
            self.kernel,
            shape,
            a,
            &w.fwd[d.fp..],
            bias,
            then,
            out,
            Out::rows(d.n_out),
        );
    }

    /// Adds the layer's weight and bias gradients to `g` (one term per position, in order),
    /// and writes (`Start::Zero`) or adds (`AddSum`) `W dout` to `din` when asked.
    #[allow(clippy::too_many_arguments)]
    fn dense_backward(
        &self,
        w: &Weights,
        d: Dense,
        n: usize,
        x: &[f32],
        dout: &[f32],
        g: &mut [f32],
        din: Option<&mut [f32]>,
        start: Start<'_>,
        panel: &mut Panels,
    ) {
        for row in dout[..n * d.n_out].chunks_exact(d.n_out) {
            for (gb, &dy) in g[d.b..d.b + d.n_out].iter_mut().zip(row) {
                *gb += dy;
            }
        }
        let xt = MatA::strided(x, 1, d.n_in);
        panel.grow(packed_len(n, d.n_out));
        gemm::pack(n, d.n_out, panel, |n0, pn| {
            pack_rows(dout, d.n_out, n0, n, pn)
        });
        let gw = &mut g[d.w..d.w + d.n_in * d.n_out];
        let shape = (d.n_in, d.n_out, n);
        gemm(
            self.kernel,
            shape,
            xt,
            panel,
            Start::Keep,
            Then::Nothing,
            gw,
            Out::rows(d.n_out),
        );
        if let Some(din) = din {
            let a = MatA::strided(dout, d.n_out, 1);
            let shape = (n, d.n_in, d.n_out);
            gemm(
                self.kernel,
                shape,
                a,
                &w.bwd[d.bp..],
                start,
                Then::Nothing,
                din,
                Out::rows(d.n_in),
            );
        }
    }

    /// `out[s][o][q] = b[o] + sum_{i, t} in[s][i][q + offset(t)] w[o][i][t]` (zero off the
    /// board), the sum in the order (i, t), t = 3 ky + kx the taps. One product per position:
    /// rows its output squares, columns the output channels, A the im2col of the input read
    /// in place from its planes between zero borders, or, unpadded, from the planes
    /// themselves at the interior squares ([`Layout::conv_input`]).
    #[allow(clippy::too_many_arguments)]
    fn conv_forward<'a>(
        &self,
        p: &[f32],
        w: &Weights,
        c: Conv,
        n: usize,
        input: &[f32],
        out: &mut [f32],
        then: Then<'a>,
        local: &mut Local,
    ) {
        let area = c.out_area();
        let (sin, sout) = (c.cin * c.in_area(), c.cout * area);
        let bias =
            c.b.map_or(Start::Zero, |b| Start::ColBias(&p[b..b + c.cout]));
        for s in 0..n {
            let x = &input[s * sin..(s + 1) * sin];
            let a = self.conv_input(x, c, &mut local.pad_x, &self.bordered.taps);
            let at = |t: Then<'a>| match t {
                Then::AddRelu(k) => Then::AddRelu(&k[s * sout..(s + 1) * sout]),
                t => t,
            };
            let cn;
            let then = match then {
                Then::Norm(c) => {
                    cn = ColNorm {
                        after: at(c.after),
                        ..*c
                    };
                    Then::Norm(&cn)
                }
                t => at(t),
            };
            let o = &mut out[s * sout..(s + 1) * sout];
            let shape = (area, c.cout, c.cin * c.taps);
            gemm(
                self.kernel,
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

    /// Adds the convolution's weight and bias gradients to `g` (per position: a sum over its
    /// squares in ascending order, added once), and its input gradient to `din` when asked
    /// (each element summed over (o, t) in that order).
    #[allow(clippy::too_many_arguments)]
    fn conv_backward(
        &self,
        w: &Weights,
        c: Conv,
        n: usize,
        input: &[f32],
        dout: &[f32],
        g: &mut [f32],
        mut din: Option<&mut [f32]>,
        start: Start<'_>,
        local: &mut Local,
    ) {
        let area = c.out_area();
        let (sin, sout) = (c.cin * c.in_area(), c.cout * area);
        let Local {
            pad_x,
            pad_d,
            panel,
        } = local;
        let taps = &self.bordered.taps;
        for s in 0..n {
            let dplane = &dout[s * sout..(s + 1) * sout];
            if let Some(b) = c.b {
                for (o, gb) in g[b..b + c.cout].iter_mut().enumerate() {
                    let mut acc = 0.0f32;
                    for &v in &dplane[o * area..(o + 1) * area] {
                        acc += v;
                    }
                    *gb += acc;
                }
            }
            // dW[o][(i, t)] += sum_q im2col[(i, t)][q] dout[o][q]: A the transposed im2col.
            panel.grow(packed_len(area, c.cout));
            gemm::pack(area, c.cout, panel, |n0, pn| {
                pack_cols(dplane, area, n0, c.cout, pn)
            });
            let x = &input[s * sin..(s + 1) * sin];
            let a = self.conv_input(x, c, pad_x, taps).transposed();
            let gw = &mut g[c.w..c.w + c.cout * c.cin * c.taps];
            let shape = (c.cin * c.taps, c.cout, area);
            let out = Out::cols(c.cin * c.taps);
            gemm(
                self.kernel,
                shape,
                a,
                panel,
                Start::AddSum,
                Then::Nothing,
                gw,
                out,
            );
            // din[i][q] = sum_{(o, t)} dout[o][q - offset(t)] w[o][i][t]: the im2col of dout
            // with the taps mirrored. An unpadded convolution is only ever a stem reading the
            // input planes (`graph::build`), whose gradient nobody asks for.
            let Some(din) = din.as_deref_mut() else {
                continue;
            };
            debug_assert!(!c.valid, "no input gradient of an unpadded convolution");
            let mirrored = Conv { cin: c.cout, ..c };
            let a = self.conv_input(dplane, mirrored, pad_d, &self.bordered.mirrored);
            let di = &mut din[s * sin..(s + 1) * sin];
            let shape = (area, c.cin, c.cout * c.taps);
            gemm(
                self.kernel,
                shape,
                a,
                &w.bwd[c.bp..],
                start,
                Then::Nothing,
                di,
                Out::cols(area),
            );
        }
    }

    /// The im2col of one position's `src` (`c.cin` planes) as a matrix read in place: row q
    /// (an output square), term (i, t) the square's tap-t neighbour in plane i, 0 off the
    /// board. A 1x1 convolution reads `src` itself; an unpadded 3x3 one reads `src` through
    /// its interior squares' corners and its own term table ([`Unpadded`]); a padded 3x3
    /// one copies the planes into `pad`, each between zero borders one square wide, and
    /// reads them through the squares' corners and `taps` ([`Bordered`]).
    fn conv_input<'a>(
        &'a self,
        src: &'a [f32],
        c: Conv,
        pad: &'a mut [f32],
        taps: &'a Table,
    ) -> MatA<'a> {
        let area = c.in_area();
        if c.taps == 1 {
            return MatA::strided(src, 1, area);
        }
        if c.valid {
            let u = self.bordered.unpadded(c);
            return MatA {
                data: src,
                rows: u.corners.first(c.out_area()),
                ks: u.taps.first(c.cin * 9),
            };
        }
        // Every padded 3x3 convolution reads planes of one size (the trunk's).
        debug_assert_eq!((c.ih, c.iw), (self.bordered.h, self.bordered.w));
        let (w, plane) = (self.bordered.w, self.bordered.plane);
        let planes = src[..c.cin * area].chunks_exact(area);
        for (x, p) in planes.zip(pad.chunks_exact_mut(plane)) {
            // A board's width as a constant: each row's copy is then a few moves, not a call
            // to `memcpy` (those calls were 4-5% of a 3x3 net's inference).
            match w {
                3 => border_rows::<3>(x, p),
                4 => border_rows::<4>(x, p),
                5 => border_rows::<5>(x, p),
                6 => border_rows::<6>(x, p),
                7 => border_rows::<7>(x, p),
                8 => border_rows::<8>(x, p),
                9 => border_rows::<9>(x, p),
                _ => {
                    for (y, row) in x.chunks_exact(w).enumerate() {
                        let to = (y + 1) * (w + 2) + 1;
                        p[to..to + w].copy_from_slice(row);
                    }
                }
            }
        }
        MatA {
            data: pad,
            rows: self.bordered.corners.first(area),
            ks: taps.first(c.cin * 9),
        }
    }

    /// Batch normalisation, then the activation. Training: the batch's mean and (biased)
    /// variance per channel, sums in f64 over (position, square) in order; the running
    /// statistics move by [`BN_MOMENTUM`] (the variance's unbiased estimate, as PyTorch).
    /// Inference: the running statistics. `xhat = (x - mean) * inv`, `y = gamma xhat + beta`
    /// in f32, `inv = 1 / sqrt(var + eps)`.
    #[allow(clippy::too_many_arguments)]
    fn norm_forward(
        &self,
        p: &[f32],
        nm: Norm,
        area: usize,
        n: usize,
        x: &[f32],
        y: &mut [f32],
        skip: Option<&[f32]>,
        act: Act,
        saved: &mut NormSaved,
        mode: Mode,
    ) {
        let ch = nm.ch;
        let count = (n * area) as f64;
        let plane = |s: usize, c: usize| (s * ch + c) * area;
        saved.mean.resize(ch, 0.0);
        saved.inv.resize(ch, 0.0);
        saved.running.clear();
        if mode == Mode::Train {
            // Sums over (position, square) in that order for each channel, in f64.
            let (sums, sqs) = (&mut saved.sums, &mut saved.sqs);
            sums.resize(ch, 0.0);
            sqs.resize(ch, 0.0);
            channel_sums(n, ch, area, sums, |_, at| f64::from(x[at]));
            for m in sums.iter_mut() {
                *m /= count;
            }
            let means: &[f64] = sums;
            channel_sums(n, ch, area, sqs, |c, at| {
                let d = f64::from(x[at]) - means[c];
                d * d
            });
        }
        for c in 0..ch {
            let (m, inv) = match mode {
                Mode::Infer => {
                    let var = f64::from(p[nm.var + c]);
                    (p[nm.mean + c], (1.0 / (var + BN_EPS).sqrt()) as f32)
                }
                Mode::Train => {
                    let (m, sq) = (saved.sums[c], saved.sqs[c]);
                    let var = sq / count;
                    let unbiased = if count > 1.0 { sq / (count - 1.0) } else { var };
                    let mo = BN_MOMENTUM;
                    let rm = (1.0 - mo) * f64::from(p[nm.mean + c]) + mo * m;
                    let rv = (1.0 - mo) * f64::from(p[nm.var + c]) + mo * unbiased;
                    saved.running.push((nm.mean + c, rm as f32));
                    saved.running.push((nm.var + c, rv as f32));
                    (m as f32, (1.0 / (var + BN_EPS).sqrt()) as f32)
                }
            };
            saved.mean[c] = m;
            saved.inv[c] = inv;
            if mode == Mode::Train {
                saved.scale.resize(ch, 0.0);
                saved.scale[c] = p[nm.gamma + c] * inv;
            }
        }
        if mode == Mode::Train {
            saved.xhat.resize(n * ch * area, 0.0);
        }
        for s in 0..n {
            for c in 0..ch {
                let (m, inv, gamma, beta) =
                    (saved.mean[c], saved.inv[c], p[nm.gamma + c], p[nm.beta + c]);
                let at = plane(s, c);
                let (xs, ys) = (&x[at..at + area], &mut y[at..at + area]);
                if mode == Mode::Train {
                    for (h, &v) in saved.xhat[at..at + area].iter_mut().zip(xs) {
                        *h = (v - m) * inv;
                    }
                }
                // One plain loop per case (the compiler vectorises them; each element's
                // operations are those of `(x - m) * inv`, `gamma xhat + beta`, the act).
                let norm = |v: f32| gamma * ((v - m) * inv) + beta;
                match (act, skip) {
                    (Act::AddRelu(_), Some(k)) => {
                        for ((o, &v), &k) in ys.iter_mut().zip(xs).zip(&k[at..at + area]) {
                            *o = relu(norm(v) + k);
                        }
                    }
                    (Act::Relu, _) => {
                        for (o, &v) in ys.iter_mut().zip(xs) {
                            *o = relu(norm(v));
                        }
                    }
                    _ => {
                        for (o, &v) in ys.iter_mut().zip(xs) {
                            *o = norm(v);
                        }
                    }
                }
            }
        }
    }

    /// The gradient through a training-mode batch normalisation: `dgamma = sum dy xhat` and
    /// `dbeta = sum dy` (f64, in order) added to `g`, and `dx = gamma inv (dy - mean(dy) -
    /// xhat mean(dy xhat))` written or added to `dx`.
    #[allow(clippy::too_many_arguments)]
    fn norm_backward(
        &self,
        nm: Norm,
        area: usize,
        n: usize,
        dy: &[f32],
        saved: &NormSaved,
        dx: Option<&mut [f32]>,
        start: Start<'_>,
        g: &mut [f32],
    ) {
        let ch = nm.ch;
        let count = (n * area) as f64;
        let plane = |s: usize, c: usize| (s * ch + c) * area;
        let (mut sd, mut sdx) = (vec![0.0f64; ch], vec![0.0f64; ch]);
        channel_sums(n, ch, area, &mut sd, |_, at| f64::from(dy[at]));
        let xhat = &saved.xhat;
        channel_sums(n, ch, area, &mut sdx, |_, at| {
            f64::from(dy[at]) * f64::from(xhat[at])
        });
        for c in 0..ch {
            g[nm.gamma + c] += sdx[c] as f32;
            g[nm.beta + c] += sd[c] as f32;
        }
        let Some(dx) = dx else { return };
        for s in 0..n {
            for c in 0..ch {
                let (k1, k2) = ((sd[c] / count) as f32, (sdx[c] / count) as f32);
                let scale = saved.scale[c];
                let at = plane(s, c);
                let (d, h, o) = (
                    &dy[at..at + area],
                    &xhat[at..at + area],
                    &mut dx[at..at + area],
                );
                let v = |d: f32, h: f32| scale * ((d - k1) - h * k2);
                if matches!(start, Start::Zero) {
                    for ((o, &d), &h) in o.iter_mut().zip(d).zip(h) {
                        *o = v(d, h);
                    }
                } else {
                    for ((o, &d), &h) in o.iter_mut().zip(d).zip(h) {
                        *o += v(d, h);
                    }
                }
            }
        }
    }

    /// Packs `p`'s weights for the forward products, and for the backward ones when
    /// `backward` (training). Pure copies: the bits of `p` are unchanged.
    pub fn pack(&self, p: &[f32], backward: bool, w: &mut Weights) {
        w.fwd.set_len(self.packed.0);
        w.bwd.set_len(if backward { self.packed.1 } else { 0 });
        for op in &self.graph.ops {
            match op.layer {
                Layer::Conv(c) => {
                    let (k, wt) = (c.cin * c.taps, &p[c.w..c.w + c.cout * c.cin * c.taps]);
                    let fwd = &mut w.fwd[c.fp..c.fp + packed_len(k, c.cout)];
                    gemm::pack(k, c.cout, fwd, |n0, panel| {
                        pack_cols(wt, k, n0, c.cout, panel)
                    });
                    if backward {
                        let k = c.cout * c.taps;
                        let bwd = &mut w.bwd[c.bp..c.bp + packed_len(k, c.cin)];
                        gemm::pack(k, c.cin, bwd, |n0, panel| pack_conv_t(wt, c, n0, panel));
                    }
                }
                Layer::Dense(d) => {
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
                }
                Layer::Norm(_) => {}
            }
        }
    }
}

/// Gives every layer its place in [`Weights`]: forward, the panels of its weights as the B
/// of its product; backward, those of its input gradient. Returns the floats of each.
pub(crate) fn place_packed(g: &mut Graph) -> (usize, usize) {
    let (mut f, mut b) = (0, 0);
    for op in &mut g.ops {
        match &mut op.layer {
            Layer::Conv(c) => {
                c.fp = f;
                f += packed_len(c.cin * c.taps, c.cout);
                c.bp = b;
                b += packed_len(c.cout * c.taps, c.cin);
            }
            Layer::Dense(d) => {
                d.fp = f;
                f += packed_len(d.n_in, d.n_out);
                d.bp = b;
                b += packed_len(d.n_out, d.n_in);
            }
            Layer::Norm(_) => {}
        }
    }
    (f, b)
}

#[inline(always)]
/// `out[c]` = the f64 sum of `term(c, at)` over positions s, then squares q, in that order,
/// `at` the element's index in `[position][channel][square]` planes. Eight channels run side
/// by side (their chains interleaved to hide the adds' latency); each channel's chain is
/// the one-channel loop's.
fn channel_sums(
    n: usize,
    ch: usize,
    area: usize,
    out: &mut [f64],
    term: impl Fn(usize, usize) -> f64,
) {
    const W: usize = 8;
    let mut c0 = 0;
    while c0 < ch {
        let w = W.min(ch - c0);
        let mut acc = [0.0f64; W];
        for s in 0..n {
            for q in 0..area {
                if w == W {
                    for (j, a) in acc.iter_mut().enumerate() {
                        *a += term(c0 + j, (s * ch + c0 + j) * area + q);
                    }
                } else {
                    for (j, a) in acc[..w].iter_mut().enumerate() {
                        *a += term(c0 + j, (s * ch + c0 + j) * area + q);
                    }
                }
            }
        }
        out[c0..c0 + w].copy_from_slice(&acc[..w]);
        c0 += w;
    }
}

/// Copies a plane's rows, `W` floats each, into the inside of its bordered plane (rows
/// `W + 2` apart, one square of border around).
fn border_rows<const W: usize>(plane: &[f32], bordered: &mut [f32]) {
    for (y, row) in plane.chunks_exact(W).enumerate() {
        let to = (y + 1) * (W + 2) + 1;
        bordered[to..to + W].copy_from_slice(row);
    }
}

fn relu(x: f32) -> f32 {
    if x < 0.0 { 0.0 } else { x }
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
fn pack_conv_t(wt: &[f32], c: Conv, n0: usize, panel: &mut [f32]) {
    let w = NR.min(c.cin - n0);
    for (k, row) in panel.chunks_exact_mut(NR).take(c.cout * c.taps).enumerate() {
        let (o, t) = (k / c.taps, k % c.taps);
        for (j, x) in row.iter_mut().enumerate() {
            *x = if j < w {
                wt[(o * c.cin + n0 + j) * c.taps + t]
            } else {
                0.0
            };
        }
    }
}

/// How the 3x3 convolutions read a position's planes: the padded ones, planes of the trunk's
/// h x w held between zero borders one square wide (rows w + 2 long, `plane` floats each);
/// the unpadded ones, their input planes in place ([`Unpadded`]). A function of the board and
/// the graph, built once per layout.
#[derive(Clone, Debug)]
pub(crate) struct Bordered {
    /// The padded convolutions' planes' height and width.
    pub(crate) h: usize,
    pub(crate) w: usize,
    /// Floats of one bordered plane, (h + 2)(w + 2).
    pub plane: usize,
    /// For each square (y, x), in order: the offset of its window's corner, square (y - 1,
    /// x - 1), in the bordered plane: y (w + 2) + x.
    pub corners: Table,
    /// For each term (i, t) up to the widest 3x3 convolution's planes: its offset from a
    /// square's corner, plane i then tap t's row and column (a convolution over `c` planes
    /// reads the first 9c); `mirrored` reads tap 8 - t (the input gradient's).
    pub(crate) taps: Table,
    pub mirrored: Table,
    /// One per size of input planes that unpadded 3x3 convolutions read.
    unpadded: Vec<Unpadded>,
}

/// How the unpadded 3x3 convolutions over `h` x `w` planes read them in place: output
/// square (y, x) of the (h - 2) x (w - 2) is the window whose corner is input square (y, x),
/// so its terms are those of the padded convolution at square (y + 1, x + 1), in the same
/// order (i, t), none of them off the board.
#[derive(Clone, Debug)]
pub(crate) struct Unpadded {
    h: usize,
    w: usize,
    /// For each output square (y, x), in order: y w + x.
    corners: Table,
    /// For each term (i, t) up to the widest such convolution's input planes: i h w + ky w
    /// + kx, t = 3 ky + kx.
    taps: Table,
}

impl Bordered {
    /// The tables of `g`'s 3x3 convolutions; `h` x `w`: the planes the padded ones read
    /// when the graph has none (an MLP's: the tables are then never read).
    pub(crate) fn new(g: &Graph, h: usize, w: usize) -> Bordered {
        let convs3 = || {
            g.ops.iter().filter_map(|op| match op.layer {
                Layer::Conv(c) if c.taps > 1 => Some(c),
                _ => None,
            })
        };
        let padded = || convs3().filter(|c| !c.valid);
        let widest = padded().map(|c| c.cin.max(c.cout)).max().unwrap_or(0);
        // The padded convolutions all read the trunk's planes (graph::build).
        let (h, w) = padded().next().map_or((h, w), |c| (c.ih, c.iw));
        let mut unpadded: Vec<Unpadded> = Vec::new();
        for c in convs3().filter(|c| c.valid) {
            let (ih, iw, cin) = (c.ih, c.iw, c.cin);
            let known = unpadded.iter().find(|u| (u.h, u.w) == (ih, iw));
            if known.is_some_and(|u| u.taps.len() >= 9 * cin) {
                continue;
            }
            unpadded.retain(|u| (u.h, u.w) != (ih, iw));
            let (oh, ow) = c.out_hw();
            unpadded.push(Unpadded {
                h: ih,
                w: iw,
                corners: Table::new(
                    (0..oh)
                        .flat_map(|y| (0..ow).map(move |x| y * iw + x))
                        .collect(),
                ),
                taps: Table::new(
                    (0..cin * 9)
                        .map(|k| {
                            let (i, t) = (k / 9, k % 9);
                            i * ih * iw + t / 3 * iw + t % 3
                        })
                        .collect(),
                ),
            });
        }
        let (pw, plane) = (w + 2, (h + 2) * (w + 2));
        let table = |mirror: bool| {
            Table::new(
                (0..widest * 9)
                    .map(|k| {
                        let (i, t) = (k / 9, k % 9);
                        let t = if mirror { 8 - t } else { t };
                        i * plane + t / 3 * pw + t % 3
                    })
                    .collect(),
            )
        };
        Bordered {
            h,
            w,
            plane,
            corners: Table::new(
                (0..h)
                    .flat_map(|y| (0..w).map(move |x| y * pw + x))
                    .collect(),
            ),
            taps: table(false),
            mirrored: table(true),
            unpadded,
        }
    }

    /// The tables of the unpadded convolution `c` (built by [`Bordered::new`] for every one
    /// in the graph).
    fn unpadded(&self, c: Conv) -> &Unpadded {
        self.unpadded
            .iter()
            .find(|u| (u.h, u.w) == (c.ih, c.iw) && u.taps.len() >= 9 * c.cin)
            .unwrap_or_else(|| unreachable!("Bordered::new tabulates every unpadded conv"))
    }

    /// Planes of the widest 3x3 convolution (input or output).
    pub(crate) fn widest(&self) -> usize {
        self.taps.len() / 9
    }
}

/// Where inference splits a graph into its trunk and its heads: the heads are the operations
/// from the first dense layer on (a residual net's heads; the whole of an MLP), run over a
/// group of positions at once so that their weights are read once per group.
#[derive(Clone, Debug)]
pub(crate) struct Heads {
    /// The first operation of the heads (the number of operations when there is no dense
    /// layer).
    pub at: usize,
    /// The buffers the heads read that the trunk wrote (or the input), in ascending order.
    pub live: Vec<Buf>,
    /// Every buffer the heads read or write, in ascending order.
    pub(crate) bufs: Vec<Buf>,
}

impl Heads {
    pub(crate) fn new(g: &Graph) -> Heads {
        let at = g
            .ops
            .iter()
            .position(|op| matches!(op.layer, Layer::Dense(_)))
            .unwrap_or(g.ops.len());
        let head = &g.ops[at..];
        // Buffers written by the heads' own operations.
        let written: Vec<Buf> = head.iter().map(|op| op.y).collect();
        let mut live: Vec<Buf> = head
            .iter()
            .flat_map(|op| {
                let skip = match op.act {
                    Act::AddRelu(k) => Some(k),
                    _ => None,
                };
                std::iter::once(op.x).chain(skip)
            })
            .filter(|b| !written.contains(b))
            .collect();
        live.sort_unstable();
        live.dedup();
        let mut bufs: Vec<Buf> = live.iter().copied().chain(written).collect();
        bufs.sort_unstable();
        bufs.dedup();
        Heads { at, live, bufs }
    }
}
