//! Replay one stored self-play game from its inputs (docs/store.md, "Replay and verify"):
//! the model it was played with, checked out from the store, the run's search settings, the
//! run seed and the game's stream.

use super::{Chain, IterationRecord, RunConfig, RunError, chain, find, load_config};
use super::{model_seed_of, restore_at};
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::learners::Learner;
use crate::rng::GameSlot;
use crate::store::{ObjectHash, Store, address};

/// A self-play game re-played from its inputs.
#[derive(Clone, Debug)]
pub struct SelfPlayReplay {
    pub run_id: i64,
    pub iteration: u32,
    pub game: u32,
    /// The re-played game's address (equal to the stored one when the replay is faithful).
    pub hash: ObjectHash,
}

/// Re-plays a stored self-play game from its inputs: the model after the previous iteration
/// (checked out from the store), the run's search settings, the run seed and the game's
/// stream. `None` when no run lists the game.
pub fn replay_self_play(
    store: &Store,
    hash: &ObjectHash,
) -> Result<Option<SelfPlayReplay>, RunError> {
    let stored: GameRecord = store.get(hash)?;
    // A self-play game's stream names its place: its owner is found by the run tables' key,
    // not by scanning every game row (docs/store.md, "Packs and codecs").
    let owner = match crate::game_record::self_play_place(&stored.stream) {
        Some((iteration, game)) => store.game_owner_at(hash, iteration, game)?,
        None => store.game_owner(hash)?,
    };
    let Some((run_id, iteration, game)) = owner else {
        return Ok(None);
    };
    let row = find(store, &run_id.to_string())?;
    let (cfg, record) = load_config(store, &row)?;
    let seed = model_seed_of(store, &record)?;
    let records = chain(store, row.head)?;
    if iteration as usize - 1 > records.len() {
        return Err(RunError::Usage(format!(
            "run {run_id} iteration {iteration}: the previous iteration is not committed"
        )));
    }
    // The settings the game was played under: its iteration's stage's (runs/stages.rs).
    let cfg = cfg.in_force(iteration)?;
    let slot = GameSlot::new(cfg.seed, iteration, game);
    let again = crate::with_game!(&cfg.game, |g| replay_any(
        g, store, &cfg, seed, &records, &stored, slot
    ))?;
    Ok(Some(SelfPlayReplay {
        run_id,
        iteration,
        game,
        hash: again,
    }))
}

fn replay_any<G: Abilities>(
    g: &G,
    store: &Store,
    cfg: &RunConfig,
    model_seed: u64,
    records: &[IterationRecord],
    stored: &GameRecord,
    slot: GameSlot,
) -> Result<ObjectHash, RunError> {
    crate::with_learner!(cfg.settings.learner.kind, L => {
        replay_game::<G, L<G>>(g, store, cfg, model_seed, records, stored, slot)
    })
}

/// Re-plays self-play game `slot` (the run seed, its iteration and game) with the model after the previous iteration
/// (of the chain `records`), from the stored game's start (the start policy's choice,
/// recorded in it).
fn replay_game<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &Store,
    cfg: &RunConfig,
    model_seed: u64,
    records: &[IterationRecord],
    stored: &GameRecord,
    slot: GameSlot,
) -> Result<ObjectHash, RunError> {
    let iteration = slot.iteration;
    let model: L = restore_at(
        g,
        store,
        &cfg.settings,
        model_seed,
        &mut Chain::Whole(records),
        iteration - 1,
    )?;
    let start = stored.start_state(g)?;
    let mut search = crate::search::Search::new(cfg.settings.search.at_iteration(iteration))
        .map_err(|e| RunError::Usage(format!("the run's search settings: {e}")))?;
    let mut eval = model.evaluator();
    let ctx = cfg.settings.learner_context(model_seed);
    let greedy = |s: &G::State, past: &[G::State], legal: &[crate::game::Action]| {
        model.greedy_action(g, s, past, legal)
    };
    let config = cfg.settings.search.at_iteration(iteration);
    let plan = |s: &G::State, past: &[G::State], ply: u32, rng: &mut crate::rng::StreamRng| {
        super::play::planned(g, &model, config, (s, past), ply, rng)
    };
    let seats = super::play::seats_of::<G, L>(&cfg.settings, ctx, iteration, &greedy, &plan);
    let r = crate::selfplay::self_play_game_by(
        g,
        seats,
        &mut search,
        &mut eval,
        slot,
        stored.start.is_some().then_some(&start),
        None,
    )?;
    Ok(address(&r)?.0)
}
