//! Fuzzing in the test suite (issue 49; docs/store.md, "Fuzzing and failpoints"): every parser
//! and decoder a user or a file reaches, fed inputs mutated from a corpus of real ones (the
//! run specs and sweeps under `runs/`, the player specs of `tests/data/player_specs.tsv`,
//! the variants `tabula games` lists, GTP sessions, the dashboard's URLs, records of a real
//! run) and random ones, asserting no panic, no hang (every input is small and every target
//! bounded), and no change to a store.
//!
//! proptest, not cargo-fuzz: it runs inside `cargo test` on stable Rust in CI, with a fixed
//! budget and a seed that makes a failure replayable; cargo-fuzz needs nightly and a separate
//! runner. The budget: [`cases`] inputs per target (`TABULA_FUZZ_CASES`, default 2000; raise it
//! for a longer local run). The module sits in the top layer so that one test may reach
//! every layer's parser, `pub(crate)` ones included (tests/layers.rs reads no test code).

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Inputs per target: `TABULA_FUZZ_CASES`, default 2000 (all eight targets: about 5 s).
fn cases() -> u32 {
    std::env::var("TABULA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// Runs `check` on `cases()` inputs of `strategy`, from a fixed seed (a failure is the same
/// on every machine), shrinking little (a failure's input is printed whole).
fn fuzz<S: Strategy>(strategy: S, check: impl Fn(S::Value))
where
    S::Value: std::fmt::Debug,
{
    let config = Config {
        cases: cases(),
        max_shrink_iters: 64,
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        proptest::test_runner::TestRng::from_seed(
            proptest::test_runner::RngAlgorithm::ChaCha,
            &[49; 32],
        ),
    );
    runner
        .run(&strategy, |v| {
            check(v);
            Ok(())
        })
        .unwrap();
}

/// One edit of a text: at a position (a fraction of its length), delete some characters,
/// insert a piece, or replace a character.
#[derive(Clone, Debug)]
enum Edit {
    Delete(f64, usize),
    Insert(f64, String),
    Replace(f64, char),
}

/// Pieces worth inserting: the syntax of every input, numbers at and past their ranges, and
/// characters that have broken parsers before.
const PIECES: &[&str] = &[
    "=",
    ",",
    ":",
    "@",
    ".",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    "\n",
    "#",
    " ",
    "%",
    "%2e",
    "%zz",
    "?",
    "&",
    "/",
    "..",
    "0",
    "-1",
    "1e400",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "4294967296",
    "18446744073709551616",
    "99999999999",
    "1e-400",
    "true",
    "[[1, 1.0, 5]]",
    "[]",
    "{}",
    "\u{202e}",
    "\u{2028}",
    "\u{200b}",
    "\u{0}",
    "\u{1b}[2J",
    "é",
    "x=y",
    "sims=",
    "go:",
    "cdc:",
    "ewn:",
    "c4:",
    "checkers:",
    "[search]",
    "[eval]",
    "[[stage]]",
    "[axes]",
];

fn edit() -> impl Strategy<Value = Edit> {
    let piece = prop_oneof![
        proptest::sample::select(PIECES).prop_map(str::to_string),
        "[ -~]{0,6}",
        any::<String>().prop_map(|s| s.chars().take(4).collect()),
    ];
    prop_oneof![
        (0.0..1.0f64, 1..8usize).prop_map(|(at, n)| Edit::Delete(at, n)),
        (0.0..1.0f64, piece).prop_map(|(at, p)| Edit::Insert(at, p)),
        (0.0..1.0f64, any::<char>()).prop_map(|(at, c)| Edit::Replace(at, c)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let at = |f: f64| ((chars.len() as f64) * f) as usize;
        match e {
            Edit::Delete(f, n) => {
                let i = at(*f);
                let j = (i + n).min(chars.len());
                chars.drain(i..j);
            }
            Edit::Insert(f, p) => {
                let i = at(*f);
                chars.splice(i..i, p.chars());
            }
            Edit::Replace(f, c) => {
                let i = at(*f);
                if i < chars.len() {
                    chars[i] = *c;
                }
            }
        }
    }
    chars.into_iter().collect()
}

/// Texts mutated from `corpus` (1 to 4 edits), or left as they are, or random.
fn mutated(corpus: Vec<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (proptest::sample::select(corpus.clone()), proptest::collection::vec(edit(), 1..5))
            .prop_map(|(seed, edits)| apply(&seed, &edits)),
        1 => proptest::sample::select(corpus),
        1 => any::<String>(),
    ]
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The TOML files under `runs/` whose text contains `marker`.
fn run_files(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![root().join("runs")];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                let text = std::fs::read_to_string(&p).unwrap();
                if text.contains(marker) {
                    out.push(text);
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn run_specs() {
    let corpus = run_files("variant");
    assert!(corpus.len() > 10);
    fuzz(mutated(corpus), |text| {
        let _ = crate::runs::RunConfig::from_toml(&text, "fuzz");
    });
}

#[test]
fn sweep_files() {
    let corpus = run_files("[axes]");
    assert!(corpus.len() > 3);
    let dir = root().join("runs");
    fuzz(mutated(corpus), |text| {
        let _ = crate::experiments::sweep::Sweep::parse(&text, &dir);
    });
}

/// `--set KEY=VALUE` on a run's settings (the branch path) and on a spec (the run path).
#[test]
fn set_values() {
    let spec = "name = \"t\"\nvariant = \"ewn:3x3x2\"\niterations = 2\ngames_per_iteration = 4\n\
                [search]\nsimulations = 4\n[eval]\ngames = 4\n";
    let cfg = crate::runs::RunConfig::from_toml(spec, "t").unwrap();
    let json = crate::runs::settings_json(&cfg.settings);
    let mut keys = crate::runs::setting_keys(&json);
    keys.extend(["seed", "name", "iterations", "budget.moves", "nonsense"].map(String::from));
    let values: Vec<String> = [
        "1",
        "0",
        "-1",
        "1.5",
        "draw",
        "\"x\"",
        "[1]",
        "[[1, 0.5]]",
        "true",
        "NaN",
        "1e400",
        "18446744073709551616",
        "{a = 1}",
    ]
    .map(String::from)
    .to_vec();
    let set = (proptest::sample::select(keys), mutated(values));
    fuzz(proptest::collection::vec(set, 1..3), |sets| {
        let texts: Vec<String> = sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = crate::runs::apply_overrides(&cfg.settings, &texts);
        if let Ok(pairs) = crate::runs::overrides::parse_sets(&texts) {
            let _ = crate::runs::overrides::spec_with_overrides(
                crate::runs::overrides::Place::Branch,
                spec,
                &pairs,
                None,
                "t",
                "--set",
            );
        }
    });
}

#[test]
fn player_specs() {
    let corpus: Vec<String> = include_str!("../../tests/data/player_specs.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').next())
        .map(String::from)
        .collect();
    fuzz(mutated(corpus), |text| {
        if let Ok(spec) = text.parse::<crate::players::PlayerSpec>() {
            // What parses prints as a spec that parses again to the same player.
            let again: crate::players::PlayerSpec = spec.to_string().parse().unwrap();
            assert_eq!(again, spec, "{text:?}");
        }
    });
}

#[test]
fn variant_names() {
    let corpus: Vec<String> = [
        "cdc:PPPP",
        "cdc:4x8",
        "cdc:KkGg",
        "ewn:3x3x3",
        "ewn:5x5x6",
        "c4:7x6",
        "c4:5x4",
        "checkers:5x5-3",
        "checkers:7x7",
        "go:9x9",
        "go:5x5,komi=0.5",
        "go:7x7,max_moves=98",
    ]
    .map(String::from)
    .to_vec();
    fuzz(mutated(corpus), |text| {
        let _ = text.parse::<crate::games::AnyGame>();
    });
}

#[test]
fn gtp_lines() {
    let corpus: Vec<String> = [
        "1 protocol_version",
        "boardsize 7",
        "komi 0.5",
        "clear_board",
        "play b d4",
        "play w pass",
        "genmove b",
        "undo",
        "final_score",
        "known_command play",
        "list_commands",
        "2 showboard",
        "fixed_handicap 2",
        "play black A1",
        "time_left b 10 0",
    ]
    .map(String::from)
    .to_vec();
    let session = proptest::collection::vec(mutated(corpus), 1..12);
    fuzz(session, |lines| {
        let spec: crate::players::PlayerSpec = "random".parse().unwrap();
        let mut engine = crate::gtp_engine::Engine::new(spec, "go:5x5", 1, None).unwrap();
        let input = lines.join("\n");
        let mut out = Vec::new();
        let _ = engine.serve(input.as_bytes(), &mut out);
        // Every response ends in an empty line, whatever came in.
        assert!(out.is_empty() || out.ends_with(b"\n\n"), "{input:?}");
    });
}

/// A store with one finished run (ewn:3x3x2, 2 iterations), made once for the targets that
/// read one (they only read it).
fn store_with_run() -> &'static Path {
    static STORE: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    &STORE
        .get_or_init(|| {
            let tmp = tempfile::tempdir().unwrap();
            let db = make_store(tmp.path());
            (tmp, db)
        })
        .1
}

fn make_store(dir: &Path) -> PathBuf {
    let db = dir.join("fuzz.db");
    let spec = "name = \"tiny\"\nvariant = \"ewn:3x3x2\"\nseed = 5\niterations = 2\n\
                games_per_iteration = 6\nwindow = 2\ncheckpoint_every = 2\n\
                [search]\nsimulations = 6\n[eval]\ngames = 6\n";
    let cfg = crate::runs::RunConfig::from_toml(spec, "tiny").unwrap();
    let mut store = crate::store::Store::open(&db).unwrap();
    crate::runs::start(&mut store, &cfg, spec, 1, &mut crate::runs::Quiet).unwrap();
    drop(store);
    db
}

/// Every file of the store `db` (itself and its side files), as bytes.
fn files_of(db: &Path) -> Vec<(String, Vec<u8>)> {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| {
            let p = PathBuf::from(format!("{}{s}", db.display()));
            std::fs::read(&p).ok().map(|b| (s.to_string(), b))
        })
        .collect()
}

/// The dashboard's URLs, and the SQL console, over a store with a run: never a 500 (a panic),
/// never a change to the store's files.
#[test]
fn http_targets_and_the_sql_console() {
    let db = store_with_run();
    let before = files_of(db);
    let urls: Vec<String> = [
        "/",
        "/runs/1",
        "/runs/tiny",
        "/sweeps/x",
        "/compare?runs=1,1",
        "/games/abcd",
        "/positions?run=1",
        "/api/runs?page=1&per_page=5&settings=1",
        "/api/runs/1",
        "/api/runs/1/metrics?from=0",
        "/api/runs/1/games?iteration=1&page=1&per_page=2",
        "/api/sweeps",
        "/api/games/0000",
        "/api/positions?run=1&position=x&past=y",
        "/assets/app.js",
        "/favicon.ico",
    ]
    .map(String::from)
    .to_vec();
    fuzz(mutated(urls), |url| {
        if let Ok(req) = super::http::Request::parse(&url) {
            let reply = super::routes::route(&req, db);
            assert_ne!(reply.status, 500, "{url:?}");
        }
    });
    let queries: Vec<String> = [
        "SELECT * FROM runs",
        "SELECT count(*) FROM objects",
        "PRAGMA table_info(runs)",
        "DELETE FROM objects",
        "UPDATE runs SET name = 'x'",
        "DROP TABLE runs",
        "ATTACH 'x.db' AS x",
        "VACUUM",
        "PRAGMA user_version = 3",
        "INSERT INTO runs DEFAULT VALUES",
        "SELECT 1; DELETE FROM runs",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "CREATE TEMP TABLE t(x)",
        "PRAGMA journal_mode = DELETE",
        "REPLACE INTO runs(id) VALUES (9)",
        "SELECT writefile('x', 'y')",
        "SELECT load_extension('x')",
        "BEGIN; COMMIT",
    ]
    .map(String::from)
    .to_vec();
    let store = crate::store::Store::open_read_only(db).unwrap();
    fuzz(mutated(queries), |sql| {
        let _ = store.query(&sql);
    });
    drop(store);
    assert!(files_of(db) == before, "a read changed the store's files");
}

/// One record type's decoder on `bytes`: an error or a record, never a panic.
fn decode<R: crate::store::Record>(bytes: &[u8]) -> Option<R> {
    postcard::from_bytes::<R>(bytes).ok()
}

/// `bytes` with edits: bytes flipped, cut, repeated (lengths and counts turn huge or wrong).
fn mutated_bytes(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let edit = (0.0..1.0f64, 0..4u8, any::<u8>());
    prop_oneof![
        8 => (proptest::sample::select(seeds), proptest::collection::vec(edit, 1..6)).prop_map(
            |(mut b, edits)| {
                for (at, kind, x) in edits {
                    let i = ((b.len() as f64) * at) as usize;
                    match kind {
                        0 if i < b.len() => b[i] ^= x | 1,
                        1 => b.truncate(i),
                        2 => b.insert(i, x),
                        _ => b.splice(i..i, [0xff, 0xff, 0xff, 0xff, 0x0f]).for_each(drop),
                    }
                }
                b
            }
        ),
        1 => proptest::collection::vec(any::<u8>(), 0..256),
    ]
}

/// Every record a run stores, decoded from mutated bytes: the run and iteration records, the
/// games (replayed on their game, as a checkout reads them), the tabular learner's evaluation
/// and snapshot, the sweep record, the other learners' evaluations; from random bytes too.
#[test]
fn stored_record_decoders() {
    use crate::runs::{IterationRecord, RunRecord};
    let store = crate::store::Store::open_read_only(store_with_run()).unwrap();
    let run = store.runs().unwrap().remove(0);
    let iterations: Vec<IterationRecord> = store
        .iteration_hashes(run.id)
        .unwrap()
        .iter()
        .map(|(_, h)| store.get(h).unwrap())
        .collect();
    let mut seeds: Vec<Vec<u8>> =
        vec![postcard::to_stdvec(&store.get::<RunRecord>(&run.hash).unwrap()).unwrap()];
    for r in &iterations {
        seeds.push(postcard::to_stdvec(r).unwrap());
        let e: crate::learners::tabular::records::EvaluationRecord =
            store.get(&r.evaluation).unwrap();
        seeds.push(postcard::to_stdvec(&e).unwrap());
        if let Ok(s) = store.get::<crate::learners::tabular::records::SnapshotRecord>(&r.snapshot) {
            seeds.push(postcard::to_stdvec(&s).unwrap());
        }
        for g in r.games.iter().take(3) {
            let game: crate::game_record::GameRecord = store.get(g).unwrap();
            seeds.push(postcard::to_stdvec(&game).unwrap());
        }
    }
    let g: crate::games::AnyGame = "ewn:3x3x2".parse().unwrap();
    fuzz(mutated_bytes(seeds), |bytes| {
        let _ = decode::<RunRecord>(&bytes);
        let _ = decode::<IterationRecord>(&bytes);
        let _ = decode::<crate::learners::tabular::records::EvaluationRecord>(&bytes);
        let _ = decode::<crate::learners::tabular::records::SnapshotRecord>(&bytes);
        let _ = decode::<crate::learners::network::NetworkEvaluation>(&bytes);
        let _ = decode::<crate::learners::q::QEvaluation>(&bytes);
        let _ = decode::<crate::experiments::sweep::SweepRecord>(&bytes);
        if let Some(game) = decode::<crate::game_record::GameRecord>(&bytes) {
            let _ = crate::with_game!(&g, |g| game.states(g).map(|s| s.len()));
        }
    });
}
