//! Every integration test of the `tabula` crate, in one test binary (docs/conventions.md,
//! "Tests"): one link instead of thirty, and one pool of test threads for all of them, so a
//! long test no longer leaves a core idle while its file's other tests have finished. Each
//! file beside this one is a module here; `cargo test --test it lifecycle::` runs one file's.
//! `Cargo.toml` sets `autotests = false`, so a new file must be named below: the last test
//! of this file refuses a `tests/*.rs` that is not.

// The allocation-counting global allocator (per thread), for the tests that check a hot loop
// does not allocate (`runs`, `search`); one per binary.
#[path = "common/counting_alloc.rs"]
mod counting_alloc;

// Running the `tabula` binary, and finding the Python the tests run (ONNX Runtime, pandas).
#[path = "common/binary.rs"]
mod binary;
#[path = "common/python.rs"]
mod python;
// Mutated inputs and the fuzz runner, shared with the library's fuzz targets.
#[path = "common/mutate.rs"]
mod mutate;

mod budgets;
mod cli;
mod cli_errors;
mod conformance;
mod connect4_solver;
mod determinism;
mod distributed;
mod examples;
mod experiments;
mod failpoints;
mod fixture;
mod fuzz;
mod gtp;
mod layers;
mod lifecycle;
mod matches;
mod onnx_export;
mod openspiel;
mod overrides;
mod play_output;
mod properties;
mod report_browser;
mod runs;
mod search;
mod serve;
mod serve_browser;
mod solver;
mod store;

/// Every `tests/*.rs` is a module of this binary or a `[[test]]` of its own in Cargo.toml: with
/// `autotests = false`, a file left out would never run.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let me = std::fs::read_to_string(dir.join("it.rs")).unwrap();
    let cargo = std::fs::read_to_string(dir.join("../Cargo.toml")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        let own_binary = cargo.contains(&format!("path = \"tests/{name}\""));
        if module != "it" && !own_binary && !me.contains(&format!("\nmod {module};\n")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "{missing:?}: neither a module of tests/it.rs nor a [[test]] in Cargo.toml, so never run"
    );
}
