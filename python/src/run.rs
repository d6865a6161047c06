//! `tabula.run(spec, db=..., threads=...)`: a run spec run as `tabula run` runs it (a spec
//! whose run is in the store already is resumed, or shown finished), the GIL released while
//! the engine works, progress lines like the CLI's on standard error and, optionally, to a
//! Python callback.

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tabula::eval::MetricValues;
use tabula::learners::LearnerKind;
use tabula::runs::progress::ProgressText;
use tabula::runs::{IterationSummary, Observer, Resumed, RunConfig, RunOutcome};
use tabula::store::{ObjectHash, Store};

use crate::value_error;

/// Progress lines on standard error unless quiet (the command line's texts:
/// [`ProgressText`]), and each measured iteration's numbers to `callback`.
struct Lines {
    text: ProgressText,
    quiet: bool,
    callback: Option<Py<PyAny>>,
}

impl Lines {
    fn line(&self, text: String) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    fn call(&self, iteration: u32, metrics: &MetricValues) {
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

impl Observer for Lines {
    fn created(&mut self, run_id: i64, run_hash: &ObjectHash, seed: u64) {
        self.line(self.text.created(run_id, run_hash, seed));
    }

    fn stage(&mut self, index: usize, name: &str, first: u32, last: u32) {
        self.line(self.text.stage(index, name, first, last));
    }

    fn resumed(&mut self, done: u32, reused: u32, restart_seconds: f64) {
        if let Some(line) = self.text.resumed(done, reused, restart_seconds) {
            self.line(line);
        }
    }

    fn baseline(&mut self, m: &MetricValues) {
        self.line(self.text.baseline(m));
        self.call(0, m);
    }

    fn iteration_done(&mut self, s: &IterationSummary) {
        self.line(self.text.iteration(s));
        self.call(s.iteration, &s.metrics);
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

/// Runs (or resumes) the spec at `spec` into the store at `db` on `threads` threads.
fn run_spec(
    spec: &Path,
    db: &Path,
    threads: Option<usize>,
    lines: &mut Lines,
) -> Result<Ran, String> {
    let text = tabula::runs::spec::read_spec_file(spec)
        .map_err(|e| format!("reading the run spec {}: {e}", spec.display()))?;
    let name = spec
        .file_stem()
        .map_or_else(|| "run".to_string(), |s| s.to_string_lossy().into_owned());
    let cfg = RunConfig::from_toml(&text, &name).map_err(|e| format!("{}: {e}", spec.display()))?;
    lines.text = ProgressText::new(cfg.iterations, cfg.settings.learner.kind);
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
    let mut lines = Lines {
        text: ProgressText::new(0, LearnerKind::default()),
        quiet,
        callback: progress,
    };
    let ran = py
        .detach(|| run_spec(&spec, &db, threads, &mut lines))
        .map_err(value_error)?;
    let d = PyDict::new(py);
    d.set_item("run_id", ran.run_id)?;
    d.set_item("iterations", ran.iterations)?;
    d.set_item("head", ran.head.map(|h| h.to_hex()))?;
    Ok(d)
}
