//! Greedy self-play (`[selfplay] mover = "greedy"`): the game's deterministic greedy
//! heuristic in both seats, the first stage of Liu et al.'s pipeline (heuristic-guided
//! pre-training; docs/checkers.md).
//!
//! Each decision plays one of the heuristic's tied best moves ([`crate::games::greedy`]),
//! uniformly at random from the game's stream, and records them as the search statistics a
//! learner trains on: a count of 1 on every tied best move, 0 elsewhere. So the policy target
//! is the paper's "greedy move(s), uniform among ties" and the value target the outcome, with
//! no change to any learner. Game g of iteration i draws from the stream `self-play(i,g)`, as
//! search self-play does.

use crate::game_record::{GameRecord, SearchStats};
use crate::games::Abilities;
use crate::games::greedy::{GreedyMode, best_moves, greedy_choice};
use crate::play::Decision;
use crate::rng::{GameSlot, uniform_index};
use crate::search::SearchError;

use super::game::recorded_game;

/// Plays greedy self-play game `slot` from the
/// game's start (`start` = `None`) or from `start`.
pub(crate) fn greedy_self_play_game<G: Abilities>(
    g: &G,
    slot: GameSlot,
    start: Option<&G::State>,
) -> Result<GameRecord, SearchError> {
    let mut scratch = GreedyScratch::default();
    recorded_game(g, slot, start, |s, _, _, _, rng| {
        greedy_decision(g, s, rng, &mut scratch)
    })
}

/// Buffers of [`greedy_decision`] and [`opponent_move`], kept across a game's moves.
#[derive(Default)]
pub(crate) struct GreedyScratch {
    legal: Vec<crate::game::Action>,
    features: Vec<(i32, i32)>,
    best: Vec<usize>,
}

/// The error of a game without a greedy heuristic asked to play one (`key`: the setting).
fn no_heuristic<G: Abilities>(g: &G, key: &str) -> SearchError {
    SearchError::Start(format!("{} has no greedy heuristic ({key})", g.variant()))
}

/// One of the heuristic's tied best moves at `s`, uniformly from `rng`, recorded with a
/// count of 1 on every tied best move (the greedy mover's training target).
pub(crate) fn greedy_decision<G: Abilities>(
    g: &G,
    s: &G::State,
    rng: &mut crate::rng::StreamRng,
    scratch: &mut GreedyScratch,
) -> Result<Decision, SearchError> {
    let GreedyScratch {
        legal,
        features,
        best,
    } = scratch;
    g.legal_actions(s, legal);
    // The visit counts are listed ascending by action (game_record.rs).
    legal.sort_unstable();
    if !g.greedy_features(s, legal, features) || features.len() != legal.len() {
        return Err(no_heuristic(g, "selfplay.mover = \"greedy\""));
    }
    best_moves(features, best);
    let mut visits = vec![0u32; legal.len()];
    for &k in best.iter() {
        visits[k] = 1;
    }
    let k = best[uniform_index(rng, best.len())];
    Ok(Decision::Play {
        action: legal[k],
        search: Some(SearchStats {
            visits,
            target: None,
            full: true,
        }),
    })
}

/// The opponent seat's move (`selfplay.opponent = "greedy"`): the deterministic greedy
/// player's ([`greedy_choice`], ties uniformly from `rng`), as the evaluation against the
/// greedy player plays it, recorded with no search statistics, so no learner trains on it.
pub(crate) fn opponent_move<G: Abilities>(
    g: &G,
    s: &G::State,
    rng: &mut crate::rng::StreamRng,
    scratch: &mut GreedyScratch,
) -> Result<Decision, SearchError> {
    g.legal_actions(s, &mut scratch.legal);
    if !g.greedy_features(s, &scratch.legal, &mut scratch.features)
        || scratch.features.len() != scratch.legal.len()
    {
        return Err(no_heuristic(g, "selfplay.opponent = \"greedy\""));
    }
    let k = greedy_choice(GreedyMode::Deterministic, &scratch.features, rng);
    Ok(Decision::Play {
        action: scratch.legal[k],
        search: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Game;
    use crate::games::Checkers;

    /// Every move of a greedy self-play game is one of the deterministic greedy player's tied
    /// best moves, and the counts mark exactly those; the game re-plays and is the same bits
    /// when played again.
    #[test]
    fn greedy_games_play_and_record_the_heuristics_best_moves() {
        let g = Checkers::new(5, 3, crate::games::checkers::WinRule::AllOwn, 200).unwrap();
        let record = greedy_self_play_game(&g, GameSlot::new(7, 1, 3), None).unwrap();
        assert_eq!(
            record,
            greedy_self_play_game(&g, GameSlot::new(7, 1, 3), None).unwrap()
        );
        assert_ne!(
            record,
            greedy_self_play_game(&g, GameSlot::new(7, 1, 4), None).unwrap()
        );
        let states = record.states(&g).unwrap();
        let (mut legal, mut features, mut best) = (Vec::new(), Vec::new(), Vec::new());
        let mut moves = 0;
        for (s, step) in states.iter().zip(&record.steps) {
            let crate::game_record::Step::Move { action, search } = step else {
                continue;
            };
            g.legal_actions(s, &mut legal);
            legal.sort_unstable();
            assert!(g.greedy_features(s, &legal, &mut features));
            best_moves(&features, &mut best);
            let visits = &search.as_ref().unwrap().visits;
            let marked: Vec<usize> = (0..legal.len()).filter(|&k| visits[k] == 1).collect();
            assert_eq!(marked, best);
            assert!(best.iter().any(|&k| legal[k] == *action));
            // The deterministic greedy player would choose among the same moves.
            let mut rng = crate::rng::stream(1, "t");
            let k = greedy_choice(GreedyMode::Deterministic, &features, &mut rng);
            assert!(best.contains(&k));
            moves += 1;
        }
        assert!(moves > 4, "{moves}");
    }
}
