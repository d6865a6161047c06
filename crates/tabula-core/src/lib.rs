//! tabula's core: what every layer above names (docs/architecture.md, "Crates").
//!
//! - [`error`]: the errors every layer shares (`GameError`, `SettingError`);
//! - [`game`]: the `Game` trait (explicit chance, fixed action spaces, canonical keys);
//! - [`rng`]: named ChaCha streams, the only source of randomness.
//!
//! The tabula crate re-exports these modules under the same names, so `tabula::game::Game`
//! and `tabula::rng::stream` are the paths a user writes.

pub mod error;
pub mod game;
pub mod rng;
