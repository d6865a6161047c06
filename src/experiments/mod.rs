//! Experiments: sweeps over settings and seeds, sharded across machines and merged back,
//! plotted and reported (design: `docs/experiments.md`).
//!
//! - [`sweep`]: a sweep file (base spec, axes, seeds) resolved into runs, a content-addressed
//!   `sweep/v1` record linking them, run with several runs at once or one shard of them.
//! - [`run_specs`]: run specs with overrides, and the narrow adapter to the runs module
//!   (create, resume, find).
//! - [`chart`]: line charts as SVG (legend beside the plot, colour-blind-safe colours with
//!   dashes and markers, intervals, a reference line, integer ticks for counts).
//! - [`cost`]: seconds per iteration per grid point, measured or calibrated, for the ETA and
//!   `--dry-run`'s estimate.
//! - [`plot`]: a metric against iteration per axis value, mean over seeds and a 95% band
//!   (SVG via [`chart`]), or a final value against an axis (the Fig. 20 form), read from the
//!   store's SQL views only.
//! - `paired`: paired per-seed comparisons of a final-value figure's lines (the report's).
//! - [`provenance`]: what a figure says about itself (the metric, its seeds and interval, the
//!   sweep, the commits and dates of its runs), a caption under every plot and report figure.
//! - [`report`]: one self-contained HTML page per sweep.
//! - [`tidy`]: a run's or sweep's results as one table (`tabula export`).
//!
//! Merging stores is the store's own operation ([`crate::store::Store::merge_from`]).

pub mod chart;
pub mod compare;
pub mod cost;
mod paired;
pub mod plot;
pub mod provenance;
pub mod report;
pub mod run_specs;
pub mod sweep;
pub mod tidy;

use crate::runs::RunError;
use crate::store::StoreError;

/// Errors of the experiment commands.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Bad input (a sweep file, an axis, a shard, a plot request); the text names it and what
    /// is allowed.
    #[error("{0}")]
    Usage(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl ExperimentError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> ExperimentError {
        ExperimentError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
