//! MCTS-Solver (Winands, Björnsson, Saito 2008): UCT with random rollouts and proven values,
//! extended to chance nodes. The reference opponent of the metrics.
//!
//! Values are scores in [0, 1]. A terminal node is proven with its score. A decision node is
//! proven a win for its chooser as soon as one child is a proven win for it, and proven with
//! the best value once every child exists and is proven. A chance node is proven only when
//! every outcome's child exists and all are proven with equal value. Each proof remembers how
//! many plies its line lasts, so a lost position plays the longest resistance.
//!
//! Selection: UCT, `Q + c * sqrt(ln N / n)`, unvisited children first (exact ties by
//! [`SolverConfig::tie_break`]: uniformly at random by default, the lowest action in legacy),
//! proven children never: nothing is left to learn below them, so simulations go where the
//! proof can progress (a draw is proven only when every sibling is). A
//! simulation that reaches a proven node backs up its exact value; a new node is valued by
//! one random playout to the end (chance by its probabilities). The search stops early when
//! the root is proven.
//!
//! Final move: a proven win (the shortest); else, when every child is proven, the best value
//! (among losses the longest); else the most visited unproven child (ties by `tie_break`),
//! unless a proven child (not a loss) is worth at least that child's mean value.

use std::cmp::Ordering;
use std::num::NonZeroU32;

use super::SearchError;
use super::arena::{
    Edge, TieBreak, TieKeeper, edge_state, push_actions, push_outcomes, sample_outcome_edge,
};
use crate::game::{Action, ChanceOutcome, Game, Player, Turn};
use crate::play::{Scratch, random_playout};
use crate::rng::StreamRng;

/// Values closer than this are equal (chance nodes compare their children's proofs).
const EPS: f64 = 1e-12;

/// Settings of MCTS-Solver.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SolverConfig {
    /// Simulations per move (the search stops earlier once the root is proven).
    pub simulations: u32,
    /// The UCT exploration constant on the [0, 1] value scale (1 equals OpenSpiel's
    /// `uct_c = 2` on its [-1, 1] scale).
    pub uct_c: f64,
    /// Exact ties among UCT scores (the unvisited children, all +infinity, tie at every new
    /// node) and among the most visited children of the final choice. Default `random`;
    /// [`SolverConfig::LEGACY_TIE_BREAK`] (`lowest`) reproduces the searches before the
    /// setting existed.
    pub tie_break: TieBreak,
}

impl SolverConfig {
    /// `tie_break` before the setting existed: the lowest action index.
    pub const LEGACY_TIE_BREAK: TieBreak = TieBreak::Lowest;
}

impl Default for SolverConfig {
    fn default() -> SolverConfig {
        SolverConfig {
            simulations: 1000,
            uct_c: 1.0,
            tie_break: TieBreak::Random,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq)]
struct Proof {
    /// Score of player 0.
    v0: f64,
    /// Plies (decisions) to the end of the proven line.
    plies: u32,
}

#[derive(Copy, Clone, Debug)]
enum Kind {
    Decision(Player),
    Chance,
    Terminal,
}

#[derive(Copy, Clone, Debug)]
struct Node<S> {
    state: S,
    kind: Kind,
    first: u32,
    len: u32,
    visits: u32,
    proof: Option<Proof>,
}

/// What one MCTS-Solver search returns (vectors indexed like `actions`, the root's legal
/// actions ascending).
#[derive(Clone, Debug, PartialEq)]
pub struct SolverResult {
    pub actions: Vec<Action>,
    pub visits: Vec<u32>,
    /// Proven value of each root child for the player to move, if proven.
    pub proven_children: Vec<Option<f64>>,
    pub action: Action,
    /// The root's proven value for the player to move, if the search proved it.
    pub proven: Option<f64>,
    /// Simulations run (fewer than configured when the root was proven early).
    pub simulations: u32,
}

/// A reusable MCTS-Solver searcher (arenas reused between moves).
#[derive(Debug)]
pub struct MctsSolver<G: Game> {
    config: SolverConfig,
    nodes: Vec<Node<G::State>>,
    edges: Vec<Edge>,
    path: Vec<(u32, u32)>,
    scratch: Scratch,
    outcomes: Vec<ChanceOutcome>,
}

impl<G: Game> MctsSolver<G> {
    pub fn new(config: SolverConfig) -> MctsSolver<G> {
        MctsSolver {
            config,
            nodes: Vec::new(),
            edges: Vec::new(),
            path: Vec::with_capacity(64),
            scratch: Scratch::new(),
            outcomes: Vec::with_capacity(64),
        }
    }

    pub fn config(&self) -> &SolverConfig {
        &self.config
    }

    /// Searches from the decision state `root`; all randomness from `rng`.
    pub fn run(
        &mut self,
        g: &G,
        root: &G::State,
        rng: &mut StreamRng,
    ) -> Result<SolverResult, SearchError> {
        let mover = match g.turn(root) {
            Turn::Player(p) => p,
            Turn::Chance => return Err(SearchError::NotADecision("a chance state")),
            Turn::Terminal(_) => return Err(SearchError::NotADecision("terminal")),
        };
        self.nodes.clear();
        self.edges.clear();
        self.new_node(g, *root);
        let mut done = 0;
        while done < self.config.simulations && self.nodes[0].proof.is_none() {
            self.simulate(g, rng);
            done += 1;
        }
        let for_mover = |v0: f64| if mover == Player::P0 { v0 } else { 1.0 - v0 };
        let root_node = self.nodes[0];
        let range = root_node.first as usize..(root_node.first + root_node.len) as usize;
        let mut actions = Vec::with_capacity(range.len());
        let mut visits = Vec::with_capacity(range.len());
        let mut proven_children = Vec::with_capacity(range.len());
        let mut proofs = Vec::with_capacity(range.len());
        let mut means = Vec::with_capacity(range.len());
        for e in &self.edges[range] {
            actions.push(e.label);
            visits.push(e.n);
            means.push(if e.n == 0 { 0.0 } else { e.w / f64::from(e.n) });
            let proof = e.child.and_then(|c| self.nodes[c.get() as usize].proof);
            proven_children.push(proof.map(|p| for_mover(p.v0)));
            proofs.push(proof.map(|p| (for_mover(p.v0), p.plies)));
        }
        let i = choose(&visits, &means, &proofs, self.config.tie_break, rng);
        Ok(SolverResult {
            action: actions[i],
            actions,
            visits,
            proven_children,
            proven: root_node.proof.map(|p| for_mover(p.v0)),
            simulations: done,
        })
    }

    fn new_node(&mut self, g: &G, state: G::State) -> u32 {
        let idx = self.nodes.len() as u32;
        let first = self.edges.len() as u32;
        let (kind, len, proof) = match g.turn(&state) {
            Turn::Terminal(r) => (
                Kind::Terminal,
                0,
                Some(Proof {
                    v0: r.score(Player::P0),
                    plies: 0,
                }),
            ),
            Turn::Chance => {
                g.chance_outcomes(&state, &mut self.outcomes);
                push_outcomes(&mut self.edges, &self.outcomes);
                (Kind::Chance, self.outcomes.len() as u32, None)
            }
            Turn::Player(p) => {
                g.legal_actions(&state, &mut self.scratch.actions);
                push_actions(
                    &mut self.edges,
                    &self.scratch.actions,
                    std::iter::repeat(0.0),
                );
                (Kind::Decision(p), self.scratch.actions.len() as u32, None)
            }
        };
        self.nodes.push(Node {
            state,
            kind,
            first,
            len,
            visits: 0,
            proof,
        });
        idx
    }

    fn simulate(&mut self, g: &G, rng: &mut StreamRng) {
        self.path.clear();
        let mut cur = 0u32;
        let v0 = loop {
            let node = &self.nodes[cur as usize];
            if let Some(p) = node.proof {
                break p.v0;
            }
            let e = match node.kind {
                Kind::Decision(_) => self.select(cur, rng),
                Kind::Chance => self.sample_chance(cur, rng),
                Kind::Terminal => unreachable!("terminal nodes are proven"),
            };
            self.path.push((e, cur));
            let edge = self.edges[e as usize];
            match edge.child {
                Some(c) => cur = c.get(),
                None => {
                    let parent = &self.nodes[cur as usize];
                    let chance = matches!(parent.kind, Kind::Chance);
                    let s = edge_state(g, &parent.state, chance, edge.label);
                    let c = self.new_node(g, s);
                    self.edges[e as usize].child = NonZeroU32::new(c);
                    let child = &self.nodes[c as usize];
                    match (child.proof, child.kind) {
                        (Some(p), _) => break p.v0,
                        (None, Kind::Chance) => cur = c,
                        (None, _) => {
                            let (r, _) = random_playout(g, s, rng, &mut self.scratch);
                            break r.score(Player::P0);
                        }
                    }
                }
            }
        };
        for k in (0..self.path.len()).rev() {
            let (e, n) = self.path[k];
            let node = &mut self.nodes[n as usize];
            node.visits += 1;
            let chooser = match node.kind {
                Kind::Decision(p) => Some(p),
                _ => None,
            };
            let edge = &mut self.edges[e as usize];
            edge.record(chooser, v0);
            let child_proven = edge
                .child
                .is_some_and(|c| self.nodes[c.get() as usize].proof.is_some());
            if child_proven && self.nodes[n as usize].proof.is_none() {
                self.nodes[n as usize].proof = self.try_prove(n);
            }
        }
    }

    /// The proof of node `i` from its children, if they settle it.
    fn try_prove(&self, i: u32) -> Option<Proof> {
        let node = &self.nodes[i as usize];
        let children = &self.edges[node.first as usize..(node.first + node.len) as usize];
        let proof_of = |e: &Edge| e.child.and_then(|c| self.nodes[c.get() as usize].proof);
        match node.kind {
            Kind::Terminal => None,
            Kind::Decision(p) => {
                let for_p = |v0: f64| if p == Player::P0 { v0 } else { 1.0 - v0 };
                // A proven win for the chooser settles the node (the shortest such line).
                let win = children
                    .iter()
                    .filter_map(proof_of)
                    .filter(|q| for_p(q.v0) >= 1.0 - EPS)
                    .min_by_key(|q| q.plies);
                if let Some(q) = win {
                    return Some(Proof {
                        v0: q.v0,
                        plies: q.plies + 1,
                    });
                }
                let mut best: Option<Proof> = None;
                for e in children {
                    let q = proof_of(e)?;
                    best = Some(match best {
                        None => q,
                        Some(b) if for_p(q.v0) > for_p(b.v0) + EPS => q,
                        Some(b) if (for_p(q.v0) - for_p(b.v0)).abs() <= EPS => {
                            // Equal values: a loss lasts as long as possible, else be quick.
                            let longer = if for_p(b.v0) <= EPS {
                                q.plies > b.plies
                            } else {
                                q.plies < b.plies
                            };
                            if longer { q } else { b }
                        }
                        Some(b) => b,
                    });
                }
                best.map(|b| Proof {
                    v0: b.v0,
                    plies: b.plies + 1,
                })
            }
            Kind::Chance => {
                let mut first: Option<Proof> = None;
                let mut plies = 0;
                for e in children {
                    let q = proof_of(e)?;
                    match first {
                        None => first = Some(q),
                        Some(f) if (f.v0 - q.v0).abs() > EPS => return None,
                        Some(_) => {}
                    }
                    plies = plies.max(q.plies);
                }
                first.map(|f| Proof { v0: f.v0, plies })
            }
        }
    }

    /// UCT at decision node `i`: unvisited first, proven children never (an unproven node
    /// always has an unproven child).
    fn select(&self, i: u32, rng: &mut StreamRng) -> u32 {
        let node = &self.nodes[i as usize];
        let ln_n = f64::from(node.visits.max(1)).ln();
        let c = self.config.uct_c;
        let mut ties = TieKeeper::new(self.config.tie_break);
        let mut best = None;
        let mut best_score = f64::NEG_INFINITY;
        for e in node.first..node.first + node.len {
            let edge = &self.edges[e as usize];
            let proof = edge
                .child
                .and_then(|ch| self.nodes[ch.get() as usize].proof);
            let score = match proof {
                // Nothing is left to learn below a proven child.
                Some(_) => continue,
                None if edge.n == 0 => f64::INFINITY,
                None => {
                    let n = f64::from(edge.n);
                    edge.w / n + c * (ln_n / n).sqrt()
                }
            };
            let cmp = if best.is_none() {
                Ordering::Greater
            } else {
                score.partial_cmp(&best_score).unwrap_or(Ordering::Less)
            };
            if ties.offer(cmp, rng) {
                best = Some(e);
                best_score = score;
            }
        }
        // An unproven node has a child that is not a proven loss for its chooser.
        best.unwrap_or(node.first)
    }

    fn sample_chance(&self, i: u32, rng: &mut StreamRng) -> u32 {
        let node = &self.nodes[i as usize];
        sample_outcome_edge(&self.edges, node.first, node.len, rng)
    }
}

/// The final move: a proven win (the shortest); else, when every child is proven, the best
/// value (among losses the longest); else the most visited unproven child, unless a proven
/// child that is not a loss is worth at least that child's mean value. (Selection skips
/// proven children, so their visit counts stop growing once proven.)
fn choose(
    visits: &[u32],
    means: &[f64],
    proofs: &[Option<(f64, u32)>],
    tie_break: TieBreak,
    rng: &mut StreamRng,
) -> usize {
    let wins = proofs
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.filter(|q| q.0 >= 1.0 - EPS).map(|q| (q.1, i)))
        .min();
    if let Some((_, i)) = wins {
        return i;
    }
    // The best proven child: highest value; among equal losses the longest, else the most
    // visited.
    let mut best_proven: Option<usize> = None;
    for (i, p) in proofs.iter().enumerate() {
        let Some((v, l)) = *p else { continue };
        let better = match best_proven.and_then(|b| proofs[b].map(|q| (b, q))) {
            None => true,
            Some((b, (bv, bl))) => {
                v > bv + EPS
                    || ((v - bv).abs() <= EPS
                        && if bv <= EPS {
                            l > bl
                        } else {
                            visits[i] > visits[b]
                        })
            }
        };
        if better {
            best_proven = Some(i);
        }
    }
    let mut best_open: Option<usize> = None;
    let mut ties = TieKeeper::new(tie_break);
    for (i, p) in proofs.iter().enumerate() {
        if p.is_some() {
            continue;
        }
        let cmp = best_open.map_or(Ordering::Greater, |b| visits[i].cmp(&visits[b]));
        if ties.offer(cmp, rng) {
            best_open = Some(i);
        }
    }
    match (best_open, best_proven) {
        (None, Some(b)) => b,
        (Some(o), Some(b)) => {
            let v = proofs[b].map_or(0.0, |q| q.0);
            if v > EPS && v >= means[o] { b } else { o }
        }
        (Some(o), None) => o,
        (None, None) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::GameResult::{Draw, Win};
    use crate::rng::stream;
    use crate::search::toy::{TNode, TicTacToe, TreeGame, ttt_value};
    use Player::{P0, P1};

    fn solver<G: Game>(sims: u32) -> MctsSolver<G> {
        MctsSolver::new(SolverConfig {
            simulations: sims,
            uct_c: 1.0,
            tie_break: SolverConfig::LEGACY_TIE_BREAK,
        })
    }

    /// MCTS-Solver proves tic-tac-toe positions exactly (compared with plain minimax) and
    /// picks a move that keeps the proven value: 20 positions after 2..6 random plies.
    #[test]
    fn proves_tic_tac_toe_positions() {
        let g = TicTacToe;
        let mut rng = stream(3, "positions");
        let mut positions = Vec::new();
        let mut acts = Vec::new();
        while positions.len() < 20 {
            let mut s = g.initial_state();
            let plies = 2 + crate::rng::uniform_index(&mut rng, 5);
            for _ in 0..plies {
                g.legal_actions(&s, &mut acts);
                if acts.is_empty() {
                    break;
                }
                s = g.apply(&s, acts[crate::rng::uniform_index(&mut rng, acts.len())]);
            }
            if matches!(g.turn(&s), Turn::Player(_)) {
                positions.push(s);
            }
        }
        for s in positions {
            let Turn::Player(p) = g.turn(&s) else {
                unreachable!()
            };
            let for_mover = |v: f64| if p == P0 { v } else { 1.0 - v };
            let exact = for_mover(ttt_value(&g, &s));
            let cells = g.notation(&s);
            let r = solver(200_000).run(&g, &s, &mut stream(1, &cells)).unwrap();
            assert_eq!(r.proven, Some(exact), "{cells}: {r:?}");
            let after = for_mover(ttt_value(&g, &g.apply(&s, r.action)));
            assert_eq!(after, exact, "{cells}: {r:?}");
        }
    }

    /// A proven win stops the search at once and is played; of two lost moves the one that
    /// lasts longer is played.
    #[test]
    fn plays_proven_wins_and_resists_longest() {
        let g = TicTacToe;
        // X to move wins on square 2 (top row).
        let s = TicTacToe::from_cells("xx.oo....");
        let r = solver::<TicTacToe>(10_000)
            .run(&g, &s, &mut stream(1, "win"))
            .unwrap();
        assert_eq!(r.proven, Some(1.0));
        assert_eq!(r.action, 2);
        assert!(r.simulations < 100, "{r:?}");
        // 0: P0 {a0 -> 1, a1 -> 3}; 1: P1 {wins at once}; 3: P1 {-> 4}; 4: P0 {-> 1}.
        // Both moves lose; a1 loses four plies later instead of two.
        let g = TreeGame {
            nodes: vec![
                TNode::Decision(P0, vec![1, 3]),
                TNode::Decision(P1, vec![2]),
                TNode::Terminal(Win(P1)),
                TNode::Decision(P1, vec![4]),
                TNode::Decision(P0, vec![1]),
            ],
        };
        let r = solver::<TreeGame>(1000)
            .run(&g, &0, &mut stream(1, "lost"))
            .unwrap();
        assert_eq!(r.proven, Some(0.0));
        assert_eq!(r.action, 1, "{r:?}");
    }

    /// Chance nodes are proven only when all outcomes agree: a lottery of win/loss stays
    /// unproven at the root (value 0.5 is not proven), an all-win lottery is proven.
    #[test]
    fn chance_nodes_prove_only_when_outcomes_agree() {
        // 0: P0 {a0 -> chance 1 (win 1/2, loss 1/2), a1 -> chance 4 (win, win)}.
        let g = TreeGame {
            nodes: vec![
                TNode::Decision(P0, vec![1, 4]),
                TNode::Chance(vec![(2, 0.5), (3, 0.5)]),
                TNode::Terminal(Win(P0)),
                TNode::Terminal(Win(P1)),
                TNode::Chance(vec![(2, 0.3), (2, 0.7)]),
            ],
        };
        let r = solver::<TreeGame>(1000)
            .run(&g, &0, &mut stream(1, "lottery"))
            .unwrap();
        assert_eq!(r.proven, Some(1.0));
        assert_eq!(r.action, 1);
        assert_eq!(r.proven_children, [None, Some(1.0)]);
        // Only the lottery and a draw: the draw is proven, the lottery never; not proven.
        let g = TreeGame {
            nodes: vec![
                TNode::Decision(P0, vec![1, 4]),
                TNode::Chance(vec![(2, 0.5), (3, 0.5)]),
                TNode::Terminal(Win(P0)),
                TNode::Terminal(Win(P1)),
                TNode::Terminal(Draw),
            ],
        };
        let r = solver::<TreeGame>(2000)
            .run(&g, &0, &mut stream(1, "lottery"))
            .unwrap();
        assert_eq!(r.proven, None);
        assert_eq!(r.proven_children, [None, Some(0.5)]);
        assert_eq!(r.simulations, 2000);
    }

    /// Unvisited children all score +infinity: with `random` ties the first simulation goes
    /// to each of three drawn children about a third of the time (over 300 streams); with
    /// `lowest` always to the first.
    #[test]
    fn random_ties_spread_the_first_simulation() {
        let g = TreeGame::pick(&[Draw, Draw, Draw]);
        let first = |tie_break: TieBreak, seed: u64| {
            let mut m = MctsSolver::new(SolverConfig {
                simulations: 1,
                uct_c: 1.0,
                tie_break,
            });
            let r = m.run(&g, &0, &mut stream(seed, "ties")).unwrap();
            r.visits.iter().position(|&n| n == 1).unwrap()
        };
        let mut counts = [0u32; 3];
        for seed in 0..300 {
            counts[first(TieBreak::Random, seed)] += 1;
            assert_eq!(first(TieBreak::Lowest, seed), 0);
        }
        assert!(counts.iter().all(|c| (70..130).contains(c)), "{counts:?}");
    }
}
