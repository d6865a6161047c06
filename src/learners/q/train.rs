//! Q-learning's training: experience replay over the driver's training window (Liu et al.
//! after Mnih et al. 2015): `minibatches` minibatches of `batch_size` transitions, each drawn
//! uniformly with replacement from the window (the stream `q-replay(i)` of the model seed,
//! one index at a time), none while the window holds fewer than `prefill` transitions (the
//! paper's pre-filled pool). Each minibatch's targets y = R + gamma max_a' Q(S', a') (R alone
//! for a terminal transition) are computed from the model as it is when the minibatch
//! starts (the paper names no separate target network), then the model is updated:
//!
//! - **table**: Q(S, a) += alpha (y - Q(S, a)) for each transition in order (the paper's
//!   Algorithm 1); a new row starts at 0;
//! - **network**: one optimiser step on the Huber loss of Q(S, a) - y on the chosen action's
//!   output only (nn::q_train_step).
//!
//! Everything is sequential in a fixed order, so a training is the same bits on any number
//! of threads.

use std::collections::BTreeMap;

use super::records::TrainStats;
use super::transitions::Transition;
use super::{QRow, QSettings};
use crate::game::{Action, Game};
use crate::games::Abilities;
use crate::learners::Network;
use crate::nn::{QExample, Trainer};
use crate::rng::{StreamRng, stream_fmt, uniform_index};

/// The minibatches of iteration `iteration`'s training, as indices into the window (empty
/// below `prefill`).
pub(crate) fn minibatches(
    q: &QSettings,
    seed: u64,
    iteration: u32,
    window: usize,
) -> Vec<Vec<usize>> {
    if window == 0 || window < q.prefill as usize {
        return Vec::new();
    }
    let mut rng: StreamRng = stream_fmt(seed, format_args!("q-replay({iteration})"));
    (0..q.minibatches)
        .map(|_| {
            (0..q.batch_size)
                .map(|_| uniform_index(&mut rng, window))
                .collect()
        })
        .collect()
}

/// The largest of `q` over `legal` (0 for no action).
pub(crate) fn max_over(q: &[f64], legal: &[Action]) -> f64 {
    if legal.is_empty() {
        return 0.0;
    }
    legal
        .iter()
        .map(|&a| q[a as usize])
        .fold(f64::NEG_INFINITY, f64::max)
}

/// The target y of `t` given the bootstrap value max_a' Q(S', a') of its next state.
fn target<S>(q: &QSettings, t: &Transition<S>, next_max: f64) -> f64 {
    match t.next {
        Some(_) => t.reward + q.gamma * next_max,
        None => t.reward,
    }
}

/// Trains the lookup table on `batches` of `window` (see the module docs).
pub(crate) fn train_table<G: Game>(
    g: &G,
    q: &QSettings,
    table: &mut BTreeMap<G::Key, QRow>,
    window: &[&Transition<G::State>],
    batches: &[Vec<usize>],
) -> TrainStats {
    let na = g.num_actions();
    let (mut td, mut loss, mut n) = (0.0, 0.0, 0u64);
    let mut ys = Vec::new();
    for batch in batches {
        ys.clear();
        for &k in batch {
            let t = window[k];
            let next = t.next.as_ref().map_or(0.0, |(s, legal)| {
                table.get(&g.key(s)).map_or(0.0, |r| max_over(&r.q, legal))
            });
            ys.push(target(q, t, next));
        }
        for (&k, &y) in batch.iter().zip(&ys) {
            let t = window[k];
            let row = table.entry(g.key(&t.state)).or_insert_with(|| QRow {
                q: vec![0.0; na],
                updates: 0,
            });
            let e = y - row.q[t.action as usize];
            row.q[t.action as usize] += q.alpha * e;
            row.updates = row.updates.saturating_add(1);
            td += e.abs();
            loss += 0.5 * e * e;
            n += 1;
        }
    }
    stats(td, loss, n, window.len(), batches.len())
}

fn stats(td: f64, loss: f64, n: u64, window: usize, batches: usize) -> TrainStats {
    let m = n.max(1) as f64;
    TrainStats {
        td_error: td / m,
        loss: loss / m,
        transitions: window as u64,
        minibatches: batches as u64,
    }
}

/// Trains the network on `batches` of `window` at learning rate `lr` (see the module docs).
pub(crate) fn train_network<G: Abilities>(
    q: &QSettings,
    net: &mut Network<G>,
    lr: f64,
    window: &[&Transition<G::State>],
    batches: &[Vec<usize>],
) -> TrainStats {
    let mut trainer = Trainer::new(net.layout());
    let len = net.layout().input().len();
    let (mut values, mut logits, mut xs) = (Vec::new(), Vec::new(), Vec::new());
    let (mut td, mut loss) = (0.0, 0.0);
    let na = net.layout().actions();
    for batch in batches {
        let next: Vec<(&G::State, &[G::State])> = batch
            .iter()
            .filter_map(|&k| {
                let t = window[k];
                t.next.as_ref().map(|n| (&n.0, t.next_past.as_slice()))
            })
            .collect();
        net.infer_batch(next.into_iter(), &mut values, &mut logits);
        let mut row = 0;
        xs.clear();
        xs.resize(batch.len() * len, 0.0f32);
        let mut ys = Vec::with_capacity(batch.len());
        for (j, &k) in batch.iter().enumerate() {
            let t = window[k];
            net.encode(&t.state, &t.past, &mut xs[j * len..(j + 1) * len]);
            let next_max = t.next.as_ref().map_or(0.0, |(_, legal)| {
                let q: Vec<f64> = logits[row * na..(row + 1) * na]
                    .iter()
                    .map(|&v| f64::from(v))
                    .collect();
                row += 1;
                max_over(&q, legal)
            });
            ys.push(target(q, t, next_max) as f32);
        }
        let examples: Vec<QExample<'_>> = batch
            .iter()
            .enumerate()
            .map(|(j, &k)| QExample {
                x: &xs[j * len..(j + 1) * len],
                action: window[k].action,
                y: ys[j],
            })
            .collect();
        let (l, e) = net.q_step(lr, q.huber_delta, &examples, &mut trainer);
        loss += l;
        td += e;
    }
    let b = batches.len();
    stats(td, loss, b as u64, window.len(), b)
}
