//! The network's input planes of Connect Four ([`Encode`], docs/network.md).

use super::ConnectFour;
use crate::nn::encode::{Encode, Planes, side_to_move};

/// The side to move's stones, then the opponent's (row 0 the bottom).
impl Encode for ConnectFour {
    fn planes(&self) -> Planes {
        Planes {
            channels: 2,
            height: self.height(),
            width: self.width(),
        }
    }

    fn plane_names(&self) -> Vec<String> {
        vec!["mover's stones".into(), "opponent's stones".into()]
    }

    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        let (w, h) = (self.width(), self.height());
        out.fill(0.0);
        let me = side_to_move(self, s);
        for c in 0..w {
            for r in 0..h {
                if let Some(p) = self.stone(s, c, r) {
                    let ch = usize::from(p != me);
                    out[(ch * h + r) * w + c] = 1.0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_four_planes_are_from_the_side_to_move() {
        let g = ConnectFour::new(7, 6).unwrap();
        let s = g.parse_moves("4").unwrap();
        let mut out = vec![0.0; Encode::planes(&g).len()];
        Encode::encode(&g, &s, &mut out);
        // The first player's stone (column 4, bottom row) is the opponent's for P1 to move.
        let (w, h) = (7, 6);
        assert_eq!(out[3], 0.0);
        assert_eq!(out[h * w + 3], 1.0);
        assert_eq!(out.iter().sum::<f32>(), 1.0);
    }
}
