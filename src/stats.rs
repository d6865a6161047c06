//! The 95% interval of a score, one function for every place that prints or reports one.
//!
//! A score is the mean of per-game results win 1, draw 1/2, loss 0. Its interval is the
//! Wilson score interval (Wilson 1927) of the proportion p = (wins + draws / 2) / n with n the
//! number of games (a draw counts as half a win and half a loss of one game, not as two
//! half-games). Unlike the normal approximation p ± 1.96 sqrt(p (1 - p) / n), it does not
//! collapse to a point for small or extreme samples (3 wins of 3 give [0.439, 1], not
//! [1, 1]) and stays inside [0, 1]. Draws make a game's variance smaller than a win/loss
//! trial's of the same mean, so with draws the interval is conservative (slightly wide).
//! docs/search.md ("Intervals") says where it is used and why the stored evaluation keeps its
//! normal-approximation half-width.

/// z of a two-sided 95% interval.
pub(crate) const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson 95% interval `[low, high]` of the score of `wins`, `draws`, `losses`; `[0, 1]`
/// for no games.
pub fn score_interval95(wins: u32, draws: u32, losses: u32) -> [f64; 2] {
    let n = f64::from(wins) + f64::from(draws) + f64::from(losses);
    if n == 0.0 {
        return [0.0, 1.0];
    }
    let p = (f64::from(wins) + 0.5 * f64::from(draws)) / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    [(center - half).max(0.0), (center + half).min(1.0)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: [f64; 2], b: [f64; 2]) -> bool {
        (a[0] - b[0]).abs() < 5e-5 && (a[1] - b[1]).abs() < 5e-5
    }

    /// Known answers (the textbook values of Wilson's interval): 8 of 10 is [0.4902, 0.9433],
    /// 0 of 10 is [0, 0.2775], 3 of 3 is [0.4385, 1].
    #[test]
    fn wilson_matches_known_values() {
        assert!(
            close(score_interval95(8, 0, 2), [0.4902, 0.9433]),
            "{:?}",
            score_interval95(8, 0, 2)
        );
        assert!(
            close(score_interval95(0, 0, 10), [0.0, 0.2775]),
            "{:?}",
            score_interval95(0, 0, 10)
        );
        assert!(
            close(score_interval95(3, 0, 0), [0.4385, 1.0]),
            "{:?}",
            score_interval95(3, 0, 0)
        );
        assert_eq!(score_interval95(0, 0, 0), [0.0, 1.0]);
    }

    /// Draws count as half a win of one game: 2 draws equal 1 win and 1 loss.
    #[test]
    fn draws_are_half_a_win() {
        assert_eq!(score_interval95(0, 2, 0), score_interval95(1, 0, 1));
        let [lo, hi] = score_interval95(0, 10, 0);
        assert!(lo < 0.5 && hi > 0.5 && (lo + hi - 1.0).abs() < 1e-12);
    }

    proptest::proptest! {
        /// The interval lies in [0, 1], contains the score, and is never a point.
        #[test]
        fn interval_contains_the_score(w in 0u32..2000, d in 0u32..2000, l in 0u32..2000) {
            let n = w + d + l;
            let [lo, hi] = score_interval95(w, d, l);
            proptest::prop_assert!((0.0..=1.0).contains(&lo) && (0.0..=1.0).contains(&hi));
            proptest::prop_assert!(hi > lo);
            if n > 0 {
                let p = (f64::from(w) + 0.5 * f64::from(d)) / f64::from(n);
                proptest::prop_assert!(lo <= p + 1e-12 && p <= hi + 1e-12);
            }
        }
    }
}
