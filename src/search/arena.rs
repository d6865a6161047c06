//! What the two tree searches share: the edge of a node arena, and sampling a chance node's
//! outcome edge, and the tie-breaking rule of a selection.
//!
//! Both [`super::puct`] and [`super::mcts_solver`] keep nodes and edges in `Vec`s indexed by
//! `u32`; a node owns the contiguous edges `first .. first + len`. Edges of a chance node carry
//! the outcome's probability in `p`, edges of a decision node the prior (PUCT) or nothing.

use std::num::NonZeroU32;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::game::{Action, ChanceOutcome, Player};
use crate::rng::StreamRng;

/// An edge: a decision node's action (P = prior) or a chance node's outcome (P = its
/// probability). `child` is `None` until the first simulation through it creates the node;
/// the root is node 0, so a child's index is never 0.
#[derive(Copy, Clone, Debug)]
pub(super) struct Edge {
    pub child: Option<NonZeroU32>,
    pub label: u16,
    pub n: u32,
    /// Sum of the values backed up through this edge, for its chooser (decision edges).
    pub w: f64,
    pub p: f64,
    /// A decision edge: `w / n` (0 while `n` = 0), kept by [`Edge::record`]: PUCT's
    /// selection reads the mean of every child at every descent, and a division there, per
    /// child, was a sixth of a rollout search's time; the same quotient computed once per
    /// backup is the same bits. A chance edge: the running sum of its node's outcome
    /// probabilities up to and including this one, added in outcome order
    /// ([`push_outcomes`]), which [`sample_outcome_edge`] compares with its draw.
    pub q: f64,
}

impl Edge {
    /// A fresh edge for action or outcome `label` with prior or probability `p`.
    #[inline]
    pub(super) fn new(label: u16, p: f64) -> Edge {
        Edge {
            child: None,
            label,
            n: 0,
            w: 0.0,
            p,
            q: 0.0,
        }
    }

    /// Sets the visits and value sum (tests that build a tree by hand), `q` with them.
    #[cfg(test)]
    pub(super) fn set(&mut self, n: u32, w: f64) {
        self.n = n;
        self.w = w;
        self.q = if n == 0 { 0.0 } else { w / f64::from(n) };
    }

    /// Records one simulation through this edge; `chooser` is the player who chose it (None
    /// for a chance edge, which never accumulates a value), `v0` the score of player 0.
    #[inline]
    pub(super) fn record(&mut self, chooser: Option<Player>, v0: f64) {
        self.n += 1;
        if let Some(p) = chooser {
            self.w += if p == Player::P0 { v0 } else { 1.0 - v0 };
            self.q = self.w / f64::from(self.n);
        }
    }
}

/// Appends one edge per chance outcome, in the game's outcome order.
#[inline]
pub(super) fn push_outcomes(edges: &mut Vec<Edge>, outcomes: &[ChanceOutcome]) {
    let mut acc = 0.0;
    edges.extend(outcomes.iter().map(|o| {
        acc += o.prob;
        Edge {
            q: acc,
            ..Edge::new(o.outcome, o.prob)
        }
    }));
}

/// Appends one edge per action with prior `p`.
#[inline]
pub(super) fn push_actions(
    edges: &mut Vec<Edge>,
    actions: &[Action],
    priors: impl Iterator<Item = f64>,
) {
    edges.extend(actions.iter().zip(priors).map(|(&a, p)| Edge::new(a, p)));
}

/// The state an edge leads to: the parent's state after the edge's outcome (`chance`: the
/// parent is a chance node) or action.
#[inline]
pub(super) fn edge_state<G: crate::game::Game>(
    g: &G,
    parent: &G::State,
    chance: bool,
    label: u16,
) -> G::State {
    if chance {
        g.apply_chance(parent, label)
    } else {
        g.apply(parent, label)
    }
}

/// Samples one of the outcome edges `first .. first + len` by probability, walking them in
/// order (the same draw and the same walk as [`crate::rng::sample_outcome`]; the last edge
/// absorbs rounding).
#[inline]
pub(super) fn sample_outcome_edge(
    edges: &[Edge],
    first: u32,
    len: u32,
    rng: &mut StreamRng,
) -> u32 {
    let u: f64 = rng.random();
    // The running sums are the walk's own (`Edge::q`), so the first edge whose sum exceeds
    // `u` is the count of those that do not: independent comparisons instead of a chain of
    // additions and an early exit.
    let sums = edges[first as usize..(first + len) as usize]
        .iter()
        .map(|e| e.q);
    first + crate::rng::pick_by_sums(u, sums, len as usize) as u32
}

/// How exact ties in a selection or in the final move choice are broken.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TieBreak {
    /// Uniformly at random among the tied candidates, from the search's own stream (one
    /// reservoir draw per extra tied candidate, no allocation). The default: no action is
    /// favoured by its place in the action order.
    #[default]
    Random,
    /// The lowest action index (the behaviour before the setting existed; it steers a search
    /// whose scores tie towards action 0).
    Lowest,
}

impl TieBreak {
    /// The allowed names, for error messages.
    pub const NAMES: &'static str = "random, lowest";

    pub fn parse(text: &str) -> Option<TieBreak> {
        match text.trim().to_ascii_lowercase().as_str() {
            "random" => Some(TieBreak::Random),
            "lowest" => Some(TieBreak::Lowest),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TieBreak::Random => "random",
            TieBreak::Lowest => "lowest",
        }
    }
}

/// Keeps the best candidate of a scan in order, breaking exact ties by [`TieBreak`]: with
/// `Random`, the k-th candidate tied with the best so far replaces it with probability 1/k
/// (reservoir sampling), so each of the tied candidates is kept with probability 1/(number
/// tied). Draws come from the caller's stream only when a tie occurs, so a scan without
/// ties consumes nothing and `Lowest` never draws.
#[derive(Copy, Clone, Debug)]
pub(super) struct TieKeeper {
    mode: TieBreak,
    /// Candidates tied at the current best (0 before the first candidate).
    tied: u32,
}

impl TieKeeper {
    #[inline]
    pub(super) fn new(mode: TieBreak) -> TieKeeper {
        TieKeeper { mode, tied: 0 }
    }

    /// Whether no candidate has been kept yet.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.tied == 0
    }

    /// Offers a candidate: `Greater` (it beats the best so far), `Equal` (an exact tie) or
    /// `Less`. Returns whether the candidate becomes the kept one.
    #[inline]
    pub(crate) fn offer(&mut self, cmp: std::cmp::Ordering, rng: &mut StreamRng) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match cmp {
            Greater => {
                self.tied = 1;
                true
            }
            Less => false,
            Equal if self.tied == 0 => {
                self.tied = 1;
                true
            }
            Equal => {
                self.tied += 1;
                match self.mode {
                    TieBreak::Lowest => false,
                    TieBreak::Random => crate::rng::uniform_index(rng, self.tied as usize) == 0,
                }
            }
        }
    }
}
