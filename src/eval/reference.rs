//! Reference metrics of a learner on variants without an exact solution (docs/metrics.md,
//! "Reference metrics"):
//!
//! - **Against MCTS-Solver**, as Go-Exploit measures its networks (Trudeau and Bowling, AAMAS
//!   2023): the learner's search at the run's simulations (evaluation play: no root noise, the
//!   most visited move, every search full) against MCTS-Solver (random rollouts, proven
//!   values, [`crate::search::mcts_solver`]) at k times as many simulations, k in
//!   `solver_multipliers`; `solver_games` games per k, the learner first in even games. Game
//!   `n` against k at iteration i draws everything (both searches' draws) from the stream
//!   `solver-eval(i,k,n)` of the model seed. The area under the curve is the paper's: the sum
//!   of the win rates over iterations 1..i.
//! - **Against the deterministic greedy player** (Chinese Checkers), as Liu et al. measure
//!   their networks: the learner's search (evaluation play, at `greedy_simulations`, the
//!   paper's 180, or the run's simulations) against the greedy player (`games::greedy`),
//!   `greedy_games` games (the paper's 300), the learner first in even games; game `n` at
//!   iteration i draws from the stream `greedy-eval(i,n)` of the model seed. Wins, draws and
//!   the score (draws half), with its 95% interval.
//! - **Connect Four 7x6 test positions** (`tests/data/connect4/Test_L*_R*`, exact scores):
//!   value error mean |v_hat - v*| (v* 1, 0.5 or 0 by the sign of the score) and best-move
//!   accuracy (the policy's greedy move is value-preserving: its exact value equals the
//!   position's). The sets, their metrics and their optimal moves are the game's
//!   (`games::Abilities::reference_set`; Connect Four's come from its exact solver, once per
//!   process and set): this module names no game.
//!
//! Determinism: games run in parallel but their scores are reduced in game order; positions
//! are scored in file order. So every value is the same bits on any number of threads.

use serde::{Deserialize, Serialize};

use super::{MetricDef, MetricValues, metric};
use crate::error::SettingError;
use crate::game::{Action, Game, Player};
use crate::games::greedy::{GreedyMode, greedy_choice};
use crate::games::{Abilities, MetricText, REFERENCE_METRICS as SETS};
use crate::par;
use crate::play::seat_score;
use crate::rng::stream_fmt;
use crate::search::{Evaluator, MctsSolver, Search, SearchConfig, SearchError, SolverConfig};

/// The multipliers a run may name (each has its metrics declared).
pub(crate) const MULTIPLIERS: [u32; 4] = [1, 10, 100, 1000];

/// `[learner.network.reference]`: which reference metrics, and how many games / positions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReferenceSettings {
    /// Games against each MCTS-Solver strength (0: none).
    pub(crate) solver_games: u32,
    /// MCTS-Solver's simulations as multiples of the run's (each of 1, 10, 100, 1000).
    pub(crate) solver_multipliers: Vec<u32>,
    /// Connect Four 7x6 test sets (names `L3_R1`, `L2_R1`, `L2_R2`, `L1_R1`, `L1_R2`,
    /// `L1_R3`), each optionally `NAME:N`: that set's first N positions instead of
    /// `c4_positions` (begin-hard's optimal moves are booked only so far).
    pub(crate) c4_sets: Vec<String>,
    /// The first this many positions of each set (of 1000).
    pub c4_positions: u32,
    /// Also score the learner's search player on the Connect Four sets
    /// (`c4_search_best_move*`). Left out of the record when off (its default), so the
    /// settings of earlier runs hash as before.
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) c4_search: bool,
    /// Games against the deterministic greedy player (0: none; Liu et al. play 300). Left
    /// out of the record at 0, as is `greedy_simulations` when absent.
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) greedy_games: u32,
    /// The learner's simulations in those games (absent: the run's; Liu et al.: 180).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) greedy_simulations: Option<u32>,
}

fn is_false(x: &bool) -> bool {
    !*x
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

impl Default for ReferenceSettings {
    fn default() -> ReferenceSettings {
        ReferenceSettings {
            solver_games: 20,
            solver_multipliers: vec![1, 10, 100],
            c4_sets: vec!["L3_R1".into(), "L2_R1".into()],
            c4_positions: 1000,
            c4_search: false,
            greedy_games: 0,
            greedy_simulations: None,
        }
    }
}

/// A `c4_sets` entry's set name and its own count of positions (`NAME:N`; `None`: none given,
/// or not a number, which `validate` refuses).
fn split_set(entry: &str) -> (&str, Option<u32>) {
    match entry.split_once(':') {
        Some((name, n)) => (name, Some(n.parse().unwrap_or(0))),
        None => (entry, None),
    }
}

impl ReferenceSettings {
    /// The test sets to measure: each set's name and how many of its first positions.
    pub(crate) fn c4_sets(&self) -> impl Iterator<Item = (&str, usize)> {
        self.c4_sets.iter().map(|e| {
            let (name, n) = split_set(e);
            (name, n.unwrap_or(self.c4_positions) as usize)
        })
    }
}

/// A range error naming `learner.network.reference.KEY` (the table these settings are read
/// from).
fn bad(key: &str, value: impl ToString, allowed: &str) -> SettingError {
    SettingError::new(format!("learner.network.reference.{key}"), value, allowed)
}

impl ReferenceSettings {
    /// Checks every key (errors name `learner.network.reference.KEY`).
    pub(crate) fn validate(&self) -> Result<(), SettingError> {
        if self.solver_games > 100_000 {
            return Err(bad(
                "solver_games",
                self.solver_games,
                "an integer from 0 to 100000",
            ));
        }
        let m = &self.solver_multipliers;
        if m.iter().any(|k| !MULTIPLIERS.contains(k)) || m.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad(
                "solver_multipliers",
                format!("{m:?}"),
                "ascending distinct values among 1, 10, 100, 1000",
            ));
        }
        for (i, entry) in self.c4_sets.iter().enumerate() {
            let (name, n) = split_set(entry);
            let seen = || self.c4_sets[..i].iter().any(|e| split_set(e).0 == name);
            if !SETS.sets.contains(&name) || seen() {
                return Err(bad(
                    &format!("c4_sets[{i}]"),
                    entry,
                    &format!(
                        "distinct names among {}, each optionally NAME:N with N from 1 to 1000",
                        SETS.sets.join(", ")
                    ),
                ));
            }
            if n.is_some_and(|n| !(1..=1000).contains(&n)) || entry.ends_with(':') {
                return Err(bad(
                    &format!("c4_sets[{i}]"),
                    entry,
                    "NAME:N with N an integer from 1 to 1000",
                ));
            }
        }
        // The run's own bound on simulations (docs/limits.md).
        if self.greedy_games > 100_000 {
            return Err(bad(
                "greedy_games",
                self.greedy_games,
                "an integer from 0 to 100000",
            ));
        }
        if let Some(n) = self.greedy_simulations
            && !(1..=1_000_000).contains(&n)
        {
            return Err(bad(
                "greedy_simulations",
                n,
                "an integer from 1 to 1000000 (absent: the run's simulations)",
            ));
        }
        if self.c4_positions == 0 || self.c4_positions > 1000 {
            return Err(bad(
                "c4_positions",
                self.c4_positions,
                "an integer from 1 to 1000",
            ));
        }
        Ok(())
    }
}

/// The score against one MCTS-Solver strength.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SolverScore {
    pub(crate) multiplier: u32,
    pub games: u32,
    pub wins: u32,
    pub draws: u32,
    /// Mean score (win 1, draw 0.5, loss 0) and the half-width of its 95% interval.
    pub score: f64,
    pub ci95: f64,
    /// The sum of the scores over iterations 1..i (the paper's area under the curve).
    pub(crate) auc: Option<f64>,
}

/// The errors on one Connect Four test set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct C4SetScore {
    pub set: String,
    pub positions: u32,
    /// Mean |v_hat - v*| over the positions.
    pub(crate) value_error: f64,
    /// Positions whose greedy move is optimal.
    pub(crate) best_moves: u32,
}

/// The search player's best moves on one Connect Four test set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct C4SearchScore {
    pub set: String,
    pub positions: u32,
    /// Positions where the search's move is optimal.
    pub(crate) best_moves: u32,
}

/// The score against the deterministic greedy player.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GreedyScore {
    pub games: u32,
    pub wins: u32,
    pub draws: u32,
    /// Mean score (win 1, draw 0.5, loss 0) and the half-width of its 95% interval.
    pub score: f64,
    pub ci95: f64,
}

/// The reference metrics of one evaluation.
///
/// Stored as its fields in order, `c4_search` only when measured (as the last field of the
/// last field of `network-evaluation/v1`, like the reference metrics themselves): an
/// evaluation without it has the bytes it had before it existed, and reads back with it
/// empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReferenceEval {
    pub solver: Vec<SolverScore>,
    pub c4: Vec<C4SetScore>,
    pub c4_search: Vec<C4SearchScore>,
    /// Against the greedy player: the fourth field, written only when measured (the third
    /// then written even when empty).
    pub greedy: Option<GreedyScore>,
}

impl Serialize for ReferenceEval {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let greedy = usize::from(self.greedy.is_some());
        let third = usize::from(!self.c4_search.is_empty()).max(greedy);
        let mut t = s.serialize_tuple(2 + third + greedy)?;
        t.serialize_element(&self.solver)?;
        t.serialize_element(&self.c4)?;
        if third == 1 {
            t.serialize_element(&self.c4_search)?;
        }
        if let Some(g) = &self.greedy {
            t.serialize_element(g)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for ReferenceEval {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ReferenceEval, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ReferenceEval;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("reference metrics")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ReferenceEval, A::Error> {
                let missing = |i| serde::de::Error::invalid_length(i, &"2 to 4 fields");
                Ok(ReferenceEval {
                    solver: seq.next_element()?.ok_or_else(|| missing(0))?,
                    c4: seq.next_element()?.ok_or_else(|| missing(1))?,
                    // The bytes end here without the search player's scores: postcard
                    // reports the end of its input, read as "not measured".
                    c4_search: seq.next_element().ok().flatten().unwrap_or_default(),
                    greedy: seq.next_element().ok().flatten(),
                })
            }
        }
        d.deserialize_tuple(4, V)
    }
}

macro_rules! solver_defs {
    ($($k:literal),*) => {
        [$(
            MetricDef {
                name: concat!("wr_solver_", $k, "x"),
                description: concat!(
                    "mean score of the learner's search (the run's simulations, no noise, \
                     most visited move) against MCTS-Solver at ", $k, "x its simulations; \
                     unsolved variants"
                ),
            },
            MetricDef {
                name: concat!("wr_solver_", $k, "x_ci95"),
                description: concat!("half-width of the 95% interval of wr_solver_", $k, "x"),
            },
            MetricDef {
                name: concat!("auc_solver_", $k, "x"),
                description: concat!(
                    "area under the wr_solver_", $k, "x curve: its sum over iterations 1..i \
                     (Go-Exploit's AUC)"
                ),
            },
        )*]
    };
}

const SOLVER_DEFS: [MetricDef; 12] = solver_defs!("1", "10", "100", "1000");

/// The metrics against the greedy player.
pub(crate) const GREEDY_DEFS: [MetricDef; 4] = [
    MetricDef {
        name: "wr_greedy",
        description: "mean score (draws half) of the learner's search (no noise, most visited \
                      move) against the deterministic greedy player; Chinese Checkers",
    },
    MetricDef {
        name: "wr_greedy_ci95",
        description: "half-width of the 95% interval of wr_greedy",
    },
    MetricDef {
        name: "greedy_win_share",
        description: "share of the games against the greedy player the learner won",
    },
    MetricDef {
        name: "greedy_draw_share",
        description: "share of the games against the greedy player drawn (the move limit, \
                      the cycle rule)",
    },
];

/// The reference metrics in declaration order: per multiplier (1, 10, 100, 1000) the win
/// rate, its interval and its AUC; the reference sets' metrics as the game declares them
/// ([`crate::games::ReferenceMetrics`]: the errors over every chosen set's positions, then per
/// set; then the search player's best moves over every chosen set and per set); then the
/// games against the greedy player.
pub(crate) const REFERENCE_METRICS: [MetricDef; N_REFERENCE] = {
    let mut out = [MetricDef {
        name: "",
        description: "",
    }; N_REFERENCE];
    let mut i = 0;
    while i < SOLVER_DEFS.len() {
        out[i] = SOLVER_DEFS[i];
        i += 1;
    }
    i = copy_texts(&mut out, i, SETS.policy);
    i = copy_texts(&mut out, i, SETS.search);
    let mut j = 0;
    while j < GREEDY_DEFS.len() {
        out[i + j] = GREEDY_DEFS[j];
        j += 1;
    }
    out
};

/// How many reference metrics there are.
const N_REFERENCE: usize =
    SOLVER_DEFS.len() + SETS.policy.len() + SETS.search.len() + GREEDY_DEFS.len();

/// `texts` as metric definitions into `out` from `at`; returns the index after them.
const fn copy_texts<const N: usize>(
    out: &mut [MetricDef; N],
    at: usize,
    texts: &[MetricText],
) -> usize {
    let mut k = 0;
    while k < texts.len() {
        out[at + k] = MetricDef {
            name: texts[k].0,
            description: texts[k].1,
        };
        k += 1;
    }
    at + k
}

impl ReferenceEval {
    /// The values of [`REFERENCE_METRICS`], in order (`None` where not measured).
    pub fn values(r: Option<&ReferenceEval>) -> Vec<Option<f64>> {
        let mut out = Vec::with_capacity(REFERENCE_METRICS.len());
        for k in MULTIPLIERS {
            let s = r.and_then(|r| r.solver.iter().find(|s| s.multiplier == k));
            out.extend([s.map(|s| s.score), s.map(|s| s.ci95), s.and_then(|s| s.auc)]);
        }
        let c4 = r.map_or(&[][..], |r| &r.c4[..]);
        let n: u32 = c4.iter().map(|c| c.positions).sum();
        if n == 0 {
            out.extend([None, None]);
        } else {
            let err: f64 = c4
                .iter()
                .map(|c| c.value_error * f64::from(c.positions))
                .sum();
            let best: u32 = c4.iter().map(|c| c.best_moves).sum();
            out.extend([
                Some(err / f64::from(n)),
                Some(f64::from(best) / f64::from(n)),
            ]);
        }
        for set in SETS.sets {
            let c = c4.iter().find(|c| c.set == *set);
            out.extend([
                c.map(|c| c.value_error),
                c.map(|c| f64::from(c.best_moves) / f64::from(c.positions.max(1))),
            ]);
        }
        let searched = r.map_or(&[][..], |r| &r.c4_search[..]);
        let n: u32 = searched.iter().map(|c| c.positions).sum();
        let best: u32 = searched.iter().map(|c| c.best_moves).sum();
        out.push((n > 0).then(|| f64::from(best) / f64::from(n)));
        for set in SETS.sets {
            let c = searched.iter().find(|c| c.set == *set);
            out.push(c.map(|c| f64::from(c.best_moves) / f64::from(c.positions.max(1))));
        }
        let g = r.and_then(|r| r.greedy.as_ref());
        let share =
            |n: fn(&GreedyScore) -> u32| g.map(|g| f64::from(n(g)) / f64::from(g.games.max(1)));
        out.extend([
            g.map(|g| g.score),
            g.map(|g| g.ci95),
            share(|g| g.wins),
            share(|g| g.draws),
        ]);
        out
    }
}

/// The test-set errors of a model on the game's reference sets (Connect Four 7x6's; `None`
/// on a game without them): `model(scratch, state, legal)` returns the greedy move and the
/// value on [0, 1] (`scratch`: per-thread, made by `init`). Positions are scored in parallel,
/// their terms summed in file order, so the values are the same bits on any number of threads.
pub(crate) fn c4_scores<G: Abilities, S>(
    g: &G,
    settings: &ReferenceSettings,
    init: impl Fn() -> S + Sync + Send,
    model: impl Fn(&mut S, &G::State, &[Action]) -> (Action, f64) + Sync + Send,
) -> Option<Vec<C4SetScore>> {
    if settings.c4_sets.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for (name, positions) in settings.c4_sets() {
        // Validated names and a fixed file: an error here is a broken build, so the set is
        // skipped (its metrics stay empty) rather than failing the run.
        let Ok(tests) = g.reference_set(name, positions)? else {
            continue;
        };
        let terms: Vec<(f64, bool)> = par::map_init(
            tests.len(),
            1,
            || (init(), Vec::new()),
            |(scratch, legal), k| {
                let t = &tests[k];
                g.legal_actions(&t.state, legal);
                let (a, v) = model(scratch, &t.state, legal);
                ((v - t.value).abs(), t.best.contains(&a))
            },
        );
        let (mut err, mut best) = (0.0, 0u32);
        for (e, b) in terms {
            err += e;
            best += u32::from(b);
        }
        let n = tests.len() as u32;
        out.push(C4SetScore {
            set: name.to_string(),
            positions: n,
            value_error: err / f64::from(n.max(1)),
            best_moves: best,
        });
    }
    Some(out)
}

/// The search player's best moves on the game's reference sets (Connect Four 7x6's), when
/// `settings.c4_search` asks for them (empty otherwise, and on a game without sets): the
/// learner's search at the run's simulations as evaluation play ([`SearchConfig::as_evaluation`]),
/// its move optimal when it is among the position's value-preserving moves (AlphaZero.jl's
/// benchmark of its MCTS player). Position n of set SET at iteration i draws from the stream
/// `c4-search(i,SET,n)` of the model seed; positions run in parallel, counted in file order.
pub(crate) fn c4_search_scores<G: Abilities, E: Evaluator<G>>(
    g: &G,
    settings: &ReferenceSettings,
    search: &SearchConfig,
    seed: u64,
    iteration: u32,
    make_eval: impl Fn() -> E + Sync + Send,
) -> Vec<C4SearchScore> {
    // The run's simulations at this iteration (a progressive schedule moves them).
    let cfg = search.at_iteration(iteration).as_evaluation();
    let mut out = Vec::new();
    if !settings.c4_search {
        return out;
    }
    for (name, positions) in settings.c4_sets() {
        // As in `c4_scores`: a set that fails to load is skipped.
        let Some(Ok(tests)) = g.reference_set(name, positions) else {
            continue;
        };
        let best: Vec<bool> = par::map_init(
            tests.len(),
            1,
            || (Search::<G>::new(cfg).ok(), make_eval()),
            |(search, eval), n| {
                let Some(search) = search else {
                    return false;
                };
                let t = &tests[n];
                let mut rng = stream_fmt(seed, format_args!("c4-search({iteration},{name},{n})"));
                // The ply serves only `sample_moves`, and evaluation play never samples
                // (temperature 0).
                search
                    .run(g, &t.state, &[], 0, eval, &mut rng)
                    .is_ok_and(|r| t.best.contains(&r.action))
            },
        );
        out.push(C4SearchScore {
            set: name.to_string(),
            positions: best.len() as u32,
            best_moves: best.iter().filter(|b| **b).count() as u32,
        });
    }
    out
}

/// The scores against MCTS-Solver at every multiplier of `settings` after iteration
/// `iteration`; `make_eval` makes the learner's leaf evaluator (one per worker), `previous`
/// holds the last measured iteration's metric values (for the AUC, a sum over the measured
/// iterations: iteration i-1's unless `[eval] every` skips some; `None` at iteration 1).
pub(crate) fn solver_scores<G: Game, E: Evaluator<G>>(
    g: &G,
    settings: &ReferenceSettings,
    search: &SearchConfig,
    seed: u64,
    iteration: u32,
    previous: Option<&MetricValues>,
    make_eval: impl Fn() -> E + Sync + Send,
) -> Vec<SolverScore> {
    // The learner's search at this iteration's simulations (a schedule resolved).
    let cfg = search.at_iteration(iteration).as_evaluation();
    let mut out = Vec::new();
    if settings.solver_games == 0 {
        return out;
    }
    for &k in &settings.solver_multipliers {
        let solver = SolverConfig {
            simulations: cfg.simulations.first().saturating_mul(k),
            ..SolverConfig::default()
        };
        let scores: Vec<f64> = par::map_init(
            settings.solver_games as usize,
            1,
            || {
                (
                    Search::<G>::new(cfg).ok(),
                    MctsSolver::<G>::new(solver),
                    make_eval(),
                )
            },
            |(search, mcts, eval), n| {
                let Some(search) = search else {
                    return 0.0;
                };
                solver_game(g, search, eval, mcts, seed, iteration, k, n as u32)
            },
        );
        let w = super::WinRate::of_scores(&scores);
        let name = format!("auc_solver_{k}x");
        let before = if iteration >= 2 {
            previous.and_then(|p| metric(p, &name)).unwrap_or(0.0)
        } else {
            0.0
        };
        out.push(SolverScore {
            multiplier: k,
            games: w.games,
            wins: w.wins,
            draws: w.draws,
            score: w.score,
            ci95: w.ci95,
            auc: (iteration >= 1).then_some(before + w.score),
        });
    }
    out
}

/// The score against the deterministic greedy player after iteration `iteration` (`None`
/// when `greedy_games` is 0 or the game has no greedy heuristic); `make_eval` makes the
/// learner's leaf evaluator (one per worker). Scores are reduced in game order.
pub(crate) fn greedy_scores<G: Abilities, E: Evaluator<G>>(
    g: &G,
    settings: &ReferenceSettings,
    search: &SearchConfig,
    seed: u64,
    iteration: u32,
    make_eval: impl Fn() -> E + Sync + Send,
) -> Option<GreedyScore> {
    let state = g.initial_state();
    if settings.greedy_games == 0 || !g.greedy_features(&state, &[], &mut Vec::new()) {
        return None;
    }
    let mut cfg = search.at_iteration(iteration).as_evaluation();
    if let Some(n) = settings.greedy_simulations {
        cfg.simulations = n.into();
    }
    let scores: Vec<f64> = par::map_init(
        settings.greedy_games as usize,
        1,
        || (Search::<G>::new(cfg).ok(), make_eval()),
        |(search, eval), n| match search {
            Some(search) => greedy_game(g, search, eval, seed, iteration, n as u32),
            None => 0.0,
        },
    );
    Some(greedy_score(&scores))
}

/// The score of games against the greedy player, from each game's score in game order.
fn greedy_score(scores: &[f64]) -> GreedyScore {
    let w = super::WinRate::of_scores(scores);
    GreedyScore {
        games: w.games,
        wins: w.wins,
        draws: w.draws,
        score: w.score,
        ci95: w.ci95,
    }
}

/// A model's greedy policy (no search: `choose(state, legal)`) against the deterministic
/// greedy player, `games` games, the model first in even games; game `n` at iteration i
/// draws from the stream `greedy-eval(i,n)` of `seed`, as [`greedy_scores`] (Q-learning's
/// reference metric). `None` for no games or a game without the greedy player.
pub(crate) fn greedy_policy_score<G: Abilities>(
    g: &G,
    games: u32,
    seed: u64,
    iteration: u32,
    choose: impl Fn(&G::State, &[G::State], &[Action]) -> Action + Sync,
) -> Option<GreedyScore> {
    if games == 0 || !g.greedy_features(&g.initial_state(), &[], &mut Vec::new()) {
        return None;
    }
    let scores: Vec<f64> = par::map(games as usize, |n| {
        let mut rng = stream_fmt(seed, format_args!("greedy-eval({iteration},{n})"));
        let seat = Player::from_index(n % 2);
        let (mut legal, mut features) = (Vec::new(), Vec::new());
        seat_score(g, &mut rng, seat, |s, past, p, _, rng| {
            g.legal_actions(s, &mut legal);
            if p == seat {
                return Ok::<_, SearchError>(choose(s, past, &legal));
            }
            g.greedy_features(s, &legal, &mut features);
            Ok(legal[greedy_choice(GreedyMode::Deterministic, &features, rng)])
        })
    });
    Some(greedy_score(&scores))
}

/// One game of the learner's search against the deterministic greedy player; returns the
/// learner's score (a search error, impossible from a decision state, scores 0).
fn greedy_game<G: Abilities, E: Evaluator<G>>(
    g: &G,
    search: &mut Search<G>,
    eval: &mut E,
    seed: u64,
    iteration: u32,
    n: u32,
) -> f64 {
    let mut rng = stream_fmt(seed, format_args!("greedy-eval({iteration},{n})"));
    // First in even games.
    let seat = Player::from_index(n as usize % 2);
    let (mut legal, mut features) = (Vec::new(), Vec::new());
    seat_score(g, &mut rng, seat, |s, past, p, ply, rng| {
        if p == seat {
            return Ok::<_, SearchError>(search.run(g, s, past, ply, eval, rng)?.action);
        }
        g.legal_actions(s, &mut legal);
        g.greedy_features(s, &legal, &mut features);
        Ok(legal[greedy_choice(GreedyMode::Deterministic, &features, rng)])
    })
}

/// One game of the learner's search against MCTS-Solver; returns the learner's score (a
/// search error, impossible from a decision state, scores 0).
#[allow(clippy::too_many_arguments)]
fn solver_game<G: Game, E: Evaluator<G>>(
    g: &G,
    search: &mut Search<G>,
    eval: &mut E,
    mcts: &mut MctsSolver<G>,
    seed: u64,
    iteration: u32,
    k: u32,
    n: u32,
) -> f64 {
    let mut rng = stream_fmt(seed, format_args!("solver-eval({iteration},{k},{n})"));
    // First in even games.
    let seat = Player::from_index(n as usize % 2);
    seat_score(g, &mut rng, seat, |s, past, p, ply, rng| {
        Ok::<_, SearchError>(match p == seat {
            true => search.run(g, s, past, ply, eval, rng)?.action,
            false => mcts.run(g, s, rng)?.action,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Uniform;

    #[test]
    fn metric_names_are_distinct_and_values_line_up() {
        let mut names: Vec<&str> = REFERENCE_METRICS.iter().map(|d| d.name).collect();
        assert!(names.iter().all(|n| !n.is_empty()));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), REFERENCE_METRICS.len());
        assert_eq!(ReferenceEval::values(None).len(), REFERENCE_METRICS.len());
        assert_eq!(REFERENCE_METRICS[3].name, "wr_solver_10x");
        assert_eq!(REFERENCE_METRICS[5].name, "auc_solver_10x");
        assert_eq!(REFERENCE_METRICS[14].name, "c4_value_error_l3_r1");
        assert_eq!(REFERENCE_METRICS[26].name, "c4_search_best_move");
        assert_eq!(REFERENCE_METRICS[27].name, "c4_search_best_move_l3_r1");
        assert_eq!(REFERENCE_METRICS[32].name, "c4_search_best_move_l1_r3");
        assert_eq!(REFERENCE_METRICS[33].name, "wr_greedy");
    }

    /// A set's own count (`NAME:N`) takes that many of its positions, the others
    /// `c4_positions`; the scores name the set alone.
    #[test]
    fn a_set_may_name_its_own_count() {
        let g = crate::games::ConnectFour::new(7, 6).unwrap();
        let s = ReferenceSettings {
            c4_sets: vec!["L3_R1".into(), "L2_R1:7".into()],
            c4_positions: 12,
            ..ReferenceSettings::default()
        };
        assert!(s.validate().is_ok());
        let scores = c4_scores(&g, &s, || (), |_, _, legal| (legal[0], 0.5)).unwrap();
        let got: Vec<(&str, u32)> = scores
            .iter()
            .map(|c| (c.set.as_str(), c.positions))
            .collect();
        assert_eq!(got, [("L3_R1", 12), ("L2_R1", 7)]);
    }

    /// The test sets scored in parallel give the same bits at any thread count as one after
    /// another in file order (each position's terms summed in that order).
    #[test]
    fn c4_scores_do_not_depend_on_threads() {
        let g = crate::games::ConnectFour::new(7, 6).unwrap();
        let s = ReferenceSettings {
            c4_sets: vec!["L3_R1".into(), "L2_R1".into()],
            c4_positions: 200,
            ..ReferenceSettings::default()
        };
        // A model whose values differ from position to position, so the order of the sum
        // shows in the bits.
        let model =
            |_: &mut (), st: &<crate::games::ConnectFour as Game>::State, legal: &[Action]| {
                let h = format!("{st:?}")
                    .bytes()
                    .fold(7u64, |h, b| h.wrapping_mul(31) ^ u64::from(b));
                (legal[h as usize % legal.len()], (h % 1000) as f64 / 999.0)
            };
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| c4_scores(&g, &s, || (), model).unwrap())
        };
        let one = run(1);
        // By hand: the terms in file order.
        let tests = g.reference_set("L3_R1", 200).unwrap().unwrap();
        let (mut err, mut legal) = (0.0, Vec::new());
        for t in tests.iter() {
            g.legal_actions(&t.state, &mut legal);
            err += (model(&mut (), &t.state, &legal).1 - t.value).abs();
        }
        assert_eq!(one[0].value_error.to_bits(), (err / 200.0).to_bits());
        for threads in [2, 3] {
            let other = run(threads);
            for (a, b) in one.iter().zip(&other) {
                assert_eq!(
                    a.value_error.to_bits(),
                    b.value_error.to_bits(),
                    "{threads}"
                );
                assert_eq!(a.best_moves, b.best_moves, "{threads}");
            }
        }
    }

    /// The search player's benchmark: off by default (and then out of the settings record);
    /// on, a strong search finds the optimal move in the end-game set's positions, a
    /// one-simulation search far less often; the same on 1 and 2 threads.
    #[test]
    fn search_player_best_moves() {
        let g = crate::games::ConnectFour::new(7, 6).unwrap();
        let off = ReferenceSettings {
            c4_sets: vec!["L3_R1".into()],
            c4_positions: 30,
            ..ReferenceSettings::default()
        };
        let json = serde_json::to_string(&off).unwrap();
        assert!(!json.contains("c4_search"), "{json}");
        let search = |sims| SearchConfig {
            simulations: crate::search::Simulations::fixed(sims),
            ..SearchConfig::default()
        };
        let rollout = || crate::search::Rollout::new(4);
        assert!(c4_search_scores(&g, &off, &search(200), 1, 2, rollout).is_empty());
        let on = ReferenceSettings {
            c4_search: true,
            ..off
        };
        assert!(
            serde_json::to_string(&on)
                .unwrap()
                .contains("\"c4_search\":true")
        );
        let run = |threads: usize, sims: u32| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| c4_search_scores(&g, &on, &search(sims), 1, 2, rollout))
        };
        let strong = run(1, 400);
        assert_eq!(strong, run(2, 400));
        assert_eq!(strong.len(), 1);
        assert_eq!((strong[0].set.as_str(), strong[0].positions), ("L3_R1", 30));
        let weak = run(2, 1);
        assert!(
            strong[0].best_moves >= 27 && weak[0].best_moves + 5 <= strong[0].best_moves,
            "{strong:?} {weak:?}"
        );
        let values = ReferenceEval::values(Some(&ReferenceEval {
            c4_search: strong.clone(),
            ..ReferenceEval::default()
        }));
        let share = f64::from(strong[0].best_moves) / 30.0;
        assert_eq!(values[26], Some(share));
        assert_eq!(values[27], Some(share));
        assert_eq!(values[28], None);
    }

    /// Solver games are a function of the named streams: the same on 1 and 2 threads.
    #[test]
    fn solver_scores_do_not_depend_on_threads() {
        let g = crate::games::ConnectFour::new(5, 4).unwrap();
        let settings = ReferenceSettings {
            solver_games: 6,
            solver_multipliers: vec![1, 10],
            ..ReferenceSettings::default()
        };
        let search = SearchConfig {
            simulations: 8.into(),
            ..SearchConfig::default()
        };
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| solver_scores(&g, &settings, &search, 3, 2, None, || Uniform))
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one.len(), 2);
        assert!(
            one.iter().all(|s| s.games == 6 && s.auc == Some(s.score)),
            "{one:?}"
        );
        let prev: MetricValues = vec![("auc_solver_1x", Some(2.0))];
        let later = solver_scores(&g, &settings, &search, 3, 2, Some(&prev), || Uniform);
        assert_eq!(later[0].auc, Some(2.0 + later[0].score));
    }

    /// Games against the greedy player: off at 0 (and out of the settings record), nothing on
    /// a game without a greedy player, the same on 1 and 2 threads, values in place, and the
    /// record's fourth field read back as written while records without it keep their bytes.
    #[test]
    fn greedy_scores_play_the_greedy_player() {
        use crate::games::checkers::{Checkers, WinRule};
        let g = Checkers::new(5, 3, WinRule::AllOwn, 60).unwrap();
        let off = ReferenceSettings::default();
        let json = serde_json::to_string(&off).unwrap();
        assert!(!json.contains("greedy"), "{json}");
        let search = SearchConfig {
            simulations: 8.into(),
            ..SearchConfig::default()
        };
        let rollout = || crate::search::Rollout::new(1);
        assert_eq!(greedy_scores(&g, &off, &search, 1, 2, rollout), None);
        let on = ReferenceSettings {
            greedy_games: 6,
            greedy_simulations: Some(16),
            ..off
        };
        let c4 = crate::games::ConnectFour::new(5, 4).unwrap();
        assert_eq!(greedy_scores(&c4, &on, &search, 1, 2, rollout), None);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| greedy_scores(&g, &on, &search, 1, 2, rollout))
        };
        let one = run(1).unwrap();
        assert_eq!(Some(one.clone()), run(2));
        assert_eq!(one.games, 6);
        assert!(one.wins + one.draws <= 6 && (0.0..=1.0).contains(&one.score));
        let r = ReferenceEval {
            greedy: Some(one.clone()),
            ..ReferenceEval::default()
        };
        let values = ReferenceEval::values(Some(&r));
        let at = |name| {
            REFERENCE_METRICS
                .iter()
                .position(|d| d.name == name)
                .unwrap()
        };
        assert_eq!(values[at("wr_greedy")], Some(one.score));
        assert_eq!(
            values[at("greedy_draw_share")],
            Some(f64::from(one.draws) / 6.0)
        );
        let bytes = postcard::to_stdvec(&r).unwrap();
        assert_eq!(postcard::from_bytes::<ReferenceEval>(&bytes).unwrap(), r);
        let none = ReferenceEval::default();
        let two = postcard::to_stdvec(&(&none.solver, &none.c4)).unwrap();
        assert_eq!(postcard::to_stdvec(&none).unwrap(), two);
        assert!(bytes.starts_with(&two));
    }

    #[test]
    fn bad_settings_name_the_key() {
        let ok = ReferenceSettings::default();
        assert!(ok.validate().is_ok());
        let cases = [
            (
                ReferenceSettings {
                    solver_multipliers: vec![1, 5],
                    ..ok.clone()
                },
                "solver_multipliers",
            ),
            (
                ReferenceSettings {
                    c4_sets: vec!["L1_R1".into(), "L1_R1".into()],
                    ..ok.clone()
                },
                "c4_sets[1]",
            ),
            (
                ReferenceSettings {
                    c4_sets: vec!["L1_R1:20".into(), "L1_R1".into()],
                    ..ok.clone()
                },
                "c4_sets[1]",
            ),
            (
                ReferenceSettings {
                    c4_sets: vec!["L1_R3:0".into()],
                    ..ok.clone()
                },
                "c4_sets[0]",
            ),
            (
                ReferenceSettings {
                    c4_sets: vec!["L1_R3:x".into()],
                    ..ok.clone()
                },
                "c4_sets[0]",
            ),
            (
                ReferenceSettings {
                    c4_sets: vec!["L1_R3:1001".into()],
                    ..ok.clone()
                },
                "c4_sets[0]",
            ),
            (
                ReferenceSettings {
                    c4_positions: 0,
                    ..ok.clone()
                },
                "c4_positions",
            ),
        ];
        for (s, key) in cases {
            let e = s.validate().unwrap_err().to_string();
            assert!(
                e.contains(&format!("learner.network.reference.{key}")),
                "{e}"
            );
        }
    }
}
