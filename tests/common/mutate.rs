//! Inputs for fuzzing (docs/store.md, "Fuzzing and failpoints"): texts mutated from a corpus
//! of real ones, bytes mutated from real records, and the runner that feeds them to a target
//! from a fixed seed. Shared by the library's parser targets (`src/serve/fuzz.rs`, which needs
//! the crate's private parsers) and the integration tests' store targets (`tests/fuzz.rs`,
//! which need a store made by a run); neither copies it. Not every user uses every item.
#![allow(dead_code)]

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Inputs per target: `TABULA_FUZZ_CASES`, default 2000 (all eight targets: about 5 s).
pub(crate) fn cases() -> u32 {
    std::env::var("TABULA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// Runs `check` on `cases()` inputs of `strategy`, from a fixed seed (a failure is the same
/// on every machine), shrinking little (a failure's input is printed whole).
pub(crate) fn fuzz<S: Strategy>(strategy: S, check: impl Fn(S::Value))
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
pub(crate) enum Edit {
    Delete(f64, usize),
    Insert(f64, String),
    Replace(f64, char),
}

/// The dashboard's URLs, one of each page and API (docs/dashboard.md), the corpus of its
/// request parser and of a live server's routes.
pub(crate) const DASHBOARD_URLS: &[&str] = &[
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
];

/// Pieces worth inserting: the syntax of every input, numbers at and past their ranges, and
/// characters that have broken parsers before.
pub(crate) const PIECES: &[&str] = &[
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

pub(crate) fn edit() -> impl Strategy<Value = Edit> {
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

pub(crate) fn apply(text: &str, edits: &[Edit]) -> String {
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
pub(crate) fn mutated(corpus: Vec<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (proptest::sample::select(corpus.clone()), proptest::collection::vec(edit(), 1..5))
            .prop_map(|(seed, edits)| apply(&seed, &edits)),
        1 => proptest::sample::select(corpus),
        1 => any::<String>(),
    ]
}

/// `bytes` with edits: bytes flipped, cut, repeated (lengths and counts turn huge or wrong).
pub(crate) fn mutated_bytes(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
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
