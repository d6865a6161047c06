//! The exact Connect Four search against known answers (`docs/solver.md`, "Connect Four"):
//! - every position of the public test sets `Test_L3_R1`, `Test_L2_R1`, `Test_L1_R1` and the
//!   first 100 of `Test_L2_R2` and `Test_L1_R2` (`tests/data/connect4/`) gets exactly the
//!   file's score (the full R2 sets and `Test_L1_R3` take too long for CI; the example
//!   `c4_testsets` runs them);
//! - on 4x4 and 5x4 the search agrees with the enumerating solver on every position: the
//!   sign of each move's score is the solution's action value;
//! - `tabula value c4:7x6` prints the score, value and every move's score, takes column
//!   strings and refuses illegal ones naming the move;
//! - the optimal player plays c4:7x6 through the search.

use std::process::Command;

use tabula::game::{Game, Turn};
use tabula::games::ConnectFour;
use tabula::games::connect4::solver::{C4Solver, DEFAULT_TABLE_BITS, score_to_value};
use tabula::solver::{Progress, action_values, solve};

/// Table bits for the tests: 2^22 entries per solver, several run at once. On 7x6 a table
/// this small holds 64-bit entries (32 MiB); `middle_game_positions_l2_r1` uses the default
/// 2^24 entries, which hold 32-bit entries (64 MiB), so both entry widths are checked.
const BITS: u32 = 22;

fn c4(w: u32, h: u32) -> ConnectFour {
    ConnectFour::new(w, h).unwrap()
}

/// Checks the first `n` positions of a test file with a table of 2^`bits` entries; returns
/// how many were checked.
fn check_file(name: &str, n: usize, bits: u32) -> usize {
    let path = format!("{}/tests/data/connect4/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let g = c4(7, 6);
    let mut solver = C4Solver::new(&g, bits).unwrap();
    let mut checked = 0;
    for line in text.lines().take(n) {
        let (moves, score) = line.split_once(' ').expect("`moves score`");
        let want: i32 = score.trim().parse().expect("a score");
        let s = g.parse_moves(moves).expect("a legal game");
        assert_eq!(solver.score(g.key(&s)), want, "{name}: position {moves}");
        checked += 1;
    }
    checked
}

#[test]
fn end_game_positions_l3_r1() {
    assert_eq!(check_file("Test_L3_R1", usize::MAX, BITS), 1000);
}

#[test]
fn middle_game_positions_l2_r1() {
    assert_eq!(
        check_file("Test_L2_R1", usize::MAX, DEFAULT_TABLE_BITS),
        1000
    );
}

#[test]
fn opening_positions_l1_r1() {
    assert_eq!(check_file("Test_L1_R1", usize::MAX, BITS), 1000);
}

#[test]
fn middle_game_positions_l2_r2_first_100() {
    assert_eq!(check_file("Test_L2_R2", 100, BITS), 100);
}

/// The opening set's first 40 (7- to 14-ply positions, about 0.1 s of search each: the
/// dearest set per position; the example `c4_testsets` checks all 1,000).
#[test]
fn opening_positions_l1_r2_first_40() {
    assert_eq!(check_file("Test_L1_R2", 40, BITS), 40);
}

/// Move scores: the best is the position's score, and a move's score is minus the score of
/// the position it leads to (or the immediate win).
#[test]
fn move_scores_agree_with_position_scores() {
    let g = c4(7, 6);
    let mut solver = C4Solver::new(&g, BITS).unwrap();
    for moves in [
        "4455",
        "44455554221",
        "2252576253462244111563365343671351441",
    ] {
        let s = g.parse_moves(moves).unwrap();
        let scores = solver.move_scores(g.key(&s));
        let best = scores.iter().map(|m| m.1).max().unwrap();
        assert_eq!(best, solver.score(g.key(&s)), "{moves}");
        for &(c, sc) in &scores {
            let t = g.apply(&s, c as u16);
            match g.turn(&t) {
                Turn::Terminal(_) => assert!(sc > 0, "{moves} col {}", c + 1),
                _ => assert_eq!(sc, -solver.score(g.key(&t)), "{moves} col {}", c + 1),
            }
        }
    }
    // Published examples: 4455 scores 18, 44455554221 scores -15.
    assert_eq!(solver.score(g.key(&g.parse_moves("4455").unwrap())), 18);
    assert_eq!(
        solver.score(g.key(&g.parse_moves("44455554221").unwrap())),
        -15
    );
}

/// On boards the table solver enumerates, every position's move scores have the signs of
/// the exact action values.
#[test]
fn agrees_with_the_enumerating_solver_on_small_boards() {
    for (w, h) in [(4, 4), (5, 4)] {
        let g = c4(w, h);
        let sol = solve(&g, &|_: Progress| {}).unwrap();
        let mut solver = C4Solver::new(&g, 16).unwrap();
        let mut checked = 0;
        // Every 7th position keeps the test short; 4x4 has 161,029 positions.
        for &k in sol.keys().iter().step_by(7) {
            let s = g.state_from_key(k).unwrap();
            let exact = action_values(&g, &sol, &s).unwrap();
            let searched = solver.move_scores(k);
            assert_eq!(exact.len(), searched.len());
            for ((a, v), (c, sc)) in exact.iter().zip(&searched) {
                assert_eq!(*a as usize, *c);
                assert_eq!(*v, score_to_value(*sc), "c4:{w}x{h} {k:#x} col {}", c + 1);
            }
            checked += 1;
        }
        assert!(checked > 1000);
    }
}

fn tabula(args: &[&str]) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tabula"))
        .args(args)
        .arg("--db")
        .arg(dir.path().join("t.db"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn value_command_scores_every_move() {
    // The first Test_L3_R1 position (score -1 in the file) in both input forms.
    let moves = "2252576253462244111563365343671351441";
    let (ok, out, err) = tabula(&["value", "c4:7x6", moves, "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["score"], -1);
    assert_eq!(v["value"], 0.0);
    let list = v["moves"].as_array().unwrap();
    assert!(!list.is_empty());
    let best = list.iter().map(|m| m["score"].as_i64().unwrap()).max();
    assert_eq!(best, Some(-1));
    let notation = v["position"].as_str().unwrap().to_string();
    let (ok, out2, err) = tabula(&["value", "c4:7x6", &notation, "--json"]);
    assert!(ok, "{err}");
    let v2: serde_json::Value = serde_json::from_str(&out2).unwrap();
    assert_eq!(v2["moves"], v["moves"]);
}

#[test]
fn value_command_refuses_illegal_sequences_naming_the_move() {
    for (moves, needle) in [
        ("4444444", "move 7 (4): column 4 is full"),
        ("12121212", "move 8 (2) comes after the game ended"),
        ("4480", "move 3 is `8`"),
        ("4404", "move 3 is `0`"),
    ] {
        let (ok, _, err) = tabula(&["value", "c4:7x6", moves]);
        assert!(!ok, "{moves} was accepted");
        assert!(err.contains(needle), "{moves}: {err}");
    }
    // A finished game has no move to value.
    let (ok, _, err) = tabula(&["value", "c4:7x6", "1212121"]);
    assert!(!ok);
    assert!(err.contains("not a decision position"), "{err}");
}

#[test]
fn optimal_player_plays_7x6_by_search() {
    use tabula::players::{Decision, Player, PlayerSpec};
    use tabula::rng::stream;
    let g = c4(7, 6);
    let player = Player::<ConnectFour>::resolve(&PlayerSpec::Optimal, &g, None).unwrap();
    let mut agent = player.agent();
    let mut rng = stream(1, "optimal-c4");
    // 44455554221 scores -15 for the side to move: every move loses, so it plays one.
    let s = g.parse_moves("44455554221").unwrap();
    assert!(matches!(
        agent.decide(&g, &s, &[], 11, &mut rng).unwrap(),
        Decision::Play { .. }
    ));
    // 4455 is a win for the side to move: the optimal player claims it at once.
    let s = g.parse_moves("4455").unwrap();
    assert_eq!(
        agent.decide(&g, &s, &[], 4, &mut rng).unwrap(),
        Decision::ClaimWin
    );
    // A drawn position (score 0): it plays one of the drawing moves.
    let s = g
        .parse_moves("274552224131661")
        .expect("a Test_L2_R2 position");
    let exact = C4Solver::new(&g, BITS).unwrap().move_scores(g.key(&s));
    for seed in 0..4 {
        let mut rng = stream(seed, "optimal-c4");
        match agent.decide(&g, &s, &[], 15, &mut rng).unwrap() {
            Decision::Play { action, .. } => {
                let sc = exact.iter().find(|m| m.0 == action as usize).unwrap().1;
                assert_eq!(sc, 0, "the optimal player chose a losing move");
            }
            other => panic!("{other:?}"),
        }
    }
}
