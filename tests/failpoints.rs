//! Faults injected at every write (issue 49; docs/store.md, "Fuzzing and failpoints"): every
//! command that writes a store is run once with `TABULA_FAILPOINT=list`, which names each
//! write step it passes (each write transaction's `begin`, `commit` and `committed`, a store's
//! `open` and its `migrate`); then once per step, on a fresh copy of its store, failing there
//! with SQLite's I/O error or stopping dead (`abort`: no destructor, no rollback, as kill -9).
//! Afterwards `fsck` must be clean, and the command run again (then, where it says so, the
//! command it names) must reach the state the uninterrupted command reaches: the same runs
//! with the same heads, the same solutions, notes and tags. Nothing may panic.

use crate::binary;

use std::path::{Path, PathBuf};
use std::process::Output;

use binary::bin;

/// A spec small enough that a run is a handful of transactions.
const TINY: &str = "name = \"tiny\"\nvariant = \"ewn:3x3x2\"\nseed = 7\niterations = 2\n\
                    games_per_iteration = 4\nwindow = 2\ncheckpoint_every = 2\n\
                    [search]\nsimulations = 4\n[eval]\ngames = 4\n";

/// One writing command: its arguments (`{dir}` the case's directory) on a store made by
/// `setup` (`None`: no store yet), and, when running it again is refused because its work
/// was partly done, the command that finishes it (`resume NAME`).
struct Writer {
    name: &'static str,
    args: &'static [&'static str],
    setup: Setup,
    finish: Option<&'static [&'static str]>,
}

#[derive(Clone, Copy)]
enum Setup {
    /// No store: the command creates it.
    Nothing,
    /// A store holding run `tiny`, done (and the sweep file `sw.toml`).
    Tiny,
    /// That store with `b`, a branch of `tiny` at 1 created with `--no-run`.
    Branched,
    /// A store written by an older build (schema 4: tests/data/fixtures).
    Old,
}

const WRITERS: &[Writer] = &[
    Writer {
        name: "run",
        args: &["run", "{dir}/tiny.toml", "--threads", "1"],
        setup: Setup::Nothing,
        finish: None,
    },
    Writer {
        name: "resume",
        args: &["resume", "b", "--threads", "1"],
        setup: Setup::Branched,
        finish: None,
    },
    Writer {
        name: "branch",
        args: &[
            "branch",
            "tiny",
            "--at",
            "1",
            "--set",
            "name=c",
            "--set",
            "search.c_puct=2",
        ],
        setup: Setup::Tiny,
        finish: Some(&["resume", "c", "--threads", "1"]),
    },
    Writer {
        name: "sweep",
        args: &[
            "sweep",
            "{dir}/sw.toml",
            "--no-calibrate",
            "--threads",
            "1",
            "--jobs",
            "1",
        ],
        setup: Setup::Tiny,
        finish: None,
    },
    Writer {
        name: "merge",
        args: &["merge", "{dir}/source.db", "--into", "{db}"],
        setup: Setup::Nothing,
        finish: None,
    },
    Writer {
        name: "migrate",
        args: &["migrate"],
        setup: Setup::Old,
        finish: None,
    },
    Writer {
        name: "note",
        args: &["note", "tiny", "a note", "--tag", "t1"],
        setup: Setup::Tiny,
        finish: None,
    },
    Writer {
        name: "solve",
        args: &["solve", "ewn:3x3x2"],
        setup: Setup::Nothing,
        finish: None,
    },
];

/// The directory every case copies its store from: `tiny.toml`, `sw.toml`, `tiny.db` (run
/// `tiny`, done), `branched.db` and `source.db` (= `tiny.db`, a merge's source).
fn templates(dir: &Path) {
    std::fs::write(dir.join("tiny.toml"), TINY).unwrap();
    std::fs::write(
        dir.join("sw.toml"),
        "name = \"sw\"\nbase = \"tiny.toml\"\nseeds = [1]\n\n[axes]\n\"search.simulations\" = [4, 6]\n",
    )
    .unwrap();
    let tiny = dir.join("tiny.db");
    binary::ok(&binary::tabula(
        &tiny,
        &["run", dir.join("tiny.toml").to_str().unwrap()],
    ));
    std::fs::copy(&tiny, dir.join("source.db")).unwrap();
    std::fs::copy(&tiny, dir.join("branched.db")).unwrap();
    binary::ok(&binary::tabula(
        &dir.join("branched.db"),
        &["branch", "tiny", "--at", "1", "--no-run", "--set", "name=b"],
    ));
}

/// A fresh directory for one case: the templates' inputs and the command's store at `db`.
fn case_dir(templates: &Path, setup: Setup) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["tiny.toml", "sw.toml", "source.db"] {
        std::fs::copy(templates.join(f), tmp.path().join(f)).unwrap();
    }
    let db = tmp.path().join("s.db");
    let from = match setup {
        Setup::Nothing => None,
        Setup::Tiny => Some(templates.join("tiny.db")),
        Setup::Branched => Some(templates.join("branched.db")),
        Setup::Old => {
            Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fixtures/store-64434fb.db"))
        }
    };
    if let Some(from) = from {
        for suffix in ["", "-wal", "-shm"] {
            let src = PathBuf::from(format!("{}{suffix}", from.display()));
            if src.exists() {
                std::fs::copy(&src, format!("{}{suffix}", db.display())).unwrap();
            }
        }
    }
    (tmp, db)
}

/// Runs `w`'s command on `db` (in `dir`), with `TABULA_FAILPOINT` set to `failpoint`.
fn run(w: &Writer, dir: &Path, db: &Path, args: &[&str], failpoint: Option<&str>) -> Output {
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            a.replace("{dir}", dir.to_str().unwrap())
                .replace("{db}", db.to_str().unwrap())
        })
        .collect();
    let mut c = bin();
    c.arg("--db").arg(db).args(&args);
    if let Some(f) = failpoint {
        c.env("TABULA_FAILPOINT", f);
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{}: {err}", w.name);
    out
}

/// What the store holds that a command's work shows in: its runs (name, status, iterations,
/// head), solutions, notes and tags.
fn state(db: &Path) -> String {
    if !db.exists() {
        return "no store".into();
    }
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut out = String::new();
    for sql in [
        "SELECT name || ' ' || status || ' ' || iterations_done || ' ' || \
         coalesce(lower(hex(head)), '-') FROM runs ORDER BY name",
        "SELECT variant || ' ' || lower(hex(hash)) FROM solutions ORDER BY variant",
        "SELECT run_id || ' ' || note FROM run_notes ORDER BY run_id",
        "SELECT run_id || ' ' || tag FROM run_tags ORDER BY run_id, tag",
        "SELECT name FROM sweeps ORDER BY name",
        "SELECT user_version FROM pragma_user_version",
    ] {
        let mut stmt = c.prepare(sql).unwrap();
        let rows: Vec<String> = stmt
            .query_map([], |r| {
                r.get::<_, String>(0)
                    .or_else(|_| r.get::<_, i64>(0).map(|v| v.to_string()))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        out += &format!("{sql}\n  {}\n", rows.join("\n  "));
    }
    out
}

/// The write steps `w` passes: `POINT:N` for each (from `TABULA_FAILPOINT=list`), and the
/// state it reaches uninterrupted.
fn steps(w: &Writer, templates: &Path) -> (Vec<String>, String) {
    let (tmp, db) = case_dir(templates, w.setup);
    let out = run(w, tmp.path(), &db, w.args, Some("list"));
    assert!(
        out.status.success(),
        "{}: {}",
        w.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let points: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("failpoint "))
        .map(|l| l.replace(' ', ":"))
        .collect();
    (points, state(&db))
}

/// One case: `w` failing at `point` with `action`; then fsck, and the command again.
fn one_case(
    w: &Writer,
    templates: &Path,
    point: &str,
    action: &str,
    expected: &str,
) -> Result<(), String> {
    let (tmp, db) = case_dir(templates, w.setup);
    let dir = tmp.path();
    let at = format!("{} at {point} ({action})", w.name);
    // A command may go on past a failed step whose write it does not need (a session's end,
    // a lock's release): then it succeeds, and what it leaves must still be the state below.
    // (A sweep's count of write steps varies a little between runs: its progress writes follow
    // the clock, so a late step may not be reached; that case also ends here.)
    let failed = run(w, dir, &db, w.args, Some(&format!("{point}:{action}")));

    if db.exists() {
        let fsck = run(w, dir, &db, &["fsck"], None);
        // A store still at the older schema is refused by fsck (it never migrates), naming
        // `migrate`: a clear refusal, the one expected of a failed migration.
        let err = String::from_utf8_lossy(&fsck.stderr);
        let unmigrated = matches!(w.setup, Setup::Old) && err.contains("needs `tabula --db");
        if !fsck.status.success() && !unmigrated {
            return Err(format!(
                "{at}: fsck: {}{err}",
                String::from_utf8_lossy(&fsck.stdout)
            ));
        }
    }
    if failed.status.success() {
        let got = state(&db);
        return match got == expected {
            true => Ok(()),
            false => Err(format!(
                "{at}: succeeded, but the store holds\n{got}\nnot\n{expected}"
            )),
        };
    }
    let again = run(w, dir, &db, w.args, None);
    if !again.status.success() {
        let err = String::from_utf8_lossy(&again.stderr).into_owned();
        let Some(finish) = w.finish.filter(|_| err.contains("is already in the store")) else {
            return Err(format!("{at}: run again: {err}"));
        };
        let done = run(w, dir, &db, finish, None);
        if !done.status.success() {
            return Err(format!(
                "{at}: {finish:?}: {}",
                String::from_utf8_lossy(&done.stderr)
            ));
        }
    }
    let got = state(&db);
    if got != expected {
        return Err(format!("{at}: the store holds\n{got}\nnot\n{expected}"));
    }
    Ok(())
}

/// Every writing command, failed at each of its write steps in turn, recovers.
#[test]
fn every_write_step_fails_cleanly_and_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    templates(tmp.path());
    let mut cases = Vec::new();
    let mut counts = Vec::new();
    // The full sweep fails every step both ways (`TABULA_FAILPOINTS=all`: 308 cases, a
    // minute of CPU); by default each step fails one way, error and abort alternating along
    // a writer's steps, so every step and both ways are still covered in CI's fixed budget.
    let all = std::env::var("TABULA_FAILPOINTS").is_ok_and(|v| v == "all");
    for w in WRITERS {
        let (points, expected) = steps(w, tmp.path());
        assert!(!points.is_empty(), "{}: no write step", w.name);
        counts.push(format!("{} {}", w.name, points.len()));
        for (i, p) in points.into_iter().enumerate() {
            let actions: &[&str] = match (all, i % 2) {
                (true, _) => &["error", "abort"],
                (false, 0) => &["error"],
                (false, _) => &["abort"],
            };
            for &action in actions {
                cases.push((w, p.clone(), action, expected.clone()));
            }
        }
    }
    eprintln!("failpoints: {} cases ({})", cases.len(), counts.join(", "));
    // Two workers: CI's two cores.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((w, p, action, expected)) = cases.get(i) else {
                        break;
                    };
                    if let Err(e) = one_case(w, tmp.path(), p, action, expected) {
                        failures.lock().unwrap().push(e);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
