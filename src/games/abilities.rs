//! [`Abilities`]: what only some games can do, asked for one way.
//!
//! Generic code (the run driver, the players, the learners, the evaluation) is generic over
//! [`Game`]; some of it also needs an exact solution, input planes for a network, a greedy
//! heuristic or reference positions. Every registry game implements [`Abilities`] in its own
//! folder by stating its [`AbilitySet`]: one struct literal naming every ability, so a game
//! added without deciding an ability does not compile, and no caller guesses a game's type at
//! run time (the metric it feeds cannot silently vanish).

use std::sync::Arc;

use crate::game::{Action, Game};
use crate::nn::encode::{Encode, Encoder};
use crate::rng::StreamRng;
use crate::solver::{LoadError, Solution, Solvable};
use crate::store::Store;

/// A position of a reference test set with what the exact solver says of it.
#[derive(Clone, Debug)]
pub struct ReferencePosition<S> {
    pub state: S,
    /// v* on [0, 1] for the side to move.
    pub value: f64,
    /// The value-preserving moves, ascending.
    pub best: Vec<Action>,
}

/// A reference test set, shared (sets are computed once per process).
pub type ReferenceSet<S> = Arc<Vec<ReferencePosition<S>>>;

/// Loads or solves a game's exact solution.
pub(crate) type SolveFn<G> = fn(&G, &mut Store) -> Result<Solution<<G as Game>::Key>, LoadError>;
/// A game's list of positions.
pub(crate) type PositionsFn<G> = fn(&G) -> Vec<<G as Game>::State>;
/// The greedy features of the legal actions of a state.
pub(crate) type GreedyFn<G> = fn(&G, &<G as Game>::State, &[Action], &mut Vec<(i32, i32)>);
/// A reference set by name and size (`None`: not on this variant).
pub(crate) type ReferenceFn<G> =
    fn(&G, &str, usize) -> Option<Result<ReferenceSet<<G as Game>::State>, String>>;
/// A metric's name and description, as a learner declares it (`eval::MetricDef`).
pub(crate) type MetricText = (&'static str, &'static str);
/// The exact values of the legal actions of a state.
pub(crate) type ActionValuesFn<G> = fn(&G, &<G as Game>::State) -> Option<Vec<(Action, f64)>>;
/// The rows a legal action of a decision state advances the mover's piece toward its goal
/// (negative: backward).
pub(crate) type ForwardFn<G> = fn(&G, &<G as Game>::State, Action) -> i32;
/// Each player's standing in the race to the opposite base (see [`Race`]).
pub(crate) type RaceFn<G> = fn(&G, &<G as Game>::State) -> [Race; 2];
/// A random start position drawn from a stream.
pub(crate) type PlacementFn<G> = fn(&G, &mut StreamRng) -> <G as Game>::State;

/// What a game can do beyond its rules, as data (like OpenSpiel's `GameType`): each field is
/// the ability's implementation, or `None` where the game does not have it. A game fills every
/// field in one struct literal, so the compiler refuses a game that leaves one out.
pub struct AbilitySet<G: Game> {
    /// The exact value of every position, loaded from the store or solved and saved there
    /// first (`solver::load_or_solve` for a [`Solvable`] game).
    pub solution: Option<SolveFn<G>>,
    /// The test positions S_test the metrics average over (docs/metrics.md).
    pub test_positions: Option<PositionsFn<G>>,
    /// An exact search per position, for boards too large to enumerate (Connect Four 7x6):
    /// whether this variant is searched exactly, and every legal action of a decision state
    /// with its exact value in [-1, 1] for the mover, ascending by action.
    pub(crate) exact_search: Option<ExactSearch<G>>,
    /// The greedy heuristic: for each legal action of a state (in order), its forward gain
    /// Psi and how far back its piece stands (larger = further back).
    pub(crate) greedy_features: Option<GreedyFn<G>>,
    /// The game's inputs for a network by name (docs/network.md, "Inputs"), the default
    /// first: `position` ([`encoded`] for an [`Encode`] game), then any that read the game's
    /// history. Empty: no network reads this game.
    pub inputs: &'static [Input<G>],
    /// Named reference test sets, the first `n` positions of each with their exact values
    /// and best moves, and the metrics measured on them (Connect Four 7x6's test sets).
    pub(crate) reference_sets: Option<References<G>>,
    /// The board's mirror image, a symmetry of the rules that keeps the side to move: the
    /// network learner's `augment = "mirror"` adds each sample's image (docs/network.md,
    /// "Liu et al.'s data pipeline").
    pub mirror: Option<Mirror<G>>,
    /// A random placement of every piece: a legal, undecided decision state drawn from the
    /// stream (the mixed start policy's random placements, docs/learners.md).
    pub(crate) random_placement: Option<PlacementFn<G>>,
    /// The rows a move advances its piece toward the goal, negative backward (Chinese
    /// Checkers' forward gain Psi): the shaped reward of Q-learning (Liu et al.: +0.01 a row
    /// forward, -0.01 a row backward; learners/q).
    pub(crate) forward_gain: Option<ForwardFn<G>>,
    /// Each player's checkers in the opponent's base and forward distance: tabula rasa's soft
    /// move limit and its outcome (Liu et al.; `[selfplay] soft_limit`).
    pub race: Option<RaceFn<G>>,
    /// A square board the Go Text Protocol can speak of: its side, komi, move limit and
    /// `final_score` (Go, on any board size; the `gtp:` player and `tabula gtp`).
    pub(crate) go_board: Option<GoBoard<G>>,
}

/// A game's reference test sets (see [`AbilitySet::reference_sets`]).
pub(crate) struct References<G: Game> {
    /// The sets' names and the metrics measured on them (the registry's test checks each
    /// game's list against the one every learner declares).
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the registry's test"))]
    pub(crate) metrics: &'static ReferenceMetrics,
    /// Set `name`'s first `n` positions (`None`: this variant has no such set).
    pub load: ReferenceFn<G>,
}

/// The names of a game's reference sets and the metrics measured on them, as data: the
/// learners declare these metrics (their names and descriptions are stored in `metric_defs`,
/// so they are fixed once runs exist).
#[derive(Debug, PartialEq)]
pub(crate) struct ReferenceMetrics {
    /// The sets' names, in the order of their metrics.
    pub sets: &'static [&'static str],
    /// The policy's value error and best moves over every chosen set, then each set's pair
    /// (value error, best moves) in [`ReferenceMetrics::sets`] order.
    pub policy: &'static [MetricText],
    /// The search player's best moves over every chosen set, then each set's in
    /// [`ReferenceMetrics::sets`] order.
    pub search: &'static [MetricText],
}

/// Go's board as the Go Text Protocol sees it (see [`AbilitySet::go_board`]): actions are
/// OpenSpiel's, the point in row r (0 = the bottom) and column c (0 = the left) is r*N + c,
/// and N*N passes (docs/gtp.md).
pub(crate) struct GoBoard<G: Game> {
    /// The board side N.
    pub side: fn(&G) -> usize,
    /// The komi (a multiple of 0.5).
    pub komi: fn(&G) -> f64,
    /// The variant's move limit.
    pub max_moves: fn(&G) -> usize,
    /// The black-positive margin `final_score` reports for a position: black's Tromp-Taylor
    /// area minus white's minus the komi, 0 for a game drawn on a repeated board.
    pub margin: fn(&G, &<G as Game>::State) -> f64,
}

/// What [`GoBoard`] says of one game, as plain values.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct GoRules {
    pub side: usize,
    pub komi: f64,
    pub max_moves: usize,
}

/// A player's standing in a race to the opposite base (Chinese Checkers).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Race {
    /// Its checkers in the opponent's base (its goal).
    pub(crate) home: u32,
    /// The rows its checkers have advanced from the game's start, summed (Liu et al.'s
    /// "total forward distance").
    pub distance: i32,
}

/// A symmetry of a game (see [`AbilitySet::mirror`]). `state` is an involution (applied
/// twice it gives the state back, draw counters included) that keeps the side to move and
/// commutes with the rules: `state(apply(s, a)) == apply(state(s), action(s, a))` for every
/// legal `a`, so legal actions map onto legal actions and values are equal.
pub struct Mirror<G: Game> {
    /// The image of a state.
    pub state: fn(&G, &<G as Game>::State) -> <G as Game>::State,
    /// The image of action `a` of state `s` (an action of the image of `s`).
    pub action: fn(&G, &<G as Game>::State, Action) -> Action,
}

/// An exact search per position (see [`AbilitySet::exact_search`]).
pub(crate) struct ExactSearch<G: Game> {
    /// Whether the variant is played by this search rather than a loaded solution.
    pub applies: fn(&G) -> bool,
    pub action_values: ActionValuesFn<G>,
}

/// The test positions of a [`Solvable`] game.
pub(crate) fn solvable_test_positions<G: Solvable>(g: &G) -> Vec<G::State> {
    Solvable::test_positions(g)
}

/// The input planes of an [`Encode`] game, shared by every thread.
/// A named network input of a game (see [`AbilitySet::inputs`]).
pub struct Input<G: Game> {
    /// The name the spec's `[learner.network] input` gives.
    pub name: &'static str,
    pub make: fn(&G) -> Encoder<G>,
}

/// The default input of an [`Encode`] game: its position planes.
pub(crate) const fn position_input<G: Encode>() -> Input<G> {
    Input {
        name: "position",
        make: encoded::<G>,
    }
}

pub(crate) fn encoded<G: Encode>(g: &G) -> Encoder<G> {
    Arc::new(g.clone())
}

/// The abilities only some games have (see the module docs): each game states them once, in
/// [`Abilities::ABILITIES`]; the methods ask for them.
pub trait Abilities: Game {
    const ABILITIES: AbilitySet<Self>;

    /// The exact solution (`None`: the game has no exact solver, e.g. 4x8 Chinese dark chess).
    fn solution(&self, store: &mut Store) -> Option<Result<Solution<Self::Key>, LoadError>> {
        Self::ABILITIES.solution.map(|f| f(self, store))
    }

    /// S_test; empty for a game without an exact solver.
    fn test_positions(&self) -> Vec<Self::State> {
        Self::ABILITIES
            .test_positions
            .map_or_else(Vec::new, |f| f(self))
    }

    /// Whether the optimal player searches each position exactly instead of loading a
    /// solution.
    fn searches_exactly(&self) -> bool {
        Self::ABILITIES
            .exact_search
            .is_some_and(|e| (e.applies)(self))
    }

    /// With [`Abilities::searches_exactly`]: every legal action of `s` with its exact value.
    fn exact_action_values(&self, s: &Self::State) -> Option<Vec<(Action, f64)>> {
        Self::ABILITIES
            .exact_search
            .and_then(|e| (e.action_values)(self, s))
    }

    /// Fills `out` with the greedy features of `legal` at `s`; `false` when the game has no
    /// greedy player.
    fn greedy_features(
        &self,
        s: &Self::State,
        legal: &[Action],
        out: &mut Vec<(i32, i32)>,
    ) -> bool {
        Self::ABILITIES
            .greedy_features
            .map(|f| f(self, s, legal, out))
            .is_some()
    }

    /// The game's default input planes for a network.
    fn encoder(&self) -> Option<Encoder<Self>> {
        Self::ABILITIES.inputs.first().map(|i| (i.make)(self))
    }

    /// The game's input `name` (`None`: the default); `Err` lists the inputs it has.
    fn input(&self, name: Option<&str>) -> Result<Encoder<Self>, String> {
        let inputs = Self::ABILITIES.inputs;
        let Some(name) = name else {
            return self
                .encoder()
                .ok_or_else(|| format!("{} has no input encoding", self.variant()));
        };
        match inputs.iter().find(|i| i.name == name) {
            Some(i) => Ok((i.make)(self)),
            None => {
                let names: Vec<&str> = inputs.iter().map(|i| i.name).collect();
                Err(format!(
                    "{} has no input `{name}`; it has: {}",
                    self.variant(),
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ))
            }
        }
    }

    /// Reference set `name`, its first `n` positions. `None`: the game has no such set.
    fn reference_set(
        &self,
        name: &str,
        n: usize,
    ) -> Option<Result<ReferenceSet<Self::State>, String>> {
        Self::ABILITIES
            .reference_sets
            .and_then(|r| (r.load)(self, name, n))
    }

    /// The game's mirror image (`None`: the game has none).
    fn mirror(&self) -> Option<Mirror<Self>> {
        Self::ABILITIES.mirror
    }

    /// The rows legal action `a` of decision state `s` advances its piece toward the goal
    /// (negative: backward); `None`: the game has no such measure.
    fn rows_advanced(&self, s: &Self::State, a: Action) -> Option<i32> {
        Self::ABILITIES.forward_gain.map(|f| f(self, s, a))
    }

    /// Whether the game measures how far a move advances ([`Abilities::rows_advanced`]).
    fn has_forward_gain() -> bool {
        Self::ABILITIES.forward_gain.is_some()
    }

    /// Each player's standing in the race at `s` (`None`: the game is no race).
    fn race(&self, s: &Self::State) -> Option<[Race; 2]> {
        Self::ABILITIES.race.map(|f| f(self, s))
    }

    /// The board's side, komi and move limit as GTP speaks of them (`None`: not a Go board).
    fn go_rules(&self) -> Option<GoRules> {
        Self::ABILITIES.go_board.map(|b| GoRules {
            side: (b.side)(self),
            komi: (b.komi)(self),
            max_moves: (b.max_moves)(self),
        })
    }

    /// The black-positive margin `final_score` reports for `s` (`None`: not a Go board).
    fn go_margin(&self, s: &Self::State) -> Option<f64> {
        Self::ABILITIES.go_board.map(|b| (b.margin)(self, s))
    }

    /// A random placement drawn from `rng` (`None`: the game has no such ability).
    fn random_placement(&self, rng: &mut StreamRng) -> Option<Self::State> {
        Self::ABILITIES.random_placement.map(|f| f(self, rng))
    }
}

impl<G: Game> Clone for ExactSearch<G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: Game> Copy for ExactSearch<G> {}

impl<G: Game> Clone for References<G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: Game> Copy for References<G> {}

impl<G: Game> Clone for GoBoard<G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: Game> Copy for GoBoard<G> {}

impl<G: Game> Clone for Mirror<G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: Game> Copy for Mirror<G> {}
