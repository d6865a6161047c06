//! An iteration's self-play: games already committed before an interruption are taken as
//! they are; the rest are played in batches of at most [`GAME_BATCH`] ([`Loop::play_batch`],
//! the one path that plays games) until the iteration's quota is met (M games or a budget's
//! prefix rule, runs/budget.rs), each batch derived, encoded and compressed here, beside
//! self-play, so the writer only inserts rows.

use std::ops::Range;
use std::time::Instant;

use super::Settings;
use super::budget::{Quota, Tally};
use super::exchange::{Exchange, Gather, Task, object_bytes, play_slice};
use super::iterate::{Loop, Outbox};
use super::settings_record;
use super::writer::{GAMES_FLUSH, GameBatch};
use super::{Commit, GAME_BATCH, GameYield, Observer, RunError, StartPoint};
use super::{game_yield, replay_tree};
use crate::game::{Action, Player};
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::learners::{Learner, LearnerContext};
use crate::par;
use crate::rng::{GameSlot, StreamRng};
use crate::search::{SearchConfig, SearchError, SearchResult};
use crate::selfplay::{
    GreedyPolicy, LaneGame, Mover, Moves, Planner, Played, Seats, play_games_by,
};
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
        // Played by the processes serving the run's exchange, where it has one.
        let mut gather = match self.exchange {
            Some(x) if !tally.full() => Some(Gather::begin(x, self.task(start, i, x)?)?),
            _ => None,
        };
        // The parallel width: a batch of a budget is at least this many games.
        let width = (rayon::current_num_threads() * L::SELF_PLAY_LANES).max(1) as u32;
        let mut last_sent = Instant::now();
        while !tally.full() {
            let next = tally.games();
            let ids = next..next + tally.next_batch(width, GAME_BATCH);
            // The first game of a timed iteration is always played out (runs/budget.rs).
            let until = tally.deadline().filter(|_| next > 0);
            let played = match gather.as_mut() {
                Some(gather) => self.gathered(start, i, gather, ids)?,
                None => self.play_batch(start, i, ids, until)?,
            };
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
        let games: Vec<LaneGame<G::State>> = par::map_init(
            ids.len(),
            1,
            || model.evaluator(),
            |eval, k| {
                let slot = GameSlot::new(seed, i, ids.start + k as u32);
                let from = policy.start(g, slot, eval);
                let tree = wants_tree && from.is_none();
                LaneGame {
                    slot,
                    start: from,
                    tree,
                }
            },
        );
        let played = play_lanes(g, &self.cfg.settings, ctx, model, i, &games, until)?;
        par::map_owned(played, |_, p| {
            p.map(|p| played_game::<G, L>(g, ctx, p.record, p.tree))
                .transpose()
        })
        .into_iter()
        .collect()
    }

    /// Games `ids` of iteration `i` from the exchange (module docs of runs/exchange), in game
    /// order, derived and encoded as [`Loop::play_batch`] does; the search trees' states are
    /// re-played where the start policy wants them.
    fn gathered(
        &self,
        start: &StartPoint<G, L>,
        i: u32,
        gather: &mut Gather<'_>,
        ids: Range<u32>,
    ) -> Result<Vec<Option<PlayedGame<G, L>>>, RunError> {
        let (g, cfg, ctx, model) = (self.g, self.cfg, self.ctx(), &start.model);
        let settings = &cfg.settings;
        let play = |task: &Task, k: u32| play_slice(g, task, settings, model, k);
        let records = gather.games(ids.clone(), &play)?;
        let wants_tree = start.start.wants_tree_states();
        par::map_owned(records, |k, record| {
            let game = ids.start + k as u32;
            let tree = match wants_tree && record.start.is_none() {
                true => replay_tree(g, model, cfg, &record, i, game)?,
                false => Vec::new(),
            };
            played_game::<G, L>(g, ctx, record, tree).map(Some)
        })
        .into_iter()
        .collect()
    }

    /// The task of iteration `i` for the exchange `x`: the settings in force, the model that
    /// plays (its full checkpoint), every game's start, computed here from the start policy.
    /// Only a fixed number of games can be spread: a budget's prefix rule needs the games in
    /// the order they finish.
    fn task(&self, start: &StartPoint<G, L>, i: u32, x: &Exchange) -> Result<Task, RunError> {
        let (g, s, seed) = (self.g, &self.cfg.settings, self.cfg.seed);
        let Some(m) = s.games_per_iteration.filter(|_| s.budget.is_none()) else {
            return Err(RunError::Usage(format!(
                "self-play on workers needs a fixed `games_per_iteration`; this run plays {}                  (a budget's prefix rule takes games in the order they finish): run it in                  one process",
                s.self_play_in_words()
            )));
        };
        let settings = settings_record(s)?;
        let settings_hash = settings.hash;
        let mut objects = object_bytes([settings]);
        let model = match start.done {
            0 => None,
            done => {
                // Full whatever the run's checkpoint_every: the worker has nothing to
                // rebuild a delta from.
                let ctx = LearnerContext {
                    checkpoint_every: 1,
                    ..self.ctx()
                };
                let c = start.model.checkpoint(g, ctx, done, None)?;
                objects.extend(object_bytes(c.objects));
                Some(c.root)
            }
        };
        let policy = &start.start;
        let starts = par::try_map_init(
            m as usize,
            || start.model.evaluator(),
            |eval, game| {
                start_text(
                    g,
                    policy.start(g, GameSlot::new(seed, i, game as u32), eval),
                )
            },
        )?;
        Ok(Task {
            build: super::execute::build_line(),
            run: self.line,
            variant: g.variant(),
            seed,
            model_seed: self.model_seed,
            iteration: i,
            settings: settings_hash,
            model,
            starts,
            slice: x.slice_for(m),
            objects,
        })
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
        par::map_owned(reuse, |k, record| {
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
        .into_iter()
        .collect()
    }
}

/// Plays `games` of iteration `i` with `model` by the mover of `settings` (searches batched
/// or one at a time as the learner asks, or greedy games: [`play_games_by`] chooses), in
/// parallel on the current pool; with `until`, the games not finished by then are `None`. The
/// one place games are played, by a run's own loop and by the workers of an exchange.
pub(super) fn play_lanes<G: Abilities, L: Learner<G>>(
    g: &G,
    settings: &Settings,
    ctx: LearnerContext<'_>,
    model: &L,
    i: u32,
    games: &[LaneGame<G::State>],
    until: Option<Instant>,
) -> Result<Vec<Option<Played<G::State>>>, RunError> {
    let search = settings.search.at_iteration(i);
    let greedy =
        |s: &G::State, past: &[G::State], legal: &[Action]| model.greedy_action(g, s, past, legal);
    let plan = |s: &G::State, past: &[G::State], ply: u32, rng: &mut StreamRng| {
        planned(g, model, search, (s, past), ply, rng)
    };
    let seats = seats_of::<G, L>(settings, ctx, i, &greedy, &plan);
    let evaluator = || model.evaluator();
    let lanes = L::SELF_PLAY_LANES;
    Ok(play_games_by(
        g, seats, search, &evaluator, games, lanes, until,
    )?)
}

/// The learner's plan ([`Learner::plan`]) with the search settings `config`; a learner that
/// plans nothing is refused (only a learner with [`Learner::PLANS`] is asked).
pub(super) fn planned<G: Abilities, L: Learner<G>>(
    g: &G,
    model: &L,
    config: SearchConfig,
    at: (&G::State, &[G::State]),
    ply: u32,
    rng: &mut StreamRng,
) -> Result<SearchResult, SearchError> {
    model
        .plan(g, config, at, ply, rng)
        .unwrap_or_else(|| Err(SearchError::Start(format!("{} plans no search", L::NAME))))
}

/// Who moves in iteration `i`'s self-play games: the learner's own epsilon-greedy moves
/// where it plays without search ([`Learner::exploration`]), else the run's mover; the
/// opponent seat as `[selfplay] opponent` says.
pub(super) fn seats_of<'a, G: Abilities, L: Learner<G>>(
    settings: &Settings,
    ctx: LearnerContext<'_>,
    i: u32,
    greedy: GreedyPolicy<'a, G>,
    plan: Planner<'a, G>,
) -> Seats<'a, G> {
    let moves = match L::exploration(ctx, i) {
        Some(epsilon) => Moves::EpsilonGreedy { epsilon, greedy },
        None if L::PLANS && settings.selfplay.mover == Mover::Search => Moves::Planned(plan),
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

/// A start position in the game's notation, for a task: refused where the notation does not
/// give the position back (the worker would play from another one).
fn start_text<G: Abilities>(g: &G, start: Option<G::State>) -> Result<Option<String>, RunError> {
    let Some(s) = start else {
        return Ok(None);
    };
    let text = g.notation(&s);
    match g.parse_notation(&text) {
        Ok(back) if g.key(&back) == g.key(&s) => Ok(Some(text)),
        _ => Err(RunError::Exchange(format!(
            "a self-play start of {} does not come back from its notation `{text}`; its games \
             cannot be played on workers",
            g.variant()
        ))),
    }
}
