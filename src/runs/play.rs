//! An iteration's self-play: games already committed before an interruption are taken as
//! they are; the rest are played in batches of [`GAME_BATCH`] ([`Loop::play_batch`], the one
//! path that plays games), each batch derived, encoded and compressed here, beside
//! self-play, so the writer only inserts rows.

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;

use super::iterate::{Loop, Outbox};
use super::writer::{GAMES_FLUSH, GameBatch};
use super::{Commit, GAME_BATCH, GameYield, Observer, RunError, StartPoint};
use super::{game_yield, replay_tree};
use crate::game::Player;
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::learners::{Learner, LearnerContext};
use crate::selfplay::{LaneGame, play_games};
use crate::store::Encoded;
use crate::store::{ObjectHash, RunGameRow, address};

/// A finished self-play game with what the driver derives from it, and its address.
struct PlayedGame<G: Abilities, L: Learner<G>> {
    /// The record encoded for the writer (`None`: a reused game, already stored).
    encoded: Option<Encoded>,
    record: GameRecord,
    derived: GameYield<G, L>,
    hash: ObjectHash,
    size: usize,
}

/// An iteration's self-play games, as the later phases take them.
pub(super) struct IterationGames<G: Abilities, L: Learner<G>> {
    /// Their addresses, in game order (the iteration record's list).
    pub hashes: Vec<ObjectHash>,
    /// The records with what the driver derives from them, in game order.
    pub derived: Vec<(GameRecord, GameYield<G, L>)>,
    /// Encoded bytes of the records.
    pub bytes: u64,
    /// Batches not yet sent (those of the last [`GAMES_FLUSH`]): they go with the iteration.
    pub held: Vec<GameBatch>,
    /// Seconds of self-play, the wait on the sink left out (set by the loop).
    pub seconds: f64,
}

impl<G: Abilities, L: Learner<G>> IterationGames<G, L> {
    /// Adds a game (the next in game order); returns its encoded record, if new.
    fn add(&mut self, p: PlayedGame<G, L>) -> Option<Encoded> {
        self.hashes.push(p.hash);
        self.bytes += p.size as u64;
        self.derived.push((p.record, p.derived));
        p.encoded
    }
}

impl<G: Abilities, L: Learner<G>> Loop<'_, G, L> {
    /// Self-play of iteration `i` with the frozen model of `start`: the games of `reuse`
    /// (committed before an interruption) as they are, then the rest in batches; finished
    /// batches go to the sink at least every [`GAMES_FLUSH`], the rest are held for the
    /// iteration's own job.
    pub(super) fn play(
        &self,
        start: &StartPoint<G, L>,
        i: u32,
        reuse: Vec<GameRecord>,
        out: &mut Outbox<'_, '_>,
        observer: &mut dyn Observer,
    ) -> Result<IterationGames<G, L>, RunError> {
        let m = self.cfg.settings.games_per_iteration;
        let mut games = IterationGames {
            hashes: Vec::with_capacity(m as usize),
            derived: Vec::with_capacity(m as usize),
            bytes: 0,
            held: Vec::new(),
            seconds: 0.0,
        };
        let mut next = 0;
        if !reuse.is_empty() {
            for p in self.reused(start, i, reuse)? {
                games.add(p);
            }
            next = games.hashes.len() as u32;
            observer.games_done(i, next, m);
        }
        let mut last_sent = Instant::now();
        while next < m {
            let end = (next + GAME_BATCH).min(m);
            let played = self.play_batch(start, i, next..end)?;
            let mut records = Vec::with_capacity(played.len());
            let mut rows = Vec::with_capacity(played.len());
            for (k, p) in played.into_iter().enumerate() {
                rows.push(RunGameRow {
                    game: next + k as u32,
                    hash: p.hash,
                    plies: p.record.plies() as u32,
                    score_p0: p.record.end.result().score(Player::P0),
                });
                records.extend(games.add(p));
            }
            // Compressed here, beside self-play, not on the writer thread.
            let pack = crate::store::prepare_pack(&records)?;
            games.held.push(GameBatch { pack, rows });
            if end < m && last_sent.elapsed() >= GAMES_FLUSH {
                let batches = std::mem::take(&mut games.held);
                out.send(Commit::Games {
                    iteration: i,
                    batches,
                })?;
                last_sent = Instant::now();
            }
            next = end;
            observer.games_done(i, next, m);
        }
        Ok(games)
    }

    /// Plays games `ids` of iteration `i` from where the start policy says, in parallel:
    /// batched or one at a time as the learner asks ([`play_games`] chooses), each derived
    /// and encoded for the writer.
    fn play_batch(
        &self,
        start: &StartPoint<G, L>,
        i: u32,
        ids: Range<u32>,
    ) -> Result<Vec<PlayedGame<G, L>>, RunError> {
        let (g, seed, ctx) = (self.g, self.cfg.seed, self.ctx());
        let (model, policy) = (&start.model, &start.start);
        let wants_tree = policy.wants_tree_states();
        let games: Vec<LaneGame<G::State>> = ids
            .into_par_iter()
            .map(|game| {
                let from = policy.start(g, seed, i, game);
                let tree = wants_tree && from.is_none();
                LaneGame {
                    game,
                    start: from,
                    tree,
                }
            })
            .collect();
        let search = self.cfg.settings.search;
        let evaluator = || model.evaluator();
        let played = play_games(g, search, &evaluator, seed, i, &games, L::SELF_PLAY_LANES)?;
        played
            .into_par_iter()
            .map(|p| played_game::<G, L>(g, ctx, p.record, p.tree))
            .collect()
    }

    /// Games of iteration `i` committed before an interruption, taken as they are (not
    /// re-played or re-sent): derived in parallel, their search trees re-played where the
    /// start policy wants their states.
    fn reused(
        &self,
        start: &StartPoint<G, L>,
        i: u32,
        reuse: Vec<GameRecord>,
    ) -> Result<Vec<PlayedGame<G, L>>, RunError> {
        let (g, cfg, ctx, model) = (self.g, self.cfg, self.ctx(), &start.model);
        let wants_tree = start.start.wants_tree_states();
        reuse
            .into_par_iter()
            .enumerate()
            .map(|(k, record)| {
                let tree = match wants_tree && record.start.is_none() {
                    true => replay_tree(g, model, cfg, &record, i, k as u32)?,
                    false => Vec::new(),
                };
                let derived = game_yield::<G, L>(g, ctx, &record, tree)?;
                let (hash, size) = address(&record)?;
                Ok(PlayedGame {
                    record,
                    derived,
                    hash,
                    size,
                    encoded: None,
                })
            })
            .collect()
    }
}

/// A game just played, derived and encoded (in parallel: the writer stores the bytes as
/// they are).
fn played_game<G: Abilities, L: Learner<G>>(
    g: &G,
    ctx: LearnerContext<'_>,
    record: GameRecord,
    tree: Vec<G::State>,
) -> Result<PlayedGame<G, L>, RunError> {
    let derived = game_yield::<G, L>(g, ctx, &record, tree)?;
    let encoded = Encoded::of(&record)?;
    Ok(PlayedGame {
        record,
        derived,
        hash: encoded.hash,
        size: encoded.bytes.len(),
        encoded: Some(encoded),
    })
}
