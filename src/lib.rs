//! tabula: AlphaZero-style self-play research on games small enough to be solved exactly.
//!
//! - [`game`]: the `Game` trait (explicit chance, fixed action spaces, canonical keys);
//! - [`games`]: Chinese dark chess (2x4 and 4x8), EinStein würfelt nicht!, Connect Four,
//!   Chinese Checkers, and the registry that maps variant names to them;
//! - [`rng`]: named ChaCha streams, the only source of randomness;
//! - [`play`]: generic helpers to play games (random playouts, chance sampling);
//! - [`search`]: PUCT MCTS with chance nodes, MCTS-Solver, leaf evaluators;
//! - [`players`]: player specs (`mcts:sims=800`, `optimal`, ...) and the agents they make;
//! - [`matches`](mod@matches): matches between two players, in parallel, reproducible;
//! - [`record`]: the game record (`game/v1`) every played game is stored as;
//! - [`solver`]: exact values of every position (layered retrograde analysis for games that
//!   cycle, memoised expectimax for acyclic ones), the optimal player;
//! - [`store`]: the content-addressed SQLite experiment store;
//! - [`learner`]: tabular AlphaZero (lookup table, training, self-play, metrics);
//! - [`learners`]: the `Learner` trait (learners as plug-ins) and the registry of learners;
//! - [`start`]: start policies (the game's start, Go-Exploit);
//! - [`runs`]: run specs, the iteration loop, run records, resume / branch / verify.

pub mod error;
pub mod eval;
pub mod experiments;
pub mod game;
pub mod game_record;
pub mod games;
pub mod learners;
pub mod matches;
pub mod nn;
pub mod play;
pub mod players;
pub mod rng;
pub mod runs;
pub mod search;
pub mod selfplay;
pub mod solver;
pub mod start;
pub mod stats;
pub mod store;

pub use error::GameError;
pub use game::{Action, ChanceOutcome, Game, GameResult, Outcome, Player, Turn};
pub use games::AnyGame;
