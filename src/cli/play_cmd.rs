//! `tabula play`: one game between two players, printed move by move.

use anyhow::{Context, bail};
use tabula::game::{Game, Player, Turn};
use tabula::games::AnyGame;
use tabula::play::Scratch;
use tabula::rng::{StreamRng, sample_outcome, stream, uniform_index};
use tabula::with_game;

use super::args::PlayArgs;

/// A player `tabula play` can seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PlayerKind {
    Random,
}

const PLAYER_KINDS: &str = "random";

/// The validated form of `PlayArgs`.
struct PlayConfig {
    game: AnyGame,
    seed: u64,
    players: [PlayerKind; 2],
    quiet: bool,
    json: bool,
}

fn resolve(args: &PlayArgs) -> anyhow::Result<PlayConfig> {
    let game: AnyGame = args.variant.parse()?;
    let names: Vec<&str> = args.players.split(',').map(str::trim).collect();
    if names.len() != 2 {
        bail!(
            "--players takes two players separated by a comma (first mover first), got `{}`",
            args.players
        );
    }
    let mut players = [PlayerKind::Random; 2];
    for (slot, name) in players.iter_mut().zip(&names) {
        *slot = match *name {
            "random" => PlayerKind::Random,
            other => bail!("unknown player `{other}` in --players; available: {PLAYER_KINDS}"),
        };
    }
    Ok(PlayConfig {
        game,
        seed: args.seed,
        players,
        quiet: args.quiet,
        json: args.json,
    })
}

pub fn run(args: &PlayArgs) -> anyhow::Result<()> {
    let cfg = resolve(args)?;
    with_game!(&cfg.game, |g| play(g, &cfg))
}

/// One event of a played game, for `--json`.
#[derive(serde::Serialize)]
struct Event {
    kind: &'static str,
    player: Option<usize>,
    index: u16,
    name: String,
}

fn play<G: Game>(g: &G, cfg: &PlayConfig) -> anyhow::Result<()> {
    // The whole game draws from one stream, so (variant, players, seed) fixes it.
    let mut rng: StreamRng = stream(cfg.seed, "play(0)");
    let mut scratch = Scratch::new();
    let mut s = g.initial_state();
    let mut events = Vec::new();
    let mut ply = 0;
    if !cfg.quiet && !cfg.json {
        println!(
            "{}  seed {}  players {:?}\n",
            g.variant(),
            cfg.seed,
            cfg.players
        );
        println!("{}", g.render(&s));
    }
    let result = loop {
        match g.turn(&s) {
            Turn::Terminal(r) => break r,
            Turn::Chance => {
                g.chance_outcomes(&s, &mut scratch.outcomes);
                let o = scratch.outcomes[sample_outcome(&mut rng, &scratch.outcomes)];
                let name = g.outcome_name(&s, o.outcome);
                s = g.apply_chance(&s, o.outcome);
                if !cfg.quiet && !cfg.json {
                    println!("chance: {name}  (p = {:.4})", o.prob);
                }
                events.push(Event {
                    kind: "chance",
                    player: None,
                    index: o.outcome,
                    name,
                });
            }
            Turn::Player(p) => {
                g.legal_actions(&s, &mut scratch.actions);
                let a = match cfg.players[p.index()] {
                    PlayerKind::Random => {
                        scratch.actions[uniform_index(&mut rng, scratch.actions.len())]
                    }
                };
                let name = g.action_name(&s, a);
                s = g.apply(&s, a);
                ply += 1;
                if !cfg.quiet && !cfg.json {
                    println!("ply {ply}: {p:?} plays {name}  [action {a}]");
                    println!("{}", g.render(&s));
                }
                events.push(Event {
                    kind: "action",
                    player: Some(p.index()),
                    index: a,
                    name,
                });
            }
        }
    };
    let scores = result.scores();
    if cfg.json {
        let out = serde_json::json!({
            "variant": g.variant(),
            "seed": cfg.seed,
            "events": events,
            "plies": ply,
            "result": format!("{result:?}"),
            "scores": scores,
            "final_position": g.notation(&s),
        });
        println!("{}", serde_json::to_string(&out).context("writing JSON")?);
    } else {
        let what = match result {
            tabula::GameResult::Win(Player::P0) => "P0 (first mover) wins",
            tabula::GameResult::Win(Player::P1) => "P1 (second mover) wins",
            tabula::GameResult::Draw => "draw",
        };
        println!("result after {ply} plies: {what}  scores {scores:?}");
    }
    Ok(())
}
