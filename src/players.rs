//! Players: a spec the user writes, validated into [`PlayerSpec`], then resolved for one game
//! into a [`Player`] (shared, read-only: the solution, the settings), from which each game
//! makes its own [`Agent`] (owning search arenas and scratch buffers).
//!
//! Spec syntax: `name[:key=value,...]`.
//! - `random`: uniform over the legal actions.
//! - `optimal`: the optimal player of docs/solver.md: declared the winner at once in a position
//!   of value 1, otherwise uniform among the actions within 1e-9 of the best. Needs a
//!   solvable variant; the solution is loaded from the store (solved and saved first if
//!   absent).
//! - `greedy[:mode=deterministic|stochastic]` (Chinese Checkers, docs/games.md): deterministic:
//!   largest forward gain Psi, ties toward the rearmost checker, then uniformly at random;
//!   stochastic: proportional to Psi over the moves with Psi > 0. With no forward move both
//!   take a move of smallest |Psi| (uniformly among those). `greedy-stochastic` is short for
//!   `greedy:mode=stochastic`.
//! - `mcts[:...]`: PUCT MCTS ([`crate::search::puct`]) for evaluation play: no root noise and
//!   the most visited move unless told otherwise. Keys: `sims` (800), `c` (c_puct, 1),
//!   `init` (loss|draw|win|first, loss), `alpha` (1.5), `eps` (0), `tau` (0), `sample_moves`
//!   (all|N, all), `eval` (rollout|uniform, rollout), `rollouts` (playouts per leaf, 1),
//!   `p_full` and `n_fast` (playout cap), `forced` (k of forced playouts), `prune`
//!   (true|false).
//! - `mcts-solver[:sims=N,c=X]`: MCTS-Solver ([`crate::search::mcts_solver`]), `sims` 1000,
//!   `c` 1.
//!
//! The canonical text of a spec ([`PlayerSpec`]'s `Display`) spells out every key, so a
//! recorded game re-plays with the same settings even if defaults change.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::game::{Action, Game, Turn};
use crate::games::{Cdc, Cdc4x8, Checkers, ConnectFour, Ewn};
use crate::record::SearchStats;
use crate::rng::{StreamRng, uniform_index};
use crate::search::{
    Evaluator, ForcedPlayouts, InitQ, MctsSolver, PlayoutCap, Rollout, Search, SearchConfig,
    SearchError, SolverConfig, Uniform,
};
use crate::solver::{Solution, Solvable, SolveError};
use crate::store::{Store, StoreError};

/// Every player name, for error messages.
pub const PLAYER_NAMES: &str =
    "random, optimal, greedy, greedy-stochastic, mcts, mcts-solver, model:RUN@I[,sims=N]";

const MCTS_KEYS: &str =
    "sims, c, init, alpha, eps, tau, sample_moves, eval, rollouts, p_full, n_fast, forced, prune";

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
    #[error("the optimal player has no value for {variant} position `{position}`")]
    Unsolved { variant: String, position: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Solve(#[from] SolveError),
    #[error(transparent)]
    Search(#[from] SearchError),
}

/// The leaf evaluator of an MCTS player.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EvalSpec {
    Uniform,
    /// Random playouts per leaf.
    Rollout(u32),
}

/// Greedy player flavours (Chinese Checkers).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GreedyMode {
    Deterministic,
    Stochastic,
}

/// A validated player spec, not yet tied to a game.
#[derive(Clone, Debug, PartialEq)]
pub enum PlayerSpec {
    Random,
    Optimal,
    Greedy(GreedyMode),
    Mcts {
        config: SearchConfig,
        eval: EvalSpec,
    },
    MctsSolver(SolverConfig),
    /// A trained model from the store: run (id, name or hash prefix), iteration, and the
    /// simulations of a PUCT search it guides (`None`: its greedy policy, no search).
    Model {
        run: String,
        iteration: u32,
        sims: Option<u32>,
    },
}

impl PlayerSpec {
    /// The MCTS player's defaults: evaluation play (no noise, most visited), 800 simulations,
    /// one random rollout per leaf.
    pub fn mcts_default() -> PlayerSpec {
        PlayerSpec::Mcts {
            config: SearchConfig::evaluation(800),
            eval: EvalSpec::Rollout(1),
        }
    }
}

fn bad(spec: &str, reason: impl Into<String>) -> PlayerError {
    PlayerError::BadSpec {
        spec: spec.to_string(),
        reason: reason.into(),
    }
}

fn num<T: FromStr>(spec: &str, key: &str, v: &str, allowed: &str) -> Result<T, PlayerError> {
    v.parse().map_err(|_| {
        bad(
            spec,
            format!("{key}={v} is not allowed; allowed: {allowed}"),
        )
    })
}

impl FromStr for PlayerSpec {
    type Err = PlayerError;

    fn from_str(text: &str) -> Result<PlayerSpec, PlayerError> {
        let text = text.trim();
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n.trim().to_ascii_lowercase(), r.trim()),
            None => (text.to_ascii_lowercase(), ""),
        };
        if name == "model" {
            // model:RUN@I[,sims=N]: the first comma-separated part is RUN@I.
            let (head, rest) = match rest.split_once(',') {
                Some((h, r)) => (h.trim(), r),
                None => (rest, ""),
            };
            let Some((run, it)) = head.rsplit_once('@') else {
                return Err(bad(text, "give model:RUN@I (a run and an iteration)"));
            };
            let iteration = num(text, "@", it.trim(), "an iteration number >= 0")?;
            let mut sims = None;
            for part in rest.split(',').filter(|p| !p.trim().is_empty()) {
                match part.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                    Some(("sims", v)) => {
                        let n: u32 = num(text, "sims", v, "an integer >= 1")?;
                        if n == 0 {
                            return Err(bad(text, "sims=0 is not allowed; allowed: >= 1"));
                        }
                        sims = Some(n);
                    }
                    _ => {
                        return Err(bad(text, format!("`{part}`: allowed: sims=N")));
                    }
                }
            }
            if run.trim().is_empty() {
                return Err(bad(text, "give model:RUN@I (a run and an iteration)"));
            }
            return Ok(PlayerSpec::Model {
                run: run.trim().to_string(),
                iteration,
                sims,
            });
        }
        let mut pairs = Vec::new();
        if !rest.is_empty() {
            for part in rest.split(',') {
                let Some((k, v)) = part.split_once('=') else {
                    return Err(bad(text, format!("`{part}` is not of the form key=value")));
                };
                let k = k.trim().to_ascii_lowercase();
                if pairs.iter().any(|(seen, _): &(String, String)| *seen == k) {
                    return Err(bad(text, format!("key `{k}` given twice")));
                }
                pairs.push((k, v.trim().to_string()));
            }
        }
        let no_keys = |pairs: &[(String, String)]| match pairs.first() {
            Some((k, _)) => Err(bad(
                text,
                format!("unknown key `{k}`; `{name}` takes no keys"),
            )),
            None => Ok(()),
        };
        match name.as_str() {
            "random" => no_keys(&pairs).map(|_| PlayerSpec::Random),
            "optimal" => no_keys(&pairs).map(|_| PlayerSpec::Optimal),
            "greedy-stochastic" => {
                no_keys(&pairs).map(|_| PlayerSpec::Greedy(GreedyMode::Stochastic))
            }
            "greedy" => {
                let mut mode = GreedyMode::Deterministic;
                for (k, v) in &pairs {
                    match (k.as_str(), v.as_str()) {
                        ("mode", "deterministic") => mode = GreedyMode::Deterministic,
                        ("mode", "stochastic") => mode = GreedyMode::Stochastic,
                        ("mode", v) => {
                            return Err(bad(
                                text,
                                format!(
                                    "mode={v} is not allowed; allowed: deterministic, stochastic"
                                ),
                            ));
                        }
                        (k, _) => {
                            return Err(bad(text, format!("unknown key `{k}`; allowed: mode")));
                        }
                    }
                }
                Ok(PlayerSpec::Greedy(mode))
            }
            "mcts" => parse_mcts(text, &pairs),
            "mcts-solver" => {
                let mut cfg = SolverConfig::default();
                for (k, v) in &pairs {
                    match k.as_str() {
                        "sims" => {
                            cfg.simulations = num(text, k, v, "an integer >= 1")?;
                            if cfg.simulations == 0 {
                                return Err(bad(
                                    text,
                                    "sims=0 is not allowed; allowed: an integer >= 1",
                                ));
                            }
                        }
                        "c" => {
                            cfg.uct_c = num(text, k, v, "a finite number >= 0")?;
                            if !(cfg.uct_c.is_finite() && cfg.uct_c >= 0.0) {
                                return Err(bad(
                                    text,
                                    format!("c={v} is not allowed; allowed: a finite number >= 0"),
                                ));
                            }
                        }
                        _ => return Err(bad(text, format!("unknown key `{k}`; allowed: sims, c"))),
                    }
                }
                Ok(PlayerSpec::MctsSolver(cfg))
            }
            _ => Err(bad(
                text,
                format!("unknown player `{name}`; allowed: {PLAYER_NAMES}"),
            )),
        }
    }
}

fn parse_mcts(text: &str, pairs: &[(String, String)]) -> Result<PlayerSpec, PlayerError> {
    let PlayerSpec::Mcts {
        mut config,
        mut eval,
    } = PlayerSpec::mcts_default()
    else {
        unreachable!()
    };
    let mut p_full = None;
    let mut n_fast = None;
    let mut rollouts = None;
    for (k, v) in pairs {
        let number = "a number";
        match k.as_str() {
            "sims" => config.simulations = num(text, k, v, "an integer >= 1")?,
            "c" => config.c_puct = num(text, k, v, number)?,
            "init" => {
                config.init_q = InitQ::parse(v).ok_or_else(|| {
                    bad(
                        text,
                        format!("init={v} is not allowed; allowed: {}", InitQ::NAMES),
                    )
                })?
            }
            "alpha" => config.dirichlet_alpha = num(text, k, v, number)?,
            "eps" => config.dirichlet_epsilon = num(text, k, v, number)?,
            "tau" => config.temperature = num(text, k, v, number)?,
            "sample_moves" => {
                config.sample_moves = if v == "all" {
                    None
                } else {
                    Some(num(text, k, v, "all or an integer >= 0")?)
                }
            }
            "eval" => {
                eval = match v.as_str() {
                    "uniform" => EvalSpec::Uniform,
                    "rollout" => EvalSpec::Rollout(1),
                    _ => {
                        return Err(bad(
                            text,
                            format!("eval={v} is not allowed; allowed: rollout, uniform"),
                        ));
                    }
                }
            }
            "rollouts" => rollouts = Some(num::<u32>(text, k, v, "an integer >= 1")?),
            "p_full" => p_full = Some(num::<f64>(text, k, v, number)?),
            "n_fast" => n_fast = Some(num::<u32>(text, k, v, "an integer >= 1")?),
            "forced" => {
                config.forced_playouts = Some(ForcedPlayouts {
                    k: num(text, k, v, number)?,
                })
            }
            "prune" => config.policy_target_pruning = num(text, k, v, "true, false")?,
            _ => {
                return Err(bad(
                    text,
                    format!("unknown key `{k}`; allowed: {MCTS_KEYS}"),
                ));
            }
        }
    }
    match (p_full, n_fast) {
        (None, None) => {}
        (p, Some(n)) => {
            config.playout_cap = Some(PlayoutCap {
                p_full: p.unwrap_or(0.25),
                n_fast: n,
            })
        }
        (Some(_), None) => {
            return Err(bad(
                text,
                "p_full needs n_fast (the fast search's simulations)",
            ));
        }
    }
    if let Some(r) = rollouts {
        match eval {
            EvalSpec::Rollout(_) if r >= 1 => eval = EvalSpec::Rollout(r),
            EvalSpec::Rollout(_) => {
                return Err(bad(
                    text,
                    "rollouts=0 is not allowed; allowed: an integer >= 1",
                ));
            }
            EvalSpec::Uniform => return Err(bad(text, "rollouts applies only to eval=rollout")),
        }
    }
    config.validate().map_err(|e| {
        let key = match e.key {
            "simulations" => "sims",
            "c_puct" => "c",
            "dirichlet_alpha" => "alpha",
            "dirichlet_epsilon" => "eps",
            "temperature" => "tau",
            "playout_cap.p_full" => "p_full",
            "playout_cap.n_fast" => "n_fast",
            "forced_playouts.k" => "forced",
            "policy_target_pruning" => "prune",
            other => other,
        };
        bad(
            text,
            format!("{key}={} is out of range; allowed: {}", e.value, e.allowed),
        )
    })?;
    Ok(PlayerSpec::Mcts { config, eval })
}

impl fmt::Display for PlayerSpec {
    /// The canonical text: every key spelled out, parsed back to an equal spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlayerSpec::Random => f.write_str("random"),
            PlayerSpec::Optimal => f.write_str("optimal"),
            PlayerSpec::Greedy(GreedyMode::Deterministic) => f.write_str("greedy"),
            PlayerSpec::Greedy(GreedyMode::Stochastic) => f.write_str("greedy:mode=stochastic"),
            PlayerSpec::MctsSolver(c) => {
                write!(f, "mcts-solver:sims={},c={}", c.simulations, c.uct_c)
            }
            PlayerSpec::Model {
                run,
                iteration,
                sims,
            } => {
                write!(f, "model:{run}@{iteration}")?;
                if let Some(n) = sims {
                    write!(f, ",sims={n}")?;
                }
                Ok(())
            }
            PlayerSpec::Mcts { config: c, eval } => {
                write!(
                    f,
                    "mcts:sims={},c={},init={},alpha={},eps={},tau={},sample_moves=",
                    c.simulations,
                    c.c_puct,
                    c.init_q.name(),
                    c.dirichlet_alpha,
                    c.dirichlet_epsilon,
                    c.temperature
                )?;
                match c.sample_moves {
                    None => f.write_str("all")?,
                    Some(k) => write!(f, "{k}")?,
                }
                match eval {
                    EvalSpec::Uniform => f.write_str(",eval=uniform")?,
                    EvalSpec::Rollout(r) => write!(f, ",eval=rollout,rollouts={r}")?,
                }
                if let Some(pc) = c.playout_cap {
                    write!(f, ",p_full={},n_fast={}", pc.p_full, pc.n_fast)?;
                }
                if let Some(fp) = c.forced_playouts {
                    write!(f, ",forced={}", fp.k)?;
                }
                if c.policy_target_pruning {
                    f.write_str(",prune=true")?;
                }
                Ok(())
            }
        }
    }
}

/// What players need from a game beyond [`Game`]: abilities only some games have. Every
/// registry game implements it; a game without an ability keeps the default (unsupported).
pub trait PlayerGame: Game {
    /// The exact solution for the optimal player, from the store (solved and saved first if
    /// the store has none).
    fn solution(&self, store: &mut Store) -> Result<Solution<Self::Key>, PlayerError> {
        let _ = store;
        Err(PlayerError::Unsupported {
            player: "optimal".into(),
            variant: self.variant(),
            reason: "this variant is not solvable".into(),
        })
    }

    /// Whether the optimal player searches each position exactly instead of loading a
    /// solution (Connect Four boards too large to enumerate, e.g. 7x6).
    fn searches_exactly(&self) -> bool {
        false
    }

    /// With [`PlayerGame::searches_exactly`]: every legal action of decision state `s` with
    /// its exact value in [-1, 1] for the mover, ascending by action.
    fn searched_action_values(&self, s: &Self::State) -> Option<Vec<(Action, f64)>> {
        let _ = s;
        None
    }

    /// The greedy heuristic: for each legal action of `s` (in order), its forward gain Psi
    /// and how far back its piece stands (larger = further back). `false` when the game has
    /// no greedy player.
    fn greedy_features(
        &self,
        s: &Self::State,
        legal: &[Action],
        out: &mut Vec<(i32, i32)>,
    ) -> bool {
        let _ = (s, legal, out);
        false
    }
}

/// Loads the stored solution of `g`, or solves it and saves it first.
pub fn load_or_solve<G: Solvable>(
    g: &G,
    store: &mut Store,
) -> Result<Solution<G::Key>, PlayerError> {
    if let Some((sol, _)) = crate::solver::load_solution::<G::Key>(store, &g.variant())? {
        return Ok(sol);
    }
    let t = std::time::Instant::now();
    let sol = crate::solver::solve(g, &|_| {})?;
    let start = crate::solver::start_value(g, &sol).ok_or_else(|| PlayerError::Unsolved {
        variant: g.variant(),
        position: g.notation(&g.initial_state()),
    })?;
    crate::solver::save_solution(store, &sol, start, t.elapsed().as_secs_f64())?;
    Ok(sol)
}

impl PlayerGame for Cdc {
    fn solution(&self, store: &mut Store) -> Result<Solution<Self::Key>, PlayerError> {
        load_or_solve(self, store)
    }
}

impl PlayerGame for Cdc4x8 {}

impl PlayerGame for Ewn {
    fn solution(&self, store: &mut Store) -> Result<Solution<Self::Key>, PlayerError> {
        load_or_solve(self, store)
    }
}

impl PlayerGame for ConnectFour {
    fn solution(&self, store: &mut Store) -> Result<Solution<Self::Key>, PlayerError> {
        load_or_solve(self, store)
    }

    fn searches_exactly(&self) -> bool {
        self.check_solvable().is_err() && crate::solver::connect4::searchable(self)
    }

    fn searched_action_values(&self, s: &Self::State) -> Option<Vec<(Action, f64)>> {
        crate::solver::connect4::action_values(self, s)
    }
}

impl PlayerGame for Checkers {
    fn solution(&self, store: &mut Store) -> Result<Solution<Self::Key>, PlayerError> {
        load_or_solve(self, store)
    }

    fn greedy_features(
        &self,
        s: &Self::State,
        legal: &[Action],
        out: &mut Vec<(i32, i32)>,
    ) -> bool {
        out.clear();
        let Turn::Player(p) = self.turn(s) else {
            return true;
        };
        // Psi measured from the square (0, 0), where r - c = 0, is how far back a square is.
        let origin = self.square(0, 0);
        for &a in legal {
            let (from, to) = self.move_squares(s, a);
            out.push((
                self.forward_gain(p, from, to),
                self.forward_gain(p, from, origin),
            ));
        }
        true
    }
}

/// A player resolved for one game: shared and read-only, so one `Player` serves every game of
/// a parallel match; each game makes its own [`Agent`].
#[derive(Clone, Debug)]
pub struct Player<G: Game> {
    spec: PlayerSpec,
    solution: Option<Arc<Solution<G::Key>>>,
    model: Option<(Arc<dyn crate::learners::Model<G>>, SearchConfig)>,
}

impl<G: Game> fmt::Debug for dyn crate::learners::Model<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Model")
    }
}

impl<G: PlayerGame> Player<G> {
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
            } => {
                let store = store.ok_or_else(|| unsupported("a model player needs a store"))?;
                let (m, run_search) = crate::runs::load_model(g, store, run, *iteration)
                    .map_err(|e| unsupported(&e.to_string()))?;
                // The run's search knobs, as evaluation play: no root noise, most visited.
                let config = SearchConfig {
                    dirichlet_epsilon: 0.0,
                    temperature: 0.0,
                    simulations: sims.unwrap_or(1),
                    ..run_search
                };
                model = Some((m, config));
                None
            }
            PlayerSpec::Optimal if g.searches_exactly() => None,
            PlayerSpec::Optimal => {
                let store = store.ok_or_else(|| unsupported("the optimal player needs a store"))?;
                Some(Arc::new(g.solution(store)?))
            }
            PlayerSpec::Mcts { config, .. } => {
                config.validate().map_err(|e| unsupported(&e.to_string()))?;
                None
            }
            PlayerSpec::Greedy(_) => {
                let s = g.initial_state();
                let mut probe = Vec::new();
                if !g.greedy_features(&s, &[], &mut probe) {
                    return Err(unsupported(
                        "the greedy players exist for Chinese Checkers only",
                    ));
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
                    Search::new(SearchConfig::evaluation(config.simulations.max(1)))
                        .expect("evaluation defaults are valid")
                })),
                match eval {
                    EvalSpec::Uniform => AgentEval::Uniform(Uniform),
                    EvalSpec::Rollout(n) => AgentEval::Rollout(Rollout::new(*n)),
                },
            ),
            PlayerSpec::MctsSolver(cfg) => AgentKind::MctsSolver(Box::new(MctsSolver::new(*cfg))),
            PlayerSpec::Model { sims, .. } => match &self.model {
                Some((m, config)) => AgentKind::Model(
                    m.clone(),
                    sims.map(|_| {
                        Box::new(Search::new(*config).unwrap_or_else(|_| {
                            Search::new(SearchConfig::evaluation(config.simulations))
                                .expect("evaluation defaults are valid")
                        }))
                    }),
                ),
                None => AgentKind::Random,
            },
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
pub enum AgentEval {
    Uniform(Uniform),
    Rollout(Rollout),
}

impl<G: Game> Evaluator<G> for AgentEval {
    #[inline]
    fn evaluate(
        &mut self,
        g: &G,
        s: &G::State,
        legal: &[Action],
        priors: &mut [f64],
        rng: &mut StreamRng,
    ) -> f64 {
        match self {
            AgentEval::Uniform(e) => Evaluator::<G>::evaluate(e, g, s, legal, priors, rng),
            AgentEval::Rollout(e) => e.evaluate(g, s, legal, priors, rng),
        }
    }
}

#[derive(Debug)]
enum AgentKind<G: Game> {
    Random,
    Optimal(Arc<Solution<G::Key>>),
    /// The optimal player by an exact search per position ([`PlayerGame::searches_exactly`]).
    OptimalSearch,
    Greedy(GreedyMode),
    Mcts(Box<Search<G>>, AgentEval),
    MctsSolver(Box<MctsSolver<G>>),
    /// A trained model: its greedy policy, or the search it guides.
    Model(Arc<dyn crate::learners::Model<G>>, Option<Box<Search<G>>>),
}

/// One game's instance of a player: owns its search arenas and buffers.
#[derive(Debug)]
pub struct Agent<G: Game> {
    kind: AgentKind<G>,
    actions: Vec<Action>,
    features: Vec<(i32, i32)>,
}

impl<G: PlayerGame> Agent<G> {
    /// The decision in decision state `s`, `ply` plies into the game; randomness from `rng`.
    pub fn decide(
        &mut self,
        g: &G,
        s: &G::State,
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
                let values = g.searched_action_values(s).ok_or_else(unsolved)?;
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
                Ok(Decision::searched(search.run(g, s, ply, eval, rng)?))
            }
            AgentKind::Model(model, None) => {
                g.legal_actions(s, &mut self.actions);
                Ok(play(model.greedy_action(g, s, &self.actions)))
            }
            AgentKind::Model(model, Some(search)) => {
                Ok(Decision::searched(model.search(g, search, s, ply, rng)?))
            }
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

/// The greedy choice over (Psi, rear) features (see the module docs).
pub fn greedy_choice(mode: GreedyMode, features: &[(i32, i32)], rng: &mut StreamRng) -> usize {
    let uniform_among = |pred: &dyn Fn(&(i32, i32)) -> bool, rng: &mut StreamRng| {
        let n = features.iter().filter(|f| pred(f)).count();
        let k = uniform_index(rng, n);
        features
            .iter()
            .enumerate()
            .filter(|(_, f)| pred(f))
            .nth(k)
            .map_or(0, |(i, _)| i)
    };
    let max_psi = features.iter().map(|f| f.0).max().unwrap_or(0);
    if max_psi <= 0 {
        let least = features.iter().map(|f| f.0.abs()).min().unwrap_or(0);
        return uniform_among(&|f| f.0.abs() == least, rng);
    }
    match mode {
        GreedyMode::Deterministic => {
            let rear = features
                .iter()
                .filter(|f| f.0 == max_psi)
                .map(|f| f.1)
                .max()
                .unwrap_or(0);
            uniform_among(&|f| f.0 == max_psi && f.1 == rear, rng)
        }
        GreedyMode::Stochastic => {
            let total: i64 = features
                .iter()
                .filter(|f| f.0 > 0)
                .map(|f| i64::from(f.0))
                .sum();
            let mut u = uniform_index(rng, total as usize) as i64;
            for (i, f) in features.iter().enumerate() {
                if f.0 > 0 {
                    if u < i64::from(f.0) {
                        return i;
                    }
                    u -= i64::from(f.0);
                }
            }
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn specs_parse_and_print_canonically() {
        for text in [
            "random",
            "optimal",
            "greedy",
            "greedy:mode=stochastic",
            "mcts-solver:sims=8000,c=1",
            "mcts:sims=800,c=1,init=loss,alpha=1.5,eps=0,tau=0,sample_moves=all,eval=rollout,rollouts=1",
            "mcts:sims=50,c=0.5,init=first,alpha=0.3,eps=0.25,tau=1,sample_moves=4,eval=uniform,p_full=0.25,n_fast=10,forced=2,prune=true",
        ] {
            let spec: PlayerSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
        }
        let spec: PlayerSpec = "mcts:sims=800,c=1,init=draw".parse().unwrap();
        let PlayerSpec::Mcts { config, eval } = &spec else {
            panic!()
        };
        assert_eq!(config.init_q, InitQ::Draw);
        assert_eq!(config.dirichlet_epsilon, 0.0);
        assert_eq!(*eval, EvalSpec::Rollout(1));
        assert_eq!(spec.to_string().parse::<PlayerSpec>().unwrap(), spec);
        assert_eq!(
            "greedy-stochastic".parse::<PlayerSpec>().unwrap(),
            PlayerSpec::Greedy(GreedyMode::Stochastic)
        );
    }

    #[test]
    fn bad_specs_name_the_bad_part_and_the_allowed_ones() {
        for (text, needles) in [
            ("alphazero", &["alphazero", "mcts-solver"][..]),
            ("mcts:simz=8", &["simz", "sims"]),
            ("mcts:init=maybe", &["maybe", "loss, draw, win, first"]),
            ("mcts:sims=0", &["sims", ">= 2"]),
            ("mcts:c=-1", &["c=-1", ">= 0"]),
            ("mcts:eps=2", &["eps", "[0, 1]"]),
            ("mcts:n_fast=900", &["n_fast", "below"]),
            ("mcts:sims=ten", &["sims=ten", "integer"]),
            ("mcts:prune=true", &["prune", "forced"]),
            ("mcts-solver:sims=0", &["sims=0"]),
            ("random:x=1", &["`x`"]),
            ("greedy:mode=lazy", &["lazy", "stochastic"]),
            ("mcts:sims", &["sims", "key=value"]),
        ] {
            let e = text.parse::<PlayerSpec>().unwrap_err().to_string();
            for n in needles {
                assert!(e.contains(n), "`{text}`: {e}");
            }
        }
    }

    #[test]
    fn greedy_choices_follow_the_rules() {
        let mut rng = stream(1, "greedy");
        // Largest Psi 2 twice; the rearmost (rear 5) wins the tie.
        let f = [(1, 9), (2, 3), (2, 5), (-1, 9)];
        for _ in 0..20 {
            assert_eq!(greedy_choice(GreedyMode::Deterministic, &f, &mut rng), 2);
        }
        // Equal Psi and rear: uniformly random among them.
        let f = [(2, 5), (2, 5), (0, 0)];
        let firsts = (0..1000)
            .filter(|_| greedy_choice(GreedyMode::Deterministic, &f, &mut rng) == 0)
            .count();
        assert!((420..580).contains(&firsts), "{firsts}");
        // Stochastic: proportional to Psi over Psi > 0: P = 1/4, 3/4, 0.
        let f = [(1, 0), (3, 0), (-2, 0)];
        let mut counts = [0; 3];
        for _ in 0..4000 {
            counts[greedy_choice(GreedyMode::Stochastic, &f, &mut rng)] += 1;
        }
        assert_eq!(counts[2], 0);
        assert!((900..1100).contains(&counts[0]), "{counts:?}");
        // No forward move: the smallest |Psi|.
        let f = [(-2, 0), (0, 0), (-1, 0)];
        for mode in [GreedyMode::Deterministic, GreedyMode::Stochastic] {
            assert_eq!(greedy_choice(mode, &f, &mut rng), 1);
        }
    }
}
