//! What Connect Four can do beyond the rules (`games::Abilities`): small boards are solved by
//! enumeration, larger ones (7x6) searched exactly position by position; the 7x6 test sets;
//! input planes; the mirror image (the board flipped left to right: column c becomes column
//! W-1-c, a symmetry of the rules AlphaZero implementations use to double their data).

use super::{C4State, ConnectFour, solver, test_sets};
use crate::game::Action;
use crate::games::abilities::{
    Abilities, AbilitySet, ExactSearch, Mirror, ReferenceSet, References, position_input,
    solvable_test_positions,
};
use crate::solver::{Solvable, load_or_solve};

/// Boards of up to 20 squares solved by enumeration; 7x6 positions by the alpha-beta solver.
impl Abilities for ConnectFour {
    const ABILITIES: AbilitySet<ConnectFour> = AbilitySet {
        solution: Some(load_or_solve),
        test_positions: Some(solvable_test_positions),
        exact_search: Some(ExactSearch {
            applies: searched_exactly,
            action_values,
        }),
        greedy_features: None,
        inputs: &[position_input()],
        reference_sets: Some(References {
            metrics: &test_sets::C4_METRICS,
            load: reference_set,
        }),
        mirror: Some(Mirror {
            state: mirror_state,
            action: mirror_action,
        }),
        random_placement: None,
        forward_gain: None,
        race: None,
        go_board: None,
    };
}

/// The bitboard `b` flipped left to right.
fn flip(g: &ConnectFour, b: u64) -> u64 {
    let w = g.w as usize;
    (0..w).fold(0, |m, c| {
        m | ((b & g.col_mask(c)) >> g.col_shift(c)) << g.col_shift(w - 1 - c)
    })
}

/// The mirror image of `s`: both bitboards flipped, the status kept.
fn mirror_state(g: &ConnectFour, s: &C4State) -> C4State {
    C4State {
        pos: flip(g, s.pos),
        mask: flip(g, s.mask),
        status: s.status,
    }
}

/// The image of a column.
fn mirror_action(g: &ConnectFour, _: &C4State, a: Action) -> Action {
    Action::from(g.w) - 1 - a
}

/// A board too large to enumerate but small enough for the alpha-beta solver.
fn searched_exactly(g: &ConnectFour) -> bool {
    g.check_solvable().is_err() && solver::searchable(g)
}

fn action_values(g: &ConnectFour, s: &C4State) -> Option<Vec<(Action, f64)>> {
    solver::action_values(g, s)
}

/// The 7x6 test sets (no other board has any).
fn reference_set(
    g: &ConnectFour,
    name: &str,
    n: usize,
) -> Option<Result<ReferenceSet<C4State>, String>> {
    (g.width() == 7 && g.height() == 6).then(|| test_sets::c4_test_set(name, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{Game, Turn};
    use crate::rng::{stream, uniform_index};

    /// The flip is an involution commuting with the rules (legal moves onto legal moves,
    /// successors onto successors); on the solved 4x4 board a position and its image have
    /// the same value.
    #[test]
    fn the_flip_is_a_symmetry_of_connect_four() {
        let m = ConnectFour::ABILITIES.mirror.unwrap();
        let (mut legal, mut image) = (Vec::new(), Vec::new());
        for (w, h) in [(7, 6), (5, 4)] {
            let g = ConnectFour::new(w, h).unwrap();
            let mut moved = 0;
            for i in 0..20 {
                let mut rng = stream(3, &format!("c4-mirror({w},{i})"));
                let mut s = g.initial_state();
                while let Turn::Player(_) = g.turn(&s) {
                    let ms = mirror_state(&g, &s);
                    assert_eq!(mirror_state(&g, &ms), s);
                    assert_eq!(g.turn(&ms), g.turn(&s));
                    moved += usize::from(ms != s);
                    g.legal_actions(&s, &mut legal);
                    g.legal_actions(&ms, &mut image);
                    let mut mapped: Vec<Action> =
                        legal.iter().map(|&a| (m.action)(&g, &s, a)).collect();
                    mapped.sort_unstable();
                    assert_eq!(mapped, image);
                    for &a in &legal {
                        let b = (m.action)(&g, &s, a);
                        assert_eq!(mirror_state(&g, &g.apply(&s, a)), g.apply(&ms, b));
                    }
                    s = g.apply(&s, legal[uniform_index(&mut rng, legal.len())]);
                }
            }
            assert!(moved > 100, "{moved}");
        }
        let g = ConnectFour::new(4, 4).unwrap();
        let sol = crate::solver::solve(&g, &|_| {}).unwrap();
        let mut compared = 0;
        for (k, &v) in sol.keys().iter().zip(sol.values()) {
            let s = g.state_from_key(*k).unwrap();
            if let Turn::Player(_) = g.turn(&s) {
                assert_eq!(sol.value_of_key(&g.key(&mirror_state(&g, &s))), Some(v));
                compared += 1;
            }
        }
        assert!(compared > 1000, "{compared}");
    }
}
