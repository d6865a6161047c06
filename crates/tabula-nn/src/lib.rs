//! A small neural network on the CPU, written out by hand: a multilayer perceptron or a
//! residual convolutional net (basic or bottleneck blocks, optional batch normalisation) with
//! a policy head and a value head, its gradients, and the optimisers (SGD with momentum,
//! Nesterov and weight decay; Adam). See docs/network.md.
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
//! number of threads. Batch normalisation's batch statistics are sums over the minibatch in a
//! fixed order (training only: inference reads the running statistics, so a position's output
//! stays a function of the position).

pub mod encode;
mod engine;
pub mod export;
pub(crate) mod gemm;
mod graph;
pub(crate) mod optim;
#[cfg(test)]
mod reference;
pub mod throughput;

use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

use encode::Planes;
use engine::Mode;
use graph::Graph;
use tabula_core::rng::StreamRng;

pub use engine::{Scratch, Weights};
pub use gemm::{Arith, Kernel, Simd};

pub use optim::{OptimConfig, OptimState};

pub(crate) use engine::CHUNK;

/// The architecture (docs/network.md, "Architectures").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Fully connected layers of these widths (ReLU), over the flattened planes.
    Mlp { hidden: Vec<usize> },
    /// A residual convolutional net.
    ResNet(ResNet),
}

/// A residual net: a 3x3 convolution to `channels` planes (ReLU), then `blocks` residual
/// blocks, then the heads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResNet {
    pub blocks: usize,
    pub channels: usize,
    /// `None`: basic blocks of two 3x3 convolutions (ReLU after the first and after the skip
    /// sum). `Some(mid)`: bottleneck blocks (He et al. 2016): 1x1 to `mid` channels, 3x3,
    /// 1x1 back to `channels`, ReLU after each but the last, and after the skip sum.
    pub bottleneck: Option<usize>,
    /// Batch normalisation after every convolution, before its ReLU (Ioffe and Szegedy
    /// 2015).
    pub batch_norm: bool,
    /// Whether the convolutions keep their bias when batch normalisation follows them (Liu
    /// et al.'s released model does: PyTorch's `Conv2d` default). Without batch
    /// normalisation every convolution has a bias either way; `false` with it is the
    /// layout that predates this option (no convolution biases).
    pub conv_bias: bool,
    /// The stem's padding: the trunk and the heads run on the board (`Same`) or on its
    /// (h - 2) x (w - 2) interior (`Valid`, Liu et al.'s unpadded stem: 7 x 7 planes, a
    /// 5 x 5 trunk).
    pub stem: Stem,
    pub head: Head,
}

impl ResNet {
    /// Basic blocks, no batch normalisation, dense heads, a zero-padded stem: the
    /// architecture that predates the others.
    pub fn basic(blocks: usize, channels: usize) -> ResNet {
        ResNet {
            blocks,
            channels,
            bottleneck: None,
            batch_norm: false,
            conv_bias: false,
            stem: Stem::Same,
            head: Head::Dense,
        }
    }

    /// Liu et al.'s Chinese Checkers network, as counted layer by layer from the authors'
    /// released model: an unpadded 3x3 stem to 64 channels, nine bottleneck blocks (64 ->
    /// 32 -> 32 -> 64), batch normalisation after every convolution with the convolutions'
    /// biases kept, a policy head of 16 1x1 channels and a value head of one 1x1 channel and
    /// a hidden layer of 32. On 7 x 7 x 7 planes with 294 actions: 247,386 trainable values.
    pub fn liu() -> ResNet {
        ResNet {
            bottleneck: Some(32),
            batch_norm: true,
            conv_bias: true,
            stem: Stem::Valid,
            head: Head::Conv {
                policy_channels: 16,
                value_channels: 1,
                value_hidden: 32,
            },
            ..ResNet::basic(9, 64)
        }
    }
}

/// A residual net's stem: a 3x3 convolution with zero padding one square wide, or none.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Stem {
    /// Zero-padded: the trunk's planes have the board's size (tabula's nets before Liu
    /// et al.'s).
    #[default]
    Same,
    /// Unpadded ("valid"): the trunk's planes are (h - 2) x (w - 2), each square the stem's
    /// window centred on the board square one row and one column further in. Needs a
    /// board of at least 3 x 3.
    Valid,
}

/// Why an architecture cannot run on an input ([`Layout::try_new`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error(
        "an unpadded (valid) 3x3 stem needs a board of at least 3 x 3, not {height} x {width}: \
         use the zero-padded stem (stem = \"same\")"
    )]
    ValidStemTooSmall { height: usize, width: usize },
}

/// A residual net's heads.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Head {
    /// Both fully connected from the flattened trunk output.
    Dense,
    /// AlphaGo Zero's heads: policy a 1x1 convolution to `policy_channels` (normalised when
    /// the trunk is), ReLU, fully connected to the logits; value a 1x1 convolution to
    /// `value_channels`, ReLU, fully connected to `value_hidden`, ReLU, fully connected to
    /// one output.
    Conv {
        policy_channels: usize,
        value_channels: usize,
        value_hidden: usize,
    },
}

/// What the value head's last output (`pre`) becomes, and the loss it is trained with
/// (docs/network.md, "Architectures").
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ValueHead {
    /// `tanh(pre)` in [-1, 1], the squared error against the outcome on that scale (2z - 1),
    /// as AlphaZero (Silver et al. 2018) and Liu et al.; the [0, 1] value is (v + 1) / 2.
    #[default]
    Tanh,
    /// `1 / (1 + exp(-pre))` in [0, 1], the squared error against the outcome z in [0, 1]:
    /// the tabular learner's value and loss (Hsueh et al. 2023).
    Sigmoid,
}

impl ValueHead {
    /// The value on the [0, 1] scale.
    pub(crate) fn unit(self, pre: f32) -> f64 {
        let x = f64::from(pre);
        match self {
            ValueHead::Tanh => (x.tanh() + 1.0) / 2.0,
            ValueHead::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        }
    }

    /// The squared error against the outcome `z` (on the [0, 1] scale) on the head's own
    /// scale, and its derivative with respect to `pre`.
    pub(crate) fn loss(self, pre: f32, z: f32) -> (f64, f64) {
        let (x, z) = (f64::from(pre), f64::from(z));
        match self {
            ValueHead::Tanh => {
                let (v, t) = (x.tanh(), 2.0 * z - 1.0);
                ((v - t) * (v - t), 2.0 * (v - t) * (1.0 - v * v))
            }
            ValueHead::Sigmoid => {
                let v = self.unit(pre);
                ((v - z) * (v - z), 2.0 * (v - z) * v * (1.0 - v))
            }
        }
    }
}

/// A network's shape: its graph, where each layer's parameters are, and how many there are.
#[derive(Clone, Debug)]
pub struct Layout {
    arch: Arch,
    /// The value head's squashing and loss.
    value_head: ValueHead,
    input: Planes,
    actions: usize,
    pub(crate) graph: Graph,
    /// The kernels' vector path (`Simd::detect` unless a test or bench asks) and arithmetic
    /// (fused unless the run's settings say otherwise).
    kernel: Kernel,
    /// How the 3x3 convolutions read bordered planes (offset tables, built once).
    bordered: engine::Bordered,
    /// Where inference splits the graph into trunk and heads.
    heads: engine::Heads,
    /// Floats of the packed weights, forward and backward.
    packed: (usize, usize),
    /// Whether inference runs a convolution and its batch normalisation as one product
    /// on the AVX-512 path (the same bits; off only to measure or test it).
    fuse_norm: bool,
    /// Per operation, the convolution and normalisation it starts that inference may run
    /// as one ([`Graph::conv_then_norm`], found once: the graph does not change).
    conv_norm: Vec<Option<(graph::Conv, graph::Norm)>>,
}

impl Layout {
    /// The network `arch` over `input` with `actions` logits.
    ///
    /// # Panics
    ///
    /// On a shape [`Layout::try_new`] refuses (a valid stem on a board under 3 x 3), with
    /// its message; callers that take the architecture from a user check it there first.
    pub fn new(arch: &Arch, input: Planes, actions: usize) -> Layout {
        Layout::try_new(arch, input, actions).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Whether `arch` can run on `input`: the shapes [`Layout::try_new`] refuses.
    pub fn check(arch: &Arch, input: Planes) -> Result<(), ShapeError> {
        match arch {
            Arch::ResNet(r) if r.stem == Stem::Valid && (input.height < 3 || input.width < 3) => {
                Err(ShapeError::ValidStemTooSmall {
                    height: input.height,
                    width: input.width,
                })
            }
            _ => Ok(()),
        }
    }

    /// The network `arch` over `input` with `actions` logits, or why its shapes do not fit.
    pub fn try_new(arch: &Arch, input: Planes, actions: usize) -> Result<Layout, ShapeError> {
        Layout::check(arch, input)?;
        let mut graph = graph::build(arch, input, actions);
        let packed = engine::place_packed(&mut graph);
        let bordered = engine::Bordered::new(&graph, input.height, input.width);
        let heads = engine::Heads::new(&graph);
        let conv_norm = (0..graph.ops.len())
            .map(|i| graph.conv_then_norm(i))
            .collect();
        Ok(Layout {
            arch: arch.clone(),
            value_head: ValueHead::Tanh,
            input,
            actions,
            graph,
            kernel: Kernel {
                simd: Simd::detect(),
                arith: Arith::Fused,
            },
            bordered,
            heads,
            packed,
            fuse_norm: true,
            conv_norm,
        })
    }

    /// The same network with inference's convolution-and-normalisation fusion on or off
    /// (the same bits either way: `nn::tests`; benches measure the difference).
    pub fn with_fused_norm(mut self, fuse: bool) -> Layout {
        self.fuse_norm = fuse;
        self
    }

    /// The same network on another vector path (the bits are the same on every path).
    pub fn with_simd(mut self, simd: Simd) -> Layout {
        self.kernel.simd = simd;
        self
    }

    /// The same network with another arithmetic (other bits: docs/network.md, "Kernels").
    pub fn with_arith(mut self, arith: Arith) -> Layout {
        self.kernel.arith = arith;
        self
    }

    /// The same network with another value head (tanh unless the run's settings say
    /// otherwise).
    pub fn with_value_head(mut self, v: ValueHead) -> Layout {
        self.value_head = v;
        self
    }

    pub fn value_head(&self) -> ValueHead {
        self.value_head
    }

    /// The value head's output `pre` on the [0, 1] scale.
    pub fn unit_value(&self, pre: f32) -> f64 {
        self.value_head.unit(pre)
    }

    pub fn arith(&self) -> Arith {
        self.kernel.arith
    }

    /// Parameters in all (running statistics included).
    pub fn params(&self) -> usize {
        self.graph.params
    }

    pub fn input(&self) -> Planes {
        self.input
    }

    pub fn actions(&self) -> usize {
        self.actions
    }

    /// Trainable parameters: all but batch normalisation's running statistics (PyTorch's
    /// `numel` over `parameters()`).
    pub fn trainable(&self) -> usize {
        self.params() - self.frozen().iter().map(|&(_, len)| len).sum::<usize>()
    }

    /// The ranges of running statistics, which the optimiser leaves alone.
    pub(crate) fn frozen(&self) -> Vec<(usize, usize)> {
        let r = self.graph.ranges.iter().filter(|r| r.frozen);
        r.map(|r| (r.at, r.len)).collect()
    }

    /// Initial parameters: weights Normal(0, sqrt(gain / fan_in)) (He et al. 2015: gain 2
    /// before a ReLU, 1 for the heads' last layers), biases and shifts 0, scales 1, running
    /// means 0 and variances 1; the weights drawn in layout order from `rng`.
    pub fn init(&self, rng: &mut StreamRng) -> Vec<f32> {
        let mut p = vec![0.0f32; self.params()];
        for r in &self.graph.ranges {
            let slot = &mut p[r.at..r.at + r.len];
            match r.init {
                graph::Init::Const(c) => slot.fill(c),
                graph::Init::Normal { fan_in, gain } => {
                    let std = (gain / fan_in.max(1) as f64).sqrt();
                    // A finite, positive std: the Normal cannot fail.
                    let normal = Normal::new(0.0, std).unwrap_or_else(|_| unreachable!());
                    for x in slot {
                        *x = normal.sample(rng) as f32;
                    }
                }
            }
        }
        p
    }

    /// Buffers for a batch of positions (they grow to the largest batch seen, then stay).
    pub fn scratch(&self) -> Scratch {
        Scratch::new(self)
    }

    /// `p`'s weights packed for inference.
    pub fn weights(&self, p: &[f32]) -> Weights {
        let mut w = Weights::default();
        self.pack(p, false, &mut w);
        w
    }

    /// The forward pass of one position (`x`: its planes) with weights packed from `p`
    /// on the spot: fills `s.logits` and returns the value head's output before its
    /// squashing.
    #[cfg(test)]
    pub(crate) fn forward(&self, p: &[f32], x: &[f32], s: &mut Scratch) -> f32 {
        let w = self.weights(p);
        self.forward_batch(p, &w, x, 1, s);
        s.values[0]
    }

    /// The inference pass of `n` positions (`x`: their planes, one after another), with `w`
    /// packed from `p`: fills `s.logits[..n * actions]` and `s.values[..n]` (before the value
    /// head's squashing).
    /// A position's outputs are the same bits in any batch (module docs).
    pub fn forward_batch(&self, p: &[f32], w: &Weights, x: &[f32], n: usize, s: &mut Scratch) {
        self.run_forward(p, w, x, n, s, Mode::Infer);
    }
}

/// Training passes of networks chained one into another (MuZero: Schrittwieser et al. 2020,
/// the representation's output is the dynamics' input, whose output is the prediction's):
/// the forward pass keeps every activation, the backward pass returns the gradient with
/// respect to the inputs as well as the parameters'. The bits follow the rules of
/// [`train_step`] (module docs): chunks of [`Layout::grad_chunks`] positions, each with its
/// own gradient vector, each parameter's gradient one term per position in order.
impl Layout {
    /// Whether [`Layout::backward_to_input`] can give the inputs' gradient: every
    /// architecture but a residual net with the unpadded (valid) stem, whose convolution has
    /// no input-gradient kernel.
    pub fn input_gradient(&self) -> bool {
        !matches!(&self.arch, Arch::ResNet(r) if r.stem == Stem::Valid)
    }

    /// Gradient vectors a backward pass over `n` positions adds to (one per [`CHUNK`]).
    pub fn grad_chunks(n: usize) -> usize {
        n.div_ceil(CHUNK)
    }

    /// The training forward pass of `n` positions (`x`: their inputs, one after another) with
    /// `w` packed from `p` for training ([`Layout::pack`] with `backward`): fills
    /// `s.logits[..n * actions]` and `s.values[..n]` (before the value head's squashing) and
    /// keeps the activations for [`Layout::backward_to_input`].
    pub fn forward_train(&self, p: &[f32], w: &Weights, x: &[f32], n: usize, s: &mut Scratch) {
        self.run_forward(p, w, x, n, s, Mode::Train);
    }

    /// After [`Layout::forward_train`] of the same `n` positions in `s`: adds the gradients
    /// of the losses whose gradients with respect to the logits and the values (before the
    /// squashing) are `dlogits` and `dvalues` to `gs` (at least [`Layout::grad_chunks`]`(n)`
    /// vectors of [`Layout::params`] each; the caller zeroes them), and writes the gradient
    /// with respect to the inputs into `dx` (`n x input().len()`). Returns `false`, doing
    /// nothing, where [`Layout::input_gradient`] is false.
    pub fn backward_to_input(
        &self,
        w: &Weights,
        s: &mut Scratch,
        n: usize,
        outputs: (&[f32], &[f32]),
        gs: &mut [Vec<f32>],
        dx: &mut [f32],
    ) -> bool {
        if !self.input_gradient() {
            return false;
        }
        self.run_backward_to_input(w, s, n, outputs, gs, dx);
        true
    }
}

/// The softmax of `logits` over the `legal` actions, into `out` (same length as `legal`),
/// computed in f64.
pub fn legal_softmax(logits: &[f32], legal: &[u16], out: &mut [f64]) {
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

/// One training example: planes, legal actions, the search's visit distribution over them,
/// and the outcome for the side to move on the [0, 1] scale.
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    pub x: Vec<f32>,
    pub legal: Vec<u16>,
    pub target: Vec<f32>,
    pub z: f32,
}

/// Mean losses of a training step.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Losses {
    pub policy: f64,
    pub value: f64,
}

/// Working memory of training steps, kept between them so that a step allocates nothing
/// once the first has run.
#[derive(Debug)]
pub struct Trainer {
    s: Scratch,
    w: Weights,
    /// One gradient vector per chunk of [`CHUNK`] examples.
    gs: Vec<Vec<f32>>,
    grad: Vec<f32>,
    dl: Vec<f32>,
    probs: Vec<f64>,
}

impl Trainer {
    pub fn new(l: &Layout) -> Trainer {
        Trainer {
            s: l.scratch(),
            w: Weights::default(),
            gs: Vec::new(),
            grad: Vec::new(),
            dl: Vec::new(),
            probs: Vec::new(),
        }
    }
}

/// The losses of a batch of examples (policy cross-entropy over the legal actions plus the
/// squared error of the value on the value head's scale, [`ValueHead::loss`]), their gradients in
/// `t.gs` (one vector per chunk of [`CHUNK`] examples, each parameter one term per example
/// in order). Returns the chunks' summed losses (each in example order). `t.w` must hold
/// `p` packed for training.
fn batch_grad(l: &Layout, p: &[f32], examples: &[&Example], t: &mut Trainer) -> Vec<(f64, f64)> {
    let xs: Vec<&[f32]> = examples.iter().map(|e| e.x.as_slice()).collect();
    let vh = l.value_head;
    grad_with(l, p, &xs, t, |k, out| {
        let e = examples[k];
        out.probs.clear();
        out.probs.resize(e.legal.len(), 0.0f64);
        legal_softmax(out.logits, &e.legal, out.probs);
        let mut lpk = 0.0;
        for ((&a, &pa), &t) in e.legal.iter().zip(out.probs.iter()).zip(&e.target) {
            out.dlogits[a as usize] = (pa - f64::from(t)) as f32;
            if t > 0.0 {
                lpk -= f64::from(t) * pa.max(1e-30).ln();
            }
        }
        let (loss, d) = vh.loss(out.value, e.z);
        *out.dvalue = d as f32;
        (lpk, loss)
    })
}

/// One example's outputs and the gradients to fill, for [`grad_with`]'s loss.
struct ExampleGrad<'a> {
    logits: &'a [f32],
    value: f32,
    dlogits: &'a mut [f32],
    dvalue: &'a mut f32,
    probs: &'a mut Vec<f64>,
}

/// The forward pass over the inputs `xs` (training mode), then `loss(k, outputs)` of each
/// example in order (it fills the example's output gradients, zero where it leaves them, and
/// returns its two loss terms), then the backward pass into `t.gs` (see [`batch_grad`]).
/// Returns the chunks' summed loss terms.
fn grad_with(
    l: &Layout,
    p: &[f32],
    xs: &[&[f32]],
    t: &mut Trainer,
    mut loss: impl FnMut(usize, ExampleGrad<'_>) -> (f64, f64),
) -> Vec<(f64, f64)> {
    let (n, len, na) = (xs.len(), l.input.len(), l.actions);
    let Trainer {
        s,
        w,
        gs,
        dl,
        probs,
        ..
    } = t;
    s.ensure(n);
    for (row, e) in s.x.chunks_exact_mut(len).zip(xs) {
        row.copy_from_slice(e);
    }
    let x = std::mem::take(&mut s.x);
    l.run_forward(p, w, &x, n, s, Mode::Train);
    s.x = x;
    dl.clear();
    dl.resize(n * na + n, 0.0);
    let (dlogits, dvalues) = dl.split_at_mut(n * na);
    let mut losses = Vec::with_capacity(n.div_ceil(CHUNK));
    for c in 0..n.div_ceil(CHUNK) {
        let (mut lp, mut lv) = (0.0, 0.0);
        for k in c * CHUNK..((c + 1) * CHUNK).min(n) {
            let (a, b) = loss(
                k,
                ExampleGrad {
                    logits: &s.logits[k * na..(k + 1) * na],
                    value: s.values[k],
                    dlogits: &mut dlogits[k * na..(k + 1) * na],
                    dvalue: &mut dvalues[k],
                    probs,
                },
            );
            lp += a;
            lv += b;
        }
        losses.push((lp, lv));
    }
    let chunks = n.div_ceil(CHUNK);
    while gs.len() < chunks {
        gs.push(Vec::new());
    }
    gs[..chunks].par_iter_mut().for_each(|g| {
        g.clear();
        g.resize(l.params(), 0.0);
    });
    l.run_backward(w, s, n, dlogits, dvalues, &mut gs[..chunks]);
    losses
}

/// One optimiser step on the minibatch `batch` (indices into `examples`): the mean gradient,
/// computed in fixed chunks (see the module docs), then the update; the running statistics of
/// batch normalisation take the batch's. Returns the mean losses before the update.
#[allow(clippy::too_many_arguments)]
pub fn train_step(
    l: &Layout,
    params: &mut [f32],
    opt: &mut OptimState,
    cfg: &OptimConfig,
    lr: f64,
    examples: &[&Example],
    batch: &[usize],
    t: &mut Trainer,
) -> Losses {
    l.pack(params, true, &mut t.w);
    let chosen: Vec<&Example> = batch.iter().map(|&i| examples[i]).collect();
    let parts = batch_grad(l, params, &chosen, t);
    let (lp, lv) = apply_gradient(l, params, opt, cfg, lr, batch.len(), &parts, t);
    Losses {
        policy: lp,
        value: lv,
    }
}

/// The mean of the chunk gradients in `t.gs` over `n` examples (chunks added in order), one
/// optimiser step with it, and batch normalisation's running statistics; returns the mean
/// loss terms of `parts`.
#[allow(clippy::too_many_arguments)]
fn apply_gradient(
    l: &Layout,
    params: &mut [f32],
    opt: &mut OptimState,
    cfg: &OptimConfig,
    lr: f64,
    n: usize,
    parts: &[(f64, f64)],
    t: &mut Trainer,
) -> (f64, f64) {
    t.grad.clear();
    t.grad.resize(l.params(), 0.0);
    let (mut lp, mut lv) = (0.0, 0.0);
    for (a, b) in parts {
        lp += a;
        lv += b;
    }
    // Each element the sum of its chunk terms in chunk order, then scaled: ranges of
    // parameters in parallel, each element's chain the same on any number of threads.
    let scale = 1.0 / n.max(1) as f32;
    let gs = &t.gs[..parts.len()];
    t.grad
        .par_chunks_mut(optim::SPLIT)
        .enumerate()
        .for_each(|(k, out)| {
            let r = k * optim::SPLIT..k * optim::SPLIT + out.len();
            for g in gs {
                for (x, &y) in out.iter_mut().zip(&g[r.clone()]) {
                    *x += y;
                }
            }
            for x in out {
                *x *= scale;
            }
        });
    opt.step(cfg, lr, params, &t.grad, &l.frozen());
    for (at, v) in t.s.running() {
        params[at] = v;
    }
    let m = n.max(1) as f64;
    (lp / m, lv / m)
}

/// The Huber loss of error `e` with threshold `delta` (Liu et al.'s eq. 9 at delta 1) and
/// its derivative: e^2 / 2 and e within |e| <= delta, delta (|e| - delta / 2) and
/// delta sign(e) beyond.
pub fn huber(e: f64, delta: f64) -> (f64, f64) {
    if e.abs() <= delta {
        (0.5 * e * e, e)
    } else {
        (delta * (e.abs() - 0.5 * delta), delta * e.signum())
    }
}

/// A Deep Q-Learning example (Liu et al. after Mnih et al. 2015): planes, the action taken,
/// and its target y = R + gamma max_a' Q(S', a').
#[derive(Clone, Debug)]
pub struct QExample<'a> {
    pub x: &'a [f32],
    pub action: u16,
    pub y: f32,
}

/// One optimiser step of Deep Q-Learning on `examples`: the policy logits are the Q-values,
/// and the Huber loss (threshold `delta`) of Q(S, a) - y is taken on the chosen action's
/// output only (the paper's masked output), the value head getting no gradient. Returns the
/// mean Huber loss and the mean |Q(S, a) - y| before the update.
#[allow(clippy::too_many_arguments)]
pub fn q_train_step(
    l: &Layout,
    params: &mut [f32],
    opt: &mut OptimState,
    cfg: &OptimConfig,
    lr: f64,
    delta: f64,
    examples: &[QExample<'_>],
    t: &mut Trainer,
) -> (f64, f64) {
    l.pack(params, true, &mut t.w);
    let xs: Vec<&[f32]> = examples.iter().map(|e| e.x).collect();
    let parts = grad_with(l, params, &xs, t, |k, out| {
        let e = &examples[k];
        let err = f64::from(out.logits[e.action as usize]) - f64::from(e.y);
        let (loss, d) = huber(err, delta);
        out.dlogits[e.action as usize] = d as f32;
        (loss, err.abs())
    });
    apply_gradient(l, params, opt, cfg, lr, examples.len(), &parts, t)
}

#[cfg(test)]
mod tests;
