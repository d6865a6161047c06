//! Random playouts per second for each variant (`make bench`, or
//! `cargo bench --bench playouts`). One iteration = one complete random game from the start,
//! chance included, on a reused scratch buffer.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tabula::game::Game;
use tabula::games::AnyGame;
use tabula::play::{Scratch, random_playout};
use tabula::rng::stream;
use tabula::with_game;

const VARIANTS: &[&str] = &[
    "cdc:PPPP",
    "cdc:KPPP",
    "cdc:GGCC",
    "cdc:4x8",
    "ewn:3x3x3",
    "ewn:3x3x4",
    "ewn:5x5x6",
    "c4:7x6",
    "c4:5x4",
    "checkers:5x5-3",
    "checkers:7x7-6",
    "go:9x9",
];

fn bench<G: Game>(c: &mut Criterion, g: &G) {
    let mut group = c.benchmark_group("random_playout");
    group.throughput(Throughput::Elements(1));
    let mut rng = stream(0, "bench(playouts)");
    let mut scratch = Scratch::new();
    group.bench_function(BenchmarkId::from_parameter(g.variant()), |b| {
        b.iter(|| random_playout(g, g.initial_state(), &mut rng, &mut scratch))
    });
    group.finish();
}

fn playouts(c: &mut Criterion) {
    for v in VARIANTS {
        let game: AnyGame = v.parse().expect("benchmark variants are valid");
        with_game!(&game, |g| bench(c, g));
    }
}

criterion_group!(benches, playouts);
criterion_main!(benches);
