//! The network's input planes of Chinese Checkers ([`Encode`], docs/network.md).

use super::Checkers;
use crate::game::Player;
use crate::nn::encode::{Encode, Planes, side_to_move};

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
