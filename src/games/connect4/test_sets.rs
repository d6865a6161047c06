//! The Connect Four 7x6 test sets (`tests/data/connect4/Test_L*_R*`: positions with exact
//! scores), with each position's best moves from the exact solver ([`super::solver`]): the
//! reference positions of `games::Abilities::reference_set` (docs/metrics.md, "Reference
//! metrics").

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;

use super::solver::{C4Solver, DEFAULT_TABLE_BITS};
use super::{C4State, ConnectFour};
use crate::game::{Action, Game};
use crate::games::abilities::{ReferencePosition, ReferenceSet};

/// The Connect Four 7x6 test sets (name, file), embedded: they are small (about 30 kB each).
pub(crate) const C4_SETS: [(&str, &str); 6] = [
    (
        "L3_R1",
        include_str!("../../../tests/data/connect4/Test_L3_R1"),
    ),
    (
        "L2_R1",
        include_str!("../../../tests/data/connect4/Test_L2_R1"),
    ),
    (
        "L2_R2",
        include_str!("../../../tests/data/connect4/Test_L2_R2"),
    ),
    (
        "L1_R1",
        include_str!("../../../tests/data/connect4/Test_L1_R1"),
    ),
    (
        "L1_R2",
        include_str!("../../../tests/data/connect4/Test_L1_R2"),
    ),
    (
        "L1_R3",
        include_str!("../../../tests/data/connect4/Test_L1_R3"),
    ),
];

/// One position of a Connect Four test set, with what the exact solver says of it.
pub(crate) type C4Test = ReferencePosition<C4State>;

type SetCache = Mutex<BTreeMap<(String, usize), Arc<Vec<C4Test>>>>;

/// The first `n` positions of Connect Four 7x6 test set `name`, with their optimal moves
/// from the exact solver: computed once per process and set (in parallel, one solver per
/// thread), then shared. The moves are checked against the file: the best child's value
/// must be the position's.
pub fn c4_test_set(name: &str, n: usize) -> Result<ReferenceSet<C4State>, String> {
    static CACHE: OnceLock<SetCache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(BTreeMap::new()));
    let key = (name.to_string(), n);
    if let Some(hit) = cache.lock().map_err(|e| e.to_string())?.get(&key) {
        return Ok(hit.clone());
    }
    let text = C4_SETS
        .iter()
        .find(|(s, _)| *s == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| format!("no Connect Four test set `{name}`"))?;
    let g = ConnectFour::new(7, 6)?;
    let lines: Vec<&str> = text.lines().take(n).collect();
    let tests: Vec<C4Test> = lines
        .par_iter()
        .map(|line| -> Result<C4Test, String> {
            let (moves, score) = line
                .split_once(' ')
                .ok_or_else(|| format!("{name}: `{line}` is not `moves score`"))?;
            let score: i32 = score
                .trim()
                .parse()
                .map_err(|_| format!("{name}: bad score in `{line}`"))?;
            let state = g.parse_moves(moves).map_err(|e| e.to_string())?;
            if score < 0 {
                // A lost position: every move keeps the value; nothing to solve.
                let mut legal = Vec::new();
                g.legal_actions(&state, &mut legal);
                return Ok(C4Test {
                    state,
                    value: 0.0,
                    best: legal,
                });
            }
            let values = move_signs(&g, &state);
            let top = values.iter().map(|v| v.1).max().unwrap_or(-2);
            if top != score.signum() {
                return Err(format!(
                    "{name}: `{moves}` scores {score}, its best move's sign is {top}"
                ));
            }
            Ok(C4Test {
                state,
                value: (f64::from(top) + 1.0) / 2.0,
                best: values.iter().filter(|v| v.1 == top).map(|v| v.0).collect(),
            })
        })
        .collect::<Result<_, _>>()?;
    let tests = Arc::new(tests);
    cache
        .lock()
        .map_err(|e| e.to_string())?
        .insert(key, tests.clone());
    Ok(tests)
}

thread_local! {
    /// One exact solver per thread, kept between positions so its table keeps helping.
    static SOLVER: std::cell::RefCell<Option<C4Solver>> = const { std::cell::RefCell::new(None) };
}

/// The legal moves of a 7x6 position with the sign of their exact values for the mover
/// (weak solves on this thread's solver).
fn move_signs(g: &ConnectFour, s: &C4State) -> Vec<(Action, i32)> {
    SOLVER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = C4Solver::new(g, DEFAULT_TABLE_BITS).ok();
        }
        slot.as_mut().map_or_else(Vec::new, |solver| {
            solver
                .move_signs(g.key(s))
                .into_iter()
                .map(|(c, v)| (c as Action, v))
                .collect()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_sets_agree_with_the_exact_solver() {
        // The first positions of the end-game set: solved here, checked against the file.
        let t = c4_test_set("L3_R1", 50).unwrap();
        assert_eq!(t.len(), 50);
        assert!(t.iter().all(|c| !c.best.is_empty()));
        assert!(t.iter().any(|c| c.value == 1.0) && t.iter().any(|c| c.value == 0.0));
        // Cached: the same allocation.
        assert!(Arc::ptr_eq(&t, &c4_test_set("L3_R1", 50).unwrap()));
        assert!(c4_test_set("L9_R9", 5).is_err());
    }
}
