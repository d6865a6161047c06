//! KataGo's search control (Wu, *Accelerating Self-Play Learning in Go*, 2019; KataGo's
//! self-play code, `cpp/program/play.cpp` and `playutils.cpp`), as the Go-Exploit study
//! compares it (Trudeau and Bowling, AAMAS 2023, section 5: AKTI, AKB, AKTIB, GESCKB;
//! docs/go-exploit.md, "KataGo's search control").
//!
//! It wraps another start policy (the game's start, or Go-Exploit) and adds three things,
//! each off at probability or mean 0:
//!
//! - **Trajectory initialisation** (`init_moves`, KataGo's `policyInitAreaProp` x the board's
//!   area): a game that would start at the game's start first plays floor(E * `init_moves`)
//!   moves, E ~ Exp(1), each drawn from the model's priors raised to 1 / `init_temperature`
//!   (with probability 0.0002 a uniform legal move instead, as KataGo's
//!   `getGameInitializationMove`); the game then starts from the state reached. Chance is
//!   resolved by its probabilities; a move that would end the game is not played (the game
//!   starts before it). Draws: stream `katago-init(i,g)`.
//! - **Forks** (KataGo's `maybeForkGame`): after a game, with probability `early_fork_prob`
//!   an early fork, else with probability `fork_prob` a late one. An early fork takes the
//!   game's decision state number floor(E * `early_fork_moves`) (KataGo: E x
//!   `earlyForkGameExpectedMoveProp` x area), a late one a uniform decision state; none when
//!   the game is shorter. There n legal moves are drawn uniformly with replacement, n uniform
//!   in [`fork_min_choices`, `early_fork_max_choices`] (early) or [.., `fork_max_choices`]
//!   (late), and the move whose resulting position the model values best for the mover is
//!   played (the first of equals); that position is a fork.
//! - **Side positions** (KataGo's `sidePositionProb`): after each decision of a game, with
//!   probability `side_position_prob`, the position after a different move (the model's
//!   priors at temperature 1 with probability 0.70, at temperature 2 with 0.25, else a
//!   uniform legal move: KataGo's `chooseRandomForkingMove`, the move played banned) is a
//!   side position. KataGo searches a side position once and trains on that search's value;
//!   tabula's learners train on game outcomes, as the paper's OpenSpiel AlphaZero did, so a
//!   side position is played out as a game, like a fork.
//!
//! Draws after a game: stream `katago-branch(i,g)`, side positions first (one uniform draw
//! per decision, in order), then the fork. Forks and side positions found in iteration i's
//! games, in game order, are the starts of iteration i + 1's first games (KataGo plays a
//! fork as the thread's next game: "these take dominance"); the games after them start as
//! the wrapped policy says, and the ones that do not fit in the iteration are dropped. So the
//! policy after iteration i is a pure function of the stored games, the models that played
//! them and the run's seed, and is frozen during an iteration, as every start policy.

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::StartPolicy;
use crate::error::SettingError;
use crate::game::{Action, Game, Player, Turn};
use crate::game_record::{GameRecord, Step};
use crate::play::{Scratch, step_chance};
use crate::rng::{GameSlot, StreamRng, uniform_index};
use crate::search::Evaluator;

/// KataGo's probability of a uniform move among the initialisation moves
/// (`getGameInitializationMove`).
const INIT_UNIFORM: f64 = 0.0002;

/// `[start.katago]`: KataGo's search control. Probabilities and `init_moves` default to 0
/// (off: AlphaZero's self-play); the shapes default to KataGo's self-play configuration
/// (`cpp/configs/training/selfplay1.cfg`), whose probabilities are `init_moves` = 0.04 x area,
/// `early_fork_prob` 0.04, `early_fork_moves` 0.025 x area, `fork_prob` 0.01,
/// `side_position_prob` 0.02.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KataGoSettings {
    /// Mean number of opening moves sampled from the policy (trajectory initialisation).
    pub init_moves: f64,
    /// Temperature of those moves (KataGo's `policyInitAreaTemperature`, 1).
    pub(crate) init_temperature: f64,
    /// Probability that a game is forked early.
    pub early_fork_prob: f64,
    /// Mean decision number of an early fork.
    pub early_fork_moves: f64,
    /// Probability of a late fork (when there is no early one).
    pub fork_prob: f64,
    /// Fewest moves a fork chooses among (KataGo's `forkGameMinChoices`, 3).
    pub(crate) fork_min_choices: u32,
    /// Most moves an early fork chooses among (`earlyForkGameMaxChoices`, 12).
    pub(crate) early_fork_max_choices: u32,
    /// Most moves a late fork chooses among (`forkGameMaxChoices`, 36).
    pub(crate) fork_max_choices: u32,
    /// Probability per decision of a side position.
    pub side_position_prob: f64,
}

impl Default for KataGoSettings {
    fn default() -> KataGoSettings {
        KataGoSettings {
            init_moves: 0.0,
            init_temperature: 1.0,
            early_fork_prob: 0.0,
            early_fork_moves: 1.0,
            fork_prob: 0.0,
            fork_min_choices: 3,
            early_fork_max_choices: 12,
            fork_max_choices: 36,
            side_position_prob: 0.0,
        }
    }
}

fn bad(key: &str, value: impl ToString, allowed: &str) -> SettingError {
    SettingError::new(format!("start.katago.{key}"), value, allowed)
}

impl KataGoSettings {
    /// Checks the ranges; errors name `start.katago.KEY`.
    pub(crate) fn validate(&self) -> Result<(), SettingError> {
        for (key, p) in [
            ("early_fork_prob", self.early_fork_prob),
            ("fork_prob", self.fork_prob),
            ("side_position_prob", self.side_position_prob),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(bad(key, p, "a probability in [0, 1]"));
            }
        }
        for (key, m) in [
            ("init_moves", self.init_moves),
            ("early_fork_moves", self.early_fork_moves),
        ] {
            if !(0.0..=1000.0).contains(&m) {
                return Err(bad(key, m, "a mean number of moves in [0, 1000]"));
            }
        }
        if !(self.init_temperature > 0.0 && self.init_temperature <= 100.0) {
            return Err(bad(
                "init_temperature",
                self.init_temperature,
                "a number in (0, 100]",
            ));
        }
        let min = self.fork_min_choices;
        if !(1..=1000).contains(&min) {
            return Err(bad("fork_min_choices", min, "an integer from 1 to 1000"));
        }
        for (key, max) in [
            ("early_fork_max_choices", self.early_fork_max_choices),
            ("fork_max_choices", self.fork_max_choices),
        ] {
            if !(min..=1000).contains(&max) {
                return Err(bad(
                    key,
                    max,
                    &format!("an integer from fork_min_choices ({min}) to 1000"),
                ));
            }
        }
        Ok(())
    }
}

/// KataGo's search control around another start policy (see the module docs).
pub(crate) struct KataGo<G: Game> {
    settings: KataGoSettings,
    inner: Box<dyn StartPolicy<G>>,
    /// Starts of the next iteration's first games (forks and side positions, in order).
    branches: Vec<G::State>,
}

impl<G: Game> KataGo<G> {
    pub(crate) fn new(settings: KataGoSettings, inner: Box<dyn StartPolicy<G>>) -> KataGo<G> {
        KataGo {
            settings,
            inner,
            branches: Vec::new(),
        }
    }

    /// The queued starts (forks and side positions).
    #[cfg(test)]
    pub(crate) fn branches(&self) -> &[G::State] {
        &self.branches
    }
}

/// E ~ Exp(1), by inversion of one uniform draw.
fn exponential(rng: &mut StreamRng) -> f64 {
    let u: f64 = rng.random();
    -(1.0 - u).ln()
}

/// An index drawn with probability proportional to `weights` (non-negative, not all zero),
/// walking them in order.
fn weighted_index(rng: &mut StreamRng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let u = rng.random::<f64>() * total;
    let mut acc = 0.0;
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        if u < acc {
            return i;
        }
    }
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}

/// Scratch for choosing moves from the model's priors: the legal moves of the state last
/// asked (`play.actions`), their priors and weights.
#[derive(Default)]
struct Chooser {
    play: Scratch,
    priors: Vec<f64>,
    weights: Vec<f64>,
}

impl Chooser {
    fn legal(&self) -> &[Action] {
        &self.play.actions
    }

    /// The model's priors over the legal moves of decision state `s` (into `self`); returns
    /// its value for the side to move.
    fn priors<G: Game>(
        &mut self,
        g: &G,
        s: &G::State,
        eval: &mut dyn Evaluator<G>,
        rng: &mut StreamRng,
    ) -> f64 {
        g.legal_actions(s, &mut self.play.actions);
        self.priors.clear();
        self.priors.resize(self.play.actions.len(), 0.0);
        // The start policy reads positions alone (a game it starts records from there).
        eval.evaluate(g, s, &[], &self.play.actions, &mut self.priors, rng)
    }

    /// A legal move (other than `ban`) drawn from the priors at `temperature` (weights
    /// p^(1/T) over the moves with p > 0, KataGo's `chooseRandomPolicyMove`); `None` when
    /// no such move has a positive prior.
    fn policy_move(
        &mut self,
        temperature: f64,
        ban: Option<Action>,
        rng: &mut StreamRng,
    ) -> Option<Action> {
        self.weights.clear();
        for (a, &p) in self.play.actions.iter().zip(&self.priors) {
            let w = if Some(*a) == ban || p <= 0.0 {
                0.0
            } else {
                p.powf(1.0 / temperature)
            };
            self.weights.push(w);
        }
        if !self.weights.iter().any(|&w| w > 0.0) {
            return None;
        }
        Some(self.legal()[weighted_index(rng, &self.weights)])
    }

    /// A uniform legal move other than `ban` (`None` when there is none).
    fn uniform_move(&self, ban: Option<Action>, rng: &mut StreamRng) -> Option<Action> {
        let n = self.legal().iter().filter(|&&a| Some(a) != ban).count();
        if n == 0 {
            return None;
        }
        let k = uniform_index(rng, n);
        self.legal()
            .iter()
            .copied()
            .filter(|&a| Some(a) != ban)
            .nth(k)
    }

    /// Resolves chance from `s` by its probabilities until a decision or terminal state.
    fn settle<G: Game>(&mut self, g: &G, mut s: G::State, rng: &mut StreamRng) -> G::State {
        while matches!(g.turn(&s), Turn::Chance) {
            s = step_chance(g, &s, rng, &mut self.play);
        }
        s
    }

    /// The model's value for `mover` of the position after `a` in `s`: a terminal score, the
    /// probability-weighted mean over a chance node's outcomes, or the model's value of a
    /// decision state (for its side to move, turned to `mover`'s).
    fn child_value<G: Game>(
        &mut self,
        g: &G,
        s: &G::State,
        a: Action,
        mover: Player,
        eval: &mut dyn Evaluator<G>,
        rng: &mut StreamRng,
    ) -> f64 {
        let t = g.apply(s, a);
        self.value_of(g, &t, mover, eval, rng)
    }

    fn value_of<G: Game>(
        &mut self,
        g: &G,
        t: &G::State,
        mover: Player,
        eval: &mut dyn Evaluator<G>,
        rng: &mut StreamRng,
    ) -> f64 {
        match g.turn(t) {
            Turn::Terminal(r) => r.score(mover),
            Turn::Chance => {
                let mut outcomes = Vec::new();
                g.chance_outcomes(t, &mut outcomes);
                let mut v = 0.0;
                for o in &outcomes {
                    let u = g.apply_chance(t, o.outcome);
                    v += o.prob * self.value_of(g, &u, mover, eval, rng);
                }
                v
            }
            Turn::Player(p) => {
                let v = self.priors(g, t, eval, rng);
                if p == mover { v } else { 1.0 - v }
            }
        }
    }
}

impl<G: Game> KataGo<G> {
    /// Trajectory initialisation from the game's start (`None`: no move was played).
    fn initialise(
        &self,
        g: &G,
        rng: &mut StreamRng,
        eval: &mut dyn Evaluator<G>,
    ) -> Option<G::State> {
        let k = (exponential(rng) * self.settings.init_moves).floor() as u64;
        let mut c = Chooser::default();
        let mut s = g.initial_state();
        let mut played = 0;
        while played < k {
            s = c.settle(g, s, rng);
            if !matches!(g.turn(&s), Turn::Player(_)) {
                break;
            }
            c.priors(g, &s, eval, rng);
            let uniform = rng.random::<f64>() < INIT_UNIFORM;
            let a = match uniform {
                true => c.uniform_move(None, rng),
                false => c.policy_move(self.settings.init_temperature, None, rng),
            };
            let Some(a) = a.or_else(|| c.uniform_move(None, rng)) else {
                break;
            };
            let t = g.apply(&s, a);
            if matches!(g.turn(&t), Turn::Terminal(_)) {
                break;
            }
            s = t;
            played += 1;
        }
        (played > 0).then(|| c.settle(g, s, rng))
    }

    /// Side positions of one game (see the module docs), appended to the queue.
    fn side_positions(
        &mut self,
        g: &G,
        record: &GameRecord,
        states: &[G::State],
        c: &mut Chooser,
        eval: &mut dyn Evaluator<G>,
        rng: &mut StreamRng,
    ) {
        for (s, step) in states.iter().zip(&record.steps) {
            let Step::Move { action, .. } = step else {
                continue;
            };
            if rng.random::<f64>() >= self.settings.side_position_prob {
                continue;
            }
            c.priors(g, s, eval, rng);
            let r: f64 = rng.random();
            let ban = Some(*action);
            let a = match r {
                r if r < 0.70 => c.policy_move(1.0, ban, rng),
                r if r < 0.95 => c.policy_move(2.0, ban, rng),
                _ => c.uniform_move(ban, rng),
            };
            if let Some(a) = a {
                self.queue(g, g.apply(s, a), c, rng);
            }
        }
    }

    /// The fork of one game, if any (see the module docs), appended to the queue.
    fn fork(
        &mut self,
        g: &G,
        states: &[G::State],
        c: &mut Chooser,
        eval: &mut dyn Evaluator<G>,
        rng: &mut StreamRng,
    ) {
        let k = &self.settings;
        let early = rng.random::<f64>() < k.early_fork_prob;
        let late = !early && k.fork_prob > 0.0 && rng.random::<f64>() < k.fork_prob;
        if !early && !late {
            return;
        }
        let decisions: Vec<&G::State> = states
            .iter()
            .filter(|s| matches!(g.turn(s), Turn::Player(_)))
            .collect();
        if decisions.is_empty() {
            return;
        }
        let at = match early {
            true => (exponential(rng) * k.early_fork_moves).floor() as usize,
            false => uniform_index(rng, decisions.len()),
        };
        let Some(&s) = decisions.get(at) else {
            return;
        };
        let max = if early {
            k.early_fork_max_choices
        } else {
            k.fork_max_choices
        };
        let n =
            k.fork_min_choices + uniform_index(rng, (max - k.fork_min_choices + 1) as usize) as u32;
        let Turn::Player(mover) = g.turn(s) else {
            return;
        };
        g.legal_actions(s, &mut c.play.actions);
        let legal = c.legal();
        let choices: Vec<Action> = (0..n)
            .map(|_| legal[uniform_index(rng, legal.len())])
            .collect();
        let mut best: Option<(Action, f64)> = None;
        for a in choices {
            let v = c.child_value(g, s, a, mover, eval, rng);
            if best.is_none_or(|(_, b)| v > b) {
                best = Some((a, v));
            }
        }
        if let Some((a, _)) = best {
            self.queue(g, g.apply(s, a), c, rng);
        }
    }

    /// Queues `t` (chance resolved) as a start unless the game is over there.
    fn queue(&mut self, g: &G, t: G::State, c: &mut Chooser, rng: &mut StreamRng) {
        let t = c.settle(g, t, rng);
        if matches!(g.turn(&t), Turn::Player(_)) {
            self.branches.push(t);
        }
    }
}

impl<G: Game> StartPolicy<G> for KataGo<G> {
    fn start(&self, g: &G, slot: GameSlot, eval: &mut dyn Evaluator<G>) -> Option<G::State> {
        if let Some(s) = self.branches.get(slot.game as usize) {
            return Some(*s);
        }
        let start = self.inner.start(g, slot, eval);
        if start.is_some() || self.settings.init_moves == 0.0 {
            return start;
        }
        let mut rng = slot.stream("katago-init");
        self.initialise(g, &mut rng, eval)
    }

    fn wants_model(&self) -> bool {
        true
    }

    fn wants_tree_states(&self) -> bool {
        self.inner.wants_tree_states()
    }

    fn observe(
        &mut self,
        g: &G,
        slot: GameSlot,
        record: &GameRecord,
        states: &[G::State],
        tree: &[G::State],
        eval: &mut dyn Evaluator<G>,
    ) {
        self.inner.observe(g, slot, record, states, tree, eval);
        if slot.game == 0 {
            // The slot's iteration's games have all started: its branches are spent.
            self.branches.clear();
        }
        let mut rng = slot.stream("katago-branch");
        let mut c = Chooser::default();
        if self.settings.side_position_prob > 0.0 {
            self.side_positions(g, record, states, &mut c, eval, &mut rng);
        }
        self.fork(g, states, &mut c, eval, &mut rng);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game_record::{GameEnd, SearchStats};
    use crate::games::connect4::{C4State, ConnectFour};
    use crate::search::Uniform;
    use crate::start::Initial;

    fn c4() -> ConnectFour {
        ConnectFour::new(7, 6).unwrap()
    }

    fn policy(k: KataGoSettings) -> KataGo<ConnectFour> {
        KataGo::new(k, Box::new(Initial))
    }

    /// A game of Connect Four along `moves` (columns 1..7), as a record and its states.
    fn game(g: &ConnectFour, moves: &str) -> (GameRecord, Vec<C4State>) {
        let mut states = vec![g.initial_state()];
        let mut steps = Vec::new();
        for ch in moves.chars() {
            let a = ch.to_digit(10).unwrap() as Action - 1;
            let s = *states.last().unwrap();
            states.push(g.apply(&s, a));
            let search = Some(SearchStats {
                visits: Vec::new(),
                target: None,
                full: true,
            });
            steps.push(Step::Move { action: a, search });
        }
        let record = GameRecord {
            variant: g.variant(),
            seed: 0,
            stream: String::new(),
            players: [String::new(), String::new()],
            start: None,
            steps,
            end: GameEnd::Finished(crate::game::GameResult::Draw),
        };
        (record, states)
    }

    /// Values a position by the stones in the centre column: the side to move's value falls
    /// by 0.1 for each of the opponent's stones there.
    struct Centre;

    impl Evaluator<ConnectFour> for Centre {
        fn evaluate(
            &mut self,
            g: &ConnectFour,
            s: &C4State,
            _: &[C4State],
            _: &[Action],
            priors: &mut [f64],
            _: &mut StreamRng,
        ) -> f64 {
            priors.fill(1.0 / priors.len() as f64);
            let Turn::Player(me) = g.turn(s) else {
                unreachable!("only decision states are evaluated")
            };
            let theirs = (0..6)
                .filter(|&r| g.stone(s, 3, r).is_some_and(|p| p != me))
                .count();
            0.9 - 0.1 * theirs as f64
        }
    }

    #[test]
    fn initialisation_plays_an_exponential_number_of_policy_moves() {
        let g = c4();
        let k = KataGoSettings {
            init_moves: 4.0,
            ..KataGoSettings::default()
        };
        let p = policy(k);
        let mut stones = Vec::new();
        for game in 0..400 {
            let s = p.start(&g, GameSlot::new(7, 1, game), &mut Uniform);
            stones.push(s.map_or(0, |s| g.stones(&s)));
            // The same game draws the same start.
            assert_eq!(p.start(&g, GameSlot::new(7, 1, game), &mut Uniform), s);
        }
        let mean = stones.iter().sum::<u32>() as f64 / 400.0;
        // floor(E * 4) has mean about 3.5 (games that would end early stop sooner).
        assert!((3.0..4.0).contains(&mean), "mean {mean}");
        let zero = stones.iter().filter(|&&n| n == 0).count();
        // P(floor(E * 4) = 0) = 1 - exp(-1/4) = 0.22.
        assert!((60..120).contains(&zero), "{zero} games start at the start");
        let off = policy(KataGoSettings::default());
        assert_eq!(off.start(&g, GameSlot::new(7, 1, 0), &mut Uniform), None);
    }

    #[test]
    fn an_early_fork_takes_the_move_the_model_values_best() {
        let g = c4();
        let k = KataGoSettings {
            early_fork_prob: 1.0,
            early_fork_moves: 0.0,
            fork_min_choices: 40,
            early_fork_max_choices: 40,
            ..KataGoSettings::default()
        };
        let mut p = policy(k);
        let (record, states) = game(&g, "1234567");
        for game in 0..3 {
            p.observe(
                &g,
                GameSlot::new(5, 1, game),
                &record,
                &states,
                &[],
                &mut Centre,
            );
        }
        // Forks at the first decision (early_fork_moves 0): black's best is the centre.
        assert_eq!(p.branches().len(), 3);
        for s in p.branches() {
            assert_eq!(*s, g.parse_moves("4").unwrap());
        }
        // They start iteration 2's first games; the others start as the wrapped policy says.
        assert_eq!(
            p.start(&g, GameSlot::new(5, 2, 2), &mut Uniform),
            Some(p.branches()[2])
        );
        assert_eq!(p.start(&g, GameSlot::new(5, 2, 3), &mut Uniform), None);
        // The next iteration's first game clears them.
        p.observe(
            &g,
            GameSlot::new(5, 2, 0),
            &record,
            &states,
            &[],
            &mut Centre,
        );
        assert_eq!(p.branches().len(), 1);
    }

    #[test]
    fn side_positions_leave_the_move_played() {
        let g = c4();
        let k = KataGoSettings {
            side_position_prob: 1.0,
            ..KataGoSettings::default()
        };
        let mut p = policy(k);
        let (record, states) = game(&g, "4444");
        p.observe(
            &g,
            GameSlot::new(3, 1, 0),
            &record,
            &states,
            &[],
            &mut Uniform,
        );
        // One side position per decision, one stone more than the state it branched from,
        // and never the position the game went on to.
        assert_eq!(p.branches().len(), 4);
        for (i, b) in p.branches().iter().enumerate() {
            assert_eq!(g.stones(b), i as u32 + 1);
            assert_ne!(*b, states[i + 1]);
        }
    }

    #[test]
    fn settings_name_the_bad_key() {
        let bad = [
            KataGoSettings {
                fork_prob: 1.5,
                ..KataGoSettings::default()
            },
            KataGoSettings {
                init_temperature: 0.0,
                ..KataGoSettings::default()
            },
            KataGoSettings {
                early_fork_max_choices: 2,
                ..KataGoSettings::default()
            },
        ];
        for (k, key) in bad
            .iter()
            .zip(["fork_prob", "init_temperature", "early_fork_max"])
        {
            let e = k.validate().unwrap_err().to_string();
            assert!(e.contains(&format!("start.katago.{key}")), "{e}");
        }
        KataGoSettings::default().validate().unwrap();
    }
}
