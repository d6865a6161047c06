//! Every knob of the PUCT search ([`SearchConfig`]), as the run spec's TOML spells it, and
//! its validation: each bad setting is named with its allowed range ([`SearchConfigError`]).
//! The conventions and their legacy values are described in docs/search.md.

use serde::{Deserialize, Serialize};

use super::arena::TieBreak;
use crate::error::SettingError;

/// The value of an unvisited edge in selection.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InitQ {
    /// Q = 0 (AlphaZero's default).
    #[default]
    Loss,
    /// Q = 0.5.
    Draw,
    /// Q = 1.
    Win,
    /// Q = +infinity: untried actions first; among several, the exploration term decides.
    First,
}

impl InitQ {
    /// The allowed names, for error messages.
    pub(crate) const NAMES: &'static str = "loss, draw, win, first";

    pub fn parse(text: &str) -> Option<InitQ> {
        match text.trim().to_ascii_lowercase().as_str() {
            "loss" => Some(InitQ::Loss),
            "draw" => Some(InitQ::Draw),
            "win" => Some(InitQ::Win),
            "first" => Some(InitQ::First),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            InitQ::Loss => "loss",
            InitQ::Draw => "draw",
            InitQ::Win => "win",
            InitQ::First => "first",
        }
    }

    /// The Q of an unvisited edge, `None` for `first` (+infinity).
    pub(super) fn value(self) -> Option<f64> {
        match self {
            InitQ::Loss => Some(0.0),
            InitQ::Draw => Some(0.5),
            InitQ::Win => Some(1.0),
            InitQ::First => None,
        }
    }
}

/// The most steps a simulation schedule may have.
pub(crate) const MAX_SIMULATION_STEPS: usize = 16;

/// N_sim: one count, or a schedule over iterations in the form of `learning_rate`
/// (`[[1, 2], [51, 16]]`: 2 simulations from iteration 1, 16 from iteration 51), MiniZero's
/// progressive simulation. A count is written as a plain number (the bytes of every run
/// before schedules existed); a schedule as its list. A search runs one count: a run
/// resolves the schedule for each iteration ([`SearchConfig::at_iteration`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Simulations {
    steps: [(u32, u32); MAX_SIMULATION_STEPS],
    len: u8,
}

impl Simulations {
    /// One count for every iteration.
    pub const fn fixed(n: u32) -> Simulations {
        let mut steps = [(0, 0); MAX_SIMULATION_STEPS];
        steps[0] = (1, n);
        Simulations { steps, len: 1 }
    }

    /// A schedule of (from_iteration, count) steps (validated by [`SearchConfig::validate`]);
    /// `None` when it has more than [`MAX_SIMULATION_STEPS`] steps or none.
    pub fn schedule(steps: &[(u32, u32)]) -> Option<Simulations> {
        if steps.is_empty() || steps.len() > MAX_SIMULATION_STEPS {
            return None;
        }
        let mut out = Simulations::fixed(0);
        out.steps[..steps.len()].copy_from_slice(steps);
        out.len = steps.len() as u8;
        Some(out)
    }

    /// The (from_iteration, count) steps.
    pub fn steps(&self) -> &[(u32, u32)] {
        &self.steps[..usize::from(self.len)]
    }

    /// Whether this is one count from iteration 1 (no schedule).
    pub(crate) fn is_fixed(&self) -> bool {
        self.len == 1 && self.steps[0].0 == 1
    }

    /// The count of the first step: a search's count (a resolved config has only that).
    pub fn first(&self) -> u32 {
        self.steps[0].1
    }

    /// The largest count of the schedule.
    pub fn max(&self) -> u32 {
        self.steps().iter().map(|s| s.1).max().unwrap_or(0)
    }

    /// The count at iteration `i` (1-based): the last step whose start is at most `i`.
    pub fn at(&self, i: u32) -> u32 {
        self.steps()
            .iter()
            .take_while(|s| s.0 <= i.max(1))
            .last()
            .map_or(self.first(), |s| s.1)
    }
}

impl From<u32> for Simulations {
    fn from(n: u32) -> Simulations {
        Simulations::fixed(n)
    }
}

impl std::fmt::Display for Simulations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_fixed() {
            return write!(f, "{}", self.first());
        }
        let parts: Vec<String> = self
            .steps()
            .iter()
            .map(|(i, n)| format!("[{i}, {n}]"))
            .collect();
        write!(f, "[{}]", parts.join(", "))
    }
}

impl Serialize for Simulations {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_fixed() {
            s.serialize_u32(self.first())
        } else {
            self.steps().serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for Simulations {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Simulations, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Text {
            Count(u32),
            Schedule(Vec<(u32, u32)>),
        }
        match Text::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "simulations: give an integer, or a schedule [[from_iteration, count], ...] \
                 like learning_rate",
            )
        })? {
            Text::Count(n) => Ok(Simulations::fixed(n)),
            Text::Schedule(steps) => Simulations::schedule(&steps).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "simulations: a schedule has 1 to {MAX_SIMULATION_STEPS} steps, this one {}",
                    steps.len()
                ))
            }),
        }
    }
}

/// The search run at every move: AlphaZero's PUCT or Gumbel AlphaZero (docs/search.md).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// PUCT with the root's visit counts as the policy target (AlphaZero).
    #[default]
    Puct,
    /// Gumbel AlphaZero (Danihelka et al., ICLR 2022): Gumbel-top-m at the root, sequential
    /// halving, completed Q-values, the improved policy as the target.
    Gumbel,
}

impl Algorithm {
    pub(crate) fn is_puct(&self) -> bool {
        *self == Algorithm::Puct
    }
}

/// How Gumbel search maps completed Q-values into [0, 1] before sigma (docs/search.md).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GumbelQScale {
    /// The values' known bounds (MuZero's `MinMaxStats` with `known_bounds`): tabula's values
    /// already lie in [0, 1] (loss 0, win 1), so Q is used as it is. The default.
    #[default]
    Bounds,
    /// Min-max over a node's completed Q-values (mctx's `qtransform_completed_by_mix_value`
    /// with `rescale_values = True`, mctx's default): blows the smallest difference up to
    /// the whole of [0, 1] (docs/search.md measures what that does below the root).
    MinMax,
}

impl GumbelQScale {
    pub(crate) fn is_bounds(&self) -> bool {
        *self == GumbelQScale::Bounds
    }
}

/// How a descent picks the outcome of a chance node (docs/search.md, "Chance nodes"). The
/// root is always a decision, so the rule applies below it, under PUCT and Gumbel alike.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChanceRule {
    /// An outcome drawn by its probability from the search's stream: unbiased, noisy at few
    /// simulations. The default, and every run's behaviour before the setting existed.
    #[default]
    Sample,
    /// The outcome c maximising P(c) / (N(c) + 1) (mctx's `stochastic_muzero_policy`, its
    /// chance-node selection; Antonoglou et al., ICLR 2022): visits spread over the outcomes
    /// in proportion to their probabilities without sampling noise. Exact ties by `tie_break`.
    Proportional,
}

impl ChanceRule {
    pub(crate) fn is_sample(&self) -> bool {
        *self == ChanceRule::Sample
    }

    /// The names a spec may give.
    pub(crate) const NAMES: &'static str = "sample, proportional";

    /// The rule of a name in [`ChanceRule::NAMES`].
    pub(crate) fn parse(text: &str) -> Option<ChanceRule> {
        match text {
            "sample" => Some(ChanceRule::Sample),
            "proportional" => Some(ChanceRule::Proportional),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            ChanceRule::Sample => "sample",
            ChanceRule::Proportional => "proportional",
        }
    }
}

/// Gumbel's defaults (the paper's and MiniZero's): m = 16, c_visit = 50, c_scale = 1.
pub(crate) const DEFAULT_GUMBEL_ACTIONS: u32 = 16;
pub(crate) const DEFAULT_C_VISIT: f64 = 50.0;
pub(crate) const DEFAULT_C_SCALE: f64 = 1.0;

fn is_default_gumbel_actions(m: &u32) -> bool {
    *m == DEFAULT_GUMBEL_ACTIONS
}

fn is_default_c_visit(c: &f64) -> bool {
    *c == DEFAULT_C_VISIT
}

fn is_default_c_scale(c: &f64) -> bool {
    *c == DEFAULT_C_SCALE
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn default_p_full() -> f64 {
    0.25
}

fn default_forced_k() -> f64 {
    2.0
}

/// KataGo's playout cap randomisation: with probability `p_full` a full search of
/// `simulations` with root noise, otherwise a fast search of `n_fast` without noise. Only
/// full searches are training targets ([`crate::search::SearchResult::full`]).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlayoutCap {
    #[serde(default = "default_p_full")]
    pub p_full: f64,
    pub n_fast: u32,
}

/// KataGo's forced playouts at the root of full searches: a root child c with N(c) > 0 and
/// N(c) < sqrt(k * P(c) * sum N) is selected first.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForcedPlayouts {
    #[serde(default = "default_forced_k")]
    pub k: f64,
}

impl Default for ForcedPlayouts {
    fn default() -> ForcedPlayouts {
        ForcedPlayouts { k: 2.0 }
    }
}

/// Every knob of the search. `Default` is the literature's (c_puct 1, alpha 1.5, epsilon
/// 0.25, tau 1, every move sampled, 800 simulations, init_q loss, KataGo options off, and the
/// three counting and tie conventions as the papers describe them); a spec that omits a key
/// gets that default. [`SearchConfig::legacy_defaults`] differs only in the three
/// conventions, which take the `LEGACY_*` values: the behaviour of runs stored before the
/// conventions were settings (docs/search.md).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    pub c_puct: f64,
    pub dirichlet_alpha: f64,
    /// Weight of the root noise; 0 turns it off (evaluation play).
    pub dirichlet_epsilon: f64,
    /// tau: moves are sampled with probability proportional to N^(1/tau); 0 takes the most
    /// visited action.
    pub temperature: f64,
    /// Only the first `k` moves of a game (plies, both players counted) are sampled; later
    /// moves take the most visited action. `None`: every move is sampled.
    pub sample_moves: Option<u32>,
    /// N_sim, or a schedule over iterations ([`Simulations`]).
    pub simulations: Simulations,
    pub init_q: InitQ,
    pub playout_cap: Option<PlayoutCap>,
    pub forced_playouts: Option<ForcedPlayouts>,
    /// Policy target pruning (needs `forced_playouts`).
    pub policy_target_pruning: bool,
    /// Whether a node's count N(s) = sum_b N(s, b) in the exploration term also counts the
    /// simulation that expanded s. AlphaZero's published pseudocode backs the value up into
    /// the leaf too, so a node reached again has N(s) >= 1 and its priors decide its first
    /// selection; without it, sqrt(N(s)) = 0 there and every edge scores init_q alone (a tie
    /// for all but `first`). Applies to every node whose expansion was a simulation: every
    /// node below the root, and the root when `expansion_is_simulation`. Default `true`;
    /// legacy [`SearchConfig::LEGACY_COUNT_EXPANSION_VISIT`].
    pub count_expansion_visit: bool,
    /// Whether the root's expansion is one of the `simulations` (and of `n_fast`): Hsueh et
    /// al. 2023 count "8+1 simulations to try all 8 actions once, 1 for expanding the root",
    /// so N_sim simulations make N_sim - 1 descents and the root's visit counts sum to
    /// N_sim - 1. Otherwise the root is expanded before N_sim descents. Default `true`;
    /// legacy [`SearchConfig::LEGACY_EXPANSION_IS_SIMULATION`].
    pub expansion_is_simulation: bool,
    /// How exact ties are broken, in PUCT selection and in taking the most visited action.
    /// Default `random`; legacy [`SearchConfig::LEGACY_TIE_BREAK`] (`lowest`).
    pub tie_break: TieBreak,
    /// `puct` (default) or `gumbel`. The Gumbel settings below are read only under
    /// `gumbel`; every one is left out of a settings record at its default, so runs stored
    /// before they existed keep their bytes.
    #[serde(skip_serializing_if = "Algorithm::is_puct")]
    pub algorithm: Algorithm,
    /// m: the root actions Gumbel-top-m samples (at most the legal ones). Default 16.
    #[serde(skip_serializing_if = "is_default_gumbel_actions")]
    pub gumbel_actions: u32,
    /// c_visit of sigma(q) = (c_visit + max_b N(b)) * c_scale * q. Default 50.
    #[serde(skip_serializing_if = "is_default_c_visit")]
    pub c_visit: f64,
    /// c_scale of sigma. Default 1.
    #[serde(skip_serializing_if = "is_default_c_scale")]
    pub c_scale: f64,
    /// How completed Q-values are brought into [0, 1]: `bounds` (default: as they are) or
    /// `min_max` (mctx).
    #[serde(skip_serializing_if = "GumbelQScale::is_bounds")]
    pub gumbel_q_scale: GumbelQScale,
    /// Whether evaluation play (`dirichlet_epsilon = 0`) draws Gumbel noise too. Default
    /// false: evaluation play ranks the root's actions by logits + sigma(q) alone.
    #[serde(skip_serializing_if = "is_false")]
    pub gumbel_eval_noise: bool,
    /// Gumbel: the scale of the root's Gumbel noise g(a) (mctx's `gumbel_scale`; g ~
    /// Gumbel(0, 1) times the scale, 0 draws nothing). Unset (the default, left out of the
    /// record): 1 in self-play and 0 in evaluation play, which evaluation play tells apart
    /// by its `dirichlet_epsilon = 0` as every Gumbel run stored before the setting did
    /// ([`SearchConfig::gumbel_noise_scale`]); a self-play spec that sets
    /// `dirichlet_epsilon = 0` under Gumbel must say the scale it means
    /// ([`SearchConfig::validate_self_play`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gumbel_scale: Option<f64>,
    /// How a chance node below the root picks its outcome ([`ChanceRule`]). Default
    /// `sample`, left out of the record there.
    #[serde(skip_serializing_if = "ChanceRule::is_sample")]
    pub chance: ChanceRule,
}

impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig {
            c_puct: 1.0,
            dirichlet_alpha: 1.5,
            dirichlet_epsilon: 0.25,
            temperature: 1.0,
            sample_moves: None,
            simulations: Simulations::fixed(800),
            init_q: InitQ::Loss,
            playout_cap: None,
            forced_playouts: None,
            policy_target_pruning: false,
            count_expansion_visit: true,
            expansion_is_simulation: true,
            tie_break: TieBreak::Random,
            algorithm: Algorithm::Puct,
            gumbel_actions: DEFAULT_GUMBEL_ACTIONS,
            c_visit: DEFAULT_C_VISIT,
            c_scale: DEFAULT_C_SCALE,
            gumbel_q_scale: GumbelQScale::Bounds,
            gumbel_eval_noise: false,
            gumbel_scale: None,
            chance: ChanceRule::Sample,
        }
    }
}

/// A search setting outside its allowed range: the shared [`SettingError`] (its key is the
/// `SearchConfig` field), prefixed `search setting`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("search setting {0}")]
pub struct SearchConfigError(pub SettingError);

impl SearchConfig {
    /// `count_expansion_visit` of runs stored before the setting existed.
    pub(crate) const LEGACY_COUNT_EXPANSION_VISIT: bool = false;
    /// `expansion_is_simulation` of runs stored before the setting existed.
    pub(crate) const LEGACY_EXPANSION_IS_SIMULATION: bool = false;
    /// `tie_break` of runs stored before the setting existed.
    pub const LEGACY_TIE_BREAK: TieBreak = TieBreak::Lowest;

    /// The defaults with the legacy conventions: what a settings record written before the
    /// conventions were settings means.
    #[cfg(test)]
    pub(crate) fn legacy_defaults() -> SearchConfig {
        SearchConfig::default().with_legacy_conventions()
    }

    /// This config with the three conventions set to their legacy values.
    pub fn with_legacy_conventions(self) -> SearchConfig {
        SearchConfig {
            count_expansion_visit: SearchConfig::LEGACY_COUNT_EXPANSION_VISIT,
            expansion_is_simulation: SearchConfig::LEGACY_EXPANSION_IS_SIMULATION,
            tie_break: SearchConfig::LEGACY_TIE_BREAK,
            ..self
        }
    }

    /// Whether all three conventions have their legacy values (so the config is expressible
    /// in the first settings layout).
    pub fn has_legacy_conventions(&self) -> bool {
        *self == self.with_legacy_conventions()
    }

    /// The keys a settings record leaves out at their defaults (the Gumbel settings), with
    /// this config's values: what `--set`, branches and sweeps may name although a PUCT
    /// run's JSON lacks them.
    pub(crate) fn optional_keys(&self) -> Vec<(&'static str, serde_json::Value)> {
        vec![
            ("algorithm", json(&self.algorithm)),
            ("gumbel_actions", json(&self.gumbel_actions)),
            ("c_visit", json(&self.c_visit)),
            ("c_scale", json(&self.c_scale)),
            ("gumbel_q_scale", json(&self.gumbel_q_scale)),
            ("gumbel_eval_noise", json(&self.gumbel_eval_noise)),
            ("gumbel_scale", json(&self.gumbel_scale)),
            ("chance", json(&self.chance)),
        ]
    }

    /// The least `simulations` (and `n_fast`): 2 when the root's expansion is one of them
    /// (so at least one descent visits a root edge), else 1.
    pub(crate) fn min_simulations(&self) -> u32 {
        if self.expansion_is_simulation { 2 } else { 1 }
    }

    /// This config with its simulation schedule resolved for iteration `i` (one count).
    pub fn at_iteration(self, i: u32) -> SearchConfig {
        SearchConfig {
            simulations: Simulations::fixed(self.simulations.at(i)),
            ..self
        }
    }

    /// The scale of the root's Gumbel noise in this search: `gumbel_scale` when set, else
    /// 1 with `dirichlet_epsilon > 0` (self-play) or `gumbel_eval_noise`, else 0 (evaluation
    /// play). The unset case is how every Gumbel run stored before the setting drew noise.
    pub(crate) fn gumbel_noise_scale(&self) -> f64 {
        match self.gumbel_scale {
            Some(s) => s,
            None if self.dirichlet_epsilon > 0.0 || self.gumbel_eval_noise => 1.0,
            None => 0.0,
        }
    }

    /// This search as evaluation play: no root noise (Dirichlet, and Gumbel unless
    /// `gumbel_eval_noise`), the most visited action, every search full. Every evaluation
    /// of a run's search (reference games, gating, `model:` players) goes through here.
    pub(crate) fn as_evaluation(self) -> SearchConfig {
        SearchConfig {
            dirichlet_epsilon: 0.0,
            temperature: 0.0,
            playout_cap: None,
            // Unset with epsilon 0 is scale 0; with `gumbel_eval_noise` the run's scale.
            gumbel_scale: self.gumbel_scale.filter(|_| self.gumbel_eval_noise),
            ..self
        }
    }

    /// Evaluation play: no root noise, always the most visited action.
    pub fn evaluation(simulations: u32) -> SearchConfig {
        SearchConfig {
            simulations: Simulations::fixed(simulations),
            ..SearchConfig::default().as_evaluation()
        }
    }

    /// Checks every setting; the error names the first bad key and its allowed range.
    pub(crate) fn validate(&self) -> Result<(), SearchConfigError> {
        let c = self.c_puct;
        let literature_c = "a finite number >= 0 (the literature sweeps 1/64..64)";
        require(c.is_finite() && c >= 0.0, "c_puct", c, literature_c)?;
        let a = self.dirichlet_alpha;
        let literature_a = "a finite number > 0 (the literature sweeps 0.03..12)";
        require(a.is_finite() && a > 0.0, "dirichlet_alpha", a, literature_a)?;
        let e = self.dirichlet_epsilon;
        require(in_unit(e), "dirichlet_epsilon", e, UNIT)?;
        let t = self.temperature;
        let literature_t = "a finite number >= 0 (0: most visited; the literature sweeps 1/16..16)";
        require(t.is_finite() && t >= 0.0, "temperature", t, literature_t)?;
        self.validate_simulations()?;
        self.validate_gumbel()?;
        if let Some(fp) = self.forced_playouts {
            let katago = "a finite number > 0 (KataGo: 2)";
            require(
                fp.k.is_finite() && fp.k > 0.0,
                "forced_playouts.k",
                fp.k,
                katago,
            )?;
        }
        require(
            !self.policy_target_pruning || self.forced_playouts.is_some(),
            "policy_target_pruning",
            true,
            "true only together with `forced_playouts` (pruning removes forced visits)",
        )
    }

    /// The Gumbel settings: m >= 1, c_visit >= 0, c_scale > 0 (finite); and under `gumbel`
    /// none of KataGo's PUCT options, which Gumbel search has no place for.
    fn validate_gumbel(&self) -> Result<(), SearchConfigError> {
        let m = self.gumbel_actions;
        let allowed_m = "an integer >= 1 (the paper and MiniZero: 16; more than the legal \
                         actions means all of them)";
        require(m >= 1, "gumbel_actions", m, allowed_m)?;
        let v = self.c_visit;
        require(
            v.is_finite() && v >= 0.0,
            "c_visit",
            v,
            "a finite number >= 0 (the paper: 50)",
        )?;
        let c = self.c_scale;
        require(
            c.is_finite() && c > 0.0,
            "c_scale",
            c,
            "a finite number > 0 (the paper: 1, or 0.1)",
        )?;
        if let Some(g) = self.gumbel_scale {
            let allowed = "a finite number >= 0 (mctx: 1 in self-play; 0 draws no noise)";
            require(g.is_finite() && g >= 0.0, "gumbel_scale", g, allowed)?;
            let puct = "absent when `algorithm = \"puct\"` (the scale of Gumbel search's root \
                        noise; PUCT's root noise is `dirichlet_epsilon`)";
            require(self.algorithm == Algorithm::Gumbel, "gumbel_scale", g, puct)?;
        }
        if self.algorithm == Algorithm::Gumbel {
            let none = "absent when `algorithm = \"gumbel\"` (a KataGo option of the PUCT search)";
            if let Some(pc) = self.playout_cap {
                require(false, "playout_cap", pc.n_fast, none)?;
            }
            if let Some(fp) = self.forced_playouts {
                require(false, "forced_playouts", fp.k, none)?;
            }
        }
        Ok(())
    }

    /// What a self-play search (a run's `[search]`) may not say, beyond [`Self::validate`]:
    /// under Gumbel, `dirichlet_epsilon = 0` without `gumbel_scale`. Gumbel search reads no
    /// Dirichlet noise; the zero once switched its Gumbel noise off silently, leaving
    /// self-play deterministic and the policy-improvement guarantee void (it assumes sampled
    /// noise), so the spec must name the scale it means.
    pub(crate) fn validate_self_play(&self) -> Result<(), SearchConfigError> {
        let silent = self.algorithm == Algorithm::Gumbel
            && self.dirichlet_epsilon == 0.0
            && self.gumbel_scale.is_none();
        require(
            !silent,
            "dirichlet_epsilon",
            self.dirichlet_epsilon,
            "> 0, or any value with `gumbel_scale` set (Gumbel search reads no Dirichlet \
             noise; a 0 here once switched its Gumbel noise off silently): set \
             `gumbel_scale = 1` for self-play's Gumbel noise (mctx) or `gumbel_scale = 0` \
             for none",
        )
    }

    /// `simulations` and the playout cap's `p_full` and `n_fast`: both counts are at least
    /// [`SearchConfig::min_simulations`], and the fast search is smaller than the full one.
    fn validate_simulations(&self) -> Result<(), SearchConfigError> {
        let (at_least, below) = if self.expansion_is_simulation {
            (
                "an integer >= 2 (`expansion_is_simulation`: one simulation expands the root)",
                "an integer >= 2 and below `simulations`",
            )
        } else {
            ("an integer >= 1", "an integer >= 1 and below `simulations`")
        };
        let min = self.min_simulations();
        let steps = self.simulations.steps();
        if self.simulations.is_fixed() {
            let sims = self.simulations.first();
            require(sims >= min, "simulations", sims, at_least)?;
        }
        let step = |i: usize| format!("[{}, {}]", steps[i].0, steps[i].1);
        let bad = |i: usize, allowed: &str| {
            Err(SearchConfigError(SettingError::new(
                format!("simulations[{i}]"),
                step(i),
                allowed,
            )))
        };
        if steps[0].0 != 1 {
            return bad(0, "a first step from iteration 1, e.g. [1, 2]");
        }
        for i in 0..steps.len() {
            if steps[i].1 < min {
                return bad(i, &format!("a count >= {min} ({at_least})"));
            }
            if i > 0 && steps[i].0 <= steps[i - 1].0 {
                return bad(i, "from_iteration strictly increasing along the list");
            }
        }
        if let Some(pc) = self.playout_cap {
            require(in_unit(pc.p_full), "playout_cap.p_full", pc.p_full, UNIT)?;
            let n = pc.n_fast;
            let least = steps.iter().map(|s| s.1).min().unwrap_or(0);
            require(n >= min && n < least, "playout_cap.n_fast", n, below)?;
        }
        Ok(())
    }
}

/// A value as JSON (for [`SearchConfig::optional_keys`]).
fn json<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// The allowed range of a probability or a mixing weight.
const UNIT: &str = "a number in [0, 1]";

/// Whether `x` lies in [0, 1] (NaN does not).
fn in_unit(x: f64) -> bool {
    (0.0..=1.0).contains(&x)
}

/// `Ok` when `ok`; otherwise the error naming `key`, its `value` and the `allowed` range.
fn require(
    ok: bool,
    key: &'static str,
    value: impl ToString,
    allowed: &'static str,
) -> Result<(), SearchConfigError> {
    if ok {
        return Ok(());
    }
    Err(SearchConfigError(SettingError::new(key, value, allowed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The noise scale a search uses: the setting when given; unset, 1 in self-play
    /// (epsilon > 0) and 0 in evaluation play unless `gumbel_eval_noise` (the behaviour of
    /// every Gumbel run before the setting). Evaluation play drops a set scale unless
    /// `gumbel_eval_noise`, and the playout cap.
    #[test]
    fn the_gumbel_noise_scale_is_explicit_or_what_it_always_was() {
        let gumbel = SearchConfig {
            algorithm: Algorithm::Gumbel,
            ..SearchConfig::default()
        };
        let with = |scale, eps, eval_noise| SearchConfig {
            gumbel_scale: scale,
            dirichlet_epsilon: eps,
            gumbel_eval_noise: eval_noise,
            ..gumbel
        };
        assert_eq!(with(None, 0.25, false).gumbel_noise_scale(), 1.0);
        assert_eq!(with(None, 0.0, false).gumbel_noise_scale(), 0.0);
        assert_eq!(with(None, 0.0, true).gumbel_noise_scale(), 1.0);
        assert_eq!(with(Some(0.5), 0.0, false).gumbel_noise_scale(), 0.5);
        assert_eq!(with(Some(0.0), 0.25, false).gumbel_noise_scale(), 0.0);
        let eval = with(Some(2.0), 0.25, false).as_evaluation();
        assert_eq!((eval.gumbel_noise_scale(), eval.temperature), (0.0, 0.0));
        assert_eq!(
            with(Some(2.0), 0.25, true)
                .as_evaluation()
                .gumbel_noise_scale(),
            2.0
        );
        assert_eq!(
            with(None, 0.25, true).as_evaluation().gumbel_noise_scale(),
            1.0
        );
        let capped = SearchConfig {
            playout_cap: Some(PlayoutCap {
                p_full: 0.25,
                n_fast: 2,
            }),
            ..SearchConfig::default()
        };
        assert_eq!(capped.as_evaluation().playout_cap, None);
    }

    /// `gumbel_scale` and `chance` read from TOML, are left out of the record at their
    /// defaults and written when set; a scale must be finite, at least 0 and under Gumbel;
    /// a self-play Gumbel search may not switch its noise off by `dirichlet_epsilon = 0`.
    #[test]
    fn the_scale_and_the_chance_rule_parse_record_and_refuse() {
        let plain = serde_json::to_string(&SearchConfig::default()).unwrap();
        assert!(
            !plain.contains("chance") && !plain.contains("gumbel_scale"),
            "{plain}"
        );
        let text = "algorithm = \"gumbel\"\ngumbel_scale = 0.5\nchance = \"proportional\"\n";
        let cfg: SearchConfig = toml::from_str(text).unwrap();
        assert_eq!(
            (cfg.gumbel_scale, cfg.chance),
            (Some(0.5), ChanceRule::Proportional)
        );
        let json = serde_json::to_string(&cfg).unwrap();
        assert!(
            json.contains("\"gumbel_scale\":0.5") && json.contains("\"chance\":\"proportional\"")
        );
        assert!(cfg.validate().is_ok() && cfg.validate_self_play().is_ok());
        let key = |c: SearchConfig| c.validate().unwrap_err().0.key;
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(
                key(SearchConfig {
                    gumbel_scale: Some(bad),
                    ..cfg
                }),
                "gumbel_scale"
            );
        }
        let puct = SearchConfig {
            algorithm: Algorithm::Puct,
            ..cfg
        };
        assert_eq!(key(puct), "gumbel_scale");
        let silent = SearchConfig {
            gumbel_scale: None,
            dirichlet_epsilon: 0.0,
            ..cfg
        };
        assert!(silent.validate().is_ok(), "evaluation play's form");
        let e = silent.validate_self_play().unwrap_err().0;
        assert_eq!(e.key, "dirichlet_epsilon");
        assert!(e.to_string().contains("gumbel_scale"), "{e}");
        let on_purpose = SearchConfig {
            gumbel_scale: Some(0.0),
            ..silent
        };
        assert!(on_purpose.validate_self_play().is_ok());
        assert_eq!(
            ChanceRule::parse("proportional"),
            Some(ChanceRule::Proportional)
        );
        assert_eq!(ChanceRule::parse("uniform"), None);
    }

    /// The paper's conventions are the defaults; the legacy ones are today's behaviour.
    #[test]
    fn conventions_default_to_the_paper_and_legacy_to_the_old_search() {
        let d = SearchConfig::default();
        assert!(d.count_expansion_visit && d.expansion_is_simulation);
        assert_eq!(d.tie_break, TieBreak::Random);
        let l = SearchConfig::legacy_defaults();
        assert!(!l.count_expansion_visit && !l.expansion_is_simulation);
        assert_eq!(l.tie_break, TieBreak::Lowest);
        assert!(l.has_legacy_conventions() && !d.has_legacy_conventions());
        assert_eq!(
            l,
            SearchConfig {
                count_expansion_visit: false,
                expansion_is_simulation: false,
                tie_break: TieBreak::Lowest,
                ..d
            }
        );
    }

    /// `simulations` as a count or a schedule: a count reads and writes as the plain number
    /// (the bytes of runs before schedules), a schedule as its list; each iteration gets the
    /// last step started; bad schedules are refused naming the step and the rule.
    #[test]
    fn simulation_schedules_parse_resolve_and_refuse() {
        let plain: SearchConfig = toml::from_str("simulations = 16").unwrap();
        assert_eq!(plain.simulations, Simulations::fixed(16));
        let json = serde_json::to_string(&plain).unwrap();
        assert!(json.contains("\"simulations\":16,"), "{json}");
        // Every Gumbel key is left out at its default.
        assert!(
            !json.contains("gumbel") && !json.contains("algorithm"),
            "{json}"
        );
        let cfg: SearchConfig = toml::from_str("simulations = [[1, 2], [51, 16]]").unwrap();
        assert!(cfg.validate().is_ok());
        assert_eq!(cfg.simulations.steps(), &[(1, 2), (51, 16)]);
        let at: Vec<u32> = [0, 1, 50, 51, 100].map(|i| cfg.simulations.at(i)).to_vec();
        assert_eq!(at, [2, 2, 2, 16, 16]);
        assert_eq!(cfg.at_iteration(51).simulations, Simulations::fixed(16));
        assert_eq!(cfg.simulations.max(), 16);
        let json = serde_json::to_string(&cfg).unwrap();
        assert!(json.contains("\"simulations\":[[1,2],[51,16]]"), "{json}");
        let back: SearchConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, cfg);
        assert_eq!(cfg.simulations.to_string(), "[[1, 2], [51, 16]]");
        // A search needs one count.
        let e = crate::search::Search::<crate::search::toy::TreeGame>::new(cfg).unwrap_err();
        assert_eq!(e.0.key, "simulations");
        for (text, key) in [
            ("[[2, 4]]", "simulations[0]"),
            ("[[1, 4], [1, 8]]", "simulations[1]"),
            ("[[1, 4], [5, 8], [3, 16]]", "simulations[2]"),
            ("[[1, 1], [5, 8]]", "simulations[0]"),
            ("[[1, 4], [5, 0]]", "simulations[1]"),
        ] {
            let cfg: SearchConfig = toml::from_str(&format!("simulations = {text}")).unwrap();
            let e = cfg.validate().unwrap_err();
            assert_eq!(e.0.key, key, "{text}");
            assert!(e.to_string().contains("allowed"), "{e}");
        }
        for text in ["[]", "[[1, 2, 3]]", "\"many\"", "[[1, -2]]", "-3"] {
            let e = toml::from_str::<SearchConfig>(&format!("simulations = {text}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("simulations"), "{text}: {e}");
        }
        let long: Vec<String> = (1..=17).map(|i| format!("[{i}, 4]")).collect();
        let e = toml::from_str::<SearchConfig>(&format!("simulations = [{}]", long.join(", ")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 to 16 steps"), "{e}");
    }

    /// The Gumbel settings: read from TOML, checked by name, refused beside KataGo's options.
    #[test]
    fn gumbel_settings_read_and_refuse() {
        let cfg: SearchConfig = toml::from_str(
            "algorithm = \"gumbel\"\ngumbel_actions = 4\nc_visit = 30.0\nc_scale = 0.1\n\
             gumbel_q_scale = \"min_max\"\ngumbel_eval_noise = true\n",
        )
        .unwrap();
        assert_eq!(cfg.algorithm, Algorithm::Gumbel);
        assert_eq!(
            (cfg.gumbel_actions, cfg.c_visit, cfg.c_scale),
            (4, 30.0, 0.1)
        );
        assert_eq!(cfg.gumbel_q_scale, GumbelQScale::MinMax);
        assert!(cfg.gumbel_eval_noise && cfg.validate().is_ok());
        let e = toml::from_str::<SearchConfig>("algorithm = \"gumble\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("gumble") && e.contains("gumbel"), "{e}");
        for (bad, key) in [
            (
                SearchConfig {
                    gumbel_actions: 0,
                    ..cfg
                },
                "gumbel_actions",
            ),
            (
                SearchConfig {
                    c_visit: -1.0,
                    ..cfg
                },
                "c_visit",
            ),
            (
                SearchConfig {
                    c_scale: 0.0,
                    ..cfg
                },
                "c_scale",
            ),
            (
                SearchConfig {
                    forced_playouts: Some(ForcedPlayouts { k: 2.0 }),
                    ..cfg
                },
                "forced_playouts",
            ),
            (
                SearchConfig {
                    playout_cap: Some(PlayoutCap {
                        p_full: 0.5,
                        n_fast: 2,
                    }),
                    simulations: 8.into(),
                    ..cfg
                },
                "playout_cap",
            ),
        ] {
            let e = bad.validate().unwrap_err();
            assert_eq!(e.0.key, key);
            assert!(e.to_string().contains("allowed"), "{e}");
        }
    }

    #[test]
    fn config_validation_names_the_key_and_range() {
        let bad = [
            (
                SearchConfig {
                    c_puct: -1.0,
                    ..Default::default()
                },
                "c_puct",
            ),
            (
                SearchConfig {
                    dirichlet_alpha: 0.0,
                    ..Default::default()
                },
                "dirichlet_alpha",
            ),
            (
                SearchConfig {
                    dirichlet_epsilon: 1.5,
                    ..Default::default()
                },
                "dirichlet_epsilon",
            ),
            (
                SearchConfig {
                    temperature: f64::NAN,
                    ..Default::default()
                },
                "temperature",
            ),
            (
                SearchConfig {
                    simulations: 0.into(),
                    ..Default::default()
                },
                "simulations",
            ),
            (
                SearchConfig {
                    playout_cap: Some(PlayoutCap {
                        p_full: 0.25,
                        n_fast: 800,
                    }),
                    ..Default::default()
                },
                "playout_cap.n_fast",
            ),
            (
                SearchConfig {
                    policy_target_pruning: true,
                    ..Default::default()
                },
                "policy_target_pruning",
            ),
        ];
        for (cfg, key) in bad {
            let e = cfg.validate().unwrap_err();
            assert_eq!(e.0.key, key);
            assert!(e.to_string().contains("allowed"), "{e}");
        }
        assert!(SearchConfig::default().validate().is_ok());
    }

    #[test]
    fn config_reads_the_run_spec_toml() {
        let cfg: SearchConfig = toml::from_str(
            "c_puct = 2.0\nsimulations = 100\ninit_q = \"first\"\nsample_moves = 30\n\
             playout_cap = { n_fast = 20 }\nforced_playouts = {}\npolicy_target_pruning = true\n",
        )
        .unwrap();
        assert_eq!(cfg.c_puct, 2.0);
        assert_eq!(cfg.init_q, InitQ::First);
        assert_eq!(cfg.sample_moves, Some(30));
        assert_eq!(
            cfg.playout_cap,
            Some(PlayoutCap {
                p_full: 0.25,
                n_fast: 20
            })
        );
        assert_eq!(cfg.forced_playouts, Some(ForcedPlayouts { k: 2.0 }));
        assert_eq!(cfg.dirichlet_alpha, 1.5);
        assert!(cfg.validate().is_ok());
        let e = toml::from_str::<SearchConfig>("cpuct = 2.0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cpuct"), "{e}");
        // The conventions: paper defaults when omitted, legacy values spelled out, named errors.
        let omitted: SearchConfig = toml::from_str("simulations = 6").unwrap();
        assert_eq!(
            omitted,
            SearchConfig {
                simulations: 6.into(),
                ..SearchConfig::default()
            }
        );
        let legacy: SearchConfig = toml::from_str(
            "count_expansion_visit = false\nexpansion_is_simulation = false\ntie_break = \"lowest\"\n",
        )
        .unwrap();
        assert_eq!(legacy, SearchConfig::legacy_defaults());
        let e = toml::from_str::<SearchConfig>("tie_break = \"rnd\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rnd") && e.contains("random") && e.contains("lowest"),
            "{e}"
        );
        let e = toml::from_str::<SearchConfig>("count_expansion_visit = 1")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("count_expansion_visit") || e.contains("bool"),
            "{e}"
        );
        let e = SearchConfig {
            simulations: 1.into(),
            ..omitted
        }
        .validate()
        .unwrap_err();
        assert_eq!((e.0.key.as_str(), e.0.value.as_str()), ("simulations", "1"));
        let ok = SearchConfig {
            simulations: 1.into(),
            expansion_is_simulation: false,
            ..omitted
        };
        assert!(ok.validate().is_ok());
    }
}
