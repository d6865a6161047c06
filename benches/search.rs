//! Search speed (`cargo bench --bench search`): simulations per second.
//!
//! - `mcts_rollout`: PUCT with one random rollout per leaf, as in the comparison with
//!   OpenSpiel's `MCTSBot` + `RandomRolloutEvaluator(1)` (`benches/openspiel_compare.py`):
//!   Connect Four 7x6 from the empty board, EWN 5x5x6 after the placements.
//! - `mcts_uniform`: PUCT with the uniform evaluator on CDC PPPP from the start, one search on
//!   one core, and two independent searches on two cores (one per rayon worker).
//! - `mcts_solver`: MCTS-Solver on Connect Four 7x6 from the empty board.
//!
//! One iteration = one search of `SIMS` simulations (throughput in simulations).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tabula::game::{Game, Turn};
use tabula::games::AnyGame;
use tabula::rng::{sample_outcome, stream};
use tabula::search::{MctsSolver, Rollout, Search, SearchConfig, SolverConfig, Uniform};
use tabula::with_game;

const SIMS: u32 = 10_000;

/// The first decision state from the start (chance resolved by the stream).
fn first_decision<G: Game>(g: &G) -> G::State {
    let mut rng = stream(0, "bench(start)");
    let mut s = g.initial_state();
    let mut outcomes = Vec::new();
    while let Turn::Chance = g.turn(&s) {
        g.chance_outcomes(&s, &mut outcomes);
        s = g.apply_chance(&s, outcomes[sample_outcome(&mut rng, &outcomes)].outcome);
    }
    s
}

fn rollout<G: Game>(c: &mut Criterion, g: &G) {
    let mut group = c.benchmark_group("mcts_rollout");
    group.throughput(Throughput::Elements(u64::from(SIMS)));
    let s = first_decision(g);
    let mut search = Search::new(SearchConfig::evaluation(SIMS)).unwrap();
    let mut eval = Rollout::new(1);
    let mut rng = stream(0, "bench(search)");
    group.bench_function(BenchmarkId::from_parameter(g.variant()), |b| {
        b.iter(|| search.run(g, &s, &[], 0, &mut eval, &mut rng).unwrap())
    });
    group.finish();
}

fn uniform<G: Game>(c: &mut Criterion, g: &G) {
    let mut group = c.benchmark_group("mcts_uniform");
    let s = first_decision(g);
    for threads in [1usize, 2] {
        group.throughput(Throughput::Elements(u64::from(SIMS) * threads as u64));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let id = BenchmarkId::new(g.variant(), format!("{threads} cores"));
        group.bench_function(id, |b| {
            b.iter(|| {
                pool.broadcast(|ctx| {
                    let mut search = Search::<G>::new(SearchConfig::evaluation(SIMS)).unwrap();
                    let mut rng = stream(ctx.index() as u64, "bench(uniform)");
                    search
                        .run(g, &s, &[], 0, &mut Uniform, &mut rng)
                        .unwrap()
                        .visits[0]
                })
            })
        });
    }
    group.finish();
}

fn solver<G: Game>(c: &mut Criterion, g: &G) {
    let mut group = c.benchmark_group("mcts_solver");
    group.throughput(Throughput::Elements(u64::from(SIMS)));
    let s = first_decision(g);
    let mut m = MctsSolver::new(SolverConfig {
        simulations: SIMS,
        uct_c: 1.0,
        ..SolverConfig::default()
    });
    let mut rng = stream(0, "bench(solver)");
    group.bench_function(BenchmarkId::from_parameter(g.variant()), |b| {
        b.iter(|| m.run(g, &s, &mut rng).unwrap())
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    for v in ["c4:7x6", "ewn:5x5x6"] {
        let game: AnyGame = v.parse().expect("benchmark variants are valid");
        with_game!(&game, |g| rollout(c, g));
    }
    let game: AnyGame = "cdc:PPPP".parse().expect("valid");
    with_game!(&game, |g| uniform(c, g));
    let game: AnyGame = "c4:7x6".parse().expect("valid");
    with_game!(&game, |g| solver(c, g));
}

criterion_group!(benches_group, benches);
criterion_main!(benches_group);
