//! MAE_v by unroll depth (issue 50, point 3; docs/muzero.md "MAE_v by depth"): how far the
//! learned model's value drifts from the truth as it is unrolled along real actions.
//!
//! From each test position s of S_test (in S_test's order) the model unrolls s^0 = h(s), then
//! s^k = g(s^{k-1}, a^k) along K real moves drawn from the stream `muzero-depth(I)` of the
//! model seed (each a uniformly random legal move of the real state; chance outcomes by their
//! probabilities, from the same stream, in game order). At depth k the model's value
//! v(s^k) for step k's side (the root's mover at even k, the other at odd k) is compared
//! with the exact value, for that side, of the real state after the k-th move: a decision
//! state's solved value, a terminal's score, a chance state's expectation over its outcomes
//! (`solver::value_for`; so the chance right after the move is averaged exactly, while the
//! outcomes of earlier chance events, which the model cannot see either, are the drawn
//! ones). A sequence that reaches the end stops there: depths past the end are not measured.
//! The metric at depth k is the mean |v - v*| over the sequences that reach it.
//!
//! **The model's cost at the root** (issue 50, point 3): on every test position, the root
//! value of the run's search at evaluation settings (no root noise) in the learned model and
//! of the same search over the game's rules guided by f(h(s)) at its leaves (terminal states
//! by their scores), each against the position's exact value: `mae_root_model` and
//! `mae_root_rules`, their difference the learned model's cost in one number. Each search
//! draws from its own stream, `muzero-root-model(I)` and `muzero-root-rules(I)` of the model
//! seed, the positions in S_test's order.

use crate::eval::Truth;
use crate::game::{Action, ChanceOutcome, Game, Turn};
use crate::games::Abilities;
use crate::rng::{StreamRng, stream_fmt, uniform_index};
use crate::search::{Search, SearchConfig};
use crate::solver::{to_unit, value_for};

use super::model::MuZero;

impl<G: Abilities> MuZero<G> {
    /// Mean |v - v*| at depths 0..=K (see the module docs); a depth no sequence reached is
    /// NaN-free: it is left out (the vector ends before it).
    pub(crate) fn mae_by_depth(
        &self,
        g: &G,
        truth: &Truth<G>,
        iteration: u32,
        seed: u64,
    ) -> Vec<f64> {
        let k = self.settings.unroll_steps as usize;
        let mut rng = stream_fmt(seed, format_args!("muzero-depth({iteration})"));
        let (mut sum, mut count) = (vec![0.0f64; k + 1], vec![0u64; k + 1]);
        let mut sc = self.scratch();
        let (mut state, mut next) = (vec![0.0; self.state_len()], vec![0.0; self.state_len()]);
        let lookup = |s: &G::State| truth.solution.value_of_key(&g.key(s));
        let (mut legal, mut outcomes) = (Vec::new(), Vec::new());
        let (mut after, mut sigma) = (vec![0.0; self.state_len()], Vec::new());
        for s0 in truth.test_states(g) {
            let Turn::Player(root) = g.turn(&s0) else {
                continue;
            };
            self.represent(&s0, &[], &mut sc, &mut state);
            let mut real = s0;
            // Stochastic MuZero: the afterstate's Q at this depth (the model state right
            // after the move).
            let mut q: Option<f64> = None;
            for depth in 0..=k {
                let side = if depth % 2 == 0 { root } else { root.other() };
                let v = match q {
                    Some(q) => q,
                    None => self.predict(&state, &mut sc),
                };
                let Some(exact) = value_for(g, &real, side, &lookup) else {
                    break;
                };
                sum[depth] += (v - to_unit(exact)).abs();
                count[depth] += 1;
                if depth == k {
                    break;
                }
                // The next real move from the next decision state (chance drawn first).
                let Some(decision) = next_decision(g, real, &mut rng, &mut outcomes) else {
                    break;
                };
                if q.is_some() {
                    // The drawn chance as the encoder codes the decision state it led to.
                    let c = self.code(&decision, &[], &mut sc);
                    self.dynamics(&after, c as Action, &mut sc, &mut state);
                }
                g.legal_actions(&decision, &mut legal);
                let a = legal[uniform_index(&mut rng, legal.len())];
                real = g.apply(&decision, a);
                if self.chance.is_some() {
                    self.afterstate(&state, a, &mut sc, &mut after);
                    q = Some(self.afterstate_predict(&after, &mut sc, &mut sigma));
                } else {
                    self.dynamics(&state, a, &mut sc, &mut next);
                    std::mem::swap(&mut state, &mut next);
                }
            }
        }
        sum.iter()
            .zip(&count)
            .take_while(|(_, c)| **c > 0)
            .map(|(s, &c)| s / c as f64)
            .collect()
    }
}

impl<G: Abilities> MuZero<G> {
    /// (MAE of the root value in the learned model, MAE of the root value over the rules)
    /// on S_test, both searches at `config` (see the module docs); `None` without test
    /// positions or where a search fails.
    pub(crate) fn root_errors(
        &self,
        g: &G,
        truth: &Truth<G>,
        config: SearchConfig,
        (iteration, seed): (u32, u64),
    ) -> Option<(f64, f64)> {
        let mut model_rng = stream_fmt(seed, format_args!("muzero-root-model({iteration})"));
        let mut rules_rng = stream_fmt(seed, format_args!("muzero-root-rules({iteration})"));
        let mut rules = Search::<G>::new(config).ok()?;
        let mut eval = self.eval();
        let (mut model_sum, mut rules_sum, mut n) = (0.0, 0.0, 0u64);
        for s in truth.test_states(g) {
            let Some(exact) = truth.solution.value_of_key(&g.key(&s)) else {
                continue;
            };
            let exact = to_unit(exact);
            let planned = self.plan(g, config, (&s, &[]), 0, &mut model_rng).ok()?;
            let searched = rules.run(g, &s, &[], 0, &mut eval, &mut rules_rng).ok()?;
            model_sum += (planned.value - exact).abs();
            rules_sum += (searched.value - exact).abs();
            n += 1;
        }
        (n > 0).then(|| (model_sum / n as f64, rules_sum / n as f64))
    }
}

impl<G: Abilities> MuZero<G> {
    /// Stochastic MuZero's chance metrics (docs/muzero.md, "Stochastic MuZero's metrics"):
    /// over every test position s and every legal action a whose real successor a(s) is a
    /// chance state, the real outcomes o (probabilities p(o)) are carried to the codes by
    /// the encoder, q(c) = sum of p(o) over the outcomes whose next state o(a(s)) the
    /// encoder codes c (its past: s); the total variation 1/2 sum_c |sigma(c) - q(c)| with
    /// sigma = psi(phi(h(s), a)). Returns (the distinct codes over all those next states,
    /// the mean total variation); `None` where no chance state is reached.
    pub(crate) fn chance_errors(&self, g: &G, truth: &Truth<G>) -> (Option<f64>, Option<f64>) {
        let c = self.codes();
        let mut sc = self.scratch();
        let (mut state, mut after) = (vec![0.0; self.state_len()], vec![0.0; self.state_len()]);
        let (mut legal, mut outcomes, mut sigma) = (Vec::new(), Vec::new(), Vec::new());
        let mut used = vec![false; c];
        let (mut tv, mut n) = (0.0f64, 0u64);
        for s in truth.test_states(g) {
            if !matches!(g.turn(&s), Turn::Player(_)) {
                continue;
            }
            self.represent(&s, &[], &mut sc, &mut state);
            g.legal_actions(&s, &mut legal);
            for &a in &legal {
                let real = g.apply(&s, a);
                if g.turn(&real) != Turn::Chance {
                    continue;
                }
                g.chance_outcomes(&real, &mut outcomes);
                self.afterstate(&state, a, &mut sc, &mut after);
                self.afterstate_predict(&after, &mut sc, &mut sigma);
                let mut q = vec![0.0f64; c];
                for o in &outcomes {
                    let next = g.apply_chance(&real, o.outcome);
                    let code = self.code(&next, &[s], &mut sc);
                    q[code] += o.prob;
                    used[code] = true;
                }
                tv += 0.5
                    * sigma
                        .iter()
                        .zip(&q)
                        .map(|(x, y)| (x - y).abs())
                        .sum::<f64>();
                n += 1;
            }
        }
        if n == 0 {
            return (None, None);
        }
        let usage = used.iter().filter(|&&u| u).count() as f64;
        (Some(usage), Some(tv / n as f64))
    }
}

/// The decision state reached from `s` through chance (outcomes drawn by their
/// probabilities); `None` at the end of the game.
fn next_decision<G: Game>(
    g: &G,
    mut s: G::State,
    rng: &mut StreamRng,
    outcomes: &mut Vec<ChanceOutcome>,
) -> Option<G::State> {
    loop {
        match g.turn(&s) {
            Turn::Player(_) => return Some(s),
            Turn::Terminal(_) => return None,
            Turn::Chance => {
                g.chance_outcomes(&s, outcomes);
                let u: f64 = rand::RngExt::random(rng);
                let mut acc = 0.0;
                let mut pick = outcomes[outcomes.len() - 1].outcome;
                for o in outcomes.iter() {
                    acc += o.prob;
                    if u < acc {
                        pick = o.outcome;
                        break;
                    }
                }
                s = g.apply_chance(&s, pick);
            }
        }
    }
}
