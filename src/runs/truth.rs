//! The exact solution a run's metrics need (ERR_p, MAE_v and WR_p against the solved game,
//! docs/metrics.md), loaded or solved once per process and handed to the loop.

use std::sync::Arc;

use super::{RunConfig, RunError};
use crate::eval::Truth;
use crate::games::Abilities;
use crate::store::Store;

/// The exact solution and test positions the metrics of `cfg` measure against, loaded (or
/// solved and stored first); `None` when no stage of the run measures anything against them
/// or the game has no exact solver.
pub fn truth<G: Abilities>(
    g: &G,
    store: &mut Store,
    cfg: &RunConfig,
) -> Result<Option<Truth<G>>, RunError> {
    // Any stage's metrics (runs/stages.rs): the truth is loaded once for the whole run.
    let wanted = cfg.settings.each_in_force()?;
    if !wanted.iter().any(|s| s.eval.wr_p || s.eval.errors) {
        return Ok(None);
    }
    let Some(solution) = g.solution(store) else {
        return Ok(None);
    };
    let solution = solution.map_err(|e| RunError::Solution(e.to_string()))?;
    let t = Truth::new(g, Arc::new(solution), &g.test_positions()).map_err(RunError::Solution)?;
    Ok(Some(t))
}
