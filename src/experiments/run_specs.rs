//! Run specs for experiments, and the one place the experiments touch the runs module: a
//! spec with overrides written in, the spec of a stored run, and the runs made from specs
//! (their hash, creating, resuming and finding them). When the runs module changes, this file
//! adapts.
//!
//! Overrides are applied to the spec's TOML, not to resolved settings, so a fresh run gets
//! exactly what the spec would give with those keys written in it: defaults that depend on
//! other keys (the learning-rate schedule's switch at N/2 depends on `iterations`) follow the
//! overridden value, and every range check of the spec applies, naming the key.

use crate::runs::{Observer, RunConfig, RunError, RunRecord, create_run};
use crate::runs::{find, load_config};
use crate::store::{ObjectHash, RunRow, Store, address};

use super::ExperimentError;

/// Keys of the spec outside the settings record.
const TOP_KEYS: &[&str] = &["name", "variant", "seed", "iterations"];

/// Reads an override's value as a TOML value; a bare word is a string (`init_q=draw`).
pub(crate) fn parse_value(text: &str) -> toml::Value {
    let text = text.trim();
    match toml::from_str::<toml::Table>(&format!("v = {text}")) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.to_string())),
        Err(_) => toml::Value::String(text.to_string()),
    }
}

/// Splits `key=value` texts (the command line's `--set`) into keys and TOML values.
pub fn parse_sets(sets: &[String]) -> Result<Vec<(String, toml::Value)>, ExperimentError> {
    let mut out: Vec<(String, toml::Value)> = Vec::new();
    for text in sets {
        let Some((k, v)) = text.split_once('=') else {
            return Err(ExperimentError::Usage(format!(
                "--set {text}: give key=value, e.g. search.init_q=draw"
            )));
        };
        let k = k.trim().to_string();
        if out.iter().any(|(o, _)| *o == k) {
            return Err(ExperimentError::Usage(format!(
                "--set {text}: `{k}` is set twice"
            )));
        }
        out.push((k, parse_value(v)));
    }
    Ok(out)
}

/// Every key an override may name, for error messages and checks.
pub(crate) fn allowed_keys(cfg: &RunConfig) -> Vec<String> {
    let mut out: Vec<String> = TOP_KEYS.iter().map(|s| s.to_string()).collect();
    out.extend(crate::runs::setting_keys(&crate::runs::settings_json(
        &cfg.settings,
    )));
    // M and the budgets are alternatives: each may be set whichever the base has.
    for k in crate::runs::SELF_PLAY_KEYS {
        if !out.iter().any(|o| o == k) {
            out.push(k.to_string());
        }
    }
    out
}

/// Whether `key` may be given `value` over the base `cfg`: one of its keys (`allowed`), or a
/// setting its record leaves out at its default.
pub(crate) fn is_setting(
    allowed: &[String],
    cfg: &RunConfig,
    key: &str,
    value: &toml::Value,
) -> bool {
    allowed.iter().any(|a| a == key)
        || serde_json::to_value(value)
            .is_ok_and(|v| crate::runs::settable_default(&cfg.settings, key, &v))
}

/// The spec `base` with `overrides` written into it: the validated config and the spec text
/// that gives it (stored with the run). `what` names the overrides' origin in errors.
///
/// The seed is set on the config, not written into the TOML (TOML integers stop at
/// 2^63 - 1, run seeds do not): `seed` (or a `seed` override, a non-negative integer) replaces
/// the spec's, and the text records it in a first comment line.
pub fn spec_with_overrides(
    base: &str,
    overrides: &[(String, toml::Value)],
    seed: Option<u64>,
    default_name: &str,
    what: &str,
) -> Result<(RunConfig, String), ExperimentError> {
    let mut table: toml::Table = toml::from_str(base)
        .map_err(|e| ExperimentError::Usage(format!("the base run spec: {e}")))?;
    let mut seed = seed;
    let mut rest = Vec::with_capacity(overrides.len());
    for (k, v) in overrides {
        if k == "seed" {
            // TOML integers stop at 2^63 - 1: a larger seed arrives as the text `--set` kept.
            let s = v
                .as_integer()
                .and_then(|i| u64::try_from(i).ok())
                .or_else(|| {
                    v.as_str()
                        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                        .and_then(|t| t.parse().ok())
                })
                .ok_or_else(|| {
                    ExperimentError::Usage(format!("{what} seed={v}: give a non-negative integer"))
                })?;
            seed = Some(s);
        } else {
            rest.push((k.clone(), v.clone()));
        }
    }
    let overrides = &rest[..];
    if overrides.is_empty() && seed.is_none() {
        let cfg = RunConfig::from_toml(base, default_name).map_err(RunError::from)?;
        return Ok((cfg, base.to_string()));
    }
    if seed.is_some() {
        table.remove("seed");
    }
    // Checked against the base's resolved settings (every key, optional ones included).
    let base_cfg = RunConfig::from_toml(base, default_name).map_err(RunError::from)?;
    let allowed = allowed_keys(&base_cfg);
    let amounts: Vec<&str> = overrides
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| crate::runs::SELF_PLAY_KEYS.contains(k))
        .collect();
    if amounts.len() > 1 {
        return Err(ExperimentError::Usage(format!(
            "{what}: `{}` are alternatives (how much an iteration plays); set one",
            amounts.join("`, `")
        )));
    }
    for (key, value) in overrides {
        if !is_setting(&allowed, &base_cfg, key, value) {
            return Err(ExperimentError::Usage(format!(
                "{what} `{key}`: no such setting; allowed: {}",
                allowed.join(", ")
            )));
        }
        if crate::runs::SELF_PLAY_KEYS.contains(&key.as_str()) {
            // M and the budgets are alternatives: one replaces whichever the base has.
            table.remove("games_per_iteration");
            table.remove("budget");
        }
        write_key(&mut table, key, value, what)?;
    }
    let text = toml::to_string(&table)
        .map_err(|e| ExperimentError::Usage(format!("{what}: writing the spec: {e}")))?;
    let shown: Vec<String> = overrides.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut cfg = RunConfig::from_toml(&text, default_name)
        .map_err(|e| ExperimentError::Usage(format!("{what} {}: {e}", shown.join(" "))))?;
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

/// Writes `value` at the dotted `key` of `table` (`search.init_q` is `init_q` in the table
/// `search`, created when missing).
fn write_key(
    table: &mut toml::Table,
    key: &str,
    value: &toml::Value,
    what: &str,
) -> Result<(), ExperimentError> {
    let mut slot = table;
    let parts: Vec<&str> = key.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        let next = slot
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let toml::Value::Table(t) = next else {
            return Err(ExperimentError::Usage(format!(
                "{what} `{key}`: `{part}` is not a table in the base spec"
            )));
        };
        slot = t;
    }
    slot.insert(parts[parts.len() - 1].to_string(), value.clone());
    Ok(())
}

/// The explicit spec of a stored run as it was configured (every setting written out but the
/// seed, which the caller gives to [`spec_with_overrides`]).
pub fn spec_of_run(store: &Store, run: &str) -> Result<(RunRow, String), ExperimentError> {
    let row = find(store, run)?;
    let (cfg, _) = load_config(store, &row)?;
    let mut table = match toml::Value::try_from(&cfg.settings) {
        Ok(toml::Value::Table(t)) => t,
        _ => {
            return Err(ExperimentError::Usage(
                "the run's settings do not write as TOML".into(),
            ));
        }
    };
    table.insert("name".into(), toml::Value::String(cfg.name.clone()));
    table.insert("variant".into(), toml::Value::String(cfg.game.variant()));
    table.insert(
        "iterations".into(),
        toml::Value::Integer(cfg.iterations.into()),
    );
    let text = toml::to_string(&table).map_err(|e| ExperimentError::Usage(e.to_string()))?;
    Ok((row, text))
}

/// The `run/v1` hash a config's run gets (a root run: no parent).
pub fn run_hash(cfg: &RunConfig) -> Result<ObjectHash, ExperimentError> {
    let settings = crate::runs::settings_hash(&cfg.settings)?;
    let record = RunRecord {
        variant: cfg.game.variant(),
        seed: cfg.seed,
        settings,
        parent: None,
    };
    Ok(address(&record)?.0)
}

/// Creates a run's records and row and leaves it unlocked, ready for [`resume`].
pub fn create(store: &mut Store, cfg: &RunConfig, spec_toml: &str) -> Result<i64, ExperimentError> {
    cfg.validate().map_err(RunError::from)?;
    let (id, _) = create_run(store, cfg, spec_toml, 0)?;
    store.unlock_run(id)?;
    Ok(id)
}

/// Runs (or continues) a stored run to its end on the current rayon pool; returns its head.
pub(crate) fn resume(
    store: &mut Store,
    run_id: i64,
    observer: &mut dyn Observer,
) -> Result<Option<ObjectHash>, ExperimentError> {
    Ok(
        match crate::runs::resume(store, &run_id.to_string(), observer)? {
            crate::runs::Resumed::Finished { head, .. } => head,
            crate::runs::Resumed::Ran(out) => out.head,
        },
    )
}

/// Loads (solving and storing it if missing) the exact solution a config's metrics need, so
/// that runs started in parallel afterwards find it stored.
pub(crate) fn prepare_solution(store: &mut Store, cfg: &RunConfig) -> Result<(), ExperimentError> {
    crate::with_game!(&cfg.game, |g| crate::runs::truth(g, store, cfg).map(|_| ()))?;
    Ok(())
}

/// The row of run `id`.
pub(crate) fn find_run(store: &Store, id: i64) -> Result<RunRow, ExperimentError> {
    Ok(find(store, &id.to_string())?)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (cfg, _) = spec_with_overrides(base, &on, None, "t", "[set]").unwrap();
        let net = cfg.settings.learner.network.as_ref().unwrap();
        assert!(net.reference.as_ref().unwrap().c4_search);
        let nope = [(
            "learner.network.reference.nope".to_string(),
            toml::Value::Boolean(true),
        )];
        let e = spec_with_overrides(base, &nope, None, "t", "[set]").unwrap_err();
        assert!(e.to_string().contains("no such setting"), "{e}");
    }
}
