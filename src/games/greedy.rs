//! The greedy heuristic of Liu et al. (*Towards Understanding Chinese Checkers with
//! Heuristics, Monte Carlo Tree Search, and Deep Reinforcement Learning*) over the features a
//! game gives its legal actions ([`super::Abilities::greedy_features`]: each action's forward
//! gain Psi and how far back its piece stands), shared by the greedy players (`players`) and
//! greedy self-play (`selfplay`, the heuristic pre-training of docs/checkers.md).
//!
//! - *Deterministic*: a move of largest Psi, ties toward the rearmost piece, then uniformly at
//!   random among the moves left ([`best_moves`] is that last set).
//! - *Stochastic*: a move drawn with probability proportional to Psi among those with Psi > 0.
//!
//! With no forward move (largest Psi <= 0) both take a move of smallest |Psi|, uniformly
//! among those.

use crate::rng::{StreamRng, uniform_index};

/// The greedy player's flavour.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GreedyMode {
    Deterministic,
    Stochastic,
}

/// The indices (into `features`, ascending) the deterministic greedy player chooses among
/// uniformly: its tied best moves. Empty only when `features` is.
pub(crate) fn best_moves(features: &[(i32, i32)], out: &mut Vec<usize>) {
    out.clear();
    let max_psi = features.iter().map(|f| f.0).max().unwrap_or(0);
    let best: &dyn Fn(&(i32, i32)) -> bool = if max_psi <= 0 {
        let least = features.iter().map(|f| f.0.abs()).min().unwrap_or(0);
        &move |f| f.0.abs() == least
    } else {
        let rear = features
            .iter()
            .filter(|f| f.0 == max_psi)
            .map(|f| f.1)
            .max()
            .unwrap_or(0);
        &move |f| f.0 == max_psi && f.1 == rear
    };
    out.extend((0..features.len()).filter(|&i| best(&features[i])));
}

/// The greedy choice of `mode` over `features` (see the module docs): an index into it.
pub(crate) fn greedy_choice(
    mode: GreedyMode,
    features: &[(i32, i32)],
    rng: &mut StreamRng,
) -> usize {
    let max_psi = features.iter().map(|f| f.0).max().unwrap_or(0);
    if mode == GreedyMode::Deterministic || max_psi <= 0 {
        let mut best = Vec::new();
        best_moves(features, &mut best);
        return best
            .get(uniform_index(rng, best.len().max(1)))
            .copied()
            .unwrap_or(0);
    }
    let total: i64 = features
        .iter()
        .filter(|f| f.0 > 0)
        .map(|f| i64::from(f.0))
        .sum();
    let mut u = uniform_index(rng, total as usize) as i64;
    for (i, f) in features.iter().enumerate() {
        if f.0 > 0 {
            if u < i64::from(f.0) {
                return i;
            }
            u -= i64::from(f.0);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn greedy_choices_follow_the_rules() {
        let mut rng = stream(1, "greedy");
        // Largest Psi 2 twice; the rearmost (rear 5) wins the tie.
        let f = [(1, 9), (2, 3), (2, 5), (-1, 9)];
        for _ in 0..20 {
            assert_eq!(greedy_choice(GreedyMode::Deterministic, &f, &mut rng), 2);
        }
        // Equal Psi and rear: uniformly random among them.
        let f = [(2, 5), (2, 5), (0, 0)];
        let firsts = (0..1000)
            .filter(|_| greedy_choice(GreedyMode::Deterministic, &f, &mut rng) == 0)
            .count();
        assert!((420..580).contains(&firsts), "{firsts}");
        // Stochastic: proportional to Psi over Psi > 0: P = 1/4, 3/4, 0.
        let f = [(1, 0), (3, 0), (-2, 0)];
        let mut counts = [0; 3];
        for _ in 0..4000 {
            counts[greedy_choice(GreedyMode::Stochastic, &f, &mut rng)] += 1;
        }
        assert_eq!(counts[2], 0);
        assert!((900..1100).contains(&counts[0]), "{counts:?}");
        // No forward move: the smallest |Psi|.
        let f = [(-2, 0), (0, 0), (-1, 0)];
        for mode in [GreedyMode::Deterministic, GreedyMode::Stochastic] {
            assert_eq!(greedy_choice(mode, &f, &mut rng), 1);
        }
    }

    #[test]
    fn best_moves_are_the_deterministic_players_ties() {
        let mut out = vec![7];
        best_moves(&[(1, 9), (2, 3), (2, 5), (-1, 9), (2, 5)], &mut out);
        assert_eq!(out, [2, 4]);
        best_moves(&[(-2, 0), (0, 4), (-1, 0), (0, 1)], &mut out);
        assert_eq!(out, [1, 3]);
        best_moves(&[], &mut out);
        assert!(out.is_empty());
    }
}
