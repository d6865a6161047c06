//! The mixed start policy of Liu et al.'s heuristic pre-training (*Towards Understanding
//! Chinese Checkers with Heuristics, Monte Carlo Tree Search, and Deep Reinforcement
//! Learning*, section 3.5; docs/learners.md, "Start policies"): each self-play game starts
//!
//! - from a **random placement** of every piece (the game's `random_placement` ability; for
//!   Chinese Checkers see `games/checkers/abilities.rs`),
//! - after **random opening moves**: from the game's start, 2 x `opening_moves` decisions
//!   (`opening_moves` per player in a game whose players alternate), each a uniform legal
//!   move, chance outcomes drawn by their probabilities; a move that would end the game is
//!   not played (the game starts before it), or
//! - from the **game's start**,
//!
//! chosen with probabilities proportional to `weights` (placements, openings, start; the
//! paper's 5:3:2). Game g of iteration i draws everything from the stream `mixed-start(i,g)`
//! of the run seed: one uniform number for the choice (walking the weights in order), then
//! the placement's or the opening's draws. The policy keeps no state, so resume, branch and
//! verify give every game the same start.

use rand::RngExt;

use super::StartPolicy;
use crate::game::{Game, Turn};
use crate::games::Abilities;
use crate::play::{Scratch, step_chance};
use crate::rng::{GameSlot, StreamRng, uniform_index};
use crate::search::Evaluator;

/// Which start a game of the mixed policy got.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum MixedChoice {
    Placement,
    Opening,
    Initial,
}

/// The mixed start policy (see the module docs).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Mixed {
    /// Placements, openings, the game's start (non-negative, not all zero: validated).
    pub weights: [f64; 3],
    /// Uniform moves per player of an opening.
    pub opening_moves: u32,
}

impl Mixed {
    /// The kind of start of game `slot`, and the stream after the choice (the start's own
    /// draws continue it).
    fn choose(&self, slot: GameSlot) -> (MixedChoice, StreamRng) {
        let mut rng = slot.stream("mixed-start");
        let total: f64 = self.weights.iter().sum();
        let u = rng.random::<f64>() * total;
        let mut acc = 0.0;
        let mut choice = MixedChoice::Initial;
        for (w, c) in self.weights.iter().zip([
            MixedChoice::Placement,
            MixedChoice::Opening,
            MixedChoice::Initial,
        ]) {
            acc += w;
            if u < acc {
                choice = c;
                break;
            }
        }
        (choice, rng)
    }

    /// The start and the kind it is of (`None`: the game's start).
    pub(crate) fn start_of<G: Abilities>(
        &self,
        g: &G,
        slot: GameSlot,
    ) -> (MixedChoice, Option<G::State>) {
        let (choice, mut rng) = self.choose(slot);
        let s = match choice {
            // A game without placements is refused by validation; the game's start else.
            MixedChoice::Placement => g.random_placement(&mut rng),
            MixedChoice::Opening => opening(g, 2 * self.opening_moves, &mut rng),
            MixedChoice::Initial => None,
        };
        (choice, s)
    }
}

/// The decision state after `moves` uniform legal moves from the game's start (chance drawn
/// by its probabilities), stopping before a move that would end the game; `None` when no
/// move was played (the game's start).
fn opening<G: Game>(g: &G, moves: u32, rng: &mut StreamRng) -> Option<G::State> {
    let mut s = g.initial_state();
    let mut last = None;
    let mut played = 0;
    let mut scratch = Scratch::new();
    loop {
        match g.turn(&s) {
            Turn::Chance => s = step_chance(g, &s, rng, &mut scratch),
            Turn::Terminal(_) => break,
            Turn::Player(_) => {
                last = Some(s);
                if played == moves {
                    break;
                }
                g.legal_actions(&s, &mut scratch.actions);
                let a = scratch.actions[uniform_index(rng, scratch.actions.len())];
                let t = g.apply(&s, a);
                if matches!(g.turn(&t), Turn::Terminal(_)) {
                    break;
                }
                s = t;
                played += 1;
            }
        }
    }
    if played == 0 { None } else { last }
}

impl<G: Abilities> StartPolicy<G> for Mixed {
    fn start(&self, g: &G, slot: GameSlot, _: &mut dyn Evaluator<G>) -> Option<G::State> {
        self.start_of(g, slot).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::{AnyGame, Checkers, Ewn};

    fn checkers(v: &str) -> Checkers {
        match v.parse::<AnyGame>().unwrap() {
            AnyGame::Checkers(g) => g,
            _ => unreachable!(),
        }
    }

    const PAPER: Mixed = Mixed {
        weights: [5.0, 3.0, 2.0],
        opening_moves: 3,
    };

    /// Every start is a legal, undecided decision state, the same for the same (seed,
    /// iteration, game), with the paper's 5:3:2 proportions over many games; an opening is
    /// 6 plies from the start on Chinese Checkers.
    #[test]
    fn mixed_starts_are_legal_deterministic_and_in_proportion() {
        for v in ["checkers:7x7-6", "checkers:5x5-3"] {
            let g = checkers(v);
            let mut counts = [0usize; 3];
            for game in 0..2000 {
                let (choice, s) = PAPER.start_of(&g, GameSlot::new(9, 2, game));
                let again = PAPER.start_of(&g, GameSlot::new(9, 2, game));
                assert_eq!((choice, s), again);
                counts[choice as usize] += 1;
                match (choice, s) {
                    (MixedChoice::Initial, None) => {}
                    (MixedChoice::Placement, Some(s)) => {
                        assert!(matches!(g.turn(&s), Turn::Player(_)));
                        assert_eq!(g.parse_notation(&g.notation(&s)).unwrap(), s);
                    }
                    (MixedChoice::Opening, Some(s)) => {
                        assert!(matches!(g.turn(&s), Turn::Player(_)));
                        assert!(g.plies(&s) <= 6 && g.plies(&s) > 0, "{v}");
                        // Legal: re-parsed from its notation it is the same position.
                        let t = g.parse_notation(&g.notation(&s)).unwrap();
                        assert_eq!(g.key(&t), g.key(&s));
                    }
                    other => panic!("{v}: {other:?}"),
                }
            }
            // 2000 games with fixed seeds: 1000, 600, 400 expected.
            let [p, o, i] = counts;
            assert!(
                (900..1100).contains(&p) && (520..680).contains(&o) && (330..470).contains(&i),
                "{v}: {counts:?}"
            );
        }
        // Another iteration draws other starts.
        let g = checkers("checkers:7x7-6");
        let a: Vec<_> = (0..20)
            .map(|k| PAPER.start_of(&g, GameSlot::new(9, 2, k)).1)
            .collect();
        let b: Vec<_> = (0..20)
            .map(|k| PAPER.start_of(&g, GameSlot::new(9, 3, k)).1)
            .collect();
        assert_ne!(a, b);
    }

    /// Openings on a game with chance (EWN): decision states after the moves and rolls;
    /// weights of zero are never chosen.
    #[test]
    fn openings_work_with_chance_and_zero_weights_are_never_drawn() {
        let g = Ewn::new(3, 3, 3).unwrap();
        let only = Mixed {
            weights: [0.0, 1.0, 0.0],
            opening_moves: 1,
        };
        let mut moved = 0;
        for game in 0..200 {
            let (choice, s) = only.start_of(&g, GameSlot::new(1, 1, game));
            assert_eq!(choice, MixedChoice::Opening);
            if let Some(s) = s {
                assert!(matches!(g.turn(&s), Turn::Player(_)));
                moved += 1;
            }
        }
        assert!(moved > 150, "{moved}");
        let none = Mixed {
            weights: [0.0, 0.0, 1.0],
            opening_moves: 3,
        };
        assert!(
            (0..50)
                .all(|k| none.start_of(&g, GameSlot::new(1, 1, k)) == (MixedChoice::Initial, None))
        );
    }
}
