//! What Chinese Checkers can do beyond the rules (`games::Abilities`): reduced boards are
//! solved exactly; the greedy players of Liu et al. read its forward gain; input planes.

use super::Checkers;
use crate::game::{Action, Game, Turn};
use crate::games::abilities::{Abilities, AbilitySet, encoded, solvable_test_positions};
use crate::solver::load_or_solve;

impl Abilities for Checkers {
    const ABILITIES: AbilitySet<Checkers> = AbilitySet {
        solution: Some(load_or_solve),
        test_positions: Some(solvable_test_positions),
        exact_search: None,
        greedy_features: Some(greedy_features),
        encoder: Some(encoded),
        reference_set: None,
    };
}

/// The greedy heuristic (Liu et al.): for each legal action of `s`, its forward gain Psi and
/// how far back its piece stands.
fn greedy_features(
    g: &Checkers,
    s: &<Checkers as Game>::State,
    legal: &[Action],
    out: &mut Vec<(i32, i32)>,
) {
    out.clear();
    let Turn::Player(p) = g.turn(s) else {
        return;
    };
    // Psi measured from the square (0, 0), where r - c = 0, is how far back a square is.
    let origin = g.square(0, 0);
    for &a in legal {
        let (from, to) = g.move_squares(s, a);
        out.push((g.forward_gain(p, from, to), g.forward_gain(p, from, origin)));
    }
}
