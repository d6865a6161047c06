//! Gating (`[learner.network.gate]`): the trained model M replaces the best model M* only
//! when it beats it, and self-play uses M* (AlphaGo Zero's evaluator; Liu et al.'s stage 2:
//! M* is replaced when M wins more than 55% of 24 games). docs/network.md, "Gating".
//!
//! The match: `games` games, M first in even games, both sides searching with the run's
//! search as evaluation plays it (no root noise, the most visited move) at `simulations`
//! (absent: the run's). Each game starts after `opening_moves` uniformly random moves (the
//! paper leaves the gating games' openings open; without them two deterministic players
//! would repeat two games; its self-play starts with 3 random moves a player, the default
//! here). Game n at iteration i draws from the stream `gate(i,n)` of the model seed, and the
//! scores are reduced in game order, so the decision is the same on any number of threads.

use crate::par;
use serde::{Deserialize, Serialize};

use crate::error::SettingError;
use crate::game::{Game, Player};
use crate::play::seat_score;
use crate::rng::{GameSlot, uniform_index};
use crate::search::{Evaluator, Search, SearchConfig, SearchError};

/// `[learner.network.gate]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GateSettings {
    /// Games of M against M* after each iteration's training (Liu et al.: 24).
    pub games: u32,
    /// M replaces M* when its score (draws half) is above this (Liu et al.: 0.55).
    pub threshold: f64,
    /// Simulations a move in the gating games (absent: the run's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulations: Option<u32>,
    /// Uniformly random moves before the searches take over (3 a player).
    pub opening_moves: u32,
}

impl Default for GateSettings {
    fn default() -> GateSettings {
        GateSettings {
            games: 24,
            threshold: 0.55,
            simulations: None,
            opening_moves: 6,
        }
    }
}

fn bad(key: &str, value: impl ToString, allowed: &str) -> SettingError {
    SettingError::new(format!("learner.network.gate.{key}"), value, allowed)
}

impl GateSettings {
    pub(crate) fn validate(&self) -> Result<(), SettingError> {
        if !(1..=10_000).contains(&self.games) {
            return Err(bad("games", self.games, "an integer from 1 to 10000"));
        }
        if !(self.threshold.is_finite() && (0.0..1.0).contains(&self.threshold)) {
            return Err(bad(
                "threshold",
                self.threshold,
                "a number from 0 to below 1",
            ));
        }
        if let Some(n) = self.simulations
            && !(1..=1_000_000).contains(&n)
        {
            return Err(bad(
                "simulations",
                n,
                "an integer from 1 to 1000000 (absent: the run's simulations)",
            ));
        }
        if self.opening_moves > 1000 {
            return Err(bad(
                "opening_moves",
                self.opening_moves,
                "an integer from 0 to 1000",
            ));
        }
        Ok(())
    }
}

/// The outcome of one gating match.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    /// M's score against M* (win 1, draw 0.5).
    pub score: f64,
    /// Whether M replaced M*.
    pub(crate) promoted: bool,
}

/// M's score against M* after iteration `iteration`: `candidate` and `best` make their leaf
/// evaluators (one per worker); `search` is the evaluation search (no noise, most visited).
pub(crate) fn gate_score<G: Game, E: Evaluator<G>, F: Evaluator<G>>(
    g: &G,
    settings: &GateSettings,
    search: SearchConfig,
    seed: u64,
    iteration: u32,
    candidate: impl Fn() -> E + Sync + Send,
    best: impl Fn() -> F + Sync + Send,
) -> f64 {
    let mut cfg = search;
    if let Some(n) = settings.simulations {
        cfg.simulations = n.into();
    }
    let scores: Vec<f64> = par::map_init(
        settings.games as usize,
        1,
        || (Search::<G>::new(cfg).ok(), candidate(), best()),
        |(search, m, b), n| match search {
            Some(search) => {
                let slot = GameSlot::new(seed, iteration, n as u32);
                gate_game(g, settings, search, m, b, slot)
            }
            None => 0.0,
        },
    );
    scores.iter().sum::<f64>() / f64::from(settings.games.max(1))
}

/// One gating game; returns M's score (a search error, impossible from a decision state,
/// scores 0).
fn gate_game<G: Game, E: Evaluator<G>, F: Evaluator<G>>(
    g: &G,
    settings: &GateSettings,
    search: &mut Search<G>,
    m: &mut E,
    best: &mut F,
    slot: GameSlot,
) -> f64 {
    let n = slot.game;
    let mut rng = slot.stream("gate");
    // First in even games.
    let seat = Player::from_index(n as usize % 2);
    let mut legal = Vec::new();
    seat_score(g, &mut rng, seat, |s, past, p, ply, rng| {
        if ply < settings.opening_moves {
            g.legal_actions(s, &mut legal);
            return Ok::<_, SearchError>(legal[uniform_index(rng, legal.len())]);
        }
        Ok(match p == seat {
            true => search.run(g, s, past, ply, m, rng)?.action,
            false => search.run(g, s, past, ply, best, rng)?.action,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{Rollout, Uniform};

    /// A strong side beats a weak one through the gate, the score does not depend on the
    /// thread count, and the two seats are alternated (the same player on both sides scores
    /// exactly its share of first-player wins, not 0 or 1).
    #[test]
    fn gate_scores_are_deterministic_and_favour_the_stronger_side() {
        let g = crate::games::ConnectFour::new(5, 4).unwrap();
        let settings = GateSettings {
            games: 12,
            simulations: Some(64),
            opening_moves: 2,
            ..GateSettings::default()
        };
        assert!(settings.validate().is_ok());
        let search = SearchConfig::default().as_evaluation();
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| gate_score(&g, &settings, search, 1, 3, || Rollout::new(8), || Uniform))
        };
        let strong = run(1);
        assert_eq!(strong, run(2));
        let weak = gate_score(&g, &settings, search, 1, 3, || Uniform, || Rollout::new(8));
        assert!(strong > 0.6 && weak < 0.4, "{strong} {weak}");
        let bad = GateSettings {
            threshold: 1.0,
            ..GateSettings::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("learner.network.gate.threshold"), "{e}");
    }
}
