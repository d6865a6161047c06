//! Generic helpers to play a game: chance sampling and uniformly random playouts.
//!
//! They take caller-owned scratch buffers so loops over many playouts do not allocate.

use rand::RngExt;

use crate::game::{Action, ChanceOutcome, Game, GameResult, Turn};
use crate::rng::{StreamRng, uniform_index};

/// Reusable buffers for playing a game.
#[derive(Debug, Default)]
pub struct Scratch {
    pub actions: Vec<Action>,
    pub outcomes: Vec<ChanceOutcome>,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            actions: Vec::with_capacity(64),
            outcomes: Vec::with_capacity(64),
        }
    }
}

/// Samples an outcome of the chance state `s` by its probability and applies it.
pub fn step_chance<G: Game>(
    g: &G,
    s: &G::State,
    rng: &mut StreamRng,
    scratch: &mut Scratch,
) -> G::State {
    g.chance_outcomes(s, &mut scratch.outcomes);
    let i = sample_index(rng, &scratch.outcomes);
    g.apply_chance(s, scratch.outcomes[i].outcome)
}

/// Exactly [`crate::rng::sample_outcome`] (the same draw, the same index), without its
/// data-dependent early exit, which mispredicts on nearly every call in a playout.
///
/// `sample_outcome` returns the first `i` with `u < acc_i` (`acc_i` the running sum of the
/// probabilities, in order), or the last index. The probabilities are positive, so the
/// rounded running sums never decrease and the `i` with `acc_i <= u` are a prefix; its length
/// is that first `i`. A test checks the two agree.
#[inline]
fn sample_index(rng: &mut StreamRng, outcomes: &[ChanceOutcome]) -> usize {
    debug_assert!(!outcomes.is_empty());
    let u: f64 = rng.random();
    let mut acc = 0.0;
    let mut below = 0;
    for o in outcomes {
        acc += o.prob;
        below += usize::from(acc <= u);
    }
    below.min(outcomes.len() - 1)
}

/// Plays uniformly random actions (and chance by its probabilities) from `s` to the end.
/// Returns the result and the number of plies (decisions) played.
pub fn random_playout<G: Game>(
    g: &G,
    mut s: G::State,
    rng: &mut StreamRng,
    scratch: &mut Scratch,
) -> (GameResult, u32) {
    let mut plies = 0;
    loop {
        match g.turn(&s) {
            Turn::Terminal(r) => return (r, plies),
            Turn::Chance => s = step_chance(g, &s, rng, scratch),
            Turn::Player(_) => {
                g.legal_actions(&s, &mut scratch.actions);
                let a = scratch.actions[uniform_index(rng, scratch.actions.len())];
                s = g.apply(&s, a);
                plies += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{sample_outcome, stream};

    /// The branch-free sampler draws what `sample_outcome` draws, on uniform, skewed and
    /// tiny-probability lists, and leaves the stream at the same place.
    #[test]
    fn sample_index_is_sample_outcome() {
        let lists: Vec<Vec<f64>> = vec![
            vec![1.0],
            vec![0.5, 0.5],
            vec![1.0 / 3.0; 3],
            vec![1.0 / 6.0; 6],
            vec![1.0 / 7.0; 7],
            vec![1.0 / 720.0; 720],
            vec![0.1, 0.2, 0.3, 0.4],
            vec![1e-9, 1.0 - 2e-9, 1e-9],
            vec![0.25, 1e-17, 0.75],
            (1..=14).map(|i| i as f64 / 105.0).collect(),
        ];
        for (n, probs) in lists.iter().enumerate() {
            let outcomes: Vec<ChanceOutcome> = probs
                .iter()
                .enumerate()
                .map(|(i, &prob)| ChanceOutcome {
                    outcome: i as u16,
                    prob,
                })
                .collect();
            let mut a = stream(5, &format!("sample({n})"));
            let mut b = a.clone();
            let mut hits = vec![0u32; outcomes.len()];
            for _ in 0..20_000 {
                let i = sample_outcome(&mut a, &outcomes);
                assert_eq!(sample_index(&mut b, &outcomes), i, "list {n}");
                hits[i] += 1;
            }
            assert_eq!(a.random::<u64>(), b.random::<u64>());
            // Every outcome of a list without tiny probabilities is drawn.
            if probs.iter().all(|&p| p > 1e-3) {
                assert!(hits.iter().all(|&h| h > 0), "list {n}: {hits:?}");
            }
        }
    }
}
