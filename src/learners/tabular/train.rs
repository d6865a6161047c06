//! Training samples and the update rules of tabular AlphaZero (docs/learners.md).
//!
//! A sample is (position s, search policy pi, outcome z). For each sample, in order:
//!
//! ```text
//! p_hat_a <- p_hat_a - beta * (p'_a - pi_a)        for every a in A (pi = 0 off legal actions)
//! v_hat   <- v_hat   - beta * (v - z) * v * (1 - v)
//! ```
//!
//! with p' the softmax of p_hat over the whole action space and v = sigmoid(v_hat), both taken
//! before the update. A sample touches only its own position's row, so [`train()`] runs the
//! positions in parallel, each position's samples in their original order: the result is the
//! sequential loop's, bit for bit, on any number of threads.

use rayon::prelude::*;
use smallvec::SmallVec;

use super::table::{Table, sigmoid};
use crate::game::{Action, PositionKey};

/// Legal actions a [`Sample`] keeps inline (more spill to the heap). Training reads samples
/// grouped by position, in no memory order: actions and counts behind pointers cost two
/// cache misses a sample, a third of the update's own time on PPPP. A PPPP position has at
/// most 16 legal actions (8 squares: a flip per face-down square, at most three moves for
/// each of at most four own face-up pieces).
pub(crate) const INLINE_ACTIONS: usize = 16;

/// One training sample: a decision position, the search's target counts over its legal
/// actions (pi = counts / sum), and the final score z for the player to move there.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample<K> {
    pub key: K,
    /// The legal actions, ascending.
    pub actions: SmallVec<[Action; INLINE_ACTIONS]>,
    /// Target visit counts, one per legal action.
    pub counts: SmallVec<[u32; INLINE_ACTIONS]>,
    /// 1 win, 0.5 draw, 0 loss, for the player to move at `key`.
    pub(crate) z: f64,
}

/// Action spaces up to this size keep their exponentials on the stack (CDC 2x4: 40).
const EXP_KEPT: usize = 64;

/// Applies one sample to a row (|A| logits, then v_hat) with learning rate `beta`.
pub(crate) fn apply_sample(row: &mut [f64], actions: &[Action], counts: &[u32], z: f64, beta: f64) {
    let n = row.len() - 1;
    let logits = &mut row[..n];
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // exp(l - max) of every logit, kept for p' when the action space fits on the stack
    // (the same values either way: the softmax is bit for bit the two-pass one).
    let mut kept = [0.0f64; EXP_KEPT];
    let keep = n <= EXP_KEPT;
    let sum: f64 = if keep {
        let mut sum = 0.0;
        for (k, &l) in kept.iter_mut().zip(logits.iter()) {
            *k = (l - max).exp();
            sum += *k;
        }
        sum
    } else {
        logits.iter().map(|&l| (l - max).exp()).sum()
    };
    let total: f64 = counts.iter().map(|&c| f64::from(c)).sum();
    let mut j = 0;
    for (a, l) in logits.iter_mut().enumerate() {
        let pi = if j < actions.len() && actions[j] as usize == a {
            let x = if total > 0.0 {
                f64::from(counts[j]) / total
            } else {
                0.0
            };
            j += 1;
            x
        } else {
            0.0
        };
        // p'_a from the logit's value before this update (each logit is read, then written).
        let e = if keep { kept[a] } else { (*l - max).exp() };
        let p = e / sum;
        *l -= beta * (p - pi);
    }
    let v_hat = &mut row[n];
    let v = sigmoid(*v_hat);
    *v_hat -= beta * (v - z) * v * (1.0 - v);
}

/// What one training pass did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainReport {
    pub(crate) samples: u64,
    /// Rows trained, as table row indices in ascending key order.
    pub rows: Vec<usize>,
}

/// Trains `table` on `samples` (in their original order: game by game, move by move) with
/// learning rate `beta`, in parallel over positions on the current rayon pool.
pub fn train<K: PositionKey>(
    table: &mut Table<K>,
    samples: &[&Sample<K>],
    beta: f64,
) -> TrainReport {
    // (key, sample index) pairs are distinct, so sorting them groups each key's samples and
    // keeps them in their original order.
    let mut order: Vec<(K, u32)> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key, i as u32))
        .collect();
    order.sort_unstable();
    let mut groups: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let key = order[start].0;
        let mut end = start + 1;
        while end < order.len() && order[end].0 == key {
            end += 1;
        }
        // Materialising in ascending key order; the row index assigned decides nothing.
        groups.push((table.materialise(key), start..end));
        start = end;
    }
    let stride = table.stride();
    let mut rows: Vec<f64> = Vec::with_capacity(groups.len() * stride);
    for (row, _) in &groups {
        rows.extend_from_slice(table.row(*row));
    }
    rows.par_chunks_mut(stride)
        .zip(groups.par_iter())
        .with_min_len(64)
        .for_each(|(row, (_, range))| {
            for &(_, i) in &order[range.clone()] {
                let s = samples[i as usize];
                apply_sample(row, &s.actions, &s.counts, s.z, beta);
            }
        });
    for ((row, range), data) in groups.iter().zip(rows.chunks(stride)) {
        table.row_mut(*row).copy_from_slice(data);
        table.add_updates(*row, range.len() as u32);
    }
    TrainReport {
        samples: samples.len() as u64,
        rows: groups.into_iter().map(|g| g.0).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One position, |A| = 3 (actions 0 and 2 legal), two samples, beta = 0.5, computed by
    /// hand from the update rules.
    ///
    /// Start: p_hat = (0, 0, 0), v_hat = 0.
    /// Sample 1: pi = (3/4, 0, 1/4), z = 1. p' = (1/3, 1/3, 1/3); v = 1/2.
    ///   p_hat = (0 - 0.5 (1/3 - 3/4), 0 - 0.5 (1/3), 0 - 0.5 (1/3 - 1/4))
    ///         = (5/24, -1/6, -1/24)
    ///   v_hat = 0 - 0.5 (1/2 - 1) (1/4) = 1/16
    /// Sample 2: pi = (0, 0, 1), z = 0.
    ///   p' = softmax(5/24, -1/6, -1/24); v = sigmoid(1/16)
    ///   p_hat_a -= 0.5 (p'_a - pi_a); v_hat -= 0.5 (v - 0) v (1 - v)
    #[test]
    fn update_rules_by_hand() {
        let mut row = vec![0.0; 4];
        apply_sample(&mut row, &[0, 2], &[3, 1], 1.0, 0.5);
        let first = [5.0 / 24.0, -1.0 / 6.0, -1.0 / 24.0, 1.0 / 16.0];
        for (x, y) in row.iter().zip(first) {
            assert!((x - y).abs() < 1e-15, "{row:?}");
        }
        apply_sample(&mut row, &[0, 2], &[0, 5], 0.0, 0.5);
        // p' of (5/24, -1/6, -1/24): e^(5/24) = 1.2316236, e^(-1/6) = 0.8464817,
        // e^(-1/24) = 0.9591895; sum 3.0372948; p' = (0.4055002, 0.2786959, 0.3158039).
        // v = sigmoid(0.0625) = 0.5156199; v (1 - v) = 0.2497560.
        let want = [
            5.0 / 24.0 - 0.5 * 0.405_500_2,
            -1.0 / 6.0 - 0.5 * 0.278_695_9,
            -1.0 / 24.0 - 0.5 * (0.315_803_9 - 1.0),
            0.0625 - 0.5 * 0.515_619_9 * 0.249_756_0,
        ];
        for (x, y) in row.iter().zip(want) {
            assert!((x - y).abs() < 1e-7, "{row:?} vs {want:?}");
        }
    }

    #[test]
    fn parallel_training_equals_the_sequential_loop() {
        let mut samples = Vec::new();
        for i in 0..500u32 {
            let key = u64::from(i % 37);
            samples.push(Sample {
                key,
                actions: smallvec::smallvec![0, 1, 3],
                counts: smallvec::smallvec![i % 5, 1 + i % 3, i % 7],
                z: f64::from(i % 3) / 2.0,
            });
        }
        let refs: Vec<&Sample<u64>> = samples.iter().collect();
        let mut seq: Table<u64> = Table::new(4, 9, 0.01);
        for s in &samples {
            let r = seq.materialise(s.key);
            apply_sample(seq.row_mut(r), &s.actions, &s.counts, s.z, 0.3);
        }
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut par: Table<u64> = Table::new(4, 9, 0.01);
            let rep = pool.install(|| train(&mut par, &refs, 0.3));
            assert_eq!(rep.rows.len(), 37);
            assert_eq!(rep.samples, 500);
            for k in 0..37u64 {
                let a = seq.row(seq.find(&k).unwrap());
                let i = par.find(&k).unwrap();
                assert_eq!(a, par.row(i), "key {k}, {threads} threads");
                assert_eq!(par.updates(i), if k < 19 { 14 } else { 13 });
            }
        }
    }
}
