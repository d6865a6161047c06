//! The game's start for every self-play game (AlphaZero's search control).

use super::StartPolicy;
use crate::game::Game;
use crate::rng::GameSlot;
use crate::search::Evaluator;

/// Every game starts at the game's start state.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Initial;

impl<G: Game> StartPolicy<G> for Initial {
    fn start(&self, _: &G, _: GameSlot, _: &mut dyn Evaluator<G>) -> Option<G::State> {
        None
    }
}
