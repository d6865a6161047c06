//! A thin public entry to the engine for throughput measurements: batch inference and
//! training steps on inputs built outside the crate (`examples/nn_throughput.rs`, compared
//! with ONNX Runtime and PyTorch by `benches/anchors/run.sh`; docs/network.md, "Measuring
//! against ONNX Runtime and PyTorch"). Nothing here is used by the learner: it calls the same
//! [`Layout::forward_batch`] and [`train_step`] the learner does, so its rates are the
//! learner's.

use super::{Example, Layout, OptimConfig, OptimState, Scratch, Trainer, Weights, train_step};

pub use super::encode::Planes;

/// The shape of `channels x height x width` input planes.
pub fn planes(channels: usize, height: usize, width: usize) -> Planes {
    Planes {
        channels,
        height,
        width,
    }
}

/// A training example: planes `x`, the `legal` actions, the `target` distribution over them
/// (same length as `legal`), and the outcome `z` for the side to move on the [0, 1] scale.
pub fn example(x: Vec<f32>, legal: Vec<u16>, target: Vec<f32>, z: f32) -> Example {
    Example {
        x,
        legal,
        target,
        z,
    }
}

/// Evaluates `xs` (positions' planes one after another, each [`Planes::len`] long) as one
/// batch, as the learner does, with `weights` packed from `params` ([`Layout::weights`]):
/// `values` gets each value head's output before its squashing (tanh or sigmoid), `logits`
/// each position's policy logits, concatenated.
pub fn infer_batch(
    layout: &Layout,
    params: &[f32],
    weights: &Weights,
    xs: &[f32],
    scratch: &mut Scratch,
    values: &mut Vec<f32>,
    logits: &mut Vec<f32>,
) {
    let n = xs.len() / layout.input().len().max(1);
    layout.forward_batch(params, weights, xs, n, scratch);
    values.clear();
    values.extend_from_slice(&scratch.values[..n]);
    logits.clear();
    logits.extend_from_slice(&scratch.logits[..n * layout.actions()]);
}

/// The learner's default optimiser (SGD, momentum 0.9, Nesterov, weight decay 1e-4,
/// learning rate 0.1: `NetworkSettings::default`) with its momentum kept from step to step,
/// as the learner and PyTorch's loop keep theirs, on minibatches taken in order from the
/// examples (wrapping round).
pub struct Steps {
    opt: OptimState,
    cfg: OptimConfig,
    next: usize,
}

impl Steps {
    /// A fresh momentum buffer for `layout`'s parameters.
    pub fn new(layout: &Layout) -> Steps {
        let cfg = OptimConfig::Sgd {
            momentum: 0.9,
            nesterov: true,
            weight_decay: 1e-4,
        };
        Steps {
            opt: OptimState::new(&cfg, layout.params()),
            cfg,
            next: 0,
        }
    }

    /// `steps` optimiser steps on minibatches of `batch` examples, with the working memory
    /// `t` ([`Trainer::new`]). Returns the last step's mean policy and value losses.
    pub fn run(
        &mut self,
        layout: &Layout,
        params: &mut [f32],
        examples: &[Example],
        batch: usize,
        steps: usize,
        t: &mut Trainer,
    ) -> (f64, f64) {
        let refs: Vec<&Example> = examples.iter().collect();
        let n = refs.len();
        let mut last = (0.0, 0.0);
        if n == 0 {
            return last;
        }
        for _ in 0..steps {
            let idx: Vec<usize> = (0..batch).map(|k| (self.next + k) % n).collect();
            self.next = (self.next + batch) % n;
            let (opt, cfg) = (&mut self.opt, &self.cfg);
            let l = train_step(layout, params, opt, cfg, 0.1, &refs, &idx, t);
            last = (l.policy, l.value);
        }
        last
    }
}
