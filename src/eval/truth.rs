//! Measuring a model against the exact solution (docs/metrics.md): [`Truth`] (the solution and
//! the test positions with their solved values), [`WinRate`] (WR_p: a player without search
//! against the optimal player, half the games as first player; game g of iteration i draws
//! everything from the stream `eval(i,g)`; the model sits first in even games) and the test
//! errors ERR_p (over S_test, the mean of sum_a p_a (v*_best - v*_a), values on the [0, 1]
//! scale) and MAE_v (the mean of |v*_s - v_s|). Each learner measures its own model through
//! these (the tabular one in `learners::tabular::metrics`).
//!
//! Every float reduction runs in a fixed order (per game or per position, then summed
//! sequentially), so the metrics are bit-identical on any number of threads.

use std::sync::Arc;

use crate::par;
use serde::{Deserialize, Serialize};

use crate::game::{Action, ChanceOutcome, Game, Player};
use crate::play::{Decision, optimal_decision};
use crate::rng::{GameSlot, uniform_index};
use crate::solver::{Solution, action_values, to_unit};

/// The table player's score against the optimal player.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WinRate {
    pub games: u32,
    /// Wins, draws and losses of the table player.
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// Mean score (win 1, draw 0.5).
    pub score: f64,
    /// Half-width of the 95% confidence interval (normal approximation).
    pub ci95: f64,
}

impl WinRate {
    /// The summary of per-game scores (win 1, draw 0.5, loss 0), in game order.
    pub(crate) fn of_scores(scores: &[f64]) -> WinRate {
        let games = scores.len() as u32;
        let n = f64::from(games.max(1));
        let total: f64 = scores.iter().sum();
        let mean = total / n;
        let var = if games > 1 {
            scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        let count = |x: f64| scores.iter().filter(|&&s| s == x).count() as u32;
        WinRate {
            games,
            wins: count(1.0),
            draws: count(0.5),
            losses: count(0.0),
            score: mean,
            ci95: 1.96 * (var / n).sqrt(),
        }
    }

    /// The metric values `wr_p`, `wr_p_ci95`, `wr_p_games`, `wr_p_wins`, `wr_p_draws`,
    /// `wr_p_losses` of a WR_p measurement (`None`: not measured).
    pub fn values(w: Option<&WinRate>) -> [Option<f64>; 6] {
        [
            w.map(|w| w.score),
            w.map(|w| w.ci95),
            w.map(|w| f64::from(w.games)),
            w.map(|w| f64::from(w.wins)),
            w.map(|w| f64::from(w.draws)),
            w.map(|w| f64::from(w.losses)),
        ]
    }
}

/// A solved position with its values on the [0, 1] scale.
#[derive(Clone, Debug)]
pub(crate) struct Solved {
    /// The legal actions, ascending.
    pub(crate) legal: Vec<Action>,
    /// v*_a of each legal action.
    action_values: Vec<f64>,
    best: f64,
    value: f64,
}

impl Solved {
    pub(crate) fn of<G: Game>(g: &G, sol: &Solution<G::Key>, s: &G::State) -> Option<Solved> {
        let av = action_values(g, sol, s)?;
        let value = to_unit(sol.value_of_key(&g.key(s))?);
        let legal: Vec<Action> = av.iter().map(|x| x.0).collect();
        let action_values: Vec<f64> = av.iter().map(|x| to_unit(x.1)).collect();
        let best = action_values
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        Some(Solved {
            legal,
            action_values,
            best,
            value,
        })
    }

    /// (ERR_p, |v* - v|) of a table row.
    /// ERR_p and the value error of a model at this position: `priors` over
    /// [`Solved::legal`] (in that order) and its value `v` on the [0, 1] scale.
    pub(crate) fn errors(&self, priors: &[f64], v: f64) -> (f64, f64) {
        let err: f64 = priors
            .iter()
            .zip(&self.action_values)
            .map(|(p, v)| p * (self.best - v))
            .sum();
        (err, (self.value - v).abs())
    }
}

/// What the metrics measure against: the exact solution and the test positions.
pub struct Truth<G: Game> {
    pub solution: Arc<Solution<G::Key>>,
    test: Vec<(G::Key, Solved)>,
}

impl<G: Game> std::fmt::Debug for Truth<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Truth")
            .field("positions", &self.solution.len())
            .field("test_positions", &self.test.len())
            .finish()
    }
}

impl<G: Game> Truth<G> {
    /// Prepares S_test (positions missing from the solution are an error naming them).
    pub fn new(
        g: &G,
        solution: Arc<Solution<G::Key>>,
        test_positions: &[G::State],
    ) -> Result<Truth<G>, String> {
        let test = test_positions
            .iter()
            .map(|s| {
                Solved::of(g, &solution, s)
                    .map(|v| (g.key(s), v))
                    .ok_or_else(|| format!("test position {} has no solved value", g.notation(s)))
            })
            .collect::<Result<_, _>>()?;
        Ok(Truth { solution, test })
    }

    pub fn test_positions(&self) -> usize {
        self.test.len()
    }

    /// The test positions with their solved values, in order.
    pub(crate) fn tests(&self) -> &[(G::Key, Solved)] {
        &self.test
    }
}

impl<G: Game> Truth<G> {
    /// The test positions S_test, in order (those whose keys give a state).
    pub(crate) fn test_states(&self, g: &G) -> Vec<G::State> {
        self.test
            .iter()
            .filter_map(|(key, _)| g.state_from_key(*key).ok())
            .collect()
    }

    /// ERR_p and MAE_v over S_test of any model: `model(s, legal, priors)` fills the priors
    /// over the legal actions of test position `s` and returns its value on the [0, 1] scale.
    /// Positions in S_test order, summed in that order.
    pub(crate) fn test_errors(
        &self,
        g: &G,
        mut model: impl FnMut(&G::State, &[Action], &mut [f64]) -> f64,
    ) -> (f64, f64) {
        let (mut err, mut mae) = (0.0, 0.0);
        let mut priors = Vec::new();
        for (key, solved) in &self.test {
            let Ok(s) = g.state_from_key(*key) else {
                continue;
            };
            priors.clear();
            priors.resize(solved.legal.len(), 0.0);
            let v = model(&s, &solved.legal, &mut priors);
            let (e, a) = solved.errors(&priors, v);
            err += e;
            mae += a;
        }
        let n = self.test.len().max(1) as f64;
        (err / n, mae / n)
    }
}

/// Which metrics to compute.
#[derive(Copy, Clone, Debug)]
pub struct MetricsPlan {
    /// Games of WR_p (0: none).
    pub wr_p_games: u32,
    /// ERR_p and MAE_v (on S_test and on updated positions).
    pub errors: bool,
}

/// WR_p of any player without search: `choose(state, s, legal)` picks its move (`state`:
/// per-thread scratch made by `init`); game g draws from the stream `eval(i,g)` of `seed`.
pub fn win_rate_of<G: Game, S>(
    g: &G,
    truth: &Truth<G>,
    seed: u64,
    iteration: u32,
    games: u32,
    init: impl Fn() -> S + Sync + Send,
    choose: impl Fn(&mut S, &G::State, &[G::State], &[Action]) -> Action + Sync + Send,
) -> WinRate {
    let scores: Vec<f64> = par::map_init(
        games as usize,
        1,
        || (init(), Vec::new(), Vec::new()),
        |(state, actions, outcomes), i| {
            let mut pick =
                |s: &G::State, past: &[G::State], legal: &[Action]| choose(state, s, past, legal);
            let slot = GameSlot::new(seed, iteration, i as u32);
            eval_game(g, &mut pick, &truth.solution, slot, actions, outcomes)
        },
    );
    WinRate::of_scores(&scores)
}

/// The evaluated player's move at a state, given the game's past and the legal actions.
type Pick<'a, S> = dyn FnMut(&S, &[S], &[Action]) -> Action + 'a;

/// One evaluation game (game `slot.game` of the evaluation at `slot.iteration`); returns the
/// player's score.
fn eval_game<G: Game>(
    g: &G,
    pick: &mut Pick<'_, G::State>,
    sol: &Solution<G::Key>,
    slot: GameSlot,
    actions: &mut Vec<Action>,
    outcomes: &mut Vec<ChanceOutcome>,
) -> f64 {
    let index = slot.game;
    let mut rng = slot.stream("eval");
    // First in even games.
    let table_seat = Player::from_index(index as usize % 2);
    let end = crate::play::play_loop(
        g,
        g.initial_state(),
        &mut rng,
        outcomes,
        None,
        |s, past, p, _, rng| -> Result<Decision, std::convert::Infallible> {
            if p == table_seat {
                g.legal_actions(s, actions);
                let action = pick(s, past, actions);
                return Ok(Decision::Play {
                    action,
                    search: None,
                });
            }
            Ok(optimal_decision(g, sol, s, rng).unwrap_or_else(|| {
                // Unreachable for a complete solution; play on rather than panic.
                g.legal_actions(s, actions);
                Decision::Play {
                    action: actions[uniform_index(rng, actions.len())],
                    search: None,
                }
            }))
        },
    );
    match end {
        Ok(end) => end.result().score(table_seat),
        Err(never) => match never {},
    }
}
