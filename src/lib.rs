//! tabula: AlphaZero-style self-play research on games small enough to be solved exactly.
//!
//! The modules, bottom first; each uses only those before it (docs/architecture.md,
//! "Layers"; `tests/layers.rs` keeps the order):
//!
//! - [`error`]: errors every layer shares (`GameError`, `SettingError`);
//! - [`game`]: the `Game` trait (explicit chance, fixed action spaces, canonical keys);
//! - [`rng`]: named ChaCha streams, the only source of randomness;
//! - `par`: parallel loops, rayon's machinery instantiated once for the whole library;
//! - [`stats`]: confidence intervals;
//! - [`ratings`]: Bradley-Terry (Elo) ratings by maximum likelihood, with 95% intervals;
//! - [`store`]: the content-addressed SQLite experiment store;
//! - [`game_record`]: the game record (`game/v1`) every played game is stored as;
//! - [`solver`]: exact values of every position, generic over games;
//! - [`play`]: the one game loop, random playouts, the optimal decision;
//! - [`search`]: PUCT MCTS with chance nodes, MCTS-Solver, leaf evaluators;
//! - [`nn`]: the CPU network engine and the `Encode` ability;
//! - [`games`]: Chinese dark chess (2x4 and 4x8), EinStein würfelt nicht!, Connect Four,
//!   Chinese Checkers, each with everything game-specific beside it; the registry and the
//!   `Abilities` only some games have;
//! - [`eval`]: metrics, the exact truth they are measured against, reference evaluations;
//! - [`selfplay`]: self-play games, one at a time or in lanes with batched leaves;
//! - [`start`]: start policies (the game's start, Go-Exploit);
//! - [`learners`]: the `Learner` trait, its registry, tabular AlphaZero, the network learner;
//! - [`runs`]: run specs, the one driver, resume / branch / verify / checkout / replay;
//! - [`gtp`]: the Go Text Protocol (commands, responses, vertices) and a client for any GTP
//!   engine;
//! - [`players`]: player specs (`mcts:sims=800`, `optimal`, `model:RUN@I`, ...) and agents;
//! - [`gtp_engine`]: `tabula gtp`, any player of Go as a GTP engine;
//! - [`matches`](mod@matches): matches between two players, in parallel, reproducible;
//! - [`experiments`]: sweeps, shards, plots and reports.

pub use tabula_core::{error, game, rng};
pub mod eval;
pub mod experiments;
pub mod game_record;
pub mod games;
pub mod gtp;
pub mod gtp_engine;
pub mod learners;
pub mod matches;
pub use tabula_nn as nn;
pub(crate) mod par;
pub use par::thread_cpu_seconds;
pub mod play;
pub mod players;
pub mod ratings;
pub mod runs;
pub mod search;
pub mod selfplay;
pub mod serve;
pub mod solver;
pub mod start;
pub mod stats;
pub use tabula_store as store;

pub use error::GameError;
pub use game::{Action, ChanceOutcome, Game, GameResult, Outcome, Player, Turn};
pub use games::AnyGame;
