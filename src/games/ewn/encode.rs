//! The network's input planes of EinStein würfelt nicht! ([`Encode`], docs/network.md).

use super::Ewn;
use crate::game::Player;
use crate::nn::encode::{Encode, Planes, side_to_move};

/// For the side to move, k planes (its piece n on its square), then k for the opponent's
/// pieces, k constant planes (the die shows d), and one constant plane (1 when the second
/// player, blue, is to move: the boards are not symmetric).
impl Encode for Ewn {
    fn planes(&self) -> Planes {
        Planes {
            channels: 3 * self.pieces() + 1,
            height: self.height(),
            width: self.width(),
        }
    }

    fn plane_names(&self) -> Vec<String> {
        let k = self.pieces();
        (1..=k)
            .map(|n| format!("mover's piece {n}"))
            .chain((1..=k).map(|n| format!("opponent's piece {n}")))
            .chain((1..=k).map(|d| format!("die shows {d}")))
            .chain(std::iter::once("blue (P1) to move".to_string()))
            .collect()
    }

    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        let k = self.pieces();
        let area = self.width() * self.height();
        out.fill(0.0);
        let me = side_to_move(self, s);
        for (block, p) in [me, me.other()].into_iter().enumerate() {
            for n in 1..=k {
                if let Some(sq) = self.piece_square(s, p, n) {
                    out[(block * k + n - 1) * area + sq] = 1.0;
                }
            }
        }
        if let Some(d) = self.die(s)
            && (1..=k).contains(&(d as usize))
        {
            let c = 2 * k + d as usize - 1;
            out[c * area..(c + 1) * area].fill(1.0);
        }
        if me == Player::P1 {
            out[3 * k * area..(3 * k + 1) * area].fill(1.0);
        }
    }
}
