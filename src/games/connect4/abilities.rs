//! What Connect Four can do beyond the rules (`games::Abilities`): small boards are solved by
//! enumeration, larger ones (7x6) searched exactly position by position; the 7x6 test sets;
//! input planes.

use super::{C4State, ConnectFour, solver, test_sets};
use crate::game::Action;
use crate::games::abilities::{
    Abilities, AbilitySet, ExactSearch, ReferenceSet, encoded, solvable_test_positions,
};
use crate::solver::{Solvable, load_or_solve};

/// Boards of up to 20 squares solved by enumeration; 7x6 positions by the alpha-beta solver.
impl Abilities for ConnectFour {
    const ABILITIES: AbilitySet<ConnectFour> = AbilitySet {
        solution: Some(load_or_solve),
        test_positions: Some(solvable_test_positions),
        exact_search: Some(ExactSearch {
            applies: searched_exactly,
            action_values,
        }),
        greedy_features: None,
        encoder: Some(encoded),
        reference_set: Some(reference_set),
        mirror: None,
        random_placement: None,
    };
}

/// A board too large to enumerate but small enough for the alpha-beta solver.
fn searched_exactly(g: &ConnectFour) -> bool {
    g.check_solvable().is_err() && solver::searchable(g)
}

fn action_values(g: &ConnectFour, s: &C4State) -> Option<Vec<(Action, f64)>> {
    solver::action_values(g, s)
}

/// The 7x6 test sets (no other board has any).
fn reference_set(
    g: &ConnectFour,
    name: &str,
    n: usize,
) -> Option<Result<ReferenceSet<C4State>, String>> {
    (g.width() == 7 && g.height() == 6).then(|| test_sets::c4_test_set(name, n))
}
