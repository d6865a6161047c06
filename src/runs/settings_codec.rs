//! Settings records that evolve (docs/learners.md, "Settings that evolve").
//!
//! `settings/v1` is the layout of the first runs, frozen here as private structs
//! ([`SettingsV1`], [`SearchConfigV1`], [`EvalSettingsV1`]: the fields and order of
//! [`Settings`] at commit 64434fb) so the current [`Settings`] can grow. `settings/v2` is the
//! current settings as canonical JSON (serde_json of [`Settings`]: fields in declaration
//! order, no whitespace) inside a postcard string: a field added later changes no existing
//! byte layout, and a v2 record written before the field existed decodes with the field's
//! *legacy* value.
//!
//! Two defaults per added field, in one place each:
//! - the *spec default* (a TOML spec that omits the field): the field's `Default`, the
//!   literature's convention;
//! - the *legacy value* (a record written before the field existed): set in
//!   [`SearchConfigV1::into_current`] / [`SettingsV1::into_current`], the value that
//!   reproduces the old behaviour. Decoding a v2 record fills its missing fields from
//!   [`legacy_baseline`], which is built from those.
//!
//! Writing: settings that a v1 record expresses exactly (convert to v1 and back, equal) are
//! written as `settings/v1`, so every run of the old kinds keeps its settings hash and head;
//! anything else (another learner, a start policy, a knob away from its legacy value) is
//! written as `settings/v2`.

use serde::{Deserialize, Serialize};

use super::spec::{EvalSettings, LearnerSettings, Settings};
use crate::search::{Algorithm, ForcedPlayouts, InitQ, PlayoutCap, SearchConfig};
use crate::selfplay::SelfPlaySettings;
use crate::start::StartSettings;
use crate::store::Encoded;
use crate::store::{ObjectHash, Record, Store, StoreError};

/// `[eval]` as of settings/v1.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
struct EvalSettingsV1 {
    games: u32,
    wr_p: bool,
    errors: bool,
}

/// `[search]` as of settings/v1.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SearchConfigV1 {
    c_puct: f64,
    dirichlet_alpha: f64,
    dirichlet_epsilon: f64,
    temperature: f64,
    sample_moves: Option<u32>,
    simulations: u32,
    init_q: InitQ,
    playout_cap: Option<PlayoutCap>,
    forced_playouts: Option<ForcedPlayouts>,
    policy_target_pruning: bool,
}

impl SearchConfigV1 {
    fn of(c: &SearchConfig) -> SearchConfigV1 {
        SearchConfigV1 {
            c_puct: c.c_puct,
            dirichlet_alpha: c.dirichlet_alpha,
            dirichlet_epsilon: c.dirichlet_epsilon,
            temperature: c.temperature,
            sample_moves: c.sample_moves,
            // A schedule is no count: converted back it differs, so it is written as v2.
            simulations: c.simulations.first(),
            init_q: c.init_q,
            playout_cap: c.playout_cap,
            forced_playouts: c.forced_playouts,
            policy_target_pruning: c.policy_target_pruning,
        }
    }

    /// The current search settings a v1 record means: every field added since v1 takes its
    /// legacy value here (a struct literal, so a new field cannot be forgotten).
    fn into_current(self) -> SearchConfig {
        let d = SearchConfig::default();
        SearchConfig {
            c_puct: self.c_puct,
            dirichlet_alpha: self.dirichlet_alpha,
            dirichlet_epsilon: self.dirichlet_epsilon,
            temperature: self.temperature,
            sample_moves: self.sample_moves,
            simulations: self.simulations.into(),
            init_q: self.init_q,
            playout_cap: self.playout_cap,
            forced_playouts: self.forced_playouts,
            policy_target_pruning: self.policy_target_pruning,
            count_expansion_visit: SearchConfig::LEGACY_COUNT_EXPANSION_VISIT,
            expansion_is_simulation: SearchConfig::LEGACY_EXPANSION_IS_SIMULATION,
            tie_break: SearchConfig::LEGACY_TIE_BREAK,
            // Added with Gumbel search; their defaults are the old behaviour (PUCT).
            algorithm: Algorithm::Puct,
            gumbel_actions: d.gumbel_actions,
            c_visit: d.c_visit,
            c_scale: d.c_scale,
            gumbel_q_scale: d.gumbel_q_scale,
            gumbel_eval_noise: d.gumbel_eval_noise,
            // Added with the chance rule and the explicit noise scale: the old behaviour.
            gumbel_scale: None,
            chance: crate::search::ChanceRule::Sample,
        }
    }
}

/// The run settings as of settings/v1 (commit 64434fb).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SettingsV1 {
    games_per_iteration: u32,
    window: u32,
    learning_rate: Vec<(u32, f64)>,
    init_std: f64,
    checkpoint_every: u32,
    search: SearchConfigV1,
    eval: EvalSettingsV1,
}

impl Record for SettingsV1 {
    const KIND: &'static str = "settings/v1";
}

impl SettingsV1 {
    fn of(s: &Settings) -> SettingsV1 {
        SettingsV1 {
            // 0: no M (a budget), which no v1 record has, so such settings are written as v2.
            games_per_iteration: s.games_per_iteration.unwrap_or(0),
            window: s.window,
            learning_rate: s.learning_rate.clone(),
            init_std: s.init_std,
            checkpoint_every: s.checkpoint_every,
            search: SearchConfigV1::of(&s.search),
            eval: EvalSettingsV1 {
                games: s.eval.games,
                wr_p: s.eval.wr_p,
                errors: s.eval.errors,
            },
        }
    }

    /// The current settings a v1 record means (legacy values for everything added since).
    fn into_current(self) -> Settings {
        Settings {
            games_per_iteration: Some(self.games_per_iteration),
            window: self.window,
            learning_rate: self.learning_rate,
            init_std: self.init_std,
            checkpoint_every: self.checkpoint_every,
            search: self.search.into_current(),
            eval: EvalSettings {
                games: self.eval.games,
                wr_p: self.eval.wr_p,
                errors: self.eval.errors,
                // Added with the evaluation interval: every iteration measured.
                every: 1,
            },
            learner: LearnerSettings::default(),
            start: StartSettings::default(),
            budget: None,
            selfplay: SelfPlaySettings::default(),
            stages: Vec::new(),
        }
    }
}

/// `settings/v2`: the settings as canonical JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct SettingsV2 {
    json: String,
}

impl Record for SettingsV2 {
    const KIND: &'static str = "settings/v2";
}

/// The settings record of `s` (v1 where it expresses `s` exactly, else v2), encoded.
pub(crate) fn settings_record(s: &Settings) -> Result<Encoded, StoreError> {
    let v1 = SettingsV1::of(s);
    if v1.clone().into_current() == *s {
        return Encoded::of(&v1);
    }
    let json = serde_json::to_string(s).map_err(|e| StoreError::Query(e.to_string()))?;
    Encoded::of(&SettingsV2 { json })
}

/// The address of `s`'s settings record.
pub(crate) fn settings_hash(s: &Settings) -> Result<ObjectHash, StoreError> {
    settings_record(s).map(|e| e.hash)
}

/// The current settings every field of which takes its legacy value (the base a v2 record's
/// missing fields are filled from).
pub(crate) fn legacy_baseline() -> Settings {
    SettingsV1::of(&Settings {
        games_per_iteration: Some(1),
        window: 1,
        learning_rate: vec![(1, 1.0)],
        init_std: 0.0,
        checkpoint_every: 1,
        search: SearchConfig::default(),
        eval: EvalSettings::default(),
        learner: LearnerSettings::default(),
        start: StartSettings::default(),
        budget: None,
        selfplay: SelfPlaySettings::default(),
        stages: Vec::new(),
    })
    .into_current()
}

/// Decodes the settings record at `hash`, whichever its version.
pub(crate) fn load_settings(store: &Store, hash: &ObjectHash) -> Result<Settings, StoreError> {
    match store.get::<SettingsV1>(hash) {
        Ok(v1) => Ok(v1.into_current()),
        Err(StoreError::WrongKind { .. }) => {
            let v2: SettingsV2 = store.get(hash)?;
            decode_v2(&v2.json).map_err(|reason| StoreError::Corrupt {
                hash: *hash,
                reason,
            })
        }
        Err(e) => Err(e),
    }
}

fn decode_v2(json: &str) -> Result<Settings, String> {
    let stored: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("settings/v2 JSON: {e}"))?;
    let mut base =
        serde_json::to_value(legacy_baseline()).map_err(|e| format!("settings as JSON: {e}"))?;
    // `games_per_iteration` and `budget` are alternatives: a record with a budget has no M,
    // and takes none from the baseline.
    if stored.get("budget").is_some()
        && let Some(b) = base.as_object_mut()
    {
        b.remove("games_per_iteration");
    }
    merge(&mut base, stored);
    serde_json::from_value(base).map_err(|e| format!("settings/v2: {e}"))
}

/// Overwrites `base` with `over`, object by object.
fn merge(base: &mut serde_json::Value, over: serde_json::Value) {
    match (base, over) {
        (serde_json::Value::Object(b), serde_json::Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::start::StartKind;

    fn settings() -> Settings {
        crate::runs::RunConfig::from_toml(
            "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 4\n",
            "x",
        )
        .unwrap()
        .settings
    }

    /// `settings()` with the search conventions of runs stored before settings/v2.
    fn legacy_settings() -> Settings {
        let mut s = settings();
        s.search = s.search.with_legacy_conventions();
        s
    }

    #[test]
    fn legacy_settings_stay_v1_and_new_ones_are_v2() {
        // A spec's defaults follow the paper's search conventions, which v1 cannot express.
        assert_eq!(settings_record(&settings()).unwrap().kind, "settings/v2");
        let s = legacy_settings();
        assert_eq!(settings_record(&s).unwrap().kind, "settings/v1");
        let mut g = s.clone();
        g.start.policy = StartKind::GoExploit;
        assert_eq!(settings_record(&g).unwrap().kind, "settings/v2");
        // Archive knobs without Go-Exploit still differ from the legacy value: v2.
        let mut h = s.clone();
        h.start.archive_prob = 0.5;
        assert_eq!(settings_record(&h).unwrap().kind, "settings/v2");
    }

    #[test]
    fn both_versions_decode_and_missing_v2_fields_take_legacy_values() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("t.db")).unwrap();
        let s = legacy_settings();
        let mut g = settings();
        g.start.policy = StartKind::GoExploit;
        let (h1, h2) = store
            .write(|w| {
                let a = w.put_encoded(&settings_record(&s)?)?;
                let b = w.put_encoded(&settings_record(&g)?)?;
                Ok((a, b))
            })
            .unwrap();
        assert_eq!(load_settings(&store, &h1).unwrap(), s);
        assert_eq!(load_settings(&store, &h2).unwrap(), g);
        // A v2 record from before `start` existed: the legacy value (the game's start).
        let mut json: serde_json::Value = serde_json::to_value(&g).unwrap();
        json.as_object_mut().unwrap().remove("start");
        let old = decode_v2(&json.to_string()).unwrap();
        assert_eq!(old.start, StartSettings::default());
        assert_eq!(old.search, g.search);
        // A v2 record from before the tie-break setting: the legacy lowest-index tie-break.
        let mut json: serde_json::Value = serde_json::to_value(&g).unwrap();
        json["search"].as_object_mut().unwrap().remove("tie_break");
        let old = decode_v2(&json.to_string()).unwrap();
        assert_eq!(old.search.tie_break, SearchConfig::LEGACY_TIE_BREAK);
        assert_ne!(g.search.tie_break, SearchConfig::LEGACY_TIE_BREAK);
    }

    /// A network run's record names its kernels' arithmetic (a spec's default: fused); a
    /// record from before the key existed decodes to the separate arithmetic those runs
    /// were computed with, so they verify and resume with their own bits.
    #[test]
    fn network_records_without_arithmetic_mean_separate() {
        let s = crate::runs::RunConfig::from_toml(
            "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\n[learner]\nkind = \"network\"\n",
            "x",
        )
        .unwrap()
        .settings;
        let net = |s: &Settings| crate::learners::network::settings_of(&s.learner).arith();
        assert_eq!(net(&s), crate::nn::Arith::Fused);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["learner"]["network"]["arithmetic"], "fused");
        assert_eq!(
            net(&decode_v2(&json.to_string()).unwrap()),
            crate::nn::Arith::Fused
        );
        let mut old = json.clone();
        old["learner"]["network"]
            .as_object_mut()
            .unwrap()
            .remove("arithmetic");
        assert_eq!(
            net(&decode_v2(&old.to_string()).unwrap()),
            crate::nn::Arith::Separate
        );
    }

    /// The evaluation interval: at 1 (the default) no record mentions it, so existing
    /// settings keep their bytes and hashes (v1 stays v1); another value is written as v2 and
    /// read back; a v2 record without it (every one before it existed) means 1.
    #[test]
    fn an_evaluation_interval_of_one_changes_no_record() {
        let (s, l) = (settings(), legacy_settings());
        assert_eq!(s.eval.every, 1);
        assert!(!serde_json::to_string(&s).unwrap().contains("\"every\""));
        assert_eq!(settings_record(&l).unwrap().kind, "settings/v1");
        let mut k = l.clone();
        k.eval.every = 3;
        let json = serde_json::to_string(&k).unwrap();
        assert!(json.contains("\"every\":3"), "{json}");
        assert_eq!(settings_record(&k).unwrap().kind, "settings/v2");
        assert_ne!(settings_hash(&k).unwrap(), settings_hash(&l).unwrap());
        assert_eq!(decode_v2(&json).unwrap(), k);
        let mut old: serde_json::Value = serde_json::to_value(&k).unwrap();
        old["eval"].as_object_mut().unwrap().remove("every");
        assert_eq!(decode_v2(&old.to_string()).unwrap().eval.every, 1);
    }

    /// A budget is written as v2 (v1 has no place for it) and decodes with no M; settings
    /// without one keep the bytes they had before budgets existed.
    #[test]
    fn budgets_are_v2_and_settings_without_one_keep_their_bytes() {
        let mut b = legacy_settings();
        b.games_per_iteration = None;
        b.budget = Some(crate::runs::budget::Budget {
            moves: Some(700),
            ..Default::default()
        });
        assert_eq!(settings_record(&b).unwrap().kind, "settings/v2");
        let json = serde_json::to_string(&b).unwrap();
        assert!(
            json.contains("\"budget\":{\"moves\":700}") && !json.contains("games_per"),
            "{json}"
        );
        assert_eq!(decode_v2(&json).unwrap(), b);
        // Without a budget the JSON has no `budget` key and M as a plain number.
        let json = serde_json::to_string(&settings()).unwrap();
        assert!(
            !json.contains("budget") && json.starts_with("{\"games_per_iteration\":1000,"),
            "{json}"
        );
    }
}
