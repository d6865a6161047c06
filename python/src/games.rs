//! Games and states with their types erased: one [`DynGame`] / [`DynState`] implementation,
//! generic over the library's games, made from the registry's edge enum `AnyGame` (no game is
//! named here). The Python classes (`lib.rs`) hold these objects.

use std::any::Any;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use tabula::error::GameError;
use tabula::game::{Action, ChanceOutcome, Game, MAX_PAST, Player, Turn};
use tabula::games::{Abilities, AnyGame};
use tabula::nn::encode::Encoder;
use tabula::players::PlayerSpec;
use tabula::solver::{Progress, Solution, Solvable, value_for};
use tabula::store::Store;

use crate::PyCache;
use crate::store::{DynModel, DynPlayer};
use tabula::{with_game, with_solvable_game};

/// OpenSpiel's player id of a chance node.
pub(crate) const CHANCE_PLAYER: i64 = -1;
/// OpenSpiel's player id of a terminal state.
pub(crate) const TERMINAL_PLAYER: i64 = -4;

/// A solve's progress report: the phase (`found`, `valued`), done, total (0 while unknown).
pub(crate) type ProgressFn<'a> = &'a (dyn Fn(&'static str, u64, u64) + Sync);

/// Solves `g` and stores the solution (the solver's `solve`, then `save_solution`), or loads
/// the stored one: what `tabula solve` does, with the progress handed on.
type SolveFn<G> = fn(&G, &mut Store, ProgressFn) -> Result<Solution<<G as Game>::Key>, String>;

/// A game with what the glue keeps beside it: its input encoding, its solution once loaded
/// or solved, and how to solve it (for the games the exact solver takes).
pub(crate) struct Shared<G: Abilities> {
    pub(crate) g: G,
    encoder: Option<Encoder<G>>,
    solution: OnceLock<Arc<Solution<G::Key>>>,
    solve: Option<SolveFn<G>>,
    /// Python objects made once for this game and handed out again.
    pub(crate) cache: PyCache,
}

/// A game of any type.
pub(crate) trait DynGame: Send + Sync {
    fn variant(&self) -> String;
    fn num_actions(&self) -> usize;
    /// The start state.
    fn new_state(self: Arc<Self>) -> Box<dyn DynState>;
    /// The shape (channels, height, width) of the observation tensor.
    fn observation_shape(&self) -> Option<[usize; 3]>;
    /// Loads the solution from the store at `db` (solving and storing it first when it has
    /// none), or solves it in memory without a store; returns the positions valued.
    fn solve(&self, db: Option<&Path>, progress: ProgressFn) -> Result<usize, String>;
    /// Whether exact values are at hand (a solution loaded, or an exact search per position).
    fn has_truth(&self) -> bool;
    /// The model of run `run` after iteration `i`.
    fn checkout(
        self: Arc<Self>,
        store: &Store,
        run: &str,
        i: u32,
    ) -> Result<Box<dyn DynModel>, String>;
    /// A player of this game.
    fn player(
        self: Arc<Self>,
        spec: &PlayerSpec,
        store: Option<&mut Store>,
    ) -> Result<Box<dyn DynPlayer>, String>;
}

/// A state of any game, with its history (every action and chance outcome from the start).
pub(crate) trait DynState: Send + Sync {
    fn clone_box(&self) -> Box<dyn DynState>;
    fn game(&self) -> Arc<dyn DynGame>;
    /// The game's cache of Python objects.
    fn cache(&self) -> &PyCache;
    fn turn(&self) -> Turn;
    /// The legal actions of a decision state, the outcomes of a chance state, else none.
    fn legal(&self) -> Vec<Action>;
    fn chance(&self) -> Vec<ChanceOutcome>;
    fn apply(&mut self, a: i64) -> Result<(), GameError>;
    fn history(&self) -> &[Action];
    /// The observation of a decision state (the game's default network input, history
    /// included where the encoder reads it).
    fn observation(&self) -> Result<Vec<f32>, String>;
    fn render(&self) -> String;
    fn notation(&self) -> String;
    fn action_name(&self, a: Action) -> String;
    /// The exact value on [0, 1] for `p` (`None`: the side to move, at a decision state).
    fn exact_value(&self, p: Option<Player>) -> Result<f64, String>;
    /// Every legal action with its exact value on [0, 1] for the side to move.
    fn action_values(&self) -> Result<Vec<(Action, f64)>, String>;
    /// `n` random playouts from this state (uniform actions, chance by its probabilities),
    /// drawn from the stream `python-playouts` of `seed`: the players' summed scores and
    /// the plies played.
    fn playouts(&self, n: u64, seed: u64) -> ([f64; 2], u64);
    fn as_any(&self) -> &dyn Any;
}

/// The typed state behind [`DynState`].
pub(crate) struct Typed<G: Abilities> {
    pub(crate) sh: Arc<Shared<G>>,
    pub(crate) s: G::State,
    history: Vec<Action>,
    /// The decision states before `s`, oldest first (the last `MAX_PAST` of them).
    pub(crate) past: Vec<G::State>,
}

/// The game of a variant name, or the registry's error (the CLI's message).
pub(crate) fn load(variant: &str) -> Result<Arc<dyn DynGame>, GameError> {
    let any: AnyGame = variant.parse()?;
    Ok(with_solvable_game!(
        any,
        |g| shared(g, Some(solve_or_load)),
        |other| with_game!(other, |g| shared(g, None))
    ))
}

fn shared<G: Abilities>(g: G, solve: Option<SolveFn<G>>) -> Arc<dyn DynGame> {
    Arc::new(Shared {
        encoder: g.encoder(),
        g,
        solution: OnceLock::new(),
        solve,
        cache: PyCache::default(),
    })
}

fn solve_or_load<G: Solvable>(
    g: &G,
    store: &mut Store,
    progress: ProgressFn,
) -> Result<Solution<G::Key>, String> {
    let variant = g.variant();
    if let Some((sol, _)) =
        tabula::solver::load_solution::<G::Key>(store, &variant).map_err(|e| e.to_string())?
    {
        return Ok(sol);
    }
    let start = std::time::Instant::now();
    let report = |p: Progress| match p {
        Progress::Found(n) => progress("found", n, 0),
        Progress::Valued { done, total } => progress("valued", done, total),
    };
    let sol = tabula::solver::solve(g, &report).map_err(|e| e.to_string())?;
    let v0 = tabula::solver::start_value(g, &sol)
        .ok_or_else(|| format!("{variant}: the start position has no value"))?;
    tabula::solver::save_solution(store, &sol, v0, start.elapsed().as_secs_f64())
        .map_err(|e| e.to_string())?;
    Ok(sol)
}

impl<G: Abilities> Shared<G> {
    /// The solution loaded or solved in this session, if any.
    pub(crate) fn solution(&self) -> Option<Arc<Solution<G::Key>>> {
        self.solution.get().cloned()
    }

    /// The exact value in [-1, 1] of any state for `p`, from the solution or the exact
    /// search; `Err` says why there is none.
    fn value(&self, s: &G::State, p: Player) -> Result<f64, String> {
        let g = &self.g;
        let missing = || format!("`{}` has no value in the solution", g.notation(s));
        if let Some(sol) = self.solution.get() {
            return value_for(g, s, p, &|t| sol.value_of_key(&g.key(t))).ok_or_else(missing);
        }
        if g.searches_exactly() {
            let best = |t: &G::State| {
                let values = g.exact_action_values(t)?;
                values.iter().map(|x| x.1).reduce(f64::max)
            };
            return value_for(g, s, p, &best).ok_or_else(missing);
        }
        Err(self.no_truth())
    }

    fn no_truth(&self) -> String {
        let variant = self.g.variant();
        if self.solve.is_some() {
            format!(
                "{variant} is not solved in this session: call game.solve() (or \
                 game.solve(db=STORE) to load the store's solution) first"
            )
        } else {
            format!("{variant} cannot be solved, so it has no exact values")
        }
    }
}

impl<G: Abilities> DynGame for Shared<G> {
    fn variant(&self) -> String {
        self.g.variant()
    }

    fn num_actions(&self) -> usize {
        self.g.num_actions()
    }

    fn new_state(self: Arc<Self>) -> Box<dyn DynState> {
        let s = self.g.initial_state();
        Box::new(Typed {
            sh: self,
            s,
            history: Vec::new(),
            past: Vec::new(),
        })
    }

    fn observation_shape(&self) -> Option<[usize; 3]> {
        let p = self.encoder.as_ref()?.planes();
        Some([p.channels, p.height, p.width])
    }

    fn solve(&self, db: Option<&Path>, progress: ProgressFn) -> Result<usize, String> {
        let Some(solve) = self.solve else {
            return Err(self.no_truth());
        };
        if let Some(sol) = self.solution.get() {
            return Ok(sol.len());
        }
        let mut store = match db {
            Some(path) => Store::open(path),
            None => Store::in_memory(),
        }
        .map_err(|e| e.to_string())?;
        let sol = Arc::new(solve(&self.g, &mut store, progress)?);
        let n = sol.len();
        let _ = self.solution.set(sol);
        Ok(n)
    }

    fn has_truth(&self) -> bool {
        self.solution.get().is_some() || self.g.searches_exactly()
    }

    fn checkout(
        self: Arc<Self>,
        store: &Store,
        run: &str,
        i: u32,
    ) -> Result<Box<dyn DynModel>, String> {
        self.checkout_typed(store, run, i)
    }

    fn player(
        self: Arc<Self>,
        spec: &PlayerSpec,
        store: Option<&mut Store>,
    ) -> Result<Box<dyn DynPlayer>, String> {
        self.player_typed(spec, store)
    }
}

impl<G: Abilities> Typed<G> {
    /// The illegal-action error, with the legal ones listed.
    fn illegal(&self, a: i64) -> GameError {
        let legal: Vec<String> = self.legal().iter().map(|x| x.to_string()).collect();
        GameError::IllegalAction {
            variant: self.sh.g.variant(),
            action: a.to_string(),
            position: self.sh.g.notation(&self.s),
            legal: if legal.is_empty() {
                format!("none ({})", self.sh.g.turn(&self.s))
            } else {
                legal.join(", ")
            },
        }
    }
}

impl<G: Abilities> DynState for Typed<G> {
    fn clone_box(&self) -> Box<dyn DynState> {
        Box::new(Typed {
            sh: self.sh.clone(),
            s: self.s,
            history: self.history.clone(),
            past: self.past.clone(),
        })
    }

    fn game(&self) -> Arc<dyn DynGame> {
        self.sh.clone()
    }

    fn cache(&self) -> &PyCache {
        &self.sh.cache
    }

    fn turn(&self) -> Turn {
        self.sh.g.turn(&self.s)
    }

    fn legal(&self) -> Vec<Action> {
        let mut out = Vec::new();
        match self.turn() {
            Turn::Player(_) => self.sh.g.legal_actions(&self.s, &mut out),
            Turn::Chance => out.extend(self.chance().iter().map(|o| o.outcome)),
            Turn::Terminal(_) => {}
        }
        out
    }

    fn chance(&self) -> Vec<ChanceOutcome> {
        let mut out = Vec::new();
        self.sh.g.chance_outcomes(&self.s, &mut out);
        out
    }

    fn apply(&mut self, a: i64) -> Result<(), GameError> {
        let legal = self.legal();
        let Some(&action) = legal.iter().find(|&&x| i64::from(x) == a) else {
            return Err(self.illegal(a));
        };
        let g = &self.sh.g;
        self.s = match g.turn(&self.s) {
            Turn::Player(_) => {
                if self.past.len() == MAX_PAST {
                    self.past.remove(0);
                }
                self.past.push(self.s);
                g.apply(&self.s, action)
            }
            _ => g.apply_chance(&self.s, action),
        };
        self.history.push(action);
        Ok(())
    }

    fn history(&self) -> &[Action] {
        &self.history
    }

    fn observation(&self) -> Result<Vec<f32>, String> {
        let g = &self.sh.g;
        let Some(enc) = &self.sh.encoder else {
            return Err(format!("{} has no input encoding", g.variant()));
        };
        if !matches!(g.turn(&self.s), Turn::Player(_)) {
            return Err(format!(
                "the observation is of decision states; this one is {}",
                g.turn(&self.s)
            ));
        }
        let mut out = vec![0.0f32; enc.planes().len()];
        enc.encode(&self.s, &self.past, &mut out);
        Ok(out)
    }

    fn render(&self) -> String {
        self.sh.g.render(&self.s)
    }

    fn notation(&self) -> String {
        self.sh.g.notation(&self.s)
    }

    fn action_name(&self, a: Action) -> String {
        match self.turn() {
            Turn::Chance => self.sh.g.outcome_name(&self.s, a),
            _ => self.sh.g.action_name(&self.s, a),
        }
    }

    fn exact_value(&self, p: Option<Player>) -> Result<f64, String> {
        let p = match (p, self.turn()) {
            (Some(p), _) => p,
            (None, Turn::Player(p)) => p,
            (None, other) => {
                return Err(format!(
                    "`{}` is not a decision position (it is {other}); give the player whose \
                     value is asked for",
                    self.notation()
                ));
            }
        };
        Ok(tabula::solver::to_unit(self.sh.value(&self.s, p)?))
    }

    fn action_values(&self) -> Result<Vec<(Action, f64)>, String> {
        let Turn::Player(p) = self.turn() else {
            return Err(format!(
                "`{}` is not a decision position (it is {}); values are given for positions \
                 where a player moves",
                self.notation(),
                self.turn()
            ));
        };
        let g = &self.sh.g;
        if self.sh.solution.get().is_none()
            && let Some(values) = g.exact_action_values(&self.s)
        {
            // One exact search for every action (Connect Four 7x6, as `tabula value`).
            let unit = |(a, v): (Action, f64)| (a, tabula::solver::to_unit(v));
            return Ok(values.into_iter().map(unit).collect());
        }
        let mut legal = Vec::new();
        g.legal_actions(&self.s, &mut legal);
        legal
            .into_iter()
            .map(|a| {
                let v = self.sh.value(&g.apply(&self.s, a), p)?;
                Ok((a, tabula::solver::to_unit(v)))
            })
            .collect()
    }

    fn playouts(&self, n: u64, seed: u64) -> ([f64; 2], u64) {
        let g = &self.sh.g;
        let mut rng = tabula::rng::stream(seed, "python-playouts");
        let mut scratch = tabula::play::Scratch::new();
        let (mut scores, mut plies) = ([0.0; 2], 0u64);
        for _ in 0..n {
            let (r, p) = tabula::play::random_playout(g, self.s, &mut rng, &mut scratch);
            let [a, b] = r.scores();
            scores[0] += a;
            scores[1] += b;
            plies += u64::from(p);
        }
        (scores, plies)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
