//! Deterministic randomness: every consumer draws from its own named ChaCha stream.
//!
//! docs/store.md: the 32-byte ChaCha seed is blake3's key derivation over the run seed and a
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
pub(crate) fn stream_seed(seed: u64, name: &str) -> [u8; 32] {
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

/// The generator of a stream whose name is given as format arguments, e.g.
/// `stream_fmt(seed, format_args!("table-init({key:?})"))`: the same generator as
/// `stream(seed, &format!(...))`, without allocating the name (hot paths derive a stream per
/// position).
pub fn stream_fmt(seed: u64, name: std::fmt::Arguments<'_>) -> StreamRng {
    struct Feed<'a>(&'a mut blake3::Hasher);
    impl std::fmt::Write for Feed<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.update(s.as_bytes());
            Ok(())
        }
    }
    let mut h = blake3::Hasher::new_derive_key(CONTEXT);
    h.update(&seed.to_le_bytes());
    // Writing into a hasher cannot fail.
    let _ = std::fmt::write(&mut Feed(&mut h), name);
    let mut rng = ChaCha12Rng::from_seed(*h.finalize().as_bytes());
    rng.set_stream(0);
    rng
}

/// A game's place in a run: game `game` of iteration `iteration` under run seed `seed`. Every
/// draw of the game comes from a stream of `seed` named by its place, `LABEL(iteration,game)`
/// (`self-play(3,17)`, `explore(3,17)`, `start(3,17)`, ...), so the game is the same bits
/// whichever thread or batch plays it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GameSlot {
    pub seed: u64,
    pub iteration: u32,
    pub game: u32,
}

impl GameSlot {
    pub fn new(seed: u64, iteration: u32, game: u32) -> GameSlot {
        GameSlot {
            seed,
            iteration,
            game,
        }
    }

    /// The stream name `LABEL(iteration,game)`.
    pub fn name(&self, label: &str) -> String {
        format!("{label}({},{})", self.iteration, self.game)
    }

    /// The generator of stream `LABEL(iteration,game)` under the seed: the same generator as
    /// `stream(seed, &self.name(label))`.
    pub fn stream(&self, label: &str) -> StreamRng {
        stream_fmt(
            self.seed,
            format_args!("{label}({},{})", self.iteration, self.game),
        )
    }
}

/// Draws an index of `outcomes` by probability, walking them in order: the first `i` whose
/// running sum of probabilities exceeds one uniform draw `u`, or the last index (which absorbs
/// rounding, so a draw never falls off the end).
///
/// Written without a data-dependent early exit, which mispredicts on nearly every call in a
/// playout: the probabilities are positive, so the rounded running sums never decrease and the
/// indices with `sum <= u` are a prefix whose length is that first `i`.
#[inline]
pub fn sample_outcome(rng: &mut StreamRng, outcomes: &[ChanceOutcome]) -> usize {
    debug_assert!(!outcomes.is_empty());
    let u: f64 = rng.random();
    let sums = outcomes.iter().scan(0.0, |acc, o| {
        *acc += o.prob;
        Some(*acc)
    });
    pick_by_sums(u, sums, outcomes.len())
}

/// The outcome an inverse-CDF draw `u` in [0, 1) picks from the running sums `sums` of its
/// `n` outcomes' probabilities (in outcome order): the number of sums not above `u`, capped
/// at the last outcome (sums that end just under 1 never index past it). Independent
/// comparisons, no early exit. The one rule of every chance draw ([`sample_outcome`], the
/// searches' chance edges, a game's fused playout), so a fast path draws as the generic one.
#[inline(always)]
pub fn pick_by_sums(u: f64, sums: impl Iterator<Item = f64>, n: usize) -> usize {
    sums.filter(|&s| s <= u).count().min(n - 1)
}

impl crate::game::PlayoutDraws for StreamRng {
    #[inline(always)]
    fn unit(&mut self) -> f64 {
        self.random()
    }

    #[inline(always)]
    fn index(&mut self, n: usize) -> usize {
        uniform_index(self, n)
    }
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

    /// The walk with an early exit, as the spec states it: the reference `sample_outcome`
    /// must agree with.
    fn first_above(rng: &mut StreamRng, outcomes: &[ChanceOutcome]) -> usize {
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

    /// `sample_outcome` draws what the early-exit walk draws, on uniform, skewed and
    /// tiny-probability lists, and leaves the stream at the same place.
    #[test]
    fn sample_outcome_is_the_early_exit_walk() {
        let lists: Vec<Vec<f64>> = vec![
            vec![1.0],
            vec![0.5, 0.5],
            vec![1.0 / 3.0; 3],
            vec![1.0 / 6.0; 6],
            vec![1.0 / 7.0; 7],
            vec![1.0 / 720.0; 720],
            vec![0.1, 0.2, 0.3, 0.4],
            vec![1e-9, 1.0 - 2e-9, 1e-9],
            vec![0.25, 1e-17, 0.75],
            (1..=14).map(|i| i as f64 / 105.0).collect(),
        ];
        for (n, probs) in lists.iter().enumerate() {
            let outcomes: Vec<ChanceOutcome> = probs
                .iter()
                .enumerate()
                .map(|(i, &prob)| ChanceOutcome {
                    outcome: i as u16,
                    prob,
                })
                .collect();
            let mut a = stream(5, &format!("sample({n})"));
            let mut b = a.clone();
            let mut hits = vec![0u32; outcomes.len()];
            for _ in 0..20_000 {
                let i = first_above(&mut a, &outcomes);
                assert_eq!(sample_outcome(&mut b, &outcomes), i, "list {n}");
                hits[i] += 1;
            }
            assert_eq!(a.next_u64(), b.next_u64());
            // Every outcome of a list without tiny probabilities is drawn.
            if probs.iter().all(|&p| p > 1e-3) {
                assert!(hits.iter().all(|&h| h > 0), "list {n}: {hits:?}");
            }
        }
    }

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
        let e = stream_fmt(7, format_args!("match({})", 0)).next_u64();
        assert_eq!(a[0], e);
        assert_ne!(a[0], c);
        assert_ne!(a[0], d);
    }
}

#[cfg(test)]
mod golden {
    //! Pinned outputs: a dependency update (rand, rand_chacha, rand_distr, the float path)
    //! that changes any of them must fail here, not silently change experiments.
    use super::*;
    use rand::distr::Distribution;
    use rand_core::Rng;

    #[test]
    fn chacha_streams_are_pinned() {
        let mut r = stream(2026, "golden(chacha)");
        let words: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        assert_eq!(
            words,
            [
                6010553969906966877,
                17001040186035337858,
                18076442164629360982
            ]
        );
        let mut r = stream(2026, "golden(uniform)");
        let xs: Vec<usize> = (0..5).map(|_| uniform_index(&mut r, 7)).collect();
        assert_eq!(xs, [4, 1, 2, 6, 2]);
        let f: f64 = r.random();
        assert_eq!(f, 0.4425321548704476);
    }

    #[test]
    fn normal_draws_are_pinned() {
        let mut r = stream(2026, "golden(normal)");
        let n = rand_distr::Normal::new(0.0f64, 0.01).unwrap();
        let xs: Vec<f64> = (0..3).map(|_| n.sample(&mut r)).collect();
        assert_eq!(
            xs,
            [
                0.0038829818806364216,
                -0.0200564217640493,
                -0.019159788193368922
            ]
        );
    }

    /// Dirichlet noise is drawn as normalised Gamma(alpha, 1) variates, so Gamma is pinned
    /// over the literature's range of alpha.
    #[test]
    fn gamma_draws_are_pinned() {
        let mut r = stream(2026, "golden(gamma)");
        let expected = [
            (0.03, [3.1027019446104575e-15, 0.2197770316492697]),
            (1.5, [0.5114666747355201, 1.9814256681265854]),
            (12.0, [8.633721880647284, 8.233128205539616]),
        ];
        for (alpha, want) in expected {
            let gm = rand_distr::Gamma::new(alpha, 1.0).unwrap();
            let got: Vec<f64> = (0..2).map(|_| gm.sample(&mut r)).collect();
            assert_eq!(got, want, "Gamma({alpha}, 1)");
        }
    }

    /// A slot's stream is the stream named `LABEL(iteration,game)`: the names of the streams
    /// runs stored before the slot existed, so their games keep their bits.
    #[test]
    fn a_slots_stream_is_its_named_stream() {
        let slot = GameSlot::new(7, 3, 17);
        assert_eq!(slot.name("self-play"), "self-play(3,17)");
        let mut a = slot.stream("explore");
        let mut b = stream(7, "explore(3,17)");
        let (x, y): (Vec<u64>, Vec<u64>) = (0..4).map(|_| (a.next_u64(), b.next_u64())).unzip();
        assert_eq!(x, y);
        assert_ne!(slot.stream("start").next_u64(), x[0]);
    }
}
