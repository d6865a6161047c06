//! Verify stored iterations by re-executing them (docs/store.md, "Replay and verify"): the
//! loop runs again from the stored state before the first, its records going to a comparison
//! with the stored ones instead of the writer.

use std::time::Instant;

use super::records::NotMeasured;
use super::{
    Commit, IterationRecord, Loop, Observer, RunConfig, RunError, Truth, chain, find, line_of,
    load_config, model_seed_of, start_point,
};
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::learners::Learner;
use crate::store::{ObjectHash, RunRow, Store, address};

/// The result of `verify`.
#[derive(Clone, Debug, Default)]
pub struct Verified {
    pub run_id: i64,
    pub first: u32,
    pub last: u32,
    /// Records whose hash was recomputed and compared.
    pub records: u64,
    /// The first record that differs, described (`None`: all identical).
    pub differs: Option<String>,
    pub seconds: f64,
}

/// Re-executes iterations `first..=last` of a run from the stored snapshot before `first`
/// and compares every record hash (games, table chunks, snapshot, evaluation, iteration
/// record) with the stored ones, re-reading every stored object on the way (so a damaged
/// object is named too). Stops at the first difference.
/// `observer` hears of the re-executed self-play games (for a progress bar).
pub fn verify(
    store: &mut Store,
    text: &str,
    range: Option<(u32, u32)>,
    observer: &mut dyn Observer,
) -> Result<Verified, RunError> {
    let row = find(store, text)?;
    let (cfg, record) = load_config(store, &row)?;
    let done = row.iterations_done;
    let first_own = record.parent.as_ref().map_or(1, |p| p.iteration + 1);
    let (a, b) = range.unwrap_or((first_own.min(done.max(1)), done));
    if a == 0 || a > b || b > done {
        return Err(RunError::Usage(format!(
            "--iterations {a}..{b}: run {} has committed iterations 1..={done}",
            row.id
        )));
    }
    let line = address(&line_of(&record))?.0;
    let seed = model_seed_of(store, &record)?;
    let started = Instant::now();
    let mut out = crate::with_game!(&cfg.game, |g| {
        let truth = super::truth(g, store, &cfg)?;
        verify_any(
            g,
            &cfg,
            truth.as_ref(),
            store,
            &row,
            line,
            seed,
            (a, b),
            observer,
        )
    })?;
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn verify_any<G: Abilities>(
    g: &G,
    cfg: &RunConfig,
    truth: Option<&Truth<G>>,
    store: &Store,
    row: &RunRow,
    line: ObjectHash,
    model_seed: u64,
    range: (u32, u32),
    observer: &mut dyn Observer,
) -> Result<Verified, RunError> {
    crate::with_learner!(cfg.settings.learner.kind, L => {
        verify_game::<G, L<G>>(g, cfg, truth, store, row, line, model_seed, range, observer)
    })
}

#[allow(clippy::too_many_arguments)]
fn verify_game<G: Abilities, L: Learner<G>>(
    g: &G,
    cfg: &RunConfig,
    truth: Option<&Truth<G>>,
    store: &Store,
    row: &RunRow,
    line: ObjectHash,
    model_seed: u64,
    (a, b): (u32, u32),
    observer: &mut dyn Observer,
) -> Result<Verified, RunError> {
    let all = chain(store, row.head)?;
    // A row that says more than its chain holds (a damaged store) is an error, not an index
    // out of bounds.
    if (all.len() as u64) < u64::from(b) {
        return Err(RunError::Inconsistent(format!(
            "run {} ({}): verifying up to iteration {b}, but the chain from its head has {} \
             iteration records (its row says {} done); `tabula fsck` names what disagrees",
            row.id,
            row.name,
            all.len(),
            row.iterations_done
        )));
    }
    let mut result = Verified {
        run_id: row.id,
        first: a,
        last: b,
        ..Verified::default()
    };
    // Iterations before a branch point belong to (and are verified with) the ancestor's
    // settings and line; verify only what this run's settings produced.
    if let Some(first) = all.get(a as usize - 1)
        && first.run != line
    {
        return Err(RunError::Usage(format!(
            "iteration {a} of run {} was made by an ancestor (its record names another run); \
             verify the ancestor, or start at this run's first own iteration",
            row.id
        )));
    }
    let mut records = 0u64;
    // One stage at a time (runs/stages.rs), each from the stored state before its first
    // iteration, as the run crossed it.
    let mut x = a;
    let outcome = loop {
        let stage = cfg.in_force(x)?;
        let last = cfg.stage_end(x).min(b);
        let head_before = match x {
            1 => None,
            _ => Some(address(&all[x as usize - 2])?.0),
        };
        let start = start_point::<G, L>(g, store, &stage, model_seed, head_before, x - 1)?;
        let mut sink = |commit: Commit, _wait: &mut f64| -> Result<(), RunError> {
            compare::<G, L>(store, &all, commit, &mut records)
        };
        let lp = Loop {
            g,
            cfg: &stage,
            truth,
            run_id: row.id,
            run_hash: row.hash,
            line,
            last,
            baseline: false,
            model_seed,
            exchange: None,
            recorded: Some(&all),
            learner: std::marker::PhantomData::<L>,
        };
        let out = lp.iterate(start, Vec::new(), &mut sink, observer, Instant::now());
        if out.is_err() || last >= b {
            break out;
        }
        x = last + 1;
    };
    result.records = records;
    match outcome {
        Ok(_) => Ok(result),
        Err(RunError::Differs(what)) => {
            result.differs = Some(what);
            Ok(result)
        }
        Err(e) => Err(e),
    }
}

/// Compares what the loop would commit with the stored records of the chain `all`, and
/// re-reads each stored object on the way; `records` counts the records compared. A
/// difference is a [`RunError::Differs`] that names it.
fn compare<G: Abilities, L: Learner<G>>(
    store: &Store,
    all: &[IterationRecord],
    commit: Commit,
    records: &mut u64,
) -> Result<(), RunError> {
    let differs = |what: String| RunError::Differs(what);
    match commit {
        Commit::Baseline(_) => Ok(()),
        Commit::Games { iteration, batches } => {
            let stored = &all[iteration as usize - 1];
            for r in batches.iter().flat_map(|b| &b.rows) {
                let Some(h) = stored.games.get(r.game as usize) else {
                    return Err(differs(format!(
                        "iteration {iteration} game {}: not in the stored iteration record",
                        r.game
                    )));
                };
                store
                    .get::<GameRecord>(h)
                    .map_err(|e| differs(format!("iteration {iteration} game {}: {e}", r.game)))?;
                *records += 1;
                if *h != r.hash {
                    return Err(differs(format!(
                        "iteration {iteration} game {}: stored game/v1 {h}, re-executed {}",
                        r.game, r.hash
                    )));
                }
            }
            Ok(())
        }
        Commit::Iteration(job) => {
            let i = job.record.iteration;
            let stored = &all[i as usize - 1];
            let stored_hash = address(stored)?.0;
            // Every checkpoint object must be stored, bytes and address intact.
            for (k, c) in job.checkpoint.iter().enumerate() {
                *records += 1;
                let what = c.kind.split('/').next().unwrap_or(c.kind).replace('-', " ");
                store
                    .check(&c.hash)
                    .map_err(|e| differs(format!("iteration {i} {what} {k}: {e}")))?;
            }
            let checks = [
                ("snapshot", "checkpoint", stored.snapshot, job.row.snapshot),
                (
                    "evaluation",
                    "evaluation",
                    stored.evaluation,
                    job.row.evaluation,
                ),
                ("record", "iteration/v1", stored_hash, job.row.hash),
            ];
            for (what, kind, s, h) in checks {
                *records += 1;
                if s != h {
                    return Err(differs(format!(
                        "iteration {i} {what}: stored {kind} {s}, re-executed {h}"
                    )));
                }
            }
            // An unmeasured iteration names the `not-measured/v1` record (the comparison
            // above says the re-execution skipped it too): it must be stored, intact.
            let read = match NotMeasured::is(&stored.evaluation) {
                true => store.get::<NotMeasured>(&stored.evaluation).map(|_| ()),
                false => store.get::<L::Evaluation>(&stored.evaluation).map(|_| ()),
            };
            read.map_err(|e| differs(format!("iteration {i} evaluation: {e}")))?;
            Ok(())
        }
    }
}
