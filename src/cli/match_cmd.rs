//! `tabula match`: N games between two players, in parallel, reproducible.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;
use tabula::games::Abilities;
use tabula::games::AnyGame;
use tabula::matches::{MatchReport, run_match_observed};
use tabula::players::{Player, PlayerSpec};
use tabula::runs::spec::MAX_GAMES;
use tabula::store::Store;
use tabula::with_game;

use super::args::MatchArgs;
use super::output::{JsonLayout, Report, emit};

/// The validated form of `MatchArgs`.
struct MatchConfig {
    game: AnyGame,
    a: PlayerSpec,
    b: PlayerSpec,
    games: u32,
    seed: u64,
    json: bool,
    record: bool,
    threads: Option<usize>,
}

fn resolve(args: &MatchArgs) -> anyhow::Result<MatchConfig> {
    let game: AnyGame = args.variant.parse()?;
    let a: PlayerSpec = args.a.parse().context("--a")?;
    let b: PlayerSpec = args.b.parse().context("--b")?;
    super::common::check_count(
        "--games",
        args.games as usize,
        1,
        MAX_GAMES as usize,
        "games in the match",
    )?;
    super::common::check_threads(args.threads)?;
    Ok(MatchConfig {
        game,
        a,
        b,
        games: args.games,
        seed: args.seed,
        json: args.json,
        record: args.record,
        threads: args.threads,
    })
}

pub(crate) fn run(db: Option<&Path>, args: &MatchArgs) -> anyhow::Result<()> {
    let cfg = resolve(args)?;
    let stored = |p: &PlayerSpec| matches!(p, PlayerSpec::Optimal | PlayerSpec::Model { .. });
    let needs_store = cfg.record || stored(&cfg.a) || stored(&cfg.b);
    let mut store = if needs_store {
        Some(Store::open(&Store::resolve_path(db))?)
    } else {
        None
    };
    with_game!(&cfg.game, |g| play(g, &cfg, store.as_mut()))
}

fn play<G: Abilities>(
    g: &G,
    cfg: &MatchConfig,
    mut store: Option<&mut Store>,
) -> anyhow::Result<()> {
    let a = Player::resolve(&cfg.a, g, store.as_deref_mut())?;
    let b = Player::resolve(&cfg.b, g, store.as_deref_mut())?;
    let pool = super::common::pool(cfg.threads)?;
    let t = std::time::Instant::now();
    let bar = super::progress::Delayed::new(u64::from(cfg.games), "match", !cfg.json);
    let report =
        pool.install(|| run_match_observed(g, &a, &b, cfg.games, cfg.seed, &|| bar.inc(1)));
    bar.finish();
    let report = report?;
    let seconds = t.elapsed().as_secs_f64();
    if let (true, Some(store)) = (cfg.record, store) {
        store.write(|w| {
            for r in report.records() {
                w.put(r)?;
            }
            Ok(())
        })?;
    }
    let done = MatchDone {
        report: &report,
        recorded: cfg.record,
        seconds,
    };
    emit(&done, cfg.json)
}

/// `match`: the library's report of the games, whether they were recorded, and the time.
#[derive(Serialize)]
struct MatchDone<'a> {
    #[serde(flatten)]
    report: &'a MatchReport,
    recorded: bool,
    seconds: f64,
}

impl Report for MatchDone<'_> {
    const JSON: JsonLayout = JsonLayout::Pretty;
}

impl std::fmt::Display for MatchDone<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.report;
        writeln!(f, "{}  seed {}  {} games", r.variant, r.seed, r.games)?;
        writeln!(f, "  A: {}", r.a)?;
        writeln!(f, "  B: {}", r.b)?;
        writeln!(
            f,
            "score of A: {:.4}  (95% CI {:.4} .. {:.4})",
            r.score_a, r.ci95[0], r.ci95[1]
        )?;
        writeln!(
            f,
            "A wins {}  draws {}  A losses {}  mean length {:.1} plies",
            r.wins_a, r.draws, r.losses_a, r.mean_plies
        )?;
        if r.adjudicated > 0 {
            writeln!(
                f,
                "{} games adjudicated (the optimal player's certain win)",
                r.adjudicated
            )?;
        }
        if let Some(c) = &r.score_checks {
            writeln!(
                f,
                "GTP final_score checked in {} games: {} disagree with tabula's Tromp-Taylor score",
                c.checked, c.disagree
            )?;
            let disagreements = r.game_list.iter().flat_map(|m| {
                m.score_checks
                    .iter()
                    .filter(|c| !c.agree)
                    .map(move |c| (m.index, c))
            });
            for (i, c) in disagreements.take(4) {
                writeln!(
                    f,
                    "  game {i}: engine {}, tabula {}",
                    c.engine_score, c.tabula_score
                )?;
            }
        }
        writeln!(f, "{:.2} s", self.seconds)?;
        if self.recorded {
            writeln!(
                f,
                "recorded {} games; replay one with `tabula replay HASH --show`:",
                r.games
            )?;
            for h in r.hashes().iter().take(4) {
                writeln!(f, "  {h}")?;
            }
            if r.games > 4 {
                writeln!(f, "  ... (all hashes with --json)")?;
            }
        }
        Ok(())
    }
}
