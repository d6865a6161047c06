//! Tree search: PUCT MCTS with chance nodes (the self-play search) and MCTS-Solver (a
//! reference opponent). docs/search.md.
//!
//! # PUCT ([`puct`])
//! AlphaZero's search (Silver et al., *A general reinforcement learning algorithm that masters
//! chess, shogi, and Go through self-play*, Science 2018), extended with explicit chance
//! nodes. Each edge (s, a) of a decision node keeps N, W and the prior P; values are in
//! [0, 1] for the player who chooses the edge. Selection maximises
//! `Q + c_puct * P * sqrt(N(s)) / (1 + N)` with `Q = init_q` for unvisited edges ([`InitQ`]),
//! N(s) = sum_b N(s, b) plus the expansion visit when it counts; exact ties are broken at
//! random from the search's stream or by the lowest index ([`TieBreak`]); whether the root's
//! expansion is one of the simulations is a setting too (docs/search.md, "The three
//! conventions"). A chance state samples one outcome per
//! simulation from the search's RNG stream and creates the child if needed, so every
//! simulation expands one decision node unless the game ends. The new leaf is valued by an
//! [`Evaluator`] (its value for the side to move and priors over its legal actions), a
//! terminal leaf by its score; the backup adds each edge's value for its chooser, so the value
//! flips exactly when the chooser changes and chance nodes never flip it.
//!
//! Root noise (Dirichlet(alpha) mixed in with weight epsilon), temperature and `sample_moves`
//! follow AlphaZero. Options from KataGo (Wu, *Accelerating self-play learning in Go*, 2019),
//! off by default: playout cap randomisation (a full search with probability p_full, else a
//! fast one of n_fast simulations without noise; only full searches are training targets),
//! forced playouts at the root and policy target pruning. [`SearchConfig`] holds every knob;
//! it deserialises from the run spec's TOML (`deny_unknown_fields`) and
//! [`SearchConfig::validate`] names a bad key and its allowed range.
//!
//! Memory: nodes and edges live in two arena `Vec`s indexed by `u32`, cleared (not freed)
//! between moves, and states are copied in, never boxed; after the first move a search does
//! not allocate per simulation. The tree is rebuilt for every move (no subtree reuse, no
//! transpositions), so a search is a pure function of (game, state, config, evaluator, RNG
//! stream).
//!
//! # MCTS-Solver ([`mcts_solver`])
//! UCT with random rollouts to the end of the game and proven values (Winands, Björnsson,
//! Saito, *Monte-Carlo tree search solver*, CG 2008), extended to chance nodes: a chance node
//! is proven only when all its outcomes are proven with equal value. Strengths are named by
//! simulations per move.
//!
//! # Evaluators ([`evaluator`])
//! [`Uniform`] (uniform priors, value 0.5), [`Rollout`] (uniform priors, the mean score of
//! random playouts on the search's own stream); the learner's lookup table implements
//! [`Evaluator`] too. An evaluator takes `&mut self` so each searcher owns its own (a
//! self-play worker wraps a shared `&Table` and keeps its scratch buffers), and the searchers
//! of different games run in parallel without locks.

mod arena;
mod config;
pub mod evaluator;
mod gumbel;
pub mod mcts_solver;
pub mod puct;
#[cfg(test)]
pub(crate) mod toy;

pub use arena::TieBreak;
pub use config::{
    Algorithm, ChanceRule, ForcedPlayouts, GumbelQScale, InitQ, PlayoutCap, SearchConfig,
    SearchConfigError, Simulations,
};
#[cfg(test)]
pub(crate) use evaluator::PastProbe;
pub use evaluator::{Evaluator, Leaf, Rollout, Uniform};
pub use mcts_solver::{MctsSolver, SolverConfig, SolverResult};
pub use puct::{Search, SearchResult, Step};

/// Errors of a search call: it was asked to search a state that is not a decision state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("search needs a decision state; this state is {0}")]
    NotADecision(&'static str),
    /// A start position (e.g. a start policy's) that does not parse back from its notation.
    #[error("bad start position: {0}")]
    Start(String),
}

/// A search's move as a player's decision: the search sits above the game loop
/// ([`crate::play`]), so the conversion lives here.
impl crate::play::Decision {
    /// The move a PUCT search chose, with its root statistics (the training target counts
    /// kept only where they differ from the visits).
    pub fn searched(r: SearchResult) -> crate::play::Decision {
        let target = (r.target != r.visits).then_some(r.target);
        crate::play::Decision::Play {
            action: r.action,
            search: Some(crate::game_record::SearchStats {
                visits: r.visits,
                target,
                full: r.full,
            }),
        }
    }
}
