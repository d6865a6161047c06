//! The exact solver: every reachable position's theoretical value.
//!
//! docs/solver.md. Values are kept in [-1, 1] for the side to move (win 1, draw 0, loss -1)
//! and reported on the literature's [0, 1] scale as (v + 1) / 2. A position's value is the
//! expected score under optimal play by both sides, chance averaged by its probabilities.
//!
//! Two methods, chosen by the game ([`Solvable::method`]):
//! - **Layered** ([`layered`]) for games with cycles (Chinese dark chess, Chinese Checkers):
//!   positions are split into levels that no action raises; within a level the game is
//!   deterministic and each level is solved exactly, lowest first, by the priority-queue
//!   retrograde analysis of the spec (positive values settle in decreasing order, a negative
//!   value when its last successor settles, positions left over can keep the game cycling and
//!   are draws). Plain value iteration does not converge on "KPPP vs kppp".
//! - **Acyclic** ([`acyclic`]) for games whose play cannot cycle (EinStein würfelt nicht!,
//!   Connect Four): memoised depth-first expectimax.
//!
//! A [`Solution`] keeps the sorted keys of all non-terminal decision positions beside their
//! values, 8 bytes of value plus the key per position, so a lookup is a binary search. Action
//! values are derived on demand by one step of look-ahead ([`action_values`]).

pub(crate) mod acyclic;
pub(crate) mod fasthash;
pub mod index;
pub mod layered;
mod record;

use crate::game::{Action, Game, Player, Turn};
use crate::rng::{StreamRng, uniform_index};
use crate::store::{Store, StoreError};

pub use record::{load_solution, save_solution, solutions_agree};

/// How a game is solved.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Method {
    /// Play cannot cycle: memoised depth-first search.
    Acyclic,
    /// Play may cycle: levels, each solved by retrograde analysis (see the module docs).
    Layered,
}

/// What the solver needs beyond [`Game`]: an optional ability, implemented by the games that
/// are small enough to solve.
pub trait Solvable: Game {
    fn method(&self) -> Method;

    /// `Err(reason)` when this variant is too large (or otherwise unsuited) to solve exactly.
    fn check_solvable(&self) -> Result<(), String>;

    /// Layered games: the level of a decision position. No action raises it; an action that
    /// keeps it leads directly (no chance) to a terminal state or to a decision position of
    /// the other player. Acyclic games may return 0.
    fn level(&self, s: &Self::State) -> u32;

    /// The test positions S_test of the metrics (docs/games.md), decision states all.
    fn test_positions(&self) -> Vec<Self::State>;

    /// Layered games: the perfect index of each level's positions ([`index`]), which the
    /// layered solver needs. `None` (the default) for games it does not take.
    fn perfect_index(&self) -> Option<Box<dyn index::PerfectIndex<Self>>> {
        None
    }

    /// Layered games with a solve of their own on keys (usually [`layered::solve_keys`] over
    /// the game's [`layered::KeySpace`]), which [`solve`] prefers; `None` (the default) runs
    /// the generic [`layered::solve`].
    fn solve_keyed(
        &self,
        _progress: &(dyn Fn(Progress) + Sync),
    ) -> Option<Result<Solution<Self::Key>, SolveError>> {
        None
    }
}

/// Why a solution could not be loaded or computed ([`load_or_solve`]).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// The solve finished without a value for the start position.
    #[error("the optimal player has no value for {variant} position `{position}`")]
    Unsolved { variant: String, position: String },
}

/// Loads the stored solution of `g`, or solves it and saves it first.
pub fn load_or_solve<G: Solvable>(g: &G, store: &mut Store) -> Result<Solution<G::Key>, LoadError> {
    if let Some((sol, _)) = load_solution::<G::Key>(store, &g.variant())? {
        return Ok(sol);
    }
    let t = std::time::Instant::now();
    let sol = solve(g, &|_| {})?;
    let start = start_value(g, &sol).ok_or_else(|| LoadError::Unsolved {
        variant: g.variant(),
        position: g.notation(&g.initial_state()),
    })?;
    save_solution(store, &sol, start, t.elapsed().as_secs_f64())?;
    Ok(sol)
}

/// Errors of the solver.
#[derive(Debug, thiserror::Error)]
pub enum SolveError {
    #[error("{variant} cannot be solved exactly: {reason}")]
    Unsolvable { variant: String, reason: String },
    #[error("{variant}: the game breaks a rule the solver relies on: {reason}")]
    Invariant { variant: String, reason: String },
}

/// Values of every non-terminal decision position reachable from the start.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution<K> {
    pub variant: String,
    /// Sorted ascending, unique.
    keys: Vec<K>,
    /// `values[i]` is the value in [-1, 1] of `keys[i]` for its side to move.
    values: Vec<f64>,
}

impl<K: Ord + Copy> Solution<K> {
    /// Builds a solution from `(key, value)` pairs in any order (keys unique).
    pub(crate) fn from_pairs(variant: String, mut pairs: Vec<(K, f64)>) -> Solution<K>
    where
        K: Send,
    {
        use rayon::slice::ParallelSliceMut;
        pairs.par_sort_unstable_by_key(|p| p.0);
        let (keys, values) = pairs.into_iter().unzip();
        Solution {
            variant,
            keys,
            values,
        }
    }

    /// Builds a solution from sorted, unique keys and their values.
    pub(crate) fn from_sorted(variant: String, keys: Vec<K>, values: Vec<f64>) -> Solution<K> {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]));
        debug_assert_eq!(keys.len(), values.len());
        Solution {
            variant,
            keys,
            values,
        }
    }

    /// Number of non-terminal decision positions.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The dense index of a position key.
    #[inline]
    pub fn index(&self, key: &K) -> Option<usize> {
        self.keys.binary_search(key).ok()
    }

    /// The value in [-1, 1] of a decision position, for its side to move.
    #[inline]
    pub fn value_of_key(&self, key: &K) -> Option<f64> {
        self.index(key).map(|i| self.values[i])
    }

    pub fn keys(&self) -> &[K] {
        &self.keys
    }

    pub fn values(&self) -> &[f64] {
        &self.values
    }
}

/// [-1, 1] to the literature's [0, 1].
#[inline]
pub fn to_unit(v: f64) -> f64 {
    (v + 1.0) / 2.0
}

/// The value of state `s` for player `p`, in [-1, 1]: terminal scores, decision positions
/// from `lookup` (their mover's view, negated for the other player), chance states as the
/// probability-weighted mean of their outcomes (in the game's outcome order, so the sum is
/// always taken in the same order).
pub fn value_for<G: Game>(
    g: &G,
    s: &G::State,
    p: Player,
    lookup: &impl Fn(&G::State) -> Option<f64>,
) -> Option<f64> {
    value_for_pooled(g, s, p, lookup, &mut Vec::new(), 0)
}

/// [`value_for`] with one reusable outcome buffer per chance depth in `pool`, so hot loops do
/// not allocate once the pool is warm.
pub(crate) fn value_for_pooled<G: Game>(
    g: &G,
    s: &G::State,
    p: Player,
    lookup: &impl Fn(&G::State) -> Option<f64>,
    pool: &mut Vec<Vec<crate::game::ChanceOutcome>>,
    depth: usize,
) -> Option<f64> {
    match g.turn(s) {
        Turn::Terminal(r) => Some(2.0 * r.score(p) - 1.0),
        Turn::Player(q) => {
            let v = lookup(s)?;
            Some(if q == p { v } else { -v })
        }
        Turn::Chance => {
            if pool.len() <= depth {
                pool.resize_with(depth + 1, Vec::new);
            }
            let mut outcomes = std::mem::take(&mut pool[depth]);
            g.chance_outcomes(s, &mut outcomes);
            let mut total = Some(0.0);
            for o in &outcomes {
                let child = g.apply_chance(s, o.outcome);
                match value_for_pooled(g, &child, p, lookup, pool, depth + 1) {
                    Some(v) => total = total.map(|t| t + o.prob * v),
                    None => {
                        total = None;
                        break;
                    }
                }
            }
            pool[depth] = outcomes;
            total
        }
    }
}

/// The value in [-1, 1] of any state for player `p`, by the solution.
pub(crate) fn state_value<G: Game>(
    g: &G,
    sol: &Solution<G::Key>,
    s: &G::State,
    p: Player,
) -> Option<f64> {
    value_for(g, s, p, &|t| sol.value_of_key(&g.key(t)))
}

/// Every legal action of decision state `s` with its value v*_a in [-1, 1] for the mover.
/// `None` if `s` is not a decision state or a successor is missing from the solution.
pub fn action_values<G: Game>(
    g: &G,
    sol: &Solution<G::Key>,
    s: &G::State,
) -> Option<Vec<(Action, f64)>> {
    let Turn::Player(p) = g.turn(s) else {
        return None;
    };
    let mut actions = Vec::new();
    g.legal_actions(s, &mut actions);
    actions
        .iter()
        .map(|&a| Some((a, state_value(g, sol, &g.apply(s, a), p)?)))
        .collect()
}

/// Tolerance within which actions count as equally good.
pub const OPTIMAL_TOLERANCE: f64 = 1e-9;

/// The actions whose value is within [`OPTIMAL_TOLERANCE`] of the best, ascending.
pub fn best_actions<G: Game>(g: &G, sol: &Solution<G::Key>, s: &G::State) -> Option<Vec<Action>> {
    let values = action_values(g, sol, s)?;
    let best = values.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
    Some(
        values
            .into_iter()
            .filter(|x| x.1 >= best - OPTIMAL_TOLERANCE)
            .map(|x| x.0)
            .collect(),
    )
}

/// The optimal player's move: uniform among the best actions (docs/solver.md).
pub fn optimal_action<G: Game>(
    g: &G,
    sol: &Solution<G::Key>,
    s: &G::State,
    rng: &mut StreamRng,
) -> Option<Action> {
    let best = best_actions(g, sol, s)?;
    Some(best[uniform_index(rng, best.len())])
}

/// The start value in [-1, 1] for the first player (for a random start, the mean over the
/// start positions by their probabilities).
pub fn start_value<G: Game>(g: &G, sol: &Solution<G::Key>) -> Option<f64> {
    state_value(g, sol, &g.initial_state(), Player::P0)
}

/// The largest Bellman residual |V(p) - max_a v*_a| over all positions of the solution, in
/// parallel (a max is exact in any order). `None` if a successor is missing.
pub fn bellman_residual<G: Game>(g: &G, sol: &Solution<G::Key>) -> Result<f64, String> {
    const CHUNK: usize = 4096;
    let maxima = crate::par::try_map(crate::par::chunks(sol.keys.len(), CHUNK), |c| {
        let mut worst = 0.0f64;
        for i in c * CHUNK..((c + 1) * CHUNK).min(sol.keys.len()) {
            let (k, v) = (&sol.keys[i], sol.values[i]);
            let s = g.state_from_key(*k).map_err(|e| e.to_string())?;
            let av = action_values(g, sol, &s)
                .ok_or_else(|| format!("position {k:?}: a successor has no value"))?;
            let best = av.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
            worst = worst.max((v - best).abs());
        }
        Ok::<f64, String>(worst)
    })?;
    Ok(maxima.into_iter().fold(0.0, f64::max))
}

/// Solves a game with the method it asks for.
pub fn solve<G: Solvable>(
    g: &G,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Solution<G::Key>, SolveError> {
    g.check_solvable()
        .map_err(|reason| SolveError::Unsolvable {
            variant: g.variant(),
            reason,
        })?;
    match g.method() {
        Method::Acyclic => acyclic::solve(g, progress),
        Method::Layered => match g.solve_keyed(progress) {
            Some(solved) => solved,
            None => layered::solve(g, progress),
        },
    }
}

/// What a long solve reports as it goes (for progress bars).
#[derive(Copy, Clone, Debug)]
pub enum Progress {
    /// Enumerating: positions found so far.
    Found(u64),
    /// Solving: positions valued so far out of the total.
    Valued { done: u64, total: u64 },
}
