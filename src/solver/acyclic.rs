//! Acyclic games: memoised depth-first expectimax.
//!
//! Every reachable decision position is visited once; its value is the best over its legal
//! actions of the action's value, where chance is averaged in the game's outcome order and a
//! terminal state scores as its result. The memo is a hash map from key to value, sorted into
//! the solution's dense arrays at the end. Recursion depth is bounded by the game length.

use super::fasthash::FastMap;
use super::{Progress, Solution, Solvable, SolveError};
use crate::game::{Action, ChanceOutcome, Game, Player, Turn};

struct Dfs<'a, G: Game> {
    g: &'a G,
    memo: FastMap<G::Key, f64>,
    actions: Vec<Vec<Action>>,
    outcomes: Vec<Vec<ChanceOutcome>>,
    progress: &'a (dyn Fn(Progress) + Sync),
}

impl<G: Game> Dfs<'_, G> {
    fn decision(&mut self, s: &G::State, mover: Player, depth: usize) -> f64 {
        let key = self.g.key(s);
        if let Some(&v) = self.memo.get(&key) {
            return v;
        }
        if self.actions.len() <= depth {
            self.actions.resize_with(depth + 1, Vec::new);
        }
        let mut actions = std::mem::take(&mut self.actions[depth]);
        self.g.legal_actions(s, &mut actions);
        let mut best = f64::NEG_INFINITY;
        for &a in &actions {
            let child = self.g.apply(s, a);
            best = best.max(self.after(&child, mover, depth + 1));
        }
        self.actions[depth] = actions;
        // A decision state always has a legal action (games make action-less states terminal).
        debug_assert!(best.is_finite());
        self.memo.insert(key, best);
        if self.memo.len().is_multiple_of(1 << 16) {
            (self.progress)(Progress::Found(self.memo.len() as u64));
        }
        best
    }

    /// The value of `s` for `p`.
    fn after(&mut self, s: &G::State, p: Player, depth: usize) -> f64 {
        match self.g.turn(s) {
            Turn::Terminal(r) => 2.0 * r.score(p) - 1.0,
            Turn::Player(q) => {
                let v = self.decision(s, q, depth);
                if q == p { v } else { -v }
            }
            Turn::Chance => {
                if self.outcomes.len() <= depth {
                    self.outcomes.resize_with(depth + 1, Vec::new);
                }
                let mut outcomes = std::mem::take(&mut self.outcomes[depth]);
                self.g.chance_outcomes(s, &mut outcomes);
                let mut total = 0.0;
                for o in &outcomes {
                    let child = self.g.apply_chance(s, o.outcome);
                    total += o.prob * self.after(&child, p, depth + 1);
                }
                self.outcomes[depth] = outcomes;
                total
            }
        }
    }
}

/// Solves an acyclic game (see the module docs).
pub(crate) fn solve<G: Solvable>(
    g: &G,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Solution<G::Key>, SolveError> {
    let mut dfs = Dfs {
        g,
        memo: FastMap::default(),
        actions: Vec::new(),
        outcomes: Vec::new(),
        progress,
    };
    dfs.after(&g.initial_state(), Player::P0, 0);
    let pairs: Vec<(G::Key, f64)> = dfs.memo.into_iter().collect();
    let n = pairs.len() as u64;
    progress(Progress::Valued { done: n, total: n });
    Ok(Solution::from_pairs(g.variant(), pairs))
}
