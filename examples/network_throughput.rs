//! Throughput of the network learner on Connect Four 7x6 (docs/network.md): inference
//! positions per second at batch 1 and 64, and self-play games per second (PUCT guided by the
//! untrained network, the run defaults but `simulations`) on 1 and 2 threads, one game after
//! another and with leaves batched across `lanes` games per worker (`selfplay`; the
//! records are checked equal), for a small MLP and a small residual net.
//!
//! `cargo run --release --example network_throughput [simulations] [games] [lanes]`
//! (default 50, 64, 32).

use std::time::Instant;

use rayon::prelude::*;
use tabula::game::{Game, Turn};
use tabula::game_record::GameRecord;
use tabula::games::ConnectFour;
use tabula::learners::Learner;
use tabula::learners::network::Network;
use tabula::runs::RunConfig;
use tabula::search::Search;
use tabula::selfplay::{LaneGame, self_play_lanes};

/// Decision states of a few random-ish games (every move the lowest legal column after a
/// rotation), as inference inputs.
fn positions(g: &ConnectFour, n: usize) -> Vec<<ConnectFour as Game>::State> {
    let mut out = Vec::new();
    let mut legal = Vec::new();
    let mut k = 0usize;
    while out.len() < n {
        let mut s = g.initial_state();
        while let Turn::Player(_) = g.turn(&s) {
            out.push(s);
            g.legal_actions(&s, &mut legal);
            k = k.wrapping_mul(31).wrapping_add(7);
            s = g.apply(&s, legal[k % legal.len()]);
        }
    }
    out.truncate(n);
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sims: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let games: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(64);
    let lanes: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(32);
    let g = ConnectFour::new(7, 6).expect("7x6");
    for (label, net) in [
        ("mlp [64, 64]", "arch = \"mlp\"\nhidden = [64, 64]"),
        (
            "resnet 2 blocks x 16 channels",
            "arch = \"resnet\"\nblocks = 2\nchannels = 16",
        ),
    ] {
        let spec = format!(
            "variant = \"c4:7x6\"\nseed = 1\niterations = 1\n[search]\nsimulations = {sims}\n\
             [eval]\nwr_p = false\nerrors = false\n[learner]\nkind = \"network\"\n\
             [learner.network]\n{net}\n"
        );
        let cfg = RunConfig::from_toml(&spec, "network").expect("valid spec");
        let model = Network::new(&g, cfg.learner_context(1)).expect("a network");
        println!("{label}: {} parameters", model.parameters());
        let states = positions(&g, 64 * 64);
        let (mut values, mut logits) = (Vec::new(), Vec::new());
        for batch in [1usize, 64] {
            let t = Instant::now();
            let mut done = 0usize;
            while t.elapsed().as_secs_f64() < 1.0 {
                for chunk in states.chunks(batch) {
                    model.infer_batch(chunk.iter().map(|s| (s, &[][..])), &mut values, &mut logits);
                    done += chunk.len();
                }
            }
            let rate = done as f64 / t.elapsed().as_secs_f64();
            println!("  inference, batch {batch:>2}: {rate:>10.0} positions/s (one thread)");
        }
        for threads in [1usize, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let t = Instant::now();
            let alone: Vec<GameRecord> = pool.install(|| {
                (0..games)
                    .into_par_iter()
                    .map_init(
                        || {
                            (
                                Search::new(cfg.settings.search).expect("search"),
                                model.eval(),
                            )
                        },
                        |(search, eval), i| {
                            let slot = tabula::rng::GameSlot::new(1, 1, i);
                            tabula::selfplay::self_play_game(&g, search, eval, slot, None, None)
                                .expect("self-play")
                        },
                    )
                    .collect()
            });
            let secs_alone = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let ids: Vec<LaneGame<_>> = (0..games)
                .map(|game| LaneGame {
                    slot: tabula::rng::GameSlot::new(1, 1, game),
                    start: None,
                    tree: false,
                })
                .collect();
            let batched: Vec<GameRecord> = pool.install(|| {
                ids.par_chunks(lanes)
                    .flat_map_iter(|chunk| {
                        let mut eval = model.eval();
                        self_play_lanes(&g, cfg.settings.search, &mut eval, chunk, lanes)
                            .expect("self-play")
                            .into_iter()
                            .map(|p| p.record)
                    })
                    .collect()
            });
            let secs_batched = t.elapsed().as_secs_f64();
            assert!(alone == batched, "batched self-play changed a game");
            let moves: usize = alone.iter().map(|r| r.steps.len()).sum();
            println!(
                "  self-play, {threads} thread(s): {:>8.2} games/s one at a time, {:>8.2} \
                 batched across {lanes} games ({sims} simulations a move, {:.1} moves a game)",
                f64::from(games) / secs_alone,
                f64::from(games) / secs_batched,
                moves as f64 / f64::from(games)
            );
        }
    }
}
