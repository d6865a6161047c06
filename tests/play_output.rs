//! `tabula play` prints exactly what it printed before its game moved onto the library's one
//! game loop (`play::play_loop`, issue 22): boards, move lines, chance lines and `--json`,
//! byte for byte, for chance and deterministic games and for every kind of player seat.
//!
//! The runs are listed in `tests/data/play/cases.tsv`; `NAME.out` beside it is the stdout
//! the earlier build printed for `NAME`. The `--json` cases were regenerated once when each
//! event gained its `position` (issue 24), after checking that removing that field gives the
//! earlier output exactly.

use crate::binary;

use std::path::Path;

#[test]
fn play_prints_what_it_printed_before() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/play");
    let cases = std::fs::read_to_string(data.join("cases.tsv")).expect("the case list");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let mut checked = 0;
    let mut differ = Vec::new();
    for line in cases
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (name, args) = line.split_once('\t').expect("NAME<TAB>ARGS");
        let args: Vec<&str> = args.split_whitespace().collect();
        let printed = binary::ok(&binary::tabula(&db, &args));
        let expected = std::fs::read_to_string(data.join(format!("{name}.out")))
            .unwrap_or_else(|e| panic!("{name}.out: {e}"));
        if printed != expected {
            differ.push(format!("{name} (tabula {})", args.join(" ")));
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} cases listed");
    assert!(differ.is_empty(), "output changed: {}", differ.join("; "));
}

/// `play --json` names the position of every event: each move's position is one `tabula
/// value` reads, and the move is among its legal actions under the same name.
#[test]
fn json_events_carry_their_positions() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let g = binary::json(&binary::tabula(
        &db,
        &["play", "ewn:3x3x3", "--seed", "4", "--json"],
    ));
    let events = g["events"].as_array().unwrap();
    let mut moves = 0;
    for e in events.iter().filter(|e| e["kind"] == "action") {
        let position = e["position"].as_str().unwrap();
        let v = binary::json(&binary::tabula(
            &db,
            &["value", "ewn:3x3x3", position, "--json"],
        ));
        assert_eq!(v["position"], position);
        let names: Vec<&str> = v["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&e["name"].as_str().unwrap()),
            "{e} not in {names:?}"
        );
        moves += 1;
    }
    assert!(moves >= 2, "{g}");
}
