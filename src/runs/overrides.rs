//! The one overrides engine (docs/experiments.md, "Overrides"): `key=value` changes of a
//! run's settings, wherever they are given: `run --set`, `branch --at 0`, `branch --at I`, a
//! `[[stage]]`'s `set`, a sweep's `[set]` and axes.
//!
//! - **One reader** ([`parse_sets`], [`parse_value`]): keys are the run spec's dotted keys
//!   (`window`, `search.init_q`), values TOML values, a bare word read as a string
//!   (`search.init_q=draw`); a key given twice is refused.
//! - **One refusal table** ([`RULES`], asked through [`judge`]): for each key, whether it may be
//!   overridden at each [`Place`], and if not why. A key is a setting when it is a leaf of the
//!   base's settings (every optional search key included), one of the keys that say how much
//!   an iteration plays ([`SELF_PLAY_KEYS`]), or a setting the base's record leaves out at its
//!   default; a table of settings (`search`, `eval`) is no setting. Every refusal names the
//!   key, the value and what is allowed at that place ([`Refusal`]).
//! - **One canonical form** ([`canonical`]): `key=<JSON value>`, sorted by key. It is what a
//!   branch record, a branch's seed and name, and a stage's stored `set` hold.
//!
//! Two appliers follow the judgement, for two reasons that stay: a new run (`run --set`,
//! `branch --at 0`, a sweep's point) gets the overrides written into its spec's TOML
//! ([`spec_with_overrides`]), so that defaults depending on other keys follow them and the
//! stored spec text gives the run; a run that continues (`branch --at I`, a stage) gets them
//! applied to its resolved settings ([`apply_overrides`], [`apply_at`]).

use super::spec::{check_name, check_override};
use super::{RunConfig, RunError, Settings};
use crate::error::SettingError;

/// An override: a dotted key and its TOML value.
pub(crate) type Override = (String, toml::Value);

/// Where overrides are given: the columns of [`RULES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// `run SPEC --set` (and each run of a sweep, once the sweep has judged its keys).
    Run,
    /// `branch RUN --at 0`: a fresh run with RUN's settings.
    FreshBranch,
    /// `branch RUN --at I`, I >= 1: the branch continues RUN's model.
    Branch,
    /// A `[[stage]]`'s `set`: the run continues its model into the stage.
    Stage,
    /// A sweep's `[set]` or an axis.
    Sweep,
}

impl Place {
    /// Every place, in the order of a rule's verdicts.
    pub const ALL: [Place; 5] = [
        Place::Run,
        Place::FreshBranch,
        Place::Branch,
        Place::Stage,
        Place::Sweep,
    ];

    fn column(self) -> usize {
        self as usize
    }
}

/// Which keys a rule covers.
#[derive(Clone, Copy, Debug)]
pub enum Keys {
    /// One key.
    Key(&'static str),
    /// The settings the run's learner declares fixed
    /// ([`crate::learners::LearnerKind::fixed_settings`]: tabular AlphaZero's `init_std`, the
    /// network's architecture and optimiser).
    Fixed,
    /// Every other setting of the base (see the module docs).
    Setting,
}

/// What a rule says of its keys at one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Allowed,
    /// Refused, for this reason.
    Refused(&'static str),
    /// Refused with the learner's own reason (the key is a fixed setting).
    FixedMidRun,
}

/// One row of the refusal table: its keys and a verdict per [`Place`] (in [`Place::ALL`]'s
/// order).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rule {
    pub keys: Keys,
    pub(crate) verdicts: [Verdict; 5],
}

use Verdict::{Allowed, FixedMidRun, Refused};

const VARIANT_MID_RUN: &str = "the variant cannot change mid-run: the model's positions and \
                               actions belong to it (start a new run instead)";
const LEARNER_MID_RUN: &str = "the learner cannot change mid-run: the branch continues the \
                               parent's model (start a new run instead)";
const STAGE_RUN_KEYS: &str = "a stage's length is its own `iterations`, and the run has one \
                              name and one seed; set run settings only";
const STAGES: &str = "stages are given as `[[stage]]` tables in the run spec";

/// The refusal table: the first rule that covers a key decides; a key no rule covers is no
/// setting. Columns: run --set, branch --at 0, branch --at I, a stage, a sweep.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        keys: Keys::Key("name"),
        verdicts: [
            Allowed,
            Allowed,
            Allowed,
            Refused(STAGE_RUN_KEYS),
            Refused("runs are named from their grid point"),
        ],
    },
    Rule {
        keys: Keys::Key("seed"),
        verdicts: [
            Allowed,
            Refused("give the new run's seed with --seed"),
            Refused("give the branch's seed with --seed"),
            Refused(STAGE_RUN_KEYS),
            Refused("seeds are the sweep's `seeds` list, not a setting"),
        ],
    },
    Rule {
        keys: Keys::Key("iterations"),
        verdicts: [Allowed, Allowed, Allowed, Refused(STAGE_RUN_KEYS), Allowed],
    },
    Rule {
        keys: Keys::Key("variant"),
        verdicts: [
            Allowed,
            Allowed,
            Refused(VARIANT_MID_RUN),
            Refused(VARIANT_MID_RUN),
            Allowed,
        ],
    },
    Rule {
        keys: Keys::Key("learner.kind"),
        verdicts: [
            Allowed,
            Allowed,
            Refused(LEARNER_MID_RUN),
            Refused(LEARNER_MID_RUN),
            Allowed,
        ],
    },
    Rule {
        keys: Keys::Key("stages"),
        verdicts: [Refused(STAGES); 5],
    },
    Rule {
        keys: Keys::Fixed,
        verdicts: [Allowed, Allowed, FixedMidRun, FixedMidRun, Allowed],
    },
    Rule {
        keys: Keys::Setting,
        verdicts: [Allowed; 5],
    },
];

/// The keys that say how much an iteration plays: M, or one of the budgets (runs/budget.rs).
/// They are alternatives: one replaces whichever the base has, and two at once are refused.
pub const SELF_PLAY_KEYS: [&str; 4] = [
    "games_per_iteration",
    "budget.moves",
    "budget.simulations",
    "budget.seconds",
];

/// A refused override: its key, its value (as TOML), why, and what is allowed there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub key: String,
    pub value: String,
    pub why: String,
    pub allowed: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}={}: {}; allowed: {}",
            self.key, self.value, self.why, self.allowed
        )
    }
}

impl Refusal {
    /// The refusal as the driver's usage error, after `what` (`--set`, `[set]`, `axis`).
    pub fn usage(&self, what: &str) -> RunError {
        RunError::Usage(format!("{what} {self}"))
    }
}

/// Reads an override's value as a TOML value; a bare word is a string (`init_q=draw`).
pub fn parse_value(text: &str) -> toml::Value {
    let text = text.trim();
    match toml::from_str::<toml::Table>(&format!("v = {text}")) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.to_string())),
        Err(_) => toml::Value::String(text.to_string()),
    }
}

/// The one reader: `key=value` texts (the command line's `--set`, a stage's stored `set`)
/// as keys and TOML values, in the order given. A text without `=` and a key given twice are
/// refused.
pub fn parse_sets(sets: &[String]) -> Result<Vec<Override>, RunError> {
    let mut out: Vec<Override> = Vec::new();
    for text in sets {
        let Some((k, v)) = text.split_once('=') else {
            return Err(RunError::Usage(format!(
                "--set {text}: give key=value, e.g. search.init_q=draw"
            )));
        };
        let k = k.trim().to_string();
        if out.iter().any(|(o, _)| *o == k) {
            return Err(RunError::Usage(format!("--set {text}: `{k}` is set twice")));
        }
        out.push((k, parse_value(v)));
    }
    Ok(out)
}

/// The canonical form of overrides: `key=<JSON value>`, sorted by key.
pub fn canonical(overrides: &[Override]) -> Vec<String> {
    let mut pairs: Vec<(&str, serde_json::Value)> = overrides
        .iter()
        .map(|(k, v)| (k.as_str(), json_of(v)))
        .collect();
    pairs.sort_by(|a, b| a.0.cmp(b.0));
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// A TOML value as JSON (a value JSON cannot hold, which the number checks refuse first, is
/// null).
fn json_of(v: &toml::Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// The rule that covers `key` over the base settings `base` (None: no setting).
fn rule_of(base: &Settings, key: &str, value: &toml::Value) -> Option<&'static Rule> {
    let fixed = base.learner.fixed_settings();
    RULES.iter().find(|r| match r.keys {
        Keys::Key(k) => k == key,
        Keys::Fixed => fixed.iter().any(|(k, _)| *k == key),
        Keys::Setting => is_setting(base, key, value),
    })
}

/// Whether `key` names a setting of `base` (see the module docs).
fn is_setting(base: &Settings, key: &str, value: &toml::Value) -> bool {
    SELF_PLAY_KEYS.contains(&key)
        || setting_keys(&settings_json(base)).iter().any(|k| k == key)
        || settable_default(base, key, &json_of(value))
}

/// Judges one override at `place` over the base settings `base`: the refusal table's answer.
pub fn judge(place: Place, base: &Settings, key: &str, value: &toml::Value) -> Result<(), Refusal> {
    let refuse = |why: String| Refusal {
        key: key.to_string(),
        value: value.to_string(),
        why,
        allowed: allowed_keys(place, base).join(", "),
    };
    match rule_of(base, key, value).map(|r| r.verdicts[place.column()]) {
        Some(Allowed) => Ok(()),
        Some(Refused(why)) => Err(refuse(why.to_string())),
        Some(FixedMidRun) => {
            let fixed = base.learner.fixed_settings();
            let why = fixed.iter().find(|(k, _)| *k == key).map_or("", |(_, w)| w);
            Err(refuse(format!("{key} cannot change mid-run: {why}")))
        }
        None => Err(refuse(format!("no setting `{key}`"))),
    }
}

/// Judges every override at `place`, then refuses two of the [`SELF_PLAY_KEYS`] at once.
pub(crate) fn judge_all(
    place: Place,
    base: &Settings,
    overrides: &[Override],
) -> Result<(), Refusal> {
    for (k, v) in overrides {
        judge(place, base, k, v)?;
    }
    let mut amounts = overrides
        .iter()
        .filter(|(k, _)| SELF_PLAY_KEYS.contains(&k.as_str()));
    if let (Some((first, _)), Some((key, value))) = (amounts.next(), amounts.next()) {
        return Err(Refusal {
            key: key.clone(),
            value: value.to_string(),
            why: format!(
                "`{first}` and `{key}` are alternatives (how much an iteration plays); set one"
            ),
            allowed: format!("one of {}", SELF_PLAY_KEYS.join(", ")),
        });
    }
    Ok(())
}

/// Every key an override may name at `place` over `base`, for refusals: the keys of the
/// table's own rows allowed there, then the settings (less the fixed ones where they are
/// refused), then the keys of how much an iteration plays.
pub(crate) fn allowed_keys(place: Place, base: &Settings) -> Vec<String> {
    let col = place.column();
    let fixed_ok = RULES
        .iter()
        .any(|r| matches!(r.keys, Keys::Fixed) && r.verdicts[col] == Allowed);
    let fixed = base.learner.fixed_settings();
    let own: Vec<&str> = RULES
        .iter()
        .filter_map(|r| match r.keys {
            Keys::Key(k) => Some(k),
            _ => None,
        })
        .collect();
    let mut out: Vec<String> = RULES
        .iter()
        .filter(|r| r.verdicts[col] == Allowed)
        .filter_map(|r| match r.keys {
            Keys::Key(k) => Some(k.to_string()),
            _ => None,
        })
        .collect();
    let settings = setting_keys(&settings_json(base))
        .into_iter()
        .filter(|k| !own.contains(&k.as_str()) && !SELF_PLAY_KEYS.contains(&k.as_str()))
        .filter(|k| fixed_ok || !fixed.iter().any(|(f, _)| f == k));
    out.extend(settings);
    out.extend(SELF_PLAY_KEYS.iter().map(|k| k.to_string()));
    out
}

/// The settings as JSON with every optional key present: the record's form plus the search
/// keys a record leaves out at their defaults ([`crate::search::SearchConfig::optional_keys`])
/// and `eval.every` (left out at 1), so that overrides, branches and sweeps may name them.
pub fn settings_json(settings: &Settings) -> serde_json::Value {
    let mut json = serde_json::to_value(settings).unwrap_or(serde_json::Value::Null);
    if let Some(search) = json.get_mut("search").and_then(|v| v.as_object_mut()) {
        for (k, v) in settings.search.optional_keys() {
            search.entry(k.to_string()).or_insert(v);
        }
    }
    if let Some(eval) = json.get_mut("eval").and_then(|v| v.as_object_mut()) {
        eval.entry("every")
            .or_insert(serde_json::Value::from(settings.eval.every));
    }
    json
}

/// Every leaf key of a settings JSON object, dotted (`search.init_q`), in the object's order.
pub fn setting_keys(settings: &serde_json::Value) -> Vec<String> {
    fn walk(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
        if let Some(o) = v.as_object() {
            for (k, v) in o {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                if v.is_object() {
                    walk(v, &key, out);
                } else {
                    out.push(key);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(settings, "", &mut out);
    out
}

/// Whether `key` (dotted) is a setting of `settings` that `value` can be given to, although
/// its record leaves it out at its default (`learner.network.reference.c4_search`, ...).
pub(crate) fn settable_default(settings: &Settings, key: &str, value: &serde_json::Value) -> bool {
    with_default_key(&settings_json(settings), key, value).is_some()
}

/// `json` with `key` (dotted) set to `value` where the record left the key out because it
/// holds its default, or None when `key` is no setting: the key's tables are created as
/// needed, and the result must read back as settings (every settings table refuses keys it
/// does not know).
fn with_default_key(
    json: &serde_json::Value,
    key: &str,
    value: &serde_json::Value,
) -> Option<serde_json::Value> {
    let mut with = json.clone();
    let (tables, last) = key.rsplit_once('.').map_or(("", key), |(t, l)| (t, l));
    let mut slot = &mut with;
    for part in tables.split('.').filter(|p| !p.is_empty()) {
        slot = slot
            .as_object_mut()?
            .entry(part)
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
    }
    // Only a key the record leaves out: one it has (a table among them) is not replaced here.
    let table = slot.as_object_mut()?;
    if table.contains_key(last) {
        return None;
    }
    table.insert(last.to_string(), value.clone());
    serde_json::from_value::<Settings>(with.clone()).ok()?;
    Some(with)
}

/// Settings after `key=value` overrides, with the canonical override texts (sorted by key).
#[derive(Clone, Debug)]
pub struct Overridden {
    pub settings: Settings,
    /// `iterations=N` (the plan) if given.
    pub iterations: Option<u32>,
    /// `name=...` (a label) if given.
    pub name: Option<String>,
    pub canonical: Vec<String>,
}

/// Applies `branch --at I --set` overrides to the parent's `settings` ([`apply_at`] at
/// [`Place::Branch`]).
pub fn apply_overrides(settings: &Settings, overrides: &[String]) -> Result<Overridden, RunError> {
    apply_at(Place::Branch, settings, overrides)
}

/// Applies `key=value` override texts to resolved `settings` at `place` (a branch point or
/// a stage): read, judged, their numbers checked, written into the settings JSON, read back
/// and their shapes checked. An override holds for every later iteration: no stage's own
/// value of the key overrides it again.
pub(crate) fn apply_at(
    place: Place,
    settings: &Settings,
    overrides: &[String],
) -> Result<Overridden, RunError> {
    let pairs = parse_sets(overrides)?;
    judge_all(place, settings, &pairs).map_err(|r| r.usage("--set"))?;
    let mut json = settings_json(settings);
    let (mut iterations, mut name) = (None, None);
    for ((key, value), text) in pairs.iter().zip(overrides) {
        let bad = |why: String| RunError::Usage(format!("--set {text}: {why}"));
        // What the run spec refuses, refused here too, naming the key (a NaN would turn into
        // JSON's null below).
        check_override(key, value, None).map_err(|e| bad(e.to_string()))?;
        let parsed = json_of(value);
        match key.as_str() {
            "iterations" => {
                let n = parsed.as_u64().and_then(|n| u32::try_from(n).ok());
                iterations = Some(n.ok_or_else(|| bad("iterations: an integer >= 1".into()))?);
            }
            "name" => {
                let n = parsed
                    .as_str()
                    .unwrap_or_else(|| text.split_once('=').map_or("", |p| p.1).trim());
                check_name(n).map_err(|e| bad(e.to_string()))?;
                name = Some(n.to_string());
            }
            k if SELF_PLAY_KEYS.contains(&k) => set_self_play_amount(&mut json, k, parsed),
            k => write_json(&mut json, k, parsed),
        }
    }
    let settings = read_back(settings, json, &pairs, overrides)?;
    Ok(Overridden {
        settings,
        iterations,
        name,
        canonical: canonical(&pairs),
    })
}

/// Writes a judged setting's `value` at the dotted `key` of the settings JSON: where the key
/// is, or, for a setting the record leaves out at its default, where its table is.
fn write_json(json: &mut serde_json::Value, key: &str, value: serde_json::Value) {
    let mut slot = Some(&mut *json);
    for part in key.split('.') {
        slot = slot
            .and_then(|v| v.as_object_mut())
            .and_then(|o| o.get_mut(part));
    }
    if let Some(slot) = slot {
        *slot = value;
    } else if let Some(with) = with_default_key(json, key, &value) {
        *json = with;
    }
}

/// Writes an override of how much an iteration plays into the settings JSON `json`: M and
/// the three budgets are alternatives, so `budget.K` replaces the budget or M there was, and
/// `games_per_iteration` replaces the budget.
fn set_self_play_amount(json: &mut serde_json::Value, key: &str, value: serde_json::Value) {
    let Some(o) = json.as_object_mut() else {
        return;
    };
    o.remove("games_per_iteration");
    o.remove("budget");
    match key.strip_prefix("budget.") {
        Some(k) => o.insert("budget".into(), serde_json::json!({ k: value })),
        None => o.insert(key.into(), value),
    };
}

/// The overridden settings JSON read back as settings, each override's shape checked against
/// them (or, where serde cannot read a value, against the base's shapes, naming the key), and
/// the overridden keys removed from every stage's own `set`.
fn read_back(
    base: &Settings,
    json: serde_json::Value,
    pairs: &[Override],
    texts: &[String],
) -> Result<Settings, RunError> {
    let check = |within: &Settings| {
        pairs.iter().try_for_each(|(key, v)| {
            check_override(key, v, Some(within))
                .map_err(|e| RunError::Usage(format!("--set {key}={v}: {e}")))
        })
    };
    let mut settings: Settings = match serde_json::from_value(json) {
        Ok(s) => s,
        Err(e) => {
            check(base)?;
            return Err(RunError::Usage(format!("--set {}: {e}", texts.join(" "))));
        }
    };
    check(&settings)?;
    for stage in &mut settings.stages {
        stage.set.retain(|t| {
            let key = t.split_once('=').map_or(t.as_str(), |(k, _)| k);
            !pairs.iter().any(|(k, _)| k == key)
        });
    }
    Ok(settings)
}

/// The spec `base` with `overrides` written into it, judged at `place`: the validated config
/// and the spec text that gives it (stored with the run). `what` names the overrides' origin
/// in errors.
///
/// The seed is set on the config, not written into the TOML (TOML integers stop at
/// 2^63 - 1, run seeds do not): `seed` (or a `seed` override where allowed, a non-negative
/// integer) replaces the spec's, and the text records it in a first comment line.
pub fn spec_with_overrides(
    place: Place,
    base: &str,
    overrides: &[Override],
    seed: Option<u64>,
    default_name: &str,
    what: &str,
) -> Result<(RunConfig, String), RunError> {
    let mut table: toml::Table =
        toml::from_str(base).map_err(|e| RunError::Usage(format!("the base run spec: {e}")))?;
    if overrides.is_empty() && seed.is_none() {
        let cfg = RunConfig::from_toml(base, default_name)?;
        return Ok((cfg, base.to_string()));
    }
    // Judged against the base's resolved settings (every key, optional ones included).
    let base_cfg = RunConfig::from_toml(base, default_name)?;
    judge_all(place, &base_cfg.settings, overrides).map_err(|r| r.usage(what))?;
    let mut seed = seed;
    let mut rest = Vec::with_capacity(overrides.len());
    for (k, v) in overrides {
        match k.as_str() {
            "seed" => seed = Some(seed_of(v, what)?),
            _ => rest.push((k.clone(), v.clone())),
        }
        // A number TOML cannot hold (kept as text) is named as out of range, before serde
        // reads it as a type error. Only texts: a list's shape is the spec's own to check.
        if v.is_str() {
            check_override(k, v, Some(&base_cfg.settings))
                .map_err(|e| RunError::Usage(format!("{what} {k}={v}: {e}")))?;
        }
    }
    if seed.is_some() {
        table.remove("seed");
    }
    for (key, value) in &rest {
        if SELF_PLAY_KEYS.contains(&key.as_str()) {
            // M and the budgets are alternatives: one replaces whichever the base has.
            table.remove("games_per_iteration");
            table.remove("budget");
        }
        write_key(&mut table, key, value, what)?;
    }
    let text = toml::to_string(&table)
        .map_err(|e| RunError::Usage(format!("{what}: writing the spec: {e}")))?;
    let shown: Vec<String> = rest.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut cfg = RunConfig::from_toml(&text, default_name)
        .map_err(|e| RunError::Usage(format!("{what} {}: {e}", shown.join(" "))))?;
    let text = match seed {
        Some(s) => {
            cfg.seed = s;
            cfg.seed_drawn = false;
            format!("# seed = {s} (set outside the TOML)\n{text}")
        }
        None => text,
    };
    Ok((cfg, text))
}

/// A `seed` override's value: an integer from 0 to 2^64 - 1. TOML integers stop at 2^63 - 1:
/// a larger seed arrives as the text `--set` kept. Refused in the one form every number has.
fn seed_of(v: &toml::Value, what: &str) -> Result<u64, RunError> {
    let shown = v.as_str().map_or_else(|| v.to_string(), str::to_string);
    v.as_integer()
        .and_then(|i| u64::try_from(i).ok())
        .or_else(|| {
            v.as_str()
                .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|t| t.parse().ok())
        })
        .ok_or_else(|| {
            let e = SettingError::new("seed", &shown, "an integer from 0 to 18446744073709551615");
            RunError::Usage(format!("{what} seed={shown}: {e}"))
        })
}

/// Writes `value` at the dotted `key` of `table` (`search.init_q` is `init_q` in the table
/// `search`, created when missing).
fn write_key(
    table: &mut toml::Table,
    key: &str,
    value: &toml::Value,
    what: &str,
) -> Result<(), RunError> {
    let mut slot = table;
    let parts: Vec<&str> = key.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        let next = slot
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let toml::Value::Table(t) = next else {
            return Err(RunError::Usage(format!(
                "{what} `{key}`: `{part}` is not a table in the base spec"
            )));
        };
        slot = t;
    }
    slot.insert(parts[parts.len() - 1].to_string(), value.clone());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::branch::tests::settings;
    use crate::search::InitQ;

    /// The canonical form sorts by key; a fresh branch used to sort the whole texts. The two
    /// orders differ only where one key is another followed by a character before `=`
    /// (`.`, `-`, a digit): no two keys an override may name are so, so the fresh branches'
    /// seeds and names (`branch(0,O)`) stay.
    #[test]
    fn sorting_by_key_is_sorting_the_texts() {
        let net = RunConfig::from_toml(
            "variant = \"c4:7x6\"\niterations = 2\n[eval]\nwr_p = false\nerrors = false\n\
             [learner]\nkind = \"network\"\n[learner.network]\nhidden = [8]\n[budget]\n\
             moves = 5\n",
            "t",
        )
        .unwrap()
        .settings;
        for base in [settings(), net] {
            for place in Place::ALL {
                let keys = allowed_keys(place, &base);
                for a in &keys {
                    for b in &keys {
                        let by_text = format!("{a}=") < format!("{b}=");
                        assert!(a == b || (a < b) == by_text, "{a} and {b}");
                    }
                }
            }
        }
        let o = parse_sets(&["window=3".into(), "search.init_q=draw".into()]).unwrap();
        assert_eq!(canonical(&o), ["search.init_q=\"draw\"", "window=3"]);
    }

    /// Every refusal names the key, the value and what is allowed at its place.
    #[test]
    fn refusals_name_the_key_the_value_and_what_is_allowed() {
        let s = settings();
        let v = |t: &str| parse_value(t);
        for place in Place::ALL {
            let r = judge(place, &s, "search.nope", &v("7")).unwrap_err();
            assert_eq!((r.key.as_str(), r.value.as_str()), ("search.nope", "7"));
            let text = r.to_string();
            assert!(
                text.starts_with("search.nope=7: no setting `search.nope`; allowed: "),
                "{place:?}: {text}"
            );
            assert!(text.contains("search.init_q") && text.contains("budget.moves"));
            // What a place refuses is not offered as allowed there.
            for key in ["name", "seed", "iterations", "variant", "init_std"] {
                let refused = judge(place, &s, key, &v("1")).is_err();
                let offered = r.allowed.split(", ").any(|k| k == key);
                assert_eq!(refused, !offered, "{place:?} {key}: {}", r.allowed);
            }
        }
        let r = judge(Place::Branch, &s, "variant", &v("ewn:3x3x4")).unwrap_err();
        assert!(
            r.to_string()
                .starts_with("variant=\"ewn:3x3x4\": the variant cannot change")
        );
        let r = judge(Place::Stage, &s, "init_std", &v("0.5")).unwrap_err();
        assert!(
            r.to_string()
                .starts_with("init_std=0.5: init_std cannot change mid-run")
        );
        let two = parse_sets(&["budget.moves=5".into(), "games_per_iteration=3".into()]).unwrap();
        let r = judge_all(Place::Run, &s, &two).unwrap_err().to_string();
        assert!(
            r.starts_with(
                "games_per_iteration=3: `budget.moves` and `games_per_iteration` are \
                           alternatives"
            ) && r.contains("allowed: one of games_per_iteration, budget.moves"),
            "{r}"
        );
    }

    /// A setting the base's record leaves out at its default can be set (a sweep's `[set]`
    /// or axis, `--set`); a key no settings table knows cannot.
    #[test]
    fn settings_left_out_at_their_default_can_be_set() {
        let base = "variant = \"c4:7x6\"\nseed = 1\niterations = 2\n[eval]\nwr_p = false\n\
                    errors = false\n[learner]\nkind = \"network\"\n[learner.network]\n\
                    hidden = [8]\n";
        let on = [(
            "learner.network.reference.c4_search".to_string(),
            toml::Value::Boolean(true),
        )];
        let (cfg, _) = spec_with_overrides(Place::Run, base, &on, None, "t", "[set]").unwrap();
        let net = cfg.settings.learner.network.as_ref().unwrap();
        assert!(net.reference.as_ref().unwrap().c4_search);
        let nope = [(
            "learner.network.reference.nope".to_string(),
            toml::Value::Boolean(true),
        )];
        let e = spec_with_overrides(Place::Run, base, &nope, None, "t", "[set]").unwrap_err();
        assert!(
            e.to_string()
                .contains("no setting `learner.network.reference.nope`"),
            "{e}"
        );
    }

    #[test]
    fn overrides_are_applied_canonically_and_checked() {
        let s = settings();
        // Order and spelling of the values do not change the canonical form.
        let a = apply_overrides(&s, &["window=3".into(), "search.init_q=draw".into()]).unwrap();
        let b =
            apply_overrides(&s, &["search.init_q = \"draw\"".into(), "window=3".into()]).unwrap();
        assert_eq!(a.canonical, b.canonical);
        assert_eq!(a.canonical, ["search.init_q=\"draw\"", "window=3"]);
        assert_eq!(a.settings.window, 3);
        assert_eq!(a.settings.search.init_q, InitQ::Draw);
        assert_eq!(a.settings.games_per_iteration, s.games_per_iteration);
        let n = apply_overrides(&s, &["iterations=40".into(), "name=x".into()]).unwrap();
        assert_eq!((n.iterations, n.name.as_deref()), (Some(40), Some("x")));
        assert_eq!(n.settings, s);
        let lr = apply_overrides(&s, &["learning_rate=[[1, 0.5]]".into()]).unwrap();
        assert_eq!(lr.settings.learning_rate, [(1, 0.5)]);
        for (bad, says) in [
            ("variant=ewn:3x3x4", "cannot change mid-run"),
            ("init_std=0.1", "cannot change mid-run"),
            ("seed=3", "--seed"),
            ("search.nope=1", "no setting `search.nope`"),
            ("window", "key=value"),
            ("search.init_q=sometimes", "sometimes"),
        ] {
            let e = apply_overrides(&s, &[bad.to_string()])
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // The learner's fixed settings are refused with its reason, and left out of the
        // allowed keys.
        let net = RunConfig::from_toml(
            "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\n[learner]\nkind = \"network\"\n\
             [learner.network]\nhidden = [16]\n",
            "t",
        )
        .unwrap()
        .settings;
        for key in [
            "learner.network.hidden=[8]",
            "learner.network.optimizer=adam",
        ] {
            let e = apply_overrides(&net, &[key.to_string()])
                .unwrap_err()
                .to_string();
            assert!(e.contains("cannot change mid-run"), "{key}: {e}");
        }
        assert!(apply_overrides(&net, &["learner.network.batch_size=8".into()]).is_ok());
        // A key the record leaves out at its default is a setting all the same; a key no
        // table knows is not.
        let on = apply_overrides(&net, &["learner.network.reference.c4_search=true".into()]);
        let json = settings_json(&on.unwrap().settings);
        assert_eq!(json["learner"]["network"]["reference"]["c4_search"], true);
        assert!(settings_json(&net)["learner"]["network"]["reference"]["c4_search"].is_null());
        let e = apply_overrides(&net, &["learner.network.reference.nope=1".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no setting `learner.network.reference.nope`"),
            "{e}"
        );
        let e = apply_overrides(&s, &["nope=1".into()])
            .unwrap_err()
            .to_string();
        assert!(!e.contains("init_std") && e.contains("window"), "{e}");
        let e = apply_overrides(&s, &["window=3".into(), "window=4".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("set twice"), "{e}");
    }

    /// A budget override replaces M (and M a budget); two of them at once are refused.
    #[test]
    fn budget_overrides_replace_games_per_iteration() {
        use crate::runs::BudgetKind;
        let s = settings();
        let b = apply_overrides(&s, &["budget.moves=5000".into()]).unwrap();
        assert_eq!(b.settings.games_per_iteration, None);
        assert_eq!(b.settings.budget_kind(), Some(BudgetKind::Moves(5000)));
        assert_eq!(b.canonical, ["budget.moves=5000"]);
        let t = apply_overrides(&b.settings, &["budget.seconds=1.5".into()]).unwrap();
        assert_eq!(t.settings.budget_kind(), Some(BudgetKind::Seconds(1.5)));
        let m = apply_overrides(&t.settings, &["games_per_iteration=40".into()]).unwrap();
        assert_eq!(
            (m.settings.games_per_iteration, m.settings.budget),
            (Some(40), None)
        );
        for (bad, says) in [
            (
                vec!["budget.moves=5", "games_per_iteration=3"],
                "are alternatives",
            ),
            (
                vec!["budget.moves=5", "budget.seconds=3"],
                "are alternatives",
            ),
            (vec!["budget.games=5"], "no setting `budget.games`"),
        ] {
            let o: Vec<String> = bad.iter().map(|x| x.to_string()).collect();
            let e = apply_overrides(&s, &o).unwrap_err().to_string();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
        let e = apply_overrides(&s, &["nope=1".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("budget.simulations"), "{e}");
    }
}
