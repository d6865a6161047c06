//! One game of self-play: the frozen model's PUCT search against itself, one search after
//! another, recorded as a `game/v1` record.
//!
//! Game g of iteration i draws everything (chance, root noise, move sampling) from the stream
//! `self-play(i,g)` of the run seed, so it is a pure function of (table, settings, seed, i, g)
//! whichever thread plays it. Samples are derived from the stored record alone (by the
//! learner, `Learner::samples`), so a resumed run trains on exactly what an uninterrupted one
//! would.

use crate::game::{Game, Player};
use crate::game_record::GameRecord;
use crate::play::{Decision, play_loop};
use crate::rng::{GameSlot, StreamRng};
use crate::search::{Evaluator, Search, SearchError};

/// The stream name of self-play game `game` of iteration `iteration`.
pub fn self_play_stream(iteration: u32, game: u32) -> String {
    format!("self-play({iteration},{game})")
}

/// What sits in both seats of a self-play game record (the table itself lives in the run's
/// iteration records).
pub const SELF_PLAY: &str = "self-play";

/// Self-play game `slot`, every decision by
/// `decide`, recorded: from the game's start (`start` = `None`) or from `start`, read back
/// from its notation so the record, which holds the notation, re-plays exactly. Every draw
/// comes from the game's stream `self-play(i,g)`. Both movers play through it.
pub(crate) fn recorded_game<G: Game>(
    g: &G,
    slot: GameSlot,
    start: Option<&G::State>,
    decide: impl FnMut(
        &G::State,
        &[G::State],
        Player,
        u32,
        &mut StreamRng,
    ) -> Result<Decision, SearchError>,
) -> Result<GameRecord, SearchError> {
    let mut rng = slot.stream("self-play");
    let notation = start.map(|s| g.notation(s));
    let s = match &notation {
        None => g.initial_state(),
        Some(text) => g
            .parse_notation(text)
            .map_err(|e| SearchError::Start(e.to_string()))?,
    };
    let mut steps = Vec::new();
    let mut outcomes = Vec::new();
    let end = play_loop(g, s, &mut rng, &mut outcomes, Some(&mut steps), decide)?;
    Ok(GameRecord {
        variant: g.variant(),
        seed: slot.seed,
        stream: self_play_stream(slot.iteration, slot.game),
        players: [SELF_PLAY.to_string(), SELF_PLAY.to_string()],
        start: notation,
        steps,
        end,
    })
}

/// Plays self-play game `slot` from the game's start (`start` =
/// `None`) or from `start` (a start policy's choice; the game starts from its notation, so
/// the record re-plays exactly). When `tree` is given, the decision states of every search
/// tree are appended to it, in order (Go-Exploit's search-state archives).
pub fn self_play_game<G: Game, E: Evaluator<G>>(
    g: &G,
    search: &mut Search<G>,
    eval: &mut E,
    slot: GameSlot,
    start: Option<&G::State>,
    mut tree: Option<&mut Vec<G::State>>,
) -> Result<GameRecord, SearchError> {
    recorded_game(g, slot, start, |s, past, _, ply, rng| {
        searched_move(g, search, eval, (s, past), ply, rng, tree.as_deref_mut())
    })
}

/// The search's move at `s` (after the game's `past`), recorded with its statistics; with
/// `tree`, the search tree's decision states appended to it (Go-Exploit's archives).
pub(crate) fn searched_move<G: Game, E: Evaluator<G>>(
    g: &G,
    search: &mut Search<G>,
    eval: &mut E,
    (s, past): (&G::State, &[G::State]),
    ply: u32,
    rng: &mut StreamRng,
    tree: Option<&mut Vec<G::State>>,
) -> Result<Decision, SearchError> {
    let r = search.run(g, s, past, ply, eval, rng)?;
    if let Some(t) = tree {
        search.tree_states(t);
    }
    Ok(Decision::searched(r))
}
