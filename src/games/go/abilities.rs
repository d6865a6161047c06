//! What Go can do beyond the rules (`games::Abilities`): nothing yet. No board is solved
//! exactly (even 5x5 is far beyond the enumerating solver), and the input planes come with the
//! Go network (issue 29, part 2).

use super::Go;
use crate::games::abilities::{Abilities, AbilitySet};

impl<const P: usize, const H: usize, const K: usize> Abilities for Go<P, H, K> {
    const ABILITIES: AbilitySet<Go<P, H, K>> = AbilitySet {
        solution: None,
        test_positions: None,
        exact_search: None,
        greedy_features: None,
        encoder: None,
        reference_set: None,
    };
}
