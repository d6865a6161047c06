//! `tabula play` prints exactly what it printed before its game moved onto the library's one
//! game loop (`play::play_loop`, issue 22): boards, move lines, chance lines and `--json`,
//! byte for byte, for chance and deterministic games and for every kind of player seat.
//!
//! The runs are listed in `tests/data/play/cases.tsv`; `NAME.out` beside it is the stdout
//! the earlier build printed for `NAME`.

#[path = "common/binary.rs"]
mod binary;

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
