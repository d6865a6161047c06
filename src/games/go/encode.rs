//! The network's input planes of Go ([`Encode`], docs/network.md, "Go").
//!
//! The Go-Exploit study ran OpenSpiel's AlphaZero, whose network reads OpenSpiel's observation
//! tensor of `go`: four N x N planes, black stones, white stones, empty points, and a plane of
//! ones when white is to play (the side that receives komi). tabula's planes carry exactly
//! that information, seen from the side to move as every encoding here is (one network serves
//! both seats): the mover's stones, the opponent's stones, the empty points, and the
//! white-to-play plane (without it the two seats would look alike, and komi makes them
//! differ).
//!
//! AlphaGo Zero's history planes (the stones of the last eight positions) are not used: the
//! paper's runs did not have them, and planes must be a pure function of a state's key and
//! side to move ([`Encode::encode`]), which holds no earlier boards.

use super::Go;
use crate::game::Player;
use crate::nn::encode::{Encode, Planes, side_to_move};

/// Channels: the mover's stones, the opponent's, the empty points, white to play.
const CHANNELS: usize = 4;

impl<const P: usize, const H: usize, const K: usize> Encode for Go<P, H, K> {
    fn planes(&self) -> Planes {
        let n = self.board_size();
        Planes {
            channels: CHANNELS,
            height: n,
            width: n,
        }
    }

    fn plane_names(&self) -> Vec<String> {
        [
            "mover's stones",
            "opponent's stones",
            "empty points",
            "white (P1) to move",
        ]
        .map(String::from)
        .to_vec()
    }

    /// Row 0 is the bottom row (`1`), column 0 the left (`A`): plane index r * N + c is the
    /// point of action r * N + c.
    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        let n = self.board_size();
        let area = n * n;
        let me = side_to_move(self, s);
        out.fill(0.0);
        for r in 0..n {
            for c in 0..n {
                let ch = match self.stone(s, r, c) {
                    Some(p) if p == me => 0,
                    Some(_) => 1,
                    None => 2,
                };
                out[ch * area + r * n + c] = 1.0;
            }
        }
        if me == Player::P1 {
            out[3 * area..4 * area].fill(1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{Action, Game};
    use crate::games::VariantSpec;
    use crate::games::go::{Go9, GoParams};

    fn go(text: &str) -> Go9 {
        let spec = VariantSpec::parse(text).unwrap();
        Go9::new(&GoParams::from_spec(&spec).unwrap())
    }

    /// Planes of the position after C3 (black) on 5x5: seen by white, to move.
    #[test]
    fn go_planes_are_from_the_side_to_move_with_the_colour_plane() {
        let g = go("go:5x5");
        let c3: usize = 2 * 5 + 2;
        let s = g.apply(&g.initial_state(), c3 as Action);
        let mut out = vec![9.0; Encode::planes(&g).len()];
        Encode::encode(&g, &s, &mut out);
        let plane = |ch: usize| &out[ch * 25..(ch + 1) * 25];
        assert_eq!(plane(0).iter().sum::<f32>(), 0.0, "white has no stones");
        assert_eq!(plane(1)[c3], 1.0, "black's C3 is the opponent's");
        assert_eq!(plane(1).iter().sum::<f32>(), 1.0);
        assert_eq!(plane(2).iter().sum::<f32>(), 24.0);
        assert_eq!(plane(2)[c3], 0.0);
        assert!(plane(3).iter().all(|&x| x == 1.0), "white to play");
        // Black to move after white's pass: C3 is its own, the colour plane is zero.
        let t = g.apply(&s, g.pass_action());
        Encode::encode(&g, &t, &mut out);
        assert_eq!(out[c3], 1.0);
        assert!(out[75..].iter().all(|&x| x == 0.0));
    }
}
