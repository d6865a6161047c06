//! What the relational tables answer and record for a [`Store`]: solutions, runs (their
//! locks, games and iterations), lookups by name or hash prefix, sweeps, and merges.

use std::path::{Path, PathBuf};

use super::resolve::hex_prefix;
use super::{
    LockHolder, MergedSource, ObjectHash, QueryResult, Result, RunRow, RunStatus, SolutionRow,
    Store, StoreError, SweepMember, SweepRow, merge, packs, resolve, runs, solutions, sqlite,
    sweeps,
};

impl Store {
    /// The stored solution of `variant`, if any.
    pub fn solution(&self, variant: &str) -> Result<Option<SolutionRow>> {
        solutions::find(&self.conn, variant).map_err(|e| self.err(e))
    }

    /// Every solved variant's name, in name order.
    pub fn solved_variants(&self) -> Result<Vec<String>> {
        solutions::variants(&self.conn).map_err(|e| self.err(e))
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunRow>> {
        runs::list(&self.conn).map_err(|e| self.err(e))
    }

    /// A run by id, by name, or by a hash prefix (at least [`MIN_PREFIX`](super::MIN_PREFIX) hex digits) of its
    /// run hash or head (docs/store.md); several are [`StoreError::Ambiguous`].
    pub fn find_run(&self, text: &str) -> Result<Option<RunRow>> {
        match runs::find(&self.conn, text).map_err(|e| self.err(e))? {
            resolve::Found::None => Ok(None),
            resolve::Found::One(r) => Ok(Some(r)),
            resolve::Found::Many(rows) => Err(StoreError::Ambiguous {
                what: "run",
                text: text.trim().to_string(),
                candidates: rows.iter().map(RunRow::candidate).collect(),
            }),
        }
    }

    /// `base` if no run has that name, else the first of `base-2`, `base-3`, ... that is
    /// free (names a branch gets by default; docs/store.md).
    pub fn unused_run_name(&self, base: &str) -> Result<String> {
        let mut name = base.to_string();
        let mut n = 1u64;
        while !runs::named(&self.conn, &name)
            .map_err(|e| self.err(e))?
            .is_empty()
        {
            n += 1;
            name = format!("{base}-{n}");
        }
        Ok(name)
    }

    /// The stored object of kind `kind` (e.g. `game/v1`) whose hash starts with `text` (at
    /// least [`MIN_PREFIX`](super::MIN_PREFIX) hex digits; docs/store.md); `None` if none does or `text` is not
    /// a prefix; several are [`StoreError::Ambiguous`].
    pub fn find_object(&self, text: &str, kind: &'static str) -> Result<Option<ObjectHash>> {
        let Some(prefix) = hex_prefix(text) else {
            return Ok(None);
        };
        let found = resolve::objects(&self.conn, &prefix, kind).map_err(|e| self.err(e))?;
        let (lo, hi) = resolve::bounds(&prefix);
        let packed = packs::in_range(
            &self.conn,
            &self.packs,
            &lo,
            &hi,
            kind,
            resolve::MAX_LISTED + 1,
        )
        .map_err(|e| self.lift(e))?;
        let found = found.with(packed);
        match found {
            resolve::Found::None => Ok(None),
            resolve::Found::One(h) => Ok(Some(h)),
            resolve::Found::Many(hashes) => {
                let mut candidates = Vec::new();
                for h in &hashes {
                    let owner = match self.game_owner(h)? {
                        Some((run, it, game)) => {
                            format!("  (run {run}, iteration {it}, game {game})")
                        }
                        None => String::new(),
                    };
                    candidates.push(format!("{h}{owner}"));
                }
                Err(StoreError::Ambiguous {
                    what: kind.split('/').next().unwrap_or(kind),
                    text: text.trim().to_string(),
                    candidates,
                })
            }
        }
    }

    /// The metrics table of a run (one row per iteration, 0 = untrained).
    pub fn run_metrics(&self, run_id: i64) -> Result<QueryResult> {
        runs::metrics(&self.conn, run_id)
    }

    /// Marks a run's status (e.g. failed) outside an iteration's transaction.
    pub fn set_run_status(&mut self, run_id: i64, status: RunStatus) -> Result<()> {
        self.write(|w| runs::set_status(w.tx, run_id, status).map_err(|e| sqlite(w.path, e)))
    }

    /// Takes the lock of a run for this process (see [`StoreError::Locked`]); a lock left by
    /// a dead process of this host is taken over, and a failed run is marked running again.
    pub fn lock_run(&mut self, run_id: i64) -> Result<()> {
        let held = self.write(|w| runs::lock(w.tx, run_id).map_err(|e| sqlite(w.path, e)))?;
        held.map_err(|holder| StoreError::Locked {
            run: run_id,
            holder,
        })
    }

    /// `resume --take-over`: clears a run's lock held on another host (its process cannot be
    /// checked from here; the caller vouches that it is gone) or by a dead process of this
    /// host; returns the holder it cleared. A live process of this host keeps its lock
    /// ([`StoreError::Locked`]).
    pub fn take_over_run(&mut self, run_id: i64) -> Result<Option<LockHolder>> {
        let r = self.write(|w| runs::take_over(w.tx, run_id).map_err(|e| sqlite(w.path, e)))?;
        r.map_err(|holder| StoreError::Locked {
            run: run_id,
            holder,
        })
    }

    /// Releases the lock of a run if this process holds it.
    pub fn unlock_run(&mut self, run_id: i64) -> Result<()> {
        self.write(|w| runs::unlock(w.tx, run_id).map_err(|e| sqlite(w.path, e)))
    }

    /// The stored self-play games of one iteration of a run: (game index, hash), in order.
    pub fn run_games(&self, run_id: i64, iteration: u32) -> Result<Vec<(u32, ObjectHash)>> {
        let rows = runs::games_of(&self.conn, run_id, iteration).map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(rows.len());
        for (game, hash, place) in rows {
            let hash = match (hash, place) {
                (Some(h), _) => h,
                (None, Some((pack, slot))) => {
                    let p = packs::load(&self.conn, &self.packs, pack).map_err(|e| self.lift(e))?;
                    match p.members.get(slot as usize) {
                        Some((h, _)) => *h,
                        None => {
                            return Err(StoreError::Corrupt {
                                hash: p.hash,
                                reason: format!(
                                    "pack: run {run_id} iteration {iteration} game {game} is \
                                     its slot {slot}, but it has {} members",
                                    p.members.len()
                                ),
                            });
                        }
                    }
                }
                (None, None) => {
                    return Err(StoreError::Query(format!(
                        "run {run_id} iteration {iteration} game {game}: neither an address \
                         nor a pack"
                    )));
                }
            };
            out.push((game, hash));
        }
        Ok(out)
    }

    /// Whether a run has an evaluation row for an iteration (0: the untrained table).
    pub fn has_evaluation(&self, run_id: i64, iteration: u32) -> Result<bool> {
        runs::has_evaluation(&self.conn, run_id, iteration).map_err(|e| self.err(e))
    }

    /// The `iterations` rows of a run: (iteration, record hash), ascending (a branch's shared
    /// iterations are its parent's rows, not its own).
    pub fn iteration_hashes(&self, run_id: i64) -> Result<Vec<(u32, ObjectHash)>> {
        runs::iteration_hashes(&self.conn, run_id).map_err(|e| self.err(e))
    }

    /// The `evaluations` rows of a run: (iteration, evaluation record hash), ascending.
    pub fn evaluation_hashes(&self, run_id: i64) -> Result<Vec<(u32, ObjectHash)>> {
        runs::evaluation_hashes(&self.conn, run_id).map_err(|e| self.err(e))
    }

    /// The `metrics` rows of a run: (iteration, metric name, value), by iteration then name.
    pub fn metric_rows(&self, run_id: i64) -> Result<Vec<(u32, String, f64)>> {
        runs::metric_rows(&self.conn, run_id).map_err(|e| self.err(e))
    }

    /// Snapshots whose objects were deliberately not all stored (full checkpoints derived
    /// like deltas; see `Learner::KEEP_FULL_EVERY` in the tabula crate).
    pub fn unkept_snapshots(&self) -> Result<Vec<ObjectHash>> {
        runs::unkept_snapshots(&self.conn).map_err(|e| self.err(e))
    }

    /// The (run id, iteration, game index) of a stored self-play game.
    pub fn game_owner(&self, hash: &ObjectHash) -> Result<Option<(i64, u32, u32)>> {
        if let Some(owner) = runs::game_owner(&self.conn, hash).map_err(|e| self.err(e))? {
            return Ok(Some(owner));
        }
        let Some((pack, slot)) =
            packs::place(&self.conn, &self.packs, hash).map_err(|e| self.lift(e))?
        else {
            return Ok(None);
        };
        runs::packed_game_owner(&self.conn, pack, slot).map_err(|e| self.err(e))
    }

    /// [`Store::game_owner`] for a game whose stream names its place, `self-play(I,G)`:
    /// game G of iteration I of some run. Looked up by the run tables' primary key, one
    /// look-up per run, instead of scanning every game row (which has no index on the
    /// game's address or pack); a game not found there is looked up as before.
    pub fn game_owner_at(
        &self,
        hash: &ObjectHash,
        iteration: u32,
        game: u32,
    ) -> Result<Option<(i64, u32, u32)>> {
        let place = packs::place(&self.conn, &self.packs, hash).map_err(|e| self.lift(e))?;
        if let Some(owner) = runs::game_owner_at(&self.conn, hash, place, iteration, game)
            .map_err(|e| self.err(e))?
        {
            return Ok(Some(owner));
        }
        self.game_owner(hash)
    }

    /// Every hash the run tables hold, labelled with where it sits (run, iteration, game).
    pub fn run_references(&self) -> Result<Vec<(String, ObjectHash)>> {
        runs::references(&self.conn).map_err(|e| self.err(e))
    }

    /// Copies every record of the stores at `sources` into this one, by address, in one
    /// transaction (see `merge.rs`): all of it lands, or nothing.
    pub fn merge_from(
        &mut self,
        sources: &[PathBuf],
        equivalent: &merge::Equivalent,
    ) -> Result<Vec<MergedSource>> {
        merge::merge(self, sources, equivalent)
    }

    /// Checks that `path` is a store this build can merge (exactly its schema version).
    pub fn check_mergeable(path: &Path) -> Result<()> {
        merge::open_source(path).map(|_| ())
    }

    /// Every sweep, oldest first.
    pub fn sweeps(&self) -> Result<Vec<SweepRow>> {
        sweeps::list(&self.conn).map_err(|e| self.err(e))
    }

    /// A sweep by name or by a hash prefix (docs/store.md); several are
    /// [`StoreError::Ambiguous`].
    pub fn find_sweep(&self, text: &str) -> Result<Option<SweepRow>> {
        match sweeps::find(&self.conn, text).map_err(|e| self.err(e))? {
            resolve::Found::None => Ok(None),
            resolve::Found::One(r) => Ok(Some(r)),
            resolve::Found::Many(rows) => Err(StoreError::Ambiguous {
                what: "sweep",
                text: text.trim().to_string(),
                candidates: rows
                    .iter()
                    .map(|s| {
                        format!(
                            "sweep {}  {}  {} points x {} seeds  created {}",
                            s.name, s.hash, s.points, s.seeds, s.created_at
                        )
                    })
                    .collect(),
            }),
        }
    }

    /// The runs of a sweep present in this store, in grid order.
    pub fn sweep_members(&self, sweep: &ObjectHash) -> Result<Vec<SweepMember>> {
        sweeps::members(&self.conn, sweep).map_err(|e| self.err(e))
    }
}
