//! A task: what a process needs to play the self-play games of one iteration, wherever it
//! runs (module docs of runs/exchange). Written once by the trainer; its identity is its
//! iteration and the address of its bytes, so a trainer that publishes the same iteration
//! again after a restart (the same model, settings and starts) finds the slices already
//! played.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::{Exchange, RunError};
use crate::game_record::GameRecord;
use crate::rng::GameSlot;
use crate::store::{Encoded, ObjectHash, Store};

/// The games of one iteration to be played (see the module docs).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Task {
    /// The build that published it (version, commit, tree, profile): a worker of another
    /// build could play other bits, so it refuses the task.
    pub(crate) build: String,
    /// The run's line (the `run` field of its iteration records).
    pub(crate) run: ObjectHash,
    pub(crate) variant: String,
    /// The run seed (game streams) and the model seed (the learner's own streams).
    pub(crate) seed: u64,
    pub(crate) model_seed: u64,
    pub(crate) iteration: u32,
    /// The settings in force (a stage's), the address of its settings record in `objects`.
    pub(crate) settings: ObjectHash,
    /// The model that plays: the root of its full checkpoint in `objects`; `None`: the
    /// untrained model.
    pub(crate) model: Option<ObjectHash>,
    /// Every game's start in the game's notation (`None`: the game's start state), game 0
    /// first: the iteration's M games.
    pub(crate) starts: Vec<Option<String>>,
    /// Games per slice.
    pub(crate) slice: u32,
    /// (kind, bytes) of the settings record and the checkpoint's objects.
    pub(crate) objects: Vec<(String, Vec<u8>)>,
}

/// The records of one slice, as a process that played it writes them.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SliceGames {
    /// The task's address.
    pub(crate) task: ObjectHash,
    pub(crate) slice: u32,
    pub(crate) records: Vec<GameRecord>,
}

impl Task {
    /// How many slices the task has.
    pub(crate) fn slices(&self) -> u32 {
        (self.starts.len() as u32).div_ceil(self.slice)
    }

    /// The games of slice `k`.
    pub(crate) fn games_of(&self, k: u32) -> Range<u32> {
        let m = self.starts.len() as u32;
        (k * self.slice).min(m)..((k + 1) * self.slice).min(m)
    }

    /// The task's bytes and its id in the exchange: `I-` and 16 hex digits of its address.
    pub(crate) fn encode(&self) -> Result<(Vec<u8>, String, ObjectHash), RunError> {
        let bytes = postcard::to_stdvec(self)
            .map_err(|e| RunError::Exchange(format!("encoding a task: {e}")))?;
        let hash = ObjectHash::of("exchange-task", &bytes);
        let id = format!("{}-{}", self.iteration, &hash.to_hex()[..16]);
        Ok((bytes, id, hash))
    }

    /// Publishes the task (unless it is there already) and points `current` at it; returns
    /// its id and address.
    pub(crate) fn publish(&self, x: &Exchange) -> Result<(String, ObjectHash), RunError> {
        let (bytes, id, hash) = self.encode()?;
        let dir = x.task_dir(&id);
        std::fs::create_dir_all(&dir).map_err(|e| super::io_err(&dir, "create", e))?;
        let path = dir.join("task");
        if read_task(x, &id).is_none() {
            x.write_whole(&path, &bytes)?;
        }
        x.set_current(&super::Current::Task(id.clone()))?;
        Ok((id, hash))
    }

    /// A private store holding the task's objects, each checked against its address.
    pub(crate) fn objects_store(&self) -> Result<Store, RunError> {
        let mut store = Store::in_memory()?;
        store.write(|w| {
            for (kind, bytes) in &self.objects {
                w.put_bytes(kind, bytes)?;
            }
            Ok(())
        })?;
        for need in std::iter::once(&self.settings).chain(&self.model) {
            if !store.contains(need)? {
                return Err(RunError::Exchange(format!(
                    "task of iteration {}: object {} is missing",
                    self.iteration,
                    need.short()
                )));
            }
        }
        Ok(store)
    }

    /// Whether `s` is the slice `k` of this task (address `hash`): its games, in order, each
    /// the run's game of its index.
    pub(crate) fn check_slice(
        &self,
        hash: &ObjectHash,
        k: u32,
        s: &SliceGames,
    ) -> Result<(), String> {
        if s.task != *hash || s.slice != k {
            return Err(format!(
                "it is slice {} of task {}",
                s.slice,
                s.task.short()
            ));
        }
        let games = self.games_of(k);
        if s.records.len() != games.len() {
            return Err(format!("{} games, not {}", s.records.len(), games.len()));
        }
        for (r, game) in s.records.iter().zip(games) {
            let slot = GameSlot::new(self.seed, self.iteration, game);
            let stream = slot.name(crate::selfplay::SELF_PLAY);
            if r.stream != stream || r.seed != self.seed || r.variant != self.variant {
                return Err(format!(
                    "a record of stream {} where {stream} belongs",
                    r.stream
                ));
            }
        }
        Ok(())
    }
}

/// The task `id` of the exchange, if it is there and decodes.
pub(crate) fn read_task(x: &Exchange, id: &str) -> Option<(Task, ObjectHash)> {
    let bytes = std::fs::read(x.task_dir(id).join("task")).ok()?;
    let task: Task = postcard::from_bytes(&bytes).ok()?;
    let hash = ObjectHash::of("exchange-task", &bytes);
    Some((task, hash))
}

/// `(kind, bytes)` of encoded objects, for a task.
pub(crate) fn object_bytes(objects: impl IntoIterator<Item = Encoded>) -> Vec<(String, Vec<u8>)> {
    objects
        .into_iter()
        .map(|e| (e.kind.to_string(), e.bytes))
        .collect()
}

/// Writes the records of slice `k` of task `id` (address `hash`) into the exchange.
pub(crate) fn put_slice(
    x: &Exchange,
    id: &str,
    hash: &ObjectHash,
    k: u32,
    records: Vec<GameRecord>,
) -> Result<Vec<GameRecord>, RunError> {
    let slice = SliceGames {
        task: *hash,
        slice: k,
        records,
    };
    let bytes = postcard::to_stdvec(&slice)
        .map_err(|e| RunError::Exchange(format!("encoding a slice: {e}")))?;
    x.write_whole(&x.slice_path(id, k), &bytes)?;
    Ok(slice.records)
}
