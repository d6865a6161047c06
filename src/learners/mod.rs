//! Learners as plug-ins: the [`Learner`] trait the run driver ([`crate::runs`]) is generic
//! over, and the registry of learners ([`LearnerKind`], [`with_learner!`](crate::with_learner)).
//!
//! A learner owns a *model* and everything about it:
//! - its settings (a serde struct of its own, inside the run's [`Settings`](crate::runs::Settings),
//!   validated with errors naming the key; [`Learner::validate`]);
//! - how the model evaluates a leaf for the search ([`Learner::evaluator`], any
//!   [`Evaluator`]) and how it picks a move without search ([`Learner::greedy_action`]);
//! - how a stored self-play game becomes training samples ([`Learner::samples`]: a pure
//!   function of the record, so resume, branch and verify rebuild the training window from
//!   the store) and how the model trains on the window ([`Learner::train`]);
//! - how the model is checkpointed into the store as content-addressed records
//!   ([`Learner::checkpoint`]; the root object is what the iteration record names as its
//!   `snapshot`) and restored from it ([`Learner::restore`]);
//! - its evaluation record and the metrics it declares ([`Learner::METRICS`],
//!   [`Learner::evaluate`], [`Learner::metric_values`]).
//!
//! The driver knows none of this: it plays self-play games with the learner's evaluator
//! (where the [start policy](crate::start) says), commits them, asks the learner for samples,
//! training, a checkpoint and an evaluation, and chains the records. Resume, branch, verify,
//! checkout, replay and `model:RUN@I` players work for every learner unchanged.
//!
//! Determinism (docs/conventions.md): every method must be a pure function of its inputs and
//! of named streams of the model seed; training must give the same bits on any number of
//! threads; nothing machine-dependent may enter a record.
//!
//! How to add a learner: docs/learners.md.

mod gate;
pub mod muzero;
pub mod network;
pub mod q;
pub mod tabular;

use serde::{Deserialize, Serialize};

use crate::error::SettingError;
use crate::eval::{MetricDef, MetricValues, MetricsPlan, Truth};
use crate::game::{Action, Game};
use crate::game_record::{GameRecord, ReplayError};
use crate::games::Abilities;
use crate::search::Evaluator;
use crate::search::SearchConfig;
use crate::store::{Encoded, ObjectHash, Record, Store, StoreError};

pub use muzero::MuZero;
pub use network::Network;
pub use q::QLearning;
pub use tabular::TabularAz;

/// A model checkpoint: the objects to store (in write order) and its root, the object an
/// iteration record names as its snapshot. `full`: a self-contained checkpoint (as opposed
/// to a delta on the previous one); `bytes`: the encoded size of all its objects.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    pub objects: Vec<Encoded>,
    pub root: ObjectHash,
    pub full: bool,
    pub bytes: u64,
}

/// What `checkout RUN@I` reports of a model (docs/store.md): the learner, the model's
/// identity and size, and, when asked, its rows for `checkout --export`.
#[derive(Clone, Debug)]
pub struct ModelSummary {
    /// The address of the model's *full* checkpoint (equal to the iteration's snapshot
    /// where that one is full): its identity, whatever chain of deltas it was rebuilt from.
    pub identity: ObjectHash,
    /// The model's size in its own units ([`ModelSummary::unit`]).
    pub units: u64,
    /// What [`ModelSummary::units`] counts: `"rows"` (a table), `"parameters"` (a network).
    pub unit: &'static str,
    /// Encoded bytes of the full checkpoint's objects.
    pub bytes: u64,
    pub num_actions: usize,
    /// The model's rows, when asked and the learner has rows (see [`ExportRow`]).
    pub rows: Vec<ExportRow>,
}

/// One row of a model as `checkout --export` writes it (one line of JSON).
#[derive(Clone, Debug, Serialize)]
pub struct ExportRow {
    /// The position's key as the model stores it.
    pub key: String,
    /// The position in the game's notation (as `tabula value` takes it).
    pub position: String,
    /// The logits of actions 0..|A|-1, then v_hat.
    pub row: Vec<f64>,
    /// How many training updates the row received.
    pub updates: u32,
    /// The legal actions of the position: (action index into `row`, name).
    pub legal: Vec<(u16, String)>,
}

/// An object a checkpoint root references, for `fsck` (docs/store.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// What it is, relative to the root (`chunk 3`, `base`, `params`).
    pub what: String,
    pub hash: ObjectHash,
    /// Whether its bytes must be stored (a derived object is addressed but absent by design).
    pub stored: bool,
}

/// A checkpoint root's description for `fsck`: its iteration and the objects it references.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointRefs {
    /// The root's record kind in words (`snapshot`, `network checkpoint`).
    pub kind: &'static str,
    pub iteration: u32,
    pub references: Vec<Reference>,
}

/// What one training step did (plain columns of the `iterations` table, not hashed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainReport {
    /// Samples applied.
    pub(crate) samples: u64,
    /// Units of the model the samples changed (tabular: distinct positions, i.e. table rows).
    pub units: u64,
    /// The learning rate in force.
    pub beta: f64,
}

/// What a learner knows of its run: the values it reads, built by the driver from the run's
/// settings (the learner never sees the run's own types).
#[derive(Copy, Clone, Debug)]
pub struct LearnerContext<'a> {
    /// The seed of the model's initial parameters and of its evaluation streams: the root
    /// run's seed (a branch continues the same model, so it keeps it).
    pub(crate) model_seed: u64,
    /// The Normal std of a new table row's entries (`init_std`).
    pub init_std: f64,
    /// The learning-rate schedule beta (`learning_rate`): (from_iteration, beta), ascending,
    /// the first from iteration 1.
    pub learning_rate: &'a [(u32, f64)],
    /// Iterations between full checkpoints (`checkpoint_every`).
    pub checkpoint_every: u32,
    /// The run's search settings (the reference evaluation searches with them).
    pub search: &'a SearchConfig,
    /// The `[learner]` table.
    pub learner: &'a LearnerSettings,
}

impl LearnerContext<'_> {
    /// beta of iteration `i` (1-based).
    pub fn beta(&self, i: u32) -> f64 {
        scheduled(self.learning_rate, i)
    }
}

/// The value in force at iteration `i` of a schedule of (from_iteration, value) pairs,
/// ascending, the first from iteration 1 (validated before use).
pub(crate) fn scheduled(schedule: &[(u32, f64)], i: u32) -> f64 {
    schedule
        .iter()
        .take_while(|(from, _)| *from <= i)
        .last()
        .map_or(schedule[0].1, |x| x.1)
}

/// What a learner's settings are checked against: its own table and the driver's window.
#[derive(Copy, Clone, Debug)]
pub struct SettingsCheck<'a> {
    pub learner: &'a LearnerSettings,
    /// K: iterations of games in the training window.
    pub window: u32,
    /// M: self-play games per iteration.
    pub games_per_iteration: u32,
    /// `[selfplay]`: who moves in self-play (a learner that plays its own moves needs an
    /// opponent seat).
    pub selfplay: &'a crate::selfplay::SelfPlaySettings,
}

/// A learner's failure: reading or writing its records, or a request it cannot meet.
#[derive(Debug, thiserror::Error)]
pub enum LearnerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A request that cannot be met; the text says what is allowed.
    #[error("{0}")]
    Usage(String),
}

/// What the evaluation of an iteration gets.
#[derive(Copy, Clone, Debug)]
pub struct EvalContext<'a, G: Game> {
    /// The exact solution and test positions, when the run measures against them.
    pub truth: Option<&'a Truth<G>>,
    pub plan: MetricsPlan,
    /// 0: the untrained model.
    pub iteration: u32,
    /// Distinct decision positions in the run's self-play games so far (the driver counts
    /// them; it is the same for every learner).
    pub seen: u64,
    /// The metric values of the last *measured* iteration before `iteration`, of iterations
    /// 1.. (`None` at iterations 0 and 1, and while none was measured): iteration
    /// `iteration - 1`'s when every iteration is measured; with `[eval] every = K` the last
    /// one the interval measured (docs/metrics.md, "The evaluation interval"). For metrics
    /// that accumulate over training (an area under a curve, summed over the measured
    /// iterations). From the store on resume, branch and verify, so it is the same either way.
    pub previous: Option<&'a MetricValues>,
}

/// A learner: a model, how it guides the search, how it trains on stored games, how it is
/// checkpointed and evaluated (see the module docs).
pub trait Learner<G: Game>: Sized + Send + Sync {
    /// The learner's name in run settings (`[learner] kind = ...`) and docs.
    const NAME: &'static str;
    /// The metrics this learner's evaluation reports, in the order of
    /// [`Learner::metric_values`].
    const METRICS: &'static [MetricDef];
    /// Self-play games a worker plays at once, their leaves evaluated in one batch each
    /// round ([`crate::selfplay`]); 1: one game after another. Changes no result,
    /// only speed.
    const SELF_PLAY_LANES: usize = 1;

    /// Of the full checkpoints (every `checkpoint_every` iterations), the driver keeps the
    /// bytes of every this-many-th one (counting iteration / checkpoint_every) and of the
    /// run's last planned iteration; the others are derived like deltas and rebuilt by
    /// re-training when read (docs/store.md "Derived snapshots"). Changes no address, only
    /// what is stored and how far a checkout may have to re-train.
    const KEEP_FULL_EVERY: u32 = 1;

    /// Whether the learner searches a model of its own instead of the game's rules
    /// ([`Learner::plan`]; MuZero, docs/muzero.md): then self-play's searched moves, the
    /// `model:RUN@I,sims=N` player's and the replays of stored games are its plans.
    const PLANS: bool = false;

    /// One training sample.
    type Sample: Send + Sync;
    /// The model as a leaf evaluator, one per searcher thread (it may keep scratch space);
    /// it borrows the frozen model.
    type Eval<'a>: Evaluator<G> + Send
    where
        Self: 'a;
    /// The record an iteration's evaluation is stored as (its hash enters the iteration
    /// record).
    type Evaluation: Record + Clone + Send + Sync + 'static;

    /// Checks the learner's settings (errors name the key and the allowed range).
    fn validate(check: SettingsCheck<'_>) -> Result<(), SettingError>;

    /// The untrained model.
    fn new(g: &G, ctx: LearnerContext<'_>) -> Result<Self, LearnerError>;

    /// The model a checkpoint root describes (`None`: the untrained model).
    fn restore(
        g: &G,
        ctx: LearnerContext<'_>,
        store: &Store,
        root: Option<&ObjectHash>,
    ) -> Result<Self, LearnerError>;

    /// Whether the checkpoint `root` can be restored from stored bytes alone. The driver
    /// stores every object of a `full` checkpoint but only the root of the others: their
    /// bytes are derived, rebuilt by re-training from the stored games and checked against
    /// the root's address (docs/store.md, "Derived snapshots"). A store written before that
    /// holds every object, and its checkpoints are all stored.
    fn stored(store: &Store, root: &ObjectHash) -> Result<bool, LearnerError>;

    /// The objects the checkpoint root `root` references (for `fsck`); an error when the
    /// root cannot be read as this learner's checkpoint.
    fn references(store: &Store, root: &ObjectHash) -> Result<CheckpointRefs, LearnerError>;

    /// What `checkout` reports of the model after iteration `iteration`; `with_rows` asks for
    /// its rows (a usage error from a learner that has none).
    fn summary(
        &self,
        g: &G,
        ctx: LearnerContext<'_>,
        iteration: u32,
        with_rows: bool,
    ) -> Result<ModelSummary, LearnerError>;

    /// The model's networks as export graphs (`checkout --export PATH.onnx`), each with its
    /// name: one unnamed graph is written to PATH, named ones each to PATH with the name
    /// before the extension (MuZero's three). The default, for a learner without networks,
    /// is a usage error.
    fn graphs(&self) -> Result<Vec<(&'static str, crate::nn::export::Graph)>, LearnerError> {
        Err(LearnerError::Usage(format!(
            "a {} model has no network to export",
            Self::NAME
        )))
    }

    /// The model as the search's leaf evaluator.
    fn evaluator(&self) -> Self::Eval<'_>;

    /// The model's move without search (its policy's most probable legal action, ties to the
    /// lowest action) at `s`, whose game's earlier decision states are `past` (oldest first,
    /// as the search's): the `model:RUN@I` player and the WR_p player.
    fn greedy_action(&self, g: &G, s: &G::State, past: &[G::State], legal: &[Action]) -> Action;

    /// A search of the learner's own model from the decision state `at.0` (after the game's
    /// `at.1`, `ply` plies in) with the run's search settings `config`, every draw from
    /// `rng`; its result's actions are the state's legal actions, ascending, as a search over
    /// the rules would give them. `None` (the default, and where [`Learner::PLANS`] is
    /// false): searches run over the game's rules with [`Learner::evaluator`].
    fn plan(
        &self,
        _g: &G,
        _config: SearchConfig,
        _at: (&G::State, &[G::State]),
        _ply: u32,
        _rng: &mut crate::rng::StreamRng,
    ) -> Option<Result<crate::search::SearchResult, crate::search::SearchError>> {
        None
    }

    /// The exploration rate epsilon of a learner that plays its own self-play moves without
    /// search in iteration `iteration` (Q-learning: epsilon-greedy on
    /// [`Learner::greedy_action`], [`crate::selfplay::Moves::EpsilonGreedy`]); `None`, the
    /// default: the run's mover plays.
    fn exploration(_ctx: LearnerContext<'_>, _iteration: u32) -> Option<f64> {
        None
    }

    /// Appends the training samples of a stored self-play game, given its states
    /// (`record.states(g)`, start first). A pure function of the record: the value target of
    /// a sample is the outcome of the record's own trajectory, wherever it started.
    fn samples(
        g: &G,
        ctx: LearnerContext<'_>,
        record: &GameRecord,
        states: &[G::State],
        out: &mut Vec<Self::Sample>,
    ) -> Result<(), ReplayError>;

    /// Trains on the window (oldest iteration first, each in game and move order) after
    /// iteration `iteration`'s self-play.
    fn train(
        &mut self,
        ctx: LearnerContext<'_>,
        iteration: u32,
        window: &[&Self::Sample],
    ) -> TrainReport;

    /// The checkpoint after iteration `iteration`; `previous` is the root of the previous
    /// iteration's checkpoint (for deltas).
    fn checkpoint(
        &self,
        g: &G,
        ctx: LearnerContext<'_>,
        iteration: u32,
        previous: Option<ObjectHash>,
    ) -> Result<Checkpoint, LearnerError>;

    /// Measures the model (iteration 0: untrained).
    fn evaluate(&self, g: &G, ctx: LearnerContext<'_>, e: EvalContext<'_, G>) -> Self::Evaluation;

    /// The values of [`Learner::METRICS`] in an evaluation, in declaration order.
    fn metric_values(e: &Self::Evaluation) -> MetricValues;
}

/// Calls `f(state, past, legal actions, target counts, z)` for every decision of a stored
/// game whose search was full, in move order: the training samples of both learners. `past`
/// holds the record's decision states before `state`, oldest first (what the search's
/// evaluator saw as the game's past, docs/network.md "Inputs"); `z` is the outcome of the
/// record's own trajectory for the side to move.
pub(crate) fn searched_decisions<G: Game>(
    g: &G,
    record: &GameRecord,
    states: &[G::State],
    mut f: impl FnMut(&G::State, &[G::State], &[Action], &[u32], f64),
) {
    let result = record.end.result();
    let mut actions = Vec::new();
    let mut past = Vec::new();
    for (s, step) in states.iter().zip(&record.steps) {
        let crate::game::Turn::Player(p) = g.turn(s) else {
            continue;
        };
        if let crate::game_record::Step::Move {
            search: Some(st), ..
        } = step
            && st.full
        {
            g.legal_actions(s, &mut actions);
            f(s, &past, &actions, st.target_counts(), result.score(p));
        }
        past.push(*s);
    }
}

/// A trained model as a player (`model:RUN@I`), with its learner type erased: its greedy
/// policy, or a PUCT search it guides.
pub trait Model<G: Game>: Send + Sync {
    /// The policy's most probable legal action of `s` (after the game's `past`, oldest first).
    fn greedy_action(&self, g: &G, s: &G::State, past: &[G::State], legal: &[Action]) -> Action;
    /// A search from `s` (after the game's `past`), `ply` plies in: the learner's own
    /// ([`Learner::plan`], MuZero's in its learned model) unless `rules` or the learner has
    /// none, else over the game's rules with the model as leaf evaluator.
    fn search(
        &self,
        g: &G,
        search: &mut crate::search::Search<G>,
        at: (&G::State, &[G::State]),
        ply_rules: (u32, bool),
        rng: &mut crate::rng::StreamRng,
    ) -> Result<crate::search::SearchResult, crate::search::SearchError>;
    /// The model's own evaluation of decision state `s` (after the game's `past`), what a
    /// search it guides reads at a leaf: fills `priors` (one per action of `legal`) and
    /// returns the value of `s` in [0, 1] for the side to move (the Python package's
    /// `Model.evaluate`, docs/python.md).
    fn evaluate(
        &self,
        g: &G,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
    ) -> f64;
}

impl<G: Game, L: Learner<G>> Model<G> for L {
    fn greedy_action(&self, g: &G, s: &G::State, past: &[G::State], legal: &[Action]) -> Action {
        Learner::greedy_action(self, g, s, past, legal)
    }

    fn search(
        &self,
        g: &G,
        search: &mut crate::search::Search<G>,
        (s, past): (&G::State, &[G::State]),
        (ply, rules): (u32, bool),
        rng: &mut crate::rng::StreamRng,
    ) -> Result<crate::search::SearchResult, crate::search::SearchError> {
        if !rules && let Some(r) = Learner::plan(self, g, *search.config(), (s, past), ply, rng) {
            return r;
        }
        let mut eval = self.evaluator();
        search.run(g, s, past, ply, &mut eval, rng)
    }

    fn evaluate(
        &self,
        g: &G,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
    ) -> f64 {
        let mut eval = self.evaluator();
        // Learners' evaluators draw nothing; the stream is there for the trait.
        let mut rng = crate::rng::stream(0, "model-evaluate");
        crate::search::Evaluator::evaluate(&mut eval, g, s, past, legal, priors, &mut rng)
    }
}

/// The learners a run can name (`[learner] kind = "..."`). One arm per learner; the driver
/// dispatches once, at the edge, with [`with_learner!`](crate::with_learner).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LearnerKind {
    /// Tabular AlphaZero ([`TabularAz`]).
    #[default]
    #[serde(rename = "tabular-az")]
    TabularAz,
    /// AlphaZero with a neural network ([`Network`], docs/network.md).
    #[serde(rename = "network")]
    Network,
    /// Q-learning against the opponent seat, with a table or a network ([`QLearning`],
    /// Liu et al.'s baseline).
    #[serde(rename = "q-learning")]
    QLearning,
    /// MuZero: a learned model of the game searched instead of the rules ([`MuZero`],
    /// docs/muzero.md).
    #[serde(rename = "muzero")]
    MuZero,
}

impl LearnerKind {
    /// Every learner's name, for error messages.
    pub const NAMES: &'static str = "tabular-az, network, q-learning, muzero";

    pub fn name(self) -> &'static str {
        match self {
            LearnerKind::TabularAz => "tabular-az",
            LearnerKind::Network => "network",
            LearnerKind::QLearning => "q-learning",
            LearnerKind::MuZero => "muzero",
        }
    }

    /// Every learner, in [`LearnerKind::NAMES`] order.
    pub const ALL: [LearnerKind; 4] = [
        LearnerKind::TabularAz,
        LearnerKind::Network,
        LearnerKind::QLearning,
        LearnerKind::MuZero,
    ];

    /// The model files a checkout of this learner's runs exports (`tabula checkout
    /// --export`): the network learner's network as ONNX or safetensors; the tables of
    /// tabular AlphaZero and Q-learning export none (their rows are written instead).
    pub fn exports(self) -> &'static [ModelFormat] {
        match self {
            LearnerKind::Network => &[ModelFormat::Onnx, ModelFormat::Safetensors],
            LearnerKind::MuZero => &[ModelFormat::Onnx],
            LearnerKind::TabularAz | LearnerKind::QLearning => &[],
        }
    }

    /// The names of the learners whose runs export `format`, e.g. `"network"`.
    pub(crate) fn exporting(format: ModelFormat) -> Vec<&'static str> {
        LearnerKind::ALL
            .into_iter()
            .filter(|k| k.exports().contains(&format))
            .map(LearnerKind::name)
            .collect()
    }

    /// The metrics that show a run's progress, which the progress line prints in its fixed
    /// part (every other declared metric only where it has a value): every learner reports
    /// the tabular metrics (WR_p, ERR_p, MAE_v, coverage) first, measured the same way.
    pub fn progress_metrics(self) -> &'static [MetricDef] {
        match self {
            LearnerKind::TabularAz => tabular::TABULAR_METRICS,
            LearnerKind::Network => tabular::TABULAR_METRICS,
            LearnerKind::QLearning => tabular::TABULAR_METRICS,
            LearnerKind::MuZero => tabular::TABULAR_METRICS,
        }
    }

    /// The name of the input planes this learner's models read, as [`Abilities::input`]
    /// takes it (`None` within: the game's default): the network learner's and a network
    /// Q-learner's `[learner.network] input`; `None` for a table, which reads no planes.
    pub(crate) fn input(self, s: &LearnerSettings) -> Option<Option<&str>> {
        let named = || s.network.as_ref().and_then(|n| n.input.as_deref());
        match self {
            LearnerKind::TabularAz => None,
            LearnerKind::Network => Some(named()),
            LearnerKind::MuZero => Some(s.muzero.as_ref().and_then(|m| m.input.as_deref())),
            LearnerKind::QLearning => match q::settings_of(s).approximator {
                q::Approximator::Table => None,
                q::Approximator::Network => Some(named()),
            },
        }
    }

    /// The settings a branch of a run of this learner cannot change, with the reason (the
    /// model it continues depends on them); `tabula branch --set` refuses them.
    pub(crate) fn fixed_settings(self) -> Vec<(&'static str, &'static str)> {
        match self {
            LearnerKind::TabularAz => tabular::FIXED_SETTINGS.to_vec(),
            LearnerKind::Network => network::FIXED_SETTINGS.to_vec(),
            LearnerKind::QLearning => q::fixed_settings(),
            LearnerKind::MuZero => muzero::FIXED_SETTINGS.to_vec(),
        }
    }
}

impl LearnerSettings {
    /// The settings a branch of a run with these settings cannot change
    /// ([`LearnerKind::fixed_settings`]), and for a MuZero run without
    /// `[learner.muzero.stochastic]` the table's remaining key too: such a branch would
    /// continue a model without afterstates, codes or encoder.
    pub(crate) fn fixed_settings(&self) -> Vec<(&'static str, &'static str)> {
        let mut out = self.kind.fixed_settings();
        let plain = self.muzero.as_ref().is_none_or(|m| m.stochastic.is_none());
        if self.kind == LearnerKind::MuZero && plain {
            for key in [
                "learner.muzero.stochastic.commitment",
                "learner.muzero.stochastic.diversity",
            ] {
                out.push((
                    key,
                    "a MuZero run's branch cannot become Stochastic MuZero: the model it \
                     continues has no afterstates, codes or encoder",
                ));
            }
        }
        out
    }
}

/// A model file a learner's checkout can export ([`LearnerKind::exports`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ModelFormat {
    /// An ONNX model, graph and weights.
    Onnx,
    /// The weights alone, as safetensors.
    Safetensors,
}

/// The `[learner]` table: which learner, and the settings of learners that have their own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnerSettings {
    pub kind: LearnerKind,
    /// `[learner.network]`: the network learner's settings (docs/network.md); absent: its
    /// defaults. Left out of the settings record when absent, so other learners' settings
    /// hash as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<network::NetworkSettings>,
    /// `[learner.q]`: the Q-learning learner's settings; absent: its defaults. Left out of
    /// the settings record when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q: Option<q::QSettings>,
    /// `[learner.muzero]`: MuZero's settings (docs/muzero.md); absent: its defaults. Left
    /// out of the settings record when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub muzero: Option<muzero::MuZeroSettings>,
}

impl LearnerSettings {
    /// A spec's learner settings as a new run stores them: the defaults of new runs filled in
    /// where a stored record's absent key means a legacy value (the network's `arithmetic`).
    pub(crate) fn for_new_run(mut self) -> LearnerSettings {
        let q_net = self.kind == LearnerKind::QLearning
            && q::settings_of(&self).approximator == q::Approximator::Network;
        if self.kind == LearnerKind::Network || q_net {
            self.network
                .get_or_insert_with(Default::default)
                .for_new_run();
        }
        self
    }
}

/// Checks the `[learner]` table and the named learner's settings (errors name the key).
pub(crate) fn validate<G: Abilities>(check: SettingsCheck<'_>) -> Result<(), SettingError> {
    let kind = check.learner.kind;
    if check.learner.network.is_some()
        && !matches!(kind, LearnerKind::Network | LearnerKind::QLearning)
    {
        return Err(SettingError::new(
            "learner.network",
            "a table",
            "only with learner.kind = \"network\" (or \"q-learning\" with a network)",
        ));
    }
    if check.learner.q.is_some() && kind != LearnerKind::QLearning {
        return Err(SettingError::new(
            "learner.q",
            "a table",
            "only with learner.kind = \"q-learning\"",
        ));
    }
    if check.learner.muzero.is_some() && kind != LearnerKind::MuZero {
        return Err(SettingError::new(
            "learner.muzero",
            "a table",
            "only with learner.kind = \"muzero\"",
        ));
    }
    crate::with_learner!(kind, L => <L<G> as Learner<G>>::validate(check))
}

/// Runs `$body` with `$L<G>` naming the learner type of `$kind` for any game type `G`:
/// `with_learner!(kind, L => run::<G, L<G>>(...))` (a generic alias, so it works inside
/// generic functions).
#[macro_export]
macro_rules! with_learner {
    ($kind:expr, $l:ident => $body:expr) => {
        match $kind {
            $crate::learners::LearnerKind::TabularAz => {
                #[allow(dead_code)]
                type $l<GG> = $crate::learners::TabularAz<<GG as $crate::game::Game>::Key>;
                $body
            }
            $crate::learners::LearnerKind::Network => {
                #[allow(dead_code)]
                type $l<GG> = $crate::learners::Network<GG>;
                $body
            }
            $crate::learners::LearnerKind::QLearning => {
                #[allow(dead_code)]
                type $l<GG> = $crate::learners::QLearning<GG>;
                $body
            }
            $crate::learners::LearnerKind::MuZero => {
                #[allow(dead_code)]
                type $l<GG> = $crate::learners::MuZero<GG>;
                $body
            }
        }
    };
}
