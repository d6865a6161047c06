//! The network's inputs of Chinese Checkers (docs/network.md, "Inputs"): the position's
//! planes ([`Encode`]), and Liu et al.'s ID matrices of the last three states.

use std::sync::Arc;

use super::{Checkers, CheckersState};
use crate::game::Player;
use crate::games::abilities::Input;
use crate::nn::encode::{DynEncode, Encode, Planes, last_past, side_to_move};

/// The side to move's checkers, the opponent's, and one constant plane (1 when the second
/// player is to move; the triangles are not symmetric to the network).
impl Encode for Checkers {
    fn planes(&self) -> Planes {
        let n = self.side();
        Planes {
            channels: 3,
            height: n,
            width: n,
        }
    }

    fn plane_names(&self) -> Vec<String> {
        ["mover's checkers", "opponent's checkers", "P1 to move"]
            .map(String::from)
            .to_vec()
    }

    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        let area = self.side() * self.side();
        out.fill(0.0);
        let me = side_to_move(self, s);
        for (ch, p) in [me, me.other()].into_iter().enumerate() {
            for &sq in self.checkers(s, p) {
                if (sq as usize) < area {
                    out[ch * area + sq as usize] = 1.0;
                }
            }
        }
        if me == Player::P1 {
            out[2 * area..3 * area].fill(1.0);
        }
    }
}

/// Liu et al.'s input ("Network Input"), `input = "liu"`: 7 planes of N x N. For each of the
/// last three decision states, the most recent (the current one) first, two ID matrices: the
/// squares of the side to move's checkers holding their ids 1..p (0 elsewhere), then the
/// opponent's; zeros for the states a game younger than three states does not have. The
/// seventh plane is 0 when the first player is to move and 1 otherwise (Figure 3's values; the
/// paper's "current player" read as the side to move at the encoded state, in every one of the
/// three; the board is not turned for the second player, whose side the seventh plane says).
pub(crate) const LIU_INPUT: Input<Checkers> = Input {
    name: "liu",
    make: |g| Arc::new(LiuInput(g.clone())),
};

/// The states Liu et al.'s input reads: the current one and two before it.
const LIU_STATES: usize = 3;

struct LiuInput(Checkers);

impl LiuInput {
    /// The ID matrices of `s` from `me`'s view into `out` (two planes, zeroed by the caller).
    fn id_matrices(&self, s: &CheckersState, me: Player, out: &mut [f32]) {
        let g = &self.0;
        let area = g.side() * g.side();
        for (ch, p) in [me, me.other()].into_iter().enumerate() {
            for (id, &sq) in g.checkers(s, p).iter().enumerate() {
                if (sq as usize) < area {
                    out[ch * area + sq as usize] = (id + 1) as f32;
                }
            }
        }
    }
}

impl DynEncode<Checkers> for LiuInput {
    fn planes(&self) -> Planes {
        let n = self.0.side();
        Planes {
            channels: 2 * LIU_STATES + 1,
            height: n,
            width: n,
        }
    }

    fn plane_names(&self) -> Vec<String> {
        let ago = ["now", "1 state ago", "2 states ago"];
        ago.iter()
            .take(LIU_STATES)
            .flat_map(|t| {
                [
                    format!("mover's checker ids, {t}"),
                    format!("opponent's checker ids, {t}"),
                ]
            })
            .chain(std::iter::once("P1 to move".to_string()))
            .collect()
    }

    fn past(&self) -> usize {
        LIU_STATES - 1
    }

    fn encode(&self, s: &CheckersState, past: &[CheckersState], out: &mut [f32]) {
        let g = &self.0;
        let area = g.side() * g.side();
        out.fill(0.0);
        let me = side_to_move(g, s);
        let states = std::iter::once(s).chain(last_past(past, LIU_STATES - 1).iter().rev());
        for (k, t) in states.enumerate() {
            self.id_matrices(t, me, &mut out[2 * k * area..(2 * k + 2) * area]);
        }
        if me == Player::P1 {
            out[2 * LIU_STATES * area..].fill(1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Game;
    use crate::games::Abilities;
    use crate::games::VariantSpec;

    /// The legal action of `s` named `name` (`from-to`).
    fn named(g: &Checkers, s: &CheckersState, name: &str) -> u16 {
        let mut legal = Vec::new();
        g.legal_actions(s, &mut legal);
        *legal
            .iter()
            .find(|&&a| g.action_name(s, a) == name)
            .unwrap_or_else(|| panic!("{name} is not legal"))
    }

    /// Liu et al.'s input three plies into a game, against a tensor written out by hand: x
    /// plays a3-a4, o e7-e6, x b2-b3; o is to move. Ids: x's 1..6 on a3, a2, b2, a1, b1, c1
    /// (squares 28, 35, 36, 42, 43, 44), o's on e7, f7, g7, f6, g6, g5 (4, 5, 6, 12, 13, 20).
    #[test]
    fn liu_input_three_plies_in_by_hand() {
        let g = Checkers::from_spec(&VariantSpec::parse("checkers:7x7-6").unwrap()).unwrap();
        let enc = g.input(Some("liu")).unwrap();
        assert_eq!(enc.past(), 2);
        assert_eq!(
            enc.planes(),
            Planes {
                channels: 7,
                height: 7,
                width: 7
            }
        );
        let mut states = vec![g.initial_state()];
        for m in ["a3-a4", "e7-e6", "b2-b3"] {
            let s = *states.last().unwrap();
            states.push(g.apply(&s, named(&g, &s, m)));
        }
        let (now, past) = states.split_last().unwrap();
        let mut want = vec![0.0f32; 7 * 49];
        let mut put = |plane: usize, squares: [usize; 6]| {
            for (id, sq) in squares.into_iter().enumerate() {
                want[plane * 49 + sq] = (id + 1) as f32;
            }
        };
        let o_moved = [11, 5, 6, 12, 13, 20];
        let o_start = [4, 5, 6, 12, 13, 20];
        // The side to move (o) first in every state, the most recent state first.
        put(0, o_moved);
        put(1, [21, 35, 29, 42, 43, 44]);
        put(2, o_moved);
        put(3, [21, 35, 36, 42, 43, 44]);
        put(4, o_start);
        put(5, [21, 35, 36, 42, 43, 44]);
        want[6 * 49..].fill(1.0);
        let mut got = vec![f32::NAN; 7 * 49];
        enc.encode(now, past, &mut got);
        assert_eq!(got, want);
        // One ply in (o to move): the game has two states, so the third's planes are zeros.
        let mut one = vec![f32::NAN; 7 * 49];
        enc.encode(&states[1], &states[..1], &mut one);
        assert!(one[4 * 49..6 * 49].iter().all(|&x| x == 0.0));
        assert_eq!(one[..2 * 49], want[4 * 49..6 * 49]);
        assert!(one[6 * 49..].iter().all(|&x| x == 1.0));
        // At the start (x to move): the side plane is zeros, x's ids come first.
        let mut start = vec![f32::NAN; 7 * 49];
        enc.encode(&states[0], &[], &mut start);
        assert!(start[2 * 49..].iter().all(|&x| x == 0.0));
        assert_eq!(start[28], 1.0);
        assert_eq!(start[49 + 4], 1.0);
        // Only the last two earlier states are read.
        let mut longer = vec![f32::NAN; 7 * 49];
        let mut more = vec![g.initial_state(); 4];
        more.extend_from_slice(past);
        enc.encode(now, &more, &mut longer);
        assert_eq!(longer, want);
    }

    /// The planes the default input gives are unchanged by a past: it reads the position.
    #[test]
    fn the_position_input_ignores_the_past() {
        let g = Checkers::from_spec(&VariantSpec::parse("checkers:5x5-3").unwrap()).unwrap();
        let enc = g.input(None).unwrap();
        assert_eq!(enc.past(), 0);
        let s0 = g.initial_state();
        let mut legal = Vec::new();
        g.legal_actions(&s0, &mut legal);
        let s1 = g.apply(&s0, legal[0]);
        let (mut a, mut b) = (vec![0.0; enc.planes().len()], vec![1.0; enc.planes().len()]);
        enc.encode(&s1, &[], &mut a);
        enc.encode(&s1, &[s0], &mut b);
        assert_eq!(a, b);
        assert!(
            g.input(Some("nope"))
                .err()
                .unwrap()
                .contains("position, liu")
        );
    }
}
