//! Mean time per position of the Connect Four test sets (`tests/data/connect4/`), beside the
//! published times of Pons' solver (the data README):
//!
//!     cargo run --release --example c4_testsets -- [FILE ...] [--first N] [--bits B]
//!
//! One solver (one transposition table, 2^B entries, B = 24 by default) per file, reused across its positions;
//! every score is checked against the file. Prints file, positions, mean microseconds, mean
//! nodes.

use std::time::Instant;

use tabula::game::Game;
use tabula::games::connect4::solver::{C4Solver, DEFAULT_TABLE_BITS};

fn main() {
    let mut files = Vec::new();
    let mut first = usize::MAX;
    let mut bits = DEFAULT_TABLE_BITS;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--first" {
            first = args
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(usize::MAX);
        } else if a == "--bits" {
            bits = args
                .next()
                .and_then(|n| n.parse().ok())
                .expect("--bits takes a number of bits (10..=30)");
        } else {
            files.push(a);
        }
    }
    if files.is_empty() {
        for f in [
            "Test_L3_R1",
            "Test_L2_R1",
            "Test_L2_R2",
            "Test_L1_R1",
            "Test_L1_R2",
        ] {
            files.push(format!("tests/data/connect4/{f}"));
        }
    }
    let g = tabula::games::ConnectFour::new(7, 6).expect("7x6");
    println!(
        "{:<12} {:>9} {:>14} {:>12}",
        "file", "positions", "mean us", "mean nodes"
    );
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        let mut solver = C4Solver::new(&g, bits).expect("7x6 fits");
        let (mut n, mut secs) = (0usize, 0.0f64);
        for line in text.lines().take(first) {
            let (moves, score) = line.split_once(' ').expect("moves score");
            let want: i32 = score.trim().parse().expect("score");
            let key = g.key(&g.parse_moves(moves).expect("legal"));
            let t = Instant::now();
            let got = solver.score(key);
            secs += t.elapsed().as_secs_f64();
            assert_eq!(got, want, "{f}: {moves}");
            n += 1;
        }
        let name = f.rsplit('/').next().unwrap_or(f);
        println!(
            "{:<12} {:>9} {:>14.1} {:>12.0}",
            name,
            n,
            secs / n as f64 * 1e6,
            solver.nodes() as f64 / n as f64
        );
    }
}
