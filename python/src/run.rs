//! `tabula.run(spec, db=..., threads=...)`: a run spec run as `tabula run` runs it (a spec
//! whose run is in the store already is resumed, or shown finished), the GIL released while
//! the engine works, progress lines like the CLI's on standard error and, optionally, to a
//! Python callback.

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tabula::eval::MetricValues;
use tabula::runs::progress::{ProgressLines, ProgressSink, ProgressText};
use tabula::runs::{Resumed, RunConfig, RunOutcome};
use tabula::store::{ObjectHash, Store};

use crate::value_error;

/// Progress lines on standard error unless quiet (the command line's lines:
/// [`ProgressLines`]), and each measured iteration's numbers to `callback`.
struct Lines {
    quiet: bool,
    callback: Option<Py<PyAny>>,
}

impl ProgressSink for Lines {
    fn line(&mut self, text: String) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    fn measured(&mut self, iteration: u32, metrics: &MetricValues) {
        let Some(cb) = &self.callback else { return };
        Python::attach(|py| {
            let d = PyDict::new(py);
            let filled = d.set_item("iteration", iteration).and_then(|()| {
                metrics
                    .iter()
                    .try_for_each(|(name, v)| d.set_item(*name, *v))
            });
            if let Err(e) = filled.and_then(|()| cb.call1(py, (d,)).map(drop)) {
                e.print(py);
            }
        });
    }
}

/// What `tabula.run` returns.
struct Ran {
    run_id: i64,
    iterations: u32,
    head: Option<ObjectHash>,
}

impl From<RunOutcome> for Ran {
    fn from(o: RunOutcome) -> Ran {
        Ran {
            run_id: o.run_id,
            iterations: o.iterations,
            head: o.head,
        }
    }
}

/// Runs (or resumes) the spec at `spec` into the store at `db` on `threads` threads, its
/// progress lines into `sink` (a call's own lines: the cost estimate follows its first
/// iteration).
fn run_spec(spec: &Path, db: &Path, threads: Option<usize>, sink: Lines) -> Result<Ran, String> {
    let text = tabula::runs::spec::read_spec_file(spec)
        .map_err(|e| format!("reading the run spec {}: {e}", spec.display()))?;
    let name = spec
        .file_stem()
        .map_or_else(|| "run".to_string(), |s| s.to_string_lossy().into_owned());
    let cfg = RunConfig::from_toml(&text, &name).map_err(|e| format!("{}: {e}", spec.display()))?;
    let progress = ProgressText::new(cfg.iterations, cfg.settings.learner.kind);
    let lines = &mut ProgressLines::new(progress, sink);
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        if n == 0 {
            return Err("threads = 0 is out of range; allowed: an integer >= 1".into());
        }
        pool = pool.num_threads(n);
    }
    let pool = pool
        .build()
        .map_err(|e| format!("starting the worker threads: {e}"))?;
    let mut store = Store::open(db).map_err(|e| e.to_string())?;
    let same =
        tabula::experiments::run_specs::stored_run_of(&store, &cfg).map_err(|e| e.to_string())?;
    let n = pool.current_num_threads() as u32;
    pool.install(|| match same {
        Some(row) => match tabula::runs::resume_on(&mut store, &row.id.to_string(), None, lines) {
            Ok(Resumed::Ran(out)) => Ok((*out).into()),
            Ok(Resumed::Finished {
                run_id,
                iterations,
                head,
            }) => Ok(Ran {
                run_id,
                iterations,
                head,
            }),
            Err(e) => Err(e.to_string()),
        },
        None => tabula::runs::start_on(&mut store, &cfg, &text, n, None, lines)
            .map(Ran::from)
            .map_err(|e| e.to_string()),
    })
}

/// Runs a run spec as `tabula run SPEC` does, into the store `db` (default: $TABULA_DB,
/// else ./tabula.db): a spec whose run is in the store already is resumed where it stopped,
/// or left as it is when finished. Progress lines go to standard error (not with `quiet`);
/// `progress`, if given, is called with a dict of each iteration's metrics. Returns
/// `{"run_id", "iterations", "head"}`.
#[pyfunction]
#[pyo3(signature = (spec, db=None, threads=None, quiet=false, progress=None))]
pub(crate) fn run<'py>(
    py: Python<'py>,
    spec: PathBuf,
    db: Option<PathBuf>,
    threads: Option<usize>,
    quiet: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let db = Store::resolve_path(db.as_deref());
    let sink = Lines {
        quiet,
        callback: progress,
    };
    let ran = py
        .detach(|| run_spec(&spec, &db, threads, sink))
        .map_err(value_error)?;
    let d = PyDict::new(py);
    d.set_item("run_id", ran.run_id)?;
    d.set_item("iterations", ran.iterations)?;
    d.set_item("head", ran.head.map(|h| h.to_hex()))?;
    Ok(d)
}
