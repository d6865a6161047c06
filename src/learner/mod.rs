//! Transitional: self-play, on its way to `selfplay/`; the old paths of the truth the driver
//! measures against (now in `eval`).

pub mod lanes;
pub mod self_play;

pub use crate::eval::{MetricsPlan, Truth};
