//! Cost of the reference metrics' one-off work: solving the optimal moves of the Connect Four
//! test sets, once per process (`cargo run --release --example c4_reference_cost -- [N]
//! [SET ...]`, N positions a set, default 100; sets default L3_R1 L2_R1 L2_R2; the L1 sets
//! take seconds per position).
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let mut sets: Vec<String> = std::env::args().skip(2).collect();
    if sets.is_empty() {
        sets = ["L3_R1", "L2_R1", "L2_R2"].map(String::from).to_vec();
    }
    for set in &sets {
        let t = Instant::now();
        let tests = tabula::games::connect4::test_sets::c4_test_set(set, n).expect("set");
        println!(
            "{set}: {} positions, optimal moves in {:.2} s",
            tests.len(),
            t.elapsed().as_secs_f64()
        );
    }
}
