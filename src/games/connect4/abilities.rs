//! What Connect Four can do beyond the rules (`games::Abilities`): small boards are solved by
//! enumeration, larger ones (7x6) searched exactly position by position; the 7x6 test sets;
//! input planes.

use std::sync::Arc;

use crate::game::Action;
use crate::games::abilities::{Abilities, ReferenceSet};
use crate::nn::encode::Encoder;
use crate::solver::{LoadError, Solution, Solvable, load_or_solve};
use crate::store::Store;

use super::ConnectFour;

/// Boards of up to 20 squares solved by enumeration; 7x6 positions by the alpha-beta solver.
impl Abilities for ConnectFour {
    fn solution(&self, store: &mut Store) -> Option<Result<Solution<Self::Key>, LoadError>> {
        Some(load_or_solve(self, store))
    }

    fn test_positions(&self) -> Vec<Self::State> {
        Solvable::test_positions(self)
    }

    fn searches_exactly(&self) -> bool {
        self.check_solvable().is_err() && super::solver::searchable(self)
    }

    fn exact_action_values(&self, s: &Self::State) -> Option<Vec<(Action, f64)>> {
        super::solver::action_values(self, s)
    }

    fn greedy_features(
        &self,
        s: &Self::State,
        legal: &[Action],
        out: &mut Vec<(i32, i32)>,
    ) -> bool {
        let _ = (s, legal, out);
        false
    }

    fn encoder(&self) -> Option<Encoder<Self>> {
        Some(Arc::new(self.clone()))
    }

    fn reference_set(
        &self,
        name: &str,
        n: usize,
    ) -> Option<Result<ReferenceSet<Self::State>, String>> {
        (self.width() == 7 && self.height() == 6).then(|| super::test_sets::c4_test_set(name, n))
    }
}
