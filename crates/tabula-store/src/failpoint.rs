//! Deterministic failpoints at the store's write steps (docs/store.md, "Failpoints"), for the
//! fault-injection tests (`tests/failpoints.rs`): each write transaction of every command
//! passes `begin` (after `BEGIN IMMEDIATE`), `commit` (its writes done, before `COMMIT`) and
//! `committed` (after it); opening a store for writing passes `open` (the file made, before
//! the migrations) and the migrations `migrate` (inside their transaction).
//!
//! Armed by one environment variable, read once per process: `TABULA_FAILPOINT=POINT:N:ACTION`
//! makes the N-th pass (1-based) of `POINT` fail with SQLite's I/O error (`ACTION` = `error`)
//! or end the process on the spot, as kill -9 would, with no destructor, flush or rollback
//! (`abort`: `_exit(137)`, the status a killed process reports; no core dump); `TABULA_FAILPOINT=list` prints every pass to stderr (`failpoint POINT N`), so a
//! test learns how many points a command has. Unset (as always outside tests), a pass costs
//! one load of an initialised `OnceLock`: nothing beside a write transaction's fsync. An
//! environment variable rather than a Cargo feature, because the tests drive the one binary
//! the build makes (`CARGO_BIN_EXE_tabula`): a feature would build and link it twice in CI.

use std::sync::{Mutex, OnceLock};

/// What an armed failpoint does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Error,
    Abort,
}

/// The armed failpoint, if any.
#[derive(Debug)]
enum Armed {
    List,
    At {
        point: String,
        n: u64,
        action: Action,
    },
}

fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let text = std::env::var("TABULA_FAILPOINT").ok()?;
            if text == "list" {
                return Some(Armed::List);
            }
            let mut parts = text.splitn(3, ':');
            let point = parts.next()?.to_string();
            let n = parts.next()?.parse().ok()?;
            let action = match parts.next()? {
                "error" => Action::Error,
                "abort" => Action::Abort,
                _ => return None,
            };
            Some(Armed::At { point, n, action })
        })
        .as_ref()
}

/// Passes failpoint `point`: `Err` (SQLite's disk I/O error) when it is armed to fail here.
pub(crate) fn hit(point: &'static str) -> Result<(), rusqlite::Error> {
    let Some(armed) = armed() else {
        return Ok(());
    };
    // Passes are counted per point, in this process.
    static PASSES: OnceLock<Mutex<Vec<(&'static str, u64)>>> = OnceLock::new();
    let n = {
        let mut passes = PASSES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match passes.iter_mut().find(|(p, _)| *p == point) {
            Some((_, k)) => {
                *k += 1;
                *k
            }
            None => {
                passes.push((point, 1));
                1
            }
        }
    };
    match armed {
        Armed::List => {
            eprintln!("failpoint {point} {n}");
            Ok(())
        }
        Armed::At {
            point: p,
            n: at,
            action,
        } if p == point && *at == n => match action {
            // SAFETY: `_exit` ends the process at once; nothing after it runs.
            Action::Abort => unsafe { libc::_exit(137) },
            Action::Error => Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR),
                Some(format!("disk I/O error (failpoint {point} {n})")),
            )),
        },
        Armed::At { .. } => Ok(()),
    }
}
