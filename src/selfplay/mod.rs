//! Self-play: games of a frozen model's PUCT search against itself, recorded as `game/v1`
//! records (docs/learners.md, docs/network.md "Throughput").
//!
//! - [`self_play_game`] (game.rs) plays one game, one search after another.
//! - [`self_play_lanes`] (batched.rs) plays several games at once on one thread, their
//!   leaves evaluated in one batch each round.
//! - [`play_games`] plays an iteration's games in parallel and is the one place that chooses
//!   between the two. Given a deadline (a timed self-play budget, runs/budget.rs), it starts
//!   no game after it and drops the games that finish after it.
//!
//! - [`Mover`] says who plays the moves (`[selfplay] mover`): the search (AlphaZero), or the
//!   game's greedy heuristic in both seats (greedy.rs, Liu et al.'s heuristic pre-training).
//! - [`Opponent`] (`[selfplay] opponent`) puts the game's deterministic greedy player in one
//!   seat, colours alternating, and a learner that plays without search (Q-learning) moves
//!   epsilon-greedily on its model ([`Moves`]; seats.rs).
//!
//! Game g of iteration i draws everything (chance, root noise, move sampling) from the stream
//! `self-play(i,g)` of the run seed, and an evaluator gives a position the same bits in any
//! batch, so a game's record is the same bits whichever way, thread or batch plays it.

mod batched;
mod game;
mod greedy;
mod seats;

use std::time::Instant;

use crate::par;
use serde::{Deserialize, Serialize};

use crate::game::Game;
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::rng::GameSlot;
use crate::search::{Evaluator, Search, SearchConfig, SearchError};

use greedy::greedy_self_play_game;
use seats::seated_game;
pub use seats::{
    DEFAULT_MARGIN, GREEDY, GreedyPolicy, Moves, Planner, Seats, SoftLimit, epsilon_greedy,
    learner_seat, learner_seats,
};

use batched::self_play_lanes_until;
pub use batched::{LaneGame, Played, self_play_lanes};
pub use game::{SELF_PLAY, self_play_game, self_play_stream};

/// Plays self-play games `games` (each at its slot: run seed, iteration, game) on the current
/// rayon pool; returns them in the order of `games`. With `lanes` > 1 a worker plays `lanes`
/// games at once, their leaves batched ([`self_play_lanes`]), with one evaluator from
/// `evaluator` per chunk of games; with 1 a worker plays one game after another
/// ([`self_play_game`]), keeping its search and evaluator. The records are the same bits
/// either way (batched.rs's test); only the speed differs.
///
/// With `until`, a game not started by then is not played and one finished after it is
/// dropped: their slots are `None` (a game is never cut short, so every record returned is
/// the game played to its end). Without it every slot is `Some`.
pub(crate) fn play_games<G: Game, E: Evaluator<G> + Send>(
    g: &G,
    config: SearchConfig,
    evaluator: &(impl Fn() -> E + Sync),
    games: &[LaneGame<G::State>],
    lanes: usize,
    until: Option<Instant>,
) -> Result<Vec<Option<Played<G::State>>>, SearchError> {
    // At most one chunk per thread's share of the games, so that every thread plays (an
    // episode of 30 games in chunks of 32 lanes would play on one thread): the records do not
    // depend on the chunking, so neither do they on the thread count.
    let lanes = lanes.min(games.len().div_ceil(rayon::current_num_threads()));
    if lanes > 1 {
        let chunks: Vec<Vec<Option<Played<G::State>>>> =
            par::try_map(par::chunks(games.len(), lanes), |k| {
                let mut eval = evaluator();
                let chunk = par::chunk(games, lanes, k);
                self_play_lanes_until(g, config, &mut eval, chunk, lanes, until)
            })?;
        return Ok(chunks.into_iter().flatten().collect());
    }
    one_by_one(config, evaluator, games, until, |search, eval, lg, tree| {
        let start = lg.start.as_ref();
        self_play_game(g, search, eval, lg.slot, start, tree)
    })
}

/// Games one after another on each worker, the worker keeping its search and evaluator;
/// `play` plays one game (its tree states into the given vector when the game wants them).
/// Slots as in [`play_games`].
fn one_by_one<G: Game, E: Evaluator<G> + Send>(
    config: SearchConfig,
    evaluator: &(impl Fn() -> E + Sync),
    games: &[LaneGame<G::State>],
    until: Option<Instant>,
    play: impl Fn(
        &mut Search<G>,
        &mut E,
        &LaneGame<G::State>,
        Option<&mut Vec<G::State>>,
    ) -> Result<GameRecord, SearchError>
    + Sync,
) -> Result<Vec<Option<Played<G::State>>>, SearchError> {
    let late = || until.is_some_and(|d| Instant::now() >= d);
    Search::<G>::new(config).map_err(|e| SearchError::Start(e.to_string()))?;
    par::try_map_init(
        games.len(),
        || {
            let search = Search::<G>::new(config).expect("search settings checked above");
            (search, evaluator())
        },
        |(search, eval), k| {
            if late() {
                return Ok(None);
            }
            let (lg, mut tree) = (&games[k], Vec::new());
            let record = play(search, eval, lg, lg.tree.then_some(&mut tree))?;
            Ok((!late()).then_some(Played { record, tree }))
        },
    )
}

/// Who plays the moves of self-play games (`[selfplay] mover`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mover {
    /// The run's search, guided by the model (AlphaZero): the default.
    #[default]
    #[serde(rename = "search")]
    Search,
    /// The game's deterministic greedy heuristic in both seats, its tied best moves recorded
    /// as the training target (Liu et al.'s heuristic pre-training; greedy.rs).
    #[serde(rename = "greedy")]
    Greedy,
}

/// Who sits in the other seat of self-play games (`[selfplay] opponent`; seats.rs).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Opponent {
    /// The learner in both seats (self-play proper): the default.
    #[default]
    #[serde(rename = "none")]
    None,
    /// The game's deterministic greedy player in the seat of `Player::from_index(1 - g % 2)`
    /// of game g.
    #[serde(rename = "greedy")]
    Greedy,
}

fn is_no_opponent(o: &Opponent) -> bool {
    *o == Opponent::None
}

/// `[selfplay]`: how self-play games are played. Left out of the settings record at its
/// defaults, so the settings of runs made before it existed hash as they did; `opponent` is
/// left out at its default too, so the settings of greedy-mover runs hash as they did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelfPlaySettings {
    pub mover: Mover,
    #[serde(skip_serializing_if = "is_no_opponent")]
    pub opponent: Opponent,
    /// Tabula rasa's soft move limit T in plies (Liu et al.: 100; absent: none; seats.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) soft_limit: Option<u32>,
    /// Its forward-distance margin D_t (absent: Liu et al.'s 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) distance_margin: Option<u32>,
}

impl SelfPlaySettings {
    /// Whether these are the defaults (the record leaves them out).
    pub(crate) fn is_default(&self) -> bool {
        *self == SelfPlaySettings::default()
    }

    /// The soft move limit in force (`soft_limit` set).
    pub fn soft(&self) -> Option<SoftLimit> {
        self.soft_limit.map(|plies| SoftLimit {
            plies,
            margin: self.distance_margin.unwrap_or(DEFAULT_MARGIN),
        })
    }
}

/// [`play_games`] by `seats`: the search's games in both seats, or greedy games, or games
/// against an opponent or by a learner's own moves (played one per worker: seats.rs). The
/// records are the same bits whichever thread plays them.
pub(crate) fn play_games_by<G: Abilities, E: Evaluator<G> + Send>(
    g: &G,
    seats: Seats<'_, G>,
    config: SearchConfig,
    evaluator: &(impl Fn() -> E + Sync),
    games: &[LaneGame<G::State>],
    lanes: usize,
    until: Option<Instant>,
) -> Result<Vec<Option<Played<G::State>>>, SearchError> {
    let plain = seats.opponent == Opponent::None && seats.soft.is_none();
    if plain && matches!(seats.moves, Moves::Mover(Mover::Search)) {
        return play_games(g, config, evaluator, games, lanes, until);
    }
    one_by_one(config, evaluator, games, until, |search, eval, lg, tree| {
        let start = lg.start.as_ref();
        self_play_game_by(g, seats, search, eval, lg.slot, start, tree)
    })
}

/// One self-play game by `seats` (also for re-playing a stored one): [`self_play_game`] with
/// `search` and `eval`, a greedy game (no tree states: it searches nothing), or a seated game
/// (seats.rs).
pub(crate) fn self_play_game_by<G: Abilities, E: Evaluator<G>>(
    g: &G,
    seats: Seats<'_, G>,
    search: &mut Search<G>,
    eval: &mut E,
    slot: GameSlot,
    start: Option<&G::State>,
    tree: Option<&mut Vec<G::State>>,
) -> Result<GameRecord, SearchError> {
    match (seats.opponent, seats.moves) {
        _ if seats.soft.is_some() => seated_game(g, seats, search, eval, slot, start, tree),
        (Opponent::None, Moves::Mover(Mover::Search)) => {
            self_play_game(g, search, eval, slot, start, tree)
        }
        (Opponent::None, Moves::Mover(Mover::Greedy)) => greedy_self_play_game(g, slot, start),
        _ => seated_game(g, seats, search, eval, slot, start, tree),
    }
}
