//! `tabula play`: one game between two players, printed move by move.

use std::path::Path;

use anyhow::{Context, bail};
use tabula::game::{Game, Turn};
use tabula::game_record::{GameRecord, Step};
use tabula::games::Abilities;
use tabula::games::AnyGame;
use tabula::matches::play_game;
use tabula::play::{Decision, play_loop};
use tabula::players::{Player, PlayerSpec};
use tabula::rng::{StreamRng, stream, uniform_index};
use tabula::store::Store;
use tabula::with_game;

use super::args::PlayArgs;
use super::common::{Layout, game_text};
use super::output::{JsonLayout, Report, emit};

/// A player `tabula play` can seat.
// Large only through `PlayerSpec`'s search settings; two per command (see PlayerSpec).
#[allow(clippy::large_enum_variant)]
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

pub(crate) fn run(db: Option<&Path>, args: &PlayArgs) -> anyhow::Result<()> {
    let cfg = resolve(args)?;
    let spec = |k: &PlayerKind| match k {
        PlayerKind::Random => PlayerSpec::Random,
        PlayerKind::Spec(s) => s.clone(),
    };
    let specs = [spec(&cfg.players[0]), spec(&cfg.players[1])];
    if cfg.players.iter().all(|p| *p == PlayerKind::Random) {
        return with_game!(&cfg.game, |g| {
            let record = play_random(g, cfg.seed)?;
            print_game(g, &cfg, &specs, &record, Layout::Indexed)
        });
    }
    let stored = |p: &PlayerSpec| matches!(p, PlayerSpec::Optimal | PlayerSpec::Model { .. });
    let mut store = if specs.iter().any(stored) {
        Some(Store::open(&Store::resolve_path(db))?)
    } else {
        None
    };
    with_game!(&cfg.game, |g| {
        let record = play_specs(g, &cfg, &specs, store.as_mut())?;
        print_game(g, &cfg, &specs, &record, Layout::Spaced)
    })
}

/// The game between two random players that `play` has always shown: chance and both
/// players draw from the one stream `play(0)` of the seed, so (variant, seed) fixes it.
fn play_random<G: Game>(g: &G, seed: u64) -> anyhow::Result<GameRecord> {
    let mut rng: StreamRng = stream(seed, "play(0)");
    let mut actions = Vec::new();
    let mut steps = Vec::new();
    let end = play_loop(
        g,
        g.initial_state(),
        &mut rng,
        &mut Vec::new(),
        Some(&mut steps),
        |s, _, _, _, rng| {
            g.legal_actions(s, &mut actions);
            let action = actions[uniform_index(rng, actions.len())];
            Ok::<_, std::convert::Infallible>(Decision::Play {
                action,
                search: None,
            })
        },
    )?;
    Ok(GameRecord {
        variant: g.variant(),
        seed,
        stream: "play(0)".to_string(),
        players: ["random".to_string(), "random".to_string()],
        start: None,
        steps,
        end,
    })
}

/// A game between any two players (`tabula match`'s), from the stream `play(0)` of the seed.
fn play_specs<G: Abilities>(
    g: &G,
    cfg: &PlayConfig,
    specs: &[PlayerSpec; 2],
    mut store: Option<&mut Store>,
) -> anyhow::Result<GameRecord> {
    let p0 = Player::resolve(&specs[0], g, store.as_deref_mut())?;
    let p1 = Player::resolve(&specs[1], g, store)?;
    let (mut a0, mut a1) = (p0.agent(), p1.agent());
    let mut rng: StreamRng = stream(cfg.seed, "play(0)");
    Ok(play_game(
        g,
        [&mut a0, &mut a1],
        [specs[0].to_string(), specs[1].to_string()],
        None,
        cfg.seed,
        "play(0)".to_string(),
        &mut rng,
    )?)
}

/// Prints a played game: one JSON object, or the boards in `layout` (unless --quiet) and
/// the result line. A game of random players (`Layout::Indexed`) names no players in JSON.
fn print_game<G: Game>(
    g: &G,
    cfg: &PlayConfig,
    specs: &[PlayerSpec; 2],
    record: &GameRecord,
    layout: Layout,
) -> anyhow::Result<()> {
    let states = record.states(g)?;
    let result = record.end.result();
    let last = states.last().context("a game has a first state")?;
    let report = PlayedGame {
        variant: g.variant(),
        seed: cfg.seed,
        players: matches!(layout, Layout::Spaced)
            .then(|| [specs[0].to_string(), specs[1].to_string()]),
        events: events(g, record, &states),
        plies: record.plies(),
        result: format!("{result:?}"),
        result_text: record.end.to_string(),
        scores: result.scores(),
        final_position: g.notation(last),
        shown: (!cfg.quiet && !cfg.json).then(|| {
            let head = format!(
                "{}  seed {}  player 0 (first mover): {}  player 1: {}\n",
                g.variant(),
                cfg.seed,
                specs[0],
                specs[1]
            );
            format!("{head}\n{}", game_text(g, record, &states, layout))
        }),
    };
    emit(&report, cfg.json)
}

/// `play`: a played game; `--json` names the players unless both are random (`Indexed`).
#[derive(serde::Serialize)]
struct PlayedGame {
    variant: String,
    seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    players: Option<[String; 2]>,
    events: Vec<Event>,
    plies: usize,
    result: String,
    result_text: String,
    scores: [f64; 2],
    final_position: String,
    /// The text's header and boards (none with `--quiet`).
    #[serde(skip)]
    shown: Option<String>,
}

impl Report for PlayedGame {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for PlayedGame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(shown) = &self.shown {
            write!(f, "{shown}")?;
        }
        writeln!(
            f,
            "result after {} plies: {}  scores: player 0 {}, player 1 {}",
            self.plies, self.result_text, self.scores[0], self.scores[1]
        )
    }
}

/// One event of a played game, for `--json`: what happened, and the position it happened
/// in (the game's notation, as `tabula value` takes it).
#[derive(serde::Serialize)]
struct Event {
    kind: &'static str,
    player: Option<usize>,
    index: u16,
    name: String,
    position: String,
}

/// The game's chance outcomes and moves in order, each named in the state it left.
fn events<G: Game>(g: &G, record: &GameRecord, states: &[G::State]) -> Vec<Event> {
    let mut events = Vec::with_capacity(record.steps.len());
    for (step, before) in record.steps.iter().zip(states) {
        events.push(match step {
            Step::Chance { outcome } => Event {
                kind: "chance",
                player: None,
                index: *outcome,
                name: g.outcome_name(before, *outcome),
                position: g.notation(before),
            },
            Step::Move { action, .. } => Event {
                kind: "action",
                player: match g.turn(before) {
                    Turn::Player(p) => Some(p.index()),
                    _ => None,
                },
                index: *action,
                name: g.action_name(before, *action),
                position: g.notation(before),
            },
        });
    }
    events
}
