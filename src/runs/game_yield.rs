//! What the driver takes from one stored self-play game: the learner's samples, the
//! coverage positions, the states the start policy observes, and (when the start policy wants
//! them) its search trees' states, re-played.

use super::{RunConfig, RunError};
use crate::game::Turn;
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::learners::{Learner, LearnerContext};
use crate::rng::GameSlot;
use crate::search::Search;
use crate::selfplay::self_play_game;

/// What the driver takes from one stored self-play game.
pub(crate) struct GameYield<G: Abilities, L: Learner<G>> {
    pub(crate) samples: Vec<L::Sample>,
    /// Keys of every decision position on the trajectory (coverage).
    pub positions: Vec<G::Key>,
    pub states: Vec<G::State>,
    /// Decision states of its search trees (only when the start policy wants them).
    pub tree: Vec<G::State>,
}

/// The decision states among a game's `states` (chance and terminal states left out): the
/// positions a run's coverage `seen` counts.
pub(crate) fn decision_states<'a, G: Abilities>(
    g: &'a G,
    states: &'a [G::State],
) -> impl Iterator<Item = &'a G::State> + 'a {
    states
        .iter()
        .filter(|s| matches!(g.turn(s), Turn::Player(_)))
}

pub(crate) fn game_yield<G: Abilities, L: Learner<G>>(
    g: &G,
    ctx: LearnerContext<'_>,
    record: &GameRecord,
    tree: Vec<G::State>,
) -> Result<GameYield<G, L>, RunError> {
    let states = record.states(g)?;
    let mut samples = Vec::new();
    L::samples(g, ctx, record, &states, &mut samples)?;
    let positions = decision_states(g, &states).map(|s| g.key(s)).collect();
    Ok(GameYield {
        samples,
        positions,
        states,
        tree,
    })
}

/// The search-tree states of self-play game `game` of iteration `iteration` (a game from the
/// game's start), re-played with `model`, the model it was played with, and the seed of its
/// record (a branch's shared games were played with its parent's).
pub(crate) fn replay_tree<G: Abilities, L: Learner<G>>(
    g: &G,
    model: &L,
    cfg: &RunConfig,
    record: &GameRecord,
    iteration: u32,
    game: u32,
) -> Result<Vec<G::State>, RunError> {
    if L::PLANS {
        // A planned move's tree holds model states: self-play kept none (docs/muzero.md).
        return Ok(Vec::new());
    }
    let mut search = Search::<G>::new(cfg.settings.search.at_iteration(iteration))
        .map_err(|e| RunError::Usage(format!("the run's search settings: {e}")))?;
    let mut eval = model.evaluator();
    let mut tree = Vec::new();
    let slot = GameSlot::new(record.seed, iteration, game);
    self_play_game(g, &mut search, &mut eval, slot, None, Some(&mut tree))?;
    Ok(tree)
}
