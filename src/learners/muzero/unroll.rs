//! MuZero's training samples: a stored game's decisions, each with the K actions that
//! followed it and the targets of the K + 1 unrolled steps (docs/muzero.md, "The unroll").
//!
//! - **The player's actions only.** The unroll follows the record's decisions; its chance
//!   steps (EWN's die, CDC's reveals) are not actions of the model: the dynamics maps
//!   (s^k, a) to the state of the *next decision*, whatever chance did in between, as the
//!   original MuZero would face a stochastic game (the observation after chance is what the
//!   representation sees at the next real decision).
//! - **Sides alternate.** Step k's side to move is the root's mover for even k and the
//!   other player for odd k (the pseudocode's `ActionHistory.to_play` of board games); every
//!   value and reward target is for that side. The learned game (learned.rs) uses the same
//!   convention, so targets and search agree even where a real game would not alternate.
//! - **Value** (the paper's board-game target, Appendix G): the game's final outcome for the
//!   step's side, on the [0, 1] scale, at every step, past the end included.
//! - **Reward**: on the [-1, 1] scale, 2z - 1 for the side that made the game's last move,
//!   on the step that follows it; 0 on every other step (board games have no intermediate
//!   rewards).
//! - **Policy**: the search's visit distribution at a fully searched decision; none (no loss)
//!   at a decision without a full search and past the end.
//! - **Past the end** (absorbing states, the pseudocode's `make_target`): the unroll is
//!   padded to K steps, as muzero-general does, with actions drawn uniformly from the whole
//!   action space (stream `muzero-absorbing(STREAM)` of the record's seed, one draw per
//!   padded action in sample and step order), so that the model learns the end is absorbing
//!   whatever the search tries there.

use crate::game::{Action, Game, Player, Turn};
use crate::game_record::{GameRecord, Step};
use crate::nn::encode::Encoder;
use crate::rng::{stream_fmt, uniform_index};

/// One training sample: the root's planes, the K actions after it and the K + 1 steps'
/// targets.
#[derive(Clone, Debug, PartialEq)]
pub struct MuSample {
    pub(crate) x: Vec<f32>,
    /// a^1..a^K.
    pub(crate) actions: Vec<Action>,
    /// Per step k = 0..=K: the policy target over actions (empty: no policy loss).
    pub(crate) policy: Vec<Vec<(Action, f32)>>,
    /// Per step: the value target on the [0, 1] scale for the step's side.
    pub(crate) value: Vec<f32>,
    /// Per step: the reward target of the transition into it ([-1, 1]; step 0's is 0 and is
    /// not trained).
    pub(crate) reward: Vec<f32>,
    /// Stochastic MuZero: per step k = 1..=K, the encoder's input (the game's planes) of
    /// the observation at step k: the next real decision's state after chance, past the end
    /// the game's final state (empty for MuZero).
    pub(crate) chance: Vec<Vec<f32>>,
    /// Whether the sample is its game's first (the replay buffer counts games by it).
    pub(crate) first: bool,
}

/// A decision of a stored game: its state index, mover, action and policy target.
struct Decision {
    at: usize,
    player: Player,
    action: Action,
    policy: Vec<(Action, f32)>,
    full: bool,
}

/// The decisions of a record in order (`states`: `record.states(g)`).
fn decisions<G: Game>(g: &G, record: &GameRecord, states: &[G::State]) -> Vec<Decision> {
    let mut legal = Vec::new();
    let mut out = Vec::new();
    for (at, (s, step)) in states.iter().zip(&record.steps).enumerate() {
        let (Turn::Player(player), Step::Move { action, search }) = (g.turn(s), step) else {
            continue;
        };
        let (policy, full) = match search {
            Some(st) => {
                g.legal_actions(s, &mut legal);
                let counts = st.target_counts();
                let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
                let pi = legal
                    .iter()
                    .zip(counts)
                    .map(|(&a, &c)| (a, (f64::from(c) / total.max(1) as f64) as f32))
                    .collect();
                (pi, st.full)
            }
            None => (Vec::new(), false),
        };
        out.push(Decision {
            at,
            player,
            action: *action,
            policy,
            full,
        });
    }
    out
}

/// Appends the samples of one stored game: one per fully searched decision, in order;
/// `stochastic`: with the encoder's observations of the steps (Stochastic MuZero).
pub(crate) fn game_samples<G: Game>(
    g: &G,
    enc: &Encoder<G>,
    (k, stochastic): (usize, bool),
    record: &GameRecord,
    states: &[G::State],
    out: &mut Vec<MuSample>,
) {
    let result = record.end.result();
    let ds = decisions(g, record, states);
    // The encoder's input at decision i (its state after the earlier decisions' states),
    // and past the end the final state's after every decision's.
    let observations: Vec<Vec<f32>> = if stochastic {
        let dstates: Vec<G::State> = ds.iter().map(|d| states[d.at]).collect();
        let last = states.last().copied();
        (0..=ds.len())
            .map(|i| {
                let mut x = vec![0.0; enc.planes().len()];
                if let Some(s) = dstates.get(i).copied().or(last) {
                    enc.encode(&s, &dstates[..i], &mut x);
                }
                x
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut absorbing = stream_fmt(
        record.seed,
        format_args!("muzero-absorbing({})", record.stream),
    );
    let mut past: Vec<G::State> = Vec::new();
    let mut first = true;
    for (j, d) in ds.iter().enumerate() {
        if d.full {
            let mut x = vec![0.0; enc.planes().len()];
            enc.encode(&states[d.at], &past, &mut x);
            let mut sample = MuSample {
                x,
                actions: Vec::with_capacity(k),
                policy: Vec::with_capacity(k + 1),
                value: Vec::with_capacity(k + 1),
                reward: Vec::with_capacity(k + 1),
                chance: Vec::new(),
                first,
            };
            if stochastic {
                for step in 1..=k {
                    sample
                        .chance
                        .push(observations[(j + step).min(ds.len())].clone());
                }
            }
            for step in 0..=k {
                let side = if step % 2 == 0 {
                    d.player
                } else {
                    d.player.other()
                };
                let i = j + step;
                sample.value.push(result.score(side) as f32);
                // The transition into this step made the game's last move: its mover (the
                // previous step's side) gets the outcome as reward.
                let last = step > 0 && i == ds.len();
                let r = if last {
                    2.0 * result.score(side.other()) - 1.0
                } else {
                    0.0
                };
                sample.reward.push(r as f32);
                match ds.get(i) {
                    Some(real) => {
                        let pi = if real.full {
                            real.policy.clone()
                        } else {
                            Vec::new()
                        };
                        sample.policy.push(pi);
                        if step < k {
                            sample.actions.push(real.action);
                        }
                    }
                    None => {
                        sample.policy.push(Vec::new());
                        if step < k {
                            let a = uniform_index(&mut absorbing, g.num_actions());
                            sample.actions.push(a as Action);
                        }
                    }
                }
            }
            out.push(sample);
            first = false;
        }
        past.push(states[d.at]);
    }
}
