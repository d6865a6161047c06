//! A small, fast hasher for position keys (integers), for the solver's hash sets and maps.
//! Iteration order of these maps never decides anything: results are sorted by key.

use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate hashing (in the manner of rustc's FxHasher), ample for integer keys.
#[derive(Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(SEED);
    }

    #[inline]
    fn write_u128(&mut self, x: u128) {
        self.write_u64(x as u64);
        self.write_u64((x >> 64) as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // Final avalanche so that the low bits (which hashbrown uses) depend on every bit.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

pub(crate) type FastBuild = BuildHasherDefault<KeyHasher>;
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, FastBuild>;
pub(crate) type FastSet<K> = std::collections::HashSet<K, FastBuild>;
