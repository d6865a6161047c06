//! What Chinese dark chess can do beyond the rules (`games::Abilities`): the 2x4 game is
//! solved exactly; the 4x8 game has no solver. Both have input planes.

use super::{Cdc, Cdc4x8};
use crate::games::abilities::{Abilities, AbilitySet, position_input, solvable_test_positions};
use crate::solver::load_or_solve;

/// 2x4: solved by layered retrograde analysis over the perfect index.
impl Abilities for Cdc {
    const ABILITIES: AbilitySet<Cdc> = AbilitySet {
        solution: Some(load_or_solve),
        test_positions: Some(solvable_test_positions),
        exact_search: None,
        greedy_features: None,
        inputs: &[position_input()],
        reference_sets: None,
        mirror: None,
        random_placement: None,
        forward_gain: None,
        race: None,
        go_board: None,
    };
}

/// 4x8: too large to solve; a network can still read it.
impl Abilities for Cdc4x8 {
    const ABILITIES: AbilitySet<Cdc4x8> = AbilitySet {
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
        go_board: None,
    };
}
