//! Simulations per second of tabula's searches, for `benches/openspiel_compare.py`.
//!
//! `cargo run --release --example search_speed -- VARIANT SIMS SECONDS [puct|solver]`
//! repeats one search of SIMS simulations (one random rollout per leaf) from the variant's
//! first decision state (chance resolved by a fixed stream) for about SECONDS seconds on the
//! calling thread, and prints one JSON line.

use std::time::Instant;

use tabula::game::{Game, Turn};
use tabula::games::AnyGame;
use tabula::rng::{sample_outcome, stream};
use tabula::search::{MctsSolver, Rollout, Search, SearchConfig, SolverConfig};
use tabula::thread_cpu_seconds;
use tabula::with_game;

fn first_decision<G: Game>(g: &G) -> G::State {
    let mut rng = stream(0, "speed(start)");
    let mut s = g.initial_state();
    let mut outcomes = Vec::new();
    while let Turn::Chance = g.turn(&s) {
        g.chance_outcomes(&s, &mut outcomes);
        s = g.apply_chance(&s, outcomes[sample_outcome(&mut rng, &outcomes)].outcome);
    }
    s
}

/// Simulations done, wall seconds and CPU seconds.
fn measure<G: Game>(g: &G, sims: u32, seconds: f64, solver: bool) -> (u64, f64, f64) {
    let s = first_decision(g);
    let mut rng = stream(0, "speed(search)");
    let mut search = Search::new(SearchConfig::evaluation(sims)).expect("valid config");
    let mut eval = Rollout::new(1);
    let mut m = MctsSolver::new(SolverConfig {
        simulations: sims,
        uct_c: 1.0,
        ..SolverConfig::default()
    });
    let t = Instant::now();
    let cpu = thread_cpu_seconds();
    let mut done = 0u64;
    while t.elapsed().as_secs_f64() < seconds {
        if solver {
            done += u64::from(m.run(g, &s, &mut rng).expect("decision state").simulations);
        } else {
            search
                .run(g, &s, &[], 0, &mut eval, &mut rng)
                .expect("decision state");
            done += u64::from(sims);
        }
    }
    (done, t.elapsed().as_secs_f64(), thread_cpu_seconds() - cpu)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        anyhow::bail!("usage: search_speed VARIANT SIMS SECONDS [puct|solver]");
    }
    let game: AnyGame = args[0].parse()?;
    let sims: u32 = args[1].parse()?;
    let seconds: f64 = args[2].parse()?;
    let solver = args.get(3).is_some_and(|m| m == "solver");
    let (done, secs, cpu) = with_game!(&game, |g| measure(g, sims, seconds, solver));
    println!(
        "{}",
        serde_json::json!({
            "engine": "tabula",
            "search": if solver { "mcts-solver" } else { "puct" },
            "variant": game.variant(),
            "simulations_per_search": sims,
            "simulations": done,
            "seconds": secs,
            "sims_per_second": done as f64 / secs,
            "cpu_seconds": cpu,
            "sims_per_cpu_second": done as f64 / cpu,
        })
    );
    Ok(())
}
