//! `tabula._tabula`: tabula's games, exact values, stores, models and runs for Python
//! (docs/python.md). The classes keep OpenSpiel's names and shapes (`load_game`,
//! `new_initial_state`, `legal_actions`, `chance_outcomes`, `apply_action`, `returns`, ...),
//! so its users feel at home; the Python layer (`python/py/tabula`) adds the PettingZoo
//! environment and turns query results into pandas data frames.
//!
//! Every error of the library reaches Python as a `ValueError` carrying the message the CLI
//! prints; long work (solving, evaluating, running) releases the GIL.

mod games;
mod run;
mod store;

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Mutex;

use pyo3::types::{PyByteArray, PyDict, PyList, PyTuple};
use tabula::game::{ChanceOutcome, Player, Turn};

use games::{CHANCE_PLAYER, DynGame, DynState, TERMINAL_PLAYER};

/// Any error as Python's `ValueError` with its message.
pub(crate) fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A NumPy array of `dtype` and `shape` over `bytes` (little-endian), made by NumPy itself
/// (`numpy.frombuffer` on a bytearray: writable, owned by the array).
pub(crate) fn ndarray<'py>(
    py: Python<'py>,
    bytes: &[u8],
    dtype: &str,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    let np = py.import("numpy")?;
    np.call_method1("frombuffer", (PyByteArray::new(py, bytes), dtype))?
        .call_method1("reshape", (shape.to_vec(),))
}

/// The little-endian bytes of `xs`.
pub(crate) fn le_bytes<T: Copy, const N: usize>(xs: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    xs.iter().flat_map(|&x| f(x)).collect()
}

/// Python objects made once per game and handed out again: a chance node's `(outcome,
/// probability)` tuples. EWN's two placements list 720 outcomes at the start of every game,
/// and making 1,440 fresh int and float objects for each was where a playout from Python
/// spent its time (docs/python.md, "Speed"); a tuple is immutable, so sharing one is
/// invisible to the caller.
#[derive(Default)]
pub(crate) struct PyCache {
    /// By outcome id.
    outcomes: Mutex<Vec<Option<CachedOutcome>>>,
}

/// An outcome's probability (its bits) and the tuple made for them.
type CachedOutcome = (u64, Py<PyTuple>);

impl PyCache {
    /// The list of `(outcome, probability)` tuples of `outcomes`, in their order.
    fn outcome_list<'py>(
        &self,
        py: Python<'py>,
        outcomes: &[ChanceOutcome],
    ) -> PyResult<Bound<'py, PyList>> {
        let fresh = |o: &ChanceOutcome| (o.outcome, o.prob).into_pyobject(py);
        // Not waited for: making a tuple may run the garbage collector, whose finalisers
        // could ask for outcomes again on this thread; they get fresh tuples.
        let Ok(mut slots) = self.outcomes.try_lock() else {
            return PyList::new(
                py,
                outcomes.iter().map(fresh).collect::<PyResult<Vec<_>>>()?,
            );
        };
        let mut items = Vec::with_capacity(outcomes.len());
        for o in outcomes {
            let i = usize::from(o.outcome);
            if slots.len() <= i {
                slots.resize_with(i + 1, || None);
            }
            let bits = o.prob.to_bits();
            match &slots[i] {
                Some((b, t)) if *b == bits => items.push(t.bind(py).clone()),
                _ => {
                    let t = fresh(o)?;
                    slots[i] = Some((bits, t.clone().unbind()));
                    items.push(t);
                }
            }
        }
        PyList::new(py, items)
    }
}

/// A game: `tabula.load_game("ewn:3x3x3")`.
#[pyclass(module = "tabula._tabula", name = "Game", frozen)]
pub(crate) struct PyGame {
    pub(crate) inner: Arc<dyn DynGame>,
}

/// A state of a game, with its history of actions and chance outcomes.
#[pyclass(module = "tabula._tabula", name = "State")]
pub(crate) struct PyState {
    pub(crate) inner: Box<dyn DynState>,
}

/// The game of a variant name (`cdc:PPPP`, `ewn:3x3x3`, `c4:7x6`, `checkers:5x5-3`, `go:9x9`,
/// ...); a bad name raises `ValueError` with the CLI's message.
#[pyfunction]
fn load_game(variant: &str) -> PyResult<PyGame> {
    Ok(PyGame {
        inner: games::load(variant).map_err(value_error)?,
    })
}

/// A state from [`PyState::serialize`]'s text: the variant's line, then the history.
#[pyfunction]
fn deserialize_state(text: &str) -> PyResult<PyState> {
    let (variant, history) = text.split_once('\n').unwrap_or((text, ""));
    let game = games::load(variant).map_err(value_error)?;
    replay(&game, history)
}

/// The state after the actions of `history` (whitespace-separated) from the start.
fn replay(game: &Arc<dyn DynGame>, history: &str) -> PyResult<PyState> {
    let mut state = game.clone().new_state();
    for word in history.split_whitespace() {
        let a: i64 = word.parse().map_err(|_| {
            value_error(format!(
                "bad serialized state: `{word}` is not an action number"
            ))
        })?;
        state.apply(a).map_err(value_error)?;
    }
    Ok(PyState { inner: state })
}

#[pymethods]
impl PyGame {
    /// The canonical variant name.
    fn variant(&self) -> String {
        self.inner.variant()
    }

    /// |A|: actions are `0..num_distinct_actions()`.
    fn num_distinct_actions(&self) -> usize {
        self.inner.num_actions()
    }

    fn num_players(&self) -> usize {
        2
    }

    fn new_initial_state(&self) -> PyState {
        PyState {
            inner: self.inner.clone().new_state(),
        }
    }

    /// The shape (channels, height, width) of `observation_tensor()`.
    fn observation_tensor_shape(&self) -> PyResult<(usize, usize, usize)> {
        let [c, h, w] = self
            .inner
            .observation_shape()
            .ok_or_else(|| value_error(format!("{} has no input encoding", self.variant())))?;
        Ok((c, h, w))
    }

    /// The state of `serialize()`'s text (its first line must name this variant).
    fn deserialize_state(&self, text: &str) -> PyResult<PyState> {
        let (variant, history) = text.split_once('\n').unwrap_or((text, ""));
        if variant.trim() != self.variant() {
            return Err(value_error(format!(
                "the serialized state is of `{variant}`, not of {}",
                self.variant()
            )));
        }
        replay(&self.inner, history)
    }

    /// Loads the exact solution from the store at `db` (solving and storing it there first
    /// when it has none: `tabula solve`), or, without `db`, solves in memory. `progress` is
    /// called as `progress(phase, done, total)`. Returns the positions valued.
    #[pyo3(signature = (db=None, progress=None))]
    fn solve(
        &self,
        py: Python<'_>,
        db: Option<PathBuf>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<usize> {
        let game = self.inner.clone();
        let report = |phase: &'static str, done: u64, total: u64| {
            if let Some(cb) = &progress {
                Python::attach(|py| {
                    if let Err(e) = cb.call1(py, (phase, done, total)) {
                        e.print(py);
                    }
                });
            }
        };
        py.detach(|| game.solve(db.as_deref(), &report))
            .map_err(value_error)
    }

    /// Whether exact values are at hand: a solution loaded or solved, or an exact search per
    /// position (Connect Four 7x6).
    fn has_exact_values(&self) -> bool {
        self.inner.has_truth()
    }

    fn __str__(&self) -> String {
        self.variant()
    }

    fn __repr__(&self) -> String {
        format!("tabula.load_game({:?})", self.variant())
    }
}

#[pymethods]
impl PyState {
    fn get_game(&self) -> PyGame {
        PyGame {
            inner: self.inner.game(),
        }
    }

    /// 0 or 1 at a decision, -1 at a chance node, -4 at the end (OpenSpiel's ids).
    fn current_player(&self) -> i64 {
        match self.inner.turn() {
            Turn::Player(p) => p.index() as i64,
            Turn::Chance => CHANCE_PLAYER,
            Turn::Terminal(_) => TERMINAL_PLAYER,
        }
    }

    /// The legal actions, ascending (at a chance node: its outcomes).
    fn legal_actions(&self) -> Vec<u16> {
        self.inner.legal()
    }

    /// The 0/1 mask over the `num_distinct_actions()` actions.
    fn legal_actions_mask<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut mask = vec![0u8; self.inner.game().num_actions()];
        for a in self.inner.legal() {
            mask[usize::from(a)] = 1;
        }
        ndarray(py, &mask, "uint8", &[mask.len()])
    }

    fn is_chance_node(&self) -> bool {
        matches!(self.inner.turn(), Turn::Chance)
    }

    fn is_terminal(&self) -> bool {
        matches!(self.inner.turn(), Turn::Terminal(_))
    }

    /// The outcomes of a chance node with their exact probabilities (empty elsewhere).
    fn chance_outcomes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.inner.cache().outcome_list(py, &self.inner.chance())
    }

    /// Plays an action (at a chance node: an outcome); an illegal one raises `ValueError`
    /// naming the legal ones.
    fn apply_action(&mut self, action: i64) -> PyResult<()> {
        self.inner.apply(action).map_err(value_error)
    }

    /// A copy of the state after `action`.
    fn child(&self, action: i64) -> PyResult<PyState> {
        let mut next = self.inner.clone_box();
        next.apply(action).map_err(value_error)?;
        Ok(PyState { inner: next })
    }

    /// OpenSpiel's returns: +1 win, -1 loss, 0 draw, for players 0 and 1 (zeros before the
    /// end).
    fn returns(&self) -> [f64; 2] {
        match self.inner.turn() {
            Turn::Terminal(r) => r.scores().map(|s| 2.0 * s - 1.0),
            _ => [0.0, 0.0],
        }
    }

    /// tabula's scores: win 1, draw 0.5, loss 0 (`None` before the end).
    fn scores(&self) -> Option<[f64; 2]> {
        match self.inner.turn() {
            Turn::Terminal(r) => Some(r.scores()),
            _ => None,
        }
    }

    fn clone(&self) -> PyState {
        PyState {
            inner: self.inner.clone_box(),
        }
    }

    fn __copy__(&self) -> PyState {
        self.clone()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyState {
        self.clone()
    }

    /// Every action and chance outcome from the start.
    fn history(&self) -> Vec<u16> {
        self.inner.history().to_vec()
    }

    fn move_number(&self) -> usize {
        self.inner.history().len()
    }

    /// tabula's network input of a decision state, float32, shape (channels, height, width),
    /// from the side to move's view.
    fn observation_tensor<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let planes = self.inner.observation().map_err(value_error)?;
        let shape = self
            .inner
            .game()
            .observation_shape()
            .unwrap_or([planes.len(), 1, 1]);
        ndarray(py, &le_bytes(&planes, f32::to_le_bytes), "<f4", &shape)
    }

    /// The variant's line, then the history: `game.deserialize_state` reads it back.
    fn serialize(&self) -> String {
        let history: Vec<String> = self.inner.history().iter().map(u16::to_string).collect();
        format!("{}\n{}", self.inner.game().variant(), history.join(" "))
    }

    /// The state of `serialize()`'s text.
    #[staticmethod]
    fn deserialize(text: &str) -> PyResult<PyState> {
        deserialize_state(text)
    }

    /// The position in the game's one-line notation (`tabula value` takes it).
    fn notation(&self) -> String {
        self.inner.notation()
    }

    /// A readable name of an action (at a chance node: of an outcome).
    fn action_to_string(&self, action: u16) -> String {
        self.inner.action_name(action)
    }

    /// The exact value on tabula's [0, 1] scale: of the side to move (`tabula value`'s), or
    /// of `player` at any state (a chance node's is its expectation).
    #[pyo3(signature = (player=None))]
    fn exact_value(&self, py: Python<'_>, player: Option<usize>) -> PyResult<f64> {
        let p = player.map(seat).transpose()?;
        let inner = &self.inner;
        py.detach(|| inner.exact_value(p)).map_err(value_error)
    }

    /// Every legal action with its exact value on [0, 1] for the side to move.
    fn action_values(&self, py: Python<'_>) -> PyResult<Vec<(u16, f64)>> {
        let inner = &self.inner;
        py.detach(|| inner.action_values()).map_err(value_error)
    }

    /// `n` random playouts from this state in the engine (uniform legal actions, chance by
    /// its probabilities; the stream `python-playouts` of `seed`): `{"games", "scores"
    /// (each player's mean, win 1 / draw 0.5 / loss 0), "plies" (decisions in all)}`.
    #[pyo3(signature = (n, seed=0))]
    fn play_random<'py>(&self, py: Python<'py>, n: u64, seed: u64) -> PyResult<Bound<'py, PyDict>> {
        let inner = &self.inner;
        let (sums, plies) = py.detach(|| inner.playouts(n, seed));
        let d = PyDict::new(py);
        d.set_item("games", n)?;
        let games = n.max(1) as f64;
        d.set_item("scores", [sums[0] / games, sums[1] / games])?;
        d.set_item("plies", plies)?;
        Ok(d)
    }

    /// The board as `tabula play` draws it.
    fn __str__(&self) -> String {
        self.inner.render()
    }

    fn __repr__(&self) -> String {
        format!(
            "<tabula.State {} `{}`>",
            self.inner.game().variant(),
            self.inner.notation()
        )
    }
}

/// A seat from Python's 0 or 1.
pub(crate) fn seat(p: usize) -> PyResult<Player> {
    match p {
        0 | 1 => Ok(Player::from_index(p)),
        _ => Err(value_error(format!(
            "player {p} does not exist; allowed: 0, 1"
        ))),
    }
}

#[pymodule]
fn _tabula(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGame>()?;
    m.add_class::<PyState>()?;
    m.add_function(wrap_pyfunction!(load_game, m)?)?;
    m.add_function(wrap_pyfunction!(deserialize_state, m)?)?;
    m.add("CHANCE_PLAYER_ID", CHANCE_PLAYER)?;
    m.add("TERMINAL_PLAYER_ID", TERMINAL_PLAYER)?;
    store::register(m)?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    Ok(())
}
