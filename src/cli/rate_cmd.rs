//! `tabula rate`: a round robin (or a gauntlet) among players, stored game by game, and their
//! Bradley-Terry (Elo) ratings (docs/ratings.md).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Serialize;
use tabula::experiments::chart::{Chart, Series, XAxis};
use tabula::experiments::plot::Stat;
use tabula::games::{Abilities, AnyGame};
use tabula::matches::{MatchReport, run_tournament};
use tabula::players::{Player, PlayerSpec};
use tabula::ratings::{ELO_PER_LOGIT, Fit, PRIOR_DRAWS, PairScore, fit};
use tabula::runs::spec::{MAX_GAMES, MAX_SIMULATIONS};
use tabula::store::Store;
use tabula::with_game;

use super::args::RateArgs;
use super::output::{JsonLayout, OutputFile, Report, emit};

/// At most this many players (a round robin of 64 is 2016 pairs).
const MAX_PLAYERS: usize = 64;

/// At most this many random moves of an opening (`--openings`).
const MAX_OPENING: u32 = 100;

/// The validated form of `RateArgs` (the players still to expand by the run's checkpoints).
struct RateConfig {
    game: AnyGame,
    /// The `--player` specs and their text as given (the table's names).
    players: Vec<(PlayerSpec, String)>,
    run: Option<(String, Option<u32>, Option<u32>)>,
    anchor: Option<PlayerSpec>,
    games: u32,
    openings: u32,
    seed: u64,
    gauntlet: bool,
    json: bool,
    svg: Option<PathBuf>,
    threads: Option<usize>,
}

fn resolve(args: &RateArgs) -> anyhow::Result<RateConfig> {
    let game: AnyGame = args.variant.parse()?;
    let players = args
        .players
        .iter()
        .map(|p| {
            let spec = p
                .parse::<PlayerSpec>()
                .with_context(|| format!("--player {p}"))?;
            Ok((spec, p.trim().to_string()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let anchor = args
        .anchor
        .as_ref()
        .map(|a| {
            a.parse::<PlayerSpec>()
                .with_context(|| format!("--anchor {a}"))
        })
        .transpose()?;
    if args.run.is_none() {
        for (flag, given) in [
            ("--every", args.every.is_some()),
            ("--sims", args.sims.is_some()),
        ] {
            if given {
                bail!("{flag} needs --run RUN (it says which of the run's checkpoints play)");
            }
        }
    }
    if let Some(k) = args.every {
        super::common::check_count("--every", k as usize, 1, u32::MAX as usize, "iterations")?;
    }
    if let Some(n) = args.sims {
        super::common::check_count(
            "--sims",
            n as usize,
            1,
            MAX_SIMULATIONS as usize,
            "simulations of the checkpoints' search",
        )?;
    }
    super::common::check_count(
        "--games",
        args.games as usize,
        1,
        MAX_GAMES as usize,
        "games per pair of players",
    )?;
    super::common::check_count(
        "--openings",
        args.openings as usize,
        0,
        MAX_OPENING as usize,
        "random moves before each pair of games",
    )?;
    super::common::check_threads(args.threads)?;
    if args.run.is_none() {
        check_players(&players)?;
    }
    Ok(RateConfig {
        game,
        players,
        run: args.run.clone().map(|r| (r, args.every, args.sims)),
        anchor,
        games: args.games,
        openings: args.openings,
        seed: args.seed,
        gauntlet: args.gauntlet,
        json: args.json,
        svg: args.svg.clone(),
        threads: args.threads,
    })
}

/// The players of the command: the `--player` ones, then the run's checkpoints, each with
/// its name in the table.
fn players(cfg: &RateConfig, store: &Store) -> anyhow::Result<Vec<(PlayerSpec, String)>> {
    let mut out = cfg.players.clone();
    if let Some((run, every, sims)) = &cfg.run {
        let row = tabula::runs::find(store, run)?;
        let last = row.iterations_done;
        let k = every.unwrap_or_else(|| last.div_ceil(10).max(1));
        let mut its: Vec<u32> = (0..=last).step_by(k as usize).collect();
        if its.last() != Some(&last) {
            its.push(last);
        }
        out.extend(its.into_iter().map(|iteration| {
            let spec = PlayerSpec::Model {
                run: run.clone(),
                iteration,
                sims: *sims,
                rules: false,
            };
            let name = spec.to_string();
            (spec, name)
        }));
    }
    check_players(&out)?;
    Ok(out)
}

/// Refuses fewer than two players, too many, or one given twice.
fn check_players(out: &[(PlayerSpec, String)]) -> anyhow::Result<()> {
    if out.len() < 2 {
        bail!(
            "rate needs at least 2 players, got {}: give --player SPEC for each (or --run RUN \
             for a run's checkpoints)",
            out.len()
        );
    }
    if out.len() > MAX_PLAYERS {
        bail!(
            "{} players: at most {MAX_PLAYERS} (use --every K to take fewer checkpoints)",
            out.len()
        );
    }
    for (i, (p, name)) in out.iter().enumerate() {
        if let Some((_, first)) = out[..i].iter().find(|(q, _)| q == p) {
            bail!(
                "player `{name}` is given twice (as `{first}` before; both are `{p}`); give each player once"
            );
        }
    }
    Ok(())
}

pub(crate) fn run(db: Option<&Path>, args: &RateArgs) -> anyhow::Result<()> {
    let cfg = resolve(args)?;
    let path = Store::resolve_path(db);
    if let Some(svg) = &cfg.svg {
        OutputFile {
            flag: "--svg",
            path: svg,
        }
        .check(&path, false)?;
    }
    let mut store = Store::open(&path)?;
    let named = players(&cfg, &store)?;
    let anchor = match &cfg.anchor {
        None => 0,
        Some(a) => named.iter().position(|(p, _)| p == a).with_context(|| {
            format!(
                "--anchor {a} is not one of the players; allowed: {}",
                named
                    .iter()
                    .map(|(_, n)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?,
    };
    let (specs, names): (Vec<PlayerSpec>, Vec<String>) = named.into_iter().unzip();
    if cfg.svg.is_some() && !specs.iter().any(|p| matches!(p, PlayerSpec::Model { .. })) {
        bail!("--svg draws ratings against iteration: give model:RUN@I players (or --run RUN)");
    }
    with_game!(&cfg.game, |g| rate(
        g,
        &cfg,
        (&specs, &names),
        anchor,
        &mut store,
        &path
    ))
}

/// One player's line of the result.
#[derive(Serialize)]
struct PlayerRow {
    /// The canonical spec, and the name as given.
    player: String,
    name: String,
    elo: f64,
    ci95: [f64; 2],
    se: f64,
    /// Outside the anchor's group: the rating is set by the prior.
    separated: bool,
    /// Mean score over all its games, and how many.
    score: f64,
    games: u32,
}

#[derive(Serialize)]
struct RateReport<'a> {
    variant: String,
    seed: u64,
    mode: &'static str,
    games_per_pair: u32,
    /// Random moves before each pair of games (0: from the game's start).
    openings: u32,
    anchor: String,
    players: Vec<PlayerRow>,
    fit: FitInfo,
    pairs: &'a [MatchReport],
    recorded: usize,
    seconds: f64,
    /// Where `--svg` wrote the chart, for the text.
    #[serde(skip)]
    svg: Option<PathBuf>,
}

#[derive(Serialize)]
struct FitInfo {
    newton_steps: u32,
    log_likelihood: f64,
    prior_draws_per_pair: f64,
    elo_per_logit: f64,
}

fn rate<G: Abilities>(
    g: &G,
    cfg: &RateConfig,
    (specs, names): (&[PlayerSpec], &[String]),
    anchor: usize,
    store: &mut Store,
    db: &Path,
) -> anyhow::Result<()> {
    let players = specs
        .iter()
        .map(|s| Player::resolve(s, g, Some(store)))
        .collect::<Result<Vec<_>, _>>()?;
    let pairs: Vec<(usize, usize)> = if cfg.gauntlet {
        (0..specs.len())
            .filter(|&p| p != anchor)
            .map(|p| (anchor, p))
            .collect()
    } else {
        (0..specs.len())
            .flat_map(|a| ((a + 1)..specs.len()).map(move |b| (a, b)))
            .collect()
    };
    let total = pairs.len() as u64 * u64::from(cfg.games);
    let pool = super::common::pool(cfg.threads)?;
    let t = std::time::Instant::now();
    let bar = super::progress::Delayed::new(total, "rate", !cfg.json);
    let reports = pool.install(|| {
        run_tournament(
            g,
            &players,
            &pairs,
            cfg.games,
            cfg.openings,
            cfg.seed,
            &|| bar.inc(1),
        )
    });
    bar.finish();
    let reports = reports?;
    let seconds = t.elapsed().as_secs_f64();
    store.write(|w| {
        for r in reports.iter().flat_map(|r| r.records()) {
            w.put(r)?;
        }
        Ok(())
    })?;
    // Each report's A is the pair's player whose canonical spec sorts first.
    let canonical: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
    let scores: Vec<PairScore> = pairs
        .iter()
        .zip(&reports)
        .map(|(&(a, b), r)| {
            let (a, b) = if r.a == canonical[a] { (a, b) } else { (b, a) };
            PairScore {
                a,
                b,
                score_a: r.score_a * f64::from(r.games),
                games: f64::from(r.games),
            }
        })
        .collect();
    let fitted = fit(specs.len(), anchor, &scores)?;
    let rows = player_rows(specs, names, &scores, &fitted);
    let report = RateReport {
        variant: g.variant(),
        seed: cfg.seed,
        mode: if cfg.gauntlet {
            "gauntlet"
        } else {
            "round robin"
        },
        games_per_pair: cfg.games,
        openings: cfg.openings,
        anchor: specs[anchor].to_string(),
        players: rows,
        fit: FitInfo {
            newton_steps: fitted.steps,
            log_likelihood: fitted.log_likelihood,
            prior_draws_per_pair: PRIOR_DRAWS,
            elo_per_logit: ELO_PER_LOGIT,
        },
        pairs: &reports,
        recorded: reports.iter().map(|r| r.game_list.len()).sum(),
        seconds,
        svg: cfg.svg.clone(),
    };
    if let Some(svg) = &cfg.svg {
        let chart = chart(&report, specs);
        OutputFile {
            flag: "--svg",
            path: svg,
        }
        .write(db, |w| w.write_all(chart.svg().as_bytes()))?;
    }
    emit(&report, cfg.json)
}

fn player_rows(
    specs: &[PlayerSpec],
    names: &[String],
    scores: &[PairScore],
    f: &Fit,
) -> Vec<PlayerRow> {
    specs
        .iter()
        .zip(names)
        .enumerate()
        .map(|(i, (spec, name))| {
            let (mut score, mut games) = (0.0, 0.0);
            for p in scores {
                if p.a == i {
                    score += p.score_a;
                    games += p.games;
                } else if p.b == i {
                    score += p.games - p.score_a;
                    games += p.games;
                }
            }
            let r = &f.ratings[i];
            PlayerRow {
                player: spec.to_string(),
                name: name.clone(),
                elo: r.elo,
                ci95: r.ci95,
                se: r.se,
                separated: r.separated,
                score: if games > 0.0 { score / games } else { 0.0 },
                games: games as u32,
            }
        })
        .collect()
}

/// The checkpoints' ratings against iteration, a line per run, 95% intervals as a band;
/// the anchor's 0 as the reference line.
fn chart(report: &RateReport<'_>, specs: &[PlayerSpec]) -> Chart {
    let mut series: Vec<Series> = Vec::new();
    for (spec, row) in specs.iter().zip(&report.players) {
        let PlayerSpec::Model {
            run,
            iteration,
            sims,
            ..
        } = spec
        else {
            continue;
        };
        let label = match sims {
            Some(n) => format!("{run} (sims={n})"),
            None => run.clone(),
        };
        let point = (
            f64::from(*iteration),
            Stat {
                mean: row.elo,
                lo: row.ci95[0],
                hi: row.ci95[1],
                // The games behind it (more than one draws the interval's band).
                n: row.games as usize,
            },
        );
        match series.iter_mut().find(|s| s.label == label) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                label,
                points: vec![point],
            }),
        }
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Chart {
        title: format!(
            "{} — Elo by iteration ({} games a pair, {})",
            report.variant, report.games_per_pair, report.mode
        ),
        x: XAxis::Numeric {
            name: "iteration".into(),
        },
        y_name: "Elo (95% interval)".into(),
        y_range: None,
        integer_y: false,
        reference: Some((0.0, format!("anchor: {}", report.anchor))),
        series,
        size: (720, 420),
        caption: caption(report),
    }
}

/// The chart's provenance, under the plot: how the ratings were fitted, on which games, and
/// what their bands are.
fn caption(report: &RateReport<'_>) -> Vec<String> {
    let openings = match report.openings {
        0 => "from the game's start".to_string(),
        k => format!("after {k} random opening moves a pair"),
    };
    vec![
        format!(
            "Elo: maximum likelihood (Bradley-Terry, draws half a win, a prior of {} draws a \
             pair, {} Newton steps) over {} games, {} a pair, {} ({}), seed {}",
            report.fit.prior_draws_per_pair,
            report.fit.newton_steps,
            report.recorded,
            report.games_per_pair,
            report.mode,
            openings,
            report.seed
        ),
        format!(
            "band: the 95% interval (1.96 standard errors from the fit's information matrix); \
             anchor {} at 0",
            report.anchor
        ),
    ]
}

impl Report for RateReport<'_> {
    const JSON: JsonLayout = JsonLayout::Pretty;
    const SORTED_KEYS: bool = false;
}

impl RateReport<'_> {
    /// The name a player was given on the command line (its spec if none).
    fn name(&self, spec: &str) -> String {
        self.players
            .iter()
            .find(|p| p.player == spec)
            .map_or(spec.to_string(), |p| p.name.clone())
    }

    /// The ratings, best first, as a table; a note under it for a separated player.
    fn ranking(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut order: Vec<usize> = (0..self.players.len()).collect();
        order.sort_by(|&a, &b| {
            self.players[b]
                .elo
                .total_cmp(&self.players[a].elo)
                .then(a.cmp(&b))
        });
        let width = self
            .players
            .iter()
            .map(|p| p.name.chars().count())
            .max()
            .unwrap_or(6)
            .max(6);
        writeln!(
            f,
            "{:>4}  {:<width$}  {:>8}  {:>20}  {:>6}  {:>6}",
            "rank", "player", "Elo", "95% interval", "score", "games"
        )?;
        for (rank, &i) in order.iter().enumerate() {
            let p = &self.players[i];
            let ci = format!("[{:.0}, {:.0}]", p.ci95[0], p.ci95[1]);
            writeln!(
                f,
                "{:>4}  {:<width$}  {:>8.1}  {:>20}  {:>6.3}  {:>6}{}",
                rank + 1,
                p.name,
                p.elo,
                ci,
                p.score,
                p.games,
                if p.separated { "  *" } else { "" }
            )?;
        }
        if self.players.iter().any(|p| p.separated) {
            writeln!(
                f,
                "* never scored against the anchor's group, or never lost to it: no finite \
                 maximum-likelihood rating; the one shown is set by the prior ({} virtual draws \
                 a pair), only its side of the others is measured",
                self.fit.prior_draws_per_pair
            )?;
        }
        Ok(())
    }
}

impl std::fmt::Display for RateReport<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let openings = match self.openings {
            0 => String::new(),
            n => format!(" from random {n}-move openings"),
        };
        writeln!(
            f,
            "{}  seed {}  {}, {} games a pair{openings}  anchor {} = 0",
            self.variant,
            self.seed,
            self.mode,
            self.games_per_pair,
            self.name(&self.anchor)
        )?;
        self.ranking(f)?;
        writeln!(f, "pairs (score of the first):")?;
        for m in self.pairs {
            let checks = m
                .score_checks
                .as_ref()
                .map(|c| {
                    format!(
                        "  GTP final_score: {} of {} disagree with tabula's",
                        c.disagree, c.checked
                    )
                })
                .unwrap_or_default();
            writeln!(
                f,
                "  {} vs {}: {:.3}  (+{} ={} -{}){checks}",
                self.name(&m.a),
                self.name(&m.b),
                m.score_a,
                m.wins_a,
                m.draws,
                m.losses_a,
            )?;
        }
        let example = self
            .pairs
            .first()
            .and_then(|m| m.game_list.first())
            .map(|g| format!(", e.g. {}", &g.hash[..12]))
            .unwrap_or_default();
        writeln!(
            f,
            "{:.2} s; recorded {} games (all hashes with --json); replay one with `tabula replay \
             HASH`{example}",
            self.seconds, self.recorded,
        )?;
        if let Some(svg) = &self.svg {
            writeln!(f, "wrote {}", svg.display())?;
        }
        Ok(())
    }
}
