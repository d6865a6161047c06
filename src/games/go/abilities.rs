//! What Go can do beyond the rules (`games::Abilities`): input planes for the network learner,
//! and its board as the Go Text Protocol speaks of it (side, komi, move limit, score) on every
//! board size. No board is solved exactly (even 5x5 is far beyond the enumerating solver).

use super::{Go, GoState};
use crate::games::abilities::{Abilities, AbilitySet, GoBoard, position_input};

impl<const P: usize, const H: usize, const K: usize> Abilities for Go<P, H, K> {
    const ABILITIES: AbilitySet<Go<P, H, K>> = AbilitySet {
        solution: None,
        test_positions: None,
        exact_search: None,
        greedy_features: None,
        inputs: &[position_input()],
        reference_sets: None,
        mirror: None,
        random_placement: None,
        forward_gain: None,
        race: None,
        go_board: Some(GoBoard {
            side: Go::board_size,
            komi: Go::komi,
            max_moves: Go::max_moves,
            margin,
        }),
    };
}

/// Black's Tromp-Taylor area minus white's minus the komi, on the board as it stands (nothing
/// removed as dead); 0 for a game drawn on a repeated board.
fn margin<const P: usize, const H: usize, const K: usize>(
    g: &Go<P, H, K>,
    s: &GoState<P, H>,
) -> f64 {
    if g.ended_by_repetition(s) {
        0.0
    } else {
        f64::from(g.area_difference(s)) - g.komi()
    }
}
