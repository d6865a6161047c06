//! Run specs for experiments, and the one place the experiments touch the runs module: the
//! spec of a stored run, and the runs made from specs (their hash, creating, resuming and
//! finding them). When the runs module changes, this file adapts.
//!
//! Overrides (a sweep's `[set]` and axes) are read, judged and written into a spec by the one
//! overrides engine, `runs::overrides` (docs/experiments.md, "Overrides").

use crate::runs::{Observer, RunConfig, RunError, RunRecord, create_run};
use crate::runs::{find, load_config};
use crate::store::{ObjectHash, RunRow, Store, address};

use super::ExperimentError;

/// Reads an override's value as a TOML value (`plot --where`): the overrides' one reader.
pub(crate) use crate::runs::overrides::parse_value;

/// The explicit spec of a stored run as it was configured (every setting written out but the
/// seed, which the caller gives to
/// [`crate::runs::overrides::spec_with_overrides`]).
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

/// The run a spec made before: a root run of the spec's name, run record (variant, seed,
/// settings) and planned iterations. `tabula run` and the Python package's `tabula.run`
/// resume it (or show it finished) instead of starting another; a run of the same name with
/// anything else is not it (the store refuses the name).
pub fn stored_run_of(store: &Store, cfg: &RunConfig) -> Result<Option<RunRow>, ExperimentError> {
    let hash = run_hash(cfg)?;
    Ok(store.runs()?.into_iter().find(|r| {
        r.name == cfg.name
            && r.hash == hash
            && r.iterations_planned == cfg.iterations
            && r.parent.is_none()
    }))
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
