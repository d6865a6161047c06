//! One run, many self-play workers, one trainer (docs/distributed.md).
//!
//! The trainer is the run's one writer: it works on the run as every run is worked on
//! (runs/iterate.rs), but an iteration's self-play games are played by whichever processes
//! serve the *exchange*, a directory every process can reach (a shared network filesystem
//! under Slurm), the trainer among them. Game g of iteration i is the same bits wherever it is
//! played: its randomness is its own stream `self-play(i,g)` of the run seed, its model the
//! one the trainer publishes, its start the one the trainer computed. The trainer takes the
//! games back in game-index order and goes on exactly as a one-process run does, so the head
//! is the one-process head for any number of workers and any assignment of games to them.
//!
//! **Transport: files written whole, then renamed.** Nothing in the exchange is a database:
//! SQLite's write-ahead log needs shared memory, which a network filesystem does not give
//! to processes on different nodes, so the store stays with the trainer alone. Every file is
//! written under a temporary name and renamed into place (atomic on POSIX filesystems and on
//! NFS), so a reader sees a whole file or none; a file that does not decode, or does not
//! belong to the task it sits in, is removed and its games played again.
//!
//! Layout of the exchange directory:
//! - `current`: one line, what the trainer wants now: `task ID`, `finished`, or `starting`;
//! - `tasks/ID/task`: the task ([`Task`]): the iteration, the stage's settings, the model
//!   (its full checkpoint's objects), the games' starts, the slice size;
//! - `tasks/ID/slice-K`: the records of the task's slice K (games K*S .. (K+1)*S - 1);
//! - `tasks/ID/claim-K`: who plays slice K now, rewritten every beat while it plays.
//!
//! **Claims and lost workers.** A process takes a slice by creating its claim file
//! exclusively (`O_EXCL`, which NFS v3 and later honour) and refreshes it every beat (a
//! quarter of the lease). A claim whose contents have not changed for a lease, as timed by the
//! process looking at it (no clocks are compared across nodes), is abandoned: its holder was
//! killed or lost its node. The looker removes it and claims the slice itself. Two processes
//! that both take over one slice play the same bits and write the same file: claims save work,
//! they never decide a result.

mod gather;
mod task;
mod worker;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use super::RunError;

pub(crate) use gather::Gather;
pub(crate) use task::{Task, object_bytes};
pub(crate) use worker::play_slice;
pub use worker::{SlicePlayed, WorkOptions, WorkSummary, work};

/// The shortest lease a claim may have.
pub const MIN_LEASE: Duration = Duration::from_millis(200);

/// An exchange directory and how this process uses it (see the module docs).
#[derive(Clone, Debug)]
pub struct Exchange {
    dir: PathBuf,
    /// A claim unchanged this long is abandoned.
    lease: Duration,
    /// How often a waiting process looks again.
    poll: Duration,
    /// This process in claims: `host:pid`.
    me: String,
    /// Games per slice; 0: chosen from the iteration's game count ([`Exchange::slice_for`]).
    slice: u32,
}

/// What `current` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Current {
    /// Nothing yet (no file, or a trainer starting up).
    Starting,
    /// Play the slices of task `ID`.
    Task(String),
    /// The trainer's run is over.
    Finished,
}

impl Exchange {
    /// The exchange at `dir` (created with its `tasks` folder if missing), its claims'
    /// lease `lease` (at least [`MIN_LEASE`]) and `slice` games per slice (0: chosen).
    pub fn open(dir: &Path, lease: Duration, slice: u32) -> Result<Exchange, RunError> {
        if lease < MIN_LEASE {
            return Err(RunError::Usage(format!(
                "--lease: {} s is too short; give at least {} s",
                lease.as_secs_f64(),
                MIN_LEASE.as_secs_f64()
            )));
        }
        let tasks = dir.join("tasks");
        fs::create_dir_all(&tasks).map_err(|e| io_err(&tasks, "create", e))?;
        let host = crate::store::host_name();
        Ok(Exchange {
            dir: dir.to_path_buf(),
            lease,
            poll: (lease / 300).clamp(Duration::from_millis(2), Duration::from_millis(100)),
            me: format!("{host}:{}", std::process::id()),
            slice,
        })
    }

    /// The exchange directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Games per slice for an iteration of `games` games: the one asked for, else about 32
    /// slices an iteration (enough to spread over many workers, few enough files).
    pub(crate) fn slice_for(&self, games: u32) -> u32 {
        match self.slice {
            0 => games.div_ceil(32).max(1),
            s => s,
        }
    }

    fn task_dir(&self, id: &str) -> PathBuf {
        self.dir.join("tasks").join(id)
    }

    /// What the trainer wants now.
    pub(crate) fn current(&self) -> Current {
        let text = fs::read_to_string(self.dir.join("current")).unwrap_or_default();
        match text.trim().split_once(' ') {
            Some(("task", id)) if valid_id(id) => Current::Task(id.to_string()),
            _ if text.trim() == "finished" => Current::Finished,
            _ => Current::Starting,
        }
    }

    /// Says what the trainer wants now (the trainer only).
    pub(crate) fn set_current(&self, c: &Current) -> Result<(), RunError> {
        let line = match c {
            Current::Starting => "starting\n".to_string(),
            Current::Task(id) => format!("task {id}\n"),
            Current::Finished => "finished\n".to_string(),
        };
        self.write_whole(&self.dir.join("current"), line.as_bytes())
    }

    /// Says the trainer's run is over: its workers stop.
    pub fn set_current_finished(&self) -> Result<(), RunError> {
        self.set_current(&Current::Finished)
    }

    /// Removes every task folder (the trainer, at the end of its run).
    pub(crate) fn remove_tasks(&self) {
        self.remove_where(|_| true);
    }

    /// Removes the folders of tasks of iterations before `iteration`, and of any other task
    /// of an iteration from `iteration` on but `keep` (an older publication of the run, or
    /// another run's).
    pub(crate) fn remove_tasks_before(&self, iteration: u32, keep: &str) {
        let current = keep.split('-').next().and_then(|i| i.parse::<u32>().ok());
        self.remove_where(|name| {
            let i = name.split('-').next().and_then(|i| i.parse::<u32>().ok());
            name != keep && (i < Some(iteration) || i == current)
        });
    }

    /// Removes the task folders whose names `doomed` picks (best effort: a folder another
    /// process is writing into is removed later).
    fn remove_where(&self, doomed: impl Fn(&str) -> bool) {
        let Ok(entries) = fs::read_dir(self.dir.join("tasks")) else {
            return;
        };
        for e in entries.flatten() {
            if doomed(&e.file_name().to_string_lossy()) {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }

    /// Writes `bytes` to `path` whole: under a temporary name of this process, then renamed
    /// into place. Not synced: a file a crash leaves short or empty does not decode, or is not
    /// what its task asked for, and is played again (the reader checks every file).
    pub(crate) fn write_whole(&self, path: &Path, bytes: &[u8]) -> Result<(), RunError> {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let tmp = path.with_file_name(format!(
            ".{}.{}.tmp",
            name.unwrap_or_default(),
            self.me.replace(['/', ':'], "_")
        ));
        let write = || -> std::io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(bytes)?;
            drop(f);
            fs::rename(&tmp, path)
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp);
            io_err(path, "write", e)
        })
    }

    /// Claim file of slice `k` of task `id`.
    fn claim_path(&self, id: &str, k: u32) -> PathBuf {
        self.task_dir(id).join(format!("claim-{k}"))
    }

    /// Result file of slice `k` of task `id`.
    pub(crate) fn slice_path(&self, id: &str, k: u32) -> PathBuf {
        self.task_dir(id).join(format!("slice-{k}"))
    }
}

/// Claims seen by this process: when each last changed, by this process's clock.
#[derive(Default)]
pub(crate) struct Watch {
    seen: std::collections::BTreeMap<PathBuf, (Vec<u8>, Instant)>,
}

impl Watch {
    /// Whether the claim at `path` (its contents `now`) has stayed the same for `lease`.
    fn abandoned(&mut self, path: &Path, now: Vec<u8>, lease: Duration) -> bool {
        match self.seen.get(path) {
            Some((before, since)) if *before == now => since.elapsed() >= lease,
            _ => {
                self.seen.insert(path.to_path_buf(), (now, Instant::now()));
                false
            }
        }
    }
}

/// A slice claimed by this process: its claim file is refreshed by [`Claim::beat`] and
/// removed when the claim is dropped.
pub(crate) struct Claim {
    path: PathBuf,
    beats: std::sync::atomic::AtomicU64,
    x: Exchange,
}

impl Claim {
    /// Rewrites the claim with a new beat count (so lookers see it change).
    pub(crate) fn beat(&self) {
        let n = self
            .beats
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let text = format!("{} beat {}\n", self.x.me, n + 1);
        // Best effort: a lost beat makes at worst another process play the slice too.
        let _ = self.x.write_whole(&self.path, text.as_bytes());
    }

    /// Beats every quarter lease while `f` runs on this thread; returns what `f` returns.
    /// The beating thread sleeps between beats and stops as soon as `f` returns (its channel
    /// is dropped).
    pub(crate) fn held<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let every = self.x.lease / 4;
        let (done, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            s.spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    self.beat();
                }
            });
            let out = f();
            drop(done);
            out
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

impl Exchange {
    /// Tries to claim slice `k` of task `id`: `None` when its result is there, or another
    /// process holds a claim that is not abandoned (`watch` times them).
    pub(crate) fn try_claim(&self, id: &str, k: u32, watch: &mut Watch) -> Option<Claim> {
        if self.slice_path(id, k).exists() {
            return None;
        }
        let path = self.claim_path(id, k);
        let create = || {
            fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
        };
        if create().is_err() {
            let now = fs::read(&path).ok()?;
            if !watch.abandoned(&path, now, self.lease) {
                return None;
            }
            // Abandoned: taken over (another looker may do the same; both play the same bits).
            let _ = fs::remove_file(&path);
            create().ok()?;
        }
        let claim = Claim {
            path,
            beats: 0.into(),
            x: self.clone(),
        };
        claim.beat();
        // Played meanwhile by a process that had it before us.
        if self.slice_path(id, k).exists() {
            return None;
        }
        Some(claim)
    }

    /// Waits one poll interval.
    pub(crate) fn pause(&self) {
        std::thread::sleep(self.poll);
    }
}

/// Task ids are made by the trainer: `I-HEX`, letters, digits and `-` only (a `current`
/// file naming anything else is not followed).
fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn io_err(path: &Path, what: &str, e: std::io::Error) -> RunError {
    RunError::Exchange(format!("cannot {what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(dir: &Path) -> Exchange {
        Exchange::open(dir, Duration::from_millis(300), 0).unwrap()
    }

    #[test]
    fn a_claim_is_exclusive_until_abandoned_and_released_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let a = exchange(dir.path());
        let mut b = exchange(dir.path());
        b.me = "other:1".into();
        fs::create_dir_all(a.task_dir("1-ab")).unwrap();
        let (mut wa, mut wb) = (Watch::default(), Watch::default());
        let claim = a
            .try_claim("1-ab", 0, &mut wa)
            .expect("a free slice is claimed");
        assert!(b.try_claim("1-ab", 0, &mut wb).is_none(), "held");
        // Kept alive by beats: never abandoned.
        let kept = claim.held(|| {
            std::thread::sleep(Duration::from_millis(500));
            b.try_claim("1-ab", 0, &mut wb).is_none()
        });
        assert!(kept, "a beating claim is not taken over");
        drop(claim);
        // A claim nobody beats any more (its holder was killed): taken over after a lease.
        fs::write(a.claim_path("1-ab", 0), "dead:7 beat 3\n").unwrap();
        assert!(b.try_claim("1-ab", 0, &mut wb).is_none());
        std::thread::sleep(Duration::from_millis(350));
        let taken = b
            .try_claim("1-ab", 0, &mut wb)
            .expect("abandoned claims are taken over");
        drop(taken);
        assert!(
            !a.claim_path("1-ab", 0).exists(),
            "dropped claims are removed"
        );
        // A slice with its result is never claimed.
        a.write_whole(&a.slice_path("1-ab", 1), b"x").unwrap();
        assert!(a.try_claim("1-ab", 1, &mut wa).is_none());
    }

    #[test]
    fn current_round_trips_and_ignores_what_it_does_not_know() {
        let dir = tempfile::tempdir().unwrap();
        let x = exchange(dir.path());
        assert_eq!(x.current(), Current::Starting);
        for c in [
            Current::Task("3-00ff".into()),
            Current::Finished,
            Current::Starting,
        ] {
            x.set_current(&c).unwrap();
            assert_eq!(x.current(), c);
        }
        fs::write(dir.path().join("current"), "task ../../etc\n").unwrap();
        assert_eq!(x.current(), Current::Starting);
        assert!(Exchange::open(dir.path(), Duration::from_millis(10), 0).is_err());
    }
}
