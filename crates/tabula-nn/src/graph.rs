//! An architecture as a list of operations over numbered buffers, and where each layer's
//! parameters live (docs/network.md, "Architectures").
//!
//! Every operation writes a buffer of its own (buffer 0 is the input), so the backward pass
//! walks the list in reverse and each buffer's gradient is written by its first contributor
//! in that order and added to by the later ones, an order fixed here once for all (`first`
//! flags). The parameters of the architectures that existed before batch normalisation keep
//! their old order (weights then bias per layer: trunk, then the policy head, then the value
//! head), so old checkpoints load.

use super::Planes;

/// A buffer: one of the layout's activations (`[position][channel][square]` or
/// `[position][feature]`).
pub(crate) type Buf = usize;

/// Applied to an output before it is stored.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    Identity,
    Relu,
    /// `relu(x + skip)`: the end of a residual block.
    AddRelu(Buf),
}

/// A convolution of `taps` = 1 (1x1) or 9 (3x3) taps over `h` x `w` input planes:
/// weights `[out][in][taps]` at `w`, biases at `b` (none before a batch normalisation unless
/// the architecture keeps them, [`super::ResNet::conv_bias`]). A 3x3 convolution is
/// zero-padded (its output `h` x `w`) or, `valid`, unpadded (its output (h - 2) x (w - 2):
/// the padded one's outputs at the interior squares, which read no padding).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Conv {
    pub w: usize,
    pub b: Option<usize>,
    pub(crate) cin: usize,
    pub(crate) cout: usize,
    pub(crate) taps: usize,
    /// The input planes' height and width.
    pub(crate) ih: usize,
    pub(crate) iw: usize,
    pub(crate) valid: bool,
    /// Where its packed weights are in `Weights`: forward and input gradient.
    pub fp: usize,
    pub(crate) bp: usize,
}

impl Conv {
    /// The output planes' height and width.
    pub(crate) fn out_hw(&self) -> (usize, usize) {
        if self.valid {
            (self.ih.saturating_sub(2), self.iw.saturating_sub(2))
        } else {
            (self.ih, self.iw)
        }
    }

    /// Squares of an input plane.
    pub(crate) fn in_area(&self) -> usize {
        self.ih * self.iw
    }

    /// Squares of an output plane.
    pub(crate) fn out_area(&self) -> usize {
        let (h, w) = self.out_hw();
        h * w
    }
}

/// Batch normalisation of `ch` channels (Ioffe and Szegedy 2015): scale `gamma`, shift
/// `beta`, and the running mean and variance (`mean`, `var`: buffers, not trained).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Norm {
    pub ch: usize,
    pub gamma: usize,
    pub beta: usize,
    pub mean: usize,
    pub var: usize,
}

/// A fully connected layer: weights `[n_in][n_out]` at `w`, biases at `b`.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Dense {
    pub w: usize,
    pub b: usize,
    pub(crate) n_in: usize,
    pub(crate) n_out: usize,
    pub fp: usize,
    pub(crate) bp: usize,
}

#[derive(Copy, Clone, Debug)]
pub(crate) enum Layer {
    Conv(Conv),
    Norm(Norm),
    Dense(Dense),
}

/// One operation: `y = act(layer(x))`. `x_first` / `skip_first`: whether this operation is
/// the first, in the backward order, to give `x` (the skip) a gradient.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Op {
    pub layer: Layer,
    pub x: Buf,
    pub y: Buf,
    pub act: Act,
    pub(crate) x_first: bool,
    pub(crate) skip_first: bool,
}

/// How a parameter range starts.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Init {
    /// Normal(0, sqrt(gain / fan_in)) (He et al. 2015 with gain 2).
    Normal {
        fan_in: usize,
        gain: f64,
    },
    Const(f32),
}

/// A range of parameters and how it starts; `frozen`: a running statistic, which the
/// optimiser leaves alone.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Range {
    pub at: usize,
    pub len: usize,
    pub init: Init,
    pub frozen: bool,
}

/// The graph of an architecture over an input.
#[derive(Clone, Debug)]
pub(crate) struct Graph {
    pub ops: Vec<Op>,
    /// Each operation's name (PyTorch's module names: `stem`, `blocks.0.conv1`,
    /// `blocks.0.bn1`, `policy`...), for export.
    pub names: Vec<String>,
    /// Floats per position of each buffer.
    pub(crate) bufs: Vec<usize>,
    /// Channels of each buffer that holds planes (0 for feature vectors).
    pub planes: Vec<usize>,
    pub logits: Buf,
    pub value: Buf,
    pub ranges: Vec<Range>,
    pub params: usize,
}

impl Graph {
    /// Whether operation `i` is a convolution with no activation whose output only the
    /// batch normalisation at `i + 1` reads: inference may then run the two as one
    /// (`engine`'s `conv_norm_infer`), the convolution's output never written.
    pub(crate) fn conv_then_norm(&self, i: usize) -> Option<(Conv, Norm)> {
        let (op, next) = (self.ops.get(i)?, self.ops.get(i + 1)?);
        let (Layer::Conv(cv), Layer::Norm(nm), Act::Identity) = (op.layer, next.layer, op.act)
        else {
            return None;
        };
        let reads = |o: &Op| o.x == op.y || matches!(o.act, Act::AddRelu(k) if k == op.y);
        let only_next = self
            .ops
            .iter()
            .enumerate()
            .all(|(j, o)| j == i + 1 || !reads(o));
        (next.x == op.y && only_next && op.y != self.logits && op.y != self.value)
            .then_some((cv, nm))
    }
}

/// Builds a graph, allocating parameters in call order.
pub(crate) struct Builder {
    /// The height and width of the planes the next convolution reads (the board's, then
    /// the trunk's after a valid stem).
    hw: (usize, usize),
    g: Graph,
}

impl Builder {
    pub(crate) fn new(input: Planes) -> Builder {
        Builder {
            hw: (input.height, input.width),
            g: Graph {
                ops: Vec::new(),
                names: Vec::new(),
                bufs: vec![input.len()],
                planes: vec![input.channels],
                logits: 0,
                value: 0,
                ranges: Vec::new(),
                params: 0,
            },
        }
    }

    fn alloc(&mut self, len: usize, init: Init, frozen: bool) -> usize {
        let at = self.g.params;
        self.g.ranges.push(Range {
            at,
            len,
            init,
            frozen,
        });
        self.g.params += len;
        at
    }

    fn buf(&mut self, len: usize, planes: usize) -> Buf {
        self.g.bufs.push(len);
        self.g.planes.push(planes);
        self.g.bufs.len() - 1
    }

    fn push(&mut self, name: String, layer: Layer, x: Buf, y: Buf, act: Act) {
        self.g.names.push(name);
        self.g.ops.push(Op {
            layer,
            x,
            y,
            act,
            x_first: false,
            skip_first: false,
        });
    }

    /// Allocates a convolution's parameters over the current planes: weights, then its
    /// bias (always without normalisation; with it only when `bias`), then its
    /// normalisation's scale, shift, mean and variance (PyTorch's `Conv2d` then
    /// `BatchNorm2d` state order).
    pub(crate) fn conv_params(
        &mut self,
        (cin, cout, taps): (usize, usize, usize),
        bn: bool,
        bias: bool,
    ) -> (Conv, Option<Norm>) {
        let fan_in = cin * taps;
        let w = self.alloc(cout * fan_in, Init::Normal { fan_in, gain: 2.0 }, false);
        let b = (!bn || bias).then(|| self.alloc(cout, Init::Const(0.0), false));
        let conv = Conv {
            w,
            b,
            cin,
            cout,
            taps,
            ih: self.hw.0,
            iw: self.hw.1,
            valid: false,
            fp: 0,
            bp: 0,
        };
        let norm = bn.then(|| Norm {
            ch: cout,
            gamma: self.alloc(cout, Init::Const(1.0), false),
            beta: self.alloc(cout, Init::Const(0.0), false),
            mean: self.alloc(cout, Init::Const(0.0), true),
            var: self.alloc(cout, Init::Const(1.0), true),
        });
        (conv, norm)
    }

    /// `act(norm(conv(x)))` (or `act(conv(x) + b)` without normalisation) into a new buffer.
    /// `name` names the convolution, `bn` its normalisation. Later convolutions read planes
    /// of this one's output size.
    pub(crate) fn conv_op(
        &mut self,
        x: Buf,
        (conv, norm): (Conv, Option<Norm>),
        act: Act,
        (name, bn): (String, String),
    ) -> Buf {
        self.hw = conv.out_hw();
        let len = conv.cout * conv.out_area();
        let y = self.buf(len, conv.cout);
        match norm {
            None => self.push(name, Layer::Conv(conv), x, y, act),
            Some(n) => {
                self.push(name, Layer::Conv(conv), x, y, Act::Identity);
                let z = self.buf(len, conv.cout);
                self.push(bn, Layer::Norm(n), y, z, act);
                return z;
            }
        }
        y
    }

    /// Allocates a dense layer's weights and biases; `gain` 2 before a ReLU, 1 before none.
    pub(crate) fn dense_params(&mut self, n_in: usize, n_out: usize, gain: f64) -> Dense {
        Dense {
            w: self.alloc(n_in * n_out, Init::Normal { fan_in: n_in, gain }, false),
            b: self.alloc(n_out, Init::Const(0.0), false),
            n_in,
            n_out,
            fp: 0,
            bp: 0,
        }
    }

    pub(crate) fn dense_op(&mut self, x: Buf, d: Dense, act: Act, name: String) -> Buf {
        let y = self.buf(d.n_out, 0);
        self.push(name, Layer::Dense(d), x, y, act);
        y
    }

    /// Squares of the planes the next convolution reads.
    pub(crate) fn area(&self) -> usize {
        self.hw.0 * self.hw.1
    }

    /// Floats per position of buffer `b`.
    pub(crate) fn len(&self, b: Buf) -> usize {
        self.g.bufs[b]
    }

    /// The finished graph with its outputs; sets the `first` flags.
    pub(crate) fn finish(mut self, logits: Buf, value: Buf) -> Graph {
        self.g.logits = logits;
        self.g.value = value;
        let mut has = vec![false; self.g.bufs.len()];
        has[logits] = true;
        has[value] = true;
        for op in self.g.ops.iter_mut().rev() {
            if let Act::AddRelu(skip) = op.act {
                op.skip_first = !has[skip];
                has[skip] = true;
            }
            op.x_first = !has[op.x];
            has[op.x] = true;
        }
        self.g
    }
}

/// The graph of `arch` over `input` with `actions` logits.
pub(crate) fn build(arch: &super::Arch, input: Planes, actions: usize) -> Graph {
    use super::{Arch, Head};
    let mut b = Builder::new(input);
    let feat = match arch {
        Arch::Mlp { hidden } => {
            let (mut x, mut n) = (0, input.len());
            for (l, &h) in hidden.iter().enumerate() {
                let d = b.dense_params(n, h, 2.0);
                x = b.dense_op(x, d, Act::Relu, format!("mlp.{l}"));
                n = h;
            }
            x
        }
        Arch::ResNet(r) => {
            let (bn, bias) = (r.batch_norm, r.conv_bias);
            let mut stem = b.conv_params((input.channels, r.channels, 9), bn, bias);
            // The valid stem reads the input planes (buffer 0), whose gradient is never
            // taken: the engine's valid convolutions have no input gradient (`engine`).
            stem.0.valid = r.stem == super::Stem::Valid;
            let names = |s: &str| (s.to_string(), format!("{s}.bn"));
            let mut x = b.conv_op(0, stem, Act::Relu, names("stem"));
            for blk in 0..r.blocks {
                let input = x;
                let shapes: Vec<(usize, usize, usize)> = match r.bottleneck {
                    None => vec![(r.channels, r.channels, 9), (r.channels, r.channels, 9)],
                    Some(mid) => vec![(r.channels, mid, 1), (mid, mid, 9), (mid, r.channels, 1)],
                };
                let last = shapes.len() - 1;
                for (k, (cin, cout, taps)) in shapes.into_iter().enumerate() {
                    let p = b.conv_params((cin, cout, taps), bn, bias);
                    let act = if k == last {
                        Act::AddRelu(input)
                    } else {
                        Act::Relu
                    };
                    let n = (
                        format!("blocks.{blk}.conv{}", k + 1),
                        format!("blocks.{blk}.bn{}", k + 1),
                    );
                    x = b.conv_op(x, p, act, n);
                }
            }
            match r.head {
                Head::Dense => x,
                Head::Conv {
                    policy_channels: pc,
                    value_channels: vc,
                    value_hidden: vh,
                } => {
                    let area = b.area();
                    // Parameters: policy head, then value head; operations: value first, so
                    // that the backward pass meets the policy head first (as with dense heads).
                    let pconv = b.conv_params((r.channels, pc, 1), bn, bias);
                    let pfc = b.dense_params(pc * area, actions, 1.0);
                    let vconv = b.conv_params((r.channels, vc, 1), bn, bias);
                    let vfc = b.dense_params(vc * area, vh, 2.0);
                    let vout = b.dense_params(vh, 1, 1.0);
                    let v = b.conv_op(
                        x,
                        vconv,
                        Act::Relu,
                        ("value.conv".into(), "value.bn".into()),
                    );
                    let v = b.dense_op(v, vfc, Act::Relu, "value.fc1".into());
                    let value = b.dense_op(v, vout, Act::Identity, "value.fc2".into());
                    let p = b.conv_op(
                        x,
                        pconv,
                        Act::Relu,
                        ("policy.conv".into(), "policy.bn".into()),
                    );
                    let logits = b.dense_op(p, pfc, Act::Identity, "policy.fc".into());
                    return b.finish(logits, value);
                }
            }
        }
    };
    let n = b.len(feat);
    let policy = b.dense_params(n, actions, 1.0);
    let value = b.dense_params(n, 1, 1.0);
    let v = b.dense_op(feat, value, Act::Identity, "value".into());
    let logits = b.dense_op(feat, policy, Act::Identity, "policy".into());
    b.finish(logits, v)
}
