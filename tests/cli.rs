//! The binary end to end: exit codes, JSON output, the stored solution found again, read-only
//! SQL, fsck after a byte is changed by hand.

use std::path::Path;
use std::process::{Command, Output};

fn tabula(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tabula"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

#[test]
fn games_lists_every_family() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(&tabula(&dir.path().join("t.db"), &["games", "--json"]));
    let names: Vec<&str> = v["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cdc", "ewn", "c4", "checkers"]);
}

#[test]
fn play_is_a_pure_function_of_the_seed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    for variant in [
        "cdc:PPPP",
        "ewn:3x3x3",
        "c4:7x6",
        "checkers:5x5-3",
        "cdc:4x8",
    ] {
        let a = json(&tabula(&db, &["play", variant, "--seed", "7", "--json"]));
        let b = json(&tabula(&db, &["play", variant, "--seed", "7", "--json"]));
        assert_eq!(a, b, "{variant}");
        let scores = a["scores"].as_array().unwrap();
        let total: f64 = scores.iter().map(|x| x.as_f64().unwrap()).sum();
        assert!((total - 1.0).abs() < 1e-12);
    }
    // A different seed plays a different game of Connect Four (actions differ).
    let a = json(&tabula(&db, &["play", "c4:7x6", "--seed", "1", "--json"]));
    let b = json(&tabula(&db, &["play", "c4:7x6", "--seed", "2", "--json"]));
    assert_ne!(a["events"], b["events"]);
}

#[test]
fn bad_input_fails_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    for (args, needle) in [
        (vec!["play", "ewn:2x2x9"], "allowed"),
        (vec!["play", "cdc:XYZW"], "allowed"),
        (vec!["play", "go:9x9"], "allowed families"),
        (
            vec!["play", "c4", "--players", "random,alphazero"],
            "allowed: random, optimal",
        ),
        (vec!["solve", "cdc:4x8"], "cannot be solved"),
        (vec!["solve", "c4:7x6"], "too many positions"),
        (vec!["value", "cdc:PPPP", "not a position"], "bad position"),
    ] {
        let out = tabula(&db, &args);
        assert!(!out.status.success(), "{args:?} must fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: `{err}` lacks `{needle}`");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    }
}

/// `solve` into a store that does not exist yet creates it while solving and leaves the
/// solution's small write-ahead log beside it (docs/solver.md, "The store around a solve"):
/// readers see the solution through the log, the file alone already has the current schema,
/// and the next writer's close copies the log into the file and removes it.
#[test]
fn solve_leaves_its_small_log_for_the_next_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let wal = dir.path().join("t.db-wal");
    let first = json(&tabula(&db, &["solve", "cdc:PPPP", "--json"]));
    assert_eq!(first["cached"], false);
    let log = std::fs::metadata(&wal).expect("the log is left").len();
    assert!(log > 0 && log <= 4 << 20, "{log}");
    // The file alone (a copy without its log) has every migration and no solution yet.
    let alone = dir.path().join("alone.db");
    std::fs::copy(&db, &alone).unwrap();
    let c = rusqlite::Connection::open(&alone).unwrap();
    let version: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    let solutions: i64 = c
        .query_row("SELECT count(*) FROM solutions", [], |r| r.get(0))
        .unwrap();
    assert!(version >= 8, "{version}");
    assert_eq!(solutions, 0);
    drop(c);
    // Readers see it through the log, and fsck finds it whole.
    let rows = json(&tabula(
        &db,
        &["sql", "SELECT variant FROM solutions", "--json"],
    ));
    assert_eq!(rows[0]["variant"], "cdc:PPPP");
    assert_eq!(json(&tabula(&db, &["fsck", "--json"]))["clean"], true);
    // A solve that finds it writes nothing and closes normally: the log is copied in.
    let second = json(&tabula(&db, &["solve", "cdc:PPPP", "--json"]));
    assert_eq!(second["cached"], true);
    assert_eq!(second["hash"], first["hash"]);
    assert!(!wal.exists());
    let c = rusqlite::Connection::open(&db).unwrap();
    let solutions: i64 = c
        .query_row("SELECT count(*) FROM solutions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(solutions, 1);
}

#[test]
fn solve_stores_and_finds_the_solution_and_fsck_sees_damage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let first = json(&tabula(&db, &["solve", "cdc:PPPP", "--json"]));
    assert_eq!(first["positions"], 194_933);
    assert!((first["value"].as_f64().unwrap() - 8.0 / 35.0).abs() < 1e-12);
    assert_eq!(first["test_positions"].as_array().unwrap().len(), 17);
    assert_eq!(first["cached"], false);
    let second = json(&tabula(&db, &["solve", "cdc:PPPP", "--json"]));
    assert_eq!(second["cached"], true);
    assert_eq!(second["hash"], first["hash"]);
    assert_eq!(second["test_positions"], first["test_positions"]);

    // The start position's value and its eight flips.
    let start = first["test_positions"][0]["position"].as_str().unwrap();
    let v = json(&tabula(&db, &["value", "cdc:PPPP", start, "--json"]));
    assert!((v["value"].as_f64().unwrap() - 8.0 / 35.0).abs() < 1e-12);
    assert_eq!(v["actions"].as_array().unwrap().len(), 8);

    // SQL sees the row and cannot write.
    let rows = json(&tabula(
        &db,
        &["sql", "SELECT variant, positions FROM solutions", "--json"],
    ));
    assert_eq!(rows[0]["variant"], "cdc:PPPP");
    assert_eq!(rows[0]["positions"], 194_933);
    let out = tabula(&db, &["sql", "DELETE FROM solutions"]);
    assert!(!out.status.success());
    let rows = json(&tabula(
        &db,
        &["sql", "SELECT count(*) AS n FROM solutions", "--json"],
    ));
    assert_eq!(rows[0]["n"], 1);

    // fsck: clean, then a byte changed by hand in one chunk is found.
    let clean = json(&tabula(&db, &["fsck", "--json"]));
    assert_eq!(clean["clean"], true);
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        let (id, mut bytes): (i64, Vec<u8>) = c
            .query_row(
                "SELECT id, bytes FROM objects WHERE kind = 'solution-chunk/v1' LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x40;
        c.execute(
            "UPDATE objects SET bytes = ?1 WHERE id = ?2",
            rusqlite::params![bytes, id],
        )
        .unwrap();
    }
    let out = tabula(&db, &["fsck"]);
    assert!(!out.status.success(), "fsck must fail on a damaged store");
    assert!(String::from_utf8_lossy(&out.stdout).contains("DAMAGED"));
    // Loading the damaged solution is an error, not a wrong answer.
    let out = tabula(&db, &["solve", "cdc:PPPP"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("damaged"));
}

/// The README's command list and the binary agree: every command `tabula --help` lists is in
/// the README, and every flag the README shows for a command is one its `--help` documents.
#[test]
fn the_readme_lists_every_command_with_flags_that_exist() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find("## Commands").unwrap();
    let block = &readme[start..start + readme[start..].find("\nEvery command").unwrap()];
    let help = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_tabula"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let top = help(&["--help"]);
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 20, "{commands:?}");
    let mut flags_checked = 0;
    for c in &commands {
        let lines: Vec<&str> = block
            .lines()
            .filter(|l| {
                l.trim_start().starts_with(&format!("tabula {c} "))
                    || l.trim() == format!("tabula {c}")
            })
            .collect();
        assert!(
            !lines.is_empty(),
            "`tabula {c}` is not in the README's command list"
        );
        let h = help(&[c, "--help"]);
        for l in lines {
            for flag in l
                .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-'))
                .filter(|w| w.starts_with("--") && w.len() > 2)
            {
                assert!(
                    h.contains(flag),
                    "README: `tabula {c} ... {flag}`, not in its --help"
                );
                flags_checked += 1;
            }
        }
    }
    assert!(flags_checked >= 30, "{flags_checked} flags");
}
