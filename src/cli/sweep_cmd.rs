//! `tabula sweep`: run a sweep file's runs (or one shard of them) into the store.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::bail;
use indicatif::ProgressBar;
use tabula::experiments::sweep::{Options, Outcome, Progress, RunResult, Shard, Sweep, run};
use tabula::store::Store;

use super::args::SweepArgs;
use super::output::outln;

/// The most runs a sweep runs at once (each with at least one thread): as many as the most
/// threads a command starts.
const MAX_JOBS: usize = super::common::MAX_THREADS;

/// A bar over the self-play games on a terminal; a line per finished run (with the ETA)
/// everywhere, so batch logs show progress too.
struct Console {
    bar: ProgressBar,
    json: bool,
    total: AtomicU64,
    done: AtomicU64,
    started: Instant,
    lines: Mutex<()>,
}

fn hms(s: f64) -> String {
    let s = s.max(0.0) as u64;
    format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
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
}

impl Progress for Console {
    fn start(&self, runs: usize, skipped: usize, games: u64) {
        self.total.store(games, Ordering::SeqCst);
        self.bar.set_length(games);
        self.bar.set_message(format!("{runs} runs"));
        self.line(format!(
            "{runs} runs to run ({games} self-play games, or thousandths of a budget per \
             iteration), {skipped} already finished"
        ));
    }

    fn advance(&self, games: u64) {
        self.done.fetch_add(games, Ordering::SeqCst);
        self.bar.inc(games);
    }

    fn run_done(&self, r: &RunResult, done: usize, of: usize) {
        let elapsed = self.started.elapsed().as_secs_f64();
        let (d, t) = (
            self.done.load(Ordering::SeqCst) as f64,
            self.total.load(Ordering::SeqCst) as f64,
        );
        let eta = if d > 0.0 && t > d {
            hms(elapsed * (t - d) / d)
        } else {
            "0:00:00".into()
        };
        self.bar.set_message(format!("runs {done}/{of}"));
        let what = match (&r.error, r.head) {
            (Some(e), _) => format!("FAILED: {e}"),
            (None, Some(h)) => format!("head {}", h.short()),
            (None, None) => "no head".into(),
        };
        self.line(format!(
            "[{done}/{of}] run {} {} {what} ({:.1} s); elapsed {}, ETA {eta}",
            r.run_id,
            r.name,
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
            lines: Mutex::new(()),
        }
    }
}

pub(crate) fn sweep(db: Option<&Path>, args: &SweepArgs) -> anyhow::Result<()> {
    let shard: Option<Shard> = args.shard.as_deref().map(str::parse).transpose()?;
    // Every flag is checked before the sweep file is read, also for --dry-run.
    super::common::check_count("--jobs", args.jobs, 1, MAX_JOBS, "runs at once")?;
    super::common::check_threads(args.threads)?;
    let sweep = Sweep::load(&args.file)?;
    if args.dry_run {
        return dry_run(&sweep, shard, args.json);
    }
    let path = Store::resolve_path(db);
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
    };
    let out = run(&path, &sweep, &opts, &console);
    console.bar.finish_and_clear();
    let out = out?;
    print_outcome(&out, args.json)?;
    refuse_failed(&out)
}

/// `--dry-run`: the runs of the sweep (or of its shard), written nowhere.
fn dry_run(sweep: &Sweep, shard: Option<Shard>, json: bool) -> anyhow::Result<()> {
    let rows: Vec<serde_json::Value> = sweep
        .runs
        .iter()
        .filter(|r| shard.is_none_or(|s| s.contains(r.index)))
        .map(|r| {
            serde_json::json!({
                "index": r.index, "point": r.point, "seed": r.seed, "name": r.cfg.name,
                "point_values": serde_json::from_str::<serde_json::Value>(&r.point_json).unwrap_or_default(),
                "iterations": r.cfg.iterations, "run_hash": r.run_hash.to_hex(),
            })
        })
        .collect();
    if json {
        let v = serde_json::json!({"sweep": sweep.name, "hash": sweep.hash.to_hex(), "runs": rows});
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    outln!(
        "sweep {} ({}): {} grid points x {} seeds = {} runs",
        sweep.name,
        sweep.hash.short(),
        sweep.points(),
        sweep.record.seeds.len(),
        sweep.runs.len()
    );
    for r in &rows {
        outln!(
            "{:>4}  {}  {} iterations  run {}",
            r["index"],
            r["name"].as_str().unwrap_or(""),
            r["iterations"],
            &r["run_hash"].as_str().unwrap_or("")[..12]
        );
    }
    Ok(())
}

/// The end of the sweep's share that ran here.
fn print_outcome(out: &Outcome, json: bool) -> anyhow::Result<()> {
    if json {
        outln!("{}", serde_json::to_string_pretty(out)?);
        return Ok(());
    }
    outln!(
        "sweep {} done: {} runs ({} ran now, {} already finished, {} failed) in {:.1} s, \
         {} at once x {} threads",
        out.sweep,
        out.runs.len(),
        out.runs.iter().filter(|r| r.status == "done").count(),
        out.runs.iter().filter(|r| r.status == "finished").count(),
        out.failed(),
        out.seconds,
        out.jobs,
        out.threads_per_run
    );
    outln!("sweep record {}", out.hash.to_hex());
    Ok(())
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
