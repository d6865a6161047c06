//! What EinStein würfelt nicht! can do beyond the rules (`games::Abilities`): solved exactly
//! (memoised expectimax); input planes.

use std::sync::Arc;

use crate::game::Action;
use crate::games::abilities::{Abilities, ReferenceSet};
use crate::nn::encode::Encoder;
use crate::solver::{LoadError, Solution, Solvable, load_or_solve};
use crate::store::Store;

use super::Ewn;

/// Every variant the solver takes is solved exactly; no greedy player, no reference sets.
impl Abilities for Ewn {
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
        let _ = (name, n);
        None
    }
}
