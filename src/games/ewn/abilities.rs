//! What EinStein würfelt nicht! can do beyond the rules (`games::Abilities`): solved exactly
//! (memoised expectimax); input planes.

use super::Ewn;
use crate::games::abilities::{Abilities, AbilitySet, position_input, solvable_test_positions};
use crate::solver::load_or_solve;

impl Abilities for Ewn {
    const ABILITIES: AbilitySet<Ewn> = AbilitySet {
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
