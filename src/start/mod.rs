//! Start policies: where each self-play game starts (search control). The run driver
//! ([`crate::runs`]) asks its start policy for the start state of every self-play game and
//! shows it every stored game, in order, once an iteration's games are all played.
//!
//! - [`Initial`]: every game starts at the game's start (AlphaZero).
//! - [`GoExploit`]: Go-Exploit (Trudeau and Bowling, *Targeted Search Control in AlphaZero
//!   for Effective Policy Improvement*, AAMAS 2023): with probability `archive_prob` a game
//!   starts from a state drawn uniformly from an archive of states of interest, else from the
//!   game's start.
//! - [`KataGo`]: KataGo's search control (Wu, *Accelerating Self-Play Learning in Go*, 2019,
//!   and KataGo's self-play code) around either of them: opening moves sampled from the
//!   network's policy (trajectory initialisation), and branches (forks and side positions)
//!   queued as starts of the next iteration's games (`[start.katago]`, docs/go-exploit.md).
//!
//! Determinism: a start policy's state is a pure function of the stored games it has been
//! shown (in iteration and game order) and of named streams of the run seed; during an
//! iteration it is frozen (every game of iteration i sees the archive built from iterations
//! before i), so games can be played in parallel and resume, branch and verify rebuild it
//! from the store. See docs/learners.md.

pub mod go_exploit;
pub mod initial;
pub mod katago;

use serde::{Deserialize, Serialize};

use crate::error::SettingError;
use crate::game::Game;
use crate::game_record::GameRecord;
use crate::search::Evaluator;

pub(crate) use go_exploit::GoExploit;
pub(crate) use initial::Initial;
pub(crate) use katago::KataGo;
pub use katago::KataGoSettings;

/// A start policy (see the module docs).
pub trait StartPolicy<G: Game>: Send + Sync {
    /// The start of self-play game `game` of iteration `iteration`: `None` for the game's
    /// start state. Draws come from named streams of `seed` (the run's seed). `eval` is the
    /// model that will play the iteration (asked only by policies that
    /// [`StartPolicy::wants_model`]).
    fn start(
        &self,
        g: &G,
        seed: u64,
        iteration: u32,
        game: u32,
        eval: &mut dyn Evaluator<G>,
    ) -> Option<G::State>;

    /// Whether [`StartPolicy::start`] and [`StartPolicy::observe`] ask `eval` (KataGo's
    /// search control). The driver then rebuilds the policy with the model each stored game
    /// was played with; otherwise it may pass an evaluator that knows nothing.
    fn wants_model(&self) -> bool {
        false
    }

    /// Whether [`StartPolicy::observe`] needs the decision states of the game's search trees
    /// (Go-Exploit's search-state archives). The driver then collects them while playing, and
    /// re-plays the searches of stored games when it rebuilds the policy (docs/go-exploit.md
    /// measures that cost).
    fn wants_tree_states(&self) -> bool {
        false
    }

    /// Takes in stored self-play game `game` of iteration `iteration`: its record, its
    /// states (start first) and, when [`StartPolicy::wants_tree_states`], the decision states
    /// of its search trees in search order (else empty). Called for every game of an
    /// iteration, in game order, after all of them are played; `eval` is the model that
    /// played them.
    #[allow(clippy::too_many_arguments)]
    fn observe(
        &mut self,
        g: &G,
        seed: u64,
        iteration: u32,
        game: u32,
        record: &GameRecord,
        states: &[G::State],
        tree: &[G::State],
        eval: &mut dyn Evaluator<G>,
    );
}

/// Which start policy (`[start] policy = ...`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StartKind {
    /// The game's start (AlphaZero).
    #[default]
    Initial,
    /// Go-Exploit.
    GoExploit,
}

/// Go-Exploit's archive (`[start] archive = ...`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveKind {
    /// Every non-terminal decision state visited in self-play is appended (unbounded).
    #[default]
    VisitedExpanding,
    /// A ring of the `archive_size` most recently visited decision states.
    VisitedCircular,
    /// Decision states of the search trees of games started at the game's start, kept by
    /// reservoir sampling (`archive_size` of them).
    SearchReservoir,
    /// The same states, a ring of the `archive_size` most recent.
    SearchCircular,
}

impl ArchiveKind {
    pub const NAMES: &'static str =
        "visited-expanding, visited-circular, search-reservoir, search-circular";

    /// Whether the archive holds search-tree states (else visited states).
    pub(crate) fn search_states(self) -> bool {
        matches!(
            self,
            ArchiveKind::SearchReservoir | ArchiveKind::SearchCircular
        )
    }
}

/// The `[start]` table of a run spec. Defaults: the game's start; for Go-Exploit the paper's
/// best Connect Four values (lambda = 0.1, so `archive_prob` = 0.9; |A| = 10^6).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StartSettings {
    pub policy: StartKind,
    pub archive: ArchiveKind,
    /// Probability of starting from an archived state (the paper's 1 - lambda).
    pub archive_prob: f64,
    /// Capacity of circular and reservoir archives.
    pub archive_size: u32,
    /// KataGo's search control around the policy (`[start.katago]`; absent: none). Left out
    /// of the stored settings when absent, so runs stored before it keep their hashes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub katago: Option<KataGoSettings>,
}

impl Default for StartSettings {
    fn default() -> StartSettings {
        StartSettings {
            policy: StartKind::Initial,
            archive: ArchiveKind::VisitedExpanding,
            archive_prob: 0.9,
            archive_size: 1_000_000,
            katago: None,
        }
    }
}

impl StartSettings {
    /// Checks the ranges; errors name the key.
    pub(crate) fn validate(&self) -> Result<(), SettingError> {
        if !(0.0..=1.0).contains(&self.archive_prob) {
            return Err(SettingError::new(
                "start.archive_prob",
                self.archive_prob,
                "a number in [0, 1] (the paper's 1 - lambda; it uses 0.9)",
            ));
        }
        if self.archive_size == 0 {
            return Err(SettingError::new(
                "start.archive_size",
                0,
                "an integer >= 1",
            ));
        }
        if let Some(k) = &self.katago {
            k.validate()?;
        }
        Ok(())
    }

    /// The policy these settings describe, empty (before any game).
    pub fn policy<G: Game>(&self, g: &G) -> Box<dyn StartPolicy<G>> {
        let inner: Box<dyn StartPolicy<G>> = match self.policy {
            StartKind::Initial => Box::new(Initial),
            StartKind::GoExploit => Box::new(GoExploit::new(g, *self)),
        };
        match self.katago {
            Some(k) => Box::new(KataGo::new(k, inner)),
            None => inner,
        }
    }
}
