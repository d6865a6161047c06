//! A stored run: found by id, name or hash prefix, its configuration rebuilt from its
//! records, the seed of its model and its line (the `run` field of its iteration records).

use super::{RunConfig, RunError, RunRecord, Settings, SpecError, load_settings};
use crate::store::{RunRow, Store};

/// Finds a run by id, name or hash prefix, or says how to name one.
pub fn find(store: &Store, text: &str) -> Result<RunRow, RunError> {
    store.find_run(text)?.ok_or_else(|| {
        RunError::Usage(format!(
            "no run `{text}` in the store (give its id, its name, or at least {} hex digits \
             of its run hash or head; `tabula ls` lists them)",
            crate::store::MIN_PREFIX
        ))
    })
}

/// A stored run's configuration, rebuilt from its records.
pub fn load_config(store: &Store, row: &RunRow) -> Result<(RunConfig, RunRecord), RunError> {
    let record: RunRecord = store.get(&row.hash)?;
    let settings: Settings = load_settings(store, &record.settings)?;
    let game = record.variant.parse().map_err(SpecError::Variant)?;
    let cfg = RunConfig {
        name: row.name.clone(),
        annotations: Default::default(),
        keep_games: super::retention::stored_keep_games(store, row)?,
        game,
        seed: record.seed,
        seed_drawn: false,
        iterations: row.iterations_planned,
        settings,
    };
    Ok((cfg, record))
}

/// The seed of a run's model (its initial parameters and evaluation streams): its root
/// ancestor's seed (a branch continues the same model).
pub fn model_seed_of(store: &Store, record: &RunRecord) -> Result<u64, RunError> {
    let mut seed = record.seed;
    let mut parent = record.parent.clone();
    while let Some(p) = parent {
        let r: RunRecord = store.get(&p.run)?;
        seed = r.seed;
        parent = r.parent;
    }
    Ok(seed)
}

/// The `run` field of a run's iteration records: its run record without `parent`.
pub fn line_of(record: &RunRecord) -> RunRecord {
    RunRecord {
        parent: None,
        ..record.clone()
    }
}
