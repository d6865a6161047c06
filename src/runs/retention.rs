//! Keeping fewer games (docs/store.md, "Keeping fewer games"): a run's retention
//! (`[store] keep_games`), applied when the run reaches its last iteration, and what reading
//! a run without all its games takes instead (its stored coverage sets).
//!
//! Nothing hashed depends on it: the records and the head of a run are the same whatever it
//! keeps. What is removed is the self-play games of the iterations retention does not keep
//! (their packs and `run_games` rows); each such iteration's record is stored whole first, so
//! the run's chain still reads and `verify` still compares every game's address. Kept besides
//! the chosen iterations' games: those a stored checkpoint needs to be continued from (its
//! training window), and, at each stored checkpoint, the coverage set `seen` counts.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{IterationRecord, RunConfig, RunError, SpecError, chain};
use crate::error::SettingError;
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::learners::Learner;
use crate::solver::fasthash::FastSet;
use crate::start::StartKind;
use crate::store::{Encoded, ObjectHash, Record, RunRow, Store, StoreError};

/// Which self-play games the store keeps of a run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum KeepGames {
    /// Every game (the default).
    #[default]
    All,
    /// The games of every K-th iteration (iterations K, 2K, ...).
    Every(u32),
    /// None beyond what the stored checkpoints need.
    None,
}

const ALLOWED: &str = "\"all\" (every game), \"every:K\" (the games of every K-th iteration, \
                       K >= 1) or \"none\"";

impl std::str::FromStr for KeepGames {
    type Err = String;
    fn from_str(s: &str) -> Result<KeepGames, String> {
        match s {
            "all" => Ok(KeepGames::All),
            "none" => Ok(KeepGames::None),
            _ => match s.strip_prefix("every:").map(str::parse::<u32>) {
                Some(Ok(1)) => Ok(KeepGames::All),
                Some(Ok(k)) if k >= 2 => Ok(KeepGames::Every(k)),
                _ => Err(ALLOWED.to_string()),
            },
        }
    }
}

impl std::fmt::Display for KeepGames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeepGames::All => write!(f, "all"),
            KeepGames::Every(k) => write!(f, "every:{k}"),
            KeepGames::None => write!(f, "none"),
        }
    }
}

impl KeepGames {
    /// Whether iteration `i`'s games are kept for their own sake.
    fn keeps(self, i: u32) -> bool {
        match self {
            KeepGames::All => true,
            KeepGames::Every(k) => i.is_multiple_of(k),
            KeepGames::None => false,
        }
    }
}

/// Whether a run's start policy learns from its past games (Go-Exploit's archives, KataGo's
/// search control): resuming it rebuilds the policy from every stored game.
pub(crate) fn start_learns(cfg: &RunConfig) -> bool {
    let start = &cfg.settings.start;
    start.policy == StartKind::GoExploit || start.katago.is_some()
}

/// Refuses retention for a run whose start policy learns from its past games (Go-Exploit's
/// archives, KataGo's search control): they are rebuilt from every stored game.
pub(crate) fn check_keep_games(cfg: &RunConfig) -> Result<(), SpecError> {
    if cfg.keep_games != KeepGames::All && start_learns(cfg) {
        return Err(SpecError::Range(SettingError::new(
            "store.keep_games",
            format!("{:?}", cfg.keep_games.to_string()),
            "\"all\" for a run whose start policy learns from its games (Go-Exploit, \
             [start.katago]): resuming it rebuilds the policy from every game",
        )));
    }
    Ok(())
}

/// A stored run's retention (`runs.keep_games`).
pub(crate) fn stored_keep_games(store: &Store, row: &RunRow) -> Result<KeepGames, RunError> {
    let text = store.keep_games(row.id)?;
    text.parse().map_err(|why| {
        RunError::Inconsistent(format!(
            "run {} ({}): its `keep_games` is {text:?}; allowed: {why}",
            row.id, row.name
        ))
    })
}

/// The coverage set after an iteration, stored where retention removed the games it is
/// built from: the keys added since `base` (the coverage set stored before it, if any),
/// sorted, as postcard bytes of a list of the game's keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Coverage {
    pub base: Option<ObjectHash>,
    pub added: Vec<u8>,
}

impl Record for Coverage {
    const KIND: &'static str = "coverage/v1";
}

/// The coverage set `seen` of a run being worked on, and what of it is not stored yet: the
/// last stored set (`base`) and the keys added since (docs/store.md, "Finding a game in a big
/// store"). A run stores it after every iteration where the new keys are few enough
/// ([`NEW_SHARE`]), so that a restart re-plays only the games since.
pub(crate) struct CoverageLog<K> {
    pub seen: FastSet<K>,
    base: Option<ObjectHash>,
    added: Vec<K>,
    /// The positions taken in since `base` was stored (repeats counted), and the iterations.
    played: u64,
    iterations: u32,
    /// Whether the new keys are kept (off for a start policy that learns from its games,
    /// which rebuilds from every game anyway, and once a run's keys proved too many).
    tracked: bool,
}

/// A run stores its coverage set after an iteration while at most 1/`NEW_SHARE` of the
/// positions its games played since the last stored set are new to it: a game whose positions
/// repeat (EinStein würfelt nicht!'s after its first iterations) stores a few keys an
/// iteration; one whose positions rarely repeat (Go) would store about a key a position, more
/// than its games' own bytes, and stores none.
const NEW_SHARE: u64 = 2;

/// After this many iterations without a stored coverage set, a process stops keeping its new
/// keys (its memory stays bounded).
const COVERAGE_PATIENCE: u32 = 8;

/// The coverage set to store with an iteration: its address and, unless an earlier
/// iteration's set is the same one, its object.
pub(crate) struct CoverageCommit {
    pub hash: ObjectHash,
    pub object: Option<Encoded>,
}

impl<K: crate::game::PositionKey> CoverageLog<K> {
    /// `seen` as the stored set `base` holds it (`tracked`: whether new keys are kept).
    pub(crate) fn new(seen: FastSet<K>, base: Option<ObjectHash>, tracked: bool) -> Self {
        CoverageLog {
            seen,
            base,
            added: Vec::new(),
            played: 0,
            iterations: 0,
            tracked,
        }
    }

    /// Adds the positions of a game to the set.
    pub(crate) fn extend(&mut self, keys: impl IntoIterator<Item = K>) {
        for k in keys {
            self.played += 1;
            if self.seen.insert(k) && self.tracked {
                self.added.push(k);
            }
        }
    }

    /// The set after an iteration, to store with it: `None` when it is not stored (untracked,
    /// or too many new keys).
    pub(crate) fn commit(&mut self) -> Result<Option<CoverageCommit>, RunError> {
        if !self.tracked {
            return Ok(None);
        }
        self.iterations += 1;
        if let (Some(hash), true) = (self.base, self.added.is_empty()) {
            (self.played, self.iterations) = (0, 0);
            return Ok(Some(CoverageCommit { hash, object: None }));
        }
        if self.added.len() as u64 * NEW_SHARE > self.played {
            if self.iterations >= COVERAGE_PATIENCE {
                (self.tracked, self.added) = (false, Vec::new());
            }
            return Ok(None);
        }
        self.added.sort_unstable();
        let e = encode_coverage(self.base, &self.added)?;
        (self.base, self.played, self.iterations) = (Some(e.hash), 0, 0);
        self.added.clear();
        Ok(Some(CoverageCommit {
            hash: e.hash,
            object: Some(e),
        }))
    }
}

/// A `coverage/v1` object: `added` (sorted) on top of the set `base`.
fn encode_coverage<K: crate::game::PositionKey>(
    base: Option<ObjectHash>,
    added: &[K],
) -> Result<Encoded, RunError> {
    let bytes = postcard::to_stdvec(added).map_err(|source| StoreError::Encode {
        kind: Coverage::KIND,
        source,
    })?;
    Ok(Encoded::of(&Coverage { base, added: bytes })?)
}

/// The coverage set stored at `hash` (its chain of bases unioned).
pub(crate) fn read_coverage<G: Abilities>(
    store: &Store,
    hash: ObjectHash,
) -> Result<FastSet<G::Key>, RunError> {
    let mut seen = FastSet::default();
    let mut next = Some(hash);
    let mut depth = 0;
    while let Some(h) = next {
        let c: Coverage = store.get(&h)?;
        let keys: Vec<G::Key> =
            postcard::from_bytes(&c.added).map_err(|e| StoreError::Corrupt {
                hash: h,
                reason: format!("its keys do not decode: {e}"),
            })?;
        seen.extend(keys);
        next = c.base;
        depth += 1;
        if depth > 1_000_000 {
            return Err(RunError::Inconsistent(format!(
                "coverage {h}: its bases loop"
            )));
        }
    }
    Ok(seen)
}

/// The games an iteration record lists, read from the store; games removed by a run's
/// retention are named as such.
pub(crate) fn stored_games(
    store: &Store,
    r: &IterationRecord,
) -> Result<Vec<GameRecord>, RunError> {
    match r.games.iter().map(|h| store.get::<GameRecord>(h)).collect() {
        Ok(games) => Ok(games),
        Err(StoreError::NotFound(h)) => {
            let record = Encoded::of(r)?.hash;
            match store.games_removed(&record)? {
                Some((run, iteration, keep)) => Err(not_kept(run, iteration, &keep)),
                None => Err(StoreError::NotFound(h).into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// The decision positions of the stored games of iteration record `r`, a list per game in game
/// order (the games replayed in parallel): what a coverage set takes in from an iteration.
pub(crate) fn stored_positions<G: Abilities>(
    g: &G,
    store: &Store,
    r: &IterationRecord,
) -> Result<Vec<Vec<G::Key>>, RunError> {
    let games = stored_games(store, r)?;
    crate::par::try_map(games.len(), |k| -> Result<_, RunError> {
        let states = games[k].states(g)?;
        Ok(super::decision_states(g, &states)
            .map(|s| g.key(s))
            .collect())
    })
}

/// The error for a read that needs games retention removed.
pub(crate) fn not_kept(run: i64, iteration: u32, keep: &str) -> RunError {
    RunError::Usage(format!(
        "the self-play games of run {run}'s iteration {iteration} are not stored (the run keeps \
         games \"{keep}\", `[store] keep_games`); re-training a derived snapshot there and \
         replaying those games need them. The run resumes, branches and checks out at its \
         stored checkpoints and from there on (the `iterations` rows with `snapshot_kept = 1`), \
         and `verify` re-executes from the start (docs/store.md, \"Keeping fewer games\")"
    ))
}

/// What [`apply`] did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Retained {
    pub iterations_removed: u32,
    pub packs_removed: u64,
    pub pack_bytes_removed: u64,
    pub coverage_sets: u32,
}

/// Applies a finished run's retention: stores the coverage set at each of its stored
/// checkpoints, then removes the games of the iterations retention keeps neither for their
/// own sake nor for a stored checkpoint's training window, in one transaction.
pub(crate) fn apply<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &mut Store,
    cfg: &RunConfig,
    row: &RunRow,
) -> Result<Retained, RunError> {
    let keep = stored_keep_games(store, row)?;
    let run = Retaining { cfg, row, keep };
    apply_keep::<G, L>(g, store, &run, false)
}

/// A run and the retention to apply to it.
struct Retaining<'a> {
    /// The settings in force at its last iteration.
    cfg: &'a RunConfig,
    row: &'a RunRow,
    keep: KeepGames,
}

/// [`apply`] with the retention `run.keep`, stored as the run's in the same transaction when
/// `store_it` (`tabula keep` on a finished run).
fn apply_keep<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &mut Store,
    run: &Retaining<'_>,
    store_it: bool,
) -> Result<Retained, RunError> {
    let Retaining { cfg, row, keep } = *run;
    let set = |store: &mut Store| match store_it {
        true => store.write(|w| w.set_keep_games(row.id, &keep.to_string())),
        false => Ok(()),
    };
    if keep == KeepGames::All {
        set(store)?;
        return Ok(Retained::default());
    }
    let records = chain(store, row.head)?;
    let hashes = record_hashes(&records, row.head);
    let own_from = row.parent.map_or(1, |(_, at)| at + 1);
    let removed: BTreeSet<u32> = store.unkept_iterations(row.id)?.into_iter().collect();
    // The stored checkpoints of the run's own iterations: where it resumes and branches.
    let mut points = Vec::new();
    for r in records.iter().filter(|r| r.iteration >= own_from) {
        if L::stored(store, &r.snapshot)? {
            points.push(r.iteration);
        }
    }
    let w = cfg.settings.window;
    let needed = |j: u32| points.iter().any(|&c| j <= c && j + w >= c + 2);
    let drop: Vec<u32> = (own_from..=records.len() as u32)
        .filter(|&j| !keep.keeps(j) && !needed(j) && !removed.contains(&j))
        .collect();
    if drop.is_empty() {
        set(store)?;
        return Ok(Retained::default());
    }
    let coverage = coverage_sets::<G>(g, store, &records, &hashes, &points)?;
    let run_id = row.id;
    let done = store.write(|w| {
        let mut out = Retained::default();
        if store_it {
            w.set_keep_games(run_id, &keep.to_string())?;
        }
        for (i, c) in &coverage {
            w.add_coverage(run_id, *i, &hashes[*i as usize - 1], &c.hash, Some(c))?;
            out.coverage_sets += 1;
        }
        let mut packs = Vec::new();
        for &j in &drop {
            let e = Encoded::of(&records[j as usize - 1])?;
            packs.extend(w.unkeep_games(run_id, j, &e)?);
            out.iterations_removed += 1;
        }
        (out.packs_removed, out.pack_bytes_removed) = w.drop_unreferenced_packs(&packs)?;
        Ok(out)
    })?;
    Ok(done)
}

/// What [`change_keep_games`] did (`tabula keep`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct KeepChanged {
    pub run_id: i64,
    pub name: String,
    /// The retention before and after (`all`, `every:K`, `none`).
    pub was: String,
    pub keep: String,
    /// Whether it was applied now (a finished run); else it is applied when the run
    /// finishes its last iteration.
    pub applied: bool,
    /// The iterations whose games an earlier retention removed: no change brings them back.
    pub iterations_without_games: Vec<u32>,
    /// What applying it removed.
    #[serde(flatten)]
    pub retained: Retained,
}

/// Changes a run's retention (`tabula keep RUN KEEP`; docs/store.md, "Keeping fewer games"):
/// applied at once to a finished run, under its lock (refused while a live process holds it)
/// and in one transaction with what it removes; stored for an unfinished one, which applies
/// it when it finishes. Removed games stay removed whatever the retention becomes.
pub fn change_keep_games(
    store: &mut Store,
    text: &str,
    keep: KeepGames,
) -> Result<KeepChanged, RunError> {
    let row = super::find(store, text)?;
    let (mut cfg, _) = super::load_config(store, &row)?;
    let was = cfg.keep_games;
    cfg.keep_games = keep;
    check_keep_games(&cfg)?;
    let mut out = KeepChanged {
        run_id: row.id,
        name: row.name.clone(),
        was: was.to_string(),
        keep: keep.to_string(),
        applied: row.iterations_done >= row.iterations_planned,
        iterations_without_games: Vec::new(),
        retained: Retained::default(),
    };
    if !out.applied {
        store.write(|w| w.set_keep_games(row.id, &out.keep))?;
        out.iterations_without_games = store.unkept_iterations(row.id)?;
        return Ok(out);
    }
    store.lock_run(row.id)?;
    let applied = (|| {
        let stage = cfg.in_force(row.iterations_done)?;
        let run = Retaining {
            cfg: &stage,
            row: &row,
            keep,
        };
        crate::with_game!(&cfg.game, |g| apply_now(g, store, &run))
    })();
    let unlocked = store.unlock_run(row.id);
    out.retained = applied?;
    unlocked?;
    out.iterations_without_games = store.unkept_iterations(row.id)?;
    Ok(out)
}

/// [`apply_keep`] of `run`'s learner, the retention stored with it.
fn apply_now<G: Abilities>(
    g: &G,
    store: &mut Store,
    run: &Retaining<'_>,
) -> Result<Retained, RunError> {
    crate::with_learner!(run.cfg.settings.learner.kind, L => {
        apply_keep::<G, L<G>>(g, store, run, true)
    })
}

/// The address of each record of a chain (oldest first) ending at `head`.
pub(crate) fn record_hashes(
    records: &[IterationRecord],
    head: Option<ObjectHash>,
) -> Vec<ObjectHash> {
    let mut out: Vec<ObjectHash> = records.iter().skip(1).filter_map(|r| r.previous).collect();
    out.extend(head);
    out
}

/// The coverage sets at `points` not stored yet (a run stores one with each iteration where
/// few of its positions are new, [`CoverageLog`]), each against the one stored before it:
/// built from the last stored one before the first such point (a branch's parent may have
/// one) and the games after it.
fn coverage_sets<G: Abilities>(
    g: &G,
    store: &Store,
    records: &[IterationRecord],
    hashes: &[ObjectHash],
    points: &[u32],
) -> Result<Vec<(u32, Encoded)>, RunError> {
    let stored = |i: u32| store.coverage_of(&hashes[i as usize - 1]);
    let mut missing = Vec::new();
    for &c in points {
        if stored(c)?.is_none() {
            missing.push(c);
        }
    }
    let (Some(&first), Some(&last)) = (missing.first(), missing.last()) else {
        return Ok(Vec::new());
    };
    let (mut from, mut base) = (0u32, None);
    for i in (1..first).rev() {
        if let Some(c) = stored(i)? {
            (from, base) = (i, Some(c));
            break;
        }
    }
    let mut seen: FastSet<G::Key> = match base {
        Some(c) => read_coverage::<G>(store, c)?,
        None => FastSet::default(),
    };
    let mut added: Vec<G::Key> = Vec::new();
    let mut out = Vec::new();
    for r in records
        .iter()
        .filter(|r| r.iteration > from && r.iteration <= last)
    {
        for keys in stored_positions(g, store, r)? {
            added.extend(keys.into_iter().filter(|k| seen.insert(*k)));
        }
        if missing.contains(&r.iteration) {
            added.sort_unstable();
            let e = encode_coverage(base, &added)?;
            base = Some(e.hash);
            out.push((r.iteration, e));
            added.clear();
        } else if let Some(c) = stored(r.iteration)? {
            // The run's own set here: the same keys; the next is stored against it.
            (base, added) = (Some(c), Vec::new());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{COVERAGE_PATIENCE, CoverageLog};
    use crate::solver::fasthash::FastSet;

    #[test]
    fn a_coverage_set_is_stored_while_its_new_keys_are_few() {
        let mut log = CoverageLog::<u64>::new(FastSet::default(), None, true);
        // 3 new keys of 6 positions: stored, the keys in order.
        log.extend([5, 3, 5, 9, 3, 3]);
        let first = log.commit().unwrap().expect("stored");
        let object = first.object.expect("a new set");
        assert_eq!(object.hash, first.hash);
        let c: super::Coverage = postcard::from_bytes(&object.bytes).unwrap();
        assert_eq!(c.base, None);
        assert_eq!(
            postcard::from_bytes::<Vec<u64>>(&c.added).unwrap(),
            [3, 5, 9]
        );
        // No new key: the same set, no new object.
        log.extend([3, 9]);
        let same = log.commit().unwrap().expect("stored");
        assert_eq!((same.hash, same.object.is_none()), (first.hash, true));
        // More than half the positions new: not stored, kept for the next iteration, whose
        // positions count with these.
        log.extend(100..200);
        assert!(log.commit().unwrap().is_none());
        log.extend(std::iter::repeat_n(3, 150));
        let later = log.commit().unwrap().expect("stored");
        let c: super::Coverage = postcard::from_bytes(&later.object.unwrap().bytes).unwrap();
        assert_eq!(c.base, Some(first.hash));
        let added: Vec<u64> = postcard::from_bytes(&c.added).unwrap();
        assert_eq!(added, (100..200).collect::<Vec<_>>());
        // Positions that never repeat: after the patience, no more keys kept.
        for k in 0..COVERAGE_PATIENCE {
            log.extend(1_000 * (k as u64 + 1)..1_000 * (k as u64 + 2));
            assert!(log.commit().unwrap().is_none());
        }
        assert!(log.added.is_empty() && !log.tracked);
        log.extend(std::iter::repeat_n(1, 100));
        assert!(log.commit().unwrap().is_none());
        assert_eq!(
            log.seen.len(),
            3 + 100 + 1_000 * COVERAGE_PATIENCE as usize + 1
        );
    }
}
