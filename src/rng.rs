//! Deterministic randomness: every consumer draws from its own named ChaCha stream.
//!
//! Spec `store.md`: the 32-byte ChaCha seed is blake3's key derivation over the run seed and a
//! *stream name* that says exactly what the stream is for (`self-play(3,17)`,
//! `table-init(<key>)`, `match(5)`). A stream belongs to one unit of work, never to a thread, so
//! results do not depend on how work is spread over threads. Never `seed_from_u64`, never
//! `thread_rng`, never a global generator.
//!
//! The generator is ChaCha12 (rand's `StdRng` algorithm); its output is stable across
//! rand_chacha versions for a given seed and stream, and the versions are pinned besides.

use rand::RngExt;
use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

use crate::game::ChanceOutcome;

/// The generator every stream uses.
pub type StreamRng = ChaCha12Rng;

/// blake3 `derive_key` context: fixed forever; changing it changes every experiment.
const CONTEXT: &str = "tabula 2026-11-21 named ChaCha stream v1";

/// The 32-byte ChaCha seed of stream `name` under run seed `seed`.
pub fn stream_seed(seed: u64, name: &str) -> [u8; 32] {
    let mut material = Vec::with_capacity(8 + name.len());
    material.extend_from_slice(&seed.to_le_bytes());
    material.extend_from_slice(name.as_bytes());
    blake3::derive_key(CONTEXT, &material)
}

/// The generator of stream `name` under run seed `seed`.
pub fn stream(seed: u64, name: &str) -> StreamRng {
    let mut rng = ChaCha12Rng::from_seed(stream_seed(seed, name));
    // Stream 0 explicitly: the word position must never depend on construction details.
    rng.set_stream(0);
    rng
}

/// Draws an index of `outcomes` by probability, walking them in order (the last outcome
/// absorbs rounding, so a draw never falls off the end).
pub fn sample_outcome(rng: &mut StreamRng, outcomes: &[ChanceOutcome]) -> usize {
    debug_assert!(!outcomes.is_empty());
    let u: f64 = rng.random();
    let mut acc = 0.0;
    for (i, o) in outcomes.iter().enumerate() {
        acc += o.prob;
        if u < acc {
            return i;
        }
    }
    outcomes.len() - 1
}

/// A uniform index in `0..n` (`n > 0`).
#[inline]
pub fn uniform_index(rng: &mut StreamRng, n: usize) -> usize {
    debug_assert!(n > 0);
    rng.random_range(0..n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::Rng;

    #[test]
    fn streams_differ_by_name_and_seed_and_repeat() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = stream(7, "match(0)");
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = stream(7, "match(0)");
                move |_| r.next_u64()
            })
            .collect();
        let c = stream(7, "match(1)").next_u64();
        let d = stream(8, "match(0)").next_u64();
        assert_eq!(a, b);
        assert_ne!(a[0], c);
        assert_ne!(a[0], d);
    }
}
