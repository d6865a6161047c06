//! Running the `tabula` binary against a store, shared by the integration tests that drive
//! it (a module of `tests/it.rs`). Not every test uses every helper.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// The binary under test.
pub(crate) fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tabula"))
}

/// `tabula --db DB ARGS...`, run to completion.
pub(crate) fn tabula(db: &Path, args: &[&str]) -> Output {
    bin()
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Its stdout, asserting success.
pub(crate) fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Its stderr, asserting failure.
pub(crate) fn fails(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "should have failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Its stdout as JSON, asserting success.
pub(crate) fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&ok(out)).expect("valid JSON")
}
