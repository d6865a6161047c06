//! `tabula sweep`: run a sweep file's runs (or one shard of them) into the store.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::bail;
use indicatif::ProgressBar;
use tabula::experiments::cost::{Costs, grouped, hms};
use tabula::experiments::sweep::{
    Options, Outcome, Plan, PlannedRun, Progress, RunResult, Shard, Standing, Sweep,
    calibrate_pending, run, standing,
};
use tabula::store::Store;

use super::args::SweepArgs;
use serde::Serialize;

use super::output::{JsonLayout, Report, emit, outln};

/// The most runs a sweep runs at once (each with at least one thread): as many as the most
/// threads a command starts.
const MAX_JOBS: usize = super::common::MAX_THREADS;

/// A bar over the self-play games on a terminal; a line per finished run (its final
/// metrics, the ETA) everywhere, so batch logs show progress too.
struct Console {
    bar: ProgressBar,
    json: bool,
    total: AtomicU64,
    done: AtomicU64,
    started: Instant,
    /// The measured costs and the runs still to end (index, point, iterations left), for the
    /// ETA; the jobs at once.
    plan: Mutex<Option<Plan>>,
    lines: Mutex<()>,
}

impl Console {
    fn line(&self, text: String) {
        if self.json {
            return;
        }
        let _guard = self.lines.lock();
        if self.bar.is_hidden() {
            outln!("{text}");
        } else {
            self.bar.println(text);
        }
    }

    /// The ETA after run `r` ended: the measured seconds per iteration of each grid point
    /// (the nearest measured points for one not yet measured) times the iterations left, over
    /// the jobs; from the share of self-play done while nothing is measured.
    fn eta(&self, r: &RunResult, elapsed: f64) -> String {
        let mut plan = self.plan.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(plan) = plan.as_mut() {
            if r.error.is_none() && r.iterations_run > 0 {
                plan.costs.add(r.point, r.seconds, r.iterations_run);
            }
            plan.pending.retain(|(k, _, _)| *k != r.index);
            let left: Vec<(u32, u32)> = plan.pending.iter().map(|&(_, p, n)| (p, n)).collect();
            if left.is_empty() {
                return "0:00:00".into();
            }
            if let Some(s) = plan.costs.estimate(&left) {
                // Fewer runs left than jobs: only as many run at once.
                let at_once = plan.jobs.min(left.len()).max(1);
                return format!("{} (measured cost per grid point)", hms(s / at_once as f64));
            }
        }
        let (d, t) = (
            self.done.load(Ordering::SeqCst) as f64,
            self.total.load(Ordering::SeqCst) as f64,
        );
        if d > 0.0 && t > d {
            format!("{} (share of self-play done)", hms(elapsed * (t - d) / d))
        } else {
            "0:00:00".into()
        }
    }
}

/// A run's final metrics in a progress line: WR_p, ERR_p and MAE_v where the learner has
/// them, else its first three.
fn headline(metrics: &[(String, f64)]) -> String {
    let get = |n: &str| metrics.iter().find(|(m, _)| m == n).map(|(_, v)| *v);
    let named: Vec<String> = [
        ("wr_p", "WR_p", 3),
        ("err_p", "ERR_p", 4),
        ("mae_v", "MAE_v", 4),
    ]
    .iter()
    .filter_map(|&(n, shown, d)| get(n).map(|v| format!("{shown} {v:.d$}")))
    .collect();
    if !named.is_empty() {
        return named.join("  ");
    }
    metrics
        .iter()
        .take(3)
        .map(|(n, v)| format!("{n} {v:.4}"))
        .collect::<Vec<_>>()
        .join("  ")
}

/// `1 run` or `12 runs`.
fn runs_text(n: usize) -> String {
    if n == 1 {
        "1 run".into()
    } else {
        format!("{n} runs")
    }
}

/// The self-play ahead in words: the iterations, and the games when every run plays M games
/// an iteration (a budget's games are not known before they are played).
fn work_text(plan: &Plan) -> String {
    let iterations: u64 = plan.pending.iter().map(|p| u64::from(p.2)).sum();
    let its = format!("{} iterations", grouped(iterations));
    match plan.budget_runs {
        0 => format!("{its}, {} self-play games", grouped(plan.games)),
        b if b == plan.runs => format!("{its}, each a self-play budget"),
        b => {
            format!("{its}; {b} of the runs play a self-play budget an iteration, the others games")
        }
    }
}

impl Progress for Console {
    fn start(&self, plan: &Plan) {
        self.total.store(plan.games, Ordering::SeqCst);
        self.bar.set_length(plan.games);
        self.bar.set_message(format!("{} runs", plan.runs));
        let left: Vec<(u32, u32)> = plan.pending.iter().map(|&(_, p, n)| (p, n)).collect();
        let at_once = plan.jobs.min(left.len()).max(1);
        let cost = match plan.costs.estimate(&left) {
            Some(s) => format!(
                "; about {} at {at_once} at once (seconds per iteration by grid point: \
                 measured in the store, else calibrated on iteration 1)",
                hms(s / at_once as f64),
            ),
            None if left.is_empty() => String::new(),
            None => "; cost unknown (grid points neither measured nor calibrated)".to_string(),
        };
        self.line(format!(
            "{} to run ({}), {} already finished{cost}",
            runs_text(plan.runs),
            work_text(plan),
            plan.skipped
        ));
        *self.plan.lock().unwrap_or_else(|p| p.into_inner()) = Some(plan.clone());
    }

    fn calibrating(&self, points: usize, threads: usize) {
        self.line(calibrating_text(points, threads));
    }

    fn calibrated(&self, point: u32, range: (u32, u32), seconds: f64) {
        self.line(calibrated_text(point, range, seconds));
    }

    fn advance(&self, games: u64) {
        self.done.fetch_add(games, Ordering::SeqCst);
        self.bar.inc(games);
    }

    fn run_done(&self, r: &RunResult, done: usize, of: usize) {
        let elapsed = self.started.elapsed().as_secs_f64();
        let eta = self.eta(r, elapsed);
        self.bar.set_message(format!("runs {done}/{of}"));
        let what = match &r.error {
            Some(e) => format!("FAILED: {e}"),
            None if r.metrics.is_empty() => "no metrics".into(),
            None => headline(&r.metrics),
        };
        self.line(format!(
            "[{done}/{of}] run {} {}  {what}  ({} iterations, {:.1} s); elapsed {}, ETA {eta}",
            r.run_id,
            r.name,
            r.iterations_run,
            r.seconds,
            hms(elapsed)
        ));
    }
}

impl Console {
    fn new(json: bool) -> Console {
        Console {
            bar: if json {
                ProgressBar::hidden()
            } else {
                super::progress::bar(0, "sweep")
            },
            json,
            total: AtomicU64::new(0),
            done: AtomicU64::new(0),
            started: Instant::now(),
            plan: Mutex::new(None),
            lines: Mutex::new(()),
        }
    }
}

pub(crate) fn sweep(db: Option<&Path>, args: &SweepArgs) -> anyhow::Result<()> {
    let shard: Option<Shard> = args.shard.as_deref().map(str::parse).transpose()?;
    // Every flag is checked before the sweep file is read, also for --dry-run.
    super::common::check_count("--jobs", args.jobs, 1, MAX_JOBS, "runs at once")?;
    super::common::check_threads(args.threads)?;
    super::common::check_annotations(&args.annotate)?;
    let sweep = Sweep::load(&args.file)?;
    let path = Store::resolve_path(db);
    if args.dry_run {
        return dry_run(&path, &sweep, shard, args);
    }
    if args.annotate.note.is_some() || !args.annotate.tags.is_empty() {
        let mut store = Store::open(&path)?;
        let on = tabula::store::Subject::Sweep(sweep.name.clone());
        super::common::annotate(&mut store, &on, &args.annotate)?;
    }
    let console = Console::new(args.json);
    console.line(format!(
        "sweep {} ({}) into {}: {} runs{}",
        sweep.name,
        sweep.hash.short(),
        path.display(),
        sweep.runs.len(),
        shard.map_or(String::new(), |s| format!(
            ", shard {}/{}",
            s.index, s.count
        ))
    ));
    let opts = Options {
        jobs: args.jobs,
        threads: args.threads,
        shard,
        extend: args.extend,
        calibrate: !args.no_calibrate,
    };
    let out = run(&path, &sweep, &opts, &console);
    console.bar.finish_and_clear();
    let out = out?;
    emit(&SweepDone(&out), args.json)?;
    refuse_failed(&out)
}

/// `--dry-run`: the runs of the sweep (or of its shard), each with its state in the store,
/// and the estimated cost of those left; written nowhere (a calibration plays into a
/// temporary store of its own).
fn dry_run(
    path: &Path,
    sweep: &Sweep,
    shard: Option<Shard>,
    args: &SweepArgs,
) -> anyhow::Result<()> {
    let store = if path.exists() {
        Some(Store::open_read_only(path)?)
    } else {
        None
    };
    let standing = match &store {
        Some(s) => standing(s, sweep)?,
        None => Standing::New,
    };
    let rows_by_name: BTreeMap<String, (u32, u32)> = match &store {
        Some(s) => s
            .runs()?
            .into_iter()
            .map(|r| (r.name, (r.iterations_done, r.iterations_planned)))
            .collect(),
        None => Default::default(),
    };
    let mine: Vec<&PlannedRun> = sweep
        .runs
        .iter()
        .filter(|r| shard.is_none_or(|s| s.contains(r.index)))
        .collect();
    // Iterations left per run (its committed ones count as done).
    let left: Vec<(u32, u32)> = mine
        .iter()
        .map(|r| {
            let done = rows_by_name.get(&r.cfg.name).map_or(0, |&(d, _)| d);
            (r.point, r.cfg.iterations.saturating_sub(done))
        })
        .filter(|&(_, n)| n > 0)
        .collect();
    let mut costs = match &store {
        Some(s) => Costs::from_store(s, sweep)?,
        None => Costs::new(sweep),
    };
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let per_run = (threads / args.jobs.max(1)).max(1);
    let calibration = Instant::now();
    // Iteration 1 of the grid points the store has not measured, timed in a temporary store.
    let lines = DryRunLines { json: args.json };
    let calibrated = calibrate_pending(sweep, &left, per_run, &mut costs, &lines)?;
    let jobs = args.jobs.min(left.len()).max(1);
    let report = DryRun {
        sweep: sweep.name.clone(),
        hash: sweep.hash.to_hex(),
        standing: standing_in_words(&standing, sweep),
        runs: mine
            .iter()
            .map(|r| DryRunRow::of(r, rows_by_name.get(&r.cfg.name), &costs))
            .collect(),
        estimated_seconds: costs.estimate(&left).map(|s| s / jobs as f64),
        jobs,
        threads_per_run: per_run,
        calibration_seconds: calibration.elapsed().as_secs_f64(),
        points: sweep.points(),
        seeds: sweep.record.seeds.len(),
        runs_in_all: sweep.runs.len(),
        left: left.len(),
        left_iterations: left.iter().map(|&(_, n)| n).sum(),
        calibrated,
    };
    emit(&report, args.json)
}

/// What a dry run's calibration says on the terminal (nothing with `--json`).
struct DryRunLines {
    json: bool,
}

impl Progress for DryRunLines {
    fn calibrating(&self, points: usize, threads: usize) {
        if !self.json {
            outln!("{}", calibrating_text(points, threads));
        }
    }

    fn calibrated(&self, point: u32, range: (u32, u32), seconds: f64) {
        if !self.json {
            outln!("{}", calibrated_text(point, range, seconds));
        }
    }
}

/// The line before a calibration of `points` grid points on `threads` threads.
fn calibrating_text(points: usize, threads: usize) -> String {
    format!(
        "calibrating: iteration 1 (of each stage, in a staged run) of the first run of {points} \
         grid points not measured in the store, on {threads} threads, in a temporary store"
    )
}

/// The line of a calibrated grid point.
fn calibrated_text(point: u32, (a, b): (u32, u32), seconds: f64) -> String {
    format!("  point {point}, iterations {a}-{b}: {seconds:.2} s per iteration")
}

/// Where the sweep file stands against the store, in words.
fn standing_in_words(standing: &Standing, sweep: &Sweep) -> String {
    match standing {
        Standing::New => "new: no sweep of this name in the store".to_string(),
        Standing::Same => "in the store: running it continues it".to_string(),
        Standing::Grows {
            old,
            old_runs,
            added,
        } => format!(
            "grows the stored sweep of this name ({}, {old_runs} runs) by {} runs ({added}): \
             run it with --extend",
            old.hash.short(),
            sweep.runs.len() - old_runs
        ),
    }
}

/// `sweep --dry-run`: the runs with their state in the store, and the estimated cost.
#[derive(Serialize)]
struct DryRun {
    sweep: String,
    hash: String,
    standing: String,
    runs: Vec<DryRunRow>,
    /// Wall-clock seconds for the runs left at `jobs` at once; `None` if nothing is measured
    /// (or nothing is left).
    estimated_seconds: Option<f64>,
    jobs: usize,
    threads_per_run: usize,
    calibration_seconds: f64,
    /// The text's counts: grid points, seeds and runs of the whole sweep; runs and
    /// iterations left of this share; whether a calibration measured any point.
    #[serde(skip)]
    points: usize,
    #[serde(skip)]
    seeds: usize,
    #[serde(skip)]
    runs_in_all: usize,
    #[serde(skip)]
    left: usize,
    #[serde(skip)]
    left_iterations: u32,
    #[serde(skip)]
    calibrated: bool,
}

/// A run of the dry run.
#[derive(Serialize)]
struct DryRunRow {
    index: usize,
    point: u32,
    seed: u64,
    name: String,
    point_values: serde_json::Value,
    iterations: u32,
    run_hash: String,
    /// `new`, `finished` or `D/N iterations`.
    state: String,
    seconds_per_iteration: Option<f64>,
}

impl DryRunRow {
    /// Run `r`, with `(done, planned)` iterations of the store's run of its name if any.
    fn of(r: &PlannedRun, stored: Option<&(u32, u32)>, costs: &Costs) -> DryRunRow {
        let state = match stored {
            Some(&(d, n)) if d >= n => "finished".to_string(),
            Some(&(d, n)) => format!("{d}/{n} iterations"),
            None => "new".to_string(),
        };
        DryRunRow {
            index: r.index,
            point: r.point,
            seed: r.seed,
            name: r.cfg.name.clone(),
            point_values: serde_json::from_str(&r.point_json).unwrap_or_default(),
            iterations: r.cfg.iterations,
            run_hash: r.run_hash.to_hex(),
            state,
            seconds_per_iteration: costs.per_iteration(r.point),
        }
    }
}

impl Report for DryRun {
    const JSON: JsonLayout = JsonLayout::Pretty;
}

impl std::fmt::Display for DryRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "sweep {} ({}): {} grid points x {} seeds = {} runs; {}",
            self.sweep,
            &self.hash[..12],
            self.points,
            self.seeds,
            self.runs_in_all,
            self.standing
        )?;
        // The index unpadded: the text this replaced formatted a JSON value, whose `Display`
        // ignores the width it was given (`{:>4}`); the bytes are kept.
        for r in &self.runs {
            writeln!(
                f,
                "{}  {}  {} iterations  run {}  {}",
                r.index,
                r.name,
                r.iterations,
                &r.run_hash[..12],
                r.state
            )?;
        }
        match self.estimated_seconds {
            Some(s) => writeln!(
                f,
                "estimated cost: {} wall clock for {} runs ({} iterations) at {} at once x {} \
                 threads (seconds per iteration by grid point: {}; calibration took {:.1} s)",
                hms(s),
                self.left,
                self.left_iterations,
                self.jobs,
                self.threads_per_run,
                if self.calibrated {
                    "measured in the store, else calibrated on iteration 1, which can differ \
                     from later iterations"
                } else {
                    "measured in the store"
                },
                self.calibration_seconds
            ),
            None if self.left == 0 => writeln!(f, "estimated cost: nothing left to run"),
            None => writeln!(f, "estimated cost: unknown (nothing measured)"),
        }
    }
}

/// The end of the sweep's share that ran here: the library's outcome as it is.
#[derive(Serialize)]
#[serde(transparent)]
struct SweepDone<'a>(&'a Outcome);

impl Report for SweepDone<'_> {
    const JSON: JsonLayout = JsonLayout::Pretty;
    const SORTED_KEYS: bool = false;
}

impl std::fmt::Display for SweepDone<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let out = self.0;
        let count = |status: &str| out.runs.iter().filter(|r| r.status == status).count();
        writeln!(
            f,
            "sweep {} done: {} runs ({} ran now, {} already finished, {} failed) in {:.1} s, \
             {} at once x {} threads",
            out.sweep,
            out.runs.len(),
            count("done"),
            count("finished"),
            out.failed(),
            out.seconds,
            out.jobs,
            out.threads_per_run
        )?;
        writeln!(f, "sweep record {}", out.hash.to_hex())
    }
}

/// Exits non-zero, naming them, when runs failed (the others went on).
fn refuse_failed(out: &Outcome) -> anyhow::Result<()> {
    if out.failed() == 0 {
        return Ok(());
    }
    let names: Vec<String> = out
        .runs
        .iter()
        .filter(|r| r.status == "failed")
        .map(|r| format!("{} ({})", r.name, r.error.clone().unwrap_or_default()))
        .collect();
    bail!(
        "{} runs failed: {}; run the same command again to continue them",
        names.len(),
        names.join("; ")
    )
}
