//! Optimisers: SGD with momentum, optional Nesterov momentum and L2 weight decay (the 2023
//! study's network: momentum 0.9, Nesterov, weight decay 1e-4), and Adam (Kingma and Ba,
//! 2015). Element-wise updates: no reduction, so no order to fix; long ranges are updated in
//! parallel pieces.

use serde::{Deserialize, Serialize};

/// Which optimiser, with its constants.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum OptimConfig {
    /// `buf = momentum * buf + g'`, `g' = g + weight_decay * w`; the step is `buf`, or
    /// `g' + momentum * buf` with Nesterov (the convention of PyTorch's SGD).
    Sgd {
        momentum: f64,
        nesterov: bool,
        weight_decay: f64,
    },
    /// Adam on `g' = g + weight_decay * w` (L2, not decoupled), bias-corrected moments.
    Adam {
        beta1: f64,
        beta2: f64,
        eps: f64,
        weight_decay: f64,
    },
}

/// An optimiser's state: what a checkpoint stores beside the weights so that training resumes
/// bit for bit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OptimState {
    /// Steps taken.
    pub steps: u64,
    /// beta1^steps and beta2^steps (Adam's bias corrections, kept as running products so
    /// no power function enters the bits).
    pub(crate) pow1: f64,
    pub(crate) pow2: f64,
    /// SGD: the momentum buffer. Adam: the first moment.
    pub m: Vec<f32>,
    /// Adam: the second moment (empty for SGD).
    pub v: Vec<f32>,
}

impl OptimState {
    pub fn new(cfg: &OptimConfig, params: usize) -> OptimState {
        OptimState {
            steps: 0,
            pow1: 1.0,
            pow2: 1.0,
            m: vec![0.0; params],
            v: match cfg {
                OptimConfig::Sgd { .. } => Vec::new(),
                OptimConfig::Adam { .. } => vec![0.0; params],
            },
        }
    }

    /// Whether this state fits `cfg` over `params` parameters (a checkpoint of another
    /// optimiser or size does not).
    pub fn fits(&self, cfg: &OptimConfig, params: usize) -> bool {
        let v = match cfg {
            OptimConfig::Sgd { .. } => 0,
            OptimConfig::Adam { .. } => params,
        };
        self.m.len() == params && self.v.len() == v
    }

    /// One update of `w` with gradient `g` at learning rate `lr`, leaving the `frozen`
    /// ranges (start, len, ascending: running statistics) and their state alone.
    pub fn step(
        &mut self,
        cfg: &OptimConfig,
        lr: f64,
        w: &mut [f32],
        g: &[f32],
        frozen: &[(usize, usize)],
    ) {
        self.steps += 1;
        if let OptimConfig::Adam { beta1, beta2, .. } = *cfg {
            self.pow1 *= beta1;
            self.pow2 *= beta2;
        }
        let mut from = 0;
        for &(at, len) in frozen.iter().chain(std::iter::once(&(w.len(), 0))) {
            let r = from..at;
            let v = if self.v.is_empty() {
                &mut [][..]
            } else {
                &mut self.v[r.clone()]
            };
            update_split(
                cfg,
                lr,
                (self.pow1, self.pow2),
                &mut w[r.clone()],
                &g[r.clone()],
                &mut self.m[r.clone()],
                v,
            );
            from = at + len;
        }
    }
}

/// Elements one task updates: a longer range is halved, the halves updated on two threads
/// (docs/scaling.md). Each element's update is the same whatever the split.
pub(crate) const SPLIT: usize = 1 << 14;

/// [`update`] of a range, split in halves over the threads down to [`SPLIT`] elements.
fn update_split(
    cfg: &OptimConfig,
    lr: f64,
    pows: (f64, f64),
    w: &mut [f32],
    g: &[f32],
    m: &mut [f32],
    v: &mut [f32],
) {
    if w.len() <= SPLIT {
        update(cfg, lr, pows, w, g, m, v);
        return;
    }
    let h = w.len() / 2;
    let (w0, w1) = w.split_at_mut(h);
    let (g0, g1) = g.split_at(h);
    let (m0, m1) = m.split_at_mut(h);
    let (v0, v1) = match v.is_empty() {
        true => (<&mut [f32]>::default(), <&mut [f32]>::default()),
        false => v.split_at_mut(h),
    };
    rayon::join(
        || update_split(cfg, lr, pows, w0, g0, m0, v0),
        || update_split(cfg, lr, pows, w1, g1, m1, v1),
    );
}

/// The element-wise update of a range: `m` and `v` its optimiser state (`v` empty for SGD),
/// `pows` Adam's running powers after this step.
fn update(
    cfg: &OptimConfig,
    lr: f64,
    pows: (f64, f64),
    w: &mut [f32],
    g: &[f32],
    m: &mut [f32],
    v: &mut [f32],
) {
    match *cfg {
        OptimConfig::Sgd {
            momentum,
            nesterov,
            weight_decay,
        } => {
            let (mu, wd, lr) = (momentum as f32, weight_decay as f32, lr as f32);
            for ((w, &g), b) in w.iter_mut().zip(g).zip(m.iter_mut()) {
                let g = g + wd * *w;
                *b = mu * *b + g;
                let step = if nesterov { g + mu * *b } else { *b };
                *w -= lr * step;
            }
        }
        OptimConfig::Adam {
            beta1,
            beta2,
            eps,
            weight_decay,
        } => {
            let c1 = (1.0 / (1.0 - pows.0)) as f32;
            let c2 = (1.0 / (1.0 - pows.1)) as f32;
            let (b1, b2, eps, wd, lr) = (
                beta1 as f32,
                beta2 as f32,
                eps as f32,
                weight_decay as f32,
                lr as f32,
            );
            for (((w, &g), m), v) in w.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
                let g = g + wd * *w;
                *m = b1 * *m + (1.0 - b1) * g;
                *v = b2 * *v + (1.0 - b2) * g * g;
                let mh = *m * c1;
                let vh = *v * c2;
                *w -= lr * mh / (vh.sqrt() + eps);
            }
        }
    }
}
