//! Precomputes the optimal moves of Connect Four 7x6 test positions, the book that
//! `games::connect4::test_sets` reads instead of solving them again (docs/metrics.md,
//! "Reference metrics"): the opening sets cost the exact solver seconds a position, hours a
//! set, so their optimal moves are computed once, here, and embedded.
//!
//!     cargo run --release --example c4_best_moves -- L1_R3 [--from N] [--to N] \
//!         >> tests/data/connect4/Test_L1_R3.best
//!
//! One line per position, in the set's order: the position's moves as in the set file, a
//! space, the optimal columns (1-based digits, ascending). A lost position's optimal moves are
//! all its legal moves (nothing to solve); otherwise the moves whose value reaches the sign
//! of the file's score (one null-window search per move, `C4Solver::moves_reaching`). Lines are written as they are found, so a killed run resumes
//! with `--from` the number of lines already written. One solver (one thread), kept across
//! positions so that its table keeps helping. Each position's index and solving time go to
//! stderr.

use tabula::game::Game;
use tabula::games::ConnectFour;
use tabula::games::connect4::solver::{C4Solver, DEFAULT_TABLE_BITS};

fn main() {
    let mut args = std::env::args().skip(1);
    let set = args
        .next()
        .expect("usage: c4_best_moves SET [--from N] [--to N]");
    let (mut from, mut to) = (0usize, usize::MAX);
    while let Some(a) = args.next() {
        let n = args.next().and_then(|n| n.parse().ok()).expect("a number");
        match a.as_str() {
            "--from" => from = n,
            "--to" => to = n,
            other => panic!("unknown argument {other}"),
        }
    }
    let path = format!("tests/data/connect4/Test_{set}");
    let text = std::fs::read_to_string(&path).expect("the set's file");
    let g = ConnectFour::new(7, 6).expect("7x6");
    let mut solver = C4Solver::new(&g, DEFAULT_TABLE_BITS).expect("solver");
    for (i, line) in text
        .lines()
        .enumerate()
        .skip(from)
        .take(to.saturating_sub(from))
    {
        let t = std::time::Instant::now();
        let (moves, score) = line.split_once(' ').expect("`moves score`");
        let score: i32 = score.trim().parse().expect("score");
        let state = g.parse_moves(moves).expect("position");
        let best: Vec<usize> = if score < 0 {
            let mut legal = Vec::new();
            g.legal_actions(&state, &mut legal);
            legal.iter().map(|&a| a as usize).collect()
        } else {
            let best = solver.moves_reaching(g.key(&state), score.signum());
            assert!(!best.is_empty(), "{set}: `{moves}` scores {score}");
            best
        };
        let cols: String = best.iter().map(|c| char::from(b'1' + *c as u8)).collect();
        // Rust's stdout is line-buffered: each line is out before the next solve.
        println!("{moves} {cols}");
        eprintln!("{set} {i} {:.3} s", t.elapsed().as_secs_f64());
    }
}
