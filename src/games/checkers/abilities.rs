//! What Chinese Checkers can do beyond the rules (`games::Abilities`): reduced boards are
//! solved exactly; the greedy players of Liu et al. read its forward gain; input planes.

use std::sync::Arc;

use crate::game::{Action, Game, Turn};
use crate::games::abilities::{Abilities, ReferenceSet};
use crate::nn::encode::Encoder;
use crate::solver::{LoadError, Solution, Solvable, load_or_solve};
use crate::store::Store;

use super::Checkers;

/// Reduced boards solved by layered retrograde analysis; the greedy heuristic.
impl Abilities for Checkers {
    fn solution(&self, store: &mut Store) -> Option<Result<Solution<Self::Key>, LoadError>> {
        Some(load_or_solve(self, store))
    }

    fn test_positions(&self) -> Vec<Self::State> {
        Solvable::test_positions(self)
    }

    fn searches_exactly(&self) -> bool {
        false
    }

    fn exact_action_values(&self, s: &Self::State) -> Option<Vec<(Action, f64)>> {
        let _ = s;
        None
    }

    fn greedy_features(
        &self,
        s: &Self::State,
        legal: &[Action],
        out: &mut Vec<(i32, i32)>,
    ) -> bool {
        out.clear();
        let Turn::Player(p) = self.turn(s) else {
            return true;
        };
        // Psi measured from the square (0, 0), where r - c = 0, is how far back a square is.
        let origin = self.square(0, 0);
        for &a in legal {
            let (from, to) = self.move_squares(s, a);
            out.push((
                self.forward_gain(p, from, to),
                self.forward_gain(p, from, origin),
            ));
        }
        true
    }

    fn encoder(&self) -> Option<Encoder<Self>> {
        Some(Arc::new(self.clone()))
    }

    fn reference_set(
        &self,
        name: &str,
        n: usize,
    ) -> Option<Result<ReferenceSet<Self::State>, String>> {
        let _ = (name, n);
        None
    }
}
