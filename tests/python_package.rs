//! The Python package's own tests (`python/tests`, pytest), against this build's binary:
//! games step like `tabula play`'s transcripts, exact values equal `tabula value`'s, a
//! checked-out model's outputs equal `checkout --export`'s ONNX outputs, PettingZoo's
//! `api_test` passes for every game family, and bad input raises `ValueError` with the CLI's
//! message (docs/python.md, "Tests").
//!
//! The package is built and installed into the project's venv by `make python-package`
//! (`scripts/python-package.sh`), which `make test` runs first. Where it is not installed
//! (a bare `cargo test`, or no Python or package index), the test is SKIPPED, loudly.

#[path = "common/python.rs"]
mod python;

use std::path::Path;
use std::process::Command;

fn loud_skip(why: &str) {
    eprintln!(
        "\n!!!!!!!!\n!!! SKIPPED: the Python package's tests did not run: {why}\n\
         !!! (run `make python-package`; `make test` does it)\n!!!!!!!!\n"
    );
}

#[test]
fn python_package_tests_pass() {
    let py = match python::python() {
        Ok(py) => py,
        Err(why) => return loud_skip(&why),
    };
    let ready = Command::new(&py)
        .args(["-c", "import tabula._tabula, pytest, pettingzoo"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ready {
        return loud_skip(&format!(
            "{} cannot import tabula, pytest and pettingzoo",
            py.display()
        ));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(&py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=5"])
        .arg(root.join("python/tests"))
        .env("TABULA_BIN", env!("CARGO_BIN_EXE_tabula"))
        .env("TABULA_REPO", root)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "pytest failed\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !stdout.contains("skipped"),
        "no package test may skip when the binary is given: {stdout}"
    );
}
