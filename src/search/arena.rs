//! What the two tree searches share: the edge of a node arena, and sampling a chance node's
//! outcome edge.
//!
//! Both [`super::puct`] and [`super::mcts_solver`] keep nodes and edges in `Vec`s indexed by
//! `u32`; a node owns the contiguous edges `first .. first + len`. Edges of a chance node carry
//! the outcome's probability in `p`, edges of a decision node the prior (PUCT) or nothing.

use std::num::NonZeroU32;

use rand::RngExt;

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
}

impl Edge {
    /// A fresh edge for action or outcome `label` with prior or probability `p`.
    #[inline]
    pub fn new(label: u16, p: f64) -> Edge {
        Edge {
            child: None,
            label,
            n: 0,
            w: 0.0,
            p,
        }
    }

    /// Records one simulation through this edge; `chooser` is the player who chose it (None
    /// for a chance edge, which never accumulates a value), `v0` the score of player 0.
    #[inline]
    pub fn record(&mut self, chooser: Option<Player>, v0: f64) {
        self.n += 1;
        if let Some(p) = chooser {
            self.w += if p == Player::P0 { v0 } else { 1.0 - v0 };
        }
    }
}

/// Appends one edge per chance outcome, in the game's outcome order.
#[inline]
pub(super) fn push_outcomes(edges: &mut Vec<Edge>, outcomes: &[ChanceOutcome]) {
    edges.extend(outcomes.iter().map(|o| Edge::new(o.outcome, o.prob)));
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
    let mut acc = 0.0;
    for e in first..first + len {
        acc += edges[e as usize].p;
        if u < acc {
            return e;
        }
    }
    first + len - 1
}
