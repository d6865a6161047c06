//! Connect Four 7x6 exact search (`cargo bench --bench connect4`): mean time per position of
//! each public test set, to set beside the published times of Pons' solver (the data README:
//! L3_R1 4.6 us, L2_R1 37 us, L2_R2 3.2 ms, L1_R1 255 us, L1_R2 97 ms).
//!
//! Each iteration solves the next position of the file (cycling), with one solver (2^24
//! table entries) kept across the iterations of a set, as a program answering queries would;
//! positions do not repeat before the file is exhausted. `examples/c4_testsets.rs` runs whole
//! files once and checks every score.

use criterion::{Criterion, criterion_group, criterion_main};
use tabula::game::Game;
use tabula::games::ConnectFour;
use tabula::games::connect4::solver::{C4Solver, DEFAULT_TABLE_BITS};

fn positions(g: &ConnectFour, name: &str) -> Vec<(u64, i32)> {
    let path = format!(
        "{}/../tests/data/connect4/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("test file");
    text.lines()
        .map(|l| {
            let (moves, score) = l.split_once(' ').expect("moves score");
            let s = g.parse_moves(moves).expect("legal");
            (g.key(&s), score.trim().parse().expect("score"))
        })
        .collect()
}

fn test_sets(c: &mut Criterion) {
    let g = ConnectFour::new(7, 6).expect("7x6");
    let mut group = c.benchmark_group("c4-7x6");
    group.sample_size(10);
    for name in [
        "Test_L3_R1",
        "Test_L2_R1",
        "Test_L1_R1",
        "Test_L2_R2",
        "Test_L1_R2",
    ] {
        let set = positions(&g, name);
        let mut solver = C4Solver::new(&g, DEFAULT_TABLE_BITS).expect("7x6 fits");
        let mut i = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                let (key, want) = set[i % set.len()];
                i += 1;
                let got = solver.score(key);
                assert_eq!(got, want);
                got
            })
        });
    }
    group.finish();
}

criterion_group!(benches, test_sets);
criterion_main!(benches);
