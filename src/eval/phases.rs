//! Phase timing for the scaling measurements (docs/scaling.md): with the environment variable
//! `TABULA_PHASE_SECONDS` set (to anything), every phase timed by [`timed`] prints one line
//! `phase NAME SECONDS` to standard error when it ends. The phases inside an iteration's
//! training and evaluation (gating, the reference metrics, WR_p, ERR_p) that the `iterations`
//! table does not split. Wall time is never part of a record: it goes to standard error only.

use std::sync::OnceLock;
use std::time::Instant;

/// Whether phases are timed (`TABULA_PHASE_SECONDS` set), read once.
fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("TABULA_PHASE_SECONDS").is_some())
}

/// Runs `f`; when phases are timed, prints `phase NAME SECONDS` (its wall time) to standard
/// error.
pub fn timed<T>(name: &str, f: impl FnOnce() -> T) -> T {
    if !enabled() {
        return f();
    }
    let t = Instant::now();
    let out = f();
    eprintln!("phase {name} {:.4}", t.elapsed().as_secs_f64());
    out
}
