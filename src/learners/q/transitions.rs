//! Q-learning's training samples: the transitions (S_t, a_t, R_t, S_{t+1}) of the learner's
//! own moves in a stored self-play game (Liu et al., "Q-Learning": "for every move the
//! training agent made, a tuple of (S_t, a_t, R_t, S_{t+1}) is collected"), a pure function
//! of the record.
//!
//! - The learner's seats are the record's seats tagged `self-play`
//!   ([`crate::selfplay::learner_seats`]); the opponent's moves are the environment.
//! - S_{t+1} is the learner's next decision state (after the opponent's reply), or none when
//!   the game ended first (a terminal transition: no bootstrap).
//! - R_t: with the shaped reward (the paper's), `row_reward` times the rows the move
//!   advances (negative backward, [`crate::games::Abilities::rows_advanced`]); a terminal
//!   transition adds `win_reward` or `loss_reward` by the game's result for the learner (0
//!   for a draw, the move limit's end included). With the outcome reward only the terminal
//!   term.
//! - With a network whose input reads the game's history (docs/network.md, "Inputs"), each
//!   transition keeps the last decision states before S_t and before S_{t+1} that the input
//!   reads (`depth`), the record's own, as the self-play search saw them.

use super::{QSettings, RewardKind};
use crate::game::{Action, Game, Turn};
use crate::game_record::{GameRecord, Step};
use crate::games::Abilities;
use crate::selfplay::learner_seats;

/// One transition of the learner's.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition<S> {
    pub state: S,
    pub action: Action,
    pub(crate) reward: f64,
    /// The learner's next decision state and its legal actions, ascending (`None`: the game
    /// ended before it).
    pub next: Option<(S, Vec<Action>)>,
    /// The last `depth` decision states of the game before `state`, and before `next`'s
    /// state, oldest first (empty for a position-only input).
    pub past: Vec<S>,
    pub next_past: Vec<S>,
}

/// The learner's decisions in `record`: (index into `states`, action), in move order.
fn learner_moves<G: Game>(
    g: &G,
    record: &GameRecord,
    states: &[G::State],
) -> Vec<(usize, crate::game::Player, Action)> {
    let seats = learner_seats(record);
    let mut out = Vec::new();
    for (i, (s, step)) in states.iter().zip(&record.steps).enumerate() {
        if let (Turn::Player(p), Step::Move { action, .. }) = (g.turn(s), step)
            && seats[p.index()]
        {
            out.push((i, p, *action));
        }
    }
    out
}

/// Appends the learner's transitions of `record` (states: `record.states(g)`) to `out`, in
/// move order, each with the last `depth` decision states before its states.
pub(crate) fn transitions<G: Abilities>(
    g: &G,
    q: &QSettings,
    record: &GameRecord,
    states: &[G::State],
    depth: usize,
    out: &mut Vec<Transition<G::State>>,
) {
    let moves = learner_moves(g, record, states);
    // Every decision state's index into `states`, in order: the past of states[i] is the
    // decision states before index i.
    let decisions: Vec<usize> = (0..states.len().min(record.steps.len()))
        .filter(|&i| matches!(g.turn(&states[i]), Turn::Player(_)))
        .collect();
    let past_of = |i: usize| -> Vec<G::State> {
        if depth == 0 {
            return Vec::new();
        }
        let k = decisions.partition_point(|&d| d < i);
        decisions[k.saturating_sub(depth)..k]
            .iter()
            .map(|&d| states[d])
            .collect()
    };
    let result = record.end.result();
    for (j, &(i, p, action)) in moves.iter().enumerate() {
        let s = &states[i];
        let mut reward = match q.reward {
            // The game's forward gain is checked at validation (a game without it refuses
            // the shaped reward).
            RewardKind::Shaped => q.row_reward * f64::from(g.rows_advanced(s, action).unwrap_or(0)),
            RewardKind::Outcome => 0.0,
        };
        let next_at = moves[j + 1..].iter().find(|m| m.1 == p).map(|m| m.0);
        let next = next_at.map(|k| {
            let mut legal = Vec::new();
            g.legal_actions(&states[k], &mut legal);
            legal.sort_unstable();
            (states[k], legal)
        });
        if next.is_none() {
            let score = result.score(p);
            reward += if score > 0.5 {
                q.win_reward
            } else if score < 0.5 {
                q.loss_reward
            } else {
                0.0
            };
        }
        out.push(Transition {
            state: *s,
            action,
            reward,
            next,
            past: past_of(i),
            next_past: next_at.map(past_of).unwrap_or_default(),
        });
    }
}
