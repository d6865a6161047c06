//! Self-play budgets per iteration (docs/budgets.md): `[budget] moves = N`,
//! `simulations = N` or `seconds = T` in a run spec, instead of `games_per_iteration`.
//!
//! Games are numbered and each draws from its own stream `self-play(i,g)`, as with a fixed
//! M. An iteration keeps the *shortest prefix* of its games, in game order, whose cost
//! reaches the budget ([`Tally`]): for `moves` a game costs its decisions
//! ([`GameRecord::plies`]), for `simulations` the simulations its searches ran (read back
//! from the record: [`simulations_of`]). Both are functions of the records alone, so the
//! kept prefix is the same whatever the thread count, the batch sizes or interruptions;
//! games played past the budget are discarded and never stored.
//!
//! `seconds` is the 2023 study's T_self (Hsueh et al. 2023, Section VI): an iteration keeps
//! the games that finished, in game order, before its self-play had run T seconds (at least
//! one game). Wall time decides the count, so the run is not a function of its seed alone;
//! the count is recorded (the iteration record lists its games), and verify re-executes an
//! iteration with exactly the recorded count, so the run replays bit-exactly from its store.
//!
//! Every quota also stops at [`MAX_GAMES`] games (memory; docs/limits.md).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::spec::MAX_GAMES;
use crate::error::SettingError;
use crate::game_record::{GameRecord, Step};
use crate::search::SearchConfig;

/// The largest `budget.moves` or `budget.simulations`: 10^12, far above what
/// [`MAX_GAMES`] games of the solvable games can use (docs/limits.md).
pub(crate) const MAX_BUDGET_COUNT: u64 = 1_000_000_000_000;

/// The largest `budget.seconds`: a week of self-play per iteration (docs/limits.md).
pub(crate) const MAX_BUDGET_SECONDS: f64 = 604_800.0;

/// Progress units of an iteration with a budget (the thousandths of its budget used), where
/// an iteration of M games counts M ([`super::Settings::progress_units`]).
pub const BUDGET_PROGRESS_UNITS: u32 = 1000;

/// `[budget]` of a run spec: exactly one of the three is given ([`Budget::kind`]). Fields
/// left out are left out of the settings record too.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Self-play decisions per iteration (chance steps not counted). Signed, so a negative
    /// value gets the range error naming the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves: Option<i64>,
    /// Search simulations per iteration (`search.simulations` per full search, the playout
    /// cap's `n_fast` per fast one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulations: Option<i64>,
    /// T_self: wall-clock seconds of self-play per iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

/// A validated budget.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum BudgetKind {
    Moves(u64),
    Simulations(u64),
    Seconds(f64),
}

impl BudgetKind {
    /// Whether the count of games it keeps depends on the machine (`seconds`).
    pub fn is_timed(&self) -> bool {
        matches!(self, BudgetKind::Seconds(_))
    }
}

impl std::fmt::Display for BudgetKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BudgetKind::Moves(n) => write!(f, "{n} self-play moves per iteration"),
            BudgetKind::Simulations(n) => write!(f, "{n} search simulations per iteration"),
            BudgetKind::Seconds(t) => write!(f, "{t} s of self-play per iteration (T_self)"),
        }
    }
}

impl Budget {
    /// The one budget given, in range; else the error names the key and what is allowed.
    pub fn kind(&self) -> Result<BudgetKind, SettingError> {
        let given = [
            self.moves.is_some(),
            self.simulations.is_some(),
            self.seconds.is_some(),
        ];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(SettingError::new(
                "budget",
                self.describe(),
                "exactly one of `moves`, `simulations` or `seconds`",
            ));
        }
        let count = |key: &str, n: i64| match u64::try_from(n) {
            Ok(n) if (1..=MAX_BUDGET_COUNT).contains(&n) => Ok(n),
            _ => Err(SettingError::new(
                format!("budget.{key}"),
                n,
                format!("an integer from 1 to {MAX_BUDGET_COUNT}"),
            )),
        };
        if let Some(n) = self.moves {
            return count("moves", n).map(BudgetKind::Moves);
        }
        if let Some(n) = self.simulations {
            return count("simulations", n).map(BudgetKind::Simulations);
        }
        let t = self.seconds.unwrap_or(0.0);
        if !(t.is_finite() && t > 0.0 && t <= MAX_BUDGET_SECONDS) {
            return Err(SettingError::new(
                "budget.seconds",
                t,
                format!("a number of seconds > 0 and <= {MAX_BUDGET_SECONDS} (a week)"),
            ));
        }
        Ok(BudgetKind::Seconds(t))
    }

    /// The budget as given, for error messages: `{moves = 10, seconds = 2}`.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = self.moves {
            parts.push(format!("moves = {n}"));
        }
        if let Some(n) = self.simulations {
            parts.push(format!("simulations = {n}"));
        }
        if let Some(t) = self.seconds {
            parts.push(format!("seconds = {t}"));
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// Simulations the searches of self-play game `r` ran under `search` (resolved for the game's
/// iteration, [`SearchConfig::at_iteration`]): each searched move
/// ran `search.simulations` (a full search) or the playout cap's `n_fast` (a fast one), as
/// [`crate::search::SearchResult::simulations`] counts them.
pub(crate) fn simulations_of(r: &GameRecord, search: &SearchConfig) -> u64 {
    let fast = search
        .playout_cap
        .map_or(search.simulations.first(), |p| p.n_fast);
    r.steps
        .iter()
        .filter_map(|s| match s {
            Step::Move {
                search: Some(stats),
                ..
            } => Some(u64::from(if stats.full {
                search.simulations.first()
            } else {
                fast
            })),
            _ => None,
        })
        .sum()
}

/// How many games an iteration plays.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Quota {
    /// Exactly this many (M, or the recorded count of a `seconds` iteration re-executed).
    Games(u32),
    /// The shortest prefix whose decisions reach this many.
    Moves(u64),
    /// The shortest prefix whose search simulations reach this many.
    Simulations(u64),
    /// The games finished before this instant (at least one).
    Until(Instant),
}

impl Quota {
    /// The quota of an iteration of a run with `games_per_iteration` or `budget` whose
    /// self-play starts now; `recorded`: the games a stored iteration kept, which a timed
    /// budget re-executes exactly.
    pub(crate) fn of(
        games: Option<u32>,
        budget: Option<BudgetKind>,
        recorded: Option<u32>,
    ) -> Quota {
        match (games, budget) {
            (Some(m), _) => Quota::Games(m),
            (None, Some(BudgetKind::Moves(n))) => Quota::Moves(n),
            (None, Some(BudgetKind::Simulations(n))) => Quota::Simulations(n),
            (None, Some(BudgetKind::Seconds(t))) => match recorded {
                Some(k) => Quota::Games(k),
                None => Quota::Until(Instant::now() + Duration::from_secs_f64(t)),
            },
            // Validation gives every run one of the two.
            (None, None) => Quota::Games(1),
        }
    }

    /// The deadline of a timed quota.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match self {
            Quota::Until(d) => Some(*d),
            _ => None,
        }
    }
}

/// An iteration's games taken in game order against its quota: the prefix rule.
#[derive(Clone, Debug)]
pub(crate) struct Tally {
    quota: Quota,
    search: SearchConfig,
    started: Instant,
    /// Games taken.
    games: u32,
    /// Their cost (decisions or simulations; 0 for the other quotas).
    used: u64,
    /// A timed quota whose next game missed the deadline: nothing more is taken.
    closed: bool,
}

impl Tally {
    pub(crate) fn new(quota: Quota, search: SearchConfig) -> Tally {
        Tally {
            quota,
            search,
            started: Instant::now(),
            games: 0,
            used: 0,
            closed: false,
        }
    }

    pub(crate) fn games(&self) -> u32 {
        self.games
    }

    /// Whether the iteration has all its games: the next game in order is not taken.
    pub(crate) fn full(&self) -> bool {
        if self.games >= MAX_GAMES || self.closed {
            return true;
        }
        match self.quota {
            Quota::Games(m) => self.games >= m,
            Quota::Moves(n) | Quota::Simulations(n) => self.used >= n,
            // Closed by the clock ([`Tally::check_clock`]) or by a game that missed it.
            Quota::Until(_) => false,
        }
    }

    /// The deadline of a timed quota.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.quota.deadline()
    }

    /// After a batch: a timed quota whose deadline has passed is closed (once it has a game).
    pub(crate) fn check_clock(&mut self) {
        if let Quota::Until(d) = self.quota
            && Instant::now() >= d
        {
            self.close();
        }
    }

    /// Takes the next game in order (the caller checked [`Tally::full`] first).
    pub(crate) fn take(&mut self, r: &GameRecord) {
        self.games += 1;
        self.used += match self.quota {
            Quota::Moves(_) => r.plies() as u64,
            Quota::Simulations(_) => simulations_of(r, &self.search),
            Quota::Games(_) | Quota::Until(_) => 0,
        };
    }

    /// A timed quota's next game did not finish in time: the iteration ends here (unless it
    /// has no game yet; the first game is never timed).
    pub(crate) fn close(&mut self) {
        self.closed = self.games >= 1;
    }

    /// How many games to play next, from game `self.games` on: all that are left of M; for
    /// a budget, an estimate of the games still needed (from the mean cost so far), at least
    /// `width` (the workers' parallel width) and at most `batch`. Which games are played
    /// never changes which are kept (only the prefix rule does).
    pub(crate) fn next_batch(&self, width: u32, batch: u32) -> u32 {
        let left_of_cap = MAX_GAMES - self.games.min(MAX_GAMES);
        let n = match self.quota {
            Quota::Games(m) => m.saturating_sub(self.games).min(batch),
            Quota::Until(_) if self.games == 0 => 1,
            Quota::Until(_) => batch,
            Quota::Moves(n) | Quota::Simulations(n) => {
                if self.games == 0 || self.used == 0 {
                    width.min(batch)
                } else {
                    let mean = self.used.div_ceil(u64::from(self.games));
                    let needed = n.saturating_sub(self.used).div_ceil(mean.max(1));
                    (needed.min(u64::from(batch)) as u32).max(width.min(batch))
                }
            }
        };
        n.min(left_of_cap).max(1)
    }

    /// Progress within the iteration: (done, of) in games for M games, else in thousandths
    /// of the budget ([`BUDGET_PROGRESS_UNITS`]).
    pub(crate) fn progress(&self) -> (u32, u32) {
        let units = u64::from(BUDGET_PROGRESS_UNITS);
        let part = |used: u64, of: u64| (used.min(of) * units / of.max(1)) as u32;
        match self.quota {
            Quota::Games(m) => (self.games, m),
            Quota::Moves(n) | Quota::Simulations(n) => (part(self.used, n), BUDGET_PROGRESS_UNITS),
            Quota::Until(d) => {
                let of = d.saturating_duration_since(self.started).as_millis() as u64;
                let used = self.started.elapsed().as_millis() as u64;
                (part(used, of), BUDGET_PROGRESS_UNITS)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{GameResult, Player};
    use crate::game_record::{GameEnd, SearchStats};
    use crate::search::PlayoutCap;

    /// A record of `plies` searched moves, every `fast_every`-th one fast (0: none).
    fn record(plies: usize, fast_every: usize) -> GameRecord {
        let steps = (0..plies)
            .flat_map(|k| {
                [
                    Step::Chance { outcome: 0 },
                    Step::Move {
                        action: 0,
                        search: Some(SearchStats {
                            visits: vec![1],
                            target: None,
                            full: fast_every == 0 || k % fast_every != 0,
                        }),
                    },
                ]
            })
            .collect();
        GameRecord {
            variant: "t".into(),
            seed: 0,
            stream: "s".into(),
            players: ["a".into(), "b".into()],
            start: None,
            steps,
            end: GameEnd::Finished(GameResult::Win(Player::P0)),
        }
    }

    /// Games taken one by one until full: how many the prefix rule keeps.
    fn kept(quota: Quota, search: SearchConfig, lengths: &[usize]) -> u32 {
        let mut t = Tally::new(quota, search);
        for &n in lengths {
            if t.full() {
                break;
            }
            t.take(&record(n, 3));
        }
        t.games()
    }

    #[test]
    fn the_shortest_prefix_that_reaches_the_budget_is_kept() {
        let s = SearchConfig::default();
        let lengths = [4, 6, 5, 7, 3, 9];
        // Moves 4, 10, 15, 22: 10 is reached by the second game, 11 by the third.
        assert_eq!(kept(Quota::Moves(10), s, &lengths), 2);
        assert_eq!(kept(Quota::Moves(11), s, &lengths), 3);
        assert_eq!(kept(Quota::Moves(1), s, &lengths), 1);
        // More than all the games have: every game offered.
        assert_eq!(kept(Quota::Moves(1_000), s, &lengths), 6);
        assert_eq!(kept(Quota::Games(4), s, &lengths), 4);
        // Simulations: 800 per move without a playout cap; 4 moves = 3,200.
        assert_eq!(kept(Quota::Simulations(3_200), s, &lengths), 1);
        assert_eq!(kept(Quota::Simulations(3_201), s, &lengths), 2);
    }

    #[test]
    fn simulations_count_fast_searches_at_n_fast() {
        let s = SearchConfig {
            simulations: 50.into(),
            playout_cap: Some(PlayoutCap {
                p_full: 0.25,
                n_fast: 5,
            }),
            ..SearchConfig::default()
        };
        // Moves 0, 3, 6 fast (5 each), the other four full (50 each).
        assert_eq!(simulations_of(&record(7, 3), &s), 3 * 5 + 4 * 50);
        assert_eq!(simulations_of(&record(0, 3), &s), 0);
    }

    #[test]
    fn a_timed_quota_keeps_its_first_game_and_stops_when_closed() {
        let s = SearchConfig::default();
        let past = Instant::now();
        let mut t = Tally::new(Quota::Until(past), s);
        t.check_clock();
        assert!(!t.full(), "the first game is always taken");
        t.close();
        assert!(!t.full(), "closing before the first game does nothing");
        t.take(&record(3, 0));
        assert!(
            !t.full(),
            "a batch's games are taken whatever the clock says meanwhile"
        );
        t.check_clock();
        assert!(t.full());
        let later = Instant::now() + Duration::from_secs(3600);
        let mut t = Tally::new(Quota::Until(later), s);
        t.take(&record(3, 0));
        t.check_clock();
        assert!(!t.full());
        t.close();
        assert!(t.full());
    }

    #[test]
    fn batches_aim_at_the_games_still_needed() {
        let s = SearchConfig::default();
        let mut t = Tally::new(Quota::Moves(100), s);
        assert_eq!(t.next_batch(4, 256), 4);
        for _ in 0..4 {
            t.take(&record(10, 0));
        }
        // 60 moves left at 10 a game: 6 games.
        assert_eq!(t.next_batch(4, 256), 6);
        assert_eq!(t.next_batch(8, 256), 8);
        assert_eq!(t.next_batch(4, 5), 5);
        let t = Tally::new(Quota::Games(300), s);
        assert_eq!(t.next_batch(4, 256), 256);
        assert_eq!(
            Tally::new(Quota::Until(Instant::now()), s).next_batch(4, 256),
            1
        );
    }

    #[test]
    fn a_budget_is_exactly_one_in_range() {
        let b = |moves, simulations, seconds| {
            Budget {
                moves,
                simulations,
                seconds,
            }
            .kind()
        };
        assert_eq!(b(Some(5), None, None), Ok(BudgetKind::Moves(5)));
        assert_eq!(b(None, Some(9), None), Ok(BudgetKind::Simulations(9)));
        assert_eq!(b(None, None, Some(1.5)), Ok(BudgetKind::Seconds(1.5)));
        let e = b(None, None, None).unwrap_err();
        assert_eq!((e.key.as_str(), e.value.as_str()), ("budget", "{}"));
        let e = b(Some(5), None, Some(2.0)).unwrap_err();
        assert_eq!(e.value, "{moves = 5, seconds = 2}");
        assert!(e.allowed.contains("exactly one"), "{e}");
        assert_eq!(b(Some(0), None, None).unwrap_err().key, "budget.moves");
        let e = b(None, Some(MAX_BUDGET_COUNT as i64 + 1), None).unwrap_err();
        assert_eq!(e.key, "budget.simulations");
        assert_eq!(b(Some(-3), None, None).unwrap_err().value, "-3");
        for t in [0.0, -1.0, f64::NAN, f64::INFINITY, MAX_BUDGET_SECONDS * 2.0] {
            assert_eq!(b(None, None, Some(t)).unwrap_err().key, "budget.seconds");
        }
    }
}
