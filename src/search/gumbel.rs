//! The pieces of Gumbel AlphaZero (Danihelka, Guez, Schrittwieser and Silver, *Policy
//! improvement by planning with Gumbel*, ICLR 2022) that [`super::puct::Search`] uses when
//! `algorithm = "gumbel"`: the sequential-halving schedule of the root's visits, completed
//! Q-values with the mixed value v_mix, the transformation sigma, the improved policy pi'
//! and the non-root selection. Each is a plain function of a node's edges, so the unit tests
//! below check them against hand computations. docs/search.md, "Gumbel AlphaZero".
//!
//! Where the paper leaves a detail open, the choice follows DeepMind's reference
//! implementation mctx (`gumbel_muzero_policy`, `qtransforms.py`, `seq_halving.py`), and
//! says so.

use super::arena::Edge;
use super::config::GumbelQScale;

/// The improved policy pi' is stored in a game record as integer target counts (the record
/// keeps counts, docs/search.md): round(pi'(a) * 2^20). The learners normalise counts, so
/// they train toward pi' to within 2^-21 per action.
pub(super) const TARGET_SCALE: f64 = (1u32 << 20) as f64;

/// mctx's `rescale_values` epsilon: the smallest max - min a min-max rescaling divides by.
const RESCALE_EPSILON: f64 = 1e-8;

/// The visit count each root descent must find on the action it takes, for `m` considered
/// actions and `n` descents: mctx's `get_sequence_of_considered_visits`, literally. Phases
/// of sequential halving: with c actions considered (c = m first, then max(2, c / 2)), each
/// phase repeats `max(1, floor(n / (ceil(log2 m) * c)))` rounds that visit every considered
/// action once; the sequence is cut at exactly n entries. So every descent is spent (no
/// leftover: the last phase, at two actions, goes on until n is reached), and when n < m
/// only the first n actions in g + logits order are visited, once each. m <= 1: the one
/// action takes every descent (0, 1, 2, ...).
pub(super) fn considered_visits(m: u32, n: u32) -> Vec<u32> {
    if m <= 1 {
        return (0..n).collect();
    }
    let log2max = 32 - (m - 1).leading_zeros(); // ceil(log2 m) for m >= 2
    let n_usize = n as usize;
    let mut seq = Vec::with_capacity(n_usize + m as usize);
    let mut visits = vec![0u32; m as usize];
    let mut considered = m;
    while seq.len() < n_usize {
        let extra = (n / (log2max * considered)).max(1);
        for _ in 0..extra {
            seq.extend_from_slice(&visits[..considered as usize]);
            for v in &mut visits[..considered as usize] {
                *v += 1;
            }
            if seq.len() >= n_usize {
                break;
            }
        }
        considered = (considered / 2).max(2);
    }
    seq.truncate(n_usize);
    seq
}

/// The logit of a prior: ln p, with p floored at the smallest positive f64 (ln = -708.4), so
/// an action of prior 0 keeps a finite logit far below every other (mctx floors the priors of
/// v_mix at the dtype's `tiny` the same way).
#[inline]
pub(super) fn logit(p: f64) -> f64 {
    p.max(f64::MIN_POSITIVE).ln()
}

/// Completed Q-values of a decision node's edges, for the chooser, into `out`: Q(a) = W/N
/// where N(a) > 0, else v_mix (the paper's eq. 33; mctx `_compute_mixed_value`,
/// `_complete_qvalues`):
///
/// ```text
/// v_mix = (v + sum_b N(b) * sum_{N(a)>0} p(a) q(a) / sum_{N(a)>0} p(a)) / (1 + sum_b N(b))
/// ```
///
/// with v the evaluator's value of the node (`raw`) and p the priors (floored at the
/// smallest positive f64). With no visit, v_mix = v.
pub(super) fn completed_q(edges: &[Edge], raw: f64, out: &mut Vec<f64>) {
    let mut total = 0u64;
    let mut sum_p = 0.0;
    let mut sum_pq = 0.0;
    for e in edges {
        if e.n > 0 {
            let p = e.p.max(f64::MIN_POSITIVE);
            total += u64::from(e.n);
            sum_p += p;
            sum_pq += p * (e.w / f64::from(e.n));
        }
    }
    let v_mix = if total == 0 {
        raw
    } else {
        let n = total as f64;
        (raw + n * (sum_pq / sum_p)) / (1.0 + n)
    };
    out.clear();
    out.extend(
        edges
            .iter()
            .map(|e| if e.n > 0 { e.w / f64::from(e.n) } else { v_mix }),
    );
}

/// sigma in place: q brought into [0, 1] by `scale`, then multiplied by (c_visit + max_b
/// N(b)) * c_scale (the paper's eq. 8; mctx `qtransform_completed_by_mix_value`).
pub(super) fn sigma(
    q: &mut [f64],
    max_visits: u32,
    c_visit: f64,
    c_scale: f64,
    scale: GumbelQScale,
) {
    if scale == GumbelQScale::MinMax && !q.is_empty() {
        let (lo, hi) = q
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        let span = (hi - lo).max(RESCALE_EPSILON);
        for x in q.iter_mut() {
            *x = (*x - lo) / span;
        }
    }
    let k = (c_visit + f64::from(max_visits)) * c_scale;
    for x in q.iter_mut() {
        *x *= k;
    }
}

/// pi' = softmax(logits + sigma) in place: `s` holds sigma(completed Q) and receives pi'
/// (the paper's eq. 11; mctx's `action_weights`). Sums in edge order.
pub(super) fn improved_policy(edges: &[Edge], s: &mut [f64]) {
    for (x, e) in s.iter_mut().zip(edges) {
        *x += logit(e.p);
    }
    let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for x in s.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    for x in s.iter_mut() {
        *x /= sum;
    }
}

/// pi' of a decision node into `out`: completed Q, sigma, softmax with the logits.
pub(super) fn node_policy(
    edges: &[Edge],
    raw: f64,
    c_visit: f64,
    c_scale: f64,
    scale: GumbelQScale,
    out: &mut Vec<f64>,
) {
    completed_q(edges, raw, out);
    let max_n = edges.iter().map(|e| e.n).max().unwrap_or(0);
    sigma(out, max_n, c_visit, c_scale, scale);
    improved_policy(edges, out);
}

/// The target counts of pi': round(pi'(a) * [`TARGET_SCALE`]).
pub(super) fn target_counts(pi: &[f64]) -> Vec<u32> {
    pi.iter()
        .map(|&p| (p * TARGET_SCALE).round() as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn edge(n: u32, w: f64, p: f64) -> Edge {
        let mut e = Edge::new(0, p);
        e.set(n, w);
        e
    }

    /// Schedules computed by hand from mctx's rule.
    #[test]
    fn considered_visits_follow_mctx() {
        assert_eq!(considered_visits(4, 8), [0, 0, 0, 0, 1, 1, 2, 2]);
        assert_eq!(considered_visits(1, 3), [0, 1, 2]);
        assert_eq!(considered_visits(3, 2), [0, 0]);
        // m = 2: log2 = 1, one phase of n / 2 rounds.
        assert_eq!(considered_visits(2, 5), [0, 0, 1, 1, 2]);
        // m = 16, n = 32 (log2 = 4): 16 once (32 / 64 -> 1 round), 8 once (32 / 32), 4 twice
        // (32 / 16), cut at 32.
        let s = considered_visits(16, 32);
        let mut want = vec![0; 16];
        want.extend([1; 8]);
        want.extend([2; 4]);
        want.extend([3; 4]);
        assert_eq!(s, want);
        // m = 4, n = 50: log2 4 = 2; 6 rounds of 4 (24), 12 of 2 (24), then 2 more.
        let s = considered_visits(4, 50);
        assert_eq!(s.len(), 50);
        assert_eq!(&s[..4], &[0, 0, 0, 0]);
        assert_eq!(&s[20..26], &[5, 5, 5, 5, 6, 6]);
    }

    proptest! {
        /// Exactly n entries for every m and n, and a schedule that can always be followed:
        /// playing it (each entry picks an action with exactly that many visits among the
        /// first min(m, n) actions) never gets stuck.
        #[test]
        fn considered_visits_spend_exactly_n(m in 1u32..40, n in 0u32..400) {
            let s = considered_visits(m, n);
            prop_assert_eq!(s.len(), n as usize);
            let mut visits = vec![0u32; m as usize];
            for &v in &s {
                let i = visits.iter().position(|&x| x == v);
                prop_assert!(i.is_some(), "no action with {} visits in {:?}", v, visits);
                visits[i.unwrap()] += 1;
            }
            prop_assert_eq!(visits.iter().sum::<u32>(), n);
        }
    }

    /// A hand-computed example of the paper's formulas. Three actions, priors (0.5, 0.3,
    /// 0.2), node value v = 0.4; a0 visited 3 times (W = 2.1, q = 0.7), a1 once (W = 0.2,
    /// q = 0.2), a2 never.
    /// - v_mix = (0.4 + 4 * (0.5 * 0.7 + 0.3 * 0.2) / 0.8) / 5 = (0.4 + 4 * 0.5125) / 5 = 0.49.
    /// - completed Q = (0.7, 0.2, 0.49); min-max: (1, 0, 0.58).
    /// - sigma = (50 + 3) * 1 * q = (53, 0, 30.74).
    /// - pi' = softmax(ln 0.5 + 53, ln 0.3, ln 0.2 + 30.74).
    #[test]
    fn improved_policy_matches_the_formulas_by_hand() {
        let edges = [edge(3, 2.1, 0.5), edge(1, 0.2, 0.3), edge(0, 0.0, 0.2)];
        let mut q = Vec::new();
        completed_q(&edges, 0.4, &mut q);
        let v_mix: f64 = (0.4 + 4.0 * ((0.5 * 0.7 + 0.3 * 0.2) / 0.8)) / 5.0;
        assert!((v_mix - 0.49).abs() < 1e-12);
        assert!((q[0] - 0.7).abs() < 1e-12 && (q[1] - 0.2).abs() < 1e-12);
        assert!((q[2] - 0.49).abs() < 1e-12);
        let mut pi = Vec::new();
        node_policy(&edges, 0.4, 50.0, 1.0, GumbelQScale::MinMax, &mut pi);
        let z = [0.5f64.ln() + 53.0, 0.3f64.ln(), 0.2f64.ln() + 53.0 * 0.58];
        let m = z[0];
        let sum: f64 = z.iter().map(|x| (x - m).exp()).sum();
        for (p, x) in pi.iter().zip(&z) {
            assert!((p - (x - m).exp() / sum).abs() < 1e-12, "{pi:?}");
        }
        assert!((pi.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // `bounds`: q as it is, sigma = 53 * (0.7, 0.2, 0.49), c_scale 0.1 scales it.
        node_policy(&edges, 0.4, 50.0, 0.1, GumbelQScale::Bounds, &mut pi);
        let z = [
            0.5f64.ln() + 5.3 * 0.7,
            0.3f64.ln() + 5.3 * 0.2,
            0.2f64.ln() + 5.3 * 0.49,
        ];
        let sum: f64 = z.iter().map(|x| x.exp()).sum();
        for (p, x) in pi.iter().zip(&z) {
            assert!((p - x.exp() / sum).abs() < 1e-12, "{pi:?}");
        }
        // Unvisited: pi' is the prior (all completed Q equal v, sigma equal).
        let fresh = [edge(0, 0.0, 0.5), edge(0, 0.0, 0.3), edge(0, 0.0, 0.2)];
        node_policy(&fresh, 0.4, 50.0, 1.0, GumbelQScale::MinMax, &mut pi);
        for (p, want) in pi.iter().zip([0.5, 0.3, 0.2]) {
            assert!((p - want).abs() < 1e-12, "{pi:?}");
        }
        // A zero prior keeps a finite logit and gets (almost) no mass.
        let zero = [edge(1, 1.0, 1.0), edge(1, 1.0, 0.0)];
        node_policy(&zero, 0.5, 50.0, 1.0, GumbelQScale::MinMax, &mut pi);
        assert!(pi[1] < 1e-300 && (pi[0] - 1.0).abs() < 1e-12, "{pi:?}");
        assert_eq!(target_counts(&[0.25, 0.75]), [1 << 18, 3 << 18]);
    }

    proptest! {
        /// pi' is a distribution for any visits, values and priors.
        #[test]
        fn improved_policy_sums_to_one(
            stats in proptest::collection::vec((0u32..20, 0.0f64..1.0, 0.0f64..1.0), 1..12),
            raw in 0.0f64..1.0,
            bounds in any::<bool>(),
        ) {
            let edges: Vec<Edge> = stats
                .iter()
                .map(|&(n, q, p)| edge(n, q * f64::from(n), p))
                .collect();
            let scale = if bounds { GumbelQScale::Bounds } else { GumbelQScale::MinMax };
            let mut pi = Vec::new();
            node_policy(&edges, raw, 50.0, 1.0, scale, &mut pi);
            prop_assert!((pi.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            prop_assert!(pi.iter().all(|p| (0.0..=1.0).contains(p)));
        }
    }
}
