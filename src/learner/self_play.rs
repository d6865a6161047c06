//! Self-play: one game of the frozen table's PUCT search against itself, recorded as a
//! `game/v1` record, and the training samples a record yields.
//!
//! Game g of iteration i draws everything (chance, root noise, move sampling) from the stream
//! `self-play(i,g)` of the run seed, so it is a pure function of (table, settings, seed, i, g)
//! whichever thread plays it. Samples are derived from the stored record alone
//! ([`samples_from_record`]), so a resumed run trains on exactly what an uninterrupted one
//! would.

use super::table::TableEval;
use super::train::Sample;
use crate::game::{Game, GameResult, Turn};
use crate::record::{GameEnd, GameRecord, ReplayError, SearchStats, Step};
use crate::rng::{sample_outcome, stream_fmt};
use crate::search::{Search, SearchError};

/// The stream name of self-play game `game` of iteration `iteration`.
pub fn self_play_stream(iteration: u32, game: u32) -> String {
    format!("self-play({iteration},{game})")
}

/// What sits in both seats of a self-play game record (the table itself lives in the run's
/// iteration records).
pub const SELF_PLAY: &str = "self-play";

/// Plays self-play game `game` of iteration `iteration`.
pub fn self_play_game<G: Game>(
    g: &G,
    search: &mut Search<G>,
    eval: &mut TableEval<'_, G::Key>,
    seed: u64,
    iteration: u32,
    game: u32,
) -> Result<GameRecord, SearchError> {
    let mut rng = stream_fmt(seed, format_args!("self-play({iteration},{game})"));
    let mut s = g.initial_state();
    let mut steps = Vec::new();
    let mut outcomes = Vec::new();
    let mut ply = 0u32;
    let result = loop {
        match g.turn(&s) {
            Turn::Terminal(r) => break r,
            Turn::Chance => {
                g.chance_outcomes(&s, &mut outcomes);
                let o = outcomes[sample_outcome(&mut rng, &outcomes)].outcome;
                steps.push(Step::Chance { outcome: o });
                s = g.apply_chance(&s, o);
            }
            Turn::Player(_) => {
                let r = search.run(g, &s, ply, eval, &mut rng)?;
                let target = (r.target != r.visits).then_some(r.target);
                steps.push(Step::Move {
                    action: r.action,
                    search: Some(SearchStats {
                        visits: r.visits,
                        target,
                        full: r.full,
                    }),
                });
                s = g.apply(&s, r.action);
                ply += 1;
            }
        }
    };
    Ok(GameRecord {
        variant: g.variant(),
        seed,
        stream: self_play_stream(iteration, game),
        players: [SELF_PLAY.to_string(), SELF_PLAY.to_string()],
        start: None,
        steps,
        end: GameEnd::Finished(result),
    })
}

/// What a self-play record yields for training and coverage.
#[derive(Clone, Debug, PartialEq)]
pub struct GameSamples<K> {
    /// Training samples in move order (full searches only).
    pub samples: Vec<Sample<K>>,
    /// Keys of every decision position the game passed through, in order.
    pub positions: Vec<K>,
}

/// The training samples of a self-play record, in move order (full searches only), and the
/// keys of every decision position the game passed through (for coverage).
pub fn samples_from_record<G: Game>(
    g: &G,
    record: &GameRecord,
) -> Result<GameSamples<G::Key>, ReplayError> {
    let states = record.states(g)?;
    let result: GameResult = record.end.result();
    let mut samples = Vec::new();
    let mut positions = Vec::new();
    let mut actions = Vec::new();
    for (s, step) in states.iter().zip(&record.steps) {
        let Turn::Player(p) = g.turn(s) else {
            continue;
        };
        let key = g.key(s);
        positions.push(key);
        if let Step::Move {
            search: Some(st), ..
        } = step
            && st.full
        {
            g.legal_actions(s, &mut actions);
            samples.push(Sample {
                key,
                actions: actions.clone(),
                counts: st.target_counts().to_vec(),
                z: result.score(p),
            });
        }
    }
    Ok(GameSamples { samples, positions })
}
