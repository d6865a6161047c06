//! Random playouts per second of a variant, for `benches/openspiel_playouts.py`.
//!
//! `cargo run --release --example playout_speed -- VARIANT SECONDS` plays complete random
//! games from the start (`tabula::play::random_playout`: every move uniform over the legal
//! actions, one reused scratch buffer) for about SECONDS seconds on the calling thread, and
//! prints one JSON line: playouts, moves, seconds, playouts and moves per second.

use std::time::Instant;

use tabula::game::Game;
use tabula::games::AnyGame;
use tabula::play::{Scratch, random_playout};
use tabula::rng::stream;
use tabula::with_game;

fn measure<G: Game>(g: &G, seconds: f64) -> (u64, u64, f64) {
    let mut rng = stream(0, "speed(playouts)");
    let mut scratch = Scratch::new();
    // Warm-up (caches, the Zobrist table).
    for _ in 0..10 {
        random_playout(g, g.initial_state(), &mut rng, &mut scratch);
    }
    let t = Instant::now();
    let (mut games, mut moves) = (0u64, 0u64);
    while t.elapsed().as_secs_f64() < seconds {
        for _ in 0..20 {
            let (_, plies) = random_playout(g, g.initial_state(), &mut rng, &mut scratch);
            moves += u64::from(plies);
            games += 1;
        }
    }
    (games, moves, t.elapsed().as_secs_f64())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 2 {
        anyhow::bail!("usage: playout_speed VARIANT SECONDS");
    }
    let game: AnyGame = args[0].parse()?;
    let seconds: f64 = args[1].parse()?;
    let (games, moves, secs) = with_game!(&game, |g| measure(g, seconds));
    let line = serde_json::json!({
        "engine": "tabula",
        "variant": game.variant(),
        "playouts": games,
        "moves": moves,
        "seconds": secs,
        "playouts_per_second": games as f64 / secs,
        "moves_per_second": moves as f64 / secs,
    });
    println!("{line}");
    Ok(())
}
