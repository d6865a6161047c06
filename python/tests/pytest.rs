//! The Python package's tests (`python/tests/test_*.py`, pytest) on the extension this build
//! made: games step like `tabula play`'s transcripts, exact values equal `tabula value`'s, a
//! checked-out model's outputs equal `checkout --export`'s ONNX outputs, PettingZoo's
//! `api_test` passes for every game family, `tabula.run` gives the CLI's run, and bad input
//! raises `ValueError` with the CLI's message (docs/python.md, "Tests").
//!
//! Cargo builds the package's library for this test (the cdylib beside the rlib, in the
//! profile of the run: `test` under `cargo test`); the test lays the package out in
//! `target/<profile>/py-package` (the Python files of `python/py/tabula` and the library as
//! `_tabula.abi3.so`) and runs pytest on it in the project's venv (`scripts/python-venv.sh`,
//! `make test` makes it), against the workspace's `tabula` binary of the same build. Without
//! the venv or the binary the test is SKIPPED, loudly.

use std::path::{Path, PathBuf};
use std::process::Command;

fn loud_skip(why: &str) {
    eprintln!(
        "\n!!!!!!!!\n!!! SKIPPED: the Python package's tests did not run: {why}\n\
         !!! (`make test` makes the venv and builds the whole workspace)\n!!!!!!!!\n"
    );
}

/// The build's own directory (`target/debug`): this test runs from its `deps/`.
fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps")
        .to_path_buf()
}

/// The package laid out for import: `py-package/tabula/` with the Python files and the
/// extension; its parent goes on PYTHONPATH.
fn lay_out(root: &Path, build: &Path) -> Result<PathBuf, String> {
    // A library built as a test's dependency stays in deps/; `cargo build` copies it up.
    let lib = [
        "deps/lib_tabula.so",
        "lib_tabula.so",
        "deps/lib_tabula.dylib",
    ]
    .iter()
    .map(|n| build.join(n))
    .find(|p| p.exists())
    .ok_or_else(|| format!("no lib_tabula.so in {}/deps", build.display()))?;
    let dir = build.join("py-package");
    let pkg = dir.join("tabula");
    let _ = std::fs::remove_dir_all(&pkg);
    std::fs::create_dir_all(&pkg).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(root.join("python/py/tabula")).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_file() && path.extension().is_none_or(|x| x != "so") {
            std::fs::copy(&path, pkg.join(path.file_name().unwrap())).map_err(|e| e.to_string())?;
        }
    }
    std::fs::copy(&lib, pkg.join("_tabula.abi3.so")).map_err(|e| e.to_string())?;
    Ok(dir)
}

#[test]
fn python_package_tests_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let venv = std::env::var_os("TABULA_PY_VENV")
        .filter(|v| !v.is_empty())
        .map_or_else(|| root.join("target/py-venv"), PathBuf::from);
    let py = venv.join("bin/python");
    let ready = Command::new(&py)
        .args([
            "-c",
            "import numpy, pandas, onnxruntime, pytest, pettingzoo",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ready {
        return loud_skip(&format!(
            "{} cannot import numpy, pandas, onnxruntime, pytest and pettingzoo",
            py.display()
        ));
    }
    let build = build_dir();
    let bin = build.join("tabula");
    if !bin.exists() {
        return loud_skip(&format!("no tabula binary in {}", build.display()));
    }
    let pkg = match lay_out(root, &build) {
        Ok(dir) => dir,
        Err(why) => return loud_skip(&why),
    };
    let out = Command::new(&py)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--durations=8",
        ])
        .arg(root.join("python/tests"))
        .env("PYTHONPATH", &pkg)
        .env("TABULA_BIN", &bin)
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
