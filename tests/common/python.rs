//! The project's Python virtual environment (`scripts/python-venv.sh`), shared by the tests
//! that run Python: the export checks (tests/onnx_export.rs) and docs/python.md's example
//! (tests/experiments.rs). Not every test uses every helper.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The venv's python with onnxruntime, numpy and pandas importable, made by the project's script
/// when missing; `Err` says why there is none.
pub(crate) fn python() -> Result<PathBuf, String> {
    static PY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PY.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let venv = std::env::var_os("TABULA_PY_VENV")
            .filter(|v| !v.is_empty())
            .map_or_else(|| root.join("target/py-venv"), PathBuf::from);
        let py = venv.join("bin/python");
        let ready = || {
            Command::new(&py)
                .args(["-c", "import onnxruntime, numpy, pandas"])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if ready() {
            return Ok(py);
        }
        let out = Command::new("sh")
            .arg(root.join("scripts/python-venv.sh"))
            .env("TABULA_PY_VENV", &venv)
            .output()
            .map_err(|e| format!("scripts/python-venv.sh did not start: {e}"))?;
        if out.status.success() && ready() {
            return Ok(py);
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        Err(format!(
            "scripts/python-venv.sh could not make {} ({}): {}",
            venv.display(),
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ))
    })
    .clone()
}
