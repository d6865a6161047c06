//! Self-play with leaves evaluated in batches across games (docs/network.md, "Throughput"):
//! a worker plays several games at once, one PUCT search each, stepped with
//! [`Search::start`] / [`Search::resume`]. Every round, each game's search waits at a leaf;
//! the leaves go to the evaluator in one call ([`Evaluator::evaluate_batch`]) and each search
//! resumes with its own answer.
//!
//! Nothing a game does depends on the others: each has its own search and its stream
//! `self-play(i,g)`, drawn in the order [`super::self_play_game`] draws it (chance,
//! then the search's draws, the evaluator's included at the leaf they belong to); the
//! evaluator gives a position the same bits in any batch (docs/network.md). So a game's
//! record is the same bits whatever the batch width or the games beside it (tests below, and
//! the unchanged heads of the example runs).

use std::time::Instant;

use crate::game::{ChanceOutcome, Game, Turn};
use crate::game_record::{GameEnd, GameRecord, Step as Move};
use crate::play::Decision;
use crate::rng::{GameSlot, StreamRng, sample_outcome};
use crate::search::{Evaluator, Leaf, Search, SearchConfig, SearchError, Step};

use super::game::{SELF_PLAY, self_play_stream};

/// A game to play: its place in the run, where it starts (`None`: the game's start) and
/// whether to keep its search trees' decision states.
#[derive(Clone, Debug)]
pub struct LaneGame<S> {
    pub slot: GameSlot,
    pub start: Option<S>,
    pub tree: bool,
}

/// A finished game: its record and (when asked) its search trees' decision states.
#[derive(Clone, Debug)]
pub struct Played<S> {
    pub record: GameRecord,
    pub tree: Vec<S>,
}

/// One game in progress.
struct Lane<G: Game> {
    /// Its index in the games asked for.
    at: usize,
    slot: GameSlot,
    search: Search<G>,
    rng: StreamRng,
    s: G::State,
    /// The game's decision states before `s`, oldest first (the search's `past`).
    past: Vec<G::State>,
    ply: u32,
    notation: Option<String>,
    steps: Vec<Move>,
    tree: Option<Vec<G::State>>,
    /// The leaf its search waits on, its past (the evaluator's [`Evaluator::past`] last
    /// ones), its legal actions and priors.
    leaf: Option<G::State>,
    leaf_past: Vec<G::State>,
    legal: Vec<crate::game::Action>,
    priors: Vec<f64>,
}

impl<G: Game> Lane<G> {
    /// Game `lg` (at `at` of the games asked for) at its start, with a search from `pool`
    /// (or a new one) and its stream `self-play(iteration,game)`.
    fn open(
        g: &G,
        config: SearchConfig,
        pool: &mut Vec<Search<G>>,
        at: usize,
        lg: &LaneGame<G::State>,
    ) -> Result<Lane<G>, SearchError> {
        let notation = lg.start.as_ref().map(|s| g.notation(s));
        let s = match &notation {
            None => g.initial_state(),
            Some(text) => g
                .parse_notation(text)
                .map_err(|e| SearchError::Start(e.to_string()))?,
        };
        let search = match pool.pop() {
            Some(search) => search,
            None => Search::new(config).map_err(|e| SearchError::Start(e.to_string()))?,
        };
        Ok(Lane {
            at,
            slot: lg.slot,
            search,
            rng: lg.slot.stream("self-play"),
            s,
            past: Vec::new(),
            ply: 0,
            notation,
            steps: Vec::new(),
            tree: lg.tree.then(Vec::new),
            leaf: None,
            leaf_past: Vec::new(),
            legal: Vec::new(),
            priors: Vec::new(),
        })
    }

    /// The finished game's record (and tree states) into its slot of `out`; returns its
    /// search for the next game.
    fn finish(self, g: &G, out: &mut [Option<Played<G::State>>]) -> Search<G> {
        let end = match g.turn(&self.s) {
            Turn::Terminal(r) => GameEnd::Finished(r),
            // `advance` returns only at a terminal state.
            _ => unreachable!("a lane finishes at a terminal state"),
        };
        out[self.at] = Some(Played {
            record: GameRecord {
                variant: g.variant(),
                seed: self.slot.seed,
                stream: self_play_stream(self.slot.iteration, self.slot.game),
                players: [SELF_PLAY.to_string(), SELF_PLAY.to_string()],
                start: self.notation,
                steps: self.steps,
                end,
            },
            tree: self.tree.unwrap_or_default(),
        });
        self.search
    }

    /// Plays on until the search waits at a leaf (`Ok(false)`) or the game ends
    /// (`Ok(true)`); chance outcomes are drawn first, as in [`crate::play::play_loop`].
    /// `depth`: the past states the evaluator reads.
    fn advance(
        &mut self,
        g: &G,
        outcomes: &mut Vec<ChanceOutcome>,
        depth: usize,
    ) -> Result<bool, SearchError> {
        loop {
            match g.turn(&self.s) {
                Turn::Terminal(_) => return Ok(true),
                Turn::Chance => {
                    g.chance_outcomes(&self.s, outcomes);
                    let o = outcomes[sample_outcome(&mut self.rng, outcomes)].outcome;
                    self.steps.push(Move::Chance { outcome: o });
                    self.s = g.apply_chance(&self.s, o);
                }
                Turn::Player(_) => {
                    let step =
                        self.search
                            .start(g, &self.s, &self.past, self.ply, &mut self.rng)?;
                    if !self.step(g, step, depth) {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// Takes in a search step: a leaf to wait on (`false`) or the search's move, played
    /// (`true`).
    fn step(&mut self, g: &G, step: Step<G::State>, depth: usize) -> bool {
        match step {
            Step::NeedsEval(leaf) => {
                self.leaf = Some(leaf);
                self.search.pending_past(depth, &mut self.leaf_past);
                self.legal.clear();
                self.legal.extend_from_slice(self.search.pending_legal());
                self.priors.clear();
                self.priors.resize(self.legal.len(), 0.0);
                false
            }
            Step::Done(r) => {
                if let Some(t) = self.tree.as_mut() {
                    self.search.tree_states(t);
                }
                self.leaf = None;
                if let Decision::Play { action, search } = Decision::searched(r) {
                    self.steps.push(Move::Move { action, search });
                    self.past.push(self.s);
                    self.s = g.apply(&self.s, action);
                    self.ply += 1;
                }
                true
            }
        }
    }
}

/// Plays self-play games `games`, at most
/// `width` at a time, their leaves evaluated by `eval` in batches; returns them in the order
/// of `games`. Each record is the one [`super::self_play_game`] plays.
pub fn self_play_lanes<G: Game, E: Evaluator<G>>(
    g: &G,
    config: SearchConfig,
    eval: &mut E,
    games: &[LaneGame<G::State>],
    width: usize,
) -> Result<Vec<Played<G::State>>, SearchError> {
    let played = self_play_lanes_until(g, config, eval, games, width, None)?;
    Ok(played.into_iter().flatten().collect())
}

/// [`self_play_lanes`] with a deadline: from `until` on no game is opened and the games in
/// progress are abandoned, and a game that finishes after it is dropped; those slots are
/// `None`. Every game returned is played to its end, the same bits as without a deadline.
pub(crate) fn self_play_lanes_until<G: Game, E: Evaluator<G>>(
    g: &G,
    config: SearchConfig,
    eval: &mut E,
    games: &[LaneGame<G::State>],
    width: usize,
    until: Option<Instant>,
) -> Result<Vec<Option<Played<G::State>>>, SearchError> {
    let late = || until.is_some_and(|d| Instant::now() >= d);
    let width = width.max(1);
    let mut out: Vec<Option<Played<G::State>>> = games.iter().map(|_| None).collect();
    // Searches of finished games, reused by the next (their allocations kept).
    let mut pool: Vec<Search<G>> = Vec::new();
    let mut lanes: Vec<Lane<G>> = Vec::with_capacity(width);
    let mut outcomes = Vec::new();
    let mut next = 0;
    let mut values = Vec::with_capacity(width);
    let depth = eval.past();
    loop {
        if late() {
            break;
        }
        while lanes.len() < width && next < games.len() {
            let mut lane = Lane::open(g, config, &mut pool, next, &games[next])?;
            next += 1;
            if lane.advance(g, &mut outcomes, depth)? {
                pool.push(lane.finish(g, &mut out));
            } else {
                lanes.push(lane);
            }
        }
        if lanes.is_empty() {
            break;
        }
        evaluate_leaves(g, eval, &mut lanes, &mut values);
        let mut done = Vec::new();
        for (k, (lane, &v)) in lanes.iter_mut().zip(&values).enumerate() {
            let step = lane.search.resume(g, v, &lane.priors, &mut lane.rng);
            if lane.step(g, step, depth) && lane.advance(g, &mut outcomes, depth)? {
                done.push(k);
            }
        }
        if !done.is_empty() && late() {
            break;
        }
        for k in done.into_iter().rev() {
            let lane = lanes.remove(k);
            pool.push(lane.finish(g, &mut out));
        }
    }
    Ok(out)
}

/// One batch: every lane's waiting leaf goes to `eval` in one call; `values` gets their
/// values in lane order.
fn evaluate_leaves<G: Game, E: Evaluator<G>>(
    g: &G,
    eval: &mut E,
    lanes: &mut [Lane<G>],
    values: &mut Vec<f64>,
) {
    let mut leaves: Vec<Leaf<'_, G>> = lanes
        .iter_mut()
        .filter_map(|l| {
            let state = l.leaf.as_ref()?;
            Some(Leaf {
                state,
                past: &l.leaf_past,
                legal: &l.legal,
                priors: &mut l.priors,
                rng: &mut l.rng,
                value: 0.0,
            })
        })
        .collect();
    eval.evaluate_batch(g, &mut leaves);
    values.clear();
    values.extend(leaves.iter().map(|l| l.value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::{ConnectFour, Ewn};
    use crate::search::{Rollout, Uniform};
    use crate::selfplay::self_play_game;

    /// Every game's record (and tree states) is the one played alone, at any width, with an
    /// evaluator that draws from the game's stream (rollouts) and on a game with chance.
    fn same_as_alone<G: Game, E: Evaluator<G>>(g: &G, config: SearchConfig, mut eval: E) {
        let games: Vec<LaneGame<G::State>> = (0..9)
            .map(|k| LaneGame {
                slot: GameSlot::new(7, 3, k),
                start: None,
                tree: k % 2 == 0,
            })
            .collect();
        let mut search = Search::new(config).unwrap();
        let alone: Vec<(GameRecord, Vec<G::State>)> = games
            .iter()
            .map(|lg| {
                let mut tree = Vec::new();
                let r = self_play_game(
                    g,
                    &mut search,
                    &mut eval,
                    lg.slot,
                    None,
                    lg.tree.then_some(&mut tree),
                )
                .unwrap();
                (r, tree)
            })
            .collect();
        for width in [1, 2, 4, 16] {
            let played = self_play_lanes(g, config, &mut eval, &games, width).unwrap();
            assert_eq!(played.len(), alone.len());
            for (p, (r, t)) in played.iter().zip(&alone) {
                assert_eq!(&p.record, r, "width {width}");
                assert_eq!(&p.tree, t, "width {width}");
            }
        }
    }

    /// A deadline already passed plays nothing (every slot `None`), one and lanes alike; a
    /// far one changes nothing.
    #[test]
    fn a_deadline_stops_games_and_a_far_one_changes_nothing() {
        use std::time::Duration;
        let g = Ewn::new(3, 3, 3).unwrap();
        let config = SearchConfig {
            simulations: 8.into(),
            ..SearchConfig::default()
        };
        let games: Vec<LaneGame<_>> = (0..6)
            .map(|k| LaneGame {
                slot: GameSlot::new(7, 3, k),
                start: None,
                tree: false,
            })
            .collect();
        let eval = || Rollout::new(1);
        let past = Some(Instant::now());
        let far = Some(Instant::now() + Duration::from_secs(3600));
        let alone = self_play_lanes(&g, config, &mut eval(), &games, 4).unwrap();
        for lanes in [1, 4] {
            let none = crate::selfplay::play_games(&g, config, &eval, &games, lanes, past).unwrap();
            assert!(none.iter().all(Option::is_none), "lanes {lanes}");
            let all = crate::selfplay::play_games(&g, config, &eval, &games, lanes, far).unwrap();
            let records: Vec<_> = all.into_iter().map(|p| p.unwrap().record).collect();
            let expected: Vec<_> = alone.iter().map(|p| p.record.clone()).collect();
            assert_eq!(records, expected, "lanes {lanes}");
        }
    }

    #[test]
    fn batched_games_are_the_games_played_alone() {
        let config = SearchConfig {
            simulations: 12.into(),
            ..SearchConfig::default()
        };
        same_as_alone(&Ewn::new(3, 3, 3).unwrap(), config, Rollout::new(1));
        same_as_alone(&ConnectFour::new(5, 4).unwrap(), config, Uniform);
        let capped = SearchConfig {
            playout_cap: Some(crate::search::PlayoutCap {
                p_full: 0.5,
                n_fast: 3,
            }),
            ..config
        };
        same_as_alone(&ConnectFour::new(5, 4).unwrap(), capped, Rollout::new(1));
    }

    /// An evaluator that reads the game's past gets, in a batch, the past it gets alone (on a
    /// game with chance between decisions too); and the past reaches it: without it, other
    /// games.
    #[test]
    fn batched_games_hand_the_evaluator_the_past_it_gets_alone() {
        use crate::search::PastProbe;
        let config = SearchConfig {
            simulations: 12.into(),
            ..SearchConfig::default()
        };
        same_as_alone(&Ewn::new(3, 3, 3).unwrap(), config, PastProbe(3));
        let g = ConnectFour::new(5, 4).unwrap();
        same_as_alone(&g, config, PastProbe(2));
        let games: Vec<LaneGame<_>> = (0..4)
            .map(|k| LaneGame {
                slot: GameSlot::new(7, 3, k),
                start: None,
                tree: false,
            })
            .collect();
        let records = |k| -> Vec<GameRecord> {
            let played = self_play_lanes(&g, config, &mut PastProbe(k), &games, 4).unwrap();
            played.into_iter().map(|p| p.record).collect()
        };
        assert_ne!(records(2), records(0));
    }
}
