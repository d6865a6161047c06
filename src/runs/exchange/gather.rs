//! The trainer's side of an exchange (module docs of runs/exchange): it publishes an
//! iteration's task, then takes the games back in game-index order, reading the slices the
//! workers wrote and playing itself whatever nobody plays (so a run goes on whatever became of
//! its workers, and a trainer without workers plays everything).

use std::collections::BTreeMap;
use std::ops::Range;

use super::task::{SliceGames, Task, put_slice};
use super::{Exchange, RunError, Watch};
use crate::game_record::GameRecord;
use crate::store::ObjectHash;

/// An iteration's task being gathered.
pub(crate) struct Gather<'x> {
    x: &'x Exchange,
    id: String,
    hash: ObjectHash,
    task: Task,
    /// Slices taken and not yet handed on, by index.
    taken: BTreeMap<u32, Vec<GameRecord>>,
    watch: Watch,
}

/// How the trainer plays a slice itself: the task and the slice's index in, its records out.
pub(crate) type PlaySlice<'p> =
    &'p (dyn Fn(&Task, u32) -> Result<Vec<GameRecord>, RunError> + Sync);

impl<'x> Gather<'x> {
    /// Publishes `task` and starts gathering it. The folders of tasks before the previous
    /// iteration's are removed then: a worker still finishing the previous task (it has not
    /// yet seen `current` change) keeps its folder.
    pub(crate) fn begin(x: &'x Exchange, task: Task) -> Result<Gather<'x>, RunError> {
        let (id, hash) = task.publish(x)?;
        x.remove_tasks_before(task.iteration.saturating_sub(1), &id);
        Ok(Gather {
            x,
            id,
            hash,
            task,
            taken: BTreeMap::new(),
            watch: Watch::default(),
        })
    }

    /// The records of games `ids`, in game order: from the slices the workers wrote, the
    /// rest played here by `play`.
    pub(crate) fn games(
        &mut self,
        ids: Range<u32>,
        play: PlaySlice<'_>,
    ) -> Result<Vec<GameRecord>, RunError> {
        let mut out = Vec::with_capacity(ids.len());
        if ids.is_empty() {
            return Ok(out);
        }
        let s = self.task.slice;
        for k in ids.start / s..=(ids.end - 1) / s {
            self.ensure(k, play)?;
            let range = self.task.games_of(k);
            // A slice that ends within `ids` is handed on whole (moved); one that goes on
            // past them stays for the next call, its games in `ids` copied.
            if range.end <= ids.end {
                let records = self.taken.remove(&k).unwrap_or_default();
                let kept = range.zip(records).filter(|(g, _)| ids.contains(g));
                out.extend(kept.map(|(_, r)| r));
            } else {
                let records = &self.taken[&k];
                let kept = range.zip(records).filter(|(g, _)| ids.contains(g));
                out.extend(kept.map(|(_, r)| r.clone()));
            }
        }
        Ok(out)
    }

    /// Makes sure slice `k` is taken: read where a worker wrote it, else played here where
    /// nobody holds it; while a live worker holds it, a later slice nobody holds is played
    /// here meanwhile.
    fn ensure(&mut self, k: u32, play: PlaySlice<'_>) -> Result<(), RunError> {
        while !self.taken.contains_key(&k) {
            if let Some(records) = self.read(k) {
                self.taken.insert(k, records);
            } else if !self.play_one(k, play)? && !self.play_ahead(k + 1, play)? {
                self.x.pause();
            }
        }
        Ok(())
    }

    /// Plays the first slice from `from` on that is neither taken nor held; returns whether
    /// one was played.
    fn play_ahead(&mut self, from: u32, play: PlaySlice<'_>) -> Result<bool, RunError> {
        for j in from..self.task.slices() {
            if self.taken.contains_key(&j) || self.x.slice_path(&self.id, j).exists() {
                continue;
            }
            if self.play_one(j, play)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Claims and plays slice `k` here, unless another process holds it; returns whether it
    /// did.
    fn play_one(&mut self, k: u32, play: PlaySlice<'_>) -> Result<bool, RunError> {
        let Some(claim) = self.x.try_claim(&self.id, k, &mut self.watch) else {
            return Ok(false);
        };
        let task = &self.task;
        let records = claim.held(|| play(task, k))?;
        let records = put_slice(self.x, &self.id, &self.hash, k, records)?;
        drop(claim);
        self.taken.insert(k, records);
        Ok(true)
    }

    /// Slice `k` as a worker wrote it, if it is there and is what the task asked for; a file
    /// that is not is removed (its games are played again) with a warning.
    fn read(&self, k: u32) -> Option<Vec<GameRecord>> {
        let path = self.x.slice_path(&self.id, k);
        let bytes = std::fs::read(&path).ok()?;
        let checked = postcard::from_bytes::<SliceGames>(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|s| self.task.check_slice(&self.hash, k, &s).map(|()| s));
        match checked {
            Ok(s) => Some(s.records),
            Err(why) => {
                eprintln!(
                    "warning: {} is not slice {k} of this task ({why}): removed, its games are \
                     played again",
                    path.display()
                );
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::game::GameResult;
    use crate::game_record::GameEnd;
    use crate::rng::GameSlot;

    fn task() -> Task {
        Task {
            build: "test".into(),
            run: ObjectHash::of("run", b"r"),
            variant: "ewn:3x3x3".into(),
            seed: 5,
            model_seed: 5,
            iteration: 2,
            settings: ObjectHash::of("settings", b"s"),
            model: None,
            starts: vec![None; 7],
            slice: 3,
            objects: Vec::new(),
        }
    }

    /// The record of game `game` of the task, as a process playing it would write it.
    fn record(t: &Task, game: u32) -> GameRecord {
        let slot = GameSlot::new(t.seed, t.iteration, game);
        GameRecord {
            variant: t.variant.clone(),
            seed: t.seed,
            stream: slot.name(crate::selfplay::SELF_PLAY),
            players: ["self-play".into(), "self-play".into()],
            start: None,
            steps: Vec::new(),
            end: GameEnd::Finished(GameResult::Draw),
        }
    }

    #[test]
    fn games_come_in_order_from_workers_files_and_from_here_and_bad_files_are_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let x = Exchange::open(dir.path(), Duration::from_millis(300), 0).unwrap();
        let t = task();
        let mut gather = Gather::begin(&x, t.clone()).unwrap();
        let (id, hash) = (gather.id.clone(), gather.hash);
        // Slice 1 as a worker wrote it; slice 0 damaged; slice 2 another task's.
        put_slice(
            &x,
            &id,
            &hash,
            1,
            t.games_of(1).map(|g| record(&t, g)).collect(),
        )
        .unwrap();
        x.write_whole(&x.slice_path(&id, 0), b"not a slice")
            .unwrap();
        let other = ObjectHash::of("exchange-task", b"other");
        put_slice(
            &x,
            &id,
            &other,
            2,
            t.games_of(2).map(|g| record(&t, g)).collect(),
        )
        .unwrap();
        let played = Mutex::new(Vec::new());
        let play = |task: &Task, k: u32| {
            played.lock().unwrap().push(k);
            Ok(task.games_of(k).map(|g| record(task, g)).collect())
        };
        let first = gather.games(1..5, &play).unwrap();
        let rest = gather.games(5..7, &play).unwrap();
        let streams: Vec<String> = first
            .iter()
            .chain(&rest)
            .map(|r| r.stream.clone())
            .collect();
        let want: Vec<String> = (1..7).map(|g| record(&t, g).stream).collect();
        assert_eq!(streams, want, "game order");
        assert_eq!(
            *played.lock().unwrap(),
            vec![0, 2],
            "slice 1 read, 0 and 2 played here"
        );
        assert!(
            x.slice_path(&id, 0).exists(),
            "a replayed slice is written for the others"
        );
        assert_eq!(x.current(), super::super::Current::Task(id));
    }
}
