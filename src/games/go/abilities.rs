//! What Go can do beyond the rules (`games::Abilities`): input planes for the network learner.
//! No board is solved exactly (even 5x5 is far beyond the enumerating solver).

use super::Go;
use crate::games::abilities::{Abilities, AbilitySet, encoded};

impl<const P: usize, const H: usize, const K: usize> Abilities for Go<P, H, K> {
    const ABILITIES: AbilitySet<Go<P, H, K>> = AbilitySet {
        solution: None,
        test_positions: None,
        exact_search: None,
        greedy_features: None,
        encoder: Some(encoded),
        reference_set: None,
        mirror: None,
        random_placement: None,
        forward_gain: None,
        race: None,
    };
}
