//! Properties of Gumbel search and of the chance rules, each tested on its own (issue 51):
//! the final move, the survivors of a halving, the rule below the root, the Gumbel draws,
//! `min_max` inside a search, the noiseless training target, and the frequencies of chance
//! outcomes. Each test's comment names a mutation of the search that it catches.

use super::*;
use crate::game::GameResult::{Draw, Win};
use crate::rng::stream;
use crate::search::toy::{TNode, TreeGame};
use crate::search::{GumbelQScale, TieBreak, Uniform};
use Player::{P0, P1};

/// Gumbel search in self-play (noise on, m = 16), ties to the lowest index.
fn gumbel(simulations: u32) -> SearchConfig {
    SearchConfig {
        algorithm: Algorithm::Gumbel,
        simulations: simulations.into(),
        tie_break: TieBreak::Lowest,
        ..SearchConfig::default()
    }
}

/// [`gumbel`] as evaluation play: no noise.
fn gumbel_quiet(simulations: u32) -> SearchConfig {
    gumbel(simulations).as_evaluation()
}

/// A searcher whose root (state 0, player 0 to move) has one edge per `(n, w, p)`, as a
/// search would hold it after those visits; the evaluator's value of the root is `raw`.
fn root_by_hand(cfg: SearchConfig, edges: &[(u32, f64, f64)], raw: f64) -> Search<TreeGame> {
    let mut s = Search::new(cfg).unwrap();
    s.actions = (0..edges.len() as u16).collect();
    s.priors = edges.iter().map(|e| e.2).collect();
    let (root, _) = s.new_decision(0, P0, raw);
    for (edge, &(n, w, _)) in s.edges.iter_mut().zip(edges) {
        edge.set(n, w);
    }
    s.nodes[root as usize].visits = edges.iter().map(|e| e.0).sum();
    s.gumbel = vec![0.0; edges.len()];
    s
}

/// Fixed priors by legal index (uniform for another number of actions) and fixed values by
/// state (0.5 for a state not listed), for the side to move.
struct Fixed {
    priors: Vec<f64>,
    values: Vec<(u16, f64)>,
}

impl Evaluator<TreeGame> for Fixed {
    fn evaluate(
        &mut self,
        _: &TreeGame,
        s: &u16,
        _: &[u16],
        legal: &[Action],
        priors: &mut [f64],
        _: &mut StreamRng,
    ) -> f64 {
        if legal.len() == self.priors.len() {
            priors.copy_from_slice(&self.priors);
        } else {
            priors.fill(1.0 / legal.len() as f64);
        }
        self.values
            .iter()
            .find(|(k, _)| k == s)
            .map_or(0.5, |&(_, v)| v)
    }
}

/// The final move is the best g + logits + sigma(Q) among the *most visited* actions (mctx's
/// `considered_visit = max N`). a2 scores best of all but has fewer visits; a0 and a1 share
/// the most visits and a1 scores better. Catches: the best score over every action (a2), the
/// most visited by index (a0), the noise left out of the final score (the last case).
#[test]
fn the_final_move_is_the_best_score_among_the_most_visited() {
    let edges = [(3, 0.6, 0.3), (3, 2.7, 0.3), (1, 1.0, 0.4)];
    let mut s = root_by_hand(gumbel_quiet(8), &edges, 0.5);
    s.gumbel = vec![0.0, 0.0, 5.0];
    let (i, _) = s.gumbel_finish(&mut stream(1, "final"));
    assert_eq!(i, 1);
    // With g(a0) far above g(a1) the noise decides between the two most visited.
    let mut s = root_by_hand(gumbel_quiet(8), &edges, 0.5);
    s.gumbel = vec![60.0, 0.0, 0.0];
    let (i, _) = s.gumbel_finish(&mut stream(1, "final"));
    assert_eq!(i, 0);
}

/// Sequential halving with m = 4 and 8 descents (mctx's schedule: one visit each, then two
/// more for each of the best two): the survivors are the two best by g + logits + sigma(Q)
/// after the first round. Without noise, the two wins survive although the priors favour
/// the others: visits [3, 1, 3, 1]. With noise and equal actions, the two largest draws
/// survive. Catches: halving by prior ([1, 3, 1, 3]), by index ([3, 3, 1, 1]), without the
/// noise (the second case by index).
#[test]
fn the_best_two_by_score_survive_the_halving() {
    let g = TreeGame::pick(&[Win(P0), Win(P1), Win(P0), Draw]);
    let mut eval = Fixed {
        priors: vec![0.1, 0.4, 0.1, 0.4],
        values: vec![],
    };
    let cfg = SearchConfig {
        gumbel_actions: 4,
        ..gumbel_quiet(9)
    };
    let r = Search::new(cfg)
        .unwrap()
        .run(&g, &0, &[], 0, &mut eval, &mut stream(1, "halving"))
        .unwrap();
    assert_eq!(r.visits, [3, 1, 3, 1]);
    let g = TreeGame::pick(&[Draw, Draw, Draw, Draw]);
    for seed in 0..8 {
        let cfg = SearchConfig {
            gumbel_actions: 4,
            ..gumbel(9)
        };
        let mut rng = stream(seed, "halving");
        // The search's first draws are its root noise (Uniform draws nothing).
        let draws = standard_draws(&mut rng.clone(), 4);
        let r = Search::new(cfg)
            .unwrap()
            .run(&g, &0, &[], 0, &mut Uniform, &mut rng)
            .unwrap();
        let mut order: Vec<usize> = (0..4).collect();
        order.sort_by(|&a, &b| draws[b].total_cmp(&draws[a]));
        let mut want = [1u32; 4];
        want[order[0]] = 3;
        want[order[1]] = 3;
        assert_eq!(r.visits, want, "seed {seed}: draws {draws:?}");
    }
}

/// `count` draws of Gumbel(0, 1) from `rng`, as the search makes them.
fn standard_draws(rng: &mut StreamRng, count: usize) -> Vec<f64> {
    let noise = rand_distr::Gumbel::new(0.0, 1.0).unwrap();
    (0..count).map(|_| noise.sample(rng)).collect()
}

proptest::proptest! {
    /// Below the root, Gumbel search takes argmax pi'(a) - N(a) / (1 + sum_b N(b)) (the
    /// paper's eq. 14), pi' with the node's own Q scale, exact ties to the lowest index.
    /// Catches: the count without its 1, pi' alone, the root's rule, PUCT's, and a Q scale
    /// other than the setting's.
    #[test]
    fn below_the_root_gumbel_takes_the_papers_rule(
        edges in proptest::collection::vec((0u32..6, 0.0f64..1.0, 0.01f64..1.0), 2..6),
        raw in 0.0f64..1.0,
        min_max in proptest::bool::ANY,
    ) {
        let edges: Vec<(u32, f64, f64)> =
            edges.into_iter().map(|(n, q, p)| (n, q * f64::from(n), p)).collect();
        let scale = if min_max { GumbelQScale::MinMax } else { GumbelQScale::Bounds };
        let cfg = SearchConfig { gumbel_q_scale: scale, ..gumbel(8) };
        let mut s = root_by_hand(cfg, &edges, raw);
        let first = s.nodes[0].first as usize;
        let arena = s.edges[first..first + edges.len()].to_vec();
        let mut pi = Vec::new();
        gumbel::node_policy(&arena, raw, cfg.c_visit, cfg.c_scale, scale, &mut pi);
        let total = 1.0 + edges.iter().map(|e| f64::from(e.0)).sum::<f64>();
        let score = |k: usize| pi[k] - f64::from(edges[k].0) / total;
        let want = (0..edges.len()).fold(0, |b, k| if score(k) > score(b) { k } else { b });
        let got = s.gumbel_select(0, &mut stream(1, "below")) as usize - first;
        proptest::prop_assert_eq!(got, want);
    }
}

/// The root's noise: one Gumbel(0, 1) draw per legal action (not per considered action), in
/// action order, the first draws of the search's stream, times `gumbel_scale`; none at scale
/// 0; and the draws have Gumbel(0, 1)'s distribution (a Kolmogorov-Smirnov distance below
/// its 1% critical value over 20,000 draws, the mean near Euler's constant). Catches: a draw
/// per considered action, draws in another order or from another stream, the scale ignored,
/// draws at scale 0, another distribution (e.g. -ln u).
#[test]
fn the_gumbel_draws_are_one_per_action_in_order_and_gumbel_distributed() {
    let five = [(0, 0.0, 0.2); 5];
    for (scale, m) in [(None, 16), (None, 2), (Some(2.0), 16), (Some(0.0), 16)] {
        let cfg = SearchConfig {
            gumbel_actions: m,
            gumbel_scale: scale,
            ..gumbel(8)
        };
        let mut s = root_by_hand(cfg, &five, 0.5);
        let mut rng = stream(7, "draws");
        let mut twin = rng.clone();
        s.gumbel_root(7, &mut rng);
        let k = scale.unwrap_or(1.0);
        let want: Vec<f64> = if k == 0.0 {
            vec![0.0; 5]
        } else {
            standard_draws(&mut twin, 5).iter().map(|x| k * x).collect()
        };
        assert_eq!(s.gumbel, want, "scale {scale:?}, m {m}");
        assert_eq!(rng.random::<u64>(), twin.random::<u64>(), "scale {scale:?}");
    }
    let mut draws = Vec::new();
    for seed in 0..4000 {
        let mut s = root_by_hand(gumbel(8), &five, 0.5);
        s.gumbel_root(7, &mut stream(seed, "distribution"));
        draws.extend_from_slice(&s.gumbel);
    }
    draws.sort_by(f64::total_cmp);
    let n = draws.len() as f64;
    let ks = draws.iter().enumerate().fold(0.0f64, |d, (i, &x)| {
        let cdf = (-(-x).exp()).exp();
        d.max((cdf - i as f64 / n).abs())
            .max((cdf - (i + 1) as f64 / n).abs())
    });
    assert!(ks < 1.63 / n.sqrt(), "KS distance {ks}");
    let mean = draws.iter().sum::<f64>() / n;
    assert!((mean - 0.577_215_664_9).abs() < 0.03, "mean {mean}");
}

/// `min_max` inside a search: two actions whose values differ by 0.01 (0.50 and 0.51 after
/// one visit each). On their own bounds sigma barely separates them, pi'(a1) = 1 / (1 +
/// exp(-0.51)); min-max blows the gap up to all of [0, 1], pi'(a1) = 1 / (1 + exp(-51)).
/// Catches: the search ignoring `gumbel_q_scale`.
#[test]
fn min_max_scales_q_inside_a_search() {
    // 0: P0 {a0 -> 1, a1 -> 2}; 1 and 2: P1 to move, valued 0.50 and 0.49 for P1.
    let g = TreeGame {
        nodes: vec![
            TNode::Decision(P0, vec![1, 2]),
            TNode::Decision(P1, vec![3]),
            TNode::Decision(P1, vec![3]),
            TNode::Terminal(Draw),
        ],
    };
    for (scale, gap) in [(GumbelQScale::Bounds, 0.51), (GumbelQScale::MinMax, 51.0)] {
        let mut eval = Fixed {
            priors: vec![0.5, 0.5],
            values: vec![(1, 0.50), (2, 0.49)],
        };
        let cfg = SearchConfig {
            gumbel_q_scale: scale,
            ..gumbel_quiet(3)
        };
        let r = Search::new(cfg)
            .unwrap()
            .run(&g, &0, &[], 0, &mut eval, &mut stream(1, "minmax"))
            .unwrap();
        assert_eq!(r.visits, [1, 1]);
        let pi = r.improved.unwrap();
        let want = 1.0 / (1.0 + f64::exp(-gap));
        assert!((pi[1] - want).abs() < 1e-9, "{scale:?}: {pi:?}");
    }
}

/// The training target pi' = softmax(logits + sigma(completed Q)) carries no Gumbel noise:
/// with every action visited once whatever the noise, the target is the same from every
/// stream and equals the formula (c_visit 1: sigma = 2 q), while the noise itself differs.
/// Catches: g(a) added into pi'.
#[test]
fn the_training_target_carries_no_gumbel_noise() {
    let g = TreeGame::pick(&[Win(P0), Draw, Win(P1)]);
    let cfg = SearchConfig {
        c_visit: 1.0,
        ..gumbel(4)
    };
    let weights = [2.0f64.exp(), 1.0f64.exp(), 1.0];
    let sum: f64 = weights.iter().sum();
    let mut noises = std::collections::BTreeSet::new();
    for seed in 0..6 {
        let mut s = Search::new(cfg).unwrap();
        let r = s
            .run(&g, &0, &[], 0, &mut Uniform, &mut stream(seed, "target"))
            .unwrap();
        assert_eq!(r.visits, [1, 1, 1]);
        let pi = r.improved.unwrap();
        for (p, w) in pi.iter().zip(weights) {
            assert!((p - w / sum).abs() < 1e-12, "seed {seed}: {pi:?}");
        }
        noises.insert(s.gumbel.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    }
    assert_eq!(noises.len(), 6);
}

/// One action into a chance node of three outcomes (1/2, 3/10, 1/5), each a terminal.
fn lottery() -> TreeGame {
    TreeGame {
        nodes: vec![
            TNode::Decision(P0, vec![1]),
            TNode::Chance(vec![(2, 0.5), (3, 0.3), (4, 0.2)]),
            TNode::Terminal(Win(P0)),
            TNode::Terminal(Win(P1)),
            TNode::Terminal(Draw),
        ],
    }
}

/// The descents through each outcome of the first chance node of the last search's tree.
fn chance_visits(s: &Search<TreeGame>) -> Vec<u32> {
    let node = s
        .nodes
        .iter()
        .find(|n| matches!(n.kind, Kind::Chance))
        .expect("a chance node");
    let edges = &s.edges[node.first as usize..(node.first + node.len) as usize];
    edges.iter().map(|e| e.n).collect()
}

/// The chance outcomes' frequencies under PUCT and Gumbel, 1,000 descents through the chance
/// node: `sample` draws them by probability (within 4.5 standard deviations of n P(c), and
/// different from stream to stream); `proportional` gives each outcome n P(c) within one,
/// the same from every stream (ties here go to the lowest index, so nothing is drawn). Catches: outcomes drawn
/// uniformly or by index, the rule of one search used in the other, argmax P(c) alone
/// (every descent to the first outcome). The first three descents under `proportional` go
/// to outcomes 0, 1, 0 (1/2, then 3/10 against 1/4, then 1/4 against 3/20 and 1/5): [2, 1,
/// 0]. Catches: P(c) / N(c) with unvisited outcomes first (mctx's + 1 dropped: [1, 1, 1]).
#[test]
fn chance_outcomes_follow_their_probabilities_under_each_rule() {
    let g = lottery();
    let probs = [0.5f64, 0.3, 0.2];
    for algorithm in [Algorithm::Puct, Algorithm::Gumbel] {
        for chance in [ChanceRule::Sample, ChanceRule::Proportional] {
            let cfg = SearchConfig {
                algorithm,
                chance,
                ..gumbel(1001)
            };
            let mut seen = std::collections::BTreeSet::new();
            for seed in 0..4 {
                let mut s = Search::new(cfg).unwrap();
                s.run(&g, &0, &[], 0, &mut Uniform, &mut stream(seed, "freq"))
                    .unwrap();
                let n = chance_visits(&s);
                assert_eq!(n.iter().sum::<u32>(), 1000);
                for (&c, p) in n.iter().zip(probs) {
                    let expected = 1000.0 * p;
                    let within = match chance {
                        ChanceRule::Sample => 4.5 * (expected * (1.0 - p)).sqrt(),
                        ChanceRule::Proportional => 1.0,
                    };
                    let c = f64::from(c);
                    assert!((c - expected).abs() <= within, "{cfg:?}: {n:?}");
                }
                seen.insert(n);
            }
            let distinct = if chance.is_sample() { 4 } else { 1 };
            assert_eq!(seen.len(), distinct, "{algorithm:?} {chance:?}: {seen:?}");
            if !chance.is_sample() {
                let mut s = Search::new(SearchConfig {
                    simulations: 4.into(),
                    ..cfg
                })
                .unwrap();
                s.run(&g, &0, &[], 0, &mut Uniform, &mut stream(0, "freq"))
                    .unwrap();
                assert_eq!(chance_visits(&s), [2, 1, 0], "{algorithm:?}");
            }
        }
    }
}

/// `proportional` breaks exact ties like every other tie: three outcomes of 1/3 under
/// `lowest` are visited 0, 1, 2, 0, ... (after 7 descents [3, 2, 2]); under `random` every
/// stream keeps the counts within one of each other, in an order of its own. Catches: ties
/// always to the lowest index.
#[test]
fn proportional_chance_breaks_ties_like_every_tie() {
    let third = 1.0 / 3.0;
    let g = TreeGame {
        nodes: vec![
            TNode::Decision(P0, vec![1]),
            TNode::Chance(vec![(2, third), (3, third), (4, third)]),
            TNode::Terminal(Win(P0)),
            TNode::Terminal(Win(P1)),
            TNode::Terminal(Draw),
        ],
    };
    let visits = |tie_break: TieBreak, sims: u32, seed: u64| {
        let cfg = SearchConfig {
            chance: ChanceRule::Proportional,
            tie_break,
            ..gumbel(sims)
        };
        let mut s = Search::new(cfg).unwrap();
        s.run(&g, &0, &[], 0, &mut Uniform, &mut stream(seed, "ties"))
            .unwrap();
        chance_visits(&s)
    };
    assert_eq!(visits(TieBreak::Lowest, 8, 0), [3, 2, 2]);
    assert_eq!(visits(TieBreak::Lowest, 2, 0), [1, 0, 0]);
    let firsts: std::collections::BTreeSet<Vec<u32>> = (0..24)
        .map(|seed| visits(TieBreak::Random, 2, seed))
        .collect();
    assert_eq!(firsts.len(), 3, "{firsts:?}");
    for seed in 0..12 {
        let n = visits(TieBreak::Random, 8, seed);
        let (lo, hi) = (n.iter().min().unwrap(), n.iter().max().unwrap());
        assert!(hi - lo <= 1 && n.iter().sum::<u32>() == 7, "{n:?}");
    }
}

/// `gumbel_scale` unset in self-play and set to 1 draw the same noise (the bits of every
/// Gumbel run before the setting); set to 0, self-play is deterministic whatever the stream.
/// Catches: a changed default scale, scale 0 still drawing.
#[test]
fn an_explicit_scale_of_one_is_the_default_and_zero_is_noiseless() {
    let g = TreeGame::pick(&[Draw, Draw, Draw, Draw]);
    let run = |cfg: SearchConfig, seed: u64| {
        Search::new(cfg)
            .unwrap()
            .run(&g, &0, &[], 0, &mut Uniform, &mut stream(seed, "scale"))
            .unwrap()
    };
    let two = |scale| SearchConfig {
        gumbel_actions: 2,
        gumbel_scale: scale,
        ..gumbel(5)
    };
    let mut noisy = std::collections::BTreeSet::new();
    for seed in 0..10 {
        assert_eq!(run(two(None), seed), run(two(Some(1.0)), seed));
        assert_eq!(run(two(Some(0.0)), seed).visits, [2, 2, 0, 0]);
        noisy.insert(run(two(None), seed).visits);
    }
    assert!(noisy.len() > 2, "{noisy:?}");
}
