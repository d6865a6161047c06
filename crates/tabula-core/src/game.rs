//! The `Game` abstraction every engine implements and every algorithm is generic over.
//!
//! Design (docs/games.md): two seats, perfect information, explicit chance. A state is a
//! small `Copy` value; whose turn it is comes back as a [`Turn`] enum, never as an integer
//! sentinel. Chance states list their outcomes with exact probabilities so the solver can take
//! expectations and search can sample. Actions are indices into a fixed, game-wide action
//! space (the literature's encodings) so a lookup table keeps one policy vector per position.
//!
//! A state also has a canonical position *key*. Counters that only serve the draw rules
//! (no-progress plies, repetition history, move limits) are part of the state but not of the
//! key, and [`Game::state_from_key`] rebuilds a state with those counters reset. That is what
//! lets the solver keep a few bytes per position and the tables be keyed by position.
//!
//! The core trait stays small; abilities only some games have live in optional traits beside
//! it (see the `games` module of the tabula crate).

use std::fmt::Debug;
use std::hash::Hash;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::GameError;

/// An index into the game's action space, `0..Game::num_actions()`.
pub type Action = u16;

/// An index naming one outcome of a chance event; what it means is the game's own
/// (a revealed piece kind, a die face, a placement permutation).
pub type Outcome = u16;

/// A seat. `P0` moves first (for Chinese dark chess, the first to flip; colours are assigned
/// by that flip and live in the state).
#[derive(
    Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
pub enum Player {
    P0,
    P1,
}

impl Player {
    pub const BOTH: [Player; 2] = [Player::P0, Player::P1];

    /// 0 for `P0`, 1 for `P1`.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub fn from_index(i: usize) -> Player {
        if i == 0 { Player::P0 } else { Player::P1 }
    }

    #[inline]
    pub fn other(self) -> Player {
        match self {
            Player::P0 => Player::P1,
            Player::P1 => Player::P0,
        }
    }
}

/// For people: `player 0` (the first mover) or `player 1`.
impl std::fmt::Display for Player {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "player {}", self.index())
    }
}

/// For people: `player 0 wins`, `player 1 wins` or `draw`.
impl std::fmt::Display for GameResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GameResult::Win(p) => write!(f, "{p} wins"),
            GameResult::Draw => f.write_str("draw"),
        }
    }
}

/// For people: `player 0 to move`, `chance to draw`, or the result.
impl std::fmt::Display for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Turn::Player(p) => write!(f, "{p} to move"),
            Turn::Chance => f.write_str("a chance event"),
            Turn::Terminal(r) => write!(f, "over ({r})"),
        }
    }
}

/// How a finished game ended. Every game here scores win 1, draw 0.5, loss 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum GameResult {
    Win(Player),
    Draw,
}

impl GameResult {
    /// The score in [0, 1] of `p`.
    #[inline]
    pub fn score(self, p: Player) -> f64 {
        match self {
            GameResult::Win(w) if w == p => 1.0,
            GameResult::Win(_) => 0.0,
            GameResult::Draw => 0.5,
        }
    }

    /// Scores of `[P0, P1]`; they always sum to 1.
    #[inline]
    pub fn scores(self) -> [f64; 2] {
        [self.score(Player::P0), self.score(Player::P1)]
    }
}

/// Whose turn it is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Turn {
    /// A seat chooses one of the legal actions.
    Player(Player),
    /// Nature draws one of the listed outcomes by its probability.
    Chance,
    /// The game is over.
    Terminal(GameResult),
}

/// One outcome of a chance event and its exact probability (all of a state's outcomes are
/// positive and sum to 1 within 1e-12).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ChanceOutcome {
    pub outcome: Outcome,
    pub prob: f64,
}

/// What a position key must be: a compact canonical value that orders, hashes and serialises.
/// Solvable games use `u64` or `u128`.
pub trait PositionKey:
    Copy + Eq + Ord + Hash + Debug + Send + Sync + Serialize + DeserializeOwned + 'static
{
}

impl<T> PositionKey for T where
    T: Copy + Eq + Ord + Hash + Debug + Send + Sync + Serialize + DeserializeOwned + 'static
{
}

/// The most earlier decision states of a game (its past) that anything evaluating a position
/// may read: AlphaGo Zero's eight positions are the current one and seven before it (Silver et
/// al. 2017). A search keeps this many of the game's past for its leaves (docs/network.md,
/// "Inputs").
pub const MAX_PAST: usize = 7;

/// The last `n` states of a game's `past` (all of it when shorter), oldest first: what an
/// input that reads `n` earlier states, or a search that keeps them, takes of it.
pub fn last_past<S>(past: &[S], n: usize) -> &[S] {
    &past[past.len().saturating_sub(n)..]
}

/// The draws of a random playout ([`Game::fused_playout`]): the stream the generic loop
/// draws from (`crate::rng`'s stream implements it).
pub trait PlayoutDraws {
    /// A uniform number in [0, 1), as a chance step's `sample_outcome` draws it.
    fn unit(&mut self) -> f64;
    /// A uniform index in `0..n` (`n > 0`), as a decision's `uniform_index` draws it.
    fn index(&mut self, n: usize) -> usize;
}

/// A two-player zero-sum game with perfect information and explicit chance.
///
/// Methods take `&self` because a game value carries its parameters (board size, material,
/// draw rules). All methods are pure: applying an action returns a new state and never
/// changes the one it came from.
pub trait Game: Clone + Debug + Send + Sync + 'static {
    /// A complete state: position plus draw counters. Small and `Copy`.
    type State: Copy + Debug + PartialEq + Send + Sync + 'static;
    /// The canonical position key (see the module docs).
    type Key: PositionKey;

    /// The canonical variant name, which the registry parses back to an equal game
    /// (e.g. `cdc:PPPP`, `ewn:3x3x3`, `c4:7x6`).
    fn variant(&self) -> String;

    /// |A|: the size of the action space. Legal actions are always below it.
    fn num_actions(&self) -> usize;

    /// The start state (it may be a chance state, as in EinStein würfelt nicht!).
    fn initial_state(&self) -> Self::State;

    fn turn(&self, s: &Self::State) -> Turn;

    /// Clears `out` and fills it with the legal actions of a decision state, ascending and
    /// without duplicates. Leaves it empty for chance and terminal states. Callers reuse the
    /// buffer so the hot loop does not allocate.
    fn legal_actions(&self, s: &Self::State, out: &mut Vec<Action>);

    /// A uniformly random legal action of decision state `s`, drawn through `index` (which
    /// returns a uniform index in `0..n`, n > 0). The default lists the legal actions into
    /// `scratch` and draws one index among them; a game may draw otherwise (Go draws
    /// actions and rejects illegal ones) as long as every legal action has the same
    /// probability. Random playouts use it.
    #[inline]
    fn random_action(
        &self,
        s: &Self::State,
        scratch: &mut Vec<Action>,
        index: &mut dyn FnMut(usize) -> usize,
    ) -> Action {
        self.legal_actions(s, scratch);
        scratch[index(scratch.len())]
    }

    /// A random playout from `s` to the end in one loop of the game's own, or `None` to
    /// leave it to the generic loop (`tabula::play::random_playout`). A game overrides it
    /// only to save the generic loop's lists: it must take from `draws` exactly what the
    /// generic loop takes (chance: one [`PlayoutDraws::unit`], compared with the running
    /// sums of [`Game::chance_outcomes`]' probabilities as `sample_outcome` does; a decision:
    /// one [`PlayoutDraws::index`] over the legal actions, ascending) and return its result
    /// and plies (decisions), so a playout is the same bits either way. The default
    /// declines.
    #[inline(always)]
    fn fused_playout<D: PlayoutDraws>(
        &self,
        s: &Self::State,
        draws: &mut D,
    ) -> Option<(GameResult, u32)> {
        let _ = (s, draws);
        None
    }

    /// The state after a legal action of a decision state. Illegal actions are a caller bug
    /// (check with [`is_legal`] first where the action comes from outside).
    fn apply(&self, s: &Self::State, a: Action) -> Self::State;

    /// Applies a legal action to `s` itself: `*s = self.apply(s, a)`, which is what it does
    /// unless a game with a large state (Go) saves the copies. Loops that only walk forward
    /// (random playouts) use it.
    #[inline]
    fn apply_in_place(&self, s: &mut Self::State, a: Action) {
        *s = self.apply(s, a);
    }

    /// Clears `out` and fills it with the outcomes of a chance state (empty otherwise).
    fn chance_outcomes(&self, s: &Self::State, out: &mut Vec<ChanceOutcome>);

    /// The state after one of the listed outcomes of a chance state.
    fn apply_chance(&self, s: &Self::State, o: Outcome) -> Self::State;

    /// The canonical position key. Defined for every state (chance and terminal too);
    /// draw counters never enter it.
    fn key(&self, s: &Self::State) -> Self::Key;

    /// Rebuilds the state of a key, draw counters reset. Keys that no state of this game has
    /// are an error, not a panic (they may come from a damaged store).
    fn state_from_key(&self, k: Self::Key) -> Result<Self::State, GameError>;

    /// A readable name for a legal action in `s` (e.g. `flip b3`, `a1-a2`, `col 4`).
    fn action_name(&self, s: &Self::State, a: Action) -> String;

    /// A readable name for an outcome of the chance state `s` (e.g. `reveals P`, `die 3`).
    fn outcome_name(&self, s: &Self::State, o: Outcome) -> String;

    /// A multi-line text picture of the board, for people.
    fn render(&self, s: &Self::State) -> String;

    /// A one-line text notation of the position (everything the key holds), which
    /// [`Game::parse_notation`] reads back: `parse(notation(s))` has the key of `s`.
    fn notation(&self, s: &Self::State) -> String;

    /// Parses a position written in this game's notation; the state has fresh draw counters.
    fn parse_notation(&self, text: &str) -> Result<Self::State, GameError>;
}

/// Whether `a` is legal in `s` (a scratch buffer keeps it allocation-free in loops).
pub fn is_legal<G: Game>(g: &G, s: &G::State, a: Action, scratch: &mut Vec<Action>) -> bool {
    g.legal_actions(s, scratch);
    scratch.binary_search(&a).is_ok()
}

/// The player to move, or `None` for chance and terminal states.
pub fn to_move<G: Game>(g: &G, s: &G::State) -> Option<Player> {
    match g.turn(s) {
        Turn::Player(p) => Some(p),
        _ => None,
    }
}
