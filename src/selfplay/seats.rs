//! Self-play games whose seats play differently (docs/learners.md, "The opponent seat"):
//!
//! - `[selfplay] opponent = "greedy"`: game g of an iteration seats the learner as
//!   `Player::from_index(g % 2)` (colours alternate) and the game's deterministic greedy
//!   heuristic in the other seat (Liu et al.'s Q-learning plays against it). The opponent's
//!   moves are recorded with no search statistics, so no learner trains on them, and the
//!   record's `players` names the seats: [`SELF_PLAY`] for the learner's, [`GREEDY`] for the
//!   opponent's. So which seat was the learner's is a pure function of the record
//!   ([`learner_seats`]).
//! - A learner that plays without search ([`Moves::EpsilonGreedy`], Q-learning): with
//!   probability epsilon a uniformly random legal move, else the model's greedy action. Its
//!   draws come from the stream `explore(i,g)` of the run seed (one uniform number a move,
//!   then the random move's index), so the game's own stream `self-play(i,g)` draws what it
//!   draws in any other game (chance, the opponent's tie-breaks).
//! - Tabula rasa's soft move limit (`[selfplay] soft_limit` T, `distance_margin` D_t; Liu et
//!   al., "Tabula rasa"): a game ends when neither player has made progress, a net increase
//!   of its checkers in the opponent's base, for the limit's plies; the limit starts at T and
//!   grows by T at each progress. The stopped game's result is decided by the players' total
//!   forward distances: the larger wins when the difference D_p is at least D_t, else a draw
//!   (the paper: "greater than a pre-set threshold D_t" wins, "D_p < D_t" draws; at D_p =
//!   D_t tabula counts a win). Recorded as `GameEnd::Stopped`, so every learner's value
//!   target is that result. Checked at each decision, before the mover decides.

use crate::game::{Action, Game, GameResult, Player};
use crate::game_record::Adjudication;
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::games::abilities::Race;
use crate::play::Decision;
use crate::rng::{GameSlot, StreamRng, uniform_index};
use crate::search::{Evaluator, Search, SearchError};

use super::game::{SELF_PLAY, recorded_game, searched_move};
use super::greedy::{GreedyScratch, greedy_decision, opponent_move};
use super::{Mover, Opponent};

/// The tag of the greedy opponent's seat in a self-play record's `players`.
pub const GREEDY: &str = "greedy";

/// A model's move without search: its greedy action at a state, given the legal actions.
/// The model's greedy action at a state, given the game's past (as the search's `past`) and
/// the legal actions.
pub type GreedyPolicy<'a, G> =
    &'a (dyn Fn(&<G as Game>::State, &[<G as Game>::State], &[Action]) -> Action + Sync);

/// A learner's search of its own model ([`crate::learners::Learner::plan`]: MuZero) from a
/// decision state after the game's past, `ply` plies in, its draws from the game's stream.
pub type Planner<'a, G> = &'a (
        dyn Fn(
    &<G as Game>::State,
    &[<G as Game>::State],
    u32,
    &mut StreamRng,
) -> Result<crate::search::SearchResult, SearchError>
            + Sync
    );

/// How the learner's seat moves.
pub enum Moves<'a, G: Game> {
    /// The run's mover (`[selfplay] mover`).
    Mover(Mover),
    /// Epsilon-greedy on the model's greedy action (see the module docs).
    EpsilonGreedy {
        epsilon: f64,
        greedy: GreedyPolicy<'a, G>,
    },
    /// The learner's search of its own model in place of the run's search over the rules:
    /// its result is the move and the record's search statistics, as a searched move's (no
    /// search-tree states: its tree holds model states).
    Planned(Planner<'a, G>),
}

/// Who plays the moves of an iteration's self-play games: the learner's seat and the
/// opponent's; and when a game stops early.
pub struct Seats<'a, G: Game> {
    pub moves: Moves<'a, G>,
    pub opponent: Opponent,
    pub soft: Option<SoftLimit>,
}

/// Liu et al.'s D_t.
pub const DEFAULT_MARGIN: u32 = 3;

/// Tabula rasa's soft move limit (see the module docs).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SoftLimit {
    /// T: plies without progress before a game stops.
    pub plies: u32,
    /// D_t: the forward-distance difference that decides a stopped game.
    pub margin: u32,
}

impl SoftLimit {
    /// The result of a game stopped with the players at `race`.
    pub fn result(self, race: [Race; 2]) -> GameResult {
        let d = race[0].distance - race[1].distance;
        if d.unsigned_abs() < self.margin || d == 0 {
            return GameResult::Draw;
        }
        GameResult::Win(if d > 0 { Player::P0 } else { Player::P1 })
    }
}

/// A game's soft limit as it goes: the plies allowed so far and each player's most checkers
/// in the opponent's base.
struct SoftClock {
    soft: SoftLimit,
    limit: u32,
    best: Option<[u32; 2]>,
}

impl SoftClock {
    fn new(soft: SoftLimit) -> SoftClock {
        SoftClock {
            soft,
            limit: soft.plies,
            best: None,
        }
    }

    /// At the decision after `ply` plies with the players at `race`: the limit grows by T at
    /// a player's new most checkers home; the game's stop when `ply` reached the limit.
    fn check(&mut self, race: [Race; 2], ply: u32) -> Option<Decision> {
        let homes = race.map(|r| r.home);
        if let Some(best) = &mut self.best {
            if homes[0] > best[0] || homes[1] > best[1] {
                self.limit = self.limit.saturating_add(self.soft.plies);
            }
            *best = [best[0].max(homes[0]), best[1].max(homes[1])];
        } else {
            self.best = Some(homes);
        }
        (ply >= self.limit).then(|| Decision::Stop {
            result: self.soft.result(race),
            reason: Adjudication::SoftLimit,
        })
    }
}

impl<G: Game> Clone for Moves<'_, G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: Game> Copy for Moves<'_, G> {}

impl<G: Game> Clone for Seats<'_, G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: Game> Copy for Seats<'_, G> {}

impl<G: Game> Seats<'_, G> {
    /// The run's mover in both seats (every run before the opponent seat).
    pub fn mover(mover: Mover) -> Seats<'static, G> {
        Seats {
            moves: Moves::Mover(mover),
            opponent: Opponent::None,
            soft: None,
        }
    }
}

/// The learner's seat of self-play game `game` against an opponent.
pub fn learner_seat(game: u32) -> Player {
    Player::from_index(game as usize % 2)
}

/// Which seats of a stored self-play game the learner played (both without an opponent):
/// the seats tagged [`SELF_PLAY`].
pub fn learner_seats(record: &GameRecord) -> [bool; 2] {
    [0, 1].map(|i| record.players[i] == SELF_PLAY)
}

/// Plays self-play game `slot` by `seats` (see the module docs):
/// the search and its evaluator move for the learner where `seats` says the mover is the
/// search. `tree` collects the search trees' decision states, as in `self_play_game`.
pub(crate) fn seated_game<G: Abilities, E: Evaluator<G>>(
    g: &G,
    seats: Seats<'_, G>,
    search: &mut Search<G>,
    eval: &mut E,
    slot: GameSlot,
    start: Option<&G::State>,
    mut tree: Option<&mut Vec<G::State>>,
) -> Result<GameRecord, SearchError> {
    let seat = (seats.opponent == Opponent::Greedy).then(|| learner_seat(slot.game));
    let mut explore = slot.stream("explore");
    let mut scratch = GreedyScratch::default();
    let mut legal = Vec::new();
    let mut clock = seats.soft.map(SoftClock::new);
    let mut record = recorded_game(g, slot, start, |s, past, p, ply, rng| {
        if let (Some(c), Some(race)) = (clock.as_mut(), g.race(s))
            && let Some(stop) = c.check(race, ply)
        {
            return Ok(stop);
        }
        if seat.is_some_and(|l| l != p) {
            return opponent_move(g, s, rng, &mut scratch);
        }
        match seats.moves {
            Moves::Mover(Mover::Greedy) => greedy_decision(g, s, rng, &mut scratch),
            Moves::Mover(Mover::Search) => {
                searched_move(g, search, eval, (s, past), ply, rng, tree.as_deref_mut())
            }
            Moves::Planned(plan) => plan(s, past, ply, rng).map(Decision::searched),
            Moves::EpsilonGreedy { epsilon, greedy } => {
                g.legal_actions(s, &mut legal);
                legal.sort_unstable();
                Ok(Decision::Play {
                    action: epsilon_greedy(&mut explore, epsilon, &legal, |l| greedy(s, past, l)),
                    search: None,
                })
            }
        }
    })?;
    if let Some(l) = seat {
        record.players[l.other().index()] = GREEDY.to_string();
    }
    Ok(record)
}

/// With probability `epsilon` a uniformly random action of `legal`, else `greedy(legal)`:
/// one uniform number from `rng`, then the random action's index when it explores.
pub fn epsilon_greedy(
    rng: &mut StreamRng,
    epsilon: f64,
    legal: &[Action],
    greedy: impl FnOnce(&[Action]) -> Action,
) -> Action {
    let u: f64 = rand::RngExt::random(rng);
    if u < epsilon {
        legal[uniform_index(rng, legal.len())]
    } else {
        greedy(legal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Turn;
    use crate::game_record::Step;
    use crate::games::Abilities;
    use crate::games::Checkers;
    use crate::games::greedy::best_moves;
    use crate::search::{SearchConfig, Uniform};

    fn checkers() -> Checkers {
        Checkers::new(4, 3, crate::games::checkers::WinRule::AllOwn, 60).unwrap()
    }

    /// Plays game `game` of iteration 1 by `moves` against the greedy opponent.
    fn play(g: &Checkers, moves: Moves<'_, Checkers>, game: u32) -> GameRecord {
        let seats = Seats {
            moves,
            opponent: Opponent::Greedy,
            soft: None,
        };
        let mut search = Search::new(SearchConfig {
            simulations: 8.into(),
            ..SearchConfig::default()
        })
        .unwrap();
        seated_game(
            g,
            seats,
            &mut search,
            &mut Uniform,
            GameSlot::new(3, 1, game),
            None,
            None,
        )
        .unwrap()
    }

    /// The learner sits in seat g % 2; every opponent move is one of the deterministic greedy
    /// player's tied best moves, recorded with no statistics; the learner's searched moves
    /// carry them; the record names the seats and is the same bits when played again.
    #[test]
    fn the_opponent_seat_plays_greedy_moves_without_statistics() {
        let g = checkers();
        for game in [0, 1, 2, 5] {
            let r = play(&g, Moves::Mover(Mover::Search), game);
            assert_eq!(r, play(&g, Moves::Mover(Mover::Search), game));
            let seat = learner_seat(game);
            assert_eq!(seat.index(), game as usize % 2);
            let mut tags = [SELF_PLAY, SELF_PLAY];
            tags[seat.other().index()] = GREEDY;
            assert_eq!(r.players, tags.map(String::from));
            let mut seats = [false; 2];
            seats[seat.index()] = true;
            assert_eq!(learner_seats(&r), seats);
            let states = r.states(&g).unwrap();
            let (mut legal, mut features, mut best) = (Vec::new(), Vec::new(), Vec::new());
            let (mut mine, mut theirs) = (0, 0);
            for (s, step) in states.iter().zip(&r.steps) {
                let (Turn::Player(p), Step::Move { action, search }) = (g.turn(s), step) else {
                    continue;
                };
                if p == seat {
                    assert!(search.is_some());
                    mine += 1;
                    continue;
                }
                assert!(search.is_none());
                g.legal_actions(s, &mut legal);
                g.greedy_features(s, &legal, &mut features);
                best_moves(&features, &mut best);
                assert!(best.iter().any(|&k| legal[k] == *action));
                theirs += 1;
            }
            assert!(mine > 1 && theirs > 1, "{mine} {theirs}");
        }
    }

    /// Epsilon 0 plays the model's greedy action at every learner decision, epsilon 1 explores
    /// (not always the greedy action), and the exploration draws do not move the game's own
    /// stream: the opponent's moves are drawn as they would be.
    #[test]
    fn epsilon_greedy_moves_follow_epsilon() {
        let g = checkers();
        let first = |_: &<Checkers as Game>::State,
                     _: &[<Checkers as Game>::State],
                     legal: &[Action]| { legal[0] };
        let greedy = Moves::EpsilonGreedy {
            epsilon: 0.0,
            greedy: &first,
        };
        let random = Moves::EpsilonGreedy {
            epsilon: 1.0,
            greedy: &first,
        };
        let count = |r: &GameRecord| {
            let states = r.states(&g).unwrap();
            let mut legal = Vec::new();
            let (mut firsts, mut all) = (0, 0);
            for (s, step) in states.iter().zip(&r.steps) {
                if let (Turn::Player(p), Step::Move { action, search }) = (g.turn(s), step)
                    && p == learner_seat(1)
                {
                    assert!(search.is_none());
                    g.legal_actions(s, &mut legal);
                    legal.sort_unstable();
                    firsts += usize::from(*action == legal[0]);
                    all += 1;
                }
            }
            (firsts, all)
        };
        let (f, n) = count(&play(&g, greedy, 1));
        assert_eq!(f, n);
        let mut explored = 0;
        for game in [1, 3, 5] {
            let (f, n) = count(&play(&g, random, game));
            explored += n - f;
        }
        assert!(explored > 0);
    }

    #[test]
    fn epsilon_greedy_draws_one_number_and_an_index() {
        let mut rng = crate::rng::stream(1, "t");
        let legal = [3, 5, 9];
        for _ in 0..50 {
            assert_eq!(epsilon_greedy(&mut rng, 0.0, &legal, |_| 5), 5);
            assert!(legal.contains(&epsilon_greedy(&mut rng, 1.0, &legal, |_| 5)));
        }
        let explored = (0..2000)
            .filter(|_| epsilon_greedy(&mut rng, 0.25, &legal, |_| 100) != 100)
            .count();
        assert!((400..600).contains(&explored), "{explored}");
    }

    fn race(home: [u32; 2], distance: [i32; 2]) -> [Race; 2] {
        [0, 1].map(|i| Race {
            home: home[i],
            distance: distance[i],
        })
    }

    /// The larger forward distance wins from a difference of D_t; below it, a draw.
    #[test]
    fn a_stopped_games_result_by_hand() {
        let soft = SoftLimit {
            plies: 10,
            margin: 3,
        };
        assert_eq!(
            soft.result(race([0, 0], [7, 4])),
            GameResult::Win(Player::P0)
        );
        assert_eq!(
            soft.result(race([0, 0], [4, 7])),
            GameResult::Win(Player::P1)
        );
        assert_eq!(soft.result(race([0, 0], [6, 4])), GameResult::Draw);
        assert_eq!(soft.result(race([2, 0], [0, 0])), GameResult::Draw);
        let zero = SoftLimit { margin: 0, ..soft };
        assert_eq!(zero.result(race([0, 0], [5, 5])), GameResult::Draw);
        assert_eq!(
            zero.result(race([0, 0], [5, 6])),
            GameResult::Win(Player::P1)
        );
    }

    /// The limit starts at T and grows by T at each new most checkers home of a player (a
    /// checker leaving the base and coming back is no new progress).
    #[test]
    fn the_soft_limit_grows_with_progress() {
        let soft = SoftLimit {
            plies: 10,
            margin: 3,
        };
        let mut c = SoftClock::new(soft);
        let r = |h0, h1| race([h0, h1], [0, 0]);
        assert!(c.check(r(0, 0), 0).is_none());
        assert!(c.check(r(1, 0), 5).is_none());
        assert!(c.check(r(0, 0), 12).is_none());
        assert!(c.check(r(1, 0), 15).is_none());
        assert!(c.check(r(1, 1), 19).is_none());
        assert!(c.check(r(1, 1), 29).is_none());
        let stop = c.check(r(1, 1), 30).unwrap();
        assert_eq!(
            stop,
            Decision::Stop {
                result: GameResult::Draw,
                reason: Adjudication::SoftLimit,
            }
        );
    }

    /// A self-play game under the soft limit stops at a decision state after a multiple of T
    /// plies, recorded as stopped with the result of its last position's race.
    #[test]
    fn games_stop_at_the_soft_limit() {
        let g = Checkers::new(5, 3, crate::games::checkers::WinRule::AllOwn, 200).unwrap();
        let soft = SoftLimit {
            plies: 6,
            margin: 1,
        };
        let seats = Seats {
            moves: Moves::Mover(Mover::Greedy),
            opponent: Opponent::None,
            soft: Some(soft),
        };
        let mut search = Search::new(SearchConfig::default()).unwrap();
        let mut stopped = 0;
        for game in 0..8 {
            let r = seated_game(
                &g,
                seats,
                &mut search,
                &mut Uniform,
                GameSlot::new(5, 1, game),
                None,
                None,
            )
            .unwrap();
            let states = r.states(&g).unwrap();
            let last = states.last().unwrap();
            if let crate::game_record::GameEnd::Stopped { result, reason } = r.end {
                assert_eq!(reason, Adjudication::SoftLimit);
                assert!(matches!(g.turn(last), Turn::Player(_)));
                assert_eq!(r.steps.len() % 6, 0, "{}", r.steps.len());
                assert_eq!(result, soft.result(g.race(last).unwrap()));
                stopped += 1;
            }
        }
        assert!(stopped > 0);
    }
}
