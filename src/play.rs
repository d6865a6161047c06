//! Generic helpers to play a game: the one game loop ([`play_loop`]) that matches, self-play
//! and evaluation games all run, the optimal player's decision ([`optimal_decision`]), chance
//! sampling and uniformly random playouts.
//!
//! They take caller-owned scratch buffers so loops over many playouts do not allocate.

use crate::game::{Action, ChanceOutcome, Game, GameResult, Player, Turn};
use crate::game_record::{Adjudication, GameEnd, SearchStats, Step};
use crate::rng::{StreamRng, sample_outcome, uniform_index};
use crate::solver::{OPTIMAL_TOLERANCE, Solution};

/// A player's decision.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    Play {
        action: Action,
        /// The search's root statistics when a search chose the move.
        search: Option<SearchStats>,
    },
    /// Declared the winner at once (the optimal player in a position of value 1).
    ClaimWin,
    /// The game stops here with this result (a self-play rule: tabula rasa's soft limit).
    Stop {
        result: GameResult,
        reason: Adjudication,
    },
}

/// A game from the start between `seat` and its opponent, neither recorded: `choose(state,
/// past, player, ply, rng)` picks each move (`past` as in [`play_loop`]); returns `seat`'s
/// score (win 1, draw 0.5), 0 when a choice fails (impossible from a decision state for the
/// searches that use this). The
/// evaluation matches (against MCTS-Solver, the greedy player, gating) play through it.
pub(crate) fn seat_score<G: Game, E>(
    g: &G,
    rng: &mut StreamRng,
    seat: Player,
    mut choose: impl FnMut(&G::State, &[G::State], Player, u32, &mut StreamRng) -> Result<Action, E>,
) -> f64 {
    let mut outcomes = Vec::new();
    let end = play_loop(
        g,
        g.initial_state(),
        rng,
        &mut outcomes,
        None,
        |s, past, p, ply, rng| {
            Ok::<_, E>(Decision::Play {
                action: choose(s, past, p, ply, rng)?,
                search: None,
            })
        },
    );
    end.map_or(0.0, |e| e.result().score(seat))
}

/// The one game loop. From `s` to the end: chance outcomes drawn from `rng` by their
/// probabilities, decisions from `decide(state, past, player to move, ply, rng)` (`past`: the
/// decision states of this game before `state`, oldest first, from `s` on: a network whose
/// input has history reads them, docs/network.md "Inputs"; `ply`: decisions made so far in
/// this game). Every step is appended to `steps` when given. A claimed win ends
/// the game adjudicated. Draws happen in a fixed order (chance, then the decider's), so a game
/// is a pure function of its inputs and `rng`.
pub fn play_loop<G: Game, E>(
    g: &G,
    mut s: G::State,
    rng: &mut StreamRng,
    outcomes: &mut Vec<ChanceOutcome>,
    mut steps: Option<&mut Vec<Step>>,
    mut decide: impl FnMut(&G::State, &[G::State], Player, u32, &mut StreamRng) -> Result<Decision, E>,
) -> Result<GameEnd, E> {
    let mut ply = 0u32;
    let mut past = Vec::new();
    loop {
        match g.turn(&s) {
            Turn::Terminal(r) => return Ok(GameEnd::Finished(r)),
            Turn::Chance => {
                g.chance_outcomes(&s, outcomes);
                let o = outcomes[sample_outcome(rng, outcomes)].outcome;
                if let Some(st) = steps.as_deref_mut() {
                    st.push(Step::Chance { outcome: o });
                }
                s = g.apply_chance(&s, o);
            }
            Turn::Player(p) => match decide(&s, &past, p, ply, rng)? {
                Decision::ClaimWin => {
                    return Ok(GameEnd::Adjudicated {
                        winner: p,
                        reason: Adjudication::CertainWin,
                    });
                }
                Decision::Stop { result, reason } => {
                    return Ok(GameEnd::Stopped { result, reason });
                }
                Decision::Play { action, search } => {
                    if let Some(st) = steps.as_deref_mut() {
                        st.push(Step::Move { action, search });
                    }
                    past.push(s);
                    s = g.apply(&s, action);
                    ply += 1;
                }
            },
        }
    }
}

/// The optimal player's decision at decision state `s`: it claims the win where the value
/// is a certain win, else plays an optimal action (ties broken from `rng`). `None` when the
/// solution has no value for `s`.
pub(crate) fn optimal_decision<G: Game>(
    g: &G,
    sol: &Solution<G::Key>,
    s: &G::State,
    rng: &mut StreamRng,
) -> Option<Decision> {
    let v = sol.value_of_key(&g.key(s))?;
    if v >= 1.0 - OPTIMAL_TOLERANCE {
        return Some(Decision::ClaimWin);
    }
    crate::solver::optimal_action(g, sol, s, rng).map(|action| Decision::Play {
        action,
        search: None,
    })
}

/// Reusable buffers for playing a game.
#[derive(Debug, Default)]
pub struct Scratch {
    pub actions: Vec<Action>,
    pub outcomes: Vec<ChanceOutcome>,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            actions: Vec::with_capacity(64),
            outcomes: Vec::with_capacity(64),
        }
    }
}

/// Samples an outcome of the chance state `s` by its probability and applies it.
pub(crate) fn step_chance<G: Game>(
    g: &G,
    s: &G::State,
    rng: &mut StreamRng,
    scratch: &mut Scratch,
) -> G::State {
    g.chance_outcomes(s, &mut scratch.outcomes);
    let i = sample_outcome(rng, &scratch.outcomes);
    g.apply_chance(s, scratch.outcomes[i].outcome)
}

/// Plays uniformly random actions (and chance by its probabilities) from `s` to the end.
/// Returns the result and the number of plies (decisions) played. A game's own loop
/// ([`Game::fused_playout`]) where it has one, which draws what [`generic_playout`] draws.
#[inline]
pub fn random_playout<G: Game>(
    g: &G,
    s: G::State,
    rng: &mut StreamRng,
    scratch: &mut Scratch,
) -> (GameResult, u32) {
    match g.fused_playout(&s, rng) {
        Some(r) => r,
        None => generic_playout(g, s, rng, scratch),
    }
}

/// [`random_playout`]'s generic loop: chance by [`sample_outcome`] over the outcomes, a
/// decision by [`Game::random_action`].
pub fn generic_playout<G: Game>(
    g: &G,
    mut s: G::State,
    rng: &mut StreamRng,
    scratch: &mut Scratch,
) -> (GameResult, u32) {
    let mut plies = 0;
    loop {
        match g.turn(&s) {
            Turn::Terminal(r) => return (r, plies),
            Turn::Chance => s = step_chance(g, &s, rng, scratch),
            Turn::Player(_) => {
                let a = g.random_action(&s, &mut scratch.actions, &mut |n| uniform_index(rng, n));
                g.apply_in_place(&mut s, a);
                plies += 1;
            }
        }
    }
}
