//! The reference check of `fsck` (docs/store.md): every hash the run tables and the run
//! records hold must name a stored object, and the records must decode.

use super::{IterationRecord, RunError, RunRecord, load_settings};
use crate::games::Abilities;
use crate::games::AnyGame;
use crate::learners::{Learner, LearnerKind};
use crate::store::{ObjectHash, RunRow, Store};

/// A reference that does not resolve, or an object that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Dangling {
    /// Where the reference sits (e.g. `run 2 iteration 3 game 7`, `snapshot <hash> chunk 0`).
    pub at: String,
    pub hash: String,
    pub problem: String,
}

/// What [`check_references`] found.
#[derive(Clone, Debug, Default)]
pub struct References {
    /// References that do not resolve, and records that cannot be read, in a fixed order.
    pub dangling: Vec<Dangling>,
    /// Every reference checked: (where it sits, the object it names); with fsck's damaged
    /// objects, this says which run, iteration, game or chunk a damaged object is.
    pub all: Vec<(String, ObjectHash)>,
}

impl References {
    /// Where `hash` is referenced from.
    pub fn referrers(&self, hash: &ObjectHash) -> Vec<&str> {
        self.all
            .iter()
            .filter(|(_, h)| h == hash)
            .map(|(at, _)| at.as_str())
            .collect()
    }
}

/// Checks that every hash the run tables and the run records hold names a stored object,
/// and that the records decode.
pub fn check_references(store: &Store) -> Result<References, RunError> {
    let mut out = Vec::new();
    let mut all: Vec<(String, ObjectHash)> = store.run_references()?;
    let mut miss = |at: String, h: &ObjectHash, problem: &str| {
        out.push(Dangling {
            at,
            hash: h.to_hex(),
            problem: problem.to_string(),
        })
    };
    for (at, h) in &all {
        if !store.contains(h)? {
            miss(at.clone(), h, "missing");
        }
    }
    // Each checkpoint root with the run's game and learner, which say how to read it.
    let mut snapshots: std::collections::BTreeMap<ObjectHash, (AnyGame, LearnerKind)> =
        std::collections::BTreeMap::new();
    let mut iterations = std::collections::BTreeMap::new();
    for run in store.runs()? {
        let owner = run_record_refs(store, &run, &mut all, &mut miss)?;
        for (_, h) in store.iteration_hashes(run.id)? {
            iterations.entry(h).or_insert_with(|| owner.clone());
        }
    }
    // Records whose games a run's retention removed (docs/store.md, "Keeping fewer games").
    let without_games: std::collections::BTreeSet<ObjectHash> =
        store.records_without_games()?.into_iter().collect();
    for (h, owner) in &iterations {
        let r: IterationRecord = match store.get(h) {
            Ok(r) => r,
            Err(e) => {
                miss(format!("iteration record {}", h.short()), h, &e.to_string());
                continue;
            }
        };
        let at = format!("iteration record {} (iteration {})", h.short(), r.iteration);
        let mut refs: Vec<(String, ObjectHash)> = vec![
            ("run".into(), r.run),
            ("settings".into(), r.settings),
            ("snapshot".into(), r.snapshot),
            ("evaluation".into(), r.evaluation),
        ];
        if let Some(p) = r.previous {
            refs.push(("previous".into(), p));
        }
        if !without_games.contains(h) {
            for (k, g) in r.games.iter().enumerate() {
                refs.push((format!("game {k}"), *g));
            }
        }
        for (what, x) in refs {
            if !store.contains(&x)? {
                miss(format!("{at}: {what}"), &x, "missing");
            }
            all.push((format!("{at}: {what}"), x));
        }
        if let Some(o) = owner {
            snapshots.entry(r.snapshot).or_insert_with(|| o.clone());
        }
    }
    // Full checkpoints whose bytes the learner chose not to keep: derived, like deltas.
    let unkept: std::collections::BTreeSet<ObjectHash> =
        store.unkept_snapshots()?.into_iter().collect();
    for (h, (game, kind)) in &snapshots {
        let refs = crate::with_game!(game, |g| { refs_of(g, *kind, store, h) });
        let c = match refs {
            Ok(c) => c,
            Err(e) => {
                miss(format!("snapshot {}", h.short()), h, &e.to_string());
                continue;
            }
        };
        let at = format!("{} {} (iteration {})", c.kind, h.short(), c.iteration);
        for r in c.references {
            if r.stored && !unkept.contains(h) && !store.contains(&r.hash)? {
                miss(format!("{at}: {}", r.what), &r.hash, "missing");
            }
            all.push((format!("{at}: {}", r.what), r.hash));
        }
    }
    Ok(References { dangling: out, all })
}

/// The references of run `run`'s record (into `all`, the missing ones to `miss`), and the
/// game and learner that read its snapshots. The run record is read once, here; `None`: it
/// or its settings cannot be read (reported here, once).
fn run_record_refs(
    store: &Store,
    run: &RunRow,
    all: &mut Vec<(String, ObjectHash)>,
    miss: &mut impl FnMut(String, &ObjectHash, &str),
) -> Result<Option<(AnyGame, LearnerKind)>, RunError> {
    let r = match store.get::<RunRecord>(&run.hash) {
        Ok(r) => r,
        Err(e) => {
            miss(format!("run {} record", run.id), &run.hash, &e.to_string());
            return Ok(None);
        }
    };
    let mut refs = vec![("settings", r.settings)];
    if let Some(p) = &r.parent {
        refs.push(("parent run", p.run));
        refs.push(("parent iteration", p.iteration_record));
    }
    for (what, h) in refs {
        let at = format!("run {} record: {what}", run.id);
        if !store.contains(&h)? {
            miss(at.clone(), &h, "missing");
        }
        all.push((at, h));
    }
    let settings = load_settings(store, &r.settings);
    Ok(match (settings, r.variant.parse::<AnyGame>()) {
        (Ok(s), Ok(g)) => Some((g, s.learner.kind)),
        // A missing settings record is reported above.
        (Err(_), _) if !store.contains(&r.settings)? => None,
        (Err(e), _) => {
            let at = format!("run {} record: settings", run.id);
            miss(at, &r.settings, &e.to_string());
            None
        }
        (_, Err(e)) => {
            miss(format!("run {} record", run.id), &run.hash, &e.to_string());
            None
        }
    })
}

/// The references of checkpoint root `h` as learner `kind` reads it (`g` only picks the
/// game type).
fn refs_of<G: Abilities>(
    _: &G,
    kind: LearnerKind,
    store: &Store,
    h: &ObjectHash,
) -> Result<crate::learners::CheckpointRefs, RunError> {
    crate::with_learner!(kind, L => Ok(<L<G> as Learner<G>>::references(store, h)?))
}

/// Checks every run row against its chain (docs/store.md, "fsck"): its own `iterations` rows
/// are exactly those after its branch point up to `iterations_done`, no more than planned;
/// each row's record is that iteration, following the one before it (a branch's first, its
/// parent's at the branch point); the head is the last one's hash; and every row derived from
/// a record agrees with it ([`check_derived_rows`]). Returns one line per disagreement, naming
/// the run.
pub fn check_run_rows(store: &Store) -> Result<Vec<String>, RunError> {
    let runs = store.runs()?;
    let mut problems = Vec::new();
    let mut chains: std::collections::BTreeMap<i64, Vec<(u32, ObjectHash)>> =
        std::collections::BTreeMap::new();
    for run in &runs {
        chains.insert(run.id, store.iteration_hashes(run.id)?);
    }
    for run in &runs {
        let who = format!("run {} ({})", run.id, run.name);
        let mut say = |what: String| problems.push(format!("{who}: {what}"));
        let own = &chains[&run.id];
        let first = run.parent.map_or(1, |(_, at)| at + 1);
        let done = run.iterations_done;
        if done > run.iterations_planned {
            say(format!(
                "the row says {done} of {} iterations done, more than planned",
                run.iterations_planned
            ));
        }
        let listed: Vec<u32> = own.iter().map(|(i, _)| *i).collect();
        let expected: Vec<u32> = (first..=done).collect();
        if listed != expected {
            let missing: Vec<String> = expected
                .iter()
                .filter(|i| !listed.contains(i))
                .map(u32::to_string)
                .collect();
            let extra: Vec<String> = listed
                .iter()
                .filter(|i| !expected.contains(i))
                .map(u32::to_string)
                .collect();
            say(format!(
                "the row says {done} iterations done (its own from {first}); `iterations` rows \
                 missing: [{}], beyond it: [{}]",
                missing.join(", "),
                extra.join(", ")
            ));
        }
        // The hash of iteration `i` of this run's line (a branch's shared ones its parent's).
        let at = |i: u32| -> Option<ObjectHash> {
            let mut id = run.id;
            loop {
                let row = runs.iter().find(|r| r.id == id)?;
                match row.parent {
                    Some((p, point)) if i <= point => id = p,
                    _ => return chains[&id].iter().find(|(j, _)| *j == i).map(|(_, h)| *h),
                }
            }
        };
        let head = if done == 0 { None } else { at(done) };
        if run.head != head {
            say(format!(
                "the row's head is {}, its chain's is {}",
                run.head.map_or_else(|| "none".to_string(), |h| h.to_hex()),
                head.map_or_else(|| "none".to_string(), |h| h.to_hex())
            ));
        }
        for (i, h) in own {
            let Ok(r) = store.get::<IterationRecord>(h) else {
                continue; // an unreadable record is named by the reference check
            };
            let previous = if *i > 1 { at(i - 1) } else { None };
            if r.iteration != *i {
                say(format!(
                    "the `iterations` row {i} holds the record of iteration {}",
                    r.iteration
                ));
            } else if r.previous != previous {
                say(format!(
                    "iteration {i}'s record does not follow iteration {}'s",
                    i - 1
                ));
            }
        }
    }
    problems.extend(check_derived_rows(store)?);
    Ok(problems)
}

/// Checks every row derived from a record against that record (docs/store.md, "fsck"):
/// each `evaluations` row names the evaluation its iteration record names (none for an
/// iteration the interval skipped), each evaluation's `metrics` rows are exactly the values
/// its record holds, no metric row lacks its evaluation, and each iteration's `run_games`
/// rows are the games its record lists, in order. Returns one line per disagreement, naming
/// the run and the iteration; a run whose records cannot be read is left to the reference
/// check, which names it.
pub fn check_derived_rows(store: &Store) -> Result<Vec<String>, RunError> {
    let mut problems = Vec::new();
    for run in store.runs()? {
        let Ok(r) = store.get::<RunRecord>(&run.hash) else {
            continue;
        };
        let (Ok(settings), Ok(game)) = (load_settings(store, &r.settings), r.variant.parse())
        else {
            continue;
        };
        let kind = settings.learner.kind;
        let found = crate::with_game!(&game, |g| derived_of(g, kind, store, &run))?;
        let who = format!("run {} ({})", run.id, run.name);
        problems.extend(found.into_iter().map(|p| format!("{who}: {p}")));
    }
    Ok(problems)
}

/// [`check_derived_rows`] for one run, its game type picked by `g` and its learner by `kind`.
fn derived_of<G: Abilities>(
    _: &G,
    kind: LearnerKind,
    store: &Store,
    run: &RunRow,
) -> Result<Vec<String>, RunError> {
    crate::with_learner!(kind, L => derived_rows::<G, L<G>>(store, run))
}

/// The evaluation each of `run`'s own iterations names, as its record says (`None`: not
/// measured), and the games it lists; records that cannot be read are skipped.
type OwnRecords = Vec<(u32, Option<ObjectHash>, Vec<ObjectHash>)>;

fn own_records(store: &Store, run: &RunRow) -> Result<OwnRecords, RunError> {
    let mut out = Vec::new();
    for (i, h) in store.iteration_hashes(run.id)? {
        if let Ok(r) = store.get::<IterationRecord>(&h) {
            let measured = !super::records::NotMeasured::is(&r.evaluation);
            out.push((i, measured.then_some(r.evaluation), r.games));
        }
    }
    Ok(out)
}

fn derived_rows<G: Abilities, L: Learner<G>>(
    store: &Store,
    run: &RunRow,
) -> Result<Vec<String>, RunError> {
    let mut problems = Vec::new();
    let rows: std::collections::BTreeMap<u32, ObjectHash> =
        store.evaluation_hashes(run.id)?.into_iter().collect();
    // Iterations whose games the run's retention removed have no `run_games` rows
    // (docs/store.md, "Keeping fewer games").
    let removed: std::collections::BTreeSet<u32> =
        store.unkept_iterations(run.id)?.into_iter().collect();
    for (i, evaluation, games) in own_records(store, run)? {
        let row = rows.get(&i).copied();
        if row != evaluation {
            let show = |h: Option<ObjectHash>| h.map_or_else(|| "none".into(), |h| h.to_hex());
            problems.push(format!(
                "iteration {i}: the `evaluations` row names {}, the iteration record {}",
                show(row),
                show(evaluation)
            ));
        }
        let listed: Vec<ObjectHash> = store
            .run_games(run.id, i)?
            .into_iter()
            .map(|g| g.1)
            .collect();
        if listed != games && !(listed.is_empty() && removed.contains(&i)) {
            problems.push(format!(
                "iteration {i}: {} `run_games` rows, but the iteration record lists {} games \
                 (or other ones)",
                listed.len(),
                games.len()
            ));
        }
    }
    let mut stored: std::collections::BTreeMap<u32, Vec<(String, f64)>> = Default::default();
    for (i, name, value) in store.metric_rows(run.id)? {
        stored.entry(i).or_default().push((name, value));
    }
    for (i, h) in &rows {
        let Ok(e) = store.get::<L::Evaluation>(h) else {
            continue; // an unreadable evaluation is named by the reference check
        };
        let mut expected: Vec<(String, f64)> = L::metric_values(&e)
            .into_iter()
            .filter_map(|(name, v)| v.map(|v| (name.to_string(), v)))
            .collect();
        expected.sort_by(|a, b| a.0.cmp(&b.0));
        let got = stored.remove(i).unwrap_or_default();
        if let Some(p) = metric_difference(&expected, &got) {
            problems.push(format!("iteration {i}: {p}"));
        }
    }
    for i in stored.keys() {
        problems.push(format!(
            "iteration {i}: `metrics` rows without an evaluation"
        ));
    }
    Ok(problems)
}

/// How the stored `metrics` rows `got` differ from the record's values `expected` (both
/// sorted by name), or `None`.
fn metric_difference(expected: &[(String, f64)], got: &[(String, f64)]) -> Option<String> {
    let names = |v: &[(String, f64)], other: &[(String, f64)]| -> Vec<String> {
        v.iter()
            .filter(|(n, _)| !other.iter().any(|(m, _)| m == n))
            .map(|(n, _)| n.clone())
            .collect()
    };
    let (missing, extra) = (names(expected, got), names(got, expected));
    if !missing.is_empty() || !extra.is_empty() {
        return Some(format!(
            "`metrics` rows missing: [{}], not in the evaluation record: [{}]",
            missing.join(", "),
            extra.join(", ")
        ));
    }
    // NUMERIC affinity stores an integral value as an integer: equal as numbers.
    let differ: Vec<String> = expected
        .iter()
        .zip(got)
        .filter(|((_, a), (_, b))| a != b)
        .map(|((n, a), (_, b))| format!("{n} = {b} (the record's: {a})"))
        .collect();
    (!differ.is_empty()).then(|| {
        format!(
            "`metrics` rows differ from the evaluation record: {}",
            differ.join(", ")
        )
    })
}

/// Every object the store's runs and sweeps reach (what `tabula gc` keeps, docs/store.md
/// "What a store holds: du, rm and gc"): every address the run tables hold, the sweeps'
/// records, each run record's references, and each checkpoint's objects as its learner reads
/// them. (The store itself keeps the small kinds a run writes ahead of its rows, solutions,
/// and whatever a kept object is stored against.)
pub fn reachable(store: &Store) -> Result<std::collections::BTreeSet<ObjectHash>, RunError> {
    let mut keep: std::collections::BTreeSet<ObjectHash> = store
        .run_references()?
        .into_iter()
        .map(|(_, h)| h)
        .collect();
    keep.extend(store.sweep_records()?);
    for run in store.runs()? {
        let mut refs = Vec::new();
        let mut unread = |_: String, _: &ObjectHash, _: &str| {};
        let owner = run_record_refs(store, &run, &mut refs, &mut unread)?;
        keep.extend(refs.into_iter().map(|(_, h)| h));
        let Some((game, kind)) = owner else {
            continue;
        };
        for s in store.snapshots_of(run.id)? {
            let c = crate::with_game!(&game, |g| { refs_of(g, kind, store, &s) })?;
            keep.extend(c.references.iter().map(|r| r.hash));
        }
    }
    Ok(keep)
}
