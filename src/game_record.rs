//! The game record: one played game, content-addressed in the store as `game/v1`.
//!
//! A record holds the game's inputs and everything that happened, enough to re-play it and
//! to train on it: the variant, the seed and stream name of its randomness, who sat in each
//! seat, the start position (the game's start, or a position in the game's notation: search
//! control may start games elsewhere), every step in order (actions with the search's visit
//! counts where a search chose the move, chance outcomes), and how it ended. Counts are kept
//! as integers; the training target pi is derived from them. Its hash (blake3 over the kind
//! tag and the postcard bytes, see [`crate::store`]) is the game's identity, so nothing that
//! varies between machines or thread counts enters it.

use serde::{Deserialize, Serialize};

use crate::game::{Action, Game, GameResult, Outcome, Player, Turn};
use crate::store::{ObjectHash, Record};

/// One played game.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GameRecord {
    /// Canonical variant name (every rule parameter included).
    pub variant: String,
    /// The seed the game's stream derives from (a match seed or a run seed).
    pub seed: u64,
    /// The stream name, e.g. `match(17)` or `self-play(3,17)`.
    pub stream: String,
    /// What sat in each seat, player 0 first: canonical player specs for match games (which
    /// [`crate::players::PlayerSpec`] parses back), or a tag such as `self-play` for games
    /// whose players live elsewhere (the run's iteration).
    pub players: [String; 2],
    /// `None`: the game's start state; else a position in the game's notation (draw
    /// counters fresh).
    pub start: Option<String>,
    pub steps: Vec<Step>,
    pub end: GameEnd,
}

/// One step of a game.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Step {
    /// A decision; `search` holds the search statistics when a search chose the move.
    Move {
        action: Action,
        search: Option<SearchStats>,
    },
    /// A chance outcome.
    Chance { outcome: Outcome },
}

/// What a search saw at the root when it chose a move.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchStats {
    /// N(s0, a) over the legal actions, ascending by action.
    pub visits: Vec<u32>,
    /// The training target counts when they differ from `visits` (policy target pruning).
    pub target: Option<Vec<u32>>,
    /// A full search (playout cap randomisation: only full searches are training targets).
    pub full: bool,
}

impl SearchStats {
    /// The counts the training target pi derives from.
    pub(crate) fn target_counts(&self) -> &[u32] {
        self.target.as_deref().unwrap_or(&self.visits)
    }
}

/// How a game ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GameEnd {
    /// The rules ended it (the last state is terminal).
    Finished(GameResult),
    /// A player was declared the winner before the end.
    Adjudicated {
        winner: Player,
        reason: Adjudication,
    },
    /// Stopped before the end by a self-play rule, its result decided by it (the last state
    /// is a decision state). Written last, so the encodings of the variants above are as
    /// before it existed.
    Stopped {
        result: GameResult,
        reason: Adjudication,
    },
}

/// Why a game was adjudicated.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Adjudication {
    /// The optimal player stood in a position of value 1 (a certain win) and was declared
    /// the winner at once (docs/solver.md).
    CertainWin,
    /// Tabula rasa's soft move limit (Liu et al.): no progress into the opponent's base for
    /// the limit's plies; the result by the forward-distance difference.
    SoftLimit,
}

/// For people: `player 0 wins`, `draw`, or `player 1 declared the winner (a certain win)`.
impl std::fmt::Display for GameEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GameEnd::Finished(r) => write!(f, "{r}"),
            GameEnd::Adjudicated { winner, reason } => {
                write!(f, "{winner} declared the winner ({reason})")
            }
            GameEnd::Stopped { result, reason } => write!(f, "{result} ({reason})"),
        }
    }
}

impl std::fmt::Display for Adjudication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Adjudication::CertainWin => f.write_str("the optimal player's certain win"),
            Adjudication::SoftLimit => f.write_str("the soft move limit, by forward distance"),
        }
    }
}

impl GameEnd {
    pub fn result(&self) -> GameResult {
        match *self {
            GameEnd::Finished(r) => r,
            GameEnd::Adjudicated { winner, .. } => GameResult::Win(winner),
            GameEnd::Stopped { result, .. } => result,
        }
    }
}

impl Record for GameRecord {
    const KIND: &'static str = "game/v1";
}

/// What is wrong with a record that does not re-play.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("game record of {variant}, step {step}: {reason}")]
pub struct ReplayError {
    pub variant: String,
    pub step: usize,
    pub reason: String,
}

/// The iteration and game index a self-play game's stream names (`self-play(3,17)`): where
/// its run lists it (`Store::game_owner_at` looks it up there by key).
pub(crate) fn self_play_place(stream: &str) -> Option<(u32, u32)> {
    let inner = stream.strip_prefix("self-play(")?.strip_suffix(')')?;
    let (i, g) = inner.split_once(',')?;
    Some((i.trim().parse().ok()?, g.trim().parse().ok()?))
}

impl GameRecord {
    /// The record's address in the store (what [`crate::store::Store::put`] returns).
    pub fn hash(&self) -> ObjectHash {
        // Encoding into memory cannot fail for this type (no maps with non-string keys).
        let bytes = postcard::to_stdvec(self).unwrap_or_default();
        ObjectHash::of(Self::KIND, &bytes)
    }

    /// Decisions played (chance steps not counted).
    pub fn plies(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Move { .. }))
            .count()
    }

    /// The start state of the record in game `g`.
    pub(crate) fn start_state<G: Game>(&self, g: &G) -> Result<G::State, ReplayError> {
        match &self.start {
            None => Ok(g.initial_state()),
            Some(text) => g
                .parse_notation(text)
                .map_err(|e| self.error(0, e.to_string())),
        }
    }

    /// Re-applies the recorded steps, checking that every step fits its state (legal action,
    /// listed outcome, visit counts over the legal actions) and that the end matches.
    /// Returns the states, start first.
    pub fn states<G: Game>(&self, g: &G) -> Result<Vec<G::State>, ReplayError> {
        if g.variant() != self.variant {
            return Err(self.error(
                0,
                format!("the game is {}, not {}", g.variant(), self.variant),
            ));
        }
        let mut s = self.start_state(g)?;
        let mut states = vec![s];
        let mut actions = Vec::new();
        let mut outcomes = Vec::new();
        for (i, step) in self.steps.iter().enumerate() {
            match (step, g.turn(&s)) {
                (Step::Move { action, search }, Turn::Player(_)) => {
                    g.legal_actions(&s, &mut actions);
                    if actions.binary_search(action).is_err() {
                        return Err(self.error(i, format!("action {action} is not legal")));
                    }
                    if let Some(st) = search {
                        let n = actions.len();
                        if st.visits.len() != n || st.target.as_ref().is_some_and(|t| t.len() != n)
                        {
                            return Err(self.error(
                                i,
                                format!("visit counts are not over the {n} legal actions"),
                            ));
                        }
                    }
                    s = g.apply(&s, *action);
                }
                (Step::Chance { outcome }, Turn::Chance) => {
                    g.chance_outcomes(&s, &mut outcomes);
                    if !outcomes.iter().any(|o| o.outcome == *outcome) {
                        return Err(self.error(i, format!("outcome {outcome} is not listed")));
                    }
                    s = g.apply_chance(&s, *outcome);
                }
                (step, turn) => {
                    return Err(self.error(
                        i,
                        format!("{step:?} does not fit a state whose turn is: {turn}"),
                    ));
                }
            }
            states.push(s);
        }
        match (self.end, g.turn(&s)) {
            (GameEnd::Finished(r), Turn::Terminal(t)) if r == t => Ok(states),
            (GameEnd::Adjudicated { winner, .. }, Turn::Player(p)) if p == winner => Ok(states),
            (GameEnd::Stopped { .. }, Turn::Player(_)) => Ok(states),
            (end, turn) => Err(self.error(
                self.steps.len(),
                format!("the record ends `{end}` but in its last state it is {turn}"),
            )),
        }
    }

    fn error(&self, step: usize, reason: String) -> ReplayError {
        ReplayError {
            variant: self.variant.clone(),
            step,
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> GameRecord {
        GameRecord {
            variant: "ewn:3x3x3".into(),
            seed: 7,
            stream: "match(0)".into(),
            players: ["random".into(), "mcts:sims=10".into()],
            start: None,
            steps: vec![
                Step::Chance { outcome: 3 },
                Step::Move {
                    action: 2,
                    search: Some(SearchStats {
                        visits: vec![3, 7],
                        target: Some(vec![0, 7]),
                        full: true,
                    }),
                },
                Step::Move {
                    action: 0,
                    search: None,
                },
            ],
            end: GameEnd::Adjudicated {
                winner: Player::P1,
                reason: Adjudication::CertainWin,
            },
        }
    }

    /// The encoding is a contract: this hash changes only with a new record version.
    #[test]
    fn game_record_hash_is_pinned() {
        let r = sample();
        let bytes = postcard::to_stdvec(&r).unwrap();
        assert_eq!(postcard::from_bytes::<GameRecord>(&bytes).unwrap(), r);
        assert_eq!(
            r.hash().to_hex(),
            "1641a92e41df2d6d56a9923b20ce68d488a4abedc2b8b46463fc7f5d05e861e2"
        );
        assert_eq!(r.plies(), 2);
        assert_eq!(r.end.result(), GameResult::Win(Player::P1));
    }
}
