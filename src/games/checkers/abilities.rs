//! What Chinese Checkers can do beyond the rules (`games::Abilities`): reduced boards are
//! solved exactly; the greedy players of Liu et al. read its forward gain; input planes; the
//! mirror image and random placements of Liu et al.'s data generation.
//!
//! **Mirror**: the reflection of the board about the diagonal through both corners (the
//! diagonal through both start triangles, r + c = N - 1): (r, c) -> (N-1-c, N-1-r). It maps
//! the six neighbour directions onto each other and each start triangle onto itself, keeps
//! r - c (so the forward gain Psi), and is an involution. Checkers keep their ids (an action
//! id*N*N + d becomes id*N*N + image(d)); the side to move, the ply count and the result stay;
//! the last destinations of the short-cycle detector are mirrored too. Liu et al. double their
//! training set this way ("flipping each slice ... around the bottom-left-top-right
//! diagonal").
//!
//! **Random placement** (Liu et al., "randomising the starting positions of all checkers",
//! which they count as more than 9 x 10^10 starts: C(49, 12), any 12 of the 49 squares).
//! The paper gives no further rule, so tabula's is a documented choice: 2p distinct squares
//! drawn uniformly (a partial Fisher-Yates shuffle of the N*N squares), the first p x's and
//! the last p o's, ids in ascending square order (as at the start), x to move; a position
//! the rules already decide (a player home, or x blocked) is drawn again.

use super::{CYCLE_WINDOW, Checkers, CheckersState, MAX_CHECKERS, Square};
use crate::game::{Action, Game, Player, Turn};
use crate::games::abilities::{
    Abilities, AbilitySet, Mirror, Race, position_input, solvable_test_positions,
};
use crate::rng::{StreamRng, uniform_index};
use crate::solver::load_or_solve;

impl Abilities for Checkers {
    const ABILITIES: AbilitySet<Checkers> = AbilitySet {
        solution: Some(load_or_solve),
        test_positions: Some(solvable_test_positions),
        exact_search: None,
        greedy_features: Some(greedy_features),
        inputs: &[position_input(), super::encode::LIU_INPUT],
        reference_sets: None,
        mirror: Some(Mirror {
            state: mirror_state,
            action: mirror_action,
        }),
        random_placement: Some(random_placement),
        forward_gain: Some(move_gain),
        race: Some(race),
        go_board: None,
    };
}

/// The image of square `sq` under the reflection (r, c) -> (N-1-c, N-1-r).
fn mirror_square(g: &Checkers, sq: Square) -> Square {
    let (r, c) = g.coords(sq);
    let last = g.n - 1;
    g.square(last - c, last - r)
}

/// The mirror image of `s` (see the module docs).
fn mirror_state(g: &Checkers, s: &CheckersState) -> CheckersState {
    let mut t = *s;
    for side in &mut t.pos {
        for sq in &mut side[..g.p] {
            *sq = mirror_square(g, *sq);
        }
    }
    let used = (s.plies as usize).min(CYCLE_WINDOW);
    for sq in &mut t.recent[..used] {
        *sq = mirror_square(g, *sq);
    }
    t
}

/// The image of action `a`: the same checker, the mirrored destination.
fn mirror_action(g: &Checkers, _: &CheckersState, a: Action) -> Action {
    let nn = g.n * g.n;
    let (id, to) = (a as usize / nn, (a as usize % nn) as Square);
    (id * nn + mirror_square(g, to) as usize) as Action
}

/// A uniformly random undecided placement (see the module docs).
fn random_placement(g: &Checkers, rng: &mut StreamRng) -> CheckersState {
    let nn = g.n * g.n;
    let mut squares: Vec<Square> = (0..nn as Square).collect();
    loop {
        for i in 0..2 * g.p {
            let j = i + uniform_index(rng, nn - i);
            squares.swap(i, j);
        }
        let mut pos = [[0 as Square; MAX_CHECKERS]; 2];
        for (k, player) in Player::BOTH.into_iter().enumerate() {
            let mine = &mut pos[player.index()][..g.p];
            mine.copy_from_slice(&squares[k * g.p..(k + 1) * g.p]);
            mine.sort_unstable();
        }
        let s = g.fresh_state(pos, Player::P0);
        if s.result.is_none() {
            return s;
        }
    }
}

/// The forward gain Psi of legal action `a` of decision state `s` for its mover: rows
/// advanced along the diagonal between the start triangles (Liu et al.'s "rows it jumps
/// across in the forward direction"), negative backward.
fn move_gain(g: &Checkers, s: &CheckersState, a: Action) -> i32 {
    let (from, to) = g.move_squares(s, a);
    g.forward_gain(s.to_move, from, to)
}

/// Each player's checkers in its goal triangle and the rows its checkers have advanced from
/// their squares at the game's start (checkers keep their ids), summed: Liu et al.'s "total
/// forward distance ... the sum of the number of rows that a player's checkers have
/// advanced".
fn race(g: &Checkers, s: &CheckersState) -> [Race; 2] {
    let start = g.initial_state();
    Player::BOTH.map(|p| {
        let goal = g.goal_triangle(p);
        let mine = &s.pos[p.index()][..g.p];
        let from = &start.pos[p.index()][..g.p];
        Race {
            home: mine
                .iter()
                .filter(|&&sq| goal & super::bit(sq) != 0)
                .count() as u32,
            distance: mine
                .iter()
                .zip(from)
                .map(|(&to, &at)| g.forward_gain(p, at, to))
                .sum(),
        }
    })
}

/// The greedy heuristic (Liu et al.): for each legal action of `s`, its forward gain Psi and
/// how far back its piece stands.
fn greedy_features(
    g: &Checkers,
    s: &<Checkers as Game>::State,
    legal: &[Action],
    out: &mut Vec<(i32, i32)>,
) {
    out.clear();
    let Turn::Player(p) = g.turn(s) else {
        return;
    };
    // Psi measured from the square (0, 0), where r - c = 0, is how far back a square is.
    let origin = g.square(0, 0);
    for &a in legal {
        let (from, to) = g.move_squares(s, a);
        out.push((g.forward_gain(p, from, to), g.forward_gain(p, from, origin)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::AnyGame;
    use crate::rng::stream;

    fn game(v: &str) -> Checkers {
        match v.parse::<AnyGame>().unwrap() {
            AnyGame::Checkers(g) => g,
            _ => unreachable!(),
        }
    }

    /// Decision states of random games from the start and from random placements.
    fn states(g: &Checkers, games: usize) -> Vec<CheckersState> {
        let mut out = Vec::new();
        let mut legal = Vec::new();
        for i in 0..games {
            let mut rng = stream(7, &format!("mirror-test({},{i})", g.variant()));
            let mut s = if i % 2 == 0 {
                g.initial_state()
            } else {
                random_placement(g, &mut rng)
            };
            while let Turn::Player(_) = g.turn(&s) {
                out.push(s);
                g.legal_actions(&s, &mut legal);
                s = g.apply(&s, legal[uniform_index(&mut rng, legal.len())]);
            }
        }
        out
    }

    /// The mirror is an involution that commutes with the rules: legal moves map onto legal
    /// moves, every successor onto the image's successor, and the greedy heuristic's
    /// features (forward gain, how far back) are unchanged.
    #[test]
    fn the_mirror_is_a_symmetry_of_the_rules() {
        let m = Checkers::ABILITIES.mirror.unwrap();
        for v in ["checkers:7x7-6", "checkers:5x5-3", "checkers:4x4-3"] {
            let g = game(v);
            let (mut legal, mut image) = (Vec::new(), Vec::new());
            let (mut f, mut fm) = (Vec::new(), Vec::new());
            let all = states(&g, 6);
            assert!(all.len() > 100, "{v}");
            let mut moved = 0;
            for s in &all {
                let ms = (m.state)(&g, s);
                assert_eq!((m.state)(&g, &ms), *s, "{v}: {}", g.notation(s));
                moved += usize::from(ms != *s);
                assert_eq!(g.turn(&ms), g.turn(s));
                g.legal_actions(s, &mut legal);
                g.legal_actions(&ms, &mut image);
                let mut mapped: Vec<Action> = legal.iter().map(|&a| (m.action)(&g, s, a)).collect();
                mapped.sort_unstable();
                assert_eq!(mapped, image, "{v}: {}", g.notation(s));
                assert!(g.greedy_features(s, &legal, &mut f));
                let mapped: Vec<Action> = legal.iter().map(|&a| (m.action)(&g, s, a)).collect();
                assert!(g.greedy_features(&ms, &mapped, &mut fm));
                assert_eq!(f, fm, "{v}: {}", g.notation(s));
                for &a in &legal {
                    let b = (m.action)(&g, s, a);
                    assert_eq!((m.action)(&g, &ms, b), a);
                    assert_eq!((m.state)(&g, &g.apply(s, a)), g.apply(&ms, b), "{v}");
                }
            }
            // The reflection moves most positions (the start is its own image only up to ids).
            assert!(moved * 2 > all.len(), "{v}: {moved} of {}", all.len());
        }
    }

    /// On solved boards a position and its image have the same exact value.
    #[test]
    fn a_position_and_its_mirror_have_the_same_value() {
        let m = Checkers::ABILITIES.mirror.unwrap();
        for v in ["checkers:3x3-3", "checkers:4x4-1", "checkers:5x5-1"] {
            let g = game(v);
            let sol = crate::solver::solve(&g, &|_| {}).unwrap();
            let (mut compared, mut decided) = (0, 0);
            for (k, &value) in sol.keys().iter().zip(sol.values()) {
                let s = g.state_from_key(*k).unwrap();
                let Turn::Player(_) = g.turn(&s) else {
                    continue;
                };
                let image = g.key(&(m.state)(&g, &s));
                assert_eq!(
                    sol.value_of_key(&image),
                    Some(value),
                    "{v}: {}",
                    g.notation(&s)
                );
                compared += 1;
                decided += usize::from(value != 0.0);
            }
            assert!(compared > 100 && decided > 10, "{v}: {compared} {decided}");
        }
    }

    /// Random placements: legal, undecided, x to move, ids in ascending square order, many
    /// different ones, and the same ones from the same stream.
    #[test]
    fn random_placements_are_legal_undecided_and_varied() {
        let g = game("checkers:7x7-6");
        let draw = |i: usize| random_placement(&g, &mut stream(1, &format!("placement({i})")));
        let mut keys = std::collections::BTreeSet::new();
        for i in 0..200 {
            let s = draw(i);
            assert_eq!(s, draw(i));
            assert_eq!(g.turn(&s), Turn::Player(Player::P0));
            assert_eq!(g.parse_notation(&g.notation(&s)).unwrap(), s);
            for p in Player::BOTH {
                assert!(g.checkers(&s, p).is_sorted());
            }
            keys.insert(g.key(&s));
        }
        assert_eq!(keys.len(), 200);
        // On 2x2-1 a placement is often decided (a checker home): those are drawn again.
        let g = game("checkers:2x2-1");
        for i in 0..50 {
            let s = random_placement(&g, &mut stream(2, &format!("small({i})")));
            assert!(matches!(g.turn(&s), Turn::Player(_)));
        }
    }

    /// At the start nobody is home and nobody has advanced; a move adds its forward gain to
    /// its player's distance.
    #[test]
    fn the_race_counts_forward_distance_and_checkers_home() {
        let g = game("checkers:5x5-3");
        let s = g.initial_state();
        let zero = Race {
            home: 0,
            distance: 0,
        };
        assert_eq!(race(&g, &s), [zero, zero]);
        let mut legal = Vec::new();
        g.legal_actions(&s, &mut legal);
        for &a in &legal {
            let gain = move_gain(&g, &s, a);
            let r = race(&g, &g.apply(&s, a));
            assert_eq!((r[0].distance, r[1]), (gain, zero));
        }
    }
}
