//! tabula's cells of the frameworks' self-play table (benches/frameworks/README.md): self-play
//! moves and network evaluations a second with an untrained residual net, PUCT or Gumbel, on
//! 1 or 2 threads; or one full iteration of a run (self-play of N games, then training) in a
//! temporary store. One JSON line a cell, the same fields as the frameworks' scripts print.
//!
//! Self-play is the run driver's: each worker plays `lanes` games at once with their leaves
//! batched (`selfplay::self_play_lanes`, as a run's iteration does), rounds of `threads x
//! lanes` games repeated until `--seconds` have passed; moves are the decisions of finished
//! games, leaves the positions the searches asked for, evaluations the ones the network
//! computed (the others came from its evaluation cache).
//!
//! `cargo run --release --example selfplay_bench -- --net resnet2x16 --search puct
//! --simulations 50 --threads 1 --seconds 20 [--lanes 32] [--game c4:7x6|ewn:5x5x6]
//! [--iteration --games 32 --train-steps 100]`

use std::process::Command;
use std::time::Instant;

use rayon::prelude::*;
use tabula::game::Game;
use tabula::games::{Abilities, ConnectFour, Ewn};
use tabula::learners::Learner;
use tabula::learners::network::Network;
use tabula::runs::RunConfig;
use tabula::search::{Evaluator, Leaf};
use tabula::selfplay::{LaneGame, self_play_lanes};

/// The command line, parsed.
struct Args {
    game: String,
    net: String,
    search: String,
    simulations: u32,
    threads: usize,
    seconds: f64,
    lanes: usize,
    iteration: bool,
    games: u32,
    train_steps: u32,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        game: "c4:7x6".into(),
        net: "resnet2x16".into(),
        search: "puct".into(),
        simulations: 50,
        threads: 1,
        seconds: 20.0,
        lanes: 32,
        iteration: false,
        games: 32,
        train_steps: 100,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--iteration" {
            a.iteration = true;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--game" => a.game = value,
            "--net" => a.net = value,
            "--search" => a.search = value,
            "--simulations" => a.simulations = value.parse().map_err(|e| bad(&e))?,
            "--threads" => a.threads = value.parse().map_err(|e| bad(&e))?,
            "--seconds" => a.seconds = value.parse().map_err(|e| bad(&e))?,
            "--lanes" => a.lanes = value.parse().map_err(|e| bad(&e))?,
            "--games" => a.games = value.parse().map_err(|e| bad(&e))?,
            "--train-steps" => a.train_steps = value.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    for (flag, n) in [("--threads", a.threads), ("--lanes", a.lanes)] {
        if n == 0 {
            return Err(format!("{flag} 0: allowed 1 or more"));
        }
    }
    Ok(a)
}

/// The `[learner.network]` keys of a net name (the frameworks' scripts build the same nets).
fn net_keys(net: &str) -> Result<&'static str, String> {
    match net {
        "resnet2x16" => Ok("arch = \"resnet\"\nblocks = 2\nchannels = 16"),
        "resnet6x64" => Ok("arch = \"resnet\"\nblocks = 6\nchannels = 64"),
        _ => Err(format!("--net {net}: allowed resnet2x16, resnet6x64")),
    }
}

/// The run spec of a cell: the run defaults (c_puct 1, Dirichlet 1.5 / 0.25, temperature 1)
/// and the iteration's training (`--train-steps`, default 100, SGD steps of 256, momentum 0.9
/// Nesterov). The rate is 0.01, not the workload's 0.1: at 0.1 the ResNet 6 x 64's loss is
/// NaN after the first iteration's training and the run stops there (a diverged model is
/// refused); a step's time does not depend on the rate.
fn spec(a: &Args) -> Result<String, String> {
    let algorithm = match a.search.as_str() {
        "puct" | "gumbel" => &a.search,
        s => return Err(format!("--search {s}: allowed puct, gumbel")),
    };
    Ok(format!(
        "name = \"bench\"\nvariant = \"{}\"\nseed = 1\niterations = 1\ngames_per_iteration = {}\n\
         [search]\nsimulations = {}\nalgorithm = \"{algorithm}\"\n\
         [eval]\nwr_p = false\nerrors = false\n[learner]\nkind = \"network\"\n\
         [learner.network]\n{}\nbatch_size = 256\ntrain_steps = {}\nlr = [[1, 0.01]]\n",
        a.game,
        a.games,
        a.simulations,
        net_keys(&a.net)?,
        a.train_steps
    ))
}

/// An evaluator that counts the positions the search asks for.
struct Counting<E> {
    inner: E,
    evals: u64,
}

impl<G: Game, E: Evaluator<G>> Evaluator<G> for Counting<E> {
    fn past(&self) -> usize {
        self.inner.past()
    }

    fn evaluate(
        &mut self,
        g: &G,
        s: &G::State,
        past: &[G::State],
        legal: &[tabula::Action],
        priors: &mut [f64],
        rng: &mut tabula::rng::StreamRng,
    ) -> f64 {
        self.evals += 1;
        self.inner.evaluate(g, s, past, legal, priors, rng)
    }

    fn evaluate_batch(&mut self, g: &G, leaves: &mut [Leaf<'_, G>]) {
        self.evals += leaves.len() as u64;
        self.inner.evaluate_batch(g, leaves);
    }
}

/// What self-play did in its rounds.
struct Rates {
    /// Decisions of the finished games.
    moves: u64,
    /// Positions the searches asked the evaluator for.
    leaves: u64,
    /// Positions the network computed (the others came from the evaluation cache).
    evals: u64,
    seconds: f64,
    params: usize,
}

/// Self-play rounds until `a.seconds` have passed.
fn rates<G: Abilities + Sync>(g: &G, a: &Args) -> Result<Rates, String>
where
    G::State: Send + Sync,
{
    let cfg = RunConfig::from_toml(&spec(a)?, "bench").map_err(|e| e.to_string())?;
    let model = Network::new(g, cfg.learner_context(1)).map_err(|e| e.to_string())?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads)
        .build()
        .map_err(|e| e.to_string())?;
    let per_round = (a.threads * a.lanes) as u32;
    let (mut moves, mut leaves, mut evals, mut round) = (0u64, 0u64, 0u64, 0u32);
    let t = Instant::now();
    while round == 0 || t.elapsed().as_secs_f64() < a.seconds {
        let ids: Vec<LaneGame<G::State>> = (0..per_round)
            .map(|i| LaneGame {
                slot: tabula::rng::GameSlot::new(1, 1, round * per_round + i),
                start: None,
                tree: false,
            })
            .collect();
        let counts: Vec<(u64, u64, u64)> = pool.install(|| {
            ids.par_chunks(a.lanes)
                .map(|chunk| {
                    let mut eval = Counting {
                        inner: model.eval(),
                        evals: 0,
                    };
                    let played = self_play_lanes(g, cfg.settings.search, &mut eval, chunk, a.lanes)
                        .expect("self-play");
                    let m = played.iter().map(|p| p.record.plies() as u64).sum();
                    (m, eval.evals, eval.inner.cache_counts().1)
                })
                .collect()
        });
        moves += counts.iter().map(|c| c.0).sum::<u64>();
        leaves += counts.iter().map(|c| c.1).sum::<u64>();
        evals += counts.iter().map(|c| c.2).sum::<u64>();
        round += 1;
    }
    Ok(Rates {
        moves,
        leaves,
        evals,
        seconds: t.elapsed().as_secs_f64(),
        params: model.parameters(),
    })
}

/// One iteration of `tabula run` in a temporary store: (self-play s, training s, wall s).
fn iteration(a: &Args) -> Result<(f64, f64, f64), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let tabula = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("tabula"))
        .ok_or("no target directory")?;
    let dir = std::env::temp_dir().join(format!("selfplay-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let spec_path = dir.join("bench.toml");
    std::fs::write(&spec_path, spec(a)?).map_err(|e| e.to_string())?;
    let store = dir.join("bench.db");
    let run = |args: &[&str]| -> Result<String, String> {
        let out = Command::new(&tabula)
            .arg("--db")
            .arg(&store)
            .args(args)
            .output()
            .map_err(|e| format!("{}: {e}", tabula.display()))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let t = Instant::now();
    let threads = a.threads.to_string();
    let ran = run(&["run", &spec_path.to_string_lossy(), "--threads", &threads]);
    let wall = t.elapsed().as_secs_f64();
    let sql = "SELECT self_play_seconds || ' ' || training_seconds FROM iterations";
    let row = ran.and_then(|_| run(&["sql", sql]));
    // The temporary store goes whether the run succeeded or not.
    let _ = std::fs::remove_dir_all(&dir);
    let row = row?;
    let nums: Vec<f64> = row
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    match nums[..] {
        [s, tr] => Ok((s, tr, wall)),
        _ => Err(format!("unexpected iterations row: {row}")),
    }
}

fn cell<G: Abilities + Sync>(g: &G, a: &Args) -> Result<String, String>
where
    G::State: Send + Sync,
{
    let head = format!(
        "\"framework\": \"tabula\", \"version\": \"{}\", \"game\": \"{}\", \"net\": \"{}\", \
         \"search\": \"{}\", \"simulations\": {}, \"threads\": {}, \"parallelism\": \"{} \
         thread(s), {} games a worker with leaves batched\"",
        env!("CARGO_PKG_VERSION"),
        a.game,
        a.net,
        a.search,
        a.simulations,
        a.threads,
        a.threads,
        a.lanes
    );
    if a.iteration {
        let (s, tr, wall) = iteration(a)?;
        return Ok(format!(
            "{{{head}, \"kind\": \"iteration\", \"games\": {}, \"selfplay_s\": {s:.3}, \
             \"train_s\": {tr:.3}, \"iteration_s\": {:.3}, \"process_s\": {wall:.3}}}",
            a.games,
            s + tr
        ));
    }
    let r = rates(g, a)?;
    Ok(format!(
        "{{{head}, \"params\": {}, \"moves_per_s\": {:.1}, \"evals_per_s\": {:.1}, \
         \"leaves_per_s\": {:.1}, \"moves\": {}, \"evals\": {}, \"leaves\": {}, \
         \"seconds\": {:.3}, \"compile_s\": 0}}",
        r.params,
        r.moves as f64 / r.seconds,
        r.evals as f64 / r.seconds,
        r.leaves as f64 / r.seconds,
        r.moves,
        r.evals,
        r.leaves,
        r.seconds
    ))
}

fn main() {
    let out = parse_args().and_then(|a| match a.game.as_str() {
        "c4:7x6" => cell(&ConnectFour::new(7, 6).expect("7x6"), &a),
        "ewn:5x5x6" => cell(&Ewn::new(5, 5, 6).expect("5x5x6"), &a),
        g => Err(format!("--game {g}: allowed c4:7x6, ewn:5x5x6")),
    });
    match out {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("selfplay_bench: {e}");
            std::process::exit(2);
        }
    }
}
