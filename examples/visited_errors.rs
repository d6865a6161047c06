//! ERR_p and MAE_v of several models over every position any of their runs visited (issue 13's
//! "error over every position either learner visited"; docs/network.md, "Network against
//! table").
//!
//! ```sh
//! cargo run --release --example visited_errors -- STORE VARIANT RUN@I [RUN@I ...]
//! ```
//!
//! The position set is the union of the decision positions on the trajectories of each run's
//! self-play games up to its iteration I (first met first); each model is measured on all of
//! it against the exact solution (solved into the store if needed). Prints one JSON line per
//! model: run, iteration, positions, err_p, mae_v.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use tabula::eval::Truth;
use tabula::games::AnyGame;
use tabula::runs::{model_errors, visited_positions};
use tabula::store::Store;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        bail!("usage: visited_errors STORE VARIANT RUN@I [RUN@I ...]");
    }
    let mut store = Store::open(Path::new(&args[0]))?;
    let game: AnyGame = args[1].parse()?;
    let targets: Vec<(String, u32)> = args[2..]
        .iter()
        .map(|t| {
            let (r, i) = t.rsplit_once('@').context("give RUN@I")?;
            Ok((r.to_string(), i.parse().context("I: an iteration number")?))
        })
        .collect::<anyhow::Result<_>>()?;
    tabula::with_solvable_game!(game, |g| run(&g, &mut store, &targets), |other| bail!(
        "{} has no exact solution",
        other.variant()
    ))
}

fn run<G: tabula::solver::Solvable + tabula::games::Abilities>(
    g: &G,
    store: &mut Store,
    targets: &[(String, u32)],
) -> anyhow::Result<()> {
    let solution = tabula::solver::load_or_solve(g, store)?;
    let mut seen = std::collections::HashSet::new();
    let mut positions = Vec::new();
    for (run, i) in targets {
        for s in visited_positions(g, store, run, *i)? {
            if seen.insert(g.key(&s)) {
                positions.push(s);
            }
        }
    }
    let truth = Truth::new(g, Arc::new(solution), &positions).map_err(anyhow::Error::msg)?;
    for (run, i) in targets {
        let (err_p, mae_v) = model_errors(g, store, run, *i, &truth)?;
        println!(
            "{}",
            serde_json::json!({"run": run, "iteration": i, "positions": positions.len(),
                               "err_p": err_p, "mae_v": mae_v})
        );
    }
    Ok(())
}
