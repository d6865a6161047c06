//! `tabula play`: one game between two players, printed move by move.

use std::path::Path;

use anyhow::{Context, bail};
use tabula::game::{Game, Turn};
use tabula::games::AnyGame;
use tabula::matches::play_game;
use tabula::play::Scratch;
use tabula::players::{Player, PlayerGame, PlayerSpec};
use tabula::record::Step;
use tabula::rng::{StreamRng, sample_outcome, stream, uniform_index};
use tabula::store::Store;
use tabula::with_game;

use super::args::PlayArgs;

/// A player `tabula play` can seat.
#[derive(Clone, Debug, PartialEq)]
enum PlayerKind {
    /// Uniformly random moves from the game's own stream (the game `play` has always shown).
    Random,
    /// Any player `tabula match` takes.
    Spec(PlayerSpec),
}

/// The validated form of `PlayArgs`.
struct PlayConfig {
    game: AnyGame,
    seed: u64,
    players: [PlayerKind; 2],
    quiet: bool,
    json: bool,
}

/// Splits `a,b` into two player specs; a part `key=value` without `:` continues the spec
/// before it (`mcts:sims=50,c=1,random` is `mcts:sims=50,c=1` and `random`).
fn split_players(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in text.split(',').map(str::trim) {
        match out.last_mut() {
            Some(last) if part.contains('=') && !part.contains(':') => {
                last.push(',');
                last.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    out
}

fn resolve(args: &PlayArgs) -> anyhow::Result<PlayConfig> {
    let game: AnyGame = args.variant.parse()?;
    let names = split_players(&args.players);
    if names.len() != 2 {
        bail!(
            "--players takes two players separated by a comma (first mover first), got `{}`",
            args.players
        );
    }
    let mut players = [PlayerKind::Random, PlayerKind::Random];
    for (slot, name) in players.iter_mut().zip(&names) {
        *slot = if name == "random" {
            PlayerKind::Random
        } else {
            let spec: PlayerSpec = name
                .parse()
                .map_err(|e| anyhow::anyhow!("--players: {e}"))?;
            PlayerKind::Spec(spec)
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

pub fn run(db: Option<&Path>, args: &PlayArgs) -> anyhow::Result<()> {
    let cfg = resolve(args)?;
    if cfg.players.iter().all(|p| *p == PlayerKind::Random) {
        return with_game!(&cfg.game, |g| play(g, &cfg));
    }
    let spec = |k: &PlayerKind| match k {
        PlayerKind::Random => PlayerSpec::Random,
        PlayerKind::Spec(s) => s.clone(),
    };
    let specs = [spec(&cfg.players[0]), spec(&cfg.players[1])];
    let stored = |p: &PlayerSpec| matches!(p, PlayerSpec::Optimal | PlayerSpec::Model { .. });
    let mut store = if specs.iter().any(stored) {
        Some(Store::open(&Store::resolve_path(db))?)
    } else {
        None
    };
    with_game!(&cfg.game, |g| play_specs(g, &cfg, &specs, store.as_mut()))
}

/// A game between any two players (`tabula match`'s), from the stream `play(0)` of the seed,
/// shown as `tabula replay --show` shows a stored game.
fn play_specs<G: PlayerGame>(
    g: &G,
    cfg: &PlayConfig,
    specs: &[PlayerSpec; 2],
    mut store: Option<&mut Store>,
) -> anyhow::Result<()> {
    let p0 = Player::resolve(&specs[0], g, store.as_deref_mut())?;
    let p1 = Player::resolve(&specs[1], g, store)?;
    let (mut a0, mut a1) = (p0.agent(), p1.agent());
    let mut rng: StreamRng = stream(cfg.seed, "play(0)");
    let record = play_game(
        g,
        [&mut a0, &mut a1],
        [specs[0].to_string(), specs[1].to_string()],
        None,
        cfg.seed,
        "play(0)".to_string(),
        &mut rng,
    )?;
    let states = record.states(g)?;
    let result = record.end.result();
    if cfg.json {
        let mut events = Vec::new();
        for (step, before) in record.steps.iter().zip(&states) {
            events.push(match step {
                Step::Chance { outcome } => Event {
                    kind: "chance",
                    player: None,
                    index: *outcome,
                    name: g.outcome_name(before, *outcome),
                },
                Step::Move { action, .. } => Event {
                    kind: "action",
                    player: match g.turn(before) {
                        Turn::Player(p) => Some(p.index()),
                        _ => None,
                    },
                    index: *action,
                    name: g.action_name(before, *action),
                },
            });
        }
        let last = states.last().context("a game has a first state")?;
        let out = serde_json::json!({
            "variant": g.variant(),
            "seed": cfg.seed,
            "players": [specs[0].to_string(), specs[1].to_string()],
            "events": events,
            "plies": record.plies(),
            "result": format!("{result:?}"),
            "result_text": record.end.to_string(),
            "scores": result.scores(),
            "final_position": g.notation(last),
        });
        println!("{}", serde_json::to_string(&out).context("writing JSON")?);
        return Ok(());
    }
    if !cfg.quiet {
        println!(
            "{}  seed {}  player 0 (first mover): {}  player 1: {}\n",
            g.variant(),
            cfg.seed,
            specs[0],
            specs[1]
        );
        super::common::show_game(g, &record, &states);
    }
    println!(
        "result after {} plies: {}  scores: player 0 {}, player 1 {}",
        record.plies(),
        record.end,
        result.scores()[0],
        result.scores()[1]
    );
    Ok(())
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
            "{}  seed {}  player 0 (first mover): random  player 1: random\n",
            g.variant(),
            cfg.seed
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
                let a = scratch.actions[uniform_index(&mut rng, scratch.actions.len())];
                let name = g.action_name(&s, a);
                s = g.apply(&s, a);
                ply += 1;
                if !cfg.quiet && !cfg.json {
                    println!("ply {ply}: {p} played {name}  [action {a}]; the position after it:");
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
            "result_text": result.to_string(),
            "scores": scores,
            "final_position": g.notation(&s),
        });
        println!("{}", serde_json::to_string(&out).context("writing JSON")?);
    } else {
        println!(
            "result after {ply} plies: {result}  scores: player 0 {}, player 1 {}",
            scores[0], scores[1]
        );
    }
    Ok(())
}
