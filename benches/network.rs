//! The network learner on Connect Four 7x6 (`cargo bench --bench network`): inference of a
//! small MLP and a small residual net, one position and a batch of 64 (throughput in
//! positions), and one self-play game at 50 simulations a move. `examples/network_throughput.rs`
//! prints the same rates and self-play on 1 and 2 threads (docs/network.md).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tabula::game::{Game, Turn};
use tabula::games::ConnectFour;
use tabula::learners::Learner;
use tabula::learners::network::Network;
use tabula::runs::RunConfig;
use tabula::search::Search;

fn network(c: &mut Criterion) {
    let g = ConnectFour::new(7, 6).expect("7x6");
    // Positions along one game (the lowest legal column after a rotation).
    let mut states = Vec::new();
    let mut s = g.initial_state();
    let mut legal = Vec::new();
    while let Turn::Player(_) = g.turn(&s) {
        states.push(s);
        g.legal_actions(&s, &mut legal);
        s = g.apply(&s, legal[states.len() * 3 % legal.len()]);
    }
    let batch: Vec<_> = states.iter().cycle().take(64).copied().collect();
    let mut group = c.benchmark_group("network-c4-7x6");
    group.sample_size(10);
    for (label, net) in [
        ("mlp64x64", "arch = \"mlp\"\nhidden = [64, 64]"),
        ("res2x16", "arch = \"resnet\"\nblocks = 2\nchannels = 16"),
    ] {
        let spec = format!(
            "variant = \"c4:7x6\"\nseed = 1\niterations = 1\n[search]\nsimulations = 50\n\
             [eval]\nwr_p = false\nerrors = false\n[learner]\nkind = \"network\"\n\
             [learner.network]\n{net}\n"
        );
        let cfg = RunConfig::from_toml(&spec, "network").expect("valid spec");
        let model = Network::new(&g, cfg.learner_context(1)).expect("a network");
        let (mut values, mut logits) = (Vec::new(), Vec::new());
        for n in [1usize, 64] {
            group.throughput(Throughput::Elements(n as u64));
            group.bench_function(format!("{label}/infer-batch-{n}"), |b| {
                b.iter(|| {
                    model.infer_batch(
                        batch[..n].iter().map(|s| (s, &[][..])),
                        &mut values,
                        &mut logits,
                    );
                    values[0]
                })
            });
        }
        group.throughput(Throughput::Elements(1));
        let mut search = Search::new(cfg.settings.search).expect("search");
        let mut eval = model.eval();
        let mut i = 0;
        group.bench_function(format!("{label}/self-play-game-50-sims"), |b| {
            b.iter(|| {
                i += 1;
                let slot = tabula::rng::GameSlot::new(1, 1, i);
                tabula::selfplay::self_play_game(&g, &mut search, &mut eval, slot, None, None)
                    .expect("self-play")
                    .steps
                    .len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, network);
criterion_main!(benches);
