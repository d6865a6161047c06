//! An iteration's self-play: games already committed before an interruption are taken as
//! they are; the rest are played in batches of at most [`GAME_BATCH`] ([`Loop::play_batch`],
//! the one path that plays games) until the iteration's quota is met (M games or a budget's
//! prefix rule, runs/budget.rs), each batch derived, encoded and compressed here, beside
//! self-play, so the writer only inserts rows.

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;

use super::Settings;
use super::budget::{Quota, Tally};
use super::iterate::{Loop, Outbox};
use super::writer::{GAMES_FLUSH, GameBatch};
use super::{Commit, GAME_BATCH, GameYield, Observer, RunError, StartPoint};
use super::{game_yield, replay_tree};
use crate::game::{Action, Player};
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::learners::{Learner, LearnerContext};
use crate::rng::GameSlot;
use crate::selfplay::{GreedyPolicy, LaneGame, Moves, Seats, play_games_by};
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
    /// How many games the iteration kept (set by the loop when `hashes` moves into the
    /// iteration record).
    pub kept: u32,
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
    /// (committed before an interruption) as they are, then the rest in batches until the
    /// iteration's quota is met (M games, or the prefix rule of a budget: runs/budget.rs);
    /// finished batches go to the sink at least every [`GAMES_FLUSH`], the rest are held for
    /// the iteration's own job. Games past the quota are dropped, never sent.
    pub(super) fn play(
        &self,
        start: &StartPoint<G, L>,
        i: u32,
        reuse: Vec<GameRecord>,
        out: &mut Outbox<'_, '_>,
        observer: &mut dyn Observer,
    ) -> Result<IterationGames<G, L>, RunError> {
        let s = &self.cfg.settings;
        let recorded = match self.recorded {
            Some(chain) => chain.get(i as usize - 1).map(|r| r.games.len() as u32),
            None => None,
        };
        let mut tally = Tally::new(
            Quota::of(s.games_per_iteration, s.budget_kind(), recorded),
            s.search.at_iteration(i),
        );
        let capacity = s.games_per_iteration.unwrap_or(GAME_BATCH) as usize;
        let mut games = IterationGames {
            hashes: Vec::with_capacity(capacity),
            derived: Vec::with_capacity(capacity),
            bytes: 0,
            held: Vec::new(),
            seconds: 0.0,
            kept: 0,
        };
        if !reuse.is_empty() {
            let stored = reuse.len();
            for p in self.reused(start, i, reuse)? {
                if tally.full() {
                    return Err(RunError::Inconsistent(format!(
                        "run {} iteration {i}: {stored} games stored, more than its quota \
                         ({})",
                        self.run_id,
                        s.self_play_in_words()
                    )));
                }
                tally.take(&p.record);
                games.add(p);
            }
            let (done, of) = tally.progress();
            observer.games_done(i, done, of);
        }
        // The parallel width: a batch of a budget is at least this many games.
        let width = (rayon::current_num_threads() * L::SELF_PLAY_LANES).max(1) as u32;
        let mut last_sent = Instant::now();
        while !tally.full() {
            let next = tally.games();
            let ids = next..next + tally.next_batch(width, GAME_BATCH);
            // The first game of a timed iteration is always played out (runs/budget.rs).
            let until = tally.deadline().filter(|_| next > 0);
            let played = self.play_batch(start, i, ids, until)?;
            let mut records = Vec::with_capacity(played.len());
            let mut rows = Vec::with_capacity(played.len());
            for p in played {
                if tally.full() {
                    break;
                }
                let Some(p) = p else {
                    tally.close();
                    break;
                };
                rows.push(RunGameRow {
                    game: tally.games(),
                    hash: p.hash,
                    plies: p.record.plies() as u32,
                    score_p0: p.record.end.result().score(Player::P0),
                });
                tally.take(&p.record);
                records.extend(games.add(p));
            }
            tally.check_clock();
            if !rows.is_empty() {
                // Compressed here, beside self-play, not on the writer thread.
                let pack = crate::store::prepare_pack(&records)?;
                games.held.push(GameBatch { pack, rows });
            }
            if !tally.full() && last_sent.elapsed() >= GAMES_FLUSH {
                let batches = std::mem::take(&mut games.held);
                out.send(Commit::Games {
                    iteration: i,
                    batches,
                })?;
                last_sent = Instant::now();
            }
            let (done, of) = tally.progress();
            observer.games_done(i, done, of);
        }
        Ok(games)
    }

    /// Plays games `ids` of iteration `i` from where the start policy says, in parallel, by
    /// the run's mover (searches batched or one at a time as the learner asks, or greedy
    /// games: [`play_games_by`] chooses), each derived and encoded for the writer. With `until`, the games not finished by then are `None`.
    fn play_batch(
        &self,
        start: &StartPoint<G, L>,
        i: u32,
        ids: Range<u32>,
        until: Option<Instant>,
    ) -> Result<Vec<Option<PlayedGame<G, L>>>, RunError> {
        let (g, seed, ctx) = (self.g, self.cfg.seed, self.ctx());
        let (model, policy) = (&start.model, &start.start);
        let wants_tree = policy.wants_tree_states();
        let games: Vec<LaneGame<G::State>> = ids
            .into_par_iter()
            .map_init(
                || model.evaluator(),
                |eval, game| {
                    let slot = GameSlot::new(seed, i, game);
                    let from = policy.start(g, slot, eval);
                    let tree = wants_tree && from.is_none();
                    LaneGame {
                        slot,
                        start: from,
                        tree,
                    }
                },
            )
            .collect();
        let search = self.cfg.settings.search.at_iteration(i);
        let greedy = |s: &G::State, legal: &[Action]| model.greedy_action(g, s, legal);
        let seats = seats_of::<G, L>(&self.cfg.settings, ctx, i, &greedy);
        let evaluator = || model.evaluator();
        let lanes = L::SELF_PLAY_LANES;
        let played = play_games_by(g, seats, search, &evaluator, &games, lanes, until)?;
        played
            .into_par_iter()
            .map(|p| {
                p.map(|p| played_game::<G, L>(g, ctx, p.record, p.tree))
                    .transpose()
            })
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

/// Who moves in iteration `i`'s self-play games: the learner's own epsilon-greedy moves
/// where it plays without search ([`Learner::exploration`]), else the run's mover; the
/// opponent seat as `[selfplay] opponent` says.
pub(super) fn seats_of<'a, G: Abilities, L: Learner<G>>(
    settings: &Settings,
    ctx: LearnerContext<'_>,
    i: u32,
    greedy: GreedyPolicy<'a, G>,
) -> Seats<'a, G> {
    let moves = match L::exploration(ctx, i) {
        Some(epsilon) => Moves::EpsilonGreedy { epsilon, greedy },
        None => Moves::Mover(settings.selfplay.mover),
    };
    Seats {
        moves,
        opponent: settings.selfplay.opponent,
        soft: settings.selfplay.soft(),
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
