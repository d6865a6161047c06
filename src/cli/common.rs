//! What the commands share: worker threads, a run's progress and outcome on the terminal,
//! a game shown board by board. Commands import this module, never each other.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, bail};
use indicatif::ProgressBar;
use serde::Serialize;
use tabula::game::{Game, Outcome, Turn};
use tabula::game_record::{GameEnd, GameRecord, SearchStats, Step};
use tabula::learners::LearnerKind;
use tabula::runs::progress::{ProgressLines, ProgressSink, ProgressText};
use tabula::runs::{Resumed, RunConfig, RunOutcome};
use tabula::store::{Store, Subject};

use super::args::AnnotateArgs;

use super::output::{JsonLayout, Report, emit, out, outln};

/// The most worker threads a command starts: far more than the cores of any machine these
/// games need, few enough that a typo (`--threads 100000`) is refused instead of starting
/// thousands of threads. See docs/limits.md.
pub(crate) const MAX_THREADS: usize = 256;

/// Refuses a count given on the command line outside `min..=max`: `flag n is out of range;
/// allowed: min to max (what)`. Every count flag is checked here.
pub(crate) fn check_count(
    flag: &str,
    n: usize,
    min: usize,
    max: usize,
    what: &str,
) -> anyhow::Result<()> {
    if n < min || n > max {
        bail!("{flag} {n} is out of range; allowed: {min} to {max} ({what})");
    }
    Ok(())
}

/// Refuses a `--threads` value that cannot be right.
pub(crate) fn check_threads(threads: Option<usize>) -> anyhow::Result<()> {
    match threads {
        Some(0) => {
            bail!("--threads 0: give at least one thread (or leave it out for all cores)")
        }
        Some(n) => check_count(
            "--threads",
            n,
            1,
            MAX_THREADS,
            "or leave it out for all cores",
        ),
        None => Ok(()),
    }
}

/// A worker pool of `threads` threads (all cores when `None`).
pub(crate) fn pool(threads: Option<usize>) -> anyhow::Result<rayon::ThreadPool> {
    check_threads(threads)?;
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        pool = pool.num_threads(n);
    }
    pool.build().context("starting the worker threads")
}

/// The end of a run (or of the part a `resume` or `branch` ran).
pub(crate) fn print_outcome(
    out: &RunOutcome,
    name: &str,
    variant: &str,
    seed: u64,
    threads: u32,
    json: bool,
) -> anyhow::Result<()> {
    let share = |x: f64| {
        if out.seconds > 0.0 {
            x / out.seconds
        } else {
            0.0
        }
    };
    let report = RunEnd {
        run: out.run_id,
        name: name.to_string(),
        variant: variant.to_string(),
        seed,
        run_hash: out.run_hash.to_hex(),
        head: out.head.map(|h| h.to_hex()),
        iterations: out.iterations,
        iterations_run: out.iterations - out.resumed_from,
        resumed_from: out.resumed_from,
        threads,
        seconds: out.seconds,
        store_seconds: out.store_seconds,
        store_share: share(out.store_seconds),
        store_cpu_seconds: out.store_cpu_seconds,
        store_cpu_share: share(out.store_cpu_seconds),
        store_wait_seconds: out.store_wait_seconds,
        store_wait_share: share(out.store_wait_seconds),
        restart_seconds: out.restart_seconds,
        baseline: serde_json::to_value(&out.baseline)?,
        metrics: serde_json::to_value(out.last.as_ref().map(|s| &s.metrics))?,
    };
    emit(&report, json)
}

/// The end of a run (or of the part a `resume` or `branch` ran): what ran, how long, the
/// store writer's share, the head.
#[derive(Serialize)]
struct RunEnd {
    run: i64,
    name: String,
    variant: String,
    seed: u64,
    run_hash: String,
    head: Option<String>,
    iterations: u32,
    iterations_run: u32,
    resumed_from: u32,
    threads: u32,
    seconds: f64,
    store_seconds: f64,
    store_share: f64,
    store_cpu_seconds: f64,
    store_cpu_share: f64,
    store_wait_seconds: f64,
    store_wait_share: f64,
    restart_seconds: f64,
    /// The untrained model's metrics, and the last iteration's.
    baseline: serde_json::Value,
    metrics: serde_json::Value,
}

impl Report for RunEnd {
    const JSON: JsonLayout = JsonLayout::Pretty;
}

impl std::fmt::Display for RunEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The iterations this process ran, not the run's length: a resumed run or a branch
        // ran only the ones after those committed before.
        let ran = self.iterations.saturating_sub(self.resumed_from);
        let which = match (ran, self.resumed_from) {
            (0, _) => "no iterations".to_string(),
            (_, 0) => format!("{ran} iterations"),
            (1, from) => format!("1 iteration ({} of {})", from + 1, self.iterations),
            (_, from) => format!(
                "{ran} iterations ({}..{} of {}; 1..{from} were committed before)",
                from + 1,
                self.iterations,
                self.iterations
            ),
        };
        writeln!(
            f,
            "run {} ({}) done: {which} in {:.1} s on {} threads; store writer busy {:.2} s \
             ({:.2}%; {:.2} s of CPU), waited on {:.2} s ({:.2}%)",
            self.run,
            self.name,
            self.seconds,
            self.threads,
            self.store_seconds,
            100.0 * self.store_share,
            self.store_cpu_seconds,
            self.store_wait_seconds,
            100.0 * self.store_wait_share
        )?;
        writeln!(f, "head {}", self.head.as_deref().unwrap_or_default())
    }
}

/// `resume` of a run that has finished: nothing ran.
#[derive(Serialize)]
struct AlreadyFinished {
    run: i64,
    name: String,
    finished: bool,
    iterations: u32,
    iterations_run: u32,
    head: Option<String>,
    seconds: f64,
}

impl Report for AlreadyFinished {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for AlreadyFinished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "run {} ({}) has already finished: {} iterations; nothing to do (`tabula show {}` \
             prints its settings and metrics)",
            self.run, self.name, self.iterations, self.name
        )?;
        writeln!(f, "head {}", self.head.as_deref().unwrap_or_default())
    }
}

/// Progress on the terminal: a bar over all self-play games, one line per iteration (the
/// lines are the library's, [`ProgressLines`], which the Python package prints too).
pub(crate) struct Console {
    /// Lines go above the bar on a terminal, else straight to stdout.
    pub(crate) bar: ProgressBar,
    json: bool,
    iterations: u32,
    games: u32,
}

impl Console {
    /// A console for a run of `learner` of `iterations` iterations of `games` games each.
    pub(crate) fn new(
        iterations: u32,
        games: u32,
        learner: LearnerKind,
        json: bool,
    ) -> ProgressLines<Console> {
        let bar = if json {
            ProgressBar::hidden()
        } else {
            super::progress::bar(u64::from(iterations) * u64::from(games), "iteration 1")
        };
        let sink = Console {
            bar,
            json,
            iterations,
            games,
        };
        ProgressLines::new(ProgressText::new(iterations, learner), sink)
    }
}

impl ProgressSink for Console {
    fn line(&mut self, text: String) {
        if self.json {
            return;
        }
        if self.bar.is_hidden() {
            outln!("{text}");
        } else {
            self.bar.println(text);
        }
    }

    fn games(&mut self, iteration: u32, done: u32, _of: u32) {
        self.bar
            .set_position(u64::from(iteration - 1) * u64::from(self.games) + u64::from(done));
        self.bar
            .set_message(format!("iteration {iteration}/{}", self.iterations));
    }
}

/// Progress units per iteration of a run with settings JSON `settings_json`: M games, or the
/// thousandths of a budget ([`tabula::runs::Settings::progress_units`]); 0 if unreadable.
pub(crate) fn progress_units(settings_json: &str) -> u32 {
    let v = serde_json::from_str::<serde_json::Value>(settings_json).unwrap_or_default();
    match v["games_per_iteration"].as_u64() {
        Some(m) => u32::try_from(m).unwrap_or(0),
        None if v.get("budget").is_some() => tabula::runs::budget::BUDGET_PROGRESS_UNITS,
        None => 0,
    }
}

/// The learner of a run's stored settings (JSON); the default learner where they name none.
fn learner_kind(settings_json: &str) -> LearnerKind {
    let v = serde_json::from_str::<serde_json::Value>(settings_json).unwrap_or_default();
    serde_json::from_value(v["learner"]["kind"].clone()).unwrap_or_default()
}

/// Creates the run of `cfg` (spec text `text`), runs it and prints the outcome.
pub(crate) fn start_and_report(
    db: Option<&Path>,
    cfg: &RunConfig,
    text: &str,
    threads: Option<usize>,
    json: bool,
    exchange: Option<&tabula::runs::Exchange>,
) -> anyhow::Result<()> {
    let args_json = json;
    let pool = pool(threads)?;
    let threads = pool.current_num_threads() as u32;
    let mut store = Store::open(&Store::resolve_path(db))?;
    let mut console = Console::new(
        cfg.iterations,
        cfg.settings.progress_units(),
        cfg.settings.learner.kind,
        args_json,
    );
    let out = pool
        .install(|| tabula::runs::start_on(&mut store, cfg, text, threads, exchange, &mut console));
    console.sink.bar.finish_and_clear();
    print_outcome(
        &out?,
        &cfg.name,
        &cfg.game.variant(),
        cfg.seed,
        threads,
        args_json,
    )
}

/// Resumes `run` on a pool of `threads`; prints the outcome (`resume`, `branch`, and `run`
/// of a spec whose run is in the store already).
pub(crate) fn resume_and_report(
    store: &mut Store,
    run: &str,
    threads: Option<usize>,
    json: bool,
    exchange: Option<&tabula::runs::Exchange>,
) -> anyhow::Result<()> {
    let pool = pool(threads)?;
    let n = pool.current_num_threads() as u32;
    let row = tabula::runs::find(store, run)?;
    let games = progress_units(&row.settings_json);
    let mut console = Console::new(
        row.iterations_planned,
        games,
        learner_kind(&row.settings_json),
        json,
    );
    console
        .sink
        .bar
        .set_position(u64::from(row.iterations_done) * u64::from(games));
    let t = std::time::Instant::now();
    let out = pool.install(|| tabula::runs::resume_on(store, run, exchange, &mut console));
    console.sink.bar.finish_and_clear();
    match out? {
        Resumed::Finished {
            run_id,
            iterations,
            head,
        } => {
            let report = AlreadyFinished {
                run: run_id,
                name: row.name,
                finished: true,
                iterations,
                iterations_run: 0,
                head: head.map(|h| h.to_hex()),
                seconds: t.elapsed().as_secs_f64(),
            };
            emit(&report, json)
        }
        Resumed::Ran(out) => print_outcome(
            &out,
            &row.name,
            &row.variant,
            row.seed.parse().unwrap_or(0),
            n,
            json,
        ),
    }
}

/// How [`show_game`] lays a game out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// A blank line after every board; searched moves with their visit counts (`replay
    /// --show`, `play --players`).
    Spaced,
    /// The layout `play` has always shown a game of two random players in: no blank lines,
    /// each chance outcome with its probability and each move with its action index.
    Indexed,
}

/// Prints a game board by board ([`game_text`]).
pub(crate) fn show_game<G: Game>(g: &G, record: &GameRecord, states: &[G::State], layout: Layout) {
    out!("{}", game_text(g, record, states, layout));
}

/// A game board by board: each move names who just played it, then the position after.
pub(crate) fn game_text<G: Game>(
    g: &G,
    record: &GameRecord,
    states: &[G::State],
    layout: Layout,
) -> String {
    let mut o = String::new();
    let gap = if layout == Layout::Spaced { "\n" } else { "" };
    let _ = writeln!(o, "{}{gap}", g.render(&states[0]));
    let mut ply = 0;
    for (step, pair) in record.steps.iter().zip(states.windows(2)) {
        let (before, after) = (&pair[0], &pair[1]);
        match step {
            Step::Chance { outcome } => {
                let name = g.outcome_name(before, *outcome);
                match layout {
                    Layout::Spaced => {
                        let _ = writeln!(o, "chance: {name}");
                    }
                    Layout::Indexed => {
                        let p = probability(g, before, *outcome);
                        let _ = writeln!(o, "chance: {name}  (p = {p:.4})");
                    }
                }
            }
            Step::Move { action, search } => {
                ply += 1;
                let who = match g.turn(before) {
                    Turn::Player(p) => p.index(),
                    _ => 0,
                };
                let name = g.action_name(before, *action);
                let index = match layout {
                    Layout::Spaced => String::new(),
                    Layout::Indexed => format!("  [action {action}]"),
                };
                let _ = writeln!(
                    o,
                    "ply {ply}: player {who} played {name}{index}; the position after it:"
                );
                if let Some(st) = search {
                    show_search(&mut o, g, before, st);
                }
                let _ = writeln!(o, "{}{gap}", g.render(after));
            }
        }
    }
    if let GameEnd::Adjudicated { winner, reason } = record.end {
        let _ = writeln!(o, "{winner} declared the winner: {reason}");
    }
    o
}

/// The probability of chance outcome `outcome` at `s`.
fn probability<G: Game>(g: &G, s: &G::State, outcome: Outcome) -> f64 {
    let mut outcomes = Vec::new();
    g.chance_outcomes(s, &mut outcomes);
    outcomes
        .iter()
        .find(|o| o.outcome == outcome)
        .map_or(0.0, |o| o.prob)
}

/// A searched move's root: its visits in all and the five most visited actions.
fn show_search<G: Game>(o: &mut String, g: &G, before: &G::State, st: &SearchStats) {
    let mut legal = Vec::new();
    g.legal_actions(before, &mut legal);
    let total: u32 = st.visits.iter().sum();
    let mut order: Vec<usize> = (0..legal.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(st.visits[i]));
    let top: Vec<String> = order
        .iter()
        .take(5)
        .map(|&i| format!("{} {}", g.action_name(before, legal[i]), st.visits[i]))
        .collect();
    let _ = writeln!(
        o,
        "  search: {total} visits{}: {}",
        if st.full { "" } else { " (fast)" },
        top.join(", ")
    );
    // A target that differs from the visits (pruned counts, or Gumbel's improved policy):
    // the five largest shares of pi.
    if let Some(t) = &st.target {
        let sum: f64 = t.iter().map(|&c| f64::from(c)).sum::<f64>().max(1.0);
        order.sort_by_key(|&i| std::cmp::Reverse(t[i]));
        let top: Vec<String> = order
            .iter()
            .take(5)
            .map(|&i| {
                let share = f64::from(t[i]) / sum;
                format!("{} {share:.3}", g.action_name(before, legal[i]))
            })
            .collect();
        let _ = writeln!(o, "  target pi: {}", top.join(", "));
    }
}

/// Checks `--note` and `--tag` before anything is written (the errors name the flag).
pub(crate) fn check_annotations(a: &AnnotateArgs) -> anyhow::Result<()> {
    if let Some(n) = &a.note {
        tabula::store::check_note(n).map_err(|why| anyhow::anyhow!("--note: {why}"))?;
    }
    for t in &a.tags {
        tabula::store::check_tag(t).map_err(|why| anyhow::anyhow!("--tag: {why}"))?;
    }
    Ok(())
}

/// `--note` and `--tag` onto a run config: the note replaces the spec's, the tags join its.
pub(crate) fn annotate_config(cfg: &mut RunConfig, a: &AnnotateArgs) -> anyhow::Result<()> {
    check_annotations(a)?;
    if let Some(n) = &a.note {
        cfg.annotations.note = Some(n.clone());
    }
    for t in &a.tags {
        if !cfg.annotations.tags.contains(t) {
            cfg.annotations.tags.push(t.clone());
        }
    }
    Ok(())
}

/// Writes `--note` and `--tag` on a run or sweep already in the store.
pub(crate) fn annotate(store: &mut Store, on: &Subject, a: &AnnotateArgs) -> anyhow::Result<()> {
    if let Some(n) = &a.note {
        store.set_note(on, Some(n))?;
    }
    store.set_tags(on, &a.tags, true)?;
    Ok(())
}
