//! Matches: N games between two players, half with each first, in parallel.
//!
//! Game i seats player A first when i is even and second when i is odd, and draws all its
//! randomness (both players' and chance's) from the stream `match(i)` of the match seed, so
//! a match is a pure function of (variant, players, seed, N): the same results and the same
//! game-record hashes on any number of threads. Results are folded in game order.

use crate::par;
use serde::Serialize;

use crate::game::{Game, Player as Seat, Turn};
use crate::game_record::{GameEnd, GameRecord};
use crate::games::Abilities;
use crate::play::{Scratch, step_chance};
use crate::players::{Agent, Player, PlayerError, ScoreCheck};
use crate::rng::{StreamRng, stream, uniform_index};

/// The stream name of match game `i`.
pub(crate) fn match_stream(i: u32) -> String {
    format!("match({i})")
}

/// Plays one game from `start` (the game's start when `None`) between two agents, player 0
/// first, drawing everything from `rng`. `players` and `(seed, stream)` are recorded as given.
pub fn play_game<G: Abilities>(
    g: &G,
    agents: [&mut Agent<G>; 2],
    players: [String; 2],
    start: Option<String>,
    seed: u64,
    stream_name: String,
    rng: &mut StreamRng,
) -> Result<GameRecord, PlayerError> {
    let mut record = GameRecord {
        variant: g.variant(),
        seed,
        stream: stream_name,
        players,
        start,
        steps: Vec::new(),
        end: GameEnd::Finished(crate::game::GameResult::Draw),
    };
    let s = record.start_state(g).map_err(|e| PlayerError::BadSpec {
        spec: record.start.clone().unwrap_or_default(),
        reason: e.to_string(),
    })?;
    let mut outcomes = Vec::new();
    let mut steps = Vec::new();
    let mut agents = agents;
    record.end = crate::play::play_loop(
        g,
        s,
        rng,
        &mut outcomes,
        Some(&mut steps),
        |s, past, p, ply, rng| agents[p.index()].decide(g, s, past, ply, rng),
    )?;
    record.steps = steps;
    Ok(record)
}

/// One game of a match.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatchGame {
    pub index: u32,
    /// Player A's seat.
    pub a_seat: usize,
    pub score_a: f64,
    pub plies: usize,
    pub adjudicated: bool,
    pub hash: String,
    /// The position the game started from, in the game's notation, when it did not start
    /// from the game's start (`tabula rate --openings`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opening: Option<String>,
    /// A GTP engine's own `final_score` beside tabula's score, for each engine that played
    /// (the `gtp:` player; docs/gtp.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub score_checks: Vec<ScoreCheck>,
    #[serde(skip)]
    pub record: GameRecord,
}

/// The result of a match, from player A's point of view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatchReport {
    pub variant: String,
    pub a: String,
    pub b: String,
    pub seed: u64,
    pub games: u32,
    pub score_a: f64,
    /// 95% interval of A's score (Wilson, [`crate::stats::score_interval95`]).
    pub ci95: [f64; 2],
    pub wins_a: u32,
    pub draws: u32,
    pub losses_a: u32,
    /// Games a player was declared the winner of before the end.
    pub adjudicated: u32,
    pub mean_plies: f64,
    /// Games whose score a GTP engine's `final_score` was checked against, and how many of
    /// them disagree with tabula's (absent when no GTP engine played).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score_checks: Option<ScoreChecks>,
    #[serde(rename = "games_detail")]
    pub game_list: Vec<MatchGame>,
}

/// The count of a match's score checks ([`MatchGame::score_checks`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScoreChecks {
    pub checked: u32,
    pub disagree: u32,
}

impl MatchReport {
    pub fn hashes(&self) -> Vec<&str> {
        self.game_list.iter().map(|m| m.hash.as_str()).collect()
    }

    pub fn records(&self) -> impl Iterator<Item = &GameRecord> {
        self.game_list.iter().map(|m| &m.record)
    }
}

/// Plays match game `i` between A and B (A first when `i` is even), from stream `match(i)`.
pub(crate) fn play_match_game<G: Abilities>(
    g: &G,
    a: &Player<G>,
    b: &Player<G>,
    seed: u64,
    i: u32,
) -> Result<MatchGame, PlayerError> {
    play_named_game(g, a, b, seed, i, match_stream(i), None)
}

/// Plays game `i` of a match between A and B (A first when `i` is even) from `start` (the
/// game's start when `None`), drawing everything from stream `name` of `seed`.
fn play_named_game<G: Abilities>(
    g: &G,
    a: &Player<G>,
    b: &Player<G>,
    seed: u64,
    i: u32,
    name: String,
    start: Option<String>,
) -> Result<MatchGame, PlayerError> {
    let a_seat = if i.is_multiple_of(2) {
        Seat::P0
    } else {
        Seat::P1
    };
    let (mut first, mut second, names) = match a_seat {
        Seat::P0 => (
            a.agent(),
            b.agent(),
            [a.spec().to_string(), b.spec().to_string()],
        ),
        Seat::P1 => (
            b.agent(),
            a.agent(),
            [b.spec().to_string(), a.spec().to_string()],
        ),
    };
    let mut rng = stream(seed, &name);
    let record = play_game(
        g,
        [&mut first, &mut second],
        names,
        start.clone(),
        seed,
        name,
        &mut rng,
    )?;
    let mut score_checks = Vec::new();
    if first.wants_final_position() || second.wants_final_position() {
        let states = record.states(g).map_err(|e| PlayerError::BadSpec {
            spec: record.stream.clone(),
            reason: e.to_string(),
        })?;
        if let Some(last) = states.last() {
            for agent in [&mut first, &mut second] {
                score_checks.extend(agent.finish(g, last)?);
            }
        }
    }
    Ok(MatchGame {
        index: i,
        a_seat: a_seat.index(),
        score_a: record.end.result().score(a_seat),
        plies: record.plies(),
        adjudicated: matches!(record.end, GameEnd::Adjudicated { .. }),
        hash: record.hash().to_hex(),
        opening: start,
        score_checks,
        record,
    })
}

/// Plays `games` games between A and B on the current rayon pool (see the module docs).
pub fn run_match<G: Abilities>(
    g: &G,
    a: &Player<G>,
    b: &Player<G>,
    games: u32,
    seed: u64,
) -> Result<MatchReport, PlayerError> {
    run_match_observed(g, a, b, games, seed, &|| {})
}

/// [`run_match`], calling `game_done` after each game (from the worker threads, in any
/// order; for progress only: the results do not depend on it).
pub fn run_match_observed<G: Abilities>(
    g: &G,
    a: &Player<G>,
    b: &Player<G>,
    games: u32,
    seed: u64,
    game_done: &(dyn Fn() + Sync),
) -> Result<MatchReport, PlayerError> {
    let game_list: Vec<MatchGame> = par::try_map(games as usize, |i| {
        let r = play_match_game(g, a, b, seed, i as u32);
        game_done();
        r
    })?;
    Ok(summarise(g.variant(), a, b, seed, game_list))
}

/// The stream name of game `i` between `a` and `b` in a tournament (`tabula rate`): named
/// by the two players' canonical specs, so a pair's games are the same whichever other
/// players the tournament has and in whatever order they are listed.
pub(crate) fn tournament_stream(a: &str, b: &str, i: u32) -> String {
    format!("rate({a} | {b}, {i})")
}

/// The stream name of the opening that games `2j` and `2j + 1` between `a` and `b` start
/// from in a tournament with random openings.
pub(crate) fn opening_stream(a: &str, b: &str, j: u32) -> String {
    format!("rate-opening({a} | {b}, {j})")
}

/// Random openings drawn before a game ends are drawn again, at most this many times.
const OPENING_DRAWS: u32 = 1000;

/// A random opening of `plies` decisions from the game's start: each decision uniform over
/// the legal actions, each chance step by its probabilities, then chance steps until a
/// player is to move; all from `rng`. An opening that ends the game is drawn again from the
/// same stream (so the opening is a function of the stream alone); `None` when
/// [`OPENING_DRAWS`] draws all ended it.
pub(crate) fn random_opening<G: Game>(g: &G, plies: u32, rng: &mut StreamRng) -> Option<G::State> {
    let mut scratch = Scratch::new();
    'draw: for _ in 0..OPENING_DRAWS {
        let (mut s, mut made) = (g.initial_state(), 0);
        loop {
            match g.turn(&s) {
                Turn::Terminal(_) => continue 'draw,
                Turn::Player(_) if made == plies => return Some(s),
                Turn::Player(_) => {
                    let actions = &mut scratch.actions;
                    g.legal_actions(&s, actions);
                    s = g.apply(&s, actions[uniform_index(rng, actions.len())]);
                    made += 1;
                }
                Turn::Chance => s = step_chance(g, &s, rng, &mut scratch),
            }
        }
    }
    None
}

/// Plays `games` games between each pair of `players` on the current rayon pool: a match per
/// pair, its A the player whose canonical spec sorts first (so a pair plays the same games
/// whichever way round it is listed), A first in the even games, game i of the pair drawing
/// everything from the stream [`tournament_stream`] of `seed`. With `openings` > 0, games
/// 2j and 2j + 1 of a pair (A first, then B first) start from the same random opening of that
/// many decisions ([`random_opening`], stream [`opening_stream`]), recorded as their start:
/// deterministic players then play different games, and replays re-play them. All the games
/// run as one parallel list; the reports come in pair order, their games in game order, so
/// they are the same on any number of threads. `game_done` is called after each game
/// (progress only).
pub fn run_tournament<G: Abilities>(
    g: &G,
    players: &[Player<G>],
    pairs: &[(usize, usize)],
    games: u32,
    openings: u32,
    seed: u64,
    game_done: &(dyn Fn() + Sync),
) -> Result<Vec<MatchReport>, PlayerError> {
    let names: Vec<String> = players.iter().map(|p| p.spec().to_string()).collect();
    let pairs: Vec<(usize, usize)> = pairs
        .iter()
        .map(|&(a, b)| if names[a] <= names[b] { (a, b) } else { (b, a) })
        .collect();
    let jobs: Vec<(usize, u32)> = (0..pairs.len())
        .flat_map(|k| (0..games).map(move |i| (k, i)))
        .collect();
    let played: Vec<MatchGame> = par::try_map(jobs.len(), |j| {
        let (k, i) = jobs[j];
        let (a, b) = pairs[k];
        let (na, nb) = (&names[a], &names[b]);
        let start = if openings == 0 {
            None
        } else {
            let mut rng = stream(seed, &opening_stream(na, nb, i / 2));
            let s =
                random_opening(g, openings, &mut rng).ok_or_else(|| PlayerError::NoOpening {
                    variant: g.variant(),
                    plies: openings,
                    draws: OPENING_DRAWS,
                })?;
            Some(g.notation(&s))
        };
        let name = tournament_stream(na, nb, i);
        let r = play_named_game(g, &players[a], &players[b], seed, i, name, start);
        game_done();
        r
    })?;
    let mut played = played.into_iter();
    Ok(pairs
        .iter()
        .map(|&(a, b)| {
            let list: Vec<MatchGame> = played.by_ref().take(games as usize).collect();
            summarise(g.variant(), &players[a], &players[b], seed, list)
        })
        .collect())
}

fn summarise<G: Abilities>(
    variant: String,
    a: &Player<G>,
    b: &Player<G>,
    seed: u64,
    game_list: Vec<MatchGame>,
) -> MatchReport {
    let n = game_list.len() as u32;
    let count = |x: f64| game_list.iter().filter(|m| m.score_a == x).count() as u32;
    let total: f64 = game_list.iter().map(|m| m.score_a).sum();
    let mean = if n == 0 { 0.0 } else { total / f64::from(n) };
    let ci95 = crate::stats::score_interval95(count(1.0), count(0.5), count(0.0));
    let plies: usize = game_list.iter().map(|m| m.plies).sum();
    let checks = || game_list.iter().flat_map(|m| &m.score_checks);
    let score_checks = (checks().count() > 0).then(|| ScoreChecks {
        checked: checks().count() as u32,
        disagree: checks().filter(|c| !c.agree).count() as u32,
    });
    MatchReport {
        variant,
        a: a.spec().to_string(),
        b: b.spec().to_string(),
        seed,
        games: n,
        score_a: mean,
        ci95,
        wins_a: count(1.0),
        draws: count(0.5),
        losses_a: count(0.0),
        adjudicated: game_list.iter().filter(|m| m.adjudicated).count() as u32,
        mean_plies: if n == 0 {
            0.0
        } else {
            plies as f64 / f64::from(n)
        },
        score_checks,
        game_list,
    }
}

/// Re-plays a recorded match game from its inputs (variant, players, seed, stream) and
/// returns the new record; equal hashes mean the game is reproduced bit for bit.
pub fn rerun<G: Abilities>(
    g: &G,
    record: &GameRecord,
    players: [&Player<G>; 2],
) -> Result<GameRecord, PlayerError> {
    let mut first = players[0].agent();
    let mut second = players[1].agent();
    let mut rng = stream(record.seed, &record.stream);
    play_game(
        g,
        [&mut first, &mut second],
        record.players.clone(),
        record.start.clone(),
        record.seed,
        record.stream.clone(),
        &mut rng,
    )
}
