//! `tabula.run(spec, db=..., threads=...)`: a run spec run as `tabula run` runs it (a spec
//! whose run is in the store already is resumed, or shown finished), the GIL released while
//! the engine works, progress lines like the CLI's on standard error and, optionally, to a
//! Python callback.

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tabula::eval::MetricValues;
use tabula::runs::{IterationSummary, Observer, Resumed, RunConfig, RunOutcome};
use tabula::store::{ObjectHash, Store};

use crate::value_error;

/// Progress lines (`run 3 (run record ..., seed 1)`, `it    2/10  wr_p 0.512 ...`) on
/// standard error unless quiet, and each finished iteration's numbers to `callback`.
struct Lines {
    iterations: u32,
    quiet: bool,
    callback: Option<Py<PyAny>>,
}

fn metrics_text(m: &MetricValues) -> String {
    m.iter()
        .filter_map(|(name, v)| v.map(|v| format!("{name} {v:.4}")))
        .collect::<Vec<_>>()
        .join("  ")
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
        self.line(format!(
            "run {run_id}  (run record {}, seed {seed})",
            run_hash.short()
        ));
    }

    fn resumed(&mut self, done: u32, reused: u32, restart_seconds: f64) {
        if done > 0 || reused > 0 {
            self.line(format!(
                "continuing after iteration {done} ({reused} games of the next reused); \
                 restart {restart_seconds:.2} s"
            ));
        }
    }

    fn baseline(&mut self, m: &MetricValues) {
        self.line(format!(
            "it {:>4}/{}  {}",
            0,
            self.iterations,
            metrics_text(m)
        ));
        self.call(0, m);
    }

    fn iteration_done(&mut self, s: &IterationSummary) {
        self.line(format!(
            "it {:>4}/{}  {}  games {}  self-play {:.2}s  train {:.2}s  eval {:.2}s",
            s.iteration,
            self.iterations,
            metrics_text(&s.metrics),
            s.games,
            s.self_play_seconds,
            s.training_seconds,
            s.evaluation_seconds
        ));
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
    lines.iterations = cfg.iterations;
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
    let hash = tabula::experiments::run_specs::run_hash(&cfg).map_err(|e| e.to_string())?;
    let same = store
        .runs()
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|r| {
            r.name == cfg.name
                && r.hash == hash
                && r.iterations_planned == cfg.iterations
                && r.parent.is_none()
        });
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
        iterations: 0,
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
