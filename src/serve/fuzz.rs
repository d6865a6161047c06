//! Fuzzing in the test suite (issue 49; docs/store.md, "Fuzzing and failpoints"): every parser
//! a user or a file reaches, fed inputs mutated from a corpus of real ones (the run specs and
//! sweeps under `runs/`, the player specs of `tests/data/player_specs.tsv`, the variants
//! `tabula games` lists, GTP sessions, the dashboard's URLs) and random ones, asserting no
//! panic and no hang (every input is small and every target bounded).
//!
//! proptest, not cargo-fuzz: it runs inside `cargo test` on stable Rust in CI, with a fixed
//! budget and a seed that makes a failure replayable; cargo-fuzz needs nightly and a separate
//! runner. The budget: `mutate::cases` inputs per target (`TABULA_FUZZ_CASES`, default 2000;
//! raise it for a longer local run). The module sits in the top layer so that one test may
//! reach every layer's parser, `pub(crate)` ones included (tests/layers.rs reads no test code).
//!
//! The targets that read a store made by a run (the dashboard's pages and the SQL console on a
//! live server, the stored records' decoders) are in `tests/fuzz.rs`: reached from here, the
//! run would make this crate's test build compile every game's and learner's run loop again
//! (docs/conventions.md, "Tests").

use std::path::PathBuf;

// The inputs and the runner, shared with the store targets of tests/fuzz.rs.
#[path = "../../tests/common/mutate.rs"]
mod mutate;
use mutate::{DASHBOARD_URLS, fuzz, mutated};

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

/// The dashboard's request parser on mutated URLs: an error or a request whose path has no
/// empty, `.` or `..` segment (nothing climbs out of the routes), never a panic. The live
/// server's answers are fuzzed in tests/fuzz.rs.
#[test]
fn dashboard_urls() {
    let urls: Vec<String> = DASHBOARD_URLS.iter().map(|u| u.to_string()).collect();
    fuzz(mutated(urls), |url| {
        if let Ok(req) = super::http::Request::parse(&url) {
            let bad = |s: &String| s.is_empty() || s == "." || s == "..";
            assert!(
                !req.segments.iter().any(bad),
                "{url:?} -> {:?}",
                req.segments
            );
        }
    });
}
