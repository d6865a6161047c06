//! Bradley-Terry ratings on the Elo scale, fitted by maximum likelihood (docs/ratings.md).
//!
//! Player i has a strength r_i (in logits); in a game against j it scores 1 (win), 1/2
//! (draw) or 0 with expected score sigma(r_i - r_j), sigma the logistic function. A draw
//! counts as half a win and half a loss (Elo's convention): with s_ij the score of i against j
//! (wins + draws / 2) and n_ij the games between them, the log-likelihood is
//!
//!   L(r) = sum over pairs i < j of  s_ij ln sigma(r_i - r_j) + s_ji ln sigma(r_j - r_i).
//!
//! One named anchor is fixed at 0; the others are found by Newton's method on L (concave)
//! from r = 0, with step halving when a step would lower L, in a fixed order of players and
//! pairs (the same bits on every machine), until the largest step is below
//! [`CONVERGED`] logits. The 95% interval of r_i is r_i +- 1.96 sqrt(C_ii) with C the inverse
//! of the observed Fisher information (minus the Hessian of L over the players other than the
//! anchor) at the estimate: each interval is of the difference to the anchor. Ratings are
//! printed on the Elo scale, 400 / ln 10 Elo per logit ([`ELO_PER_LOGIT`]).
//!
//! **No-win players.** The maximum-likelihood estimate does not exist when the players split
//! into a group that never scored against the rest (a player that lost every game; a player
//! that won every game): L keeps growing as the groups move apart. Every pair that met
//! therefore gets [`PRIOR_DRAWS`] virtual drawn games (a tiny prior, BayesElo's virtual
//! draws at a hundredth of a game; it moves a rating between players that met 100 times by
//! about 0.1 Elo). It keeps every estimate finite; a player outside the anchor's group (the
//! players that reach the anchor and are reached by it in the graph "scored against") is
//! flagged [`Rating::separated`]: its rating is set by the prior, and only its side of the
//! anchor means anything.

use serde::Serialize;

use crate::stats::Z95;

/// Elo points per logit: Elo's 400 points per factor of 10 in the odds.
pub const ELO_PER_LOGIT: f64 = 400.0 / std::f64::consts::LN_10;

/// Virtual drawn games added to every pair that met (see the module docs).
pub const PRIOR_DRAWS: f64 = 0.01;

/// The convergence rule: Newton stops once no player's step exceeds this (logits).
pub(crate) const CONVERGED: f64 = 1e-9;

/// At most this many Newton steps.
const MAX_STEPS: u32 = 500;

/// What one pair of players scored: `a` against `b`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairScore {
    pub a: usize,
    pub b: usize,
    /// A's wins plus half the draws.
    pub score_a: f64,
    pub games: f64,
}

/// Errors of a fit's input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RatingError {
    #[error("ratings need at least 2 players, got {0}")]
    TooFewPlayers(usize),
    #[error("the anchor is player {anchor}, but there are only {players} players")]
    BadAnchor { anchor: usize, players: usize },
    #[error("pair {index}: {reason}")]
    BadPair { index: usize, reason: String },
    #[error(
        "player {player} played no game connected to the anchor's: ratings compare players \
         only through games between them"
    )]
    Disconnected { player: usize },
    #[error("the fit did not converge in {0} Newton steps")]
    NotConverged(u32),
}

/// One player's rating.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rating {
    /// Elo, the anchor 0.
    pub elo: f64,
    /// The 95% interval of `elo` (the anchor's is [0, 0]).
    pub ci95: [f64; 2],
    /// The standard error of `elo`.
    pub se: f64,
    /// Outside the anchor's group: it never scored against it, or it never lost to it; the
    /// rating is set by the prior (see the module docs).
    pub separated: bool,
}

/// The fitted ratings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fit {
    pub anchor: usize,
    pub ratings: Vec<Rating>,
    /// Newton steps taken.
    pub steps: u32,
    /// L at the estimate, prior games included.
    pub log_likelihood: f64,
}

/// ln sigma(x), without overflow.
fn ln_sigmoid(x: f64) -> f64 {
    if x > 0.0 {
        -(-x).exp().ln_1p()
    } else {
        x - x.exp().ln_1p()
    }
}

fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// The score and games matrices (row i: i's score against j), pairs summed in order, the
/// prior added to every pair that met.
struct Tables {
    n: usize,
    score: Vec<f64>,
    games: Vec<f64>,
}

impl Tables {
    fn of(n: usize, pairs: &[PairScore]) -> Result<Tables, RatingError> {
        let mut score = vec![0.0; n * n];
        let mut games = vec![0.0; n * n];
        for (index, p) in pairs.iter().enumerate() {
            let bad = |reason: String| RatingError::BadPair { index, reason };
            if p.a >= n || p.b >= n {
                return Err(bad(format!(
                    "players {} and {} (allowed: 0 to {})",
                    p.a,
                    p.b,
                    n - 1
                )));
            }
            if p.a == p.b {
                return Err(bad(format!("player {} against itself", p.a)));
            }
            if !(p.games.is_finite() && p.games >= 0.0) {
                return Err(bad(format!("{} games (allowed: >= 0)", p.games)));
            }
            if !(p.score_a.is_finite() && (0.0..=p.games).contains(&p.score_a)) {
                return Err(bad(format!(
                    "score {} of {} games (allowed: 0 to the games)",
                    p.score_a, p.games
                )));
            }
            score[p.a * n + p.b] += p.score_a;
            score[p.b * n + p.a] += p.games - p.score_a;
            games[p.a * n + p.b] += p.games;
            games[p.b * n + p.a] += p.games;
        }
        let mut t = Tables { n, score, games };
        for i in 0..n {
            for j in 0..n {
                if i != j && t.games[i * n + j] > 0.0 {
                    t.score[i * n + j] += PRIOR_DRAWS / 2.0;
                    t.games[i * n + j] += PRIOR_DRAWS;
                }
            }
        }
        Ok(t)
    }

    fn log_likelihood(&self, r: &[f64]) -> f64 {
        let n = self.n;
        let mut l = 0.0;
        for i in 0..n {
            for j in (i + 1)..n {
                if self.games[i * n + j] > 0.0 {
                    let d = r[i] - r[j];
                    l += self.score[i * n + j] * ln_sigmoid(d)
                        + self.score[j * n + i] * ln_sigmoid(-d);
                }
            }
        }
        l
    }

    /// The gradient of L and its Fisher information (minus the Hessian), both over the
    /// players `free` (in that order).
    fn derivatives(&self, r: &[f64], free: &[usize]) -> (Vec<f64>, Vec<f64>) {
        let n = self.n;
        let k = free.len();
        let mut grad = vec![0.0; k];
        let mut info = vec![0.0; k * k];
        for (x, &i) in free.iter().enumerate() {
            for j in 0..n {
                let nij = self.games[i * n + j];
                if j == i || nij == 0.0 {
                    continue;
                }
                let p = sigmoid(r[i] - r[j]);
                grad[x] += self.score[i * n + j] - nij * p;
                let w = nij * p * (1.0 - p);
                info[x * k + x] += w;
                if let Some(y) = free.iter().position(|&f| f == j) {
                    info[x * k + y] -= w;
                }
            }
        }
        (grad, info)
    }

    /// Whether i scored anything against j (the prior aside).
    fn scored(&self, i: usize, j: usize) -> bool {
        let n = self.n;
        let prior = if self.games[i * n + j] > 0.0 {
            PRIOR_DRAWS / 2.0
        } else {
            0.0
        };
        self.score[i * n + j] > prior
    }

    /// The players reachable from `from` along "met" edges (`scored`: along "scored against"
    /// edges, forwards or backwards).
    fn reach(&self, from: usize, edge: impl Fn(usize, usize) -> bool) -> Vec<bool> {
        let mut seen = vec![false; self.n];
        let mut stack = vec![from];
        seen[from] = true;
        while let Some(i) = stack.pop() {
            for (j, s) in seen.iter_mut().enumerate() {
                if !*s && edge(i, j) {
                    *s = true;
                    stack.push(j);
                }
            }
        }
        seen
    }
}

/// The Cholesky factor L (lower, row-major) of the symmetric positive definite `m` (k x k);
/// `None` when `m` is not positive definite.
fn cholesky(m: &[f64], k: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; k * k];
    for i in 0..k {
        for j in 0..=i {
            let mut s = m[i * k + j];
            for p in 0..j {
                s -= l[i * k + p] * l[j * k + p];
            }
            if i == j {
                if s <= 0.0 || !s.is_finite() {
                    return None;
                }
                l[i * k + i] = s.sqrt();
            } else {
                l[i * k + j] = s / l[j * k + j];
            }
        }
    }
    Some(l)
}

/// Solves L L^T x = b.
fn cholesky_solve(l: &[f64], k: usize, b: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; k];
    for i in 0..k {
        let mut s = b[i];
        for p in 0..i {
            s -= l[i * k + p] * y[p];
        }
        y[i] = s / l[i * k + i];
    }
    let mut x = vec![0.0; k];
    for i in (0..k).rev() {
        let mut s = y[i];
        for p in (i + 1)..k {
            s -= l[p * k + i] * x[p];
        }
        x[i] = s / l[i * k + i];
    }
    x
}

/// Fits the ratings of `n` players from the `pairs` (several entries of one pair add up),
/// player `anchor` at 0 (see the module docs).
pub fn fit(n: usize, anchor: usize, pairs: &[PairScore]) -> Result<Fit, RatingError> {
    if n < 2 {
        return Err(RatingError::TooFewPlayers(n));
    }
    if anchor >= n {
        return Err(RatingError::BadAnchor { anchor, players: n });
    }
    let t = Tables::of(n, pairs)?;
    let met = t.reach(anchor, |i, j| t.games[i * n + j] > 0.0);
    if let Some(player) = met.iter().position(|m| !m) {
        return Err(RatingError::Disconnected { player });
    }
    let free: Vec<usize> = (0..n).filter(|&i| i != anchor).collect();
    let k = free.len();
    let mut r = vec![0.0; n];
    let mut l_now = t.log_likelihood(&r);
    let mut steps = 0;
    loop {
        if steps == MAX_STEPS {
            return Err(RatingError::NotConverged(MAX_STEPS));
        }
        steps += 1;
        let (grad, info) = t.derivatives(&r, &free);
        // A connected graph of pairs with prior games: the information is positive definite.
        let Some(chol) = cholesky(&info, k) else {
            return Err(RatingError::NotConverged(steps));
        };
        let delta = cholesky_solve(&chol, k, &grad);
        let mut scale = 1.0;
        let mut next = r.clone();
        let mut l_next;
        loop {
            for (x, &i) in free.iter().enumerate() {
                next[i] = r[i] + scale * delta[x];
            }
            l_next = t.log_likelihood(&next);
            if l_next >= l_now || scale < 1e-12 {
                break;
            }
            scale *= 0.5;
        }
        let largest = delta.iter().fold(0.0f64, |m, d| m.max((scale * d).abs()));
        r = next;
        l_now = l_next;
        if largest < CONVERGED {
            break;
        }
    }
    let (_, info) = t.derivatives(&r, &free);
    let chol = cholesky(&info, k).ok_or(RatingError::NotConverged(steps))?;
    // The anchor's group: reaches the anchor and is reached by it through "scored against".
    let beats = t.reach(anchor, |i, j| t.scored(i, j));
    let beaten = t.reach(anchor, |i, j| t.scored(j, i));
    let mut ratings = Vec::with_capacity(n);
    for i in 0..n {
        let se = match free.iter().position(|&f| f == i) {
            Some(x) => {
                let mut e = vec![0.0; k];
                e[x] = 1.0;
                cholesky_solve(&chol, k, &e)[x].sqrt() * ELO_PER_LOGIT
            }
            None => 0.0,
        };
        let elo = r[i] * ELO_PER_LOGIT;
        ratings.push(Rating {
            elo,
            ci95: [elo - Z95 * se, elo + Z95 * se],
            se,
            separated: !(beats[i] && beaten[i]),
        });
    }
    Ok(Fit {
        anchor,
        ratings,
        steps,
        log_likelihood: l_now,
    })
}

/// The expected score of a player rated `elo_a` against one rated `elo_b`.
#[cfg(test)]
pub(crate) fn expected_score(elo_a: f64, elo_b: f64) -> f64 {
    sigmoid((elo_a - elo_b) / ELO_PER_LOGIT)
}

#[cfg(test)]
mod tests {
    use rand::RngExt;

    use super::*;
    use crate::rng::stream;

    /// Games between every pair of players of the given Elo, each a draw with probability
    /// `draw` and otherwise a win with the probability that makes the expected score
    /// sigma(difference): the model the fit assumes, with draws.
    fn simulate(elo: &[f64], games: u32, draw: f64, seed: u64) -> Vec<PairScore> {
        let mut rng = stream(seed, "ratings-test");
        let mut out = Vec::new();
        for a in 0..elo.len() {
            for b in (a + 1)..elo.len() {
                let p = expected_score(elo[a], elo[b]);
                let win = (p - draw / 2.0) / (1.0 - draw);
                assert!((0.0..=1.0).contains(&win), "draw rate too high for {p}");
                let mut score = 0.0;
                for _ in 0..games {
                    let u: f64 = rng.random();
                    if u < draw {
                        score += 0.5;
                    } else if rng.random::<f64>() < win {
                        score += 1.0;
                    }
                }
                out.push(PairScore {
                    a,
                    b,
                    score_a: score,
                    games: f64::from(games),
                });
            }
        }
        out
    }

    /// Two players: the closed form. r = logit(s / n) (prior games included) and
    /// se = 1 / sqrt(n p (1 - p)).
    #[test]
    fn two_players_match_the_closed_form() {
        let pairs = [PairScore {
            a: 0,
            b: 1,
            score_a: 30.0,
            games: 100.0,
        }];
        let f = fit(2, 0, &pairs).unwrap();
        let (s, n) = (30.0 + PRIOR_DRAWS / 2.0, 100.0 + PRIOR_DRAWS);
        let p = s / n;
        let r1 = -(p / (1.0 - p)).ln() * ELO_PER_LOGIT;
        assert_eq!(f.ratings[0].elo, 0.0);
        assert_eq!(f.ratings[0].ci95, [0.0, 0.0]);
        assert!((f.ratings[1].elo - r1).abs() < 1e-7, "{f:?}");
        let se = ELO_PER_LOGIT / (n * p * (1.0 - p)).sqrt();
        assert!((f.ratings[1].se - se).abs() < 1e-7, "{f:?}");
        assert!(!f.ratings[1].separated);
        // Anchored on the other player: the same difference, the other sign.
        let g = fit(2, 1, &pairs).unwrap();
        assert!((g.ratings[0].elo + r1).abs() < 1e-7);
        assert_eq!(g.ratings[1].elo, 0.0);
    }

    /// Equal scores give equal ratings: all at the anchor's 0, intervals symmetric, and
    /// players in the same position the same interval.
    #[test]
    fn symmetric_results_give_equal_ratings() {
        let mut pairs = Vec::new();
        for a in 0..4 {
            for b in (a + 1)..4 {
                pairs.push(PairScore {
                    a,
                    b,
                    score_a: 10.0,
                    games: 20.0,
                });
            }
        }
        let f = fit(4, 2, &pairs).unwrap();
        for (i, r) in f.ratings.iter().enumerate() {
            assert!(r.elo.abs() < 1e-9, "{i}: {r:?}");
            assert!((r.ci95[0] + r.ci95[1]).abs() < 1e-9);
            assert!(!r.separated);
        }
        assert_eq!(f.ratings[2].se, 0.0);
        for i in [1, 3] {
            assert!((f.ratings[i].se - f.ratings[0].se).abs() < 1e-9);
        }
        // A cycle (0 beats 1 beats 2 beats 0, equally): equal ratings too.
        let cyc = [(0, 1), (1, 2), (2, 0)].map(|(a, b)| PairScore {
            a,
            b,
            score_a: 7.0,
            games: 10.0,
        });
        let f = fit(3, 0, &cyc).unwrap();
        assert!(f.ratings.iter().all(|r| r.elo.abs() < 1e-9), "{f:?}");
    }

    /// Ratings simulated from known Elo (a round robin, draws as half a win) are recovered:
    /// the true values lie inside the 95% intervals about 95% of the time over many seeds,
    /// and the estimates are unbiased within their spread.
    #[test]
    fn recovers_known_ratings_within_the_intervals() {
        let truth = [0.0, 120.0, -80.0, 250.0, -200.0];
        let (mut inside, mut total) = (0, 0);
        let mut errors = vec![0.0; truth.len()];
        let seeds: u32 = 40;
        for seed in 0..seeds {
            let draw = [0.0, 0.06, 0.12][seed as usize % 3];
            let pairs = simulate(&truth, 60, draw, u64::from(seed));
            let f = fit(truth.len(), 0, &pairs).unwrap();
            assert!(f.steps < 20, "{} steps", f.steps);
            assert_eq!(f.ratings[0].elo, 0.0);
            for (i, r) in f.ratings.iter().enumerate().skip(1) {
                assert!(!r.separated);
                total += 1;
                inside += usize::from(r.ci95[0] <= truth[i] && truth[i] <= r.ci95[1]);
                errors[i] += r.elo - truth[i];
            }
        }
        // 160 intervals at 95% (draws make them conservative): expect about 152.
        assert!(
            inside >= 144 && inside <= total,
            "{inside} of {total} inside"
        );
        for (i, e) in errors.iter().enumerate() {
            // The mean error over 40 seeds, against the standard error of one estimate
            // (about 40 Elo at 60 games a pair) over sqrt(40).
            assert!((e / f64::from(seeds)).abs() < 20.0, "player {i}: bias {e}");
        }
    }

    /// A gauntlet (every player against the anchor only) recovers ratings the same way.
    #[test]
    fn gauntlet_ratings_are_within_the_intervals() {
        let truth = [0.0, 150.0, -100.0];
        let mut inside = 0;
        for seed in 0..30 {
            let pairs: Vec<PairScore> = simulate(&truth, 80, 0.1, 100 + seed)
                .into_iter()
                .filter(|p| p.a == 0)
                .collect();
            let f = fit(3, 0, &pairs).unwrap();
            for (r, t) in f.ratings.iter().zip(truth).skip(1) {
                inside += usize::from(r.ci95[0] <= t && t <= r.ci95[1]);
            }
        }
        assert!(inside >= 52, "{inside} of 60 inside");
    }

    /// A player that lost every game: finite (the prior), far below, flagged separated; the
    /// others keep the rating their own games give them.
    #[test]
    fn no_win_players_are_finite_and_flagged() {
        let pairs = [
            PairScore {
                a: 0,
                b: 1,
                score_a: 40.0,
                games: 80.0,
            },
            PairScore {
                a: 0,
                b: 2,
                score_a: 50.0,
                games: 50.0,
            },
            PairScore {
                a: 1,
                b: 2,
                score_a: 50.0,
                games: 50.0,
            },
        ];
        let f = fit(3, 0, &pairs).unwrap();
        let [p0, p1, p2] = [&f.ratings[0], &f.ratings[1], &f.ratings[2]];
        assert!(!p0.separated && !p1.separated && p2.separated, "{f:?}");
        assert!(p2.elo.is_finite() && p2.elo < -1000.0, "{p2:?}");
        assert!(p1.elo.abs() < 1e-6, "{p1:?}");
        // All wins: the mirror image.
        let won: Vec<PairScore> = pairs
            .iter()
            .map(|p| PairScore {
                score_a: p.games - p.score_a,
                ..*p
            })
            .collect();
        let g = fit(3, 0, &won).unwrap();
        assert!(g.ratings[2].separated && g.ratings[2].elo > 1000.0, "{g:?}");
        assert!((g.ratings[2].elo + p2.elo).abs() < 1e-6);
    }

    #[test]
    fn bad_input_is_refused() {
        let ok = PairScore {
            a: 0,
            b: 1,
            score_a: 1.0,
            games: 2.0,
        };
        assert_eq!(fit(1, 0, &[]), Err(RatingError::TooFewPlayers(1)));
        assert!(matches!(
            fit(2, 2, &[ok]),
            Err(RatingError::BadAnchor { .. })
        ));
        assert_eq!(
            fit(3, 0, &[ok]),
            Err(RatingError::Disconnected { player: 2 })
        );
        for bad in [
            PairScore { a: 0, b: 0, ..ok },
            PairScore { b: 5, ..ok },
            PairScore { score_a: 3.0, ..ok },
            PairScore {
                games: f64::NAN,
                ..ok
            },
        ] {
            let e = fit(2, 0, &[bad]).unwrap_err();
            assert!(matches!(e, RatingError::BadPair { index: 0, .. }), "{e}");
        }
    }

    #[test]
    fn expected_score_is_elo() {
        assert!((expected_score(400.0, 0.0) - 10.0 / 11.0).abs() < 1e-12);
        assert_eq!(expected_score(0.0, 0.0), 0.5);
    }
}
