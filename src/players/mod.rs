//! Players: a spec the user writes, validated into [`PlayerSpec`] (the grammar: `spec.rs`),
//! then resolved for one game into a [`Player`] (shared, read-only: the solution, the
//! settings), from which each game makes its own [`Agent`] (owning search arenas and scratch
//! buffers). What a player needs from a game beyond its rules it asks of [`Abilities`].

use std::fmt;
use std::sync::Arc;

use crate::game::{Action, Turn};
use crate::game_record::SearchStats;
use crate::games::Abilities;
use crate::games::greedy::greedy_choice;
use crate::rng::{StreamRng, uniform_index};
use crate::search::{Evaluator, MctsSolver, Rollout, Search, SearchConfig, SearchError, Uniform};
use crate::solver::{LoadError, Solution, SolveError};
use crate::store::{Store, StoreError};

mod gtp;
mod spec;

pub use gtp::ScoreCheck;
pub use spec::{EvalSpec, GreedyMode, PLAYER_NAMES, PlayerSpec};

/// Errors of player specs, resolution and play.
#[derive(Debug, thiserror::Error)]
pub enum PlayerError {
    #[error("bad player `{spec}`: {reason}")]
    BadSpec { spec: String, reason: String },
    #[error("player `{player}` cannot play {variant}: {reason}")]
    Unsupported {
        player: String,
        variant: String,
        reason: String,
    },
    #[error(
        "no opening of {plies} random moves in {variant} that does not end the game ({draws} \
         draws all ended it): give fewer --openings plies"
    )]
    NoOpening {
        variant: String,
        plies: u32,
        draws: u32,
    },
    #[error("the optimal player has no value for {variant} position `{position}`")]
    Unsolved { variant: String, position: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Solve(#[from] SolveError),
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error(transparent)]
    Gtp(#[from] crate::gtp::GtpError),
}

impl From<LoadError> for PlayerError {
    fn from(e: LoadError) -> PlayerError {
        match e {
            LoadError::Store(e) => PlayerError::Store(e),
            LoadError::Solve(e) => PlayerError::Solve(e),
            LoadError::Unsolved { variant, position } => {
                PlayerError::Unsolved { variant, position }
            }
        }
    }
}

/// A player resolved for one game: shared and read-only, so one `Player` serves every game of
/// a parallel match; each game makes its own [`Agent`].
#[derive(Clone, Debug)]
pub struct Player<G: Abilities> {
    spec: PlayerSpec,
    solution: Option<Arc<Solution<G::Key>>>,
    model: Option<(Arc<dyn crate::learners::Model<G>>, SearchConfig)>,
}

impl<G: Abilities> fmt::Debug for dyn crate::learners::Model<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Model")
    }
}

impl<G: Abilities> Player<G> {
    /// Resolves `spec` for game `g`. The optimal player needs the store (to load or solve);
    /// the greedy players need a game with a greedy heuristic.
    pub fn resolve(
        spec: &PlayerSpec,
        g: &G,
        store: Option<&mut Store>,
    ) -> Result<Player<G>, PlayerError> {
        let unsupported = |reason: &str| PlayerError::Unsupported {
            player: spec.to_string(),
            variant: g.variant(),
            reason: reason.to_string(),
        };
        let mut model = None;
        let solution = match spec {
            PlayerSpec::Model {
                run,
                iteration,
                sims,
                ..
            } => {
                let store = store.ok_or_else(|| unsupported("a model player needs a store"))?;
                let (m, run_search) = crate::runs::load_model(g, store, run, *iteration)
                    .map_err(|e| unsupported(&e.to_string()))?;
                // The run's search knobs, as evaluation play: no root noise, most visited.
                let config = SearchConfig {
                    simulations: sims.unwrap_or(1).into(),
                    ..run_search.as_evaluation()
                };
                model = Some((m, config));
                None
            }
            PlayerSpec::Optimal if g.searches_exactly() => None,
            PlayerSpec::Optimal => {
                let store = store.ok_or_else(|| unsupported("the optimal player needs a store"))?;
                let solution = g.solution(store).ok_or_else(|| PlayerError::Unsupported {
                    player: "optimal".into(),
                    variant: g.variant(),
                    reason: "this variant is not solvable".into(),
                })??;
                Some(Arc::new(solution))
            }
            PlayerSpec::Mcts { config, .. } => {
                config.validate().map_err(|e| unsupported(&e.to_string()))?;
                None
            }
            PlayerSpec::Gtp { command } => {
                gtp::probe(g, command)?;
                None
            }
            PlayerSpec::Greedy(_) => {
                let s = g.initial_state();
                let mut probe = Vec::new();
                if !g.greedy_features(&s, &[], &mut probe) {
                    return Err(unsupported(&format!(
                        "the greedy players exist for {} only",
                        crate::games::families_with(crate::games::Ability::Greedy).join(" and ")
                    )));
                }
                None
            }
            _ => None,
        };
        Ok(Player {
            spec: spec.clone(),
            solution,
            model,
        })
    }

    /// A player from an already loaded solution (the optimal player) or any other spec but a
    /// model.
    pub fn with_solution(spec: PlayerSpec, solution: Option<Arc<Solution<G::Key>>>) -> Player<G> {
        Player {
            spec,
            solution,
            model: None,
        }
    }

    pub fn spec(&self) -> &PlayerSpec {
        &self.spec
    }

    /// A fresh agent for one game.
    pub fn agent(&self) -> Agent<G> {
        let kind = match &self.spec {
            PlayerSpec::Random => AgentKind::Random,
            PlayerSpec::Optimal => match &self.solution {
                Some(sol) => AgentKind::Optimal(sol.clone()),
                None => AgentKind::OptimalSearch,
            },
            PlayerSpec::Greedy(mode) => AgentKind::Greedy(*mode),
            PlayerSpec::Mcts { config, eval } => AgentKind::Mcts(
                // The config was validated when the spec was parsed.
                Box::new(Search::new(*config).unwrap_or_else(|_| {
                    Search::new(SearchConfig::evaluation(config.simulations.first().max(1)))
                        .expect("evaluation defaults are valid")
                })),
                match eval {
                    EvalSpec::Uniform => AgentEval::Uniform(Uniform),
                    EvalSpec::Rollout(n) => AgentEval::Rollout(Rollout::new(*n)),
                },
            ),
            PlayerSpec::MctsSolver(cfg) => AgentKind::MctsSolver(Box::new(MctsSolver::new(*cfg))),
            PlayerSpec::Model { sims, rules, .. } => match &self.model {
                Some((m, config)) => AgentKind::Model(
                    m.clone(),
                    *rules,
                    sims.map(|_| {
                        Box::new(Search::new(*config).unwrap_or_else(|_| {
                            Search::new(SearchConfig::evaluation(config.simulations.first()))
                                .expect("evaluation defaults are valid")
                        }))
                    }),
                ),
                None => AgentKind::Random,
            },
            PlayerSpec::Gtp { command } => AgentKind::Gtp(Box::new(gtp::GtpAgent::new(command))),
        };
        Agent {
            kind,
            actions: Vec::new(),
            features: Vec::new(),
        }
    }
}

pub use crate::play::Decision;

/// The leaf evaluator of an MCTS agent.
#[derive(Debug)]
pub(crate) enum AgentEval {
    Uniform(Uniform),
    Rollout(Rollout),
}

impl<G: Abilities> Evaluator<G> for AgentEval {
    #[inline]
    fn evaluate(
        &mut self,
        g: &G,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
        rng: &mut StreamRng,
    ) -> f64 {
        match self {
            AgentEval::Uniform(e) => Evaluator::<G>::evaluate(e, g, s, past, legal, priors, rng),
            AgentEval::Rollout(e) => e.evaluate(g, s, past, legal, priors, rng),
        }
    }
}

#[derive(Debug)]
enum AgentKind<G: Abilities> {
    Random,
    Optimal(Arc<Solution<G::Key>>),
    /// The optimal player by an exact search per position ([`Abilities::searches_exactly`]).
    OptimalSearch,
    Greedy(GreedyMode),
    Mcts(Box<Search<G>>, AgentEval),
    MctsSolver(Box<MctsSolver<G>>),
    /// A trained model: its greedy policy, or the search it guides.
    /// The model, whether its search runs over the rules (`tree=rules`), and the search.
    Model(
        Arc<dyn crate::learners::Model<G>>,
        bool,
        Option<Box<Search<G>>>,
    ),
    /// A GTP engine (a child process).
    Gtp(Box<gtp::GtpAgent<G>>),
}

/// One game's instance of a player: owns its search arenas and buffers.
#[derive(Debug)]
pub struct Agent<G: Abilities> {
    kind: AgentKind<G>,
    actions: Vec<Action>,
    features: Vec<(i32, i32)>,
}

impl<G: Abilities> Agent<G> {
    /// The decision in decision state `s`, `ply` plies into the game, whose earlier decision
    /// states are `past` (oldest first: a model whose input has history reads them);
    /// randomness from `rng`.
    pub fn decide(
        &mut self,
        g: &G,
        s: &G::State,
        past: &[G::State],
        ply: u32,
        rng: &mut StreamRng,
    ) -> Result<Decision, PlayerError> {
        let Turn::Player(_) = g.turn(s) else {
            return Err(SearchError::NotADecision("not a decision state").into());
        };
        let play = |action| Decision::Play {
            action,
            search: None,
        };
        match &mut self.kind {
            AgentKind::Random => {
                g.legal_actions(s, &mut self.actions);
                Ok(play(self.actions[uniform_index(rng, self.actions.len())]))
            }
            AgentKind::Optimal(sol) => {
                crate::play::optimal_decision(g, sol, s, rng).ok_or_else(|| PlayerError::Unsolved {
                    variant: g.variant(),
                    position: g.notation(s),
                })
            }
            AgentKind::OptimalSearch => {
                let unsolved = || PlayerError::Unsolved {
                    variant: g.variant(),
                    position: g.notation(s),
                };
                let values = g.exact_action_values(s).ok_or_else(unsolved)?;
                let best = values.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
                if best >= 1.0 - crate::solver::OPTIMAL_TOLERANCE {
                    return Ok(Decision::ClaimWin);
                }
                self.actions.clear();
                self.actions.extend(
                    values
                        .iter()
                        .filter(|x| x.1 >= best - crate::solver::OPTIMAL_TOLERANCE)
                        .map(|x| x.0),
                );
                Ok(play(self.actions[uniform_index(rng, self.actions.len())]))
            }
            AgentKind::Greedy(mode) => {
                g.legal_actions(s, &mut self.actions);
                g.greedy_features(s, &self.actions, &mut self.features);
                let i = greedy_choice(*mode, &self.features, rng);
                Ok(play(self.actions[i]))
            }
            AgentKind::Mcts(search, eval) => {
                Ok(Decision::searched(search.run(g, s, past, ply, eval, rng)?))
            }
            AgentKind::Model(model, _, None) => {
                g.legal_actions(s, &mut self.actions);
                Ok(play(model.greedy_action(g, s, past, &self.actions)))
            }
            AgentKind::Model(model, rules, Some(search)) => Ok(Decision::searched(model.search(
                g,
                search,
                (s, past),
                (ply, *rules),
                rng,
            )?)),
            AgentKind::Gtp(engine) => engine.decide(g, s),
            AgentKind::MctsSolver(m) => {
                let r = m.run(g, s, rng)?;
                Ok(Decision::Play {
                    action: r.action,
                    search: Some(SearchStats {
                        visits: r.visits,
                        target: None,
                        full: true,
                    }),
                })
            }
        }
    }
}

impl<G: Abilities> Agent<G> {
    /// Whether [`Agent::finish`] wants the game's final position (a GTP engine does).
    pub(crate) fn wants_final_position(&self) -> bool {
        matches!(self.kind, AgentKind::Gtp(_))
    }

    /// At the end of a game (final position `s`): a GTP engine is told the last move and its
    /// `final_score` is set beside tabula's ([`ScoreCheck`]); `None` for every other player.
    pub fn finish(&mut self, g: &G, s: &G::State) -> Result<Option<ScoreCheck>, PlayerError> {
        match &mut self.kind {
            AgentKind::Gtp(engine) => engine.finish(g, s),
            _ => Ok(None),
        }
    }
}
