//! `tabula run`, `tabula ls`, `tabula show`: runs of tabular AlphaZero in the store.

use std::path::Path;

use anyhow::{Context, bail};
use indicatif::ProgressBar;
use tabula::learners::MetricValues;
use tabula::runs::{IterationSummary, Observer, RunConfig, RunOutcome, start};
use tabula::store::{ObjectHash, Store};

use super::args::{LsArgs, RunArgs, ShowArgs};
use super::store_cmd::to_table;

/// Progress on the terminal: a bar over all self-play games, one line per iteration.
pub(super) struct Console {
    /// Lines go above the bar on a terminal, else straight to stdout.
    pub(super) bar: ProgressBar,
    json: bool,
    iterations: u32,
    games: u32,
}

impl Console {
    /// A console for a run of `iterations` iterations of `games` games each.
    pub(super) fn new(iterations: u32, games: u32, json: bool) -> Console {
        let bar = if json {
            ProgressBar::hidden()
        } else {
            super::progress::bar(u64::from(iterations) * u64::from(games), "iteration 1")
        };
        Console {
            bar,
            json,
            iterations,
            games,
        }
    }

    pub(super) fn line(&self, text: String) {
        if self.json {
            return;
        }
        if self.bar.is_hidden() {
            println!("{text}");
        } else {
            self.bar.println(text);
        }
    }
}

fn fmt_opt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

/// The progress line of an iteration's declared metrics: WR_p, ERR_p, MAE_v and coverage
/// where the learner declares them, then any other metric as `name value` (the detail columns
/// of tabular AlphaZero are in `show`).
fn metrics_line(m: &MetricValues) -> String {
    let get = |name: &str| m.iter().find(|(n, _)| *n == name).and_then(|(_, v)| *v);
    let count = |name: &str| get(name).map_or_else(|| "-".to_string(), |v| format!("{v}"));
    let wr = get("wr_p").map_or_else(
        || "WR_p -".to_string(),
        |w| match (get("wr_p_wins"), get("wr_p_draws"), get("wr_p_losses")) {
            (Some(wi), Some(d), Some(l)) => {
                let [lo, hi] = tabula::stats::score_interval95(wi as u32, d as u32, l as u32);
                format!("WR_p {w:.4} [{lo:.4}, {hi:.4}]")
            }
            _ => format!("WR_p {w:.4}"),
        },
    );
    let mut line = format!(
        "{wr}  ERR_p {}  MAE_v {}  upd≥1/4/16 {}/{}/{}  seen {}",
        fmt_opt(get("err_p"), 4),
        fmt_opt(get("mae_v"), 4),
        count("updated_1"),
        count("updated_4"),
        count("updated_16"),
        count("seen")
    );
    let shown = tabula::learners::tabular::TABULAR_METRICS;
    for (name, v) in m {
        if !shown.iter().any(|d| d.name == *name) {
            line.push_str(&format!("  {name} {}", fmt_opt(*v, 4)));
        }
    }
    line
}

impl Observer for Console {
    fn created(&mut self, run_id: i64, run_hash: &ObjectHash, seed: u64) {
        self.line(format!(
            "run {run_id}  (run record {}, seed {seed})",
            run_hash.short()
        ));
    }

    fn resumed(&mut self, done: u32, reused: u32, restart_seconds: f64) {
        if done > 0 || reused > 0 {
            self.line(format!(
                "continuing after iteration {done} ({reused} games of the next reused); \
                 restart {restart_seconds:.2} s"
            ));
        }
    }

    fn baseline(&mut self, m: &MetricValues) {
        self.line(format!(
            "it {:>4}/{}  {}",
            0,
            self.iterations,
            metrics_line(m)
        ));
    }

    fn games_done(&mut self, iteration: u32, done: u32, _of: u32) {
        self.bar
            .set_position(u64::from(iteration - 1) * u64::from(self.games) + u64::from(done));
        self.bar
            .set_message(format!("iteration {iteration}/{}", self.iterations));
    }

    fn iteration_done(&mut self, s: &IterationSummary) {
        {
            self.line(format!(
                "it {:>4}/{}  {}  beta {}  self-play {:.2}s  train {:.2}s  eval {:.2}s  store wait {:.3}s",
                s.iteration,
                self.iterations,
                metrics_line(&s.metrics),
                s.beta,
                s.self_play_seconds,
                s.training_seconds,
                s.evaluation_seconds,
                s.store_wait_seconds
            ));
        }
    }
}

pub fn run(db: Option<&Path>, args: &RunArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.spec)
        .with_context(|| format!("reading the run spec {}", args.spec.display()))?;
    let default_name = args
        .spec
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".to_string());
    // `--set key=value` is written into the spec before it is read, so defaults that
    // depend on other keys follow the overridden values (experiments::driver).
    let (cfg, text) = if args.set.is_empty() {
        let cfg = RunConfig::from_toml(&text, &default_name)
            .with_context(|| format!("{}", args.spec.display()))?;
        (cfg, text)
    } else {
        let sets = tabula::experiments::driver::parse_sets(&args.set)?;
        tabula::experiments::driver::spec_with_overrides(&text, &sets, None, &default_name, "--set")
            .with_context(|| format!("{}", args.spec.display()))?
    };
    start_and_report(db, &cfg, &text, args.threads, args.json)
}

/// Creates the run of `cfg` (spec text `text`), runs it and prints the outcome.
pub(super) fn start_and_report(
    db: Option<&Path>,
    cfg: &RunConfig,
    text: &str,
    threads: Option<usize>,
    json: bool,
) -> anyhow::Result<()> {
    let args_json = json;
    let pool = pool(threads)?;
    let threads = pool.current_num_threads() as u32;
    let mut store = Store::open(&Store::resolve_path(db))?;
    let mut console = Console::new(cfg.iterations, cfg.settings.games_per_iteration, args_json);
    let out = pool.install(|| start(&mut store, cfg, text, threads, &mut console));
    console.bar.finish_and_clear();
    print_outcome(
        &out?,
        &cfg.name,
        &cfg.game.variant(),
        cfg.seed,
        threads,
        args_json,
    )
}

/// The most worker threads a command starts: far more than the cores of any machine these
/// games need, few enough that a typo (`--threads 100000`) is refused instead of starting
/// thousands of threads. See docs/limits.md.
pub(super) const MAX_THREADS: usize = 256;

/// Refuses a `--threads` value that cannot be right.
pub(super) fn check_threads(threads: Option<usize>) -> anyhow::Result<()> {
    match threads {
        Some(0) => {
            bail!("--threads 0: give at least one thread (or leave it out for all cores)")
        }
        Some(n) if n > MAX_THREADS => bail!(
            "--threads {n} is out of range; allowed: 1 to {MAX_THREADS} (or leave it out for \
             all cores)"
        ),
        _ => Ok(()),
    }
}

/// A worker pool of `threads` threads (all cores when `None`).
pub(super) fn pool(threads: Option<usize>) -> anyhow::Result<rayon::ThreadPool> {
    check_threads(threads)?;
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        pool = pool.num_threads(n);
    }
    pool.build().context("starting the worker threads")
}

/// The end of a run (or of the part a `resume` or `branch` ran).
pub(super) fn print_outcome(
    out: &RunOutcome,
    name: &str,
    variant: &str,
    seed: u64,
    threads: u32,
    json: bool,
) -> anyhow::Result<()> {
    let head = out.head.map(|h| h.to_hex());
    let share = |x: f64| {
        if out.seconds > 0.0 {
            x / out.seconds
        } else {
            0.0
        }
    };
    if json {
        let v = serde_json::json!({
            "run": out.run_id,
            "name": name,
            "variant": variant,
            "seed": seed,
            "run_hash": out.run_hash.to_hex(),
            "head": head,
            "iterations": out.iterations,
            "threads": threads,
            "seconds": out.seconds,
            "store_seconds": out.store_seconds,
            "store_share": share(out.store_seconds),
            "store_cpu_seconds": out.store_cpu_seconds,
            "store_cpu_share": share(out.store_cpu_seconds),
            "store_wait_seconds": out.store_wait_seconds,
            "store_wait_share": share(out.store_wait_seconds),
            "restart_seconds": out.restart_seconds,
            "baseline": out.baseline,
            "metrics": out.last.as_ref().map(|s| &s.metrics),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "run {} ({}) done: {} iterations in {:.1} s on {} threads; store writer busy {:.2} s \
             ({:.2}%; {:.2} s of CPU), waited on {:.2} s ({:.2}%)",
            out.run_id,
            name,
            out.iterations,
            out.seconds,
            threads,
            out.store_seconds,
            100.0 * share(out.store_seconds),
            out.store_cpu_seconds,
            out.store_wait_seconds,
            100.0 * share(out.store_wait_seconds)
        );
        println!("head {}", head.unwrap_or_default());
    }
    Ok(())
}

pub fn ls(db: Option<&Path>, args: &LsArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&Store::resolve_path(db))?;
    let runs = store.runs()?;
    if args.json {
        let rows: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id,
                    "name": r.name,
                    "variant": r.variant,
                    "seed": r.seed,
                    "iterations_done": r.iterations_done,
                    "iterations_planned": r.iterations_planned,
                    "status": r.status,
                    "head": r.head.map(|h| h.to_hex()),
                    "run_hash": r.hash.to_hex(),
                    "created_at": r.created_at,
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(());
    }
    if runs.is_empty() {
        println!("no runs yet (start one with `tabula run runs/quick.toml`)");
        return Ok(());
    }
    println!(
        "{:>4}  {:<16} {:<12} {:>11}  {:<11} head",
        "id", "name", "variant", "iterations", "status"
    );
    for r in &runs {
        println!(
            "{:>4}  {:<16} {:<12} {:>5}/{:<5}  {:<11} {}",
            r.id,
            r.name,
            r.variant,
            r.iterations_done,
            r.iterations_planned,
            r.status.as_str(),
            r.head.map_or_else(|| "-".to_string(), |h| h.to_hex())
        );
    }
    Ok(())
}

pub fn show(db: Option<&Path>, args: &ShowArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&Store::resolve_path(db))?;
    let run = tabula::runs::find(&store, &args.run)?;
    if let Some(i) = args.games {
        return show_games(&store, &run, i, args.json);
    }
    let metrics = store.run_metrics(run.id)?;
    let settings: serde_json::Value =
        serde_json::from_str(&run.settings_json).unwrap_or(serde_json::Value::Null);
    // A branch: its parent, branch point and overrides (from its run record).
    let parent = match run.parent {
        Some((pid, at)) => {
            let record: tabula::runs::RunRecord = store.get(&run.hash)?;
            let overrides = record.parent.map(|p| p.overrides).unwrap_or_default();
            let name = store
                .runs()?
                .into_iter()
                .find(|r| r.id == pid)
                .map(|r| r.name)
                .unwrap_or_default();
            Some((pid, name, at, overrides))
        }
        None => None,
    };
    if args.json {
        let rows: Vec<serde_json::Value> = metrics
            .rows
            .iter()
            .map(|row| {
                serde_json::Value::Object(
                    metrics
                        .columns
                        .iter()
                        .cloned()
                        .zip(row.iter().map(|v| v.to_json()))
                        .collect(),
                )
            })
            .collect();
        let v = serde_json::json!({
            "run": run.id,
            "name": run.name,
            "variant": run.variant,
            "seed": run.seed,
            "status": run.status,
            "iterations_done": run.iterations_done,
            "iterations_planned": run.iterations_planned,
            "run_hash": run.hash.to_hex(),
            "head": run.head.map(|h| h.to_hex()),
            "settings": settings,
            "parent": parent.as_ref().map(|(id, name, at, overrides)| serde_json::json!({
                "run": id, "name": name, "iteration": at, "overrides": overrides,
            })),
            "metrics": rows,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "run {}  {}  {}  seed {}  {}/{} iterations  {}",
        run.id,
        run.name,
        run.variant,
        run.seed,
        run.iterations_done,
        run.iterations_planned,
        run.status.as_str()
    );
    println!("run record {}", run.hash.to_hex());
    println!(
        "head       {}",
        run.head.map_or_else(|| "-".to_string(), |h| h.to_hex())
    );
    if let Some((id, name, at, overrides)) = &parent {
        println!(
            "branch of  run {id} ({name}) at iteration {at}; overrides: {}; iterations 0..{at} \
             below are inherited (from_run names whose row each is)",
            if overrides.is_empty() {
                "none".to_string()
            } else {
                overrides.join(" ")
            }
        );
    }
    println!("settings   {settings}");
    if let Some(line) = schedule_in_words(&settings, run.iterations_planned) {
        println!("learning   {line}");
    }
    println!();
    print!("{}", to_table(&metrics));
    Ok(())
}

/// `show RUN --games I`: the games of iteration `i` of `run` (a branch's inherited iterations
/// are its ancestors' rows).
fn show_games(
    store: &Store,
    run: &tabula::store::RunRow,
    i: u32,
    json: bool,
) -> anyhow::Result<()> {
    if i == 0 || i > run.iterations_done + 1 {
        anyhow::bail!(
            "run {} has iterations 1..={} (and the games of {} if it was interrupted); \
             --games {i} is not one of them",
            run.id,
            run.iterations_done,
            run.iterations_done + 1
        );
    }
    let runs = store.runs()?;
    let mut owner = run.clone();
    while let Some((pid, at)) = owner.parent
        && i <= at
    {
        match runs.iter().find(|r| r.id == pid) {
            Some(p) => owner = p.clone(),
            None => break,
        }
    }
    let games = store.run_games(owner.id, i)?;
    if json {
        let v: Vec<serde_json::Value> = games
            .iter()
            .map(|(g, h)| serde_json::json!({"game": g, "hash": h.to_hex()}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "run": run.id, "iteration": i, "stored_in_run": owner.id, "games": v,
            }))?
        );
        return Ok(());
    }
    println!("run {} iteration {i}: {} games stored", run.id, games.len());
    for (g, h) in games {
        println!("{g:>6}  {h}");
    }
    Ok(())
}

/// The learning-rate schedule of a run's settings in words, e.g. "beta 1 for iterations
/// 1..50, 0.1 from iteration 51 (the paper's switch at the half; docs/search.md)".
fn schedule_in_words(settings: &serde_json::Value, planned: u32) -> Option<String> {
    let steps = settings.get("learning_rate")?.as_array()?;
    let steps: Vec<(u64, f64)> = steps
        .iter()
        .filter_map(|s| Some((s.get(0)?.as_u64()?, s.get(1)?.as_f64()?)))
        .collect();
    if steps.is_empty() {
        return None;
    }
    let mut parts = Vec::with_capacity(steps.len());
    for (k, &(from, beta)) in steps.iter().enumerate() {
        let to = steps.get(k + 1).map(|&(next, _)| next - 1);
        parts.push(match to {
            Some(to) if to >= from => format!("beta {beta} for iterations {from}..{to}"),
            Some(_) => continue,
            None if from <= 1 => format!("beta {beta} throughout"),
            None => format!("beta {beta} from iteration {from}"),
        });
    }
    let half = steps.len() == 2 && steps[1].0 == u64::from(planned) / 2 + 1;
    let why = if half {
        " (switching after half the iterations, as the paper's \"at the half\"; docs/search.md)"
    } else {
        ""
    };
    Some(format!("{}{why}", parts.join(", ")))
}
