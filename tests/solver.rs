//! The solver against known answers and independent oracles (docs/solver.md):
//! - must reproduce: CDC PPPP has 194,933 positions and start value 8/35; EWN 3x3x3 has
//!   367,956 positions;
//! - on PPPP the values equal those of plain value iteration (a cheap independent model);
//! - on EWN 3x3x3 and Connect Four 4x4 they equal a memoised expectiminimax written here;
//! - every stored solution has a Bellman residual below 1e-12 at every position;
//! - optimal against optimal on PPPP scores 0.5 within its 95% confidence interval.

use std::collections::HashMap;

use tabula::game::{Game, Player, Turn};
use tabula::games::{Cdc, ConnectFour, Ewn};
use tabula::rng::{sample_outcome, stream};
use tabula::solver::{
    Progress, Solution, Solvable, bellman_residual, load_solution, optimal_action, save_solution,
    solve, start_value,
};
use tabula::store::Store;

fn quiet(_: Progress) {}

fn cdc(material: &str) -> Cdc {
    match format!("cdc:{material}")
        .parse::<tabula::AnyGame>()
        .unwrap()
    {
        tabula::AnyGame::Cdc(g) => g,
        _ => unreachable!(),
    }
}

fn ewn(dims: &str) -> Ewn {
    match format!("ewn:{dims}").parse::<tabula::AnyGame>().unwrap() {
        tabula::AnyGame::Ewn(g) => g,
        _ => unreachable!(),
    }
}

fn c4(dims: &str) -> ConnectFour {
    match format!("c4:{dims}").parse::<tabula::AnyGame>().unwrap() {
        tabula::AnyGame::ConnectFour(g) => g,
        _ => unreachable!(),
    }
}

#[test]
fn pppp_must_reproduce_count_and_value() {
    let g = cdc("PPPP");
    let sol = solve(&g, &quiet).unwrap();
    assert_eq!(sol.len(), 194_933);
    let v = tabula::solver::to_unit(start_value(&g, &sol).unwrap());
    assert!(
        (v - 8.0 / 35.0).abs() < 1e-12,
        "PPPP start value {v}, expected 8/35"
    );
}

#[test]
fn ewn_3x3x3_must_reproduce_count() {
    let g = ewn("3x3x3");
    let sol = solve(&g, &quiet).unwrap();
    assert_eq!(sol.len(), 367_956);
}

/// Plain value iteration (Jacobi, from all zeros) over an explicit graph built here.
fn value_iteration<G: Game>(g: &G, keys: &[G::Key]) -> Vec<f64> {
    // For each position, its actions; for each action, (prob, sign, child index or terminal).
    enum Leaf {
        Position(usize, f64),
        Fixed(f64),
    }
    let index: HashMap<G::Key, usize> = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let mut graph: Vec<Vec<Vec<(f64, Leaf)>>> = Vec::with_capacity(keys.len());
    let mut actions = Vec::new();
    for k in keys {
        let s = g.state_from_key(*k).unwrap();
        let Turn::Player(me) = g.turn(&s) else {
            panic!()
        };
        g.legal_actions(&s, &mut actions);
        let mut per_action = Vec::new();
        for &a in &actions {
            let mut leaves = Vec::new();
            let mut stack = vec![(1.0, g.apply(&s, a))];
            while let Some((p, t)) = stack.pop() {
                match g.turn(&t) {
                    Turn::Terminal(r) => leaves.push((p, Leaf::Fixed(2.0 * r.score(me) - 1.0))),
                    Turn::Player(q) => leaves.push((
                        p,
                        Leaf::Position(index[&g.key(&t)], if q == me { 1.0 } else { -1.0 }),
                    )),
                    Turn::Chance => {
                        let mut os = Vec::new();
                        g.chance_outcomes(&t, &mut os);
                        for o in os {
                            stack.push((p * o.prob, g.apply_chance(&t, o.outcome)));
                        }
                    }
                }
            }
            per_action.push(leaves);
        }
        graph.push(per_action);
    }
    let mut v = vec![0.0; keys.len()];
    for _ in 0..100_000 {
        let next: Vec<f64> = graph
            .iter()
            .map(|acts| {
                acts.iter()
                    .map(|leaves| {
                        leaves
                            .iter()
                            .map(|(p, l)| {
                                p * match l {
                                    Leaf::Position(i, sign) => sign * v[*i],
                                    Leaf::Fixed(x) => *x,
                                }
                            })
                            .sum::<f64>()
                    })
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect();
        let delta = next
            .iter()
            .zip(&v)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        v = next;
        if delta < 1e-15 {
            return v;
        }
    }
    panic!("value iteration did not converge");
}

#[test]
fn pppp_equals_plain_value_iteration() {
    let g = cdc("PPPP");
    let sol = solve(&g, &quiet).unwrap();
    let vi = value_iteration(&g, sol.keys());
    let worst = sol
        .values()
        .iter()
        .zip(&vi)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        worst < 1e-9,
        "largest difference from value iteration: {worst}"
    );
}

/// An expectiminimax written independently of the library's solver.
fn expectiminimax<G: Game>(g: &G, s: &G::State, memo: &mut HashMap<G::Key, f64>) -> f64 {
    // Value of `s` for P0, in [-1, 1].
    match g.turn(s) {
        Turn::Terminal(r) => r.score(Player::P0) * 2.0 - 1.0,
        Turn::Chance => {
            let mut os = Vec::new();
            g.chance_outcomes(s, &mut os);
            os.iter()
                .map(|o| o.prob * expectiminimax(g, &g.apply_chance(s, o.outcome), memo))
                .sum()
        }
        Turn::Player(p) => {
            let k = g.key(s);
            if let Some(v) = memo.get(&k) {
                return *v;
            }
            let mut actions = Vec::new();
            g.legal_actions(s, &mut actions);
            let children = actions
                .iter()
                .map(|&a| expectiminimax(g, &g.apply(s, a), memo));
            let v = if p == Player::P0 {
                children.fold(f64::NEG_INFINITY, f64::max)
            } else {
                children.fold(f64::INFINITY, f64::min)
            };
            memo.insert(k, v);
            v
        }
    }
}

fn check_against_expectiminimax<G: Solvable>(g: &G) {
    let sol = solve(g, &quiet).unwrap();
    let mut memo = HashMap::new();
    let root = expectiminimax(g, &g.initial_state(), &mut memo);
    assert_eq!(
        memo.len(),
        sol.len(),
        "{}: position counts differ",
        g.variant()
    );
    assert!((root - start_value(g, &sol).unwrap()).abs() < 1e-12);
    for (k, v) in sol.keys().iter().zip(sol.values()) {
        let s = g.state_from_key(*k).unwrap();
        let Turn::Player(p) = g.turn(&s) else {
            panic!()
        };
        let for_p0 = memo[k];
        let mine = if p == Player::P0 { for_p0 } else { -for_p0 };
        assert!(
            (mine - v).abs() < 1e-12,
            "{}: {k:?}: {mine} vs {v}",
            g.variant()
        );
    }
}

#[test]
fn ewn_3x3x3_equals_independent_expectiminimax() {
    check_against_expectiminimax(&ewn("3x3x3"));
}

#[test]
fn connect_four_4x4_equals_independent_expectiminimax() {
    check_against_expectiminimax(&c4("4x4"));
}

fn stored_solution_is_consistent<G: Solvable>(g: &G) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("s.db")).unwrap();
    let sol = solve(g, &quiet).unwrap();
    let v0 = start_value(g, &sol).unwrap();
    let h = save_solution(&mut store, &sol, v0, 0.0).unwrap();
    let (loaded, h2): (Solution<G::Key>, _) = load_solution(&store, &g.variant()).unwrap().unwrap();
    assert_eq!(h, h2);
    assert_eq!(loaded, sol);
    let r = bellman_residual(g, &loaded).unwrap();
    assert!(r < 1e-12, "{}: Bellman residual {r}", g.variant());
    // Saving again changes nothing: the same objects, the same address.
    assert_eq!(save_solution(&mut store, &sol, v0, 1.0).unwrap(), h);
}

// The variants `tabula solve --all` stores but the largest of each family, and small boards
// of the other families. CDC GGCC (4.0M positions) and EWN 3x3x4 (6.3M) run the code KPPP
// (1.9M) and 3x4x3 (3.3M) run, at twice the size and CI's time: their position counts are
// unit tests (games::cdc, games::ewn); `tabula solve --all` solves and stores them.
#[test]
fn stored_cdc_solutions_have_no_bellman_residual() {
    stored_solution_is_consistent(&cdc("PPPP"));
    stored_solution_is_consistent(&cdc("KPPP"));
}

#[test]
fn stored_ewn_solutions_have_no_bellman_residual() {
    stored_solution_is_consistent(&ewn("3x3x3"));
    stored_solution_is_consistent(&ewn("3x4x3"));
}

#[test]
fn stored_connect_four_and_checkers_solutions_have_no_bellman_residual() {
    stored_solution_is_consistent(&c4("4x4"));
    stored_solution_is_consistent(&c4("5x4"));
    let checkers = match "checkers:4x4-1".parse::<tabula::AnyGame>().unwrap() {
        tabula::AnyGame::Checkers(g) => g,
        _ => unreachable!(),
    };
    stored_solution_is_consistent(&checkers);
}

#[test]
fn optimal_against_optimal_on_pppp_scores_one_half() {
    let g = cdc("PPPP");
    let sol = solve(&g, &quiet).unwrap();
    let games = 10_000u64;
    let mut total = 0.0;
    let mut squares = 0.0;
    for i in 0..games {
        let mut rng = stream(42, &format!("optimal-vs-optimal({i})"));
        let mut s = g.initial_state();
        let mut outcomes = Vec::new();
        // Seat A moves first in even games; the score is A's.
        let a_seat = if i % 2 == 0 { Player::P0 } else { Player::P1 };
        let score = loop {
            match g.turn(&s) {
                Turn::Terminal(r) => break r.score(a_seat),
                Turn::Chance => {
                    g.chance_outcomes(&s, &mut outcomes);
                    s = g.apply_chance(&s, outcomes[sample_outcome(&mut rng, &outcomes)].outcome);
                }
                Turn::Player(_) => {
                    let a = optimal_action(&g, &sol, &s, &mut rng).unwrap();
                    s = g.apply(&s, a);
                }
            }
        };
        total += score;
        squares += score * score;
    }
    let n = games as f64;
    let mean = total / n;
    let var = squares / n - mean * mean;
    let half = 1.96 * (var / n).sqrt();
    assert!(
        (mean - 0.5).abs() <= half,
        "optimal vs optimal scored {mean} ± {half}"
    );
}

/// The layered solver works in parallel; its values must not depend on the thread count
/// (bit-identical keys and values with 1 and 2 threads).
#[test]
fn solutions_do_not_depend_on_the_thread_count() {
    let solve_with = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let g = cdc("PPPP");
            let sol = solve(&g, &quiet).unwrap();
            let bits: Vec<u64> = sol.values().iter().map(|v| v.to_bits()).collect();
            (sol.keys().to_vec(), bits)
        })
    };
    let one = solve_with(1);
    let two = solve_with(2);
    assert!(!one.0.is_empty());
    assert_eq!(one, two);
}

/// The perfect index (`docs/solver.md`): every reachable position has a rank inside its
/// level's rank space, distinct from every other's, and its rank names it back.
#[test]
fn perfect_index_ranks_every_reachable_position_once() {
    use std::collections::HashSet;
    fn check<G: Solvable>(g: &G) -> usize {
        let index = g.perfect_index().expect("a layered game has an index");
        let sol = solve(g, &quiet).unwrap();
        let mut seen = HashSet::new();
        for &k in sol.keys() {
            let s = g.state_from_key(k).unwrap();
            let level = g.level(&s);
            let r = index.rank(g, &s);
            assert!(r < index.level_size(level), "{k:?}: rank {r} out of range");
            assert!(seen.insert((level, r)), "{k:?}: rank {r} taken twice");
            let back = index
                .unrank(g, level, r)
                .expect("a rank of a position names it");
            assert_eq!(g.key(&back), k);
        }
        seen.len()
    }
    assert_eq!(check(&cdc("PPPP")), 194_933);
    let checkers = match "checkers:4x4-1".parse::<tabula::AnyGame>().unwrap() {
        tabula::AnyGame::Checkers(g) => g,
        _ => unreachable!(),
    };
    assert!(check(&checkers) > 0);
}

/// The CDC rank space is a bijection: every rank but the start's "coloured" twin names a
/// well-formed key whose rank is that rank, and the sizes are the combinatorial counts.
#[test]
fn cdc_ranks_are_a_bijection() {
    use tabula::games::cdc::CdcIndex;
    for (material, total) in [("PPPP", 251_068u64), ("GCCP", 15_526_164)] {
        let index = CdcIndex::new(material);
        let sizes: Vec<u64> = (0..17)
            .map(|l| tabula::solver::index::PerfectIndex::<Cdc>::level_size(&index, l))
            .collect();
        assert_eq!(sizes.iter().sum::<u64>(), total, "{material}");
        if material != "PPPP" {
            continue;
        }
        let mut missing = 0;
        for (l, &n) in sizes.iter().enumerate() {
            for r in 0..n {
                match index.unrank_key(l as u32, r) {
                    Some(k) => assert_eq!(index.rank_key(k), Some((l as u32, r))),
                    None => missing += 1,
                }
            }
        }
        assert_eq!(
            missing, 1,
            "only the start with a colour to move has no key"
        );
    }
}

/// Draws are stored as +0.0 whatever order positions settled in (the stored bytes, hence
/// the solution's hash, must not depend on it).
#[test]
fn draws_are_stored_as_positive_zero() {
    let sol = solve(&cdc("PPPP"), &quiet).unwrap();
    let zeros = sol.values().iter().filter(|v| **v == 0.0).count();
    assert!(zeros > 0);
    assert!(
        sol.values()
            .iter()
            .all(|v| v.to_bits() != (-0.0f64).to_bits())
    );
}

/// The CDC solve on keys (`docs/solver.md`, "Solving on keys") gives the generic layered
/// solve's solution byte for byte: same keys, same value bits, under the default draw rules,
/// a no-progress limit that ends every plain move, and no repetition rule. (The move rules of
/// the other kinds are checked position by position in `games::cdc::keys`'s unit tests.)
#[test]
fn cdc_keyed_solve_equals_the_generic_layered_solve() {
    for v in ["PPPP", "PPPP,no_progress=1", "PPPP,repetition=off"] {
        let g = cdc(v);
        let keyed = solve(&g, &quiet).unwrap();
        let generic = tabula::solver::layered::solve(&g, &quiet).unwrap();
        assert_eq!(keyed.keys(), generic.keys(), "{v}");
        let bits = |s: &Solution<u64>| s.values().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&keyed), bits(&generic), "{v}");
    }
}
