//! One run spread over worker processes (docs/distributed.md, runs/exchange): the head is the
//! one-process head for any number of workers, and kill -9 of a worker in the middle of an
//! iteration, or of the trainer, ends at the uninterrupted head. Workers here are local
//! processes; `make slurm-check` runs the same under a real Slurm.

use crate::binary;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use binary::{bin, json, tabula};

/// Small versions of the specs the issue names: the tabular quick run, the network tiny run
/// and the staged Chinese Checkers pipeline.
const QUICK: &[&str] = &[
    "runs/quick.toml",
    "--set",
    "iterations=3",
    "--set",
    "games_per_iteration=48",
    "--set",
    "eval.games=200",
    "--set",
    "search.simulations=24",
];
const NETWORK: &[&str] = &["runs/network-tiny.toml", "--set", "iterations=3"];
const STAGED: &[&str] = &["runs/checkers-tiny-pipeline.toml"];
/// An input that reads the game's past: a worker's lanes hand the network the history the
/// trainer's would.
const HISTORY: &[&str] = &["runs/checkers-tiny-liu.toml"];

fn head_of(out: &serde_json::Value) -> String {
    out["head"].as_str().expect("a head").to_string()
}

/// The head of `spec` run in one process (`extra` added to the command line).
fn run(db: &Path, spec: &[&str], extra: &[&str]) -> String {
    let mut args = vec!["run"];
    args.extend_from_slice(spec);
    args.extend_from_slice(&["--threads", "1", "--json"]);
    args.extend_from_slice(extra);
    head_of(&json(&tabula(db, &args)))
}

#[test]
fn heads_are_the_one_process_heads_with_1_2_and_3_workers() {
    let dir = tempfile::tempdir().unwrap();
    let db = |name: &str| dir.path().join(format!("{name}.db"));
    let every = [NETWORK, &["--set", "eval.every=2"]].concat();
    for (name, spec, counts) in [
        ("quick", QUICK, &[1, 2, 3][..]),
        ("network", NETWORK, &[2][..]),
        ("every", &every[..], &[2][..]),
        ("staged", STAGED, &[3][..]),
        ("history", HISTORY, &[2][..]),
    ] {
        let one = run(&db(&format!("{name}-0")), spec, &[]);
        for n in counts {
            let workers = n.to_string();
            // Small slices, so that every process plays some.
            let extra = ["--workers", &workers, "--slice", "3", "--lease", "2"];
            let spread = run(&db(&format!("{name}-{n}")), spec, &extra);
            assert_eq!(spread, one, "{name} with {n} workers");
        }
    }
}

/// A worker process serving `exchange` (killed when dropped).
struct Worker(Child);

impl Worker {
    fn start(exchange: &Path) -> Worker {
        let child = bin()
            .arg("worker")
            .arg(exchange)
            .args([
                "--threads",
                "1",
                "--lease",
                "1",
                "--idle-exit",
                "120",
                "--quiet",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("a worker starts");
        Worker(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The trainer of `spec` on `exchange`, in the background.
fn trainer(db: &Path, exchange: &Path, args: &[&str]) -> Child {
    bin()
        .arg("--db")
        .arg(db)
        .args(args)
        .arg("--exchange")
        .arg(exchange)
        .args(["--lease", "1", "--slice", "4", "--threads", "1", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the trainer starts")
}

/// Waits until `found` finds something in the exchange's task folders (a file it names), at
/// most 120 s.
fn wait_for(exchange: &Path, what: &str, found: impl Fn(&Path, &str) -> bool) -> PathBuf {
    let until = Instant::now() + Duration::from_secs(120);
    while Instant::now() < until {
        for task in std::fs::read_dir(exchange.join("tasks"))
            .into_iter()
            .flatten()
        {
            let task = task.unwrap().path();
            for f in std::fs::read_dir(&task).into_iter().flatten() {
                let f = f.unwrap().path();
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                if found(&task, &name) {
                    return f;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("never saw {what}");
}

fn finished_head(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the trainer failed");
    head_of(&serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn a_worker_killed_mid_iteration_costs_only_its_slice() {
    let dir = tempfile::tempdir().unwrap();
    let spec = [NETWORK, &["--set", "games_per_iteration=200"]].concat();
    let one = run(&dir.path().join("one.db"), &spec, &[]);
    let exchange = dir.path().join("ex");
    let (mut doomed, _other) = (Worker::start(&exchange), Worker::start(&exchange));
    let mut args = vec!["run"];
    args.extend_from_slice(&spec);
    let t = trainer(&dir.path().join("spread.db"), &exchange, &args);
    // A claim held by the doomed worker in iteration 2: it dies holding it.
    let mine = format!(":{} beat", doomed.pid());
    wait_for(
        &exchange,
        "the worker's claim in iteration 2",
        |task, name| {
            let iteration_2 = task
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("2-");
            iteration_2
                && name.starts_with("claim-")
                && std::fs::read_to_string(task.join(name)).is_ok_and(|c| c.contains(&mine))
        },
    );
    doomed.0.kill().unwrap();
    let _ = doomed.0.wait();
    assert_eq!(finished_head(t), one);
}

#[test]
fn a_trainer_killed_mid_iteration_resumes_to_the_same_head() {
    let dir = tempfile::tempdir().unwrap();
    let spec = [NETWORK, &["--set", "games_per_iteration=200"]].concat();
    let one = run(&dir.path().join("one.db"), &spec, &[]);
    let (exchange, db) = (dir.path().join("ex"), dir.path().join("spread.db"));
    let _worker = Worker::start(&exchange);
    let mut args = vec!["run"];
    args.extend_from_slice(&spec);
    let mut t = trainer(&db, &exchange, &args);
    wait_for(&exchange, "a slice of iteration 2", |task, name| {
        task.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("2-")
            && name.starts_with("slice-")
    });
    t.kill().unwrap();
    let _ = t.wait();
    let resumed = trainer(&db, &exchange, &["resume", "network-tiny"]);
    let out = resumed.wait_with_output().unwrap();
    assert!(out.status.success());
    let status = json(&tabula(&db, &["ls", "--json"]));
    let row = &status.as_array().unwrap()[0];
    assert_eq!(row["iterations_done"], 3, "{status}");
    assert_eq!(row["head"].as_str().unwrap(), one);
}

#[test]
fn bad_spread_arguments_are_refused_with_what_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    for (args, says) in [
        (
            vec!["--lease", "0.01"],
            "--lease 0.01: give 0.2 to 86400 seconds",
        ),
        (vec!["--slice", "0"], "--slice 0"),
        (vec!["--workers", "999"], "--workers 999: give 0 to 256"),
    ] {
        let mut all = vec!["run"];
        all.extend_from_slice(QUICK);
        all.extend_from_slice(&args);
        let err = binary::fails(&tabula(&db, &all));
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // A budget's prefix rule cannot be spread: said, nothing played.
    let mut all = vec!["run", "runs/quick.toml", "--workers", "1", "--set"];
    all.push("budget.moves=500");
    let err = binary::fails(&tabula(&db, &all));
    assert!(err.contains("needs a fixed `games_per_iteration`"), "{err}");
}
