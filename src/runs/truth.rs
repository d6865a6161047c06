//! The exact solution a run's metrics need (ERR_p, MAE_v and WR_p against the solved game,
//! docs/metrics.md), loaded or solved once per process and handed to the loop.

use std::sync::Arc;

use super::{RunConfig, RunError};
use crate::game::Game;
use crate::learner::Truth;
use crate::store::Store;

/// The exact solution the metrics need, type-erased so one closure serves every game.
pub(crate) type AnyTruth = Option<Box<dyn std::any::Any>>;

/// Loads (or solves) what the metrics of `cfg` need and calls `f` with it.
pub(crate) fn with_truth<T>(
    store: &mut Store,
    cfg: &RunConfig,
    f: impl FnOnce(&mut Store, &AnyTruth) -> Result<T, RunError>,
) -> Result<T, RunError> {
    let need_truth = cfg.settings.eval.wr_p || cfg.settings.eval.errors;
    let truth: AnyTruth = if need_truth {
        crate::with_solvable_game!(
            &cfg.game,
            |g| {
                let sol = crate::players::load_or_solve(g, store)
                    .map_err(|e| RunError::Solution(e.to_string()))?;
                let tests = crate::solver::Solvable::test_positions(g);
                let t = Truth::new(g, Arc::new(sol), &tests).map_err(RunError::Solution)?;
                Some(Box::new(t) as Box<dyn std::any::Any>)
            },
            |_other| None
        )
    } else {
        None
    };
    f(store, &truth)
}

/// The truth of game `G`, if `truth` holds one.
pub(crate) fn truth_for<'a, G: Game>(_g: &G, truth: &'a AnyTruth) -> Option<&'a Truth<G>> {
    truth.as_ref().and_then(|t| t.downcast_ref::<Truth<G>>())
}
