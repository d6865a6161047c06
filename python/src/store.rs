//! Stores (read-only), checked-out models and players for Python: `tabula.Store(path)`,
//! `store.checkout("RUN@I")`, `tabula.Player(spec, game)` (docs/python.md).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyList;
use tabula::game::{Action, Turn};
use tabula::games::Abilities;
use tabula::learners::Model;
use tabula::play::Decision;
use tabula::players::{Player, PlayerSpec};
use tabula::rng::{stream, uniform_index};
use tabula::store::Store;
use tabula::store::Value;

use crate::games::{DynState, Shared, Typed};
use crate::{PyGame, PyState, le_bytes, ndarray, value_error};

/// A checked-out model with its game's type erased.
pub(crate) trait DynModel: Send + Sync {
    /// Policies (one row of |A| per state, zero off the legal actions) and values on [0, 1]
    /// for the side to move, as the engine's search reads them.
    fn evaluate(&self, states: &[Box<dyn DynState>]) -> Result<(Vec<f64>, Vec<f64>), String>;
    fn num_actions(&self) -> usize;
}

/// A player with its game's type erased.
pub(crate) trait DynPlayer: Send + Sync {
    /// The action the player picks in a decision state, its randomness from `seed`.
    fn act(&self, state: &dyn DynState, seed: u64) -> Result<Action, String>;
}

struct TypedModel<G: Abilities> {
    sh: Arc<Shared<G>>,
    model: Arc<dyn Model<G>>,
}

struct TypedPlayer<G: Abilities> {
    sh: Arc<Shared<G>>,
    player: Player<G>,
}

/// The typed state of `state`, or an error naming both games.
fn typed<'a, G: Abilities>(
    sh: &Shared<G>,
    state: &'a dyn DynState,
) -> Result<&'a Typed<G>, String> {
    let (of, want) = (state.game().variant(), sh.g.variant());
    // Variants of one family share a Rust type: the names tell them apart.
    match state.as_any().downcast_ref::<Typed<G>>() {
        Some(t) if of == want => Ok(t),
        _ => Err(format!("the state is of {of}, not of {want}")),
    }
}

impl<G: Abilities> DynModel for TypedModel<G> {
    fn evaluate(&self, states: &[Box<dyn DynState>]) -> Result<(Vec<f64>, Vec<f64>), String> {
        let g = &self.sh.g;
        let n = g.num_actions();
        let mut policy = vec![0.0; states.len() * n];
        let mut values = Vec::with_capacity(states.len());
        let (mut legal, mut priors) = (Vec::new(), Vec::new());
        for (i, state) in states.iter().enumerate() {
            let t = typed(&self.sh, state.as_ref())?;
            if !matches!(g.turn(&t.s), Turn::Player(_)) {
                return Err(format!(
                    "state {i} is not a decision state (it is {}); a model evaluates decisions",
                    g.turn(&t.s)
                ));
            }
            g.legal_actions(&t.s, &mut legal);
            priors.clear();
            priors.resize(legal.len(), 0.0);
            values.push(self.model.evaluate(g, &t.s, &t.past, &legal, &mut priors));
            for (&a, &p) in legal.iter().zip(&priors) {
                policy[i * n + usize::from(a)] = p;
            }
        }
        Ok((policy, values))
    }

    fn num_actions(&self) -> usize {
        self.sh.g.num_actions()
    }
}

impl<G: Abilities> DynPlayer for TypedPlayer<G> {
    fn act(&self, state: &dyn DynState, seed: u64) -> Result<Action, String> {
        let t = typed(&self.sh, state)?;
        let g = &self.sh.g;
        let mut rng = stream(seed, "python-act");
        let ply = u32::try_from(state.history().len()).unwrap_or(u32::MAX);
        let decision = self
            .player
            .agent()
            .decide(g, &t.s, &t.past, ply, &mut rng)
            .map_err(|e| e.to_string())?;
        match decision {
            Decision::Play { action, .. } => Ok(action),
            // The optimal player claims a won position: any winning action is its move.
            Decision::ClaimWin => {
                let values = t.action_values()?;
                let best: Vec<Action> = values
                    .iter()
                    .filter(|x| x.1 >= 1.0 - tabula::solver::OPTIMAL_TOLERANCE)
                    .map(|x| x.0)
                    .collect();
                best.get(uniform_index(&mut rng, best.len().max(1)))
                    .copied()
                    .ok_or_else(|| "the player claimed a win it has no move for".to_string())
            }
            Decision::Stop { result, .. } => Err(format!("the player stopped the game ({result})")),
        }
    }
}

impl<G: Abilities> Shared<G> {
    /// The model of run `run` after iteration `i` (`tabula checkout RUN@I`).
    pub(crate) fn checkout_typed(
        self: Arc<Self>,
        store: &Store,
        run: &str,
        i: u32,
    ) -> Result<Box<dyn DynModel>, String> {
        let (model, _) =
            tabula::runs::load_model(&self.g, store, run, i).map_err(|e| e.to_string())?;
        Ok(Box::new(TypedModel { sh: self, model }))
    }

    /// A player of this game: the solution this session solved serves `optimal`; otherwise
    /// the store's (a model's run, a stored solution) or, without one, an in-memory store.
    pub(crate) fn player_typed(
        self: Arc<Self>,
        spec: &PlayerSpec,
        store: Option<&mut Store>,
    ) -> Result<Box<dyn DynPlayer>, String> {
        let player = match (spec, self.solution()) {
            (PlayerSpec::Optimal, Some(sol)) => Player::with_solution(spec.clone(), Some(sol)),
            _ => {
                let mut memory;
                let store = match store {
                    Some(s) => s,
                    None => {
                        memory = Store::in_memory().map_err(|e| e.to_string())?;
                        &mut memory
                    }
                };
                Player::resolve(spec, &self.g, Some(store)).map_err(|e| e.to_string())?
            }
        };
        Ok(Box::new(TypedPlayer { sh: self, player }))
    }
}

/// A store opened read-only: `tabula.Store(path)`. The Python layer turns query results into
/// pandas data frames (lists of dicts without pandas).
#[pyclass(module = "tabula._tabula", name = "Store", frozen, subclass)]
pub(crate) struct PyStore {
    store: Mutex<Store>,
    path: PathBuf,
}

/// A model checked out of a store: `store.checkout("RUN@I")`.
#[pyclass(module = "tabula._tabula", name = "Model", frozen)]
pub(crate) struct PyModel {
    inner: Box<dyn DynModel>,
    target: String,
}

/// A player of one game (`"random"`, `"optimal"`, `"mcts:sims=200"`, `"model:RUN@I"`, any
/// spec `tabula match` takes).
#[pyclass(module = "tabula._tabula", name = "Player", frozen)]
pub(crate) struct PyPlayer {
    inner: Box<dyn DynPlayer>,
    spec: String,
}

/// `RUN@I` split as `tabula checkout` does, with its messages.
fn run_at(target: &str) -> PyResult<(&str, u32)> {
    let Some((run, i)) = target.rsplit_once('@') else {
        return Err(value_error(format!(
            "`{target}`: give RUN@I, e.g. 3@10 or quick@10 (I = 0 is the untrained table)"
        )));
    };
    let i: u32 = match i.parse::<u64>() {
        Ok(n) => u32::try_from(n).map_err(|_| {
            value_error(format!(
                "`{target}`: the iteration {n} is out of range; allowed: 0 to {}",
                u32::MAX
            ))
        })?,
        Err(_) => {
            return Err(value_error(format!(
                "`{target}`: the iteration `{i}` is not a number >= 0"
            )));
        }
    };
    Ok((run, i))
}

fn cell(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Integer(i) => i.into_pyobject(py)?.into_any().unbind(),
        Value::Real(r) => r.into_pyobject(py)?.into_any().unbind(),
        Value::Text(t) | Value::Blob(t) => t.into_pyobject(py)?.into_any().unbind(),
    })
}

impl PyStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl PyStore {
    #[new]
    fn new(path: PathBuf) -> PyResult<PyStore> {
        let store = Store::open_read_only(&path).map_err(value_error)?;
        Ok(PyStore {
            store: Mutex::new(store),
            path,
        })
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// One read-only SQL statement: (column names, rows as lists).
    fn _query(&self, py: Python<'_>, sql: &str) -> PyResult<(Vec<String>, Py<PyList>)> {
        let result = {
            let mut guard = self.lock();
            let store: &mut Store = &mut guard;
            py.detach(move || store.query(sql)).map_err(value_error)?
        };
        let rows = PyList::empty(py);
        for row in &result.rows {
            let cells: Vec<Py<PyAny>> = row.iter().map(|v| cell(py, v)).collect::<PyResult<_>>()?;
            rows.append(cells)?;
        }
        Ok((result.columns.clone(), rows.unbind()))
    }

    /// The id of a run named by id, name or hash prefix (`tabula show`'s lookup).
    fn _run_id(&self, run: &str) -> PyResult<i64> {
        let store = self.lock();
        Ok(tabula::runs::find(&store, run).map_err(value_error)?.id)
    }

    /// The model of `RUN@I` (0: untrained), restored through its learner.
    fn checkout(&self, py: Python<'_>, target: &str) -> PyResult<PyModel> {
        let (run, i) = run_at(target)?;
        let mut guard = self.lock();
        let store: &mut Store = &mut guard;
        let row = tabula::runs::find(store, run).map_err(value_error)?;
        let game = crate::games::load(&row.variant).map_err(value_error)?;
        let inner = py
            .detach(move || game.checkout(store, run, i))
            .map_err(value_error)?;
        Ok(PyModel {
            inner,
            target: target.to_string(),
        })
    }

    fn __repr__(&self) -> String {
        format!("tabula.Store({:?})", self.path.display().to_string())
    }
}

#[pymethods]
impl PyModel {
    /// (policy, value) of decision states: policy float64 (N, |A|), zero off the legal
    /// actions; value float64 (N,), on [0, 1] for the side to move. The engine's own numbers.
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        states: Vec<PyRef<'py, PyState>>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let owned: Vec<Box<dyn DynState>> = states.iter().map(|s| s.inner.clone_box()).collect();
        let inner = &self.inner;
        let (policy, values) = py.detach(|| inner.evaluate(&owned)).map_err(value_error)?;
        let n = self.inner.num_actions();
        let f64s = |xs: &[f64]| le_bytes(xs, f64::to_le_bytes);
        Ok((
            ndarray(py, &f64s(&policy), "<f8", &[values.len(), n])?,
            ndarray(py, &f64s(&values), "<f8", &[values.len()])?,
        ))
    }

    fn __repr__(&self) -> String {
        format!("<tabula.Model {}>", self.target)
    }
}

#[pymethods]
impl PyPlayer {
    /// A player of `game`; `store` serves `model:RUN@I` and a stored solution for
    /// `optimal` (without it, `optimal` uses `game.solve()`'s solution or solves in memory).
    #[new]
    #[pyo3(signature = (spec, game, store=None))]
    fn new(
        py: Python<'_>,
        spec: &str,
        game: &PyGame,
        store: Option<&PyStore>,
    ) -> PyResult<PyPlayer> {
        let parsed: PlayerSpec = spec.parse().map_err(value_error)?;
        let game = game.inner.clone();
        let mut guard = store.map(PyStore::lock);
        let store: Option<&mut Store> = guard.as_deref_mut();
        let inner = py
            .detach(|| game.player(&parsed, store))
            .map_err(value_error)?;
        Ok(PyPlayer {
            inner,
            spec: parsed.to_string(),
        })
    }

    /// The action picked in a decision state, its randomness from `seed`'s stream.
    #[pyo3(signature = (state, seed=0))]
    fn act(&self, py: Python<'_>, state: &PyState, seed: u64) -> PyResult<u16> {
        let state = state.inner.clone_box();
        let inner = &self.inner;
        py.detach(|| inner.act(state.as_ref(), seed))
            .map_err(value_error)
    }

    fn __repr__(&self) -> String {
        format!("tabula.Player({:?})", self.spec)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStore>()?;
    m.add_class::<PyModel>()?;
    m.add_class::<PyPlayer>()?;
    Ok(())
}
