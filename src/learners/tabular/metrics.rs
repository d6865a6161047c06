//! The tabular learner's metrics (docs/metrics.md), measured against the exact solution
//! ([`Truth`]): WR_p of the table player, ERR_p and MAE_v over the test positions and over every
//! trained position, and the coverage counts.
//!
//! Every float reduction runs in a fixed order (per position in key order, then summed
//! sequentially), so the metrics are bit-identical on any number of threads.

use crate::par;
use serde::{Deserialize, Serialize};

use super::table::{Table, TableEval, greedy_action, legal_priors, sigmoid};
use crate::eval::phases::timed;
use crate::eval::{MetricsPlan, Solved, Truth, WinRate, win_rate_of};
use crate::game::Game;

/// One iteration's metrics. `None` where the run did not ask for a metric (or the variant has
/// no solution).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub wr_p: Option<WinRate>,
    pub err_p: Option<f64>,
    pub mae_v: Option<f64>,
    /// Positions updated at least 1, 4 and 16 times since the run began.
    pub(crate) updated: [u64; 3],
    /// Distinct decision positions that occurred in self-play games since the run began.
    pub seen: u64,
    /// ERR_p and MAE_v over every position updated at least once: unweighted, then weighted
    /// by update count.
    pub err_p_updated: Option<f64>,
    pub mae_v_updated: Option<f64>,
    pub(crate) err_p_updated_weighted: Option<f64>,
    pub(crate) mae_v_updated_weighted: Option<f64>,
}

/// ERR_p and the value error of table row `row` (logits, then v_hat) at a solved position.
fn row_errors(solved: &Solved, row: &[f64], priors: &mut Vec<f64>) -> (f64, f64) {
    let n = row.len() - 1;
    priors.resize(solved.legal.len(), 0.0);
    legal_priors(&row[..n], &solved.legal, priors);
    solved.errors(priors, sigmoid(row[n]))
}

/// Measures `table` after iteration `iteration` (0: the untrained table).
pub fn measure<G: Game>(
    g: &G,
    table: &Table<G::Key>,
    truth: Option<&Truth<G>>,
    plan: MetricsPlan,
    iteration: u32,
    seen: u64,
) -> Metrics {
    let mut updated = [0u64; 3];
    for i in 0..table.len() {
        let u = table.updates(i);
        for (slot, min) in updated.iter_mut().zip([1, 4, 16]) {
            if u >= min {
                *slot += 1;
            }
        }
    }
    let mut m = Metrics {
        wr_p: None,
        err_p: None,
        mae_v: None,
        updated,
        seen,
        err_p_updated: None,
        mae_v_updated: None,
        err_p_updated_weighted: None,
        mae_v_updated_weighted: None,
    };
    let Some(truth) = truth else {
        return m;
    };
    if plan.wr_p_games > 0 {
        m.wr_p = Some(timed("wr_p", || {
            win_rate(g, table, truth, iteration, plan.wr_p_games)
        }));
    }
    if plan.errors {
        timed("errors", || errors(g, table, truth, &mut m));
    }
    m
}

/// ERR_p and MAE_v of `table` over S_test and over every trained position, into `m`.
fn errors<G: Game>(g: &G, table: &Table<G::Key>, truth: &Truth<G>, m: &mut Metrics) {
    // Per test position in S_test order (in parallel), then summed in that order.
    let tests: Vec<(f64, f64)> = par::map_init(
        truth.tests().len(),
        1,
        || (Vec::new(), Vec::new()),
        |(scratch, priors), k| {
            let (key, solved) = &truth.tests()[k];
            row_errors(solved, table.lookup(key, scratch), priors)
        },
    );
    let (mut err, mut mae) = (0.0, 0.0);
    for (e, a) in tests {
        err += e;
        mae += a;
    }
    let n = truth.tests().len().max(1) as f64;
    m.err_p = Some(err / n);
    m.mae_v = Some(mae / n);
    // Every trained position, in key order; per-position terms first, summed in order.
    let rows = table.sorted_rows();
    let terms: Vec<Option<(f64, f64, f64)>> =
        par::map_init(rows.len(), 1, Vec::new, |priors, k| {
            let i = rows[k];
            let s = g.state_from_key(*table.key(i)).ok()?;
            let solved = Solved::of(g, &truth.solution, &s)?;
            let (e, a) = row_errors(&solved, table.row(i), priors);
            Some((e, a, f64::from(table.updates(i))))
        });
    let (mut n, mut e, mut a, mut w, mut we, mut wa) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (te, ta, tw) in terms.into_iter().flatten() {
        n += 1.0;
        e += te;
        a += ta;
        w += tw;
        we += tw * te;
        wa += tw * ta;
    }
    if n > 0.0 {
        m.err_p_updated = Some(e / n);
        m.mae_v_updated = Some(a / n);
    }
    if w > 0.0 {
        m.err_p_updated_weighted = Some(we / w);
        m.mae_v_updated_weighted = Some(wa / w);
    }
}

/// WR_p over `games` games in parallel (see the module docs).
pub(crate) fn win_rate<G: Game>(
    g: &G,
    table: &Table<G::Key>,
    truth: &Truth<G>,
    iteration: u32,
    games: u32,
) -> WinRate {
    let n = g.num_actions();
    win_rate_of(
        g,
        truth,
        table.seed(),
        iteration,
        games,
        || TableEval::new(table),
        |eval, s, _, legal| greedy_action(&eval.entries(&g.key(s))[..n], legal),
    )
}
