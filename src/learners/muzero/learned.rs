//! The learned model as a game, so that tabula's PUCT and Gumbel searches run in it
//! unchanged (docs/muzero.md, "Search in the learned model").
//!
//! [`LearnedGame`]'s states are model states: a node's identity (a 128-bit hash of its path
//! of actions from the root), its parent's, the action that led to it, its depth and its
//! side to move. The hidden vectors live in the evaluator ([`LearnedEval`]), keyed by node:
//! a leaf's vector is g(its parent's, its action), computed when the search evaluates it (a
//! parent is always evaluated before its children). So `apply` is pure and cheap, and the
//! search's arenas hold small `Copy` states as for any game.
//!
//! - **Legal actions masked at the root only** (the paper, Appendix A: only at the root can
//!   the environment be queried; below it, every action of the action space).
//! - **No terminal states**: the model does not know where the game ends; the unroll's
//!   absorbing steps teach it that the state after the end keeps the outcome (unroll.rs).
//! - **Sides alternate** at every step (the pseudocode's board-game `to_play`), as the
//!   unroll's targets do; the search's backup flips the value at every edge.
//! - **Rewards**: the search backs up values in [0, 1] for the side to move and reads no
//!   reward. With board games' only reward on the last move and the outcome as the value of
//!   the states after it, the paper's Q(s, a) = r + (-v(s')) (discount 1, zero-sum) and
//!   tabula's Q(s, a) = 1 - v(s') agree on their targets: after the last move r = 2z - 1
//!   for its mover and the next state's value target is the outcome for the other side
//!   (the paper's 0 after the end is r's complement here). The reward head is trained (its
//!   loss is reported) but not read by the search.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::GameError;
use crate::game::{Action, ChanceOutcome, Game, Outcome, Player, Turn};
use crate::games::Abilities;
use crate::rng::StreamRng;
use crate::search::{Evaluator, Search, SearchConfig, SearchError, SearchResult};

use super::model::{ChanceNets, MuScratch, MuZero, Net, afterstate_of, chance_of};
use crate::nn::Scratch;

/// Stochastic MuZero's learned chance, shared by the game and the evaluator of one search
/// (one search runs on one thread): the decision nodes' hidden states, filled by the
/// evaluator, and each afterstate with its sigma, computed by [`Game::chance_outcomes`] when
/// the search first reaches it (the searches add a chance node as soon as a descent reaches
/// it, before they evaluate anything below). So a node's expansion computes phi and psi only
/// for the actions the search takes, not for every action of the action space.
pub(crate) type Sigmas = Arc<Mutex<ChanceTable>>;

/// See [`Sigmas`].
#[derive(Debug)]
pub(crate) struct ChanceTable {
    /// Copies of the model's phi and psi for the search's duration, their scratch and
    /// phi's input.
    phi: Net,
    psi: Net,
    codes: usize,
    scratch: (Scratch, Scratch, Vec<f32>),
    /// Decision nodes' hidden states, by node.
    decisions: HashMap<u128, Vec<f32>>,
    /// Afterstates (scaled) and their sigma over the codes, by node.
    afters: HashMap<u128, (Vec<f32>, Vec<f64>)>,
}

impl ChanceTable {
    /// An empty table for a search in the model with these chance networks.
    pub(crate) fn shared(c: &ChanceNets) -> Sigmas {
        Arc::new(Mutex::new(ChanceTable {
            phi: c.phi.clone(),
            psi: c.psi.clone(),
            codes: c.codes,
            scratch: (
                c.phi.layout.scratch(),
                c.psi.layout.scratch(),
                vec![0.0; c.phi.layout.input().len()],
            ),
            decisions: HashMap::new(),
            afters: HashMap::new(),
        }))
    }

    /// The afterstate `node` = phi(its parent's state, `a`) and its sigma = psi's softmax
    /// over the codes, computed on first use (the passes [`MuZero::afterstate`] and
    /// [`MuZero::afterstate_predict`] make, so the same bits). None if the parent was never
    /// evaluated (a search evaluates a parent before descending below it).
    fn after(&mut self, node: u128, parent: u128, a: Action) -> Option<&(Vec<f32>, Vec<f64>)> {
        if !self.afters.contains_key(&node) {
            let state = self.decisions.get(&parent)?;
            let (phi_sc, psi_sc, ain) = &mut self.scratch;
            let mut after = vec![0.0; state.len()];
            afterstate_of(
                &self.phi,
                state,
                a,
                (phi_sc, ain.as_mut_slice()),
                &mut after,
            );
            let mut sigma = Vec::with_capacity(self.codes);
            chance_of(&self.psi, self.codes, &after, psi_sc, &mut sigma);
            self.afters.insert(node, (after, sigma));
        }
        self.afters.get(&node)
    }
}

/// The learned model as a game: the root's legal actions and the action space; for
/// Stochastic MuZero the codebook's size and the learned chance.
#[derive(Clone, Debug)]
pub(crate) struct LearnedGame {
    actions: usize,
    root_legal: Vec<Action>,
    /// The learned chance (None: MuZero, no chance nodes).
    chance: Option<Sigmas>,
}

/// A model state (see the module docs).
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct ModelState {
    pub(crate) node: u128,
    pub(crate) parent: u128,
    pub(crate) action: Action,
    pub(crate) depth: u32,
    pub(crate) player: Player,
    /// An afterstate (Stochastic MuZero): a chance node over the codes; `player` moves
    /// after chance.
    pub(crate) after: bool,
}

/// The root's node identity.
const ROOT: u128 = 0x6d75_7a65_726f_2d72_6f6f_742d_6e6f_6465;

/// A child's identity: a 128-bit mix (two splitmix64 chains) of its parent's and its action.
fn child_node(parent: u128, a: Action) -> u128 {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let (hi, lo) = ((parent >> 64) as u64, parent as u64);
    let a = u64::from(a);
    let x = mix(hi ^ mix(lo.wrapping_add(a).wrapping_add(0x9e37_79b9_7f4a_7c15)));
    let y = mix(lo ^ mix(hi.wrapping_add(a).wrapping_add(0xd1b5_4a32_d192_ed03)));
    (u128::from(x) << 64) | u128::from(y)
}

impl LearnedGame {
    pub(crate) fn new(
        actions: usize,
        root_legal: Vec<Action>,
        chance: Option<Sigmas>,
    ) -> LearnedGame {
        LearnedGame {
            actions,
            root_legal,
            chance,
        }
    }

    /// The root state, `player` to move.
    pub(crate) fn root(player: Player) -> ModelState {
        ModelState {
            node: ROOT,
            parent: ROOT,
            action: 0,
            depth: 0,
            player,
            after: false,
        }
    }
}

impl Game for LearnedGame {
    type State = ModelState;
    type Key = u128;

    fn variant(&self) -> String {
        "learned-model".into()
    }

    fn num_actions(&self) -> usize {
        self.actions
    }

    fn initial_state(&self) -> ModelState {
        LearnedGame::root(Player::P0)
    }

    fn turn(&self, s: &ModelState) -> Turn {
        if s.after {
            Turn::Chance
        } else {
            Turn::Player(s.player)
        }
    }

    fn legal_actions(&self, s: &ModelState, out: &mut Vec<Action>) {
        out.clear();
        if s.depth == 0 {
            out.extend_from_slice(&self.root_legal);
        } else {
            out.extend(0..self.actions as Action);
        }
    }

    fn apply(&self, s: &ModelState, a: Action) -> ModelState {
        ModelState {
            node: child_node(s.node, a),
            parent: s.node,
            action: a,
            depth: s.depth + 1,
            player: s.player.other(),
            after: self.chance.is_some(),
        }
    }

    /// The codes 0..C with the learned sigma (computed on first use from the afterstate's
    /// parent, which the search evaluated before descending below it; uniform if it was
    /// not, never taken).
    fn chance_outcomes(&self, s: &ModelState, out: &mut Vec<ChanceOutcome>) {
        out.clear();
        let Some(sigmas) = &self.chance else {
            return;
        };
        if !s.after {
            return;
        }
        let mut table = sigmas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let c = table.codes;
        match table.after(s.node, s.parent, s.action) {
            Some((_, sigma)) => {
                out.extend(sigma.iter().enumerate().map(|(o, &prob)| ChanceOutcome {
                    outcome: o as Outcome,
                    prob,
                }))
            }
            None => out.extend((0..c).map(|o| ChanceOutcome {
                outcome: o as Outcome,
                prob: 1.0 / c as f64,
            })),
        }
    }

    fn apply_chance(&self, s: &ModelState, o: Outcome) -> ModelState {
        if !s.after {
            return *s;
        }
        ModelState {
            node: child_node(s.node, Action::from(o)),
            parent: s.node,
            action: Action::from(o),
            depth: s.depth + 1,
            player: s.player,
            after: false,
        }
    }

    fn key(&self, s: &ModelState) -> u128 {
        s.node
    }

    fn state_from_key(&self, k: u128) -> Result<ModelState, GameError> {
        Err(GameError::BadKey {
            variant: self.variant(),
            key: format!("{k:032x}"),
            reason: "a model state is known only to the search that made it".into(),
        })
    }

    fn action_name(&self, _: &ModelState, a: Action) -> String {
        a.to_string()
    }

    fn outcome_name(&self, _: &ModelState, o: Outcome) -> String {
        o.to_string()
    }

    fn render(&self, s: &ModelState) -> String {
        self.notation(s)
    }

    fn notation(&self, s: &ModelState) -> String {
        format!("model state {:032x} at depth {}", s.node, s.depth)
    }

    fn parse_notation(&self, text: &str) -> Result<ModelState, GameError> {
        Err(GameError::BadPosition {
            variant: self.variant(),
            text: text.into(),
            reason: "model states have no notation to parse".into(),
        })
    }
}

/// The model as the learned game's leaf evaluator: the root's hidden state from the
/// representation of the real position, every other node's from the dynamics. Stochastic
/// MuZero: a decision node's state goes into the table it shares with the game (whose
/// `chance_outcomes` computes an afterstate phi(s, a) and its sigma when the search first
/// reaches it); a decision node below an afterstate is g(afterstate, code).
pub(crate) struct LearnedEval<'a, G: Game> {
    model: &'a MuZero<G>,
    /// The root's hidden state.
    root: Vec<f32>,
    states: HashMap<u128, Vec<f32>>,
    sc: MuScratch,
    sigmas: Option<Sigmas>,
}

impl<'a, G: Abilities> LearnedEval<'a, G> {
    /// An evaluator whose root is the real decision state `s` after the game's `past`.
    pub(crate) fn new(model: &'a MuZero<G>, s: &G::State, past: &[G::State]) -> Self {
        let mut sc = model.scratch();
        let mut root = vec![0.0; model.state_len()];
        model.represent(s, past, &mut sc, &mut root);
        LearnedEval {
            model,
            root,
            states: HashMap::new(),
            sc,
            sigmas: None,
        }
    }

    /// The evaluator of a Stochastic MuZero search filling `sigmas`.
    pub(crate) fn with_sigmas(mut self, sigmas: Sigmas) -> Self {
        self.sigmas = Some(sigmas);
        self
    }
}

impl<G: Abilities> Evaluator<LearnedGame> for LearnedEval<'_, G> {
    fn evaluate(
        &mut self,
        _: &LearnedGame,
        s: &ModelState,
        _: &[ModelState],
        legal: &[Action],
        priors: &mut [f64],
        _: &mut StreamRng,
    ) -> f64 {
        let LearnedEval {
            model,
            root,
            states,
            sc,
            sigmas,
        } = self;
        let mut state = vec![0.0; model.state_len()];
        if s.depth == 0 {
            state.copy_from_slice(root);
        } else if let Some(sigmas) = sigmas {
            // Below an afterstate: g(afterstate, code). The chance node was reached (its
            // sigma computed) before the search descended to this node.
            let table = sigmas
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let parent = table.afters.get(&s.parent).map_or(&root[..], |(v, _)| v);
            model.dynamics(parent, s.action, sc, &mut state);
        } else {
            // A parent is evaluated before its children, so its vector is stored (the
            // root's is `root`); the fallback to the root is never taken.
            let parent = match s.depth {
                1 => &*root,
                _ => states.get(&s.parent).unwrap_or(root),
            };
            model.dynamics(parent, s.action, sc, &mut state);
        }
        let v = model.predict(&state, sc);
        crate::nn::legal_softmax(&sc.f.logits, legal, priors);
        match sigmas {
            Some(sigmas) => {
                let mut table = sigmas
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                table.decisions.insert(s.node, state);
            }
            None => {
                states.insert(s.node, state);
            }
        }
        v
    }
}

impl<G: Abilities> MuZero<G> {
    /// The run's search (`config`: PUCT or Gumbel, its knobs as given) from the real decision
    /// state `s` (after the game's `past`, `ply` plies in) in the learned model; every draw
    /// from `rng`. The result's actions are `s`'s legal actions, ascending, as the real
    /// game's search would give them.
    pub(crate) fn plan(
        &self,
        g: &G,
        config: SearchConfig,
        (s, past): (&G::State, &[G::State]),
        ply: u32,
        rng: &mut StreamRng,
    ) -> Result<SearchResult, SearchError> {
        let Turn::Player(player) = g.turn(s) else {
            return Err(SearchError::NotADecision("not a decision"));
        };
        let mut legal = Vec::new();
        g.legal_actions(s, &mut legal);
        let sigmas: Option<Sigmas> = self.chance.as_ref().map(ChanceTable::shared);
        let lg = LearnedGame::new(g.num_actions(), legal, sigmas.clone());
        let mut search =
            Search::<LearnedGame>::new(config).map_err(|e| SearchError::Start(e.to_string()))?;
        let mut eval = LearnedEval::new(self, s, past);
        if let Some(t) = sigmas {
            eval = eval.with_sigmas(t);
        }
        search.run(&lg, &LearnedGame::root(player), &[], ply, &mut eval, rng)
    }
}
