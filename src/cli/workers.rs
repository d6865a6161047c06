//! Where a run's self-play games are played (`--workers`, `--exchange`; docs/distributed.md):
//! the trainer's exchange, the worker processes it starts on this machine, and the Slurm task
//! that serves the exchange instead of training. Shared by `run`, `resume` and `worker`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tabula::runs::{Exchange, SlicePlayed, WorkOptions};

use super::args::SpreadArgs;
use super::common::pool;
use super::output::outln;

/// What this process is to a run spread over processes.
pub(crate) enum Role {
    /// The trainer (or a run in one process: no exchange).
    Trainer(Spread),
    /// A Slurm task other than task 0: it serves the exchange.
    Worker(Exchange),
}

/// The trainer's exchange and the worker processes it started (stopped when dropped).
#[derive(Default)]
pub(crate) struct Spread {
    pub exchange: Option<Exchange>,
    children: Vec<Child>,
    /// An exchange folder made for local workers (removed when dropped).
    made: Option<PathBuf>,
}

/// This process's role from `--workers`, `--exchange` and Slurm's `SLURM_PROCID`; local
/// workers are started here.
pub(crate) fn role(args: &SpreadArgs) -> anyhow::Result<Role> {
    let lease = lease(args.lease)?;
    let slice = match args.slice {
        Some(0) => bail!("--slice 0: give at least 1 game a slice (or leave it out)"),
        s => s.unwrap_or(0),
    };
    let task = slurm_task()?;
    if let (Some(dir), Some(t)) = (&args.exchange, task)
        && t > 0
    {
        if args.workers.is_some() {
            bail!("--workers starts processes on this machine; under srun give --exchange alone")
        }
        return Ok(Role::Worker(Exchange::open(dir, lease, slice)?));
    }
    let n = args.workers.unwrap_or(0);
    if n > 256 {
        bail!("--workers {n}: give 0 to 256 (one process a core is enough)")
    }
    let mut spread = Spread::default();
    let dir = match (&args.exchange, n) {
        (Some(d), _) => d.clone(),
        (None, 0) => return Ok(Role::Trainer(spread)),
        (None, _) => {
            let d = std::env::temp_dir().join(format!("tabula-exchange-{}", std::process::id()));
            spread.made = Some(d.clone());
            d
        }
    };
    let x = Exchange::open(&dir, lease, slice)?;
    spread.children = start_workers(&x, n, args.lease)?;
    spread.exchange = Some(x);
    Ok(Role::Trainer(spread))
}

/// `--lease` checked.
pub(crate) fn lease(seconds: f64) -> anyhow::Result<Duration> {
    let min = tabula::runs::MIN_LEASE.as_secs_f64();
    if !seconds.is_finite() || !(min..=86_400.0).contains(&seconds) {
        bail!("--lease {seconds}: give {min} to 86400 seconds")
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// This process's Slurm task (`SLURM_PROCID`), if it runs under srun.
fn slurm_task() -> anyhow::Result<Option<u32>> {
    match std::env::var("SLURM_PROCID") {
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .with_context(|| format!("SLURM_PROCID={v:?} is not a task number")),
        Err(_) => Ok(None),
    }
}

/// Starts `n` `tabula worker` processes on this machine serving `x`, the cores shared out.
fn start_workers(x: &Exchange, n: u32, lease: f64) -> anyhow::Result<Vec<Child>> {
    let exe = std::env::current_exe().context("finding this program to start its workers")?;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let threads = (cores / n.max(1) as usize).max(1);
    let mut children = Vec::new();
    for _ in 0..n {
        let child = Command::new(&exe)
            .arg("worker")
            .arg(x.dir())
            .args(["--threads", &threads.to_string()])
            .args([
                "--lease",
                &lease.to_string(),
                "--idle-exit",
                "120",
                "--quiet",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("starting a worker ({})", exe.display()))?;
        children.push(child);
    }
    Ok(children)
}

impl Drop for Spread {
    fn drop(&mut self) {
        if let Some(x) = &self.exchange {
            // The run says so when it ends; said again for a run that never started (a bad
            // spec), so that workers started beside it under srun stop now.
            let _ = x.set_current_finished();
        }
        let until = Instant::now() + Duration::from_secs(10);
        for c in &mut self.children {
            while Instant::now() < until && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(d) = &self.made {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Serves `x` as a worker (`tabula worker`, a Slurm task other than 0): a line per slice
/// unless `quiet`, what it played at the end.
pub(crate) fn serve(
    x: &Exchange,
    threads: Option<usize>,
    idle_exit: f64,
    quiet: bool,
    json: bool,
) -> anyhow::Result<()> {
    if !idle_exit.is_finite() || !(1.0..=604_800.0).contains(&idle_exit) {
        bail!("--idle-exit {idle_exit}: give 1 to 604800 seconds")
    }
    let pool = pool(threads)?;
    let opts = WorkOptions {
        idle_exit: Duration::from_secs_f64(idle_exit),
        grace: Duration::from_secs(120).min(Duration::from_secs_f64(idle_exit)),
    };
    let mut line = |s: &SlicePlayed| {
        if !quiet && !json {
            eprintln!(
                "iteration {}: games {}..{} (slice {}) in {:.2} s",
                s.iteration,
                s.games.start,
                s.games.end - 1,
                s.slice,
                s.seconds
            );
        }
    };
    let summary = pool.install(|| tabula::runs::work(x, &opts, &mut line))?;
    if json {
        outln!("{}", serde_json::to_string(&summary)?);
    } else {
        outln!(
            "worker: {} games in {} slices of {} tasks, {:.1} s playing of {:.1} s; stopped: {}",
            summary.games,
            summary.slices,
            summary.tasks,
            summary.play_seconds,
            summary.seconds,
            summary.stopped
        );
    }
    Ok(())
}
