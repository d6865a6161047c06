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
pub mod mixed;

use serde::{Deserialize, Serialize};

use crate::error::SettingError;
use crate::game::Game;
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::rng::GameSlot;
use crate::search::Evaluator;

pub(crate) use go_exploit::GoExploit;
pub(crate) use initial::Initial;
pub(crate) use katago::KataGo;
pub use katago::KataGoSettings;
pub(crate) use mixed::Mixed;

/// A start policy (see the module docs).
pub trait StartPolicy<G: Game>: Send + Sync {
    /// The start of self-play game `slot`: `None` for the game's start state. Draws come
    /// from the slot's named streams (of the run's seed). `eval` is the
    /// model that will play the iteration (asked only by policies that
    /// [`StartPolicy::wants_model`]).
    fn start(&self, g: &G, slot: GameSlot, eval: &mut dyn Evaluator<G>) -> Option<G::State>;

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

    /// Takes in stored self-play game `slot`: its record, its
    /// states (start first) and, when [`StartPolicy::wants_tree_states`], the decision states
    /// of its search trees in search order (else empty). Called for every game of an
    /// iteration, in game order, after all of them are played; `eval` is the model that
    /// played them. By default nothing is taken in: a policy whose starts do not depend on
    /// the games played (the game's start, the mixed starts) keeps no state.
    fn observe(
        &mut self,
        g: &G,
        slot: GameSlot,
        record: &GameRecord,
        states: &[G::State],
        tree: &[G::State],
        eval: &mut dyn Evaluator<G>,
    ) {
        let _ = (g, slot, record, states, tree, eval);
    }
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
    /// Liu et al.'s mix of random placements, random openings and the game's start.
    Mixed,
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

/// The mixed policy's default weights (Liu et al.'s 5:3:2).
const MIXED_WEIGHTS: [f64; 3] = [5.0, 3.0, 2.0];
/// The mixed policy's default random moves per player (Liu et al.'s 3).
const OPENING_MOVES: u32 = 3;

fn is_mixed_weights(w: &[f64; 3]) -> bool {
    *w == MIXED_WEIGHTS
}

fn is_opening_moves(m: &u32) -> bool {
    *m == OPENING_MOVES
}

/// The `[start]` table of a run spec. Defaults: the game's start; for Go-Exploit the paper's
/// best Connect Four values (lambda = 0.1, so `archive_prob` = 0.9; |A| = 10^6); for the
/// mixed policy Liu et al.'s (5:3:2, 3 moves per player).
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
    /// Mixed: the weights of random placements, random openings and the game's start. This
    /// key and the next are left out of the stored settings at their defaults, so runs
    /// stored before them keep their hashes.
    #[serde(skip_serializing_if = "is_mixed_weights")]
    pub weights: [f64; 3],
    /// Mixed: uniform random moves per player of a random opening.
    #[serde(skip_serializing_if = "is_opening_moves")]
    pub opening_moves: u32,
}

impl Default for StartSettings {
    fn default() -> StartSettings {
        StartSettings {
            policy: StartKind::Initial,
            archive: ArchiveKind::VisitedExpanding,
            archive_prob: 0.9,
            archive_size: 1_000_000,
            katago: None,
            weights: MIXED_WEIGHTS,
            opening_moves: OPENING_MOVES,
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
        let w = self.weights;
        if w.iter().any(|x| !(x.is_finite() && *x >= 0.0)) || w.iter().all(|&x| x == 0.0) {
            return Err(SettingError::new(
                "start.weights",
                format!("{w:?}"),
                "three finite numbers >= 0, not all 0: random placements, random openings, \
                 the game's start (Liu et al.: [5, 3, 2])",
            ));
        }
        if self.opening_moves > 1000 {
            return Err(SettingError::new(
                "start.opening_moves",
                self.opening_moves,
                "an integer from 0 to 1000 (random moves per player; Liu et al.: 3)",
            ));
        }
        Ok(())
    }

    /// Checks what depends on the game: the mixed policy's random placements need the
    /// game's `random_placement` ability (errors name the game).
    pub(crate) fn validate_game<G: Abilities>(&self, g: &G) -> Result<(), SettingError> {
        if self.policy == StartKind::Mixed
            && self.weights[0] > 0.0
            && G::ABILITIES.random_placement.is_none()
        {
            return Err(SettingError::new(
                "start.weights",
                format!("{:?}", self.weights),
                format!(
                    "a first weight (random placements) of 0 for {}: the game has no random \
                     placements ({} them)",
                    g.variant(),
                    crate::games::families_with_text(crate::games::Ability::RandomPlacement)
                ),
            ));
        }
        Ok(())
    }

    /// The policy these settings describe, empty (before any game).
    pub fn policy<G: Abilities>(&self, g: &G) -> Box<dyn StartPolicy<G>> {
        let inner: Box<dyn StartPolicy<G>> = match self.policy {
            StartKind::Initial => Box::new(Initial),
            StartKind::GoExploit => Box::new(GoExploit::new(g, *self)),
            StartKind::Mixed => Box::new(Mixed {
                weights: self.weights,
                opening_moves: self.opening_moves,
            }),
        };
        match self.katago {
            Some(k) => Box::new(KataGo::new(k, inner)),
            None => inner,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mixed(weights: [f64; 3]) -> StartSettings {
        StartSettings {
            policy: StartKind::Mixed,
            weights,
            ..StartSettings::default()
        }
    }

    /// The mixed policy's keys: ranges checked with the key named; placements refused on a
    /// game without them, naming the game; left out of the stored settings at their
    /// defaults (earlier runs keep their hashes).
    #[test]
    fn mixed_settings_are_checked_and_left_out_at_their_defaults() {
        assert!(mixed([5.0, 3.0, 2.0]).validate().is_ok());
        for w in [[0.0, 0.0, 0.0], [-1.0, 3.0, 2.0], [f64::NAN, 1.0, 1.0]] {
            let e = mixed(w).validate().unwrap_err().to_string();
            assert!(
                e.contains("start.weights") && e.contains("[5, 3, 2]"),
                "{e}"
            );
        }
        let e = StartSettings {
            opening_moves: 5000,
            ..mixed([1.0, 1.0, 1.0])
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("start.opening_moves"), "{e}");
        let ewn = crate::games::Ewn::new(3, 3, 3).unwrap();
        let e = mixed([5.0, 3.0, 2.0])
            .validate_game(&ewn)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("start.weights") && e.contains("ewn:3x3x3"),
            "{e}"
        );
        assert!(mixed([0.0, 3.0, 2.0]).validate_game(&ewn).is_ok());
        let checkers: crate::games::AnyGame = "checkers:5x5-3".parse().unwrap();
        let crate::games::AnyGame::Checkers(checkers) = checkers else {
            unreachable!()
        };
        assert!(mixed([5.0, 3.0, 2.0]).validate_game(&checkers).is_ok());
        let json = serde_json::to_value(mixed([5.0, 3.0, 2.0])).unwrap();
        assert_eq!(json["policy"], "mixed");
        assert!(json.get("weights").is_none() && json.get("opening_moves").is_none());
        let json = serde_json::to_value(mixed([1.0, 0.0, 1.0])).unwrap();
        assert_eq!(json["weights"], serde_json::json!([1.0, 0.0, 1.0]));
    }
}
