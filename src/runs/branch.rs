//! Branch a run at an iteration with changed settings (docs/store.md, "Branch").
//!
//! `branch RUN --at I --set key=value ... [--seed S]` makes a run whose record names its
//! parent (run, I, the parent's iteration record at I, the canonical overrides). Its runs row
//! starts at `iterations_done = I` with the parent's iteration record as head: the first I
//! iterations are the parent's records and rows (shared, not copied; `run_lineage` and
//! `run_iterations` in `schema/0004_lifecycle.sql` show them). It continues from the parent's
//! model at I. The model's initial parameters and the evaluation streams keep the root run's
//! seed (the model is the same model); self-play uses the branch's seed.
//!
//! Iteration records carry the run's *line*: its run record with `parent` left out (for a
//! root run, the run record itself). So a branch with no overrides and the parent's seed
//! produces the parent's records, and its head equals the parent's.
//!
//! The branch's seed, unless given, is pinned as the first `u64` of the stream
//! `branch(I,O)` of the parent's seed, where `O` is the canonical overrides (each
//! `key=<JSON value>`, sorted by key) joined by `;` ([`branch_seed`]).
//!
//! Settings that cannot change mid-run are refused with the reason: `variant` (the model's
//! positions and actions belong to it), `learner.kind`, `seed` (use `--seed`), and the
//! settings the learner declares fixed ([`crate::learners::LearnerKind::fixed_settings`]:
//! tabular AlphaZero's `init_std`, the network's architecture and optimiser).

use rand_core::Rng;

use super::records::Parent;
use super::{
    RunConfig, RunError, RunRecord, Settings, chain, find, line_of, load_config, settings_record,
};
use crate::store::{NewRun, ObjectHash, RunStatus, Store, address};

/// The pinned seed of a branch (see the module docs).
pub fn branch_seed(parent_seed: u64, at: u32, canonical_overrides: &[String]) -> u64 {
    crate::rng::stream_fmt(
        parent_seed,
        format_args!("branch({at},{})", canonical_overrides.join(";")),
    )
    .next_u64()
}

/// A branch's automatic name: the parent's name, `+` and its overrides as `key=value` (keys
/// shortened to their last part where that is unambiguous, values as given: the branch's,
/// not the parent's), then `@` and the branch point: `quick+init_q=draw,window=3@50`;
/// `PARENT@I` with no overrides. `seed` is the seed given with `--seed`, if any. The store
/// numbers a name already taken (`-2`, `-3`, ...).
pub fn branch_name(parent: &str, at: u32, canonical: &[String], seed: Option<u64>) -> String {
    let mut pairs: Vec<(&str, String)> = canonical
        .iter()
        .filter_map(|c| c.split_once('='))
        .filter(|(k, _)| *k != "name")
        .map(|(k, v)| {
            let v = match serde_json::from_str::<serde_json::Value>(v) {
                Ok(serde_json::Value::String(s)) => s,
                _ => v.to_string(),
            };
            (k, v)
        })
        .collect();
    let seed = seed.map(|s| s.to_string());
    if let Some(s) = &seed {
        pairs.push(("seed", s.clone()));
    }
    let last = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
    let shown: Vec<String> = pairs
        .iter()
        .map(|(k, v)| {
            let short = last(k);
            let clash = pairs.iter().filter(|(o, _)| last(o) == short).count() > 1;
            format!("{}={v}", if clash { k.to_string() } else { short })
        })
        .collect();
    if shown.is_empty() {
        format!("{parent}@{at}")
    } else {
        format!("{parent}+{}@{at}", shown.join(","))
    }
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

/// Applies `key=value` overrides to `settings`. Keys are the run spec's (`window`,
/// `search.init_q`, `eval.games`, ...); values are TOML values, bare words read as strings.
pub fn apply_overrides(settings: &Settings, overrides: &[String]) -> Result<Overridden, RunError> {
    let bad = |text: &str, why: String| RunError::Usage(format!("--set {text}: {why}"));
    let mut json = settings_json(settings);
    let fixed = settings.learner.kind.fixed_settings();
    let mut pairs: Vec<(String, serde_json::Value)> = Vec::new();
    let mut iterations = None;
    let mut name = None;
    let mut typed: Vec<(String, toml::Value)> = Vec::new();
    for text in overrides {
        let Some((key, value)) = text.split_once('=') else {
            return Err(bad(text, "give key=value, e.g. search.init_q=draw".into()));
        };
        let (key, value) = (key.trim(), value.trim());
        let reason = match key {
            "variant" => Some(
                "the variant cannot change mid-run: the model's positions and actions belong \
                 to it (start a new run instead)"
                    .to_string(),
            ),
            "seed" => Some("give the branch's seed with --seed".to_string()),
            "learner.kind" => Some(
                "the learner cannot change mid-run: the branch continues the parent's model \
                 (start a new run instead)"
                    .to_string(),
            ),
            _ => fixed
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(k, why)| format!("{k} cannot change mid-run: {why}")),
        };
        if let Some(reason) = reason {
            return Err(bad(text, reason));
        }
        if pairs.iter().any(|(k, _)| k == key) {
            return Err(bad(text, format!("`{key}` is set twice")));
        }
        let as_toml = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"));
        // What the run spec refuses, refused here too, naming the key (a NaN would turn into
        // JSON's null below).
        if let Some(v) = &as_toml {
            super::spec::check_override(key, v, None).map_err(|e| bad(text, e.to_string()))?;
            typed.push((key.to_string(), v.clone()));
        }
        let parsed: serde_json::Value = match as_toml {
            Some(v) => serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
            None => serde_json::Value::String(value.to_string()),
        };
        match key {
            "iterations" => {
                let n = parsed
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad(text, "iterations: an integer >= 1".into()))?;
                iterations = Some(n);
            }
            "name" => {
                let n = parsed
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string);
                super::spec::check_name(&n).map_err(|e| bad(text, e.to_string()))?;
                name = Some(n);
            }
            _ if key.starts_with("budget.") || key == "games_per_iteration" => {
                set_self_play_amount(&mut json, &pairs, key, parsed.clone())
                    .map_err(|why| bad(text, why))?;
            }
            _ => {
                let mut slot = Some(&mut json);
                for part in key.split('.') {
                    slot = slot
                        .and_then(|v| v.as_object_mut())
                        .and_then(|o| o.get_mut(part));
                }
                if let Some(slot) = slot {
                    *slot = parsed.clone();
                } else if let Some(with) = with_default_key(&json, key, &parsed) {
                    // A setting the record leaves out at its default (`value_head`,
                    // `c4_search`, ...) is written where its table is.
                    json = with;
                } else {
                    // A branch continues the parent's model: its fixed settings cannot change.
                    let keys: Vec<String> = setting_keys(&json)
                        .into_iter()
                        .filter(|k| !fixed.iter().any(|(f, _)| f == k))
                        .filter(|k| !k.starts_with("budget.") && k != "games_per_iteration")
                        .chain(SELF_PLAY_KEYS.iter().map(|k| k.to_string()))
                        .collect();
                    return Err(bad(
                        text,
                        format!(
                            "no setting `{key}`; allowed: iterations, name, {}",
                            keys.join(", ")
                        ),
                    ));
                }
            }
        }
        pairs.push((key.to_string(), parsed));
    }
    let check = |within: &Settings| {
        typed.iter().try_for_each(|(key, v)| {
            super::spec::check_override(key, v, Some(within))
                .map_err(|e| RunError::Usage(format!("--set {key}={v}: {e}")))
        })
    };
    let settings: Settings = match serde_json::from_value(json) {
        Ok(s) => s,
        Err(e) => {
            // A value serde cannot read (a list of three where a pair belongs): name the key
            // and the shape, as the run spec does, by checking against the parent's shapes.
            check(settings)?;
            return Err(RunError::Usage(format!(
                "--set {}: {e}",
                overrides.join(" ")
            )));
        }
    };
    check(&settings)?;
    // An override holds for every later iteration: no stage's own value of the key
    // (runs/stages.rs) overrides it again.
    let mut settings = settings;
    for stage in &mut settings.stages {
        stage.set.retain(|t| {
            let key = t.split_once('=').map_or(t.as_str(), |(k, _)| k);
            !pairs.iter().any(|(k, _)| k == key)
        });
    }
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let canonical = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Ok(Overridden {
        settings,
        iterations,
        name,
        canonical,
    })
}

/// The keys that say how much an iteration plays: M, or one of the budgets (runs/budget.rs).
pub const SELF_PLAY_KEYS: [&str; 4] = [
    "games_per_iteration",
    "budget.moves",
    "budget.simulations",
    "budget.seconds",
];

/// Writes an override of how much an iteration plays into the settings JSON `json`: M and
/// the three budgets are alternatives, so `budget.K` replaces the budget or M there was, and
/// `games_per_iteration` replaces the budget. Two of them in one set of overrides (`pairs`,
/// those already applied) are refused.
fn set_self_play_amount(
    json: &mut serde_json::Value,
    pairs: &[(String, serde_json::Value)],
    key: &str,
    value: serde_json::Value,
) -> Result<(), String> {
    if !SELF_PLAY_KEYS.contains(&key) {
        return Err(format!(
            "no setting `{key}`; a budget is one of budget.moves, budget.simulations, \
             budget.seconds"
        ));
    }
    if let Some((other, _)) = pairs
        .iter()
        .find(|(k, _)| SELF_PLAY_KEYS.contains(&k.as_str()))
    {
        return Err(format!(
            "`{other}` and `{key}` are alternatives (how much an iteration plays); set one"
        ));
    }
    let Some(o) = json.as_object_mut() else {
        return Err("the settings are not a JSON object".into());
    };
    o.remove("games_per_iteration");
    o.remove("budget");
    match key.strip_prefix("budget.") {
        Some(k) => o.insert("budget".into(), serde_json::json!({ k: value })),
        None => o.insert(key.into(), value),
    };
    Ok(())
}

/// Every leaf key of a settings JSON object, dotted (`search.init_q`), in the object's order:
/// the keys an override may name (the branch and sweep error messages list them).
/// The settings as JSON with every optional key present: the record's form plus the search
/// keys a record leaves out at their defaults ([`SearchConfig::optional_keys`]), so that
/// overrides, branches and sweeps may name them.
pub fn settings_json(settings: &Settings) -> serde_json::Value {
    let mut json = serde_json::to_value(settings).unwrap_or(serde_json::Value::Null);
    if let Some(search) = json.get_mut("search").and_then(|v| v.as_object_mut()) {
        for (k, v) in settings.search.optional_keys() {
            search.entry(k.to_string()).or_insert(v);
        }
    }
    json
}

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

/// Creates a branch of run `parent` at iteration `at` (see the module docs); returns its
/// run id, run hash and seed. Run it with [`resume`](fn@super::resume).
pub fn create_branch(
    store: &mut Store,
    parent: &str,
    at: u32,
    overrides: &[String],
    seed: Option<u64>,
    threads: u32,
) -> Result<(i64, ObjectHash, u64), RunError> {
    let row = find(store, parent)?;
    if at == 0 || at > row.iterations_done {
        return Err(RunError::Usage(format!(
            "--at {at}: run {} ({}) has committed iterations 1..={}; branch at one of them",
            row.id, row.name, row.iterations_done
        )));
    }
    let (cfg, record) = load_config(store, &row)?;
    let o = apply_overrides(&cfg.settings, overrides)?;
    let iterations = o.iterations.unwrap_or(cfg.iterations);
    if iterations <= at {
        return Err(RunError::Usage(format!(
            "the branch would have nothing to do: iterations = {iterations} <= --at {at} (set \
             iterations=N with N > {at})"
        )));
    }
    let branch_cfg = RunConfig {
        annotations: Default::default(),
        name: match &o.name {
            Some(n) => n.clone(),
            None => store.unused_run_name(&branch_name(&row.name, at, &o.canonical, seed))?,
        },
        game: cfg.game.clone(),
        seed: seed.unwrap_or_else(|| branch_seed(record.seed, at, &o.canonical)),
        seed_drawn: false,
        iterations,
        settings: o.settings.clone(),
    };
    branch_cfg.validate()?;
    let records = chain(store, row.head)?;
    let Some(at_record) = records.get(at as usize - 1) else {
        return Err(RunError::Inconsistent(format!(
            "run {} ({}): its row says {} iterations done, but the chain from its head has {}; \
             `tabula fsck` names what disagrees",
            row.id,
            row.name,
            row.iterations_done,
            records.len()
        )));
    };
    let at_record = address(at_record)?.0;
    let settings_json = serde_json::to_string(&branch_cfg.settings).unwrap_or_default();
    let settings_record = settings_record(&branch_cfg.settings)?;
    let spec_toml = format!(
        "# branch of run {} ({}) at iteration {at}; overrides: {}; seed {}\n{}",
        row.id,
        row.name,
        if o.canonical.is_empty() {
            "none".to_string()
        } else {
            o.canonical.join(" ")
        },
        branch_cfg.seed,
        row.spec_toml
    );
    let (id, hash) = store.write(|w| {
        let settings = w.put_encoded(&settings_record)?;
        let run = RunRecord {
            variant: record.variant.clone(),
            seed: branch_cfg.seed,
            settings,
            parent: Some(Parent {
                run: row.hash,
                iteration: at,
                iteration_record: at_record,
                overrides: o.canonical.clone(),
            }),
        };
        w.put(&line_of(&run))?;
        let hash = w.put(&run)?;
        let id = w.create_run(&NewRun {
            hash,
            name: branch_cfg.name.clone(),
            variant: run.variant.clone(),
            seed: branch_cfg.seed,
            seed_drawn: false,
            settings,
            settings_json: settings_json.clone(),
            spec_toml: spec_toml.clone(),
            iterations_planned: iterations,
            parent: Some((row.id, at)),
            threads,
            annotations: Default::default(),
        })?;
        w.set_run_progress(id, at, Some(&at_record), RunStatus::Running)?;
        Ok((id, hash))
    })?;
    Ok((id, hash, branch_cfg.seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::InitQ;

    fn settings() -> Settings {
        RunConfig::from_toml("variant = \"ewn:3x3x3\"\nseed = 1\niterations = 10\n", "t")
            .unwrap()
            .settings
    }

    /// A branch is named after its overrides' values (not the parent's) and its branch point.
    #[test]
    fn branch_names_carry_the_overrides_and_the_branch_point() {
        let s = settings();
        let o = apply_overrides(&s, &["search.init_q=loss".into(), "window=3".into()]).unwrap();
        assert_eq!(
            branch_name("init-q/init_q=draw/seed=1", 50, &o.canonical, None),
            "init-q/init_q=draw/seed=1+init_q=loss,window=3@50"
        );
        assert_eq!(branch_name("quick", 7, &[], None), "quick@7");
        assert_eq!(branch_name("quick", 7, &[], Some(5)), "quick+seed=5@7");
        // Two keys with one last part keep their whole key; a label override is no part.
        let o = apply_overrides(
            &s,
            &[
                "search.temperature=0.5".into(),
                "name=x".into(),
                "iterations=20".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            branch_name("p", 3, &o.canonical, None),
            "p+iterations=20,temperature=0.5@3"
        );
        let clash = ["a.init_q=\"win\"".to_string(), "b.init_q=1".to_string()];
        assert_eq!(
            branch_name("p", 1, &clash, None),
            "p+a.init_q=win,b.init_q=1@1"
        );
    }

    /// The branch seed derivation is pinned: changing it would change every branch.
    #[test]
    fn branch_seed_is_pinned() {
        let o = vec!["search.init_q=\"draw\"".to_string()];
        assert_eq!(branch_seed(11, 2, &o), branch_seed(11, 2, &o.clone()));
        assert_ne!(branch_seed(11, 2, &o), branch_seed(11, 3, &o));
        assert_ne!(branch_seed(11, 2, &o), branch_seed(12, 2, &o));
        assert_ne!(branch_seed(11, 2, &o), branch_seed(11, 2, &[]));
        // The first u64 of stream `branch(2,search.init_q="draw")` of seed 11.
        let mut r = crate::rng::stream(11, "branch(2,search.init_q=\"draw\")");
        assert_eq!(branch_seed(11, 2, &o), r.next_u64());
        assert_eq!(branch_seed(11, 2, &o), 0x711c_77a1_5aa4_4aef);
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
