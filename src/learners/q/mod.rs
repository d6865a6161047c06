//! Q-learning (`[learner] kind = "q-learning"`, `[learner.q]`): Liu et al.'s baseline
//! (*Towards Understanding Chinese Checkers with Heuristics, Monte Carlo Tree Search, and
//! Deep Reinforcement Learning*, "Q-Learning"), with a lookup table (reduced boards) or a
//! network (Deep Q-Learning, the paper's). docs/learners.md, "Q-learning".
//!
//! - **Moves**: epsilon-greedy on Q ([`Learner::exploration`]: epsilon from `epsilon_start`
//!   down to `epsilon_end`, linearly over `epsilon_iterations` iterations, the paper's
//!   Fig. 9 from 1 to 0.1), against the opponent seat (`[selfplay] opponent = "greedy"`,
//!   required: the paper's agent plays the greedy player).
//! - **Samples**: the transitions of the learner's own moves (transitions.rs), a pure
//!   function of the stored record.
//! - **Training**: experience replay over the driver's training window (train.rs): the
//!   paper's pool of 1,000,000 transitions is the window of `window` iterations of games,
//!   its pre-fill of 5,000 is `prefill` (no training while the window holds fewer), its
//!   minibatches of 32 `batch_size`, drawn `minibatches` times an iteration.
//! - **Approximators**: a lookup table Q(S, .) per position key (step size `alpha`), or the
//!   network of `[learner.network]` (its architecture, optimiser, learning rate and weight
//!   decay; its other keys are unused) with the policy logits as the Q-values and the Huber
//!   loss on the chosen action only (the paper's masked output).
//! - **Greedy action**: argmax Q over the legal actions, ties to the lowest action; as a
//!   search's evaluator, priors the softmax of Q over the legal actions and value 0.5
//!   (Q-values are not on the outcome scale).

mod records;
mod train;
mod transitions;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tabular::TABULAR_METRICS;
use super::{
    Checkpoint, CheckpointRefs, EvalContext, Learner, LearnerContext, LearnerError,
    LearnerSettings, ModelSummary, Reference, SettingsCheck, TrainReport, network,
};
use crate::error::SettingError;
use crate::eval::reference::{GREEDY_DEFS, greedy_policy_score};
use crate::eval::{MetricDef, MetricValues, WinRate, win_rate_of};
use crate::game::{Action, Game};
use crate::game_record::{GameRecord, ReplayError};
use crate::games::{Abilities, Ability, families_with};
use crate::learners::Network;
use crate::rng::StreamRng;
use crate::search::Evaluator;
use crate::selfplay::{Mover, Opponent};
use crate::store::{Encoded, ObjectHash, Store};

pub use records::QEvaluation;
use records::{QCheckpoint, TrainStats};
pub use transitions::Transition;

/// The model Q approximates with (`approximator`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Approximator {
    /// A lookup table (reduced boards).
    #[default]
    #[serde(rename = "table")]
    Table,
    /// The network of `[learner.network]` (Deep Q-Learning).
    #[serde(rename = "network")]
    Network,
}

/// The reward (`reward`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RewardKind {
    /// Liu et al.'s: `row_reward` per row advanced (negative backward), and the outcome's.
    #[default]
    #[serde(rename = "shaped")]
    Shaped,
    /// The outcome's alone (`win_reward`, `loss_reward`, 0 for a draw).
    #[serde(rename = "outcome")]
    Outcome,
}

/// `[learner.q]`: every value a setting, the paper's where it gives one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QSettings {
    pub(crate) approximator: Approximator,
    pub(crate) reward: RewardKind,
    /// Reward per row advanced by a move (paper: 0.01).
    pub(crate) row_reward: f64,
    /// Reward of a win (paper: 10).
    pub(crate) win_reward: f64,
    /// Reward of a loss (the paper gives none: -10, a loss as bad as a win is good, so the
    /// greedy opponent's win is not worth a draw).
    pub(crate) loss_reward: f64,
    /// Discount (the paper gives none: 0.99, Mnih et al.'s; a 7x7 game's ~40 own moves keep
    /// 2/3 of the win reward at the start).
    pub(crate) gamma: f64,
    /// The table's step size (Algorithm 1's alpha; the paper gives no value).
    pub(crate) alpha: f64,
    /// Epsilon of iteration 1 and after `epsilon_iterations` iterations (paper: 1 and 0.1).
    pub(crate) epsilon_start: f64,
    pub(crate) epsilon_end: f64,
    pub(crate) epsilon_iterations: u32,
    /// Transitions per minibatch (paper: 32).
    pub batch_size: u32,
    /// Minibatches an iteration (the paper draws one per move of the agent).
    pub(crate) minibatches: u32,
    /// No training while the window holds fewer transitions (paper: 5,000).
    pub(crate) prefill: u32,
    /// The Huber loss's threshold (paper: 1).
    pub(crate) huber_delta: f64,
    /// Games of the greedy policy against the deterministic greedy player per evaluation (0:
    /// none; the paper plays 300 for its main agent).
    pub(crate) greedy_games: u32,
}

impl Default for QSettings {
    fn default() -> QSettings {
        QSettings {
            approximator: Approximator::Table,
            reward: RewardKind::Shaped,
            row_reward: 0.01,
            win_reward: 10.0,
            loss_reward: -10.0,
            gamma: 0.99,
            alpha: 0.1,
            epsilon_start: 1.0,
            epsilon_end: 0.1,
            epsilon_iterations: 100,
            batch_size: 32,
            minibatches: 100,
            prefill: 5000,
            huber_delta: 1.0,
            greedy_games: 0,
        }
    }
}

fn bad(key: &str, value: impl ToString, allowed: &str) -> SettingError {
    SettingError::new(format!("learner.q.{key}"), value, allowed)
}

/// `Ok` when `x` is finite and within `lo..=hi`, else the error naming `key`.
fn within(key: &str, x: f64, lo: f64, hi: f64, allowed: &str) -> Result<(), SettingError> {
    match x.is_finite() && (lo..=hi).contains(&x) {
        true => Ok(()),
        false => Err(bad(key, x, allowed)),
    }
}

impl QSettings {
    /// Checks every key (errors name `learner.q.KEY`).
    fn validate(&self) -> Result<(), SettingError> {
        within(
            "row_reward",
            self.row_reward,
            -1e6,
            1e6,
            "a number from -1e6 to 1e6",
        )?;
        within(
            "win_reward",
            self.win_reward,
            -1e6,
            1e6,
            "a number from -1e6 to 1e6",
        )?;
        within(
            "loss_reward",
            self.loss_reward,
            -1e6,
            1e6,
            "a number from -1e6 to 1e6",
        )?;
        within("gamma", self.gamma, 0.0, 1.0, "a number from 0 to 1")?;
        within("alpha", self.alpha, 0.0, 1.0, "a number from 0 to 1")?;
        within(
            "epsilon_start",
            self.epsilon_start,
            0.0,
            1.0,
            "a number from 0 to 1",
        )?;
        within(
            "epsilon_end",
            self.epsilon_end,
            0.0,
            1.0,
            "a number from 0 to 1",
        )?;
        if self.batch_size == 0 || self.batch_size > 65_536 {
            return Err(bad(
                "batch_size",
                self.batch_size,
                "an integer from 1 to 65536",
            ));
        }
        if self.minibatches > 1_000_000 {
            return Err(bad(
                "minibatches",
                self.minibatches,
                "an integer from 0 to 1000000",
            ));
        }
        if self.huber_delta.is_nan() || self.huber_delta <= 0.0 || self.huber_delta > 1e6 {
            return Err(bad(
                "huber_delta",
                self.huber_delta,
                "a number > 0 and <= 1e6",
            ));
        }
        if self.greedy_games > 100_000 {
            return Err(bad(
                "greedy_games",
                self.greedy_games,
                "an integer from 0 to 100000",
            ));
        }
        Ok(())
    }

    /// Epsilon of iteration `i`'s self-play (1-based): linear from `epsilon_start` at
    /// iteration 1 to `epsilon_end` at iteration `epsilon_iterations + 1`, then constant.
    pub(crate) fn epsilon(&self, i: u32) -> f64 {
        let d = f64::from(self.epsilon_iterations);
        let done = f64::from(i.saturating_sub(1));
        if done >= d {
            return self.epsilon_end;
        }
        self.epsilon_start + (self.epsilon_end - self.epsilon_start) * (done / d)
    }
}

/// The Q-learning settings of a run (its `[learner.q]` table or the defaults).
pub(crate) fn settings_of(s: &LearnerSettings) -> QSettings {
    s.q.clone().unwrap_or_default()
}

/// Settings a branch cannot change: the model it continues is of this approximator (and,
/// with a network, of that network's shape and optimiser).
pub(crate) fn fixed_settings() -> Vec<(&'static str, &'static str)> {
    let mut out = vec![(
        "learner.q.approximator",
        "the model the branch continues is this approximator's",
    )];
    out.extend_from_slice(network::FIXED_SETTINGS);
    out
}

/// One row of the lookup table: Q(S, a) for every action, and the updates it received.
#[derive(Clone, Debug, PartialEq)]
pub struct QRow {
    pub q: Vec<f64>,
    pub updates: u32,
}

/// The Q-learning learner's model.
pub struct QLearning<G: Game> {
    settings: QSettings,
    table: BTreeMap<G::Key, QRow>,
    net: Option<Network<G>>,
    stats: TrainStats,
    num_actions: usize,
    /// The game (the table's keys).
    game: G,
}

impl<G: Abilities> QLearning<G> {
    fn build(g: &G, ctx: LearnerContext<'_>) -> Result<QLearning<G>, LearnerError> {
        let settings = settings_of(ctx.learner);
        let net = match settings.approximator {
            Approximator::Table => None,
            Approximator::Network => Some(<Network<G> as Learner<G>>::new(g, ctx)?),
        };
        Ok(QLearning {
            settings,
            table: BTreeMap::new(),
            net,
            stats: TrainStats::default(),
            num_actions: g.num_actions(),
            game: g.clone(),
        })
    }

    /// Q(s, a) for every action a (|A| values; 0 for a position the table has not seen);
    /// a network reads the game's `past` too when its input has history.
    pub(crate) fn q_values(&self, g: &G, s: &G::State, past: &[G::State]) -> Vec<f64> {
        if let Some(net) = &self.net {
            let (mut values, mut logits) = (Vec::new(), Vec::new());
            net.infer_batch(std::iter::once((s, past)), &mut values, &mut logits);
            return logits.iter().map(|&v| f64::from(v)).collect();
        }
        self.table
            .get(&g.key(s))
            .map_or_else(|| vec![0.0; self.num_actions], |r| r.q.clone())
    }

    /// The table's rows (empty with a network).
    pub fn table(&self) -> &BTreeMap<G::Key, QRow> {
        &self.table
    }
}

/// argmax of `q` over `legal`, ties to the lowest action.
pub(crate) fn argmax(q: &[f64], legal: &[Action]) -> Action {
    let mut best = legal[0];
    for &a in &legal[1..] {
        let (x, y) = (q[a as usize], q[best as usize]);
        if x > y || (x == y && a < best) {
            best = a;
        }
    }
    best
}

/// The model as a search's leaf evaluator: priors the softmax of Q over the legal actions,
/// value 0.5 (Q-values are not on the outcome scale).
pub struct QEval<'a, G: Game> {
    model: &'a QLearning<G>,
}

impl<G: Abilities> Evaluator<G> for QEval<'_, G> {
    fn past(&self) -> usize {
        self.model.net.as_ref().map_or(0, |n| n.past())
    }

    fn evaluate(
        &mut self,
        g: &G,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
        _: &mut StreamRng,
    ) -> f64 {
        let q: Vec<f32> = self
            .model
            .q_values(g, s, past)
            .iter()
            .map(|&v| v as f32)
            .collect();
        crate::nn::legal_softmax(&q, legal, priors);
        0.5
    }
}

/// The metrics of Q-learning: WR_p and ERR_p of the greedy policy (the tabular learner's
/// definitions), its games against the greedy player, then its own.
const Q_OWN: [MetricDef; 5] = [
    MetricDef {
        name: "td_error",
        description: "Q-learning: mean |Q(S,a) - y| over the last training's updates, y the \
                      TD target R + gamma max Q(S',.)",
    },
    MetricDef {
        name: "q_loss",
        description: "Q-learning: mean Huber loss of the last training's minibatches \
                      (network), or mean squared TD error / 2 (table)",
    },
    MetricDef {
        name: "transitions",
        description: "Q-learning: transitions in the training window at the last training",
    },
    MetricDef {
        name: "minibatches",
        description: "Q-learning: minibatches of the last training (0 below prefill)",
    },
    MetricDef {
        name: "q_rows",
        description: "Q-learning: positions in the lookup table (0 with a network)",
    },
];

const Q_METRICS: [MetricDef; 16] = {
    let mut out = [Q_OWN[0]; 16];
    let mut i = 0;
    while i < 7 {
        out[i] = TABULAR_METRICS[i];
        i += 1;
    }
    while i < 11 {
        out[i] = GREEDY_DEFS[i - 7];
        i += 1;
    }
    while i < 16 {
        out[i] = Q_OWN[i - 11];
        i += 1;
    }
    out
};

impl<G: Abilities> Learner<G> for QLearning<G> {
    const NAME: &'static str = "q-learning";
    const METRICS: &'static [MetricDef] = &Q_METRICS;

    type Sample = Transition<G::State>;
    type Eval<'a> = QEval<'a, G>;
    type Evaluation = QEvaluation;

    fn validate(check: SettingsCheck<'_>) -> Result<(), SettingError> {
        let q = settings_of(check.learner);
        q.validate()?;
        let kind = "learner.kind = \"q-learning\"";
        if check.selfplay.opponent != Opponent::Greedy {
            return Err(SettingError::new(
                "selfplay.opponent",
                "\"none\"",
                format!("\"greedy\" with {kind} (its agent plays the greedy player)"),
            ));
        }
        if check.selfplay.mover != Mover::Search {
            return Err(SettingError::new(
                "selfplay.mover",
                "\"greedy\"",
                format!("\"search\" (the default) with {kind}: it plays its own moves"),
            ));
        }
        if q.reward == RewardKind::Shaped && !G::has_forward_gain() {
            return Err(bad(
                "reward",
                "\"shaped\"",
                &format!(
                    "\"outcome\" for this game: the shaped reward counts rows advanced, which \
                     only {} measures",
                    families_with(Ability::ForwardGain).join(" and ")
                ),
            ));
        }
        match q.approximator {
            Approximator::Network => network::settings_of(check.learner).validate(check),
            Approximator::Table if check.learner.network.is_some() => Err(SettingError::new(
                "learner.network",
                "a table",
                "only with learner.q.approximator = \"network\"",
            )),
            Approximator::Table => Ok(()),
        }
    }

    fn new(g: &G, ctx: LearnerContext<'_>) -> Result<Self, LearnerError> {
        QLearning::build(g, ctx)
    }

    fn restore(
        g: &G,
        ctx: LearnerContext<'_>,
        store: &Store,
        root: Option<&ObjectHash>,
    ) -> Result<Self, LearnerError> {
        let mut m = QLearning::build(g, ctx)?;
        let Some(root) = root else {
            return Ok(m);
        };
        let c: QCheckpoint<G::Key> = store.get(root)?;
        let na = c.num_actions as usize;
        if na != m.num_actions || c.rows.len() != c.keys.len() * na {
            return Err(LearnerError::Usage(format!(
                "q-learning checkpoint {root}: rows of {na} actions that do not fit the game's {}",
                m.num_actions
            )));
        }
        for ((k, row), &updates) in c.keys.iter().zip(c.rows.chunks_exact(na)).zip(&c.updates) {
            m.table.insert(
                *k,
                QRow {
                    q: row.to_vec(),
                    updates,
                },
            );
        }
        if let (Some(h), Some(_)) = (&c.network, &m.net) {
            m.net = Some(<Network<G> as Learner<G>>::restore(g, ctx, store, Some(h))?);
        }
        m.stats = c.stats;
        Ok(m)
    }

    fn stored(store: &Store, root: &ObjectHash) -> Result<bool, LearnerError> {
        // Every checkpoint is full: the table's rows are in the root, a network's checkpoint
        // is stored whole.
        let c: QCheckpoint<G::Key> = store.get(root)?;
        match &c.network {
            Some(h) => Ok(store.contains(h)? && <Network<G> as Learner<G>>::stored(store, h)?),
            None => Ok(true),
        }
    }

    fn references(store: &Store, root: &ObjectHash) -> Result<CheckpointRefs, LearnerError> {
        let c: QCheckpoint<G::Key> = store.get(root)?;
        let mut references = Vec::new();
        if let Some(h) = c.network {
            references.push(Reference {
                what: "network".into(),
                hash: h,
                stored: true,
            });
            let inner = <Network<G> as Learner<G>>::references(store, &h)?;
            references.extend(inner.references);
        }
        Ok(CheckpointRefs {
            kind: "q-learning checkpoint",
            iteration: c.iteration,
            references,
        })
    }

    fn summary(
        &self,
        g: &G,
        ctx: LearnerContext<'_>,
        iteration: u32,
        with_rows: bool,
    ) -> Result<ModelSummary, LearnerError> {
        if with_rows {
            return Err(LearnerError::Usage(
                "checkout --export: the q-learning learner exports no rows".into(),
            ));
        }
        let c = Learner::checkpoint(self, g, ctx, iteration, None)?;
        let (units, unit) = match &self.net {
            Some(net) => (net.parameters() as u64, "parameters"),
            None => (self.table.len() as u64, "rows"),
        };
        Ok(ModelSummary {
            identity: c.root,
            units,
            unit,
            bytes: c.bytes,
            num_actions: g.num_actions(),
            rows: Vec::new(),
        })
    }

    fn evaluator(&self) -> QEval<'_, G> {
        QEval { model: self }
    }

    fn greedy_action(&self, g: &G, s: &G::State, past: &[G::State], legal: &[Action]) -> Action {
        argmax(&self.q_values(g, s, past), legal)
    }

    fn exploration(ctx: LearnerContext<'_>, iteration: u32) -> Option<f64> {
        Some(settings_of(ctx.learner).epsilon(iteration))
    }

    fn samples(
        g: &G,
        ctx: LearnerContext<'_>,
        record: &GameRecord,
        states: &[G::State],
        out: &mut Vec<Transition<G::State>>,
    ) -> Result<(), ReplayError> {
        let q = settings_of(ctx.learner);
        // The history the network's input reads (none for a table).
        let depth = match q.approximator {
            Approximator::Table => 0,
            Approximator::Network => {
                crate::learners::network::input_of(g, ctx.learner).map_or(0, |e| e.past())
            }
        };
        transitions::transitions(g, &q, record, states, depth, out);
        Ok(())
    }

    fn train(
        &mut self,
        ctx: LearnerContext<'_>,
        iteration: u32,
        window: &[&Transition<G::State>],
    ) -> TrainReport {
        let q = &self.settings;
        let batches = train::minibatches(q, ctx.model_seed, iteration, window.len());
        let (stats, beta) = match &mut self.net {
            Some(net) => {
                let lr = net.lr_at(iteration);
                (train::train_network(q, net, lr, window, &batches), lr)
            }
            None => (
                train::train_table(&self.game, q, &mut self.table, window, &batches),
                q.alpha,
            ),
        };
        self.stats = stats;
        TrainReport {
            samples: stats.minibatches * u64::from(q.batch_size),
            units: self.table.len() as u64,
            beta,
        }
    }

    fn checkpoint(
        &self,
        g: &G,
        ctx: LearnerContext<'_>,
        iteration: u32,
        _previous: Option<ObjectHash>,
    ) -> Result<Checkpoint, LearnerError> {
        let mut objects = Vec::new();
        let network = match &self.net {
            Some(net) => {
                let c = Learner::checkpoint(net, g, ctx, iteration, None)?;
                objects.extend(c.objects);
                Some(c.root)
            }
            None => None,
        };
        let root = QCheckpoint {
            iteration,
            num_actions: self.num_actions as u32,
            keys: self.table.keys().copied().collect(),
            rows: self
                .table
                .values()
                .flat_map(|r| r.q.iter().copied())
                .collect(),
            updates: self.table.values().map(|r| r.updates).collect(),
            network,
            stats: self.stats,
        };
        let enc = Encoded::of(&root)?;
        let hash = enc.hash;
        objects.push(enc);
        let bytes = objects.iter().map(|o| o.bytes.len() as u64).sum();
        Ok(Checkpoint {
            objects,
            root: hash,
            full: true,
            bytes,
        })
    }

    fn evaluate(&self, g: &G, ctx: LearnerContext<'_>, e: EvalContext<'_, G>) -> QEvaluation {
        let choose = |s: &G::State, past: &[G::State], legal: &[Action]| {
            self.greedy_action(g, s, past, legal)
        };
        let (mut wr_p, mut err_p) = (None, None);
        if let Some(truth) = e.truth {
            if e.plan.wr_p_games > 0 {
                wr_p = Some(win_rate_of(
                    g,
                    truth,
                    ctx.model_seed,
                    e.iteration,
                    e.plan.wr_p_games,
                    || (),
                    |_, s, past, legal| choose(s, past, legal),
                ));
            }
            if e.plan.errors {
                // Test positions: no game before them.
                err_p = Some(greedy_err_p(g, truth, &|s, legal| choose(s, &[], legal)));
            }
        }
        let games = self.settings.greedy_games;
        QEvaluation {
            iteration: e.iteration,
            wr_p,
            err_p,
            greedy: greedy_policy_score(g, games, ctx.model_seed, e.iteration, choose),
            stats: self.stats,
            rows: self.table.len() as u64,
        }
    }

    fn metric_values(e: &QEvaluation) -> MetricValues {
        let share = |n: u32, of: u32| f64::from(n) / f64::from(of.max(1));
        let gr = e.greedy.as_ref();
        let values = WinRate::values(e.wr_p.as_ref()).into_iter().chain([
            e.err_p,
            gr.map(|x| x.score),
            gr.map(|x| x.ci95),
            gr.map(|x| share(x.wins, x.games)),
            gr.map(|x| share(x.draws, x.games)),
            Some(e.stats.td_error),
            Some(e.stats.loss),
            Some(e.stats.transitions as f64),
            Some(e.stats.minibatches as f64),
            Some(e.rows as f64),
        ]);
        Q_METRICS
            .iter()
            .zip(values)
            .map(|(d, v)| (d.name, v))
            .collect()
    }
}

/// ERR_p of the greedy policy `choose` over the test positions: the expected value drop of
/// its move, sum_a p_a (v*_best - v*_a) with p one-hot on the move (docs/metrics.md).
fn greedy_err_p<G: Abilities>(
    g: &G,
    truth: &crate::eval::Truth<G>,
    choose: &impl Fn(&G::State, &[Action]) -> Action,
) -> f64 {
    let mut err = 0.0;
    let mut priors = Vec::new();
    for (key, solved) in truth.tests() {
        let Ok(s) = g.state_from_key(*key) else {
            continue;
        };
        let a = choose(&s, &solved.legal);
        priors.clear();
        priors.extend(solved.legal.iter().map(|&b| f64::from(u8::from(a == b))));
        err += solved.errors(&priors, 0.5).0;
    }
    err / truth.tests().len().max(1) as f64
}

#[cfg(test)]
mod tests;
