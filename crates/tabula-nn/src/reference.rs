//! The engine before the batched kernels (issue 23), kept verbatim as the bit-exactness
//! reference: one position at a time, axpy loops. Tests only. Since then it also knows the
//! unpadded (valid) stem (Liu et al.'s), written in the same style (`conv_valid_forward`).

use super::{Arch, Planes};

#[derive(Copy, Clone, Debug)]
struct Dense {
    w: usize,
    b: usize,
    n_in: usize,
    n_out: usize,
}

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
    /// `valid`: the stem is unpadded, the blocks run on (h - 2) x (w - 2).
    Res {
        stem: Conv,
        valid: bool,
        blocks: Vec<[Conv; 2]>,
    },
}

/// The old per-position engine, with the old layout of the parameters (which the new one
/// keeps for these architectures).
pub(super) struct Old {
    trunk: Trunk,
    input: Planes,
    actions: usize,
    policy: Dense,
    value: Dense,
}

impl Old {
    /// The old engine of a multilayer perceptron or a residual net of basic blocks without
    /// batch normalisation and with dense heads (the architectures it knew), its stem padded
    /// or not (without batch normalisation every convolution has its bias, `conv_bias` or
    /// not).
    pub(super) fn new(arch: &Arch, input: Planes, actions: usize) -> Old {
        let mut next = 0usize;
        let mut alloc = |len: usize| {
            next += len;
            next - len
        };
        let mut dense = |n_in: usize, n_out: usize| Dense {
            w: alloc(n_in * n_out),
            b: alloc(n_out),
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
            Arch::ResNet(r) => {
                assert!(r.bottleneck.is_none() && !r.batch_norm && r.head == super::Head::Dense);
                let (blocks, channels) = (&r.blocks, &r.channels);
                let valid = r.stem == super::Stem::Valid;
                let (h, w) = trunk_hw(input, valid);
                let mut conv = |cin: usize, cout: usize| Conv {
                    w: alloc(cout * cin * 9),
                    b: alloc(cout),
                    cin,
                    cout,
                };
                let stem = conv(input.channels, *channels);
                let blocks = (0..*blocks)
                    .map(|_| [conv(*channels, *channels), conv(*channels, *channels)])
                    .collect();
                (
                    Trunk::Res {
                        stem,
                        valid,
                        blocks,
                    },
                    channels * h * w,
                )
            }
        };
        let mut dense = |n_in: usize, n_out: usize| Dense {
            w: alloc(n_in * n_out),
            b: alloc(n_out),
            n_in,
            n_out,
        };
        let policy = dense(feat, actions);
        let value = dense(feat, 1);
        Old {
            trunk,
            input,
            actions,
            policy,
            value,
        }
    }

    /// Activation buffers for one position.
    pub(super) fn scratch(&self) -> Scratch {
        let sizes: Vec<usize> = match &self.trunk {
            Trunk::Mlp(layers) => std::iter::once(self.input.len())
                .chain(layers.iter().map(|d| d.n_out))
                .collect(),
            Trunk::Res {
                stem,
                blocks,
                valid,
                ..
            } => {
                let (h, w) = trunk_hw(self.input, *valid);
                let n = stem.cout * h * w;
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
    pub(super) fn forward(&self, p: &[f32], x: &[f32], s: &mut Scratch) -> f32 {
        s.acts[0].copy_from_slice(x);
        match &self.trunk {
            Trunk::Mlp(layers) => {
                for (l, d) in layers.iter().enumerate() {
                    let (prev, next) = s.acts.split_at_mut(l + 1);
                    dense_forward(p, d, &prev[l], &mut next[0]);
                    relu(&mut next[0]);
                }
            }
            Trunk::Res {
                stem,
                valid,
                blocks,
            } => {
                let (ih, iw) = (self.input.height, self.input.width);
                let (h, w) = trunk_hw(self.input, *valid);
                let (prev, next) = s.acts.split_at_mut(1);
                if *valid {
                    conv_valid_forward(p, stem, ih, iw, &prev[0], &mut next[0]);
                } else {
                    conv_forward(p, stem, h, w, &prev[0], &mut next[0]);
                }
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
    pub(super) fn backward(
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
            Trunk::Res {
                stem,
                valid,
                blocks,
            } => {
                let (h, w) = trunk_hw(self.input, *valid);
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
                if *valid {
                    let (ih, iw) = (self.input.height, self.input.width);
                    conv_valid_backward(stem, ih, iw, &acts[0], &d[..n], g);
                } else {
                    conv_backward(p, stem, h, w, &acts[0], &d[..n], g, None);
                }
            }
        }
    }
}

/// Per-position buffers: activations of the forward pass, the heads' outputs, and gradient
/// buffers for the backward pass.
#[derive(Clone, Debug)]
pub(super) struct Scratch {
    acts: Vec<Vec<f32>>,
    pub(super) logits: Vec<f32>,
    pub(super) value_pre: f32,
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

/// The trunk's planes: the board's, or its interior after an unpadded stem.
fn trunk_hw(input: Planes, valid: bool) -> (usize, usize) {
    if valid {
        (input.height - 2, input.width - 2)
    } else {
        (input.height, input.width)
    }
}

/// The unpadded 3x3 convolution of `h` x `w` planes: `out[o][y][x] = b[o] + sum_{i, ky, kx}
/// w[o][i][ky][kx] in[i][y+ky][x+kx]` over the (h - 2) x (w - 2) outputs, the sum in the
/// order (i, ky, kx), formed as `conv_forward` forms it (shifted planes, axpy).
fn conv_valid_forward(p: &[f32], c: &Conv, h: usize, w: usize, input: &[f32], out: &mut [f32]) {
    let (oh, ow) = (h - 2, w - 2);
    let (area, oarea) = (h * w, oh * ow);
    for o in 0..c.cout {
        out[o * oarea..(o + 1) * oarea].fill(p[c.b + o]);
    }
    let mut shifted = vec![0.0f32; oarea];
    for i in 0..c.cin {
        let src = &input[i * area..(i + 1) * area];
        for ky in 0..3 {
            for kx in 0..3 {
                for y in 0..oh {
                    let from = (y + ky) * w + kx;
                    shifted[y * ow..(y + 1) * ow].copy_from_slice(&src[from..from + ow]);
                }
                for o in 0..c.cout {
                    let wt = p[c.w + ((o * c.cin + i) * 3 + ky) * 3 + kx];
                    let plane = &mut out[o * oarea..(o + 1) * oarea];
                    for (d, &v) in plane.iter_mut().zip(&shifted) {
                        *d += wt * v;
                    }
                }
            }
        }
    }
}

/// Adds the unpadded convolution's weight and bias gradients to `g` (each a sum over the
/// output squares in order, added once); it has no input gradient (it reads the input).
fn conv_valid_backward(c: &Conv, h: usize, w: usize, input: &[f32], dout: &[f32], g: &mut [f32]) {
    let (oh, ow) = (h - 2, w - 2);
    let (area, oarea) = (h * w, oh * ow);
    for o in 0..c.cout {
        let dplane = &dout[o * oarea..(o + 1) * oarea];
        let mut gb = 0.0f32;
        for &v in dplane {
            gb += v;
        }
        g[c.b + o] += gb;
        for i in 0..c.cin {
            let src = &input[i * area..(i + 1) * area];
            for ky in 0..3 {
                for kx in 0..3 {
                    let mut acc = 0.0f32;
                    for y in 0..oh {
                        let dd = &dplane[y * ow..(y + 1) * ow];
                        let from = (y + ky) * w + kx;
                        for (&a, &b) in dd.iter().zip(&src[from..from + ow]) {
                            acc += a * b;
                        }
                    }
                    g[c.w + ((o * c.cin + i) * 3 + ky) * 3 + kx] += acc;
                }
            }
        }
    }
}

/// An inference pass of any residual net, written from the architecture alone (not from
/// `graph.rs`): its own parameter offsets in PyTorch's order (a convolution's weight, its
/// bias where it has one, then its normalisation's scale, shift, running mean and variance;
/// the trunk, then the policy head, then the value head), every output element one chain in
/// the engine's order (start with the bias, then the terms inputs ascending, then taps,
/// padding's zero terms included), `fma` for fused arithmetic. Batch normalisation reads the
/// running statistics. Returns the logits and the value head's output before its squashing.
pub(super) fn resnet_infer(
    r: &super::ResNet,
    input: Planes,
    actions: usize,
    p: &[f32],
    x: &[f32],
    fma: bool,
) -> (Vec<f32>, f32) {
    use super::Stem;
    let add = |acc: f32, a: f32, b: f32| if fma { a.mul_add(b, acc) } else { acc + a * b };
    // The next `len` parameters (a cursor shared by the layers below, in call order).
    let at = std::cell::Cell::new(0usize);
    let take = |len: usize| {
        at.set(at.get() + len);
        &p[at.get() - len..at.get()]
    };
    let bias_too = !r.batch_norm || r.conv_bias;
    // A convolution of `k` x `k` taps over `c` planes of `h` x `w`, zero padding `pad`,
    // then its normalisation (running statistics) if the net has one.
    let conv =
        |x: &[f32], (cin, cout, k): (usize, usize, usize), (h, w): (usize, usize), pad: usize| {
            let wt = take(cout * cin * k * k);
            let b = if bias_too { Some(take(cout)) } else { None };
            let (oh, ow) = (h + 2 * pad + 1 - k, w + 2 * pad + 1 - k);
            let mut out = vec![0.0f32; cout * oh * ow];
            for o in 0..cout {
                for y in 0..oh {
                    for xx in 0..ow {
                        let mut acc = b.map_or(0.0, |b| b[o]);
                        for i in 0..cin {
                            for ky in 0..k {
                                for kx in 0..k {
                                    let (sy, sx) = (y + ky, xx + kx);
                                    let inside =
                                        sy >= pad && sx >= pad && sy < h + pad && sx < w + pad;
                                    let v = if inside {
                                        x[(i * h + sy - pad) * w + sx - pad]
                                    } else {
                                        0.0
                                    };
                                    acc = add(acc, v, wt[((o * cin + i) * k + ky) * k + kx]);
                                }
                            }
                        }
                        out[(o * oh + y) * ow + xx] = acc;
                    }
                }
            }
            if r.batch_norm {
                let (gamma, beta, mean, var) = (take(cout), take(cout), take(cout), take(cout));
                let area = oh * ow;
                for (q, v) in out.iter_mut().enumerate() {
                    let c = q / area;
                    let inv = (1.0 / (f64::from(var[c]) + super::engine::BN_EPS).sqrt()) as f32;
                    *v = gamma[c] * ((*v - mean[c]) * inv) + beta[c];
                }
            }
            (out, (oh, ow))
        };
    let (c, h, w) = (input.channels, input.height, input.width);
    let pad = if r.stem == Stem::Valid { 0 } else { 1 };
    let (mut t, hw) = conv(x, (c, r.channels, 3), (h, w), pad);
    relu(&mut t);
    for _ in 0..r.blocks {
        let shapes: Vec<(usize, usize, usize)> = match r.bottleneck {
            None => vec![(r.channels, r.channels, 3), (r.channels, r.channels, 3)],
            Some(m) => vec![(r.channels, m, 1), (m, m, 3), (m, r.channels, 1)],
        };
        let last = shapes.len() - 1;
        let mut u = t.clone();
        for (j, s) in shapes.into_iter().enumerate() {
            u = conv(&u, s, hw, s.2 / 2).0;
            if j == last {
                for (a, &b) in u.iter_mut().zip(&t) {
                    *a += b;
                }
            }
            relu(&mut u);
        }
        t = u;
    }
    // A dense layer: weights [in][out], the sum from the bias in ascending inputs.
    let dense = |x: &[f32], n_out: usize| {
        let (wt, b) = (take(x.len() * n_out), take(n_out));
        (0..n_out)
            .map(|o| {
                let mut acc = b[o];
                for (i, &v) in x.iter().enumerate() {
                    acc = add(acc, v, wt[i * n_out + o]);
                }
                acc
            })
            .collect::<Vec<f32>>()
    };
    reference_heads(r.head, (r.channels, actions), &t, hw, &conv, &dense)
}

/// A convolution of [`resnet_infer`]: input, (cin, cout, taps per side), the planes' (h, w)
/// and the zero padding; returns the output and its planes' (h, w).
type RefConv<'a> =
    dyn Fn(&[f32], (usize, usize, usize), (usize, usize), usize) -> (Vec<f32>, (usize, usize)) + 'a;

/// [`resnet_infer`]'s heads over the trunk's output `t` of `channels` planes of `hw`: the
/// logits over `actions` and the value before its squashing.
fn reference_heads(
    head: super::Head,
    (channels, actions): (usize, usize),
    t: &[f32],
    hw: (usize, usize),
    conv: &RefConv<'_>,
    dense: &dyn Fn(&[f32], usize) -> Vec<f32>,
) -> (Vec<f32>, f32) {
    match head {
        super::Head::Dense => {
            let logits = dense(t, actions);
            let value = dense(t, 1);
            (logits, value[0])
        }
        super::Head::Conv {
            policy_channels: pc,
            value_channels: vc,
            value_hidden: vh,
        } => {
            let (mut pol, _) = conv(t, (channels, pc, 1), hw, 0);
            relu(&mut pol);
            let logits = dense(&pol, actions);
            let (mut val, _) = conv(t, (channels, vc, 1), hw, 0);
            relu(&mut val);
            let mut hid = dense(&val, vh);
            relu(&mut hid);
            let value = dense(&hid, 1);
            (logits, value[0])
        }
    }
}
