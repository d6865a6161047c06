//! Measuring models: the metrics a learner declares ([`MetricDef`], [`MetricValues`]), the
//! exact truth they are measured against ([`truth`]: WR_p, ERR_p, MAE_v; docs/metrics.md), and
//! the reference evaluation against MCTS-Solver and the Connect Four test sets on variants
//! without a solution ([`reference`]). Learners measure their own models through these; the run
//! driver stores what they report without knowing its meaning.

use serde::Serialize;

pub mod phases;
pub mod reference;
pub mod truth;

pub(crate) use truth::Solved;
pub use truth::{MetricsPlan, Truth, WinRate, win_rate_of};

/// A metric a learner (or the evaluation) declares: its name in the store's long table
/// `metrics` and in the wide views, and what it measures (shown by `tabula show --json`,
/// listed in docs/metrics.md).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MetricDef {
    pub name: &'static str,
    pub(crate) description: &'static str,
}

/// One iteration's values of declared metrics, in declaration order (`None`: not measured).
pub type MetricValues = Vec<(&'static str, Option<f64>)>;

/// The value of metric `name` in `values` (`None`: not declared or not measured).
pub fn metric(values: &MetricValues, name: &str) -> Option<f64> {
    values
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| *v)
}
