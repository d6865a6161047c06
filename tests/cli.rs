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
    assert_eq!(names, ["cdc", "ewn", "c4", "checkers", "go"]);
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
        "go:5x5",
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
        (vec!["play", "chess:8x8"], "allowed families"),
        (vec!["play", "go:4x4"], "allowed: 5..=19"),
        (vec!["solve", "go:9x9"], "cannot be solved"),
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

/// `make run` twice on one store (issue 24): the main job's run step, `tabula run
/// runs/quick.toml`, made tiny with `--set` (the same code path; quick.toml itself takes
/// minutes). Run again, the finished run is shown, not refused; a run of the same spec
/// interrupted (created, nothing committed) is resumed to the head an uninterrupted run has;
/// a run of that name with other settings is still refused.
#[test]
fn the_main_run_step_succeeds_again_on_the_same_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tabula.db");
    let spec = concat!(env!("CARGO_MANIFEST_DIR"), "/runs/quick.toml");
    let tiny = [
        "--set",
        "iterations=2",
        "--set",
        "games_per_iteration=16",
        "--set",
        "search.simulations=8",
        "--set",
        "eval.games=50",
        "--set",
        "learning_rate=[[1, 1.0]]",
    ];
    let step = |db: &Path, json: bool| {
        let mut args = vec!["run", spec];
        args.extend(tiny);
        if json {
            args.push("--json");
        }
        tabula(db, &args)
    };
    let first = json(&step(&db, true));
    assert_eq!(first["name"], "quick");
    assert_eq!(first["iterations_run"], 2);
    let again = step(&db, false);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        text.contains("is in the store already, from this spec") && text.contains("finished"),
        "{text}"
    );
    assert!(text.contains(first["head"].as_str().unwrap()), "{text}");
    let shown = json(&step(&db, true));
    assert_eq!(
        (shown["finished"].clone(), shown["head"].clone()),
        (serde_json::json!(true), first["head"].clone())
    );
    let runs = json(&tabula(&db, &["ls", "--json"]));
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");

    // A branch is named after its override's value and its branch point, and says which
    // iterations it ran (issue 24: not the run's length).
    let branch = tabula(
        &db,
        &[
            "branch",
            "quick",
            "--at",
            "1",
            "--set",
            "search.init_q=draw",
        ],
    );
    let text = String::from_utf8_lossy(&branch.stdout);
    assert!(
        branch.status.success(),
        "{}",
        String::from_utf8_lossy(&branch.stderr)
    );
    assert!(text.contains("quick+init_q=draw@1"), "{text}");
    assert!(text.contains("done: 1 iteration (2 of 2) in"), "{text}");
    let out = json(&tabula(
        &db,
        &[
            "branch", "quick", "--at", "1", "--set", "window=1", "--json",
        ],
    ));
    assert_eq!(out["name"], "quick+window=1@1");
    assert_eq!(
        (out["iterations_run"].clone(), out["resumed_from"].clone()),
        (1.into(), 1.into())
    );

    // Interrupted: the run created (its records and row), nothing committed.
    let other = dir.path().join("other.db");
    {
        let text = std::fs::read_to_string(spec).unwrap();
        let sets: Vec<String> = tiny
            .iter()
            .filter(|a| **a != "--set")
            .map(|a| a.to_string())
            .collect();
        let sets = tabula::runs::overrides::parse_sets(&sets).unwrap();
        let (cfg, text) = tabula::runs::overrides::spec_with_overrides(
            tabula::runs::overrides::Place::Run,
            &text,
            &sets,
            None,
            "quick",
            "--set",
        )
        .unwrap();
        let mut store = tabula::store::Store::open(&other).unwrap();
        tabula::experiments::run_specs::create(&mut store, &cfg, &text).unwrap();
    }
    let resumed = json(&step(&other, true));
    assert_eq!(resumed["head"], first["head"]);
    assert_eq!(resumed["iterations_run"], 2);
    // Another spec under the same name is refused, naming the run.
    let mut args = vec!["run", spec];
    args.extend(tiny);
    args.extend(["--set", "window=1"]);
    let refused = tabula(&db, &args);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("a run named `quick` is already in the store (run 1"),
        "{err}"
    );
}

/// The decision states of a game walked from the start by its last legal action and first
/// chance outcome each turn, at most `n` of them.
fn decision_states<G: tabula::game::Game>(g: &G, n: usize) -> Vec<G::State> {
    use tabula::game::Turn;
    let (mut s, mut out, mut legal, mut states) =
        (g.initial_state(), Vec::new(), Vec::new(), vec![]);
    while states.len() < n {
        match g.turn(&s) {
            Turn::Chance => {
                g.chance_outcomes(&s, &mut out);
                s = g.apply_chance(&s, out[0].outcome);
            }
            Turn::Player(_) => {
                states.push(s);
                g.legal_actions(&s, &mut legal);
                s = g.apply(&s, *legal.last().unwrap());
            }
            Turn::Terminal(_) => break,
        }
    }
    states
}

/// `tabula encode --json` prints the library's encoder's planes for the position (and, with
/// `--past`, for an input that reads the game's history: Chinese Checkers' `liu`), with a
/// name for every channel; Connect Four's columns-played form is the same position.
#[test]
fn encode_prints_the_library_encoders_planes() {
    use tabula::games::{Abilities, AnyGame};
    fn check<G: Abilities>(g: &G, input: Option<&str>, plies: usize) {
        let states = decision_states(g, plies);
        let (s, past) = states.split_last().unwrap();
        let enc = g.input(input).unwrap();
        let mut want = vec![0.0f32; enc.planes().len()];
        enc.encode(s, past, &mut want);
        let v = g.variant();
        let pos = g.notation(s);
        let past_text: Vec<String> = past.iter().map(|p| g.notation(p)).collect();
        let past_text = past_text.join(";");
        let mut args: Vec<&str> = vec!["encode", v.as_str(), pos.as_str(), "--json"];
        if let Some(i) = input {
            args.extend(["--input", i, "--past", past_text.as_str()]);
        }
        let out = json(&tabula(Path::new("unused.db"), &args));
        let got: Vec<f32> = out["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(got, want, "{v} {pos}");
        let p = enc.planes();
        assert_eq!(
            out["shape"],
            serde_json::json!([p.channels, p.height, p.width])
        );
        assert_eq!(
            out["plane_names"].as_array().unwrap().len(),
            p.channels,
            "{v}"
        );
        assert!(
            want.iter().any(|&x| x != 0.0),
            "{v}: a position with something on it"
        );
    }
    for variant in [
        "ewn:3x3x3",
        "cdc:PPPP",
        "c4:5x4",
        "go:5x5",
        "checkers:5x5-1",
    ] {
        let any: AnyGame = variant.parse().unwrap();
        tabula::with_game!(&any, |g| check(g, None, 4));
    }
    let Ok(AnyGame::Checkers(g)) = "checkers:5x5-1".parse::<AnyGame>() else {
        panic!("a Chinese Checkers variant")
    };
    check(&g, Some("liu"), 4);
    // The columns played and the notation of the position they reach encode alike.
    let a = json(&tabula(
        Path::new("unused.db"),
        &["encode", "c4:5x4", "3312", "--json"],
    ));
    let b = tabula(
        Path::new("unused.db"),
        &[
            "encode",
            "c4:5x4",
            a["position"].as_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(a, json(&b));
}
