//! [`Writer`]: the writes of one transaction of [`Store::write`](super::Store::write), and
//! the [`PackLedger`] that lets an iteration's record leave its games' addresses to their
//! packs.

use std::path::Path;

use super::{
    EvaluationRow, IterationRow, NewRun, ObjectHash, Prepared, PreparedPack, Record, Result,
    RunGameRow, RunStatus, SolutionRow, StoreError, SweepMember, SweepRow, objects, packs, runs,
    solutions, sqlite, sweeps,
};

/// The packs one writer stored for an iteration's games, in game order (what
/// [`Writer::add_packed_games`] noted): lets [`Writer::put_encoded_over_games`] elide the
/// iteration's record without reading its `run_games` rows back. It knows only whole
/// iterations it saw from game 0; anything else is answered from the store.
#[derive(Debug, Default)]
pub struct PackLedger {
    run_id: i64,
    iteration: u32,
    /// The next game expected; `None` once a batch did not follow on.
    next_game: Option<u32>,
    packs: Vec<(ObjectHash, usize, String)>,
}

impl PackLedger {
    pub fn new() -> PackLedger {
        PackLedger::default()
    }

    fn note(&mut self, run_id: i64, iteration: u32, rows: &[RunGameRow], pack: &PreparedPack) {
        if (run_id, iteration) != (self.run_id, self.iteration) {
            *self = PackLedger {
                run_id,
                iteration,
                next_game: Some(0),
                packs: Vec::new(),
            };
        }
        // Rows in slot order, consecutive games following the last batch.
        self.next_game = match self.next_game {
            Some(n)
                if rows.first().is_some_and(|r| r.game == n)
                    && rows.windows(2).all(|w| w[1].game == w[0].game + 1)
                    && rows.len() == pack.members() =>
            {
                self.packs
                    .push((pack.hash(), pack.members(), pack.kind().to_string()));
                Some(n + rows.len() as u32)
            }
            _ => None,
        };
    }

    fn packs_of(
        &self,
        run_id: i64,
        iteration: u32,
        count: usize,
    ) -> Option<Vec<(ObjectHash, usize, String)>> {
        ((run_id, iteration) == (self.run_id, self.iteration)
            && self.next_game == Some(count as u32)
            && count > 0)
            .then(|| self.packs.clone())
    }
}

/// Writes inside one transaction of [`Store::write`].
pub struct Writer<'a> {
    pub(super) tx: &'a rusqlite::Transaction<'a>,
    pub(super) path: &'a Path,
}

impl Writer<'_> {
    pub fn put<R: Record>(&self, record: &R) -> Result<ObjectHash> {
        objects::put(self.tx, record).map_err(|e| e.into_store_error(self.path))
    }

    /// Declares metrics (name, description) in order; see `schema/0005_metrics_long.sql`.
    pub fn declare_metrics(&self, defs: &[(&str, &str)]) -> Result<()> {
        runs::declare_metrics(self.tx, defs).map_err(|e| sqlite(self.path, e))
    }

    /// Stores an already encoded object (if not already there; large ones compressed when
    /// that saves, docs/store.md "Packs and codecs"); returns its address.
    pub fn put_encoded(&self, e: &super::Encoded) -> Result<ObjectHash> {
        objects::put_compressed(self.tx, e.kind, &e.bytes, &e.hash)
            .map_err(|e| e.into_store_error(self.path))?;
        Ok(e.hash)
    }

    /// Stores an object of kind `kind` from its encoded bytes as they are (sent by another
    /// process); returns its address, computed here from the kind and the bytes, so a caller
    /// that expects an address checks what arrived against it.
    pub fn put_bytes(&self, kind: &str, bytes: &[u8]) -> Result<ObjectHash> {
        let hash = ObjectHash::of(kind, bytes);
        objects::put_compressed(self.tx, kind, bytes, &hash)
            .map_err(|e| e.into_store_error(self.path))?;
        Ok(hash)
    }

    /// Stores a batch of a run's self-play games as one pack (prepared with
    /// [`prepare_pack`](super::prepare_pack)) and indexes them (`rows[k]` is the pack's member k).
    pub fn add_packed_games(
        &self,
        run_id: i64,
        iteration: u32,
        rows: &[RunGameRow],
        pack: Option<&PreparedPack>,
        ledger: &mut PackLedger,
    ) -> Result<()> {
        let Some(pack) = pack else {
            return if rows.is_empty() {
                Ok(())
            } else {
                Err(StoreError::Query("game rows without their pack".into()))
            };
        };
        let id = packs::insert(self.tx, pack).map_err(|e| e.into_store_error(self.path))?;
        runs::add_packed_games(self.tx, run_id, iteration, rows, id)
            .map_err(|e| sqlite(self.path, e))?;
        ledger.note(run_id, iteration, rows, pack);
        Ok(())
    }

    /// Stores an object prepared with [`prepare`](super::prepare) (if not already there); returns its
    /// address.
    pub fn put_prepared(&self, p: &Prepared) -> Result<ObjectHash> {
        objects::put_coded(self.tx, p.kind, p.size, p.codec, &p.stored, &p.hash)
            .map_err(|e| e.into_store_error(self.path))?;
        Ok(p.hash)
    }

    /// Stores an object whose bytes list, contiguously, the addresses of the games of
    /// `run_id`'s iteration `iteration` (`games`, in order: an iteration record): when every
    /// game is packed, those addresses are kept once, in the packs (codec 2), else the bytes
    /// are stored as they are. Returns its address.
    pub fn put_encoded_over_games(
        &self,
        e: &super::Encoded,
        run_id: i64,
        iteration: u32,
        games: &[ObjectHash],
        ledger: &PackLedger,
    ) -> Result<ObjectHash> {
        // The packs this writer stored for the iteration, else (games of an earlier session,
        // reused on resume) the packs its `run_games` rows name. Either way `elide` checks
        // each pack's address against the record's list of games.
        let packs = match ledger.packs_of(run_id, iteration, games.len()) {
            Some(p) => Some(p),
            None => runs::packs_of(self.tx, run_id, iteration, games.len())
                .map_err(|e| sqlite(self.path, e))?,
        };
        let kind = packs.as_ref().and_then(|p| p.first()).map(|p| p.2.clone());
        let elided = match (&packs, kind) {
            (Some(p), Some(kind)) => {
                let p: Vec<(ObjectHash, usize)> = p.iter().map(|(h, n, _)| (*h, *n)).collect();
                packs::elide(&e.bytes, &kind, games, &p)
            }
            _ => None,
        };
        let done = match elided {
            Some(el) => match postcard::to_stdvec(&el) {
                Ok(stored) => objects::put_coded(
                    self.tx,
                    e.kind,
                    e.bytes.len(),
                    packs::ELIDED,
                    &stored,
                    &e.hash,
                ),
                Err(source) => {
                    return Err(StoreError::Encode {
                        kind: e.kind,
                        source,
                    });
                }
            },
            None => objects::put_raw(self.tx, e.kind, &e.bytes, &e.hash),
        };
        done.map_err(|e| e.into_store_error(self.path))?;
        Ok(e.hash)
    }

    /// Creates a run's row (its run and settings records must be stored); returns its id.
    /// Run names are unique in a store (docs/store.md): a name already taken is
    /// [`StoreError::NameTaken`].
    pub fn create_run(&self, run: &NewRun) -> Result<i64> {
        let taken = runs::named(self.tx, &run.name).map_err(|e| sqlite(self.path, e))?;
        if let Some(old) = taken.first() {
            return Err(StoreError::NameTaken {
                name: run.name.clone(),
                id: old.id,
                status: old.status.as_str(),
                hash: old.hash.short(),
            });
        }
        runs::create(self.tx, run).map_err(|e| sqlite(self.path, e))
    }

    /// Takes a run's lock for this process in this transaction (see [`Store::lock_run`](super::Store::lock_run)).
    pub fn lock_run(&self, run_id: i64) -> Result<()> {
        runs::lock(self.tx, run_id)
            .map_err(|e| sqlite(self.path, e))?
            .map_err(|holder| StoreError::Locked {
                run: run_id,
                holder,
            })
    }

    /// Indexes a committed iteration.
    pub fn add_iteration(&self, row: &IterationRow) -> Result<()> {
        runs::add_iteration(self.tx, row).map_err(|e| sqlite(self.path, e))
    }

    /// Records an iteration's metrics as columns.
    /// A metric that is not a finite number (a model that diverged: NaN) is refused with
    /// [`StoreError::NotFinite`], naming it, instead of SQLite's "NOT NULL constraint failed".
    pub fn add_evaluation(&self, row: &EvaluationRow) -> Result<()> {
        if let Some((name, v)) = row
            .values
            .iter()
            .find_map(|(n, v)| v.filter(|x| !x.is_finite()).map(|x| (*n, x)))
        {
            return Err(StoreError::NotFinite {
                run: row.run_id,
                iteration: row.iteration,
                metric: name.to_string(),
                value: v,
            });
        }
        runs::add_evaluation(self.tx, row).map_err(|e| sqlite(self.path, e))
    }

    /// Sets a run's progress: iterations done, head, status.
    pub fn set_run_progress(
        &self,
        run_id: i64,
        done: u32,
        head: Option<&ObjectHash>,
        status: RunStatus,
    ) -> Result<()> {
        runs::set_progress(self.tx, run_id, done, head, status).map_err(|e| sqlite(self.path, e))
    }

    /// Indexes a sweep (its `sweep/v1` record must be stored); a known sweep is left as is.
    pub fn add_sweep(&self, row: &SweepRow) -> Result<()> {
        sweeps::add(self.tx, row).map_err(|e| sqlite(self.path, e))
    }

    /// Unindexes a sweep: its row and member links (its record and its runs stay). A grown
    /// sweep replaces its smaller self this way, so a store holds one sweep of a name.
    pub fn remove_sweep(&self, hash: &ObjectHash) -> Result<()> {
        sweeps::remove(self.tx, hash).map_err(|e| sqlite(self.path, e))
    }

    /// Links a run to its sweep's grid point and seed.
    pub fn add_sweep_member(&self, sweep: &ObjectHash, member: &SweepMember) -> Result<()> {
        sweeps::add_member(self.tx, sweep, member).map_err(|e| sqlite(self.path, e))
    }

    /// Records (or replaces) the solution row of a variant; its manifest must be stored.
    pub fn put_solution(&self, row: &SolutionRow) -> Result<()> {
        solutions::upsert(self.tx, row).map_err(|e| sqlite(self.path, e))
    }
}
