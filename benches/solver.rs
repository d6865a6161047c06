//! Exact solves (`cargo bench --bench solver`): CDC PPPP and EWN 3x3x3 whole, timed without
//! the store. `tabula solve --all` with `/usr/bin/time -v` gives the larger variants' time and
//! peak memory (see the solver issue's note).

use criterion::{Criterion, criterion_group, criterion_main};
use tabula::games::AnyGame;
use tabula::solver::{Progress, solve};
use tabula::with_solvable_game;

fn quiet(_: Progress) {}

fn solves(c: &mut Criterion) {
    let mut group = c.benchmark_group("solve");
    group.sample_size(10);
    for v in ["cdc:PPPP", "ewn:3x3x3", "c4:4x4"] {
        let game: AnyGame = v.parse().expect("valid variant");
        group.bench_function(v, |b| {
            b.iter(|| {
                with_solvable_game!(
                    &game,
                    |g| solve(g, &quiet).expect("solvable").len(),
                    |_other| unreachable!()
                )
            })
        });
    }
    group.finish();
}

criterion_group!(benches, solves);
criterion_main!(benches);
