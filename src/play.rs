//! Generic helpers to play a game: chance sampling and uniformly random playouts.
//!
//! They take caller-owned scratch buffers so loops over many playouts do not allocate.

use crate::game::{Action, ChanceOutcome, Game, GameResult, Turn};
use crate::rng::{StreamRng, sample_outcome, uniform_index};

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
    let i = sample_outcome(rng, &scratch.outcomes);
    g.apply_chance(s, scratch.outcomes[i].outcome)
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
