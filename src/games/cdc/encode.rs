//! The network's input planes of Chinese dark chess, both boards ([`Encode`],
//! docs/network.md).

use super::{Cdc, Cdc4x8, CdcState, Colour};
use crate::nn::encode::{Encode, Planes};

/// Planes of Chinese dark chess on `rows` x `cols` (both boards): the side to move's seven
/// kinds face up, the opponent's seven, face-down squares, the face-down count of each of the
/// fourteen coloured kinds (own colour first, divided by 5, constant planes) and one constant
/// plane set once the colours are assigned (before the first flip, "own" is red).
fn encode_cdc<const N: usize, const HB: usize>(s: &CdcState<N, HB>, out: &mut [f32]) {
    const KINDS: usize = 7;
    out.fill(0.0);
    let own = s.colour_to_move();
    // Coloured kinds 0..7 are red, 7..14 black.
    let own_base = match own {
        Some(Colour::Black) => KINDS,
        _ => 0,
    };
    let flip = |ck: usize| (ck + 2 * KINDS - own_base) % (2 * KINDS);
    for sq in 0..N {
        if let Some(ck) = s.piece(sq) {
            out[flip(ck as usize) * N + sq] = 1.0;
        } else if s.is_face_down(sq) {
            out[2 * KINDS * N + sq] = 1.0;
        }
    }
    for (ck, &n) in s.face_down_counts().iter().enumerate() {
        let c = 2 * KINDS + 1 + flip(ck);
        out[c * N..(c + 1) * N].fill(f32::from(n) / 5.0);
    }
    if own.is_some() {
        let c = 4 * KINDS + 1;
        out[c * N..(c + 1) * N].fill(1.0);
    }
}

/// Channels of [`encode_cdc`].
const CDC_CHANNELS: usize = 30;

/// What each of [`encode_cdc`]'s channels holds (kinds by their letters, `KGMRNCP`).
fn cdc_plane_names() -> Vec<String> {
    let kinds = "KGMRNCP".chars();
    let colours = ["mover's colour", "opponent's colour"];
    kinds
        .clone()
        .map(|k| format!("mover's {k} face up"))
        .chain(kinds.clone().map(|k| format!("opponent's {k} face up")))
        .chain(std::iter::once("face down".to_string()))
        .chain(colours.iter().flat_map(|c| {
            let kinds = kinds.clone();
            kinds.map(move |k| format!("face-down {k} of the {c} / 5"))
        }))
        .chain(std::iter::once("colours assigned".to_string()))
        .collect()
}

impl Encode for Cdc {
    fn planes(&self) -> Planes {
        Planes {
            channels: CDC_CHANNELS,
            height: 2,
            width: 4,
        }
    }

    fn plane_names(&self) -> Vec<String> {
        cdc_plane_names()
    }

    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        encode_cdc(s, out)
    }
}

impl Encode for Cdc4x8 {
    fn planes(&self) -> Planes {
        Planes {
            channels: CDC_CHANNELS,
            height: 4,
            width: 8,
        }
    }

    fn plane_names(&self) -> Vec<String> {
        cdc_plane_names()
    }

    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        encode_cdc(s, out)
    }
}
