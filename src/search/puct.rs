//! PUCT MCTS with chance nodes, AlphaZero's knobs and KataGo's options (see the module docs
//! of [`crate::search`]).

use std::cmp::Ordering;
use std::num::NonZeroU32;

use super::arena::{
    Edge, TieBreak, TieKeeper, edge_state, push_actions, push_outcomes, sample_outcome_edge,
};
use super::config::{Algorithm, ChanceRule, ForcedPlayouts, SearchConfig, SearchConfigError};
use super::gumbel;
use super::{Evaluator, SearchError};
use crate::game::{Action, ChanceOutcome, Game, MAX_PAST, Player, Turn, last_past};
use crate::rng::StreamRng;
use rand::RngExt;
use rand::distr::Distribution;

/// What one search returns. Vectors are indexed like `actions` (the root's legal actions,
/// ascending).
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult {
    pub actions: Vec<Action>,
    /// Root priors as the search used them (root noise included).
    pub priors: Vec<f64>,
    /// N(s0, a) after the search.
    pub visits: Vec<u32>,
    /// The training target's counts: `visits` after policy target pruning (equal to `visits`
    /// when pruning is off or the search was fast); under Gumbel search the improved policy
    /// pi' in units of 2^-20 ([`gumbel::TARGET_SCALE`]). pi = target / sum(target).
    pub target: Vec<u32>,
    /// Gumbel search: the improved policy pi' itself (the target's exact values).
    pub improved: Option<Vec<f64>>,
    /// A full search (always, unless playout cap randomisation drew a fast one).
    pub full: bool,
    /// Simulations run (N_sim, or n_fast for a fast search), the root's expansion included
    /// when `expansion_is_simulation` (then the visits sum to one less).
    pub simulations: u32,
    /// The move chosen by the temperature / `sample_moves` rules (PUCT), or the winner of
    /// sequential halving (Gumbel).
    pub action: Action,
    /// The root's mean backed-up value for the player to move, in [0, 1].
    pub value: f64,
}

impl SearchResult {
    /// pi: the target counts normalised.
    pub fn policy(&self) -> Vec<f64> {
        let total: u64 = self.target.iter().map(|&n| u64::from(n)).sum();
        self.target
            .iter()
            .map(|&n| {
                if total == 0 {
                    0.0
                } else {
                    f64::from(n) / total as f64
                }
            })
            .collect()
    }
}

#[derive(Copy, Clone, Debug)]
enum Kind {
    Decision(Player),
    Chance,
    /// The score of player 0.
    Terminal(f64),
}

#[derive(Copy, Clone, Debug)]
struct Node<S> {
    state: S,
    kind: Kind,
    /// Edges `first .. first + len` of the edge arena.
    first: u32,
    len: u32,
    /// sum_b N(s, b).
    visits: u32,
    /// 1 when the simulation that expanded this node counts in its N(s) for the exploration
    /// term (`count_expansion_visit`), else 0.
    expansion: u32,
    /// A decision node's value from its evaluation, for its mover (Gumbel's v_mix).
    raw: f64,
}

/// Where a stepped search stands ([`Search::start`], [`Search::resume`]): a decision leaf
/// waiting for its evaluation (its state; its legal actions are [`Search::pending_legal`]),
/// or the search's result.
#[derive(Clone, Debug, PartialEq)]
pub enum Step<S> {
    NeedsEval(S),
    Done(SearchResult),
}

/// The search in progress: its settings for this move and the leaf it waits on.
#[derive(Copy, Clone, Debug)]
struct Progress<S> {
    ply: u32,
    full: bool,
    sims: u32,
    forced: Option<ForcedPlayouts>,
    /// Descents still to finish (the one waiting included).
    left: u32,
    /// The decision leaf waiting for its evaluation: its state, mover, and the edge that
    /// leads to it (`None`: the root).
    pending: Option<(S, Player, Option<u32>)>,
}

/// A reusable PUCT searcher: owns the arenas, so keep one per worker and call
/// [`Search::run`] for every move (or step it: [`Search::start`], [`Search::resume`]).
#[derive(Debug)]
pub struct Search<G: Game> {
    config: SearchConfig,
    nodes: Vec<Node<G::State>>,
    edges: Vec<Edge>,
    /// (edge, node it leaves) of the current simulation.
    path: Vec<(u32, u32)>,
    actions: Vec<Action>,
    outcomes: Vec<ChanceOutcome>,
    priors: Vec<f64>,
    progress: Option<Progress<G::State>>,
    /// Gumbel search: the root's noise g(a) per root edge (zeros without noise), the
    /// sequential-halving schedule of the root's descents and the (m, n) it was made for,
    /// and a scratch vector for completed Q and pi'.
    gumbel: Vec<f64>,
    schedule: Vec<u32>,
    schedule_for: Option<(u32, u32)>,
    scratch: Vec<f64>,
    /// The last [`MAX_PAST`] decision states of the game before the root, oldest first.
    root_past: Vec<G::State>,
    /// The past of the leaf being evaluated ([`Search::pending_past`]).
    leaf_past: Vec<G::State>,
}

impl<G: Game> Search<G> {
    /// A searcher for `config`, validated; a simulation schedule must have been resolved for
    /// an iteration first ([`SearchConfig::at_iteration`]).
    pub fn new(config: SearchConfig) -> Result<Search<G>, SearchConfigError> {
        config.validate()?;
        if !config.simulations.is_fixed() {
            return Err(SearchConfigError(crate::error::SettingError::new(
                "simulations",
                config.simulations,
                "one count for a search (a run takes each iteration's count from the schedule)",
            )));
        }
        Ok(Search {
            config,
            nodes: Vec::new(),
            edges: Vec::new(),
            path: Vec::with_capacity(64),
            actions: Vec::with_capacity(64),
            outcomes: Vec::with_capacity(64),
            priors: Vec::with_capacity(64),
            progress: None,
            gumbel: Vec::new(),
            schedule: Vec::new(),
            schedule_for: None,
            scratch: Vec::new(),
            root_past: Vec::with_capacity(MAX_PAST),
            leaf_past: Vec::with_capacity(MAX_PAST),
        })
    }

    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// Nodes in the tree of the last search (decision, chance and terminal).
    #[cfg(test)]
    pub(crate) fn tree_size(&self) -> usize {
        self.nodes.len()
    }

    /// Appends the decision states of the last search's tree, root first, in creation order
    /// (Go-Exploit's search-state archives).
    pub(crate) fn tree_states(&self, out: &mut Vec<G::State>) {
        out.extend(
            self.nodes
                .iter()
                .filter(|n| matches!(n.kind, Kind::Decision(_)))
                .map(|n| n.state),
        );
    }

    /// Searches from the decision state `root`, `ply` plies into the game (for
    /// `sample_moves`), whose earlier decision states are `past` (oldest first; an evaluator
    /// with history reads their last ones, then the tree's path: [`Evaluator::past`]). Every random draw comes from `rng`, in this order: the playout-cap
    /// coin (if enabled), the root's evaluation, the root noise (one Gamma draw per legal
    /// action, if epsilon > 0 in a full search), the descents (chance outcomes, the
    /// evaluator's draws and, with `tie_break = random`, one draw per extra tied edge), then
    /// the move sample (if sampling) or, with `tie_break = random`, the tie among the most
    /// visited actions.
    ///
    /// It is [`Search::start`] and [`Search::resume`] with `eval` answering every leaf at
    /// once, so a stepped search whose leaves are answered by the same evaluator, with the
    /// same stream, gives the same result.
    pub fn run<E: Evaluator<G>>(
        &mut self,
        g: &G,
        root: &G::State,
        past: &[G::State],
        ply: u32,
        eval: &mut E,
        rng: &mut StreamRng,
    ) -> Result<SearchResult, SearchError> {
        let mut step = self.start(g, root, past, ply, rng)?;
        let depth = eval.past();
        let mut leaf_past = std::mem::take(&mut self.leaf_past);
        loop {
            match step {
                Step::Done(r) => {
                    self.leaf_past = leaf_past;
                    return Ok(r);
                }
                Step::NeedsEval(s) => {
                    self.priors.clear();
                    self.priors.resize(self.actions.len(), 0.0);
                    self.pending_past(depth, &mut leaf_past);
                    let v = eval.evaluate(g, &s, &leaf_past, &self.actions, &mut self.priors, rng);
                    step = self.answer(g, v, rng);
                }
            }
        }
    }

    /// Begins a search from the decision state `root` (see [`Search::run`] for the order of
    /// the draws): draws the playout-cap coin and returns the root as the first leaf to
    /// evaluate.
    pub fn start(
        &mut self,
        g: &G,
        root: &G::State,
        past: &[G::State],
        ply: u32,
        rng: &mut StreamRng,
    ) -> Result<Step<G::State>, SearchError> {
        let mover = match g.turn(root) {
            Turn::Player(p) => p,
            Turn::Chance => return Err(SearchError::NotADecision("a chance state")),
            Turn::Terminal(_) => return Err(SearchError::NotADecision("terminal")),
        };
        let cfg = self.config;
        self.nodes.clear();
        self.edges.clear();
        self.root_past.clear();
        self.root_past.extend_from_slice(last_past(past, MAX_PAST));
        // `new` refused a schedule: one count.
        let sims = cfg.simulations.first();
        let (full, sims) = match cfg.playout_cap {
            Some(pc) => {
                let full = rng.random::<f64>() < pc.p_full;
                (full, if full { sims } else { pc.n_fast })
            }
            None => (true, sims),
        };
        // Validation keeps sims >= 2 when the root's expansion is one of them.
        let left = if cfg.expansion_is_simulation {
            sims.saturating_sub(1)
        } else {
            sims
        };
        g.legal_actions(root, &mut self.actions);
        self.progress = Some(Progress {
            ply,
            full,
            sims,
            forced: if full { cfg.forced_playouts } else { None },
            left,
            pending: Some((*root, mover, None)),
        });
        Ok(Step::NeedsEval(*root))
    }

    /// The last `k` (at most [`MAX_PAST`]) earlier decision states of the leaf the search
    /// waits on into `out`, oldest first: the game's past before the root, then the decision
    /// states of the tree's path down to the leaf (chance states are not decision states).
    pub fn pending_past(&self, k: usize, out: &mut Vec<G::State>) {
        out.clear();
        if k == 0 {
            return;
        }
        let at_root = matches!(
            self.progress,
            Some(Progress {
                pending: Some((_, _, None)),
                ..
            })
        );
        if !at_root {
            // `path` holds the nodes the waiting descent left, root first.
            for &(_, n) in self.path.iter().rev() {
                if out.len() == k {
                    break;
                }
                let node = &self.nodes[n as usize];
                if matches!(node.kind, Kind::Decision(_)) {
                    out.push(node.state);
                }
            }
        }
        let rest = k - out.len();
        out.extend(self.root_past.iter().rev().take(rest));
        out.reverse();
    }

    /// The legal actions (ascending) of the leaf the search waits on: `priors` in
    /// [`Search::resume`] follow them.
    pub(crate) fn pending_legal(&self) -> &[Action] {
        &self.actions
    }

    /// Continues the search with the evaluation of the leaf it waits on: `value` in [0, 1]
    /// for its side to move, `priors` over [`Search::pending_legal`]. Returns the next leaf
    /// to evaluate or the result. Panics when no leaf waits (a caller's bug).
    pub fn resume(
        &mut self,
        g: &G,
        value: f64,
        priors: &[f64],
        rng: &mut StreamRng,
    ) -> Step<G::State> {
        self.priors.clear();
        self.priors.extend_from_slice(priors);
        self.answer(g, value, rng)
    }

    /// [`Search::resume`] with the priors already in `self.priors`.
    fn answer(&mut self, g: &G, value: f64, rng: &mut StreamRng) -> Step<G::State> {
        let mut pr = self.progress.expect("a search waits for an evaluation");
        let (state, mover, edge) = pr.pending.take().expect("a leaf waits");
        let (c, v0) = self.new_decision(state, mover, value);
        match edge {
            None => {
                if self.config.algorithm == Algorithm::Gumbel {
                    self.gumbel_root(pr.left, rng);
                } else if pr.full && self.config.dirichlet_epsilon > 0.0 {
                    self.add_root_noise(rng);
                }
            }
            Some(e) => {
                // The root is node 0, so a child's index is never 0.
                self.edges[e as usize].child = NonZeroU32::new(c);
                self.backup(v0);
                pr.left -= 1;
            }
        }
        while pr.left > 0 {
            match self.descend(g, pr.forced, rng) {
                Some(leaf) => {
                    pr.pending = Some(leaf);
                    self.progress = Some(pr);
                    return Step::NeedsEval(leaf.0);
                }
                None => pr.left -= 1,
            }
        }
        self.progress = None;
        Step::Done(self.finish(pr, rng))
    }

    /// The result once every descent is done.
    fn finish(&mut self, pr: Progress<G::State>, rng: &mut StreamRng) -> SearchResult {
        let cfg = self.config;
        let root_node = self.nodes[0];
        let edges =
            &self.edges[root_node.first as usize..(root_node.first + root_node.len) as usize];
        let actions: Vec<Action> = edges.iter().map(|e| e.label).collect();
        let priors: Vec<f64> = edges.iter().map(|e| e.p).collect();
        let visits: Vec<u32> = edges.iter().map(|e| e.n).collect();
        let (w, n) = edges
            .iter()
            .fold((0.0, 0u64), |(w, n), e| (w + e.w, n + u64::from(e.n)));
        let value = if n == 0 { 0.5 } else { w / n as f64 };
        if cfg.algorithm == Algorithm::Gumbel {
            let (i, pi) = self.gumbel_finish(rng);
            return SearchResult {
                action: actions[i],
                actions,
                priors,
                visits,
                target: gumbel::target_counts(&pi),
                improved: Some(pi),
                full: pr.full,
                simulations: pr.sims,
                value,
            };
        }
        let target = match pr.forced {
            Some(fp) if cfg.policy_target_pruning => prune(edges, cfg.c_puct, fp.k),
            _ => visits.clone(),
        };
        let sample = cfg.temperature > 0.0 && cfg.sample_moves.is_none_or(|k| pr.ply < k);
        let i = if sample {
            sample_by_temperature(&visits, cfg.temperature, rng)
        } else {
            most_visited_by(&visits, cfg.tie_break, rng)
        };
        SearchResult {
            action: actions[i],
            actions,
            priors,
            visits,
            target,
            improved: None,
            full: pr.full,
            simulations: pr.sims,
            value,
        }
    }

    /// Pushes a node; its expansion visit counts unless it is the root and the root's
    /// expansion is no simulation.
    fn push_node(&mut self, state: G::State, kind: Kind, first: u32, len: u32) -> u32 {
        let idx = self.nodes.len() as u32;
        // Every node's expansion is a simulation except the root's, which is one only under
        // `expansion_is_simulation`.
        let cfg = &self.config;
        let expansion =
            u32::from(cfg.count_expansion_visit && (idx != 0 || cfg.expansion_is_simulation));
        self.nodes.push(Node {
            state,
            kind,
            first,
            len,
            visits: 0,
            expansion,
            raw: 0.5,
        });
        idx
    }

    /// Adds the decision node of `state` (legal actions in `self.actions`, priors in
    /// `self.priors`) valued `v` for `mover`; returns its index and the score of player 0.
    fn new_decision(&mut self, state: G::State, mover: Player, v: f64) -> (u32, f64) {
        let first = self.edges.len() as u32;
        push_actions(&mut self.edges, &self.actions, self.priors.iter().copied());
        let len = self.actions.len() as u32;
        let idx = self.push_node(state, Kind::Decision(mover), first, len);
        self.nodes[idx as usize].raw = v;
        (idx, if mover == Player::P0 { v } else { 1.0 - v })
    }

    /// Adds the node of a terminal or chance state; returns its index and, for a terminal,
    /// the score of player 0 to back up.
    fn new_other(&mut self, g: &G, state: G::State) -> (u32, Option<f64>) {
        let first = self.edges.len() as u32;
        let (kind, len, v0) = match g.turn(&state) {
            Turn::Terminal(r) => {
                let v0 = r.score(Player::P0);
                (Kind::Terminal(v0), 0, Some(v0))
            }
            _ => {
                g.chance_outcomes(&state, &mut self.outcomes);
                push_outcomes(&mut self.edges, &self.outcomes);
                (Kind::Chance, self.outcomes.len() as u32, None)
            }
        };
        (self.push_node(state, kind, first, len), v0)
    }

    fn add_root_noise(&mut self, rng: &mut StreamRng) {
        let cfg = self.config;
        let Ok(gamma) = rand_distr::Gamma::new(cfg.dirichlet_alpha, 1.0) else {
            return; // unreachable: alpha > 0 is validated
        };
        let root = self.nodes[0];
        let range = root.first as usize..(root.first + root.len) as usize;
        self.priors.clear();
        let mut sum = 0.0;
        for _ in range.clone() {
            let x: f64 = gamma.sample(rng);
            sum += x;
            self.priors.push(x);
        }
        if !(sum > 0.0 && sum.is_finite()) {
            return;
        }
        let eps = cfg.dirichlet_epsilon;
        for (e, &x) in self.edges[range].iter_mut().zip(&self.priors) {
            e.p = (1.0 - eps) * e.p + eps * (x / sum);
        }
    }

    /// One descent from the root: down the tree by PUCT or Gumbel (chance by `chance`) to an
    /// unexpanded edge. A terminal or chance child is added at once (a chance node is
    /// descended through); a decision child is returned (state, mover, edge) to be evaluated
    /// and backed up by [`Search::answer`]. `None`: the descent ended at a terminal and its
    /// score is backed up.
    fn descend(
        &mut self,
        g: &G,
        forced: Option<ForcedPlayouts>,
        rng: &mut StreamRng,
    ) -> Option<(G::State, Player, Option<u32>)> {
        self.path.clear();
        let mut cur = 0u32;
        let v0 = loop {
            let node = &self.nodes[cur as usize];
            let e = match node.kind {
                Kind::Terminal(v0) => break v0,
                Kind::Decision(_) if self.config.algorithm == Algorithm::Gumbel => {
                    if cur == 0 {
                        self.gumbel_root_select(rng)
                    } else {
                        self.gumbel_select(cur, rng)
                    }
                }
                Kind::Decision(_) => {
                    let root_forced = if cur == 0 { forced } else { None };
                    self.select(cur, root_forced, rng)
                }
                Kind::Chance => match self.config.chance {
                    ChanceRule::Sample => self.sample_chance(cur, rng),
                    ChanceRule::Proportional => self.proportional_chance(cur, rng),
                },
            };
            self.path.push((e, cur));
            let edge = self.edges[e as usize];
            match edge.child {
                Some(c) => cur = c.get(),
                None => {
                    let parent = &self.nodes[cur as usize];
                    let chance = matches!(parent.kind, Kind::Chance);
                    let s = edge_state(g, &parent.state, chance, edge.label);
                    if let Turn::Player(p) = g.turn(&s) {
                        g.legal_actions(&s, &mut self.actions);
                        return Some((s, p, Some(e)));
                    }
                    let (c, v) = self.new_other(g, s);
                    // The root is node 0, so a child's index is never 0.
                    self.edges[e as usize].child = NonZeroU32::new(c);
                    match v {
                        Some(v0) => break v0,
                        None => cur = c,
                    }
                }
            }
        };
        self.backup(v0);
        None
    }

    /// Adds the score of player 0 `v0` along the current descent's path.
    fn backup(&mut self, v0: f64) {
        for &(e, n) in &self.path {
            let node = &mut self.nodes[n as usize];
            node.visits += 1;
            let chooser = match node.kind {
                Kind::Decision(p) => Some(p),
                _ => None,
            };
            self.edges[e as usize].record(chooser, v0);
        }
    }

    /// The PUCT choice at decision node `i` (exact ties by `tie_break`). The exploration
    /// term's parent count is sum_b N(s, b) plus the expansion visit when it counts; forced
    /// playouts compare with sum_b N(s, b) alone (KataGo's total child visits).
    #[inline]
    fn select(&self, i: u32, forced: Option<ForcedPlayouts>, rng: &mut StreamRng) -> u32 {
        let node = &self.nodes[i as usize];
        let total = f64::from(node.visits);
        let sqrt_total = f64::from(node.visits + node.expansion).sqrt();
        let c = self.config.c_puct;
        let init = self.config.init_q.value();
        let mut ties = TieKeeper::new(self.config.tie_break);
        let mut best = node.first;
        let mut best_tier = 0u8;
        let mut best_score = f64::NEG_INFINITY;
        for e in node.first..node.first + node.len {
            let edge = &self.edges[e as usize];
            let n = f64::from(edge.n);
            let (tier, score) = if edge.n == 0 {
                // The exploration term over 1 + 0 visits: dividing by 1.0 is exact, so it
                // is skipped.
                let u = c * edge.p * sqrt_total;
                match init {
                    Some(q) => (0, q + u),
                    None => (1, u),
                }
            } else {
                let u = c * edge.p * sqrt_total / (1.0 + n);
                if forced.is_some_and(|fp| n < (fp.k * edge.p * total).sqrt()) {
                    (2, u)
                } else {
                    (0, edge.q + u)
                }
            };
            let cmp = tier
                .cmp(&best_tier)
                .then(score.partial_cmp(&best_score).unwrap_or(Ordering::Less));
            if ties.offer(cmp, rng) {
                best = e;
                best_tier = tier;
                best_score = score;
            }
        }
        best
    }

    /// Gumbel search at the expanded root, before its `descents`: the noise g(a), a draw of
    /// Gumbel(0, 1) times [`SearchConfig::gumbel_noise_scale`], one draw per legal action in
    /// action order from the search's stream (none at scale 0: evaluation play unless
    /// `gumbel_eval_noise`, or `gumbel_scale = 0`), and the sequential-halving schedule for
    /// m = min(`gumbel_actions`, legal actions) and the descents
    /// ([`gumbel::considered_visits`]).
    fn gumbel_root(&mut self, descents: u32, rng: &mut StreamRng) {
        let cfg = self.config;
        let len = self.nodes[0].len;
        self.gumbel.clear();
        let scale = cfg.gumbel_noise_scale();
        if scale > 0.0 {
            // -ln(-ln u) with u uniform in (0, 1): rand_distr's Gumbel(0, 1). At scale 1 the
            // product is the draw itself (the bits of runs before `gumbel_scale`).
            let noise = rand_distr::Gumbel::new(0.0, 1.0).expect("Gumbel(0, 1) is valid");
            for _ in 0..len {
                self.gumbel.push(scale * noise.sample(rng));
            }
        } else {
            self.gumbel.resize(len as usize, 0.0);
        }
        let key = (cfg.gumbel_actions.min(len), descents);
        if self.schedule_for != Some(key) {
            self.schedule = gumbel::considered_visits(key.0, key.1);
            self.schedule_for = Some(key);
        }
    }

    /// The root's score of every edge, g(a) + logits(a) + sigma(completed Q(a)), into
    /// `self.scratch`.
    fn gumbel_root_scores(&mut self) {
        let cfg = self.config;
        let root = self.nodes[0];
        let edges = &self.edges[root.first as usize..(root.first + root.len) as usize];
        gumbel::completed_q(edges, root.raw, &mut self.scratch);
        let max_n = edges.iter().map(|e| e.n).max().unwrap_or(0);
        gumbel::sigma(
            &mut self.scratch,
            max_n,
            cfg.c_visit,
            cfg.c_scale,
            cfg.gumbel_q_scale,
        );
        for ((x, e), g) in self.scratch.iter_mut().zip(edges).zip(&self.gumbel) {
            *x += g + gumbel::logit(e.p);
        }
    }

    /// The best-scoring root edge among those with exactly `visits` visits (exact ties by
    /// `tie_break`).
    fn gumbel_best_with(&self, visits: u32, rng: &mut StreamRng) -> u32 {
        let root = self.nodes[0];
        let mut ties = TieKeeper::new(self.config.tie_break);
        let mut best = root.first;
        let mut best_score = f64::NEG_INFINITY;
        for (k, e) in (root.first..root.first + root.len).enumerate() {
            if self.edges[e as usize].n != visits {
                continue;
            }
            let score = self.scratch[k];
            let cmp = if ties.is_empty() {
                Ordering::Greater
            } else {
                score.partial_cmp(&best_score).unwrap_or(Ordering::Less)
            };
            if ties.offer(cmp, rng) {
                best = e;
                best_score = score;
            }
        }
        best
    }

    /// Sequential halving's choice for the next root descent (mctx's
    /// `gumbel_muzero_root_action_selection`): the schedule gives the visit count the
    /// descent must find, and among the edges with that count the highest g + logits +
    /// sigma(completed Q) is taken. The descents so far are the root's visits.
    fn gumbel_root_select(&mut self, rng: &mut StreamRng) -> u32 {
        let done = self.nodes[0].visits as usize;
        let want = self.schedule[done.min(self.schedule.len().saturating_sub(1))];
        self.gumbel_root_scores();
        self.gumbel_best_with(want, rng)
    }

    /// The move and pi' after the search: the winner of the halving is the most visited
    /// edge with the highest g + logits + sigma(completed Q) (mctx: `considered_visit =
    /// max N`); pi' = softmax(logits + sigma(completed Q)), no noise.
    fn gumbel_finish(&mut self, rng: &mut StreamRng) -> (usize, Vec<f64>) {
        let cfg = self.config;
        let root = self.nodes[0];
        let max_n = (root.first..root.first + root.len)
            .map(|e| self.edges[e as usize].n)
            .max()
            .unwrap_or(0);
        self.gumbel_root_scores();
        let best = self.gumbel_best_with(max_n, rng);
        let edges = &self.edges[root.first as usize..(root.first + root.len) as usize];
        let mut pi = Vec::with_capacity(edges.len());
        gumbel::node_policy(
            edges,
            root.raw,
            cfg.c_visit,
            cfg.c_scale,
            cfg.gumbel_q_scale,
            &mut pi,
        );
        ((best - root.first) as usize, pi)
    }

    /// Gumbel's deterministic choice below the root (the paper's eq. 14; mctx
    /// `gumbel_muzero_interior_action_selection`): argmax pi'(a) - N(a) / (1 + sum_b N(b)),
    /// exact ties by `tie_break`.
    fn gumbel_select(&mut self, i: u32, rng: &mut StreamRng) -> u32 {
        let cfg = self.config;
        let node = self.nodes[i as usize];
        let edges = &self.edges[node.first as usize..(node.first + node.len) as usize];
        gumbel::node_policy(
            edges,
            node.raw,
            cfg.c_visit,
            cfg.c_scale,
            cfg.gumbel_q_scale,
            &mut self.scratch,
        );
        let total = 1.0 + f64::from(node.visits);
        let mut ties = TieKeeper::new(cfg.tie_break);
        let mut best = node.first;
        let mut best_score = f64::NEG_INFINITY;
        for (k, e) in edges.iter().enumerate() {
            let score = self.scratch[k] - f64::from(e.n) / total;
            let cmp = score.partial_cmp(&best_score).unwrap_or(Ordering::Less);
            if ties.offer(cmp, rng) {
                best = node.first + k as u32;
                best_score = score;
            }
        }
        best
    }

    /// The outcome edge of chance node `i` with the largest P(c) / (N(c) + 1) (mctx's
    /// chance selection in `stochastic_muzero_policy`), exact ties by `tie_break`. N(c) are
    /// the descents through the edge, so after n descents each outcome has had about
    /// n * P(c) of them, with no draw from the stream unless two outcomes tie.
    fn proportional_chance(&self, i: u32, rng: &mut StreamRng) -> u32 {
        let node = &self.nodes[i as usize];
        let mut ties = TieKeeper::new(self.config.tie_break);
        let mut best = node.first;
        let mut best_score = f64::NEG_INFINITY;
        for e in node.first..node.first + node.len {
            let edge = &self.edges[e as usize];
            let score = edge.p / (1.0 + f64::from(edge.n));
            let cmp = score.partial_cmp(&best_score).unwrap_or(Ordering::Less);
            if ties.offer(cmp, rng) {
                best = e;
                best_score = score;
            }
        }
        best
    }

    /// Samples an outcome edge of chance node `i` by probability (like
    /// [`crate::rng::sample_outcome`]).
    #[inline]
    fn sample_chance(&self, i: u32, rng: &mut StreamRng) -> u32 {
        let node = &self.nodes[i as usize];
        sample_outcome_edge(&self.edges, node.first, node.len, rng)
    }
}

/// Policy target pruning (KataGo): from each root child other than the most visited, subtract
/// up to n_forced(c) = sqrt(k * P(c) * sum N) visits as long as its PUCT value stays below the
/// best child's; a child left with one visit is pruned to 0.
fn prune(edges: &[Edge], c_puct: f64, k: f64) -> Vec<u32> {
    let visits: Vec<u32> = edges.iter().map(|e| e.n).collect();
    let best = most_visited(&visits);
    let total: f64 = visits.iter().map(|&n| f64::from(n)).sum();
    let sqrt_total = total.sqrt();
    let puct =
        |e: &Edge, n: u32| e.w / f64::from(e.n) + c_puct * e.p * sqrt_total / (1.0 + f64::from(n));
    let best_edge = &edges[best];
    if best_edge.n == 0 {
        return visits;
    }
    let best_puct = puct(best_edge, best_edge.n);
    let mut target = visits.clone();
    for (i, e) in edges.iter().enumerate() {
        if i == best || e.n == 0 {
            continue;
        }
        let forced = (k * e.p * total).sqrt();
        let mut n = e.n;
        while n > 0 && f64::from(e.n - n + 1) <= forced && puct(e, n - 1) < best_puct {
            n -= 1;
        }
        target[i] = if n == 1 { 0 } else { n };
    }
    target
}

/// The index of the largest count, exact ties broken by `mode` (draws from `rng` only for
/// ties under [`TieBreak::Random`]).
pub(crate) fn most_visited_by(visits: &[u32], mode: TieBreak, rng: &mut StreamRng) -> usize {
    let mut ties = TieKeeper::new(mode);
    let mut best = 0;
    for (i, &n) in visits.iter().enumerate() {
        if ties.offer(n.cmp(&visits[best]), rng) && i != best {
            best = i;
        }
    }
    best
}

/// The index of the largest count (ties: lowest index).
pub(crate) fn most_visited(visits: &[u32]) -> usize {
    let mut best = 0;
    for (i, &n) in visits.iter().enumerate() {
        if n > visits[best] {
            best = i;
        }
    }
    best
}

/// Samples an index with probability proportional to N^(1/tau) (computed as (N / max)^(1/tau)
/// so large exponents do not overflow).
pub(crate) fn sample_by_temperature(visits: &[u32], tau: f64, rng: &mut StreamRng) -> usize {
    let max = f64::from(visits[most_visited(visits)]);
    if max == 0.0 {
        return 0;
    }
    let inv = 1.0 / tau;
    let weight = |n: u32| (f64::from(n) / max).powf(inv);
    let total: f64 = visits.iter().map(|&n| weight(n)).sum();
    let u = rng.random::<f64>() * total;
    let mut acc = 0.0;
    let mut last = 0;
    for (i, &n) in visits.iter().enumerate() {
        if n == 0 {
            continue;
        }
        acc += weight(n);
        last = i;
        if u < acc {
            return i;
        }
    }
    last
}

#[cfg(test)]
mod properties;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::GameResult::{Draw, Win};
    use crate::rng::stream;
    use crate::search::toy::{TNode, TreeGame};
    use crate::search::{InitQ, PlayoutCap, Rollout, TieBreak, Uniform};
    use Player::{P0, P1};

    /// Fixed priors by legal index, value 0.5.
    struct Fixed(Vec<f64>);

    impl<G: Game> Evaluator<G> for Fixed {
        fn evaluate(
            &mut self,
            _: &G,
            _: &G::State,
            _: &[G::State],
            legal: &[Action],
            priors: &mut [f64],
            _: &mut StreamRng,
        ) -> f64 {
            if legal.len() == self.0.len() {
                priors.copy_from_slice(&self.0);
            } else {
                priors.fill(1.0 / legal.len() as f64);
            }
            0.5
        }
    }

    /// Evaluation play with the legacy conventions (the hand computations below that predate
    /// the conventions).
    fn quiet(simulations: u32, init_q: InitQ) -> SearchConfig {
        SearchConfig {
            init_q,
            ..SearchConfig::evaluation(simulations)
        }
        .with_legacy_conventions()
    }

    /// Evaluation play with the paper's conventions (the defaults).
    fn paper(simulations: u32, init_q: InitQ) -> SearchConfig {
        SearchConfig {
            init_q,
            ..SearchConfig::evaluation(simulations)
        }
    }

    /// `expansion_is_simulation` alone: [win, loss] with uniform priors, init_q first, 3
    /// simulations. Legacy: T = 0 ties at u = 0 (lowest: the win), the loss is untried next,
    /// then the win (1 + 0.5 sqrt(2) / 2 against 0.5 sqrt(2) / 2): [2, 1]. With the root's
    /// expansion as the first simulation only two descents remain: [1, 1], and the result
    /// still reports 3 simulations.
    #[test]
    fn expansion_counts_as_a_simulation_by_hand() {
        let g = TreeGame::pick(&[Win(P0), Win(P1)]);
        assert_eq!(visits(&g, quiet(3, InitQ::First), &mut Uniform), [2, 1]);
        let cfg = SearchConfig {
            expansion_is_simulation: true,
            ..quiet(3, InitQ::First)
        };
        let mut search = Search::new(cfg).unwrap();
        let r = search
            .run(&g, &0, &[], 0, &mut Uniform, &mut stream(1, "test"))
            .unwrap();
        assert_eq!((r.visits, r.simulations), (vec![1, 1], 3));
        // One simulation is then too few: it would only expand the root.
        let e = Search::<TreeGame>::new(SearchConfig {
            simulations: 1.into(),
            ..cfg
        })
        .unwrap_err();
        assert_eq!(e.0.key, "simulations");
        assert!(e.0.allowed.contains(">= 2"), "{e}");
    }

    /// `count_expansion_visit` below the root: P0's only action leads to P1's node with
    /// [b0: P0 wins, b1: P1 wins] and priors [0.2, 0.8]; init_q loss, 2 simulations (the first
    /// expands P1's node, valued 0.5). Legacy: at the second visit sqrt(N) = 0, both edges
    /// score 0, the lowest wins: b0, root value (0.5 + 1) / 2 = 0.75. Counting the expansion:
    /// sqrt(1) = 1, b1 scores 0.8 against 0.2: root value (0.5 + 0) / 2 = 0.25.
    #[test]
    fn expansion_visit_lets_the_prior_decide_below_the_root() {
        let g = TreeGame {
            nodes: vec![
                TNode::Decision(P0, vec![1]),
                TNode::Decision(P1, vec![2, 3]),
                TNode::Terminal(Win(P0)),
                TNode::Terminal(Win(P1)),
            ],
        };
        let value = |cfg: SearchConfig| {
            let mut search = Search::new(cfg).unwrap();
            let mut eval = Fixed(vec![0.2, 0.8]);
            search
                .run(&g, &0, &[], 0, &mut eval, &mut stream(1, "below"))
                .unwrap()
                .value
        };
        assert_eq!(value(quiet(2, InitQ::Loss)), 0.75);
        let counted = SearchConfig {
            count_expansion_visit: true,
            ..quiet(2, InitQ::Loss)
        };
        assert_eq!(value(counted), 0.25);
        // At the root the expansion visit counts only when the expansion is a simulation:
        // [win, loss] with priors [0.3, 0.7], one descent. Not a simulation: T = 0, a tie,
        // the lowest (the win). A simulation: sqrt(1), the prior decides (the loss).
        let g = TreeGame::pick(&[Win(P0), Win(P1)]);
        let mut eval = Fixed(vec![0.3, 0.7]);
        assert_eq!(
            visits(
                &g,
                SearchConfig {
                    simulations: 1.into(),
                    ..counted
                },
                &mut eval
            ),
            [1, 0]
        );
        let both = SearchConfig {
            expansion_is_simulation: true,
            ..counted
        };
        assert_eq!(visits(&g, both, &mut eval), [0, 1]);
        assert_eq!(visits(&g, paper(2, InitQ::Loss), &mut eval), [0, 1]);
    }

    /// The paper's conventions on [win, loss, loss, loss] with priors [0.1, 0.2, 0.3, 0.4],
    /// init_q loss, c_puct 1, 4 simulations (3 descents), by hand (T' = 1 + visits so far):
    /// T' = 1: scores 0.1, 0.2, 0.3, 0.4: the loss a3 (its Q becomes 0).
    /// T' = 2 (sqrt 1.414): 0.141, 0.283, 0.424, a3 0.4 * 1.414 / 2 = 0.283: a2.
    /// T' = 3 (sqrt 1.732): 0.173, 0.346, a2 0.260, a3 0.346: a1 and a3 tie exactly
    /// (0.4 x / 2 = 0.2 x in floating point), so `tie_break` decides: `lowest` gives
    /// [0, 1, 1, 1], `random` that or [0, 0, 1, 2], each about half the time.
    #[test]
    fn paper_conventions_by_hand() {
        let g = TreeGame::pick(&[Win(P0), Win(P1), Win(P1), Win(P1)]);
        let priors = vec![0.1, 0.2, 0.3, 0.4];
        let lowest = SearchConfig {
            tie_break: TieBreak::Lowest,
            ..paper(4, InitQ::Loss)
        };
        // Three descents: a3, a2, then the tie goes to a1.
        assert_eq!(visits(&g, lowest, &mut Fixed(priors.clone())), [0, 1, 1, 1]);
        // With `random`, the third descent is a1 or a3, each about half the time.
        let mut a1 = 0;
        for i in 0..200 {
            let mut search = Search::new(paper(4, InitQ::Loss)).unwrap();
            let r = search
                .run(
                    &g,
                    &0,
                    &[],
                    0,
                    &mut Fixed(priors.clone()),
                    &mut stream(i, "tie"),
                )
                .unwrap();
            match r.visits.as_slice() {
                [0, 1, 1, 1] => a1 += 1,
                [0, 0, 1, 2] => {}
                v => panic!("{v:?}"),
            }
        }
        assert!((70..130).contains(&a1), "a1 took the tie {a1} of 200 times");
    }

    /// Random ties do not favour the first action: four equal priors at a root with
    /// init_q loss (every first descent is a four-way tie at score 0.25): over 400 streams
    /// each action is the first visited about a quarter of the time; with `lowest`, always a0.
    /// The same stream gives the same choice.
    #[test]
    fn random_ties_are_uniform_and_follow_the_stream() {
        let g = TreeGame::pick(&[Win(P1), Win(P1), Win(P1), Win(P1)]);
        let mut counts = [0u32; 4];
        for i in 0..400 {
            let mut search = Search::new(paper(2, InitQ::Loss)).unwrap();
            let r = search
                .run(&g, &0, &[], 0, &mut Uniform, &mut stream(i, "ties"))
                .unwrap();
            let again = Search::new(paper(2, InitQ::Loss))
                .unwrap()
                .run(&g, &0, &[], 0, &mut Uniform, &mut stream(i, "ties"))
                .unwrap();
            assert_eq!(r, again);
            counts[most_visited(&r.visits)] += 1;
        }
        assert!(counts.iter().all(|c| (70..130).contains(c)), "{counts:?}");
        let lowest = SearchConfig {
            tie_break: TieBreak::Lowest,
            ..paper(2, InitQ::Loss)
        };
        for i in 0..20 {
            let r = Search::new(lowest)
                .unwrap()
                .run(&g, &0, &[], 0, &mut Uniform, &mut stream(i, "ties"))
                .unwrap();
            assert_eq!(r.visits, [1, 0, 0, 0]);
        }
        // The final choice among equally visited actions is random too: [2, 2] at tau 0.
        let mut picks = [0u32; 2];
        for i in 0..200 {
            let mut rng = stream(i, "final");
            picks[most_visited_by(&[2, 2, 1], TieBreak::Random, &mut rng)] += 1;
            assert_eq!(most_visited_by(&[2, 2, 1], TieBreak::Lowest, &mut rng), 0);
        }
        assert!((70..130).contains(&picks[0]), "{picks:?}");
    }

    fn visits<E: Evaluator<TreeGame>>(g: &TreeGame, cfg: SearchConfig, eval: &mut E) -> Vec<u32> {
        let mut search = Search::new(cfg).unwrap();
        let mut rng = stream(1, "test");
        search.run(g, &0, &[], 0, eval, &mut rng).unwrap().visits
    }

    /// Player 0 picks [win, loss, loss, loss] with uniform priors 1/4, c_puct 1, 7
    /// simulations. By hand (T = visits so far, u = 0.25 sqrt(T) / (1 + N)):
    /// - loss (Q0 = 0): the win is found first and an untried action needs
    ///   0.25 sqrt(T) > 1 + 0.25 sqrt(T) / (1 + T), first true at T = 18: [7, 0, 0, 0].
    /// - draw (Q0 = 0.5): 0.5 + 0.25 sqrt(T) > 1 + 0.25 sqrt(T) / (1 + T) first at T = 6,
    ///   the 7th simulation: [6, 1, 0, 0].
    /// - win and first: every action once (T = 1..3: the untried ones score 1 + 0.25 sqrt(T)
    ///   above the win's 1 + 0.25 sqrt(T) / (1 + N)), then the win: [4, 1, 1, 1].
    #[test]
    fn init_q_changes_visits_as_computed_by_hand() {
        let g = TreeGame::pick(&[Win(P0), Win(P1), Win(P1), Win(P1)]);
        let expect = [
            (InitQ::Loss, [7, 0, 0, 0]),
            (InitQ::Draw, [6, 1, 0, 0]),
            (InitQ::Win, [4, 1, 1, 1]),
            (InitQ::First, [4, 1, 1, 1]),
        ];
        for (init, want) in expect {
            assert_eq!(visits(&g, quiet(7, init), &mut Uniform), want, "{init:?}");
        }
        // Loss: the first untried action is taken at T = 18, the 19th simulation.
        assert_eq!(
            visits(&g, quiet(18, InitQ::Loss), &mut Uniform),
            [18, 0, 0, 0]
        );
        assert_eq!(
            visits(&g, quiet(19, InitQ::Loss), &mut Uniform),
            [18, 1, 0, 0]
        );
    }

    /// `win` and `first` differ when priors differ: [win, loss] with priors [0.9, 0.1].
    /// Second simulation (T = 1): under `win` the visited win scores 1 + 0.9 / 2 = 1.45 and the
    /// untried loss 1 + 0.1 = 1.1, so the win is repeated; under `first` the untried action
    /// goes first whatever the scores.
    #[test]
    fn first_tries_untried_actions_before_any_repeat() {
        let g = TreeGame::pick(&[Win(P0), Win(P1)]);
        let mut eval = Fixed(vec![0.9, 0.1]);
        assert_eq!(visits(&g, quiet(2, InitQ::Win), &mut eval), [2, 0]);
        assert_eq!(visits(&g, quiet(2, InitQ::First), &mut eval), [1, 1]);
        // Among several untried actions under `first`, the larger exploration term decides.
        let g = TreeGame::pick(&[Win(P0), Win(P1), Win(P1)]);
        let mut eval = Fixed(vec![0.2, 0.3, 0.5]);
        assert_eq!(visits(&g, quiet(2, InitQ::First), &mut eval), [1, 0, 1]);
    }

    /// [loss, win] with uniform priors, init_q win, forced playouts k = 2, 10 simulations.
    /// By hand: simulations 1-2 try both; from then on the loss (N = n0) is forced while
    /// n0 < sqrt(2 * 0.5 * T) = sqrt(T): at T = 2 (n0 = 1), T = 5 (n0 = 2), T = 10 is the
    /// 11th. So [3, 7] with forced playouts, [1, 9] without. Pruning: best PUCT
    /// 1 + 0.5 sqrt(10) / 8 = 1.198; the loss may lose up to sqrt(10) = 3.16 visits while
    /// 0.5 sqrt(10) / (1 + n) stays below that: n = 2 (0.53), n = 1 (0.79), not n = 0 (1.58);
    /// one visit left is pruned to 0: target [0, 7].
    #[test]
    fn forced_playouts_and_pruning_as_computed_by_hand() {
        let g = TreeGame::pick(&[Win(P1), Win(P0)]);
        let plain = quiet(10, InitQ::Win);
        assert_eq!(visits(&g, plain, &mut Uniform), [1, 9]);
        let forced = SearchConfig {
            forced_playouts: Some(ForcedPlayouts { k: 2.0 }),
            ..plain
        };
        assert_eq!(visits(&g, forced, &mut Uniform), [3, 7]);
        let pruned = SearchConfig {
            policy_target_pruning: true,
            ..forced
        };
        let mut search = Search::new(pruned).unwrap();
        let r = search
            .run(&g, &0, &[], 0, &mut Uniform, &mut stream(1, "test"))
            .unwrap();
        assert_eq!(r.visits, [3, 7]);
        assert_eq!(r.target, [0, 7]);
        assert_eq!(r.policy(), [0.0, 1.0]);
        // The second forced visit is at T = 5, the 6th simulation: [3, 3] after six.
        let six = SearchConfig {
            simulations: 6.into(),
            ..pruned
        };
        let mut search = Search::new(six).unwrap();
        let r = search
            .run(&g, &0, &[], 0, &mut Uniform, &mut stream(1, "test"))
            .unwrap();
        assert_eq!(r.visits, [3, 3]);
    }

    /// Playout cap randomisation: p_full 0 always searches fast (n_fast simulations, no root
    /// noise, not a training target); p_full 1 always full, with noise.
    #[test]
    fn playout_cap_switches_between_fast_and_full() {
        let g = TreeGame::pick(&[Win(P0), Draw, Win(P1)]);
        let base = SearchConfig {
            simulations: 50.into(),
            ..SearchConfig::legacy_defaults()
        };
        for (p_full, full) in [(0.0, false), (1.0, true)] {
            let cfg = SearchConfig {
                playout_cap: Some(PlayoutCap { p_full, n_fast: 5 }),
                ..base
            };
            let mut search = Search::new(cfg).unwrap();
            let r = search
                .run(&g, &0, &[], 0, &mut Uniform, &mut stream(3, "cap"))
                .unwrap();
            assert_eq!(r.full, full);
            assert_eq!(r.simulations, if full { 50 } else { 5 });
            assert_eq!(r.visits.iter().sum::<u32>(), r.simulations);
            let uniform = r.priors.iter().all(|&p| (p - 1.0 / 3.0).abs() < 1e-15);
            assert_eq!(
                uniform, !full,
                "noise only in full searches: {:?}",
                r.priors
            );
        }
        // With p_full 0.25 about a quarter of the searches are full.
        let cfg = SearchConfig {
            playout_cap: Some(PlayoutCap {
                p_full: 0.25,
                n_fast: 5,
            }),
            ..base
        };
        let mut search = Search::new(cfg).unwrap();
        let mut rng = stream(4, "cap");
        let full = (0..400)
            .filter(|_| {
                search
                    .run(&g, &0, &[], 0, &mut Uniform, &mut rng)
                    .unwrap()
                    .full
            })
            .count();
        assert!((70..130).contains(&full), "{full} of 400 full");
    }

    /// Root noise is Gamma(alpha, 1) per legal action, normalised, drawn first from the
    /// stream: recompute it by hand from the same stream.
    #[test]
    fn root_noise_is_normalised_gamma_from_the_stream() {
        let g = TreeGame::pick(&[Win(P0), Draw, Win(P1)]);
        let cfg = SearchConfig {
            simulations: 1.into(),
            dirichlet_alpha: 0.3,
            dirichlet_epsilon: 0.25,
            ..SearchConfig::legacy_defaults()
        };
        let mut search = Search::new(cfg).unwrap();
        let r = search
            .run(&g, &0, &[], 0, &mut Uniform, &mut stream(9, "noise"))
            .unwrap();
        let mut rng = stream(9, "noise");
        let gamma = rand_distr::Gamma::new(0.3, 1.0).unwrap();
        let eta: Vec<f64> = (0..3).map(|_| gamma.sample(&mut rng)).collect();
        let sum: f64 = eta.iter().sum();
        for (p, e) in r.priors.iter().zip(&eta) {
            assert_eq!(*p, 0.75 / 3.0 + 0.25 * e / sum);
        }
        assert!((r.priors.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    /// Values flip when the chooser changes and not across chance: player 1 refutes a0, so
    /// player 0 should prefer the draw a1; and after a chance node the same player moves
    /// again and keeps its own point of view.
    /// 0: P0 {a0 -> chance 1, a1 -> draw}; chance 1: 1/2 -> P0 node 3 {c0 loss, c1 win},
    /// 1/2 -> win. a0 is a lottery worth 1 for P0 (P0 moves again after the chance node and
    /// wins), a1 a draw.
    fn lottery_below_the_root() -> TreeGame {
        TreeGame {
            nodes: vec![
                TNode::Decision(P0, vec![1, 2]),
                TNode::Chance(vec![(3, 0.5), (4, 0.5)]),
                TNode::Terminal(Draw),
                TNode::Decision(P0, vec![5, 4]),
                TNode::Terminal(Win(P0)),
                TNode::Terminal(Win(P1)),
            ],
        }
    }

    #[test]
    fn backup_flips_with_the_chooser_only() {
        // 0: P0 {a0 -> 1, a1 -> 4}; 1: P1 {b0 -> 2 (P0 wins), b1 -> 3 (P1 wins)}; 4: draw.
        let g = TreeGame {
            nodes: vec![
                TNode::Decision(P0, vec![1, 4]),
                TNode::Decision(P1, vec![2, 3]),
                TNode::Terminal(Win(P0)),
                TNode::Terminal(Win(P1)),
                TNode::Terminal(Draw),
            ],
        };
        let mut search = Search::new(quiet(400, InitQ::Draw)).unwrap();
        let r = search
            .run(&g, &0, &[], 0, &mut Uniform, &mut stream(1, "flip"))
            .unwrap();
        assert_eq!(r.action, 1, "{r:?}");
        assert!(r.visits[1] > 300, "{r:?}");
        let g = lottery_below_the_root();
        let mut search = Search::new(quiet(400, InitQ::Draw)).unwrap();
        let r = search
            .run(&g, &0, &[], 0, &mut Uniform, &mut stream(1, "chance"))
            .unwrap();
        assert_eq!(r.action, 0, "{r:?}");
        assert!(r.value > 0.9, "{r:?}");
    }

    /// Chance outcomes are sampled by probability: a0 leads to a 3/4 win, 1/4 loss lottery;
    /// a1 is the only other action, a certain loss. The root value converges to 0.75.
    #[test]
    fn chance_nodes_sample_by_probability() {
        let g = TreeGame {
            nodes: vec![
                TNode::Decision(P0, vec![1, 3]),
                TNode::Chance(vec![(2, 0.75), (3, 0.25)]),
                TNode::Terminal(Win(P0)),
                TNode::Terminal(Win(P1)),
            ],
        };
        let mut search = Search::new(quiet(4000, InitQ::Loss)).unwrap();
        let r = search
            .run(
                &g,
                &0,
                &[],
                0,
                &mut Rollout::new(1),
                &mut stream(2, "lottery"),
            )
            .unwrap();
        assert!((r.value - 0.75).abs() < 0.03, "{r:?}");
        assert_eq!(r.action, 0);
        // The tree holds root, chance node, two outcomes and a1's terminal: five nodes.
        assert_eq!(search.tree_size(), 5);
    }

    #[test]
    fn temperature_and_sample_moves() {
        let mut rng = stream(5, "tau");
        let visits = [1, 9];
        let count = |tau: f64, rng: &mut StreamRng| {
            (0..2000)
                .filter(|_| sample_by_temperature(&visits, tau, rng) == 0)
                .count()
        };
        // tau 1: P(a0) = 0.1; tau 16: (1/9)^(1/16) / (1 + that) = 0.466; tau 1/16: ~0.
        let c1 = count(1.0, &mut rng);
        assert!((140..260).contains(&c1), "{c1}");
        let c16 = count(16.0, &mut rng);
        assert!((850..1010).contains(&c16), "{c16}");
        assert_eq!(count(1.0 / 16.0, &mut rng), 0);
        assert_eq!(most_visited(&[3, 5, 5, 1]), 1);
        // sample_moves = 2: plies 0 and 1 sample, ply 2 takes the most visited.
        let g = TreeGame::pick(&[Win(P0), Draw, Win(P1)]);
        let cfg = SearchConfig {
            sample_moves: Some(2),
            simulations: 30.into(),
            dirichlet_epsilon: 0.0,
            temperature: 16.0,
            ..SearchConfig::default()
        };
        let mut search = Search::new(cfg).unwrap();
        let mut rng = stream(6, "moves");
        let mut chosen = [[0; 3]; 3];
        for ply in 0..3u32 {
            for _ in 0..200 {
                let r = search
                    .run(&g, &0, &[], ply, &mut Uniform, &mut rng)
                    .unwrap();
                chosen[ply as usize][r.action as usize] += 1;
            }
        }
        assert!(chosen[0][1] > 0 && chosen[1][1] > 0, "{chosen:?}");
        assert_eq!(chosen[2], [200, 0, 0]);
    }

    /// Gumbel search in self-play (noise on), m = 16.
    fn gumbel(simulations: u32) -> SearchConfig {
        SearchConfig {
            algorithm: crate::search::Algorithm::Gumbel,
            simulations: simulations.into(),
            ..SearchConfig::default()
        }
    }

    /// On solved tic-tac-toe positions (4..6 random plies in), Gumbel search with 300
    /// simulations and rollout values plays an optimal move: the halving's winner keeps the
    /// position's exact value, with and without root noise.
    #[test]
    fn gumbel_winner_is_optimal_on_solved_positions() {
        use crate::search::toy::{TicTacToe, ttt_value};
        let g = TicTacToe;
        let mut rng = stream(4, "positions");
        let mut acts = Vec::new();
        let mut checked = 0;
        while checked < 24 {
            let mut s = g.initial_state();
            let plies = 4 + crate::rng::uniform_index(&mut rng, 3);
            for _ in 0..plies {
                g.legal_actions(&s, &mut acts);
                if acts.is_empty() {
                    break;
                }
                s = g.apply(&s, acts[crate::rng::uniform_index(&mut rng, acts.len())]);
            }
            let Turn::Player(p) = g.turn(&s) else {
                continue;
            };
            let for_mover = |v: f64| if p == P0 { v } else { 1.0 - v };
            let exact = for_mover(ttt_value(&g, &s));
            let cells = g.notation(&s);
            let eval_play = SearchConfig {
                dirichlet_epsilon: 0.0,
                ..gumbel(300)
            };
            for cfg in [gumbel(300), eval_play] {
                let mut search = Search::new(cfg).unwrap();
                let r = search
                    .run(&g, &s, &[], 0, &mut Rollout::new(2), &mut stream(1, &cells))
                    .unwrap();
                let after = for_mover(ttt_value(&g, &g.apply(&s, r.action)));
                assert_eq!(after, exact, "{cells}: {r:?}");
            }
            checked += 1;
        }
        // A chance node below the root.
        let g = lottery_below_the_root();
        for i in 0..10 {
            let r = Search::new(gumbel(40))
                .unwrap()
                .run(&g, &0, &[], 0, &mut Uniform, &mut stream(i, "chance"))
                .unwrap();
            assert_eq!(r.action, 0, "{r:?}");
        }
    }

    proptest::proptest! {
        /// Gumbel search spends exactly `simulations` for every m and number of legal
        /// actions (the root's visits sum to the descents), visits only m' = min(m, legal)
        /// root actions, and its target is pi' (a distribution) in units of 2^-20.
        #[test]
        fn gumbel_spends_exactly_the_simulations(
            legal in 1usize..10,
            m in 1u32..12,
            sims in 2u32..70,
            expansion in proptest::bool::ANY,
            seed in 0u64..1000,
        ) {
            let results = [Win(P0), Draw, Win(P1)];
            let picks: Vec<_> = (0..legal).map(|i| results[(i * 7 + seed as usize) % 3]).collect();
            let g = TreeGame::pick(&picks);
            let cfg = SearchConfig {
                gumbel_actions: m,
                expansion_is_simulation: expansion,
                ..gumbel(sims)
            };
            let r = Search::new(cfg)
                .unwrap()
                .run(&g, &0, &[], 0, &mut Rollout::new(1), &mut stream(seed, "sims"))
                .unwrap();
            let descents = if expansion { sims - 1 } else { sims };
            proptest::prop_assert_eq!(r.simulations, sims);
            proptest::prop_assert_eq!(r.visits.iter().sum::<u32>(), descents);
            let considered = (m as usize).min(legal);
            let visited = r.visits.iter().filter(|&&n| n > 0).count();
            proptest::prop_assert_eq!(visited, considered.min(descents as usize));
            let pi = r.improved.clone().unwrap();
            proptest::prop_assert!((pi.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            let total: u32 = r.target.iter().sum();
            proptest::prop_assert!(total.abs_diff(1 << 20) <= legal as u32, "{}", total);
            proptest::prop_assert!(r.visits[r.actions.iter().position(|&a| a == r.action).unwrap()]
                == *r.visits.iter().max().unwrap());
        }
    }

    /// Evaluation play draws no Gumbel noise: the same search from different streams gives
    /// the same result on a game without chance and ties; with `gumbel_eval_noise` the noise
    /// changes which of four equal actions is tried (m = 2 of 4 uniform priors).
    #[test]
    fn gumbel_evaluation_play_has_no_noise_unless_asked() {
        let g = TreeGame::pick(&[Draw, Draw, Draw, Draw]);
        let quiet = SearchConfig {
            dirichlet_epsilon: 0.0,
            gumbel_actions: 2,
            tie_break: TieBreak::Lowest,
            ..gumbel(5)
        };
        let run = |cfg: SearchConfig, i: u64| {
            Search::new(cfg)
                .unwrap()
                .run(&g, &0, &[], 0, &mut Uniform, &mut stream(i, "eval"))
                .unwrap()
                .visits
        };
        for i in 0..5 {
            assert_eq!(run(quiet, i), [2, 2, 0, 0]);
        }
        let noisy = SearchConfig {
            gumbel_eval_noise: true,
            ..quiet
        };
        let seen: std::collections::BTreeSet<Vec<u32>> = (0..20).map(|i| run(noisy, i)).collect();
        assert!(seen.len() > 2, "{seen:?}");
    }

    #[test]
    fn search_is_a_pure_function_of_its_stream() {
        let g = TreeGame {
            nodes: vec![
                TNode::Decision(P0, vec![1, 3]),
                TNode::Chance(vec![(2, 0.5), (4, 0.5)]),
                TNode::Terminal(Win(P0)),
                TNode::Terminal(Win(P1)),
                TNode::Decision(P1, vec![2, 3]),
            ],
        };
        let run = || {
            let mut search = Search::new(SearchConfig::default()).unwrap();
            search
                .run(&g, &0, &[], 0, &mut Rollout::new(2), &mut stream(8, "pure"))
                .unwrap()
        };
        assert_eq!(run(), run());
    }

    /// The past an evaluator is handed: at the root the game's (its last ones), below it the
    /// game's then the tree's path down to the leaf, each state one move before the next.
    #[test]
    fn leaves_see_the_games_past_then_the_path() {
        use crate::games::ConnectFour;
        type S = <ConnectFour as Game>::State;
        struct Chain {
            game: Vec<S>,
            root: S,
            leaves: usize,
        }
        impl Evaluator<ConnectFour> for Chain {
            fn past(&self) -> usize {
                4
            }
            fn evaluate(
                &mut self,
                g: &ConnectFour,
                s: &S,
                past: &[S],
                _: &[Action],
                priors: &mut [f64],
                _: &mut StreamRng,
            ) -> f64 {
                super::super::evaluator::uniform_priors(priors);
                if *s == self.root {
                    assert_eq!(past, &self.game[self.game.len() - 4..]);
                    return 0.5;
                }
                self.leaves += 1;
                assert_eq!(past.len(), 4);
                let mut chain = past.to_vec();
                chain.push(*s);
                let mut legal = Vec::new();
                for w in chain.windows(2) {
                    g.legal_actions(&w[0], &mut legal);
                    assert!(legal.iter().any(|&a| g.apply(&w[0], a) == w[1]));
                }
                // The root is in every leaf's past within four moves of it.
                let below = chain.iter().position(|t| *t == self.root);
                assert!(below.is_some() || self.game.iter().all(|t| !past.contains(t)));
                0.5
            }
        }
        let g = ConnectFour::new(5, 4).unwrap();
        let mut game = vec![g.initial_state()];
        for a in [2, 2, 1, 3, 0] {
            let s = *game.last().unwrap();
            game.push(g.apply(&s, a));
        }
        let root = game.pop().unwrap();
        let mut eval = Chain {
            game: game.clone(),
            root,
            leaves: 0,
        };
        let mut search = Search::new(SearchConfig {
            simulations: 200.into(),
            ..SearchConfig::default()
        })
        .unwrap();
        search
            .run(&g, &root, &game, 5, &mut eval, &mut stream(1, "past"))
            .unwrap();
        assert!(eval.leaves > 100);
    }
}
