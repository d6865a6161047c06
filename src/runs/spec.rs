//! Run specs: TOML in, a validated [`RunConfig`] out. Errors name the bad key and the allowed
//! range; unknown keys are errors (`deny_unknown_fields` at every level).
//!
//! ```toml
//! name = "quick"
//! variant = "ewn:3x3x3"
//! seed = 1                  # optional: drawn once from the OS and recorded when absent
//! iterations = 20           # N
//! games_per_iteration = 100 # M (default 1000); or a [budget] instead (see below)
//! window = 2                # K: train on the games of the last K iterations (default 2)
//! learning_rate = [[1, 1.0], [11, 0.1]]  # (from_iteration, beta); default 1, then 0.1 at half
//! init_std = 0.01           # std of the initial Normal entries (default 0.01)
//! checkpoint_every = 10     # full table snapshot every this many iterations (default 10)
//!
//! [search]                  # the search's SearchConfig, same keys and defaults
//! simulations = 50
//!
//! [eval]
//! games = 2000              # WR_p games (default 10,000)
//! wr_p = true               # WR_p against the optimal player (needs a solvable variant)
//! errors = true             # ERR_p and MAE_v (needs a solvable variant)
//!
//! [budget]                  # instead of games_per_iteration: exactly one of
//! moves = 20000             # self-play moves, `simulations = N` or `seconds = T` (T_self)
//! ```
//!
//! With a budget an iteration keeps the shortest prefix of its games, in game order, that
//! reaches it (runs/budget.rs, docs/budgets.md).
//!
//! The hashed part of a run ([`Settings`]) leaves out `name` (a label) and `iterations` (a
//! plan: extending a run keeps its chain); `variant` and `seed` sit in the run record beside
//! the settings' hash.

use serde::{Deserialize, Serialize};

use super::budget::{BUDGET_PROGRESS_UNITS, Budget, BudgetKind};
use super::retention::KeepGames;
use super::stages::{RawStage, Stage, stage_label, stages_of};
use crate::error::{GameError, SettingError};
use crate::games::{Ability, AnyGame, families_with};
pub use crate::learners::LearnerSettings;
use crate::learners::{LearnerContext, SettingsCheck};
use crate::search::{SearchConfig, SearchConfigError};
use crate::selfplay::{Mover, Opponent, SelfPlaySettings};
use crate::start::StartSettings;
use crate::store::{Annotations, check_note, check_tag};

/// The most games one iteration's self-play, one WR_p evaluation or one match may have.
/// Generous (the literature uses at most 10 000) yet small enough that a run's per-iteration
/// records fit in memory; larger values are refused before any work (docs/limits.md).
pub const MAX_GAMES: u32 = 1_000_000;

/// The most simulations one search may run: a search tree of this many nodes fits in tens of
/// MB per thread (the literature uses at most a few hundred). See docs/limits.md.
pub const MAX_SIMULATIONS: u32 = 1_000_000;

/// The most bytes a run spec or a sweep file may have: far more than any spec needs (a few
/// KB), so `tabula run /dev/zero` stops at once instead of filling memory. docs/limits.md.
pub(crate) const MAX_SPEC_BYTES: u64 = 1 << 20;

/// Reads a run spec or a sweep file as text, at most [`MAX_SPEC_BYTES`] of it: a larger file
/// (or an endless one, a device) is an error of kind `InvalidData` saying so, as is text that
/// is not UTF-8. Every spec and sweep file is read here.
pub fn read_spec_file(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    if path.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "that is a directory; give a TOML file",
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_SPEC_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SPEC_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {MAX_SPEC_BYTES} bytes, the most a spec or sweep file may have"),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Evaluation settings.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvalSettings {
    /// Games of WR_p, half with the table player first.
    pub games: u32,
    /// Measure WR_p against the optimal player.
    pub wr_p: bool,
    /// Measure ERR_p and MAE_v on S_test and on the updated positions.
    pub errors: bool,
    /// K: the model is measured (every metric, every reference match) after every K-th
    /// iteration and after the run's last planned one; the others store a `not-measured/v1`
    /// evaluation (docs/metrics.md, "The evaluation interval"). Training, gating included,
    /// runs every iteration. Left out of the record at 1 (every iteration, the behaviour of
    /// runs stored before the key existed), so their settings hashes stay.
    #[serde(skip_serializing_if = "is_one")]
    pub every: u32,
}

fn is_one(k: &u32) -> bool {
    *k == 1
}

impl Default for EvalSettings {
    fn default() -> EvalSettings {
        EvalSettings {
            games: 10_000,
            wr_p: true,
            errors: true,
            every: 1,
        }
    }
}

impl EvalSettings {
    /// Whether the model is measured after iteration `i` of a run planned to `planned`
    /// iterations: every `every`-th iteration and the last planned one (iteration 0, the
    /// untrained model, is measured apart from this, by the baseline).
    pub(crate) fn measures(&self, i: u32, planned: u32) -> bool {
        i == planned || i.is_multiple_of(self.every.max(1))
    }
}

/// The settings of a run that decide its results. Stored as `settings/v1` (the frozen layout
/// `SettingsV1` of runs/settings_codec.rs) when they are expressible in it, else as
/// `settings/v2` (canonical JSON); see docs/learners.md.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// M: self-play games per iteration; `None` when `budget` decides (exactly one of the
    /// two is given, [`RunConfig::validate`]). Left out of the record when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub games_per_iteration: Option<u32>,
    /// K.
    pub window: u32,
    /// (from_iteration, beta), ascending, the first from iteration 1.
    pub learning_rate: Vec<(u32, f64)>,
    pub init_std: f64,
    pub checkpoint_every: u32,
    pub search: SearchConfig,
    pub eval: EvalSettings,
    /// The learner (added with settings/v2; legacy value: tabular AlphaZero).
    #[serde(default)]
    pub learner: LearnerSettings,
    /// Where self-play games start (added with settings/v2; legacy value: the game's start).
    #[serde(default)]
    pub start: StartSettings,
    /// The self-play budget per iteration instead of M (runs/budget.rs; legacy value and
    /// spec default: none). Left out of the record when `None`, so no earlier run's settings
    /// hash changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// Who plays self-play's moves (`[selfplay]`; the search unless told otherwise). Left out
    /// of the record at its defaults.
    #[serde(default, skip_serializing_if = "SelfPlaySettings::is_default")]
    pub selfplay: SelfPlaySettings,
    /// The run's stages (`[[stage]]`, runs/stages.rs): none unless given, and then left out of
    /// the record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
}

impl Settings {
    /// The validated budget, if the run has one (validation checked it).
    pub fn budget_kind(&self) -> Option<BudgetKind> {
        self.budget.and_then(|b| b.kind().ok())
    }

    /// Units of progress per iteration: M games, or the thousandths of a budget.
    pub fn progress_units(&self) -> u32 {
        self.games_per_iteration.unwrap_or(BUDGET_PROGRESS_UNITS)
    }

    /// What an iteration plays, in words: `1000 games per iteration` or the budget.
    pub fn self_play_in_words(&self) -> String {
        match (self.games_per_iteration, self.budget_kind()) {
            (Some(m), _) => format!("{m} games per iteration"),
            (None, Some(b)) => b.to_string(),
            (None, None) => "no self-play amount".to_string(),
        }
    }

    /// What the learner reads of these settings, with the model seed `model_seed`.
    pub fn learner_context(&self, model_seed: u64) -> LearnerContext<'_> {
        LearnerContext {
            model_seed,
            init_std: self.init_std,
            learning_rate: &self.learning_rate,
            checkpoint_every: self.checkpoint_every,
            search: &self.search,
            learner: &self.learner,
        }
    }
}

impl RunConfig {
    /// What the learner of this run reads, with the model seed `model_seed` (a run's own
    /// model seed is its root run's seed).
    pub fn learner_context(&self, model_seed: u64) -> LearnerContext<'_> {
        self.settings.learner_context(model_seed)
    }
}

/// A validated run spec.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub name: String,
    /// A note and tags the run is created with (not hashed, like the name).
    pub annotations: Annotations,
    /// Which self-play games the store keeps (`[store] keep_games`; not hashed: a run's
    /// records are the same whatever it keeps; docs/store.md, "Keeping fewer games").
    pub keep_games: KeepGames,
    pub game: AnyGame,
    pub seed: u64,
    /// Whether the seed was drawn from the OS (not given in the spec).
    pub(crate) seed_drawn: bool,
    /// N.
    pub iterations: u32,
    pub settings: Settings,
}

/// A bad run spec.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("run spec: {0}")]
    Toml(String),
    /// A setting out of its range ([`SettingError`], raised by every layer that validates).
    /// (Not a `source`: the message already includes it once.)
    #[error("run spec: {0}")]
    Range(SettingError),
    /// (Not a `source`: the message already includes it once.)
    #[error("run spec: `variant`: {0}")]
    Variant(GameError),
    #[error(
        "run spec: `{key}` = true needs the exact solution, but {variant} cannot be solved \
         exactly ({reason}); set `{key} = false`"
    )]
    Unsolvable {
        key: &'static str,
        variant: String,
        reason: String,
    },
}

impl From<SettingError> for SpecError {
    fn from(e: SettingError) -> SpecError {
        SpecError::Range(e)
    }
}

/// A run name: not empty, not blank at either end, no control characters (a newline or an
/// escape sequence would garble `ls`), no invisible characters ([`invisible`]: a name must
/// read as what it is), and not a number (a number names a run by id; docs/store.md,
/// "Naming runs, sweeps and objects"). Every name a run is given passes here: the spec's,
/// `--set name=`, and a branch's.
pub(crate) fn check_name(name: &str) -> Result<(), SpecError> {
    let allowed = "a non-empty label without spaces at either end, control characters or \
                   invisible format characters (U+200B, U+202E, U+2028, ...) that is not a \
                   number (numbers name runs by id)";
    if name.trim().is_empty()
        || name.trim() != name
        || name.parse::<i64>().is_ok()
        || name.chars().any(|c| c.is_control() || invisible(c))
    {
        return Err(range("name", format!("{name:?}"), allowed));
    }
    Ok(())
}

/// Whether `c` is a Unicode format character (general category Cf: zero-width spaces and
/// joiners, bidirectional overrides and isolates, the byte order mark, tags, ...) or a line or
/// paragraph separator (U+2028, U+2029): characters that print as nothing, or reorder or
/// break the text around them, so that two names that look alike differ. The Cf ranges of
/// Unicode 16 (std has no category table).
pub(crate) fn invisible(c: char) -> bool {
    const RANGES: &[(u32, u32)] = &[
        (0x00AD, 0x00AD),
        (0x0600, 0x0605),
        (0x061C, 0x061C),
        (0x06DD, 0x06DD),
        (0x070F, 0x070F),
        (0x0890, 0x0891),
        (0x08E2, 0x08E2),
        (0x180E, 0x180E),
        (0x200B, 0x200F),
        (0x2028, 0x202E),
        (0x2060, 0x2064),
        (0x2066, 0x206F),
        (0xFEFF, 0xFEFF),
        (0xFFF9, 0xFFFB),
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0001, 0xE0001),
        (0xE0020, 0xE007F),
    ];
    let c = c as u32;
    RANGES.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// The magnitudes a real-valued setting may have (besides 0): wide enough for every rate,
/// constant and time the literature uses, narrow enough that a typo (`lr = 1e300`,
/// `adam_eps = 5e-324`) is refused instead of ending a run in NaN. docs/limits.md.
pub(crate) const REAL_MAGNITUDE: (f64, f64) = (1e-12, 1e12);

/// `key.sub` (or `sub` at the top).
fn join(key: &str, sub: &str) -> String {
    if key.is_empty() {
        sub.to_string()
    } else {
        format!("{key}.{sub}")
    }
}

/// A value as an error message shows it: a real of extreme magnitude in exponent form
/// (`1e308`, not 309 digits).
fn shown(v: &toml::Value) -> String {
    match v {
        toml::Value::Float(f) if f.is_finite() && *f != 0.0 && !(1e-6..1e15).contains(&f.abs()) => {
            format!("{f:e}")
        }
        toml::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(shown).collect();
            format!("[{}]", items.join(", "))
        }
        _ => v.to_string(),
    }
}

/// Refuses any real number of the spec that is not finite or whose magnitude is outside
/// [`REAL_MAGNITUDE`] (0 allowed), naming its key.
fn check_numbers(key: &str, v: &toml::Value) -> Result<(), SpecError> {
    match v {
        toml::Value::Float(f) => {
            let (lo, hi) = REAL_MAGNITUDE;
            if !f.is_finite() || (*f != 0.0 && !(lo..=hi).contains(&f.abs())) {
                return Err(range(
                    key,
                    shown(v),
                    &format!("a finite number, 0 or of magnitude {lo:e} to {hi:e}"),
                ));
            }
            Ok(())
        }
        toml::Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| check_numbers(&format!("{key}[{i}]"), x)),
        toml::Value::Table(t) => t
            .iter()
            .try_for_each(|(k, x)| check_numbers(&join(key, k), x)),
        _ => Ok(()),
    }
}

/// Refuses what serde read leniently, comparing the spec's values (`input`) with the settings
/// as read (`read`): a list where the settings have a table (serde fills a table's fields from
/// a list position by position: `search = [1]`), and a list of another length than was read
/// (`learning_rate = [[1, 1.0, 5]]` drops the 5).
fn check_shapes(key: &str, input: &toml::Value, read: &toml::Value) -> Result<(), SpecError> {
    match (input, read) {
        (toml::Value::Array(_), toml::Value::Table(_)) => Err(range(
            key,
            shown(input),
            &format!("a table (`[{key}]` or `{key} = {{ ... }}`), not a list"),
        )),
        (toml::Value::Array(items), toml::Value::Array(got)) if items.len() != got.len() => Err(
            range(key, shown(input), &format!("a list of {} items", got.len())),
        ),
        (toml::Value::Array(items), toml::Value::Array(got)) => items
            .iter()
            .zip(got)
            .enumerate()
            .try_for_each(|(i, (x, g))| check_shapes(&format!("{key}[{i}]"), x, g)),
        (toml::Value::Table(t), toml::Value::Table(got)) => t.iter().try_for_each(|(k, x)| {
            got.get(k)
                .map_or(Ok(()), |g| check_shapes(&join(key, k), x, g))
        }),
        // A number TOML cannot hold arrives as the text `--set` kept (`NaN`, `1e400`,
        // `18446744073709551616`): refused as out of range, like any number, not as serde's
        // "invalid type: string".
        (toml::Value::String(t), toml::Value::Integer(_) | toml::Value::Float(_))
            if t.trim().parse::<f64>().is_ok() =>
        {
            Err(range(key, t.trim(), number_allowed(read)))
        }
        _ => Ok(()),
    }
}

/// What a setting whose value reads as `read` allows, for a number that is no number TOML
/// holds (the setting's own range, narrower, is checked once the number is one).
fn number_allowed(read: &toml::Value) -> &'static str {
    match read {
        toml::Value::Integer(_) => "an integer from -9223372036854775808 to 9223372036854775807",
        _ => "a finite number, 0 or of magnitude 1e-12 to 1e12",
    }
}

/// The checks of [`RunConfig::from_toml`] on one `key=value` override of a run's settings
/// (`branch --set`): its numbers; with the settings it gave, its shape as read.
pub(crate) fn check_override(
    key: &str,
    value: &toml::Value,
    settings: Option<&Settings>,
) -> Result<(), SpecError> {
    check_numbers(key, value)?;
    let Some(Ok(mut read)) = settings.map(toml::Value::try_from) else {
        return Ok(());
    };
    for part in key.split('.') {
        match read.get(part) {
            Some(v) => read = v.clone(),
            None => return Ok(()),
        }
    }
    check_shapes(key, value, &read)
}

fn range(key: &str, value: impl ToString, allowed: &str) -> SpecError {
    SpecError::Range(SettingError::new(key, value, allowed))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Option<String>,
    variant: String,
    seed: Option<u64>,
    /// N; with stages, the sum of their iterations when absent.
    iterations: Option<u32>,
    games_per_iteration: Option<u32>,
    window: Option<u32>,
    learning_rate: Option<Vec<(u32, f64)>>,
    init_std: Option<f64>,
    checkpoint_every: Option<u32>,
    #[serde(default)]
    search: SearchConfig,
    #[serde(default)]
    eval: EvalSettings,
    #[serde(default)]
    learner: LearnerSettings,
    #[serde(default)]
    start: StartSettings,
    budget: Option<Budget>,
    #[serde(default)]
    selfplay: SelfPlaySettings,
    #[serde(default, rename = "stage")]
    stages: Vec<RawStage>,
    /// Not hashed: a note and tags on the run (docs/store.md, "Provenance").
    note: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    /// Not hashed: what the store keeps of the run (docs/store.md, "Keeping fewer games").
    #[serde(default)]
    store: RawStoreSettings,
}

/// `[store]`: what the store keeps of a run (not hashed).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawStoreSettings {
    keep_games: Option<String>,
}

impl RunConfig {
    /// Parses and validates a spec; `default_name` names the run when the spec does not.
    pub fn from_toml(text: &str, default_name: &str) -> Result<RunConfig, SpecError> {
        // The text as TOML values, to check what serde reads leniently (a bad text gets
        // serde's error below).
        let input: Option<toml::Table> = toml::from_str(text).ok();
        if let Some(t) = &input {
            check_numbers("", &toml::Value::Table(t.clone()))?;
        }
        let raw: RawSpec = toml::from_str(text).map_err(|e| SpecError::Toml(e.to_string()))?;
        let game: AnyGame = raw.variant.parse().map_err(SpecError::Variant)?;
        let name = raw.name.unwrap_or_else(|| default_name.to_string());
        check_name(&name)?;
        let planned: u32 = raw.stages.iter().map(|s| s.iterations()).sum();
        let n = match (raw.iterations, raw.stages.is_empty()) {
            (Some(n), _) => n,
            (None, false) => planned,
            (None, true) => return Err(SpecError::Toml("missing field `iterations`".into())),
        };
        if n == 0 {
            return Err(range("iterations", 0, "an integer >= 1"));
        }
        let learning_rate = raw.learning_rate.unwrap_or_else(|| {
            if n >= 2 {
                vec![(1, 1.0), (n / 2 + 1, 0.1)]
            } else {
                vec![(1, 1.0)]
            }
        });
        if let (Some(m), Some(_)) = (raw.games_per_iteration, raw.budget) {
            return Err(range(
                "games_per_iteration",
                m,
                "absent when [budget] is given (the budget decides how many games an \
                 iteration plays; give one of the two)",
            ));
        }
        let games_per_iteration = match raw.budget {
            Some(_) => None,
            None => Some(raw.games_per_iteration.unwrap_or(1000)),
        };
        let (seed, seed_drawn) = match raw.seed {
            Some(s) => (s, false),
            None => (os_seed(), true),
        };
        let keep_games = match &raw.store.keep_games {
            None => KeepGames::All,
            Some(t) => t
                .parse()
                .map_err(|why: String| range("store.keep_games", format!("{t:?}"), &why))?,
        };
        let cfg = RunConfig {
            name,
            annotations: Annotations {
                note: raw.note,
                tags: raw.tags,
            },
            keep_games,
            game,
            seed,
            seed_drawn,
            iterations: n,
            settings: Settings {
                games_per_iteration,
                window: raw.window.unwrap_or(2),
                learning_rate,
                init_std: raw.init_std.unwrap_or(0.01),
                checkpoint_every: raw.checkpoint_every.unwrap_or(10),
                search: raw.search,
                eval: raw.eval,
                learner: raw.learner.for_new_run(),
                start: raw.start,
                budget: raw.budget,
                selfplay: raw.selfplay,
                stages: Vec::new(),
            },
        };
        if let (Some(t), Ok(toml::Value::Table(read))) =
            (&input, toml::Value::try_from(&cfg.settings))
        {
            check_shapes(
                "",
                &toml::Value::Table(t.clone()),
                &toml::Value::Table(read),
            )?;
        }
        cfg.validate()?;
        let mut cfg = cfg;
        if !raw.stages.is_empty() {
            cfg.settings.stages = stages_of(raw.stages, &cfg.settings).map_err(SpecError::Toml)?;
            cfg.validate()?;
        }
        Ok(cfg)
    }

    /// Checks every range (also for configs built in code).
    pub(crate) fn validate(&self) -> Result<(), SpecError> {
        let s = &self.settings;
        if self.iterations == 0 {
            return Err(range("iterations", 0, "an integer >= 1"));
        }
        validate_self_play_amount(s)?;
        if !s.stages.is_empty() {
            return validate_stages(self);
        }
        if let Some(n) = &self.annotations.note {
            check_note(n).map_err(|why| range("note", format!("{n:?}"), &why))?;
        }
        for t in &self.annotations.tags {
            check_tag(t).map_err(|why| range("tags", format!("{t:?}"), &why))?;
        }
        if s.window == 0 {
            return Err(range("window", 0, "an integer >= 1 (K)"));
        }
        super::retention::check_keep_games(self)?;
        if s.checkpoint_every == 0 {
            return Err(range("checkpoint_every", 0, "an integer >= 1"));
        }
        if !(s.init_std.is_finite() && (0.0..=MAX_INIT_STD).contains(&s.init_std)) {
            return Err(range(
                "init_std",
                s.init_std,
                &format!("a number from 0 to {MAX_INIT_STD} (the studies use 0.01 to 1)"),
            ));
        }
        validate_learning_rate(&s.learning_rate)?;
        let search = s
            .search
            .validate()
            .and_then(|()| s.search.validate_self_play());
        search.map_err(|SearchConfigError(e)| {
            SpecError::Range(SettingError {
                key: format!("search.{}", e.key),
                ..e
            })
        })?;
        if s.search.simulations.max() > MAX_SIMULATIONS {
            return Err(range(
                "search.simulations",
                s.search.simulations,
                &format!("an integer from 1 to {MAX_SIMULATIONS}"),
            ));
        }
        if s.search.c_puct <= 0.0 {
            return Err(range(
                "search.c_puct",
                s.search.c_puct,
                "a finite number > 0 (the literature sweeps 1/64..64)",
            ));
        }
        s.start.validate()?;
        crate::with_game!(&self.game, |g| s.start.validate_game(g))?;
        crate::with_game!(&self.game, |g| validate_learner(g, s))?;
        crate::with_game!(&self.game, |g| validate_mover(g, s))?;
        if s.eval.every == 0 {
            return Err(range(
                "eval.every",
                0,
                "an integer >= 1 (measure after every K-th iteration and the last; default 1, \
                 every iteration)",
            ));
        }
        if s.eval.wr_p && s.eval.games == 0 {
            return Err(range(
                "eval.games",
                0,
                "an integer >= 1 when eval.wr_p = true (default 10000)",
            ));
        }
        if s.eval.games > MAX_GAMES {
            return Err(range(
                "eval.games",
                s.eval.games,
                &format!("an integer from 1 to {MAX_GAMES}"),
            ));
        }
        for (key, wanted) in [("eval.wr_p", s.eval.wr_p), ("eval.errors", s.eval.errors)] {
            if !wanted {
                continue;
            }
            let solvable: Result<(), String> = crate::with_solvable_game!(
                &self.game,
                |g| crate::solver::Solvable::check_solvable(g),
                |_other| Err("no exact solver exists for it".to_string())
            );
            if let Err(reason) = solvable {
                return Err(SpecError::Unsolvable {
                    key,
                    variant: self.game.variant(),
                    reason,
                });
            }
        }
        Ok(())
    }
}

/// Every stage gets at least one iteration: N exceeds the iterations of the stages before
/// the last.
fn validate_stages(cfg: &RunConfig) -> Result<(), SpecError> {
    let stages = &cfg.settings.stages;
    let Some((_, before_last)) = stages.split_last() else {
        return Ok(());
    };
    // Each stage's settings in force are valid settings of the run.
    let each = cfg
        .settings
        .each_in_force()
        .map_err(|e| SpecError::Toml(e.to_string()))?;
    for (k, settings) in each.into_iter().enumerate() {
        let stage = RunConfig {
            settings,
            ..cfg.clone()
        };
        stage.validate().map_err(|e| {
            let text = e.to_string();
            let why = text.strip_prefix("run spec: ").unwrap_or(&text);
            SpecError::Toml(format!("{}: {why}", stage_label(k, &stages[k])))
        })?;
    }
    let before: u64 = before_last.iter().map(|s| u64::from(s.iterations)).sum();
    if u64::from(cfg.iterations) <= before {
        return Err(range(
            "iterations",
            cfg.iterations,
            &format!(
                "more than {before}, the iterations of the stages before the last (each stage \
                 runs at least one)"
            ),
        ));
    }
    Ok(())
}

/// The greedy mover needs a game with a greedy heuristic, and plays no search whose tree
/// states a start policy could archive.
fn validate_mover<G: crate::games::Abilities>(g: &G, s: &Settings) -> Result<(), SpecError> {
    let state = g.initial_state();
    let greedy = g.greedy_features(&state, &[], &mut Vec::new());
    if s.selfplay.opponent == Opponent::Greedy && !greedy {
        return Err(range(
            "selfplay.opponent",
            "\"greedy\"",
            &format!(
                "\"none\" for {}: only games with a greedy heuristic ({}) have a greedy \
                 opponent",
                g.variant(),
                families_with(Ability::Greedy).join(", ")
            ),
        ));
    }
    validate_soft_limit(g, s)?;
    if s.selfplay.mover != Mover::Greedy {
        return Ok(());
    }
    if !greedy {
        return Err(range(
            "selfplay.mover",
            "\"greedy\"",
            &format!(
                "\"search\" for {}: only games with a greedy heuristic ({}) have greedy \
                 self-play",
                g.variant(),
                families_with(Ability::Greedy).join(", ")
            ),
        ));
    }
    if s.start.policy(g).wants_tree_states() {
        return Err(range(
            "selfplay.mover",
            "\"greedy\"",
            "\"search\" with a start policy that archives search-tree states (greedy self-play \
             searches nothing)",
        ));
    }
    Ok(())
}

/// Tabula rasa's soft limit: in range, on a game that is a race (Chinese Checkers); its
/// margin only with it.
fn validate_soft_limit<G: crate::games::Abilities>(g: &G, s: &Settings) -> Result<(), SpecError> {
    let (limit, margin) = (s.selfplay.soft_limit, s.selfplay.distance_margin);
    match limit {
        Some(t) if t == 0 || t > 100_000 => {
            return Err(range(
                "selfplay.soft_limit",
                t,
                "an integer from 1 to 100000 (plies without progress; Liu et al.: 100)",
            ));
        }
        Some(_) if g.race(&g.initial_state()).is_none() => {
            return Err(range(
                "selfplay.soft_limit",
                limit.unwrap_or(0),
                &format!(
                    "no soft limit for {}: only a race to the opposite base ({}) has one",
                    g.variant(),
                    families_with(Ability::Race).join(", ")
                ),
            ));
        }
        _ => {}
    }
    match margin {
        Some(m) if limit.is_none() => Err(range(
            "selfplay.distance_margin",
            m,
            "only with selfplay.soft_limit",
        )),
        Some(m) if m > 10_000 => Err(range(
            "selfplay.distance_margin",
            m,
            "an integer from 0 to 10000 (Liu et al.'s D_t: 3)",
        )),
        _ => Ok(()),
    }
}

/// Exactly one of `games_per_iteration` (in range) and `[budget]` (exactly one of its keys,
/// in range).
fn validate_self_play_amount(s: &Settings) -> Result<(), SpecError> {
    match (s.games_per_iteration, s.budget) {
        (Some(m), None) if m == 0 || m > MAX_GAMES => Err(range(
            "games_per_iteration",
            m,
            &format!("an integer from 1 to {MAX_GAMES} (M)"),
        )),
        (Some(_), None) => Ok(()),
        (None, Some(b)) => b.kind().map(|_| ()).map_err(SpecError::Range),
        (Some(m), Some(_)) => Err(range(
            "games_per_iteration",
            m,
            "absent when [budget] is given (give one of the two)",
        )),
        (None, None) => Err(range(
            "games_per_iteration",
            "nothing",
            &format!("an integer from 1 to {MAX_GAMES}, or a [budget] instead"),
        )),
    }
}

/// The learning-rate schedule: non-empty, from iteration 1, `from_iteration` strictly
/// increasing, every beta finite and > 0.
/// The largest `init_std`: the table's initial logits are Normal(0, init_std) draws, and far
/// larger ones overflow to infinity in the softmax's sums (then every metric is NaN).
const MAX_INIT_STD: f64 = 1000.0;

/// The largest tabular learning rate beta (the studies use 1 and below): larger steps overflow
/// the logits within a few updates.
const MAX_BETA: f64 = 1000.0;

fn validate_learning_rate(lr: &[(u32, f64)]) -> Result<(), SpecError> {
    if lr.is_empty() {
        return Err(range(
            "learning_rate",
            "[]",
            "a non-empty list of [from_iteration, beta] pairs, the first from iteration 1",
        ));
    }
    if lr[0].0 != 1 {
        return Err(range(
            "learning_rate[0]",
            format!("[{}, {}]", lr[0].0, lr[0].1),
            "a first pair from iteration 1, e.g. [1, 1.0]",
        ));
    }
    for (i, &(from, beta)) in lr.iter().enumerate() {
        if !(beta.is_finite() && beta > 0.0 && beta <= MAX_BETA) {
            return Err(range(
                &format!("learning_rate[{i}]"),
                format!("[{from}, {beta}]"),
                &format!("beta a number > 0 and at most {MAX_BETA}"),
            ));
        }
        if i > 0 && from <= lr[i - 1].0 {
            return Err(range(
                &format!("learning_rate[{i}]"),
                format!("[{from}, {beta}]"),
                "from_iteration strictly increasing along the list",
            ));
        }
    }
    Ok(())
}

fn validate_learner<G: crate::games::Abilities>(_: &G, s: &Settings) -> Result<(), SpecError> {
    let check = SettingsCheck {
        learner: &s.learner,
        window: s.window,
        // With a budget the count is open: checked against the most an iteration may keep.
        games_per_iteration: s.games_per_iteration.unwrap_or(MAX_GAMES),
        selfplay: &s.selfplay,
    };
    Ok(crate::learners::validate::<G>(check)?)
}

/// A seed drawn once from the OS (the only draw a run does not derive from its seed; it is
/// recorded, so replay is exact).
fn os_seed() -> u64 {
    use std::io::Read;
    let mut buf = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .is_ok()
    {
        return u64::from_le_bytes(buf);
    }
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
name = "t"
variant = "ewn:3x3x3"
seed = 5
iterations = 4
"#;

    fn err(extra: &str) -> String {
        RunConfig::from_toml(&format!("{BASE}{extra}"), "x")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn defaults_are_the_literatures() {
        let c = RunConfig::from_toml(BASE, "x").unwrap();
        let s = &c.settings;
        assert_eq!((s.games_per_iteration, s.window), (Some(1000), 2));
        assert_eq!(s.budget, None);
        assert_eq!(s.learning_rate, vec![(1, 1.0), (3, 0.1)]);
        assert_eq!(
            [1, 2, 3, 4].map(|i| s.learner_context(0).beta(i)),
            [1.0, 1.0, 0.1, 0.1]
        );
        assert_eq!(s.search, SearchConfig::default());
        assert_eq!(s.eval.games, 10_000);
        assert_eq!((c.seed, c.seed_drawn), (5, false));
        let drawn = RunConfig::from_toml("variant = \"ewn:3x3x3\"\niterations = 1", "x").unwrap();
        assert!(drawn.seed_drawn);
        assert_eq!(drawn.name, "x");
    }

    #[test]
    fn bad_values_name_the_key_and_the_range() {
        let cases = [
            ("bogus = 1\n", "bogus"),
            ("games_per_iteration = 0\n", "games_per_iteration"),
            ("window = 0\n", "window"),
            ("[search]\nc_puct = 0.0\n", "search.c_puct"),
            ("[search]\nc_puct = -1.0\n", "search.c_puct"),
            (
                "[search]\ndirichlet_alpha = 0.0\n",
                "search.dirichlet_alpha",
            ),
            (
                "[search]\ndirichlet_epsilon = 1.5\n",
                "search.dirichlet_epsilon",
            ),
            ("[search]\nsimulations = 0\n", "search.simulations"),
            ("[search]\nsims = 3\n", "sims"),
            ("[eval]\ngames = 0\n", "eval.games"),
            ("[eval]\ngames = 4294967295\n", "eval.games"),
            ("[eval]\nevery = 0\n", "eval.every"),
            // serde's error: the line, the key on it, and "expected u32".
            ("[eval]\nevery = -1\n", "every = -1"),
            ("games_per_iteration = 4294967295\n", "games_per_iteration"),
            ("[search]\nsimulations = 4294967295\n", "search.simulations"),
            ("[eval]\nfoo = true\n", "foo"),
            ("learning_rate = [[2, 1.0]]\n", "learning_rate[0]"),
            ("learning_rate = [[1, 1.0], [1, 0.1]]\n", "learning_rate[1]"),
            ("learning_rate = [[1, 0.0]]\n", "learning_rate[0]"),
            ("init_std = -1.0\n", "init_std"),
            ("init_std = 1e308\n", "init_std"),
            ("learning_rate = [[1, 1e300]]\n", "learning_rate[0]"),
            ("checkpoint_every = 0\n", "checkpoint_every"),
            ("[search]\ngumbel_scale = 1.0\n", "search.gumbel_scale"),
            (
                "[search]\nalgorithm = \"gumbel\"\ngumbel_scale = -1.0\n",
                "search.gumbel_scale",
            ),
            (
                "[search]\nalgorithm = \"gumbel\"\ndirichlet_epsilon = 0.0\n",
                "gumbel_scale",
            ),
            ("[search]\nchance = \"expected\"\n", "proportional"),
        ];
        for (extra, key) in cases {
            let e = err(extra);
            assert!(e.contains(key), "{extra:?}: {e}");
        }
        let e = err("[search]\nc_puct = 0.0\n");
        assert!(e.contains("> 0"), "{e}");
        let e = RunConfig::from_toml("variant = \"ewn:3x3x3\"\niterations = 0", "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("iterations") && e.contains(">= 1"), "{e}");
        let e = RunConfig::from_toml("variant = \"chess:8x8\"\niterations = 1", "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("variant") && e.contains("chess"), "{e}");
    }

    /// The example specs hold the literature's settings.
    #[test]
    fn example_specs_are_the_literatures() {
        for (text, variant, n) in [
            (include_str!("../../runs/ewn-3x3x3.toml"), "ewn:3x3x3", 100),
            (include_str!("../../runs/cdc-pppp.toml"), "cdc:PPPP", 300),
        ] {
            let c = RunConfig::from_toml(text, "x").unwrap();
            let s = &c.settings;
            assert_eq!(c.game.variant(), variant);
            assert_eq!(c.iterations, n);
            assert_eq!((s.games_per_iteration, s.window), (Some(1000), 2));
            assert_eq!(s.learning_rate, vec![(1, 1.0), (n / 2 + 1, 0.1)]);
            assert_eq!(s.search, SearchConfig::default());
            assert_eq!(s.eval, EvalSettings::default());
        }
        let quick = RunConfig::from_toml(include_str!("../../runs/quick.toml"), "x").unwrap();
        assert_eq!(quick.game.variant(), "ewn:3x3x3");
    }

    #[test]
    fn a_budget_replaces_games_per_iteration() {
        let c = RunConfig::from_toml(&format!("{BASE}[budget]\nmoves = 500\n"), "x").unwrap();
        assert_eq!(c.settings.games_per_iteration, None);
        assert_eq!(c.settings.budget_kind(), Some(BudgetKind::Moves(500)));
        assert_eq!(c.settings.progress_units(), BUDGET_PROGRESS_UNITS);
        let c = RunConfig::from_toml(&format!("{BASE}[budget]\nseconds = 2.5\n"), "x").unwrap();
        assert_eq!(c.settings.budget_kind(), Some(BudgetKind::Seconds(2.5)));
        let cases = [
            (
                "[budget]\n",
                "`budget` = {} is out of range; allowed: exactly one of",
            ),
            (
                "[budget]\nmoves = 5\nsimulations = 9\n",
                "`budget` = {moves = 5, simulations = 9}",
            ),
            (
                "games_per_iteration = 10\n[budget]\nmoves = 5\n",
                "`games_per_iteration` = 10 is out of range; allowed: absent when [budget]",
            ),
            ("[budget]\nmoves = 0\n", "`budget.moves` = 0"),
            ("[budget]\nsimulations = 0\n", "`budget.simulations` = 0"),
            ("[budget]\nseconds = 0.0\n", "`budget.seconds` = 0"),
            ("[budget]\nseconds = -3.0\n", "`budget.seconds` = -3"),
            (
                "[budget]\nmoves = -3\n",
                "`budget.moves` = -3 is out of range",
            ),
            ("[budget]\ngames = 3\n", "games"),
        ];
        for (extra, wanted) in cases {
            let e = err(extra);
            assert!(e.contains(wanted), "{extra:?}: {e}");
        }
    }

    #[test]
    fn unsolvable_variants_cannot_ask_for_exact_metrics() {
        let spec = "variant = \"cdc:4x8\"\niterations = 1\n";
        let e = RunConfig::from_toml(spec, "x").unwrap_err().to_string();
        assert!(e.contains("eval.wr_p") && e.contains("cdc:4x8"), "{e}");
        let ok = format!("{spec}[eval]\nwr_p = false\nerrors = false\n");
        assert!(RunConfig::from_toml(&ok, "x").is_ok());
    }
}
