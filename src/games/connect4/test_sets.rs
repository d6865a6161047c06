//! The Connect Four 7x6 test sets (`tests/data/connect4/Test_L*_R*`: positions with exact
//! scores), with each position's best moves from the exact solver ([`super::solver`]): the
//! reference positions of `games::Abilities::reference_set` (docs/metrics.md, "Reference
//! metrics").

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;

use super::solver::with_thread_solver;
use super::{C4State, ConnectFour};
use crate::game::{Action, Game};
use crate::games::abilities::{MetricText, ReferenceMetrics, ReferencePosition, ReferenceSet};

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

/// The test sets' names and the metrics measured on them (the reference metrics every
/// learner declares, docs/metrics.md; stored in `metric_defs`, so fixed).
pub(crate) const C4_METRICS: ReferenceMetrics = ReferenceMetrics {
    sets: &["L3_R1", "L2_R1", "L2_R2", "L1_R1", "L1_R2", "L1_R3"],
    policy: &POLICY_METRICS,
    search: &SEARCH_METRICS,
};

macro_rules! policy_metrics {
    ($($set:literal),*) => {
        [
            (
                "c4_value_error",
                "mean |v_hat - v*| over the positions of every chosen Connect Four 7x6 \
                 test set (v* 1, 0.5, 0 by the exact score's sign)",
            ),
            (
                "c4_best_move",
                "share of the positions of every chosen Connect Four 7x6 test set where \
                 the policy's greedy move keeps the exact value",
            ),
            $(
                (
                    concat!("c4_value_error_", $set),
                    concat!("mean |v_hat - v*| on Connect Four 7x6 test set ", $set),
                ),
                (
                    concat!("c4_best_move_", $set),
                    concat!(
                        "share of Connect Four 7x6 test set ", $set,
                        " where the policy's greedy move is optimal"
                    ),
                ),
            )*
        ]
    };
}

macro_rules! search_metrics {
    ($($set:literal),*) => {
        [
            (
                "c4_search_best_move",
                "share of the positions of every chosen Connect Four 7x6 test set where \
                 the learner's search player (the run's simulations, no noise, most \
                 visited move) keeps the exact value",
            ),
            $(
                (
                    concat!("c4_search_best_move_", $set),
                    concat!(
                        "share of Connect Four 7x6 test set ", $set,
                        " where the learner's search player's move is optimal"
                    ),
                ),
            )*
        ]
    };
}

const POLICY_METRICS: [MetricText; 14] =
    policy_metrics!("l3_r1", "l2_r1", "l2_r2", "l1_r1", "l1_r2", "l1_r3");
const SEARCH_METRICS: [MetricText; 7] =
    search_metrics!("l3_r1", "l2_r1", "l2_r2", "l1_r1", "l1_r2", "l1_r3");

/// The precomputed optimal moves of the opening sets (`examples/c4_best_moves.rs`: a line per
/// position in the set's order, its moves and its optimal columns as 1-based digits). The
/// opening sets cost the exact solver seconds a position (begin-hard: about 15 s on one core
/// here), hours a set, so their optimal moves are solved once and embedded, as an opening book;
/// a book may cover only a set's first positions, the rest are solved when asked for. Tests
/// solve a sample of each book again.
pub(crate) const C4_BOOKS: [(&str, &str); 3] = [
    (
        "L1_R1",
        include_str!("../../../tests/data/connect4/Test_L1_R1.best"),
    ),
    (
        "L1_R2",
        include_str!("../../../tests/data/connect4/Test_L1_R2.best"),
    ),
    (
        "L1_R3",
        include_str!("../../../tests/data/connect4/Test_L1_R3.best"),
    ),
];

/// One position of a Connect Four test set, with what the exact solver says of it.
pub(crate) type C4Test = ReferencePosition<C4State>;

type SetCache = Mutex<BTreeMap<(String, usize), Arc<Vec<C4Test>>>>;

/// The first `n` positions of Connect Four 7x6 test set `name`, with their optimal moves
/// from the set's book ([`C4_BOOKS`]) or the exact solver: computed once per process and set
/// (in parallel, one solver per thread), then shared. Solved moves are checked against the
/// file: the best child's value must be the position's.
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
    let book: Vec<&str> = C4_BOOKS
        .iter()
        .find(|(s, _)| *s == name)
        .map_or_else(Vec::new, |(_, b)| b.lines().take(n).collect());
    let tests: Vec<C4Test> = lines
        .par_iter()
        .enumerate()
        .map(|(i, line)| test_position(&g, name, line, book.get(i).copied()))
        .collect::<Result<_, _>>()?;
    let tests = Arc::new(tests);
    cache
        .lock()
        .map_err(|e| e.to_string())?
        .insert(key, tests.clone());
    Ok(tests)
}

/// Position `line` (`moves score`) of set `name`, its optimal moves from its line of the
/// set's book where there is one, else from the exact solver.
fn test_position(
    g: &ConnectFour,
    name: &str,
    line: &str,
    book: Option<&str>,
) -> Result<C4Test, String> {
    let (moves, score) = line
        .split_once(' ')
        .ok_or_else(|| format!("{name}: `{line}` is not `moves score`"))?;
    let score: i32 = score
        .trim()
        .parse()
        .map_err(|_| format!("{name}: bad score in `{line}`"))?;
    let state = g.parse_moves(moves).map_err(|e| e.to_string())?;
    let value = (f64::from(score.signum()) + 1.0) / 2.0;
    if let Some(entry) = book {
        let mut legal = Vec::new();
        g.legal_actions(&state, &mut legal);
        let best = book_moves(entry, moves)
            .filter(|b| b.iter().all(|a| legal.contains(a)))
            .ok_or_else(|| {
                format!("{name}: the book's line `{entry}` is not `{moves} LEGAL-COLUMNS`")
            })?;
        return Ok(C4Test { state, value, best });
    }
    if score < 0 {
        // A lost position: every move keeps the value; nothing to solve.
        let mut legal = Vec::new();
        g.legal_actions(&state, &mut legal);
        return Ok(C4Test {
            state,
            value,
            best: legal,
        });
    }
    let best = moves_reaching(g, &state, score.signum());
    if best.is_empty() {
        return Err(format!(
            "{name}: `{moves}` scores {score}, and no move reaches its sign"
        ));
    }
    Ok(C4Test { state, value, best })
}

/// The optimal columns (0-based actions) of a book line `moves COLUMNS` whose moves are
/// `moves`; `None` when the line is not that.
fn book_moves(entry: &str, moves: &str) -> Option<Vec<Action>> {
    let (m, cols) = entry.split_once(' ')?;
    if m != moves || cols.is_empty() {
        return None;
    }
    cols.bytes()
        .map(|c| (b'1'..=b'7').contains(&c).then(|| Action::from(c - b'1')))
        .collect()
}

/// The legal moves of a 7x6 position whose exact value for the mover is at least `sign`
/// (one null-window search per move on this thread's solver).
fn moves_reaching(g: &ConnectFour, s: &C4State, sign: i32) -> Vec<Action> {
    with_thread_solver(g, |solver| {
        solver
            .moves_reaching(g.key(s), sign)
            .into_iter()
            .map(|c| c as Action)
            .collect()
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::connect4::solver::C4Solver;

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

    /// The optimal moves by sign (win, draw or loss of every move: up to two null-window
    /// searches a move), the independent path the books and `moves_reaching` are checked
    /// against.
    fn by_signs(g: &ConnectFour, line: &str) -> (Vec<Action>, f64) {
        let (moves, score) = line.split_once(' ').unwrap();
        let score: i32 = score.parse().unwrap();
        let state = g.parse_moves(moves).unwrap();
        let mut solver = C4Solver::new(g, 20).unwrap();
        let signs = solver.move_signs(g.key(&state));
        let top = signs.iter().map(|v| v.1).max().unwrap();
        assert_eq!(top, score.signum(), "`{line}`");
        let best = signs.iter().filter(|v| v.1 == top).map(|v| v.0 as Action);
        (best.collect(), (f64::from(top) + 1.0) / 2.0)
    }

    /// One null-window search a move finds the moves that keep the position's value: the same
    /// moves as telling every move's sign, on positions of each stage of the game.
    #[test]
    fn moves_reaching_the_sign_are_the_optimal_moves() {
        let g = ConnectFour::new(7, 6).unwrap();
        for (name, step) in [("L3_R1", 50), ("L2_R1", 50), ("L2_R2", 100)] {
            let (_, text) = C4_SETS.iter().find(|(s, _)| *s == name).unwrap();
            let mut kinds = [0; 3];
            for line in text.lines().step_by(step) {
                let t = test_position(&g, name, line, None).unwrap();
                let (best, value) = by_signs(&g, line);
                assert_eq!((&t.best, t.value), (&best, value), "{name}: `{line}`");
                kinds[(value * 2.0) as usize] += 1;
            }
            assert!(
                kinds.iter().filter(|k| **k > 0).count() >= 2,
                "{name}: {kinds:?}"
            );
        }
    }

    /// Every book's first positions, solved again by sign: the same optimal moves.
    #[test]
    fn the_books_agree_with_the_exact_solver() {
        let g = ConnectFour::new(7, 6).unwrap();
        // (set, positions solved again): the first five of the begin-easy book, four of the
        // first six of begin-medium (its two slowest left out) and three of the four quickest
        // of begin-hard (whose first position takes a minute): 12 positions, a won one in
        // each set. It checked 50 (the first forty of begin-easy among them), about a minute
        // of CI's time; the test sets' values are tests/connect4_solver.rs's.
        let first = |n: usize| (0..n).collect::<Vec<_>>();
        for (name, picks) in [
            ("L1_R1", first(5)),
            ("L1_R2", vec![1, 3, 4, 5]),
            ("L1_R3", vec![58, 694, 699]),
        ] {
            let (_, text) = C4_SETS.iter().find(|(s, _)| *s == name).unwrap();
            let (_, book) = C4_BOOKS.iter().find(|(s, _)| *s == name).unwrap();
            let (text, book): (Vec<&str>, Vec<&str>) =
                (text.lines().collect(), book.lines().collect());
            let mut checked = 0;
            for &i in &picks {
                let (line, entry) = (text[i], book[i]);
                let booked = test_position(&g, name, line, Some(entry)).unwrap();
                let (best, value) = by_signs(&g, line);
                assert_eq!(
                    (&booked.best, booked.value),
                    (&best, value),
                    "{name}: `{line}`"
                );
                checked += usize::from(value > 0.0);
            }
            assert!(checked > 0, "{name}: no won or drawn position was solved");
        }
        // The books are whole.
        for (name, book) in C4_BOOKS {
            assert_eq!(book.lines().count(), 1000, "{name}");
        }
        // A line whose moves are not the position's, or whose column is illegal, is refused.
        let line = C4_SETS[3].1.lines().next().unwrap();
        let moves = line.split(' ').next().unwrap();
        assert!(test_position(&g, "L1_R1", line, Some("1 4")).is_err());
        assert!(test_position(&g, "L1_R1", line, Some(&format!("{moves} 8"))).is_err());
        assert!(test_position(&g, "L1_R1", line, Some(&format!("{moves} "))).is_err());
    }
}
