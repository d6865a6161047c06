//! Resume after a crash (docs/store.md, "Resume").
//!
//! Everything is rebuilt from the store: the model from the checkpoint of the last committed
//! iteration (through its learner), the training window and the coverage set (`seen`) from
//! the stored games of the head's chain, and the games of the next iteration already
//! committed are reused as they are. Since every random draw comes from a named stream of the
//! run seed and every reduction runs in a fixed order, the run ends with the head an
//! uninterrupted run has.
//!
//! **Lock.** A run being worked on carries its holder (pid, host, since) in `runs`; a second
//! `run`/`resume` gets [`crate::store::StoreError::Locked`]. A lock whose process on this host
//! is dead is taken over. The lock is released when the process finishes or fails.

use std::time::Instant;

use super::{
    Exchange, LockedRun, Observer, RunError, RunOutcome, find, line_of, load_config, model_seed_of,
    run_locked,
};
use crate::store::{ObjectHash, Store, address};

/// What `resume` did.
#[derive(Debug)]
pub enum Resumed {
    /// The run had already finished: nothing to do.
    Finished {
        run_id: i64,
        iterations: u32,
        head: Option<ObjectHash>,
    },
    Ran(Box<RunOutcome>),
}

/// Continues a run from what was committed (see the module docs); a finished run is left
/// as it is.
pub fn resume(
    store: &mut Store,
    text: &str,
    observer: &mut dyn Observer,
) -> Result<Resumed, RunError> {
    resume_on(store, text, None, observer)
}

/// [`resume`], its self-play games played by the processes serving `exchange` where one is
/// given (runs/exchange: the same head).
pub fn resume_on(
    store: &mut Store,
    text: &str,
    exchange: Option<&Exchange>,
    observer: &mut dyn Observer,
) -> Result<Resumed, RunError> {
    let since = Instant::now();
    let row = find(store, text)?;
    if row.iterations_done >= row.iterations_planned {
        // A process killed (or failed) between its last commit and its unlock leaves a dead
        // holder and a run stored as running: taken over, marked done (every iteration is
        // committed) and released (a live holder is left alone).
        if store.lock_run(row.id).is_ok() {
            if row.status != crate::store::RunStatus::Done {
                let _ = store.set_run_status(row.id, crate::store::RunStatus::Done);
            }
            let _ = store.unlock_run(row.id);
        }
        return Ok(Resumed::Finished {
            run_id: row.id,
            iterations: row.iterations_done,
            head: row.head,
        });
    }
    store.lock_run(row.id)?;
    // Read again under the lock: another process may have committed meanwhile.
    let row = match find(store, &row.id.to_string()) {
        Ok(r) => r,
        Err(e) => {
            let _ = store.unlock_run(row.id);
            return Err(e);
        }
    };
    let prepared = (|| {
        let (cfg, record) = load_config(store, &row)?;
        let line = line_of(&record);
        let work = LockedRun {
            run_id: row.id,
            run_hash: row.hash,
            line: address(&line)?.0,
            model_seed: model_seed_of(store, &record)?,
            done: row.iterations_done,
            head: row.head,
            baseline: record.parent.is_none() && !store.has_evaluation(row.id, 0)?,
            since,
            exchange: exchange.cloned(),
        };
        Ok::<_, RunError>((cfg, work))
    })();
    let (cfg, work) = match prepared {
        Ok(p) => p,
        Err(e) => {
            let _ = store.unlock_run(row.id);
            return Err(e);
        }
    };
    if work.done >= cfg.iterations {
        let _ = store.unlock_run(row.id);
        return Ok(Resumed::Finished {
            run_id: row.id,
            iterations: work.done,
            head: work.head,
        });
    }
    observer.created(row.id, &row.hash, cfg.seed);
    run_locked(store, &cfg, &work, observer).map(|o| Resumed::Ran(Box::new(o)))
}
