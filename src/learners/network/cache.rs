//! The evaluator's cache of network outputs (docs/network.md, "Throughput": the evaluation
//! cache): a position's logits and value head output, keyed by its input planes.
//!
//! Invariant: a hit returns exactly the bits the network would compute. The network's output
//! for a position is a function of its input planes alone, the same in any batch
//! (docs/network.md, "Bit-exactness"), and an entry is a hit only when its stored planes are
//! equal to the asked ones bit for bit (the hash only picks the slot). So the cache changes
//! speed, never a record: whether a position hits depends on what the worker evaluated
//! before, which differs between thread counts, and nothing downstream can tell.
//!
//! Direct-mapped (a new entry replaces the slot's old one), allocated once per evaluator
//! with a fixed byte budget; KataGo and OpenSpiel's AlphaZero evaluator keep such a cache.

/// Bytes of one evaluator's cache (planes, logits, value and tag of every slot).
const BUDGET_BYTES: usize = 8 << 20;

/// The cache; `slots` is a power of two, 0 when even one entry would not fit the budget.
pub(super) struct EvalCache {
    /// Floats of a position's input planes.
    len: usize,
    actions: usize,
    mask: usize,
    /// The planes' hash with the low bit set (0: empty slot).
    tags: Vec<u64>,
    planes: Vec<f32>,
    logits: Vec<f32>,
    values: Vec<f32>,
    pub(super) hits: u64,
}

impl EvalCache {
    pub(super) fn new(len: usize, actions: usize) -> EvalCache {
        let entry = 4 * (len + actions + 1) + 8;
        let fit = BUDGET_BYTES / entry.max(1);
        let slots = if fit == 0 { 0 } else { 1usize << fit.ilog2() };
        EvalCache {
            len,
            actions,
            mask: slots.wrapping_sub(1),
            tags: vec![0; slots],
            planes: vec![0.0; slots * len],
            logits: vec![0.0; slots * actions],
            values: vec![0.0; slots],
            hits: 0,
        }
    }

    /// The tag of a position's planes: a hash of their bits (FxHash's multiply-rotate), low
    /// bit set so that no tag is the empty slot's 0.
    pub(super) fn tag(planes: &[f32]) -> u64 {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut h = planes.len() as u64;
        for p in planes {
            h = (h.rotate_left(5) ^ u64::from(p.to_bits())).wrapping_mul(K);
        }
        h | 1
    }

    fn slot(&self, tag: u64) -> Option<usize> {
        (!self.tags.is_empty()).then_some((tag >> 7) as usize & self.mask)
    }

    /// The stored logits and value head output of `planes`, if this slot holds exactly them.
    pub(super) fn get(&mut self, tag: u64, planes: &[f32]) -> Option<(&[f32], f32)> {
        let i = self.slot(tag)?;
        let stored = &self.planes[i * self.len..(i + 1) * self.len];
        if self.tags[i] != tag || !same_bits(stored, planes) {
            return None;
        }
        self.hits += 1;
        let logits = &self.logits[i * self.actions..(i + 1) * self.actions];
        Some((logits, self.values[i]))
    }

    /// Stores a position's outputs, replacing what its slot held.
    pub(super) fn put(&mut self, tag: u64, planes: &[f32], logits: &[f32], value: f32) {
        let Some(i) = self.slot(tag) else { return };
        self.tags[i] = tag;
        self.planes[i * self.len..(i + 1) * self.len].copy_from_slice(planes);
        self.logits[i * self.actions..(i + 1) * self.actions].copy_from_slice(logits);
        self.values[i] = value;
    }
}

/// Equal bit for bit (so -0.0 and 0.0 differ, and a NaN equals itself).
pub(super) fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_needs_the_same_planes_and_returns_what_was_stored() {
        let mut c = EvalCache::new(3, 2);
        let (a, b) = ([1.0, 0.0, 1.0], [1.0, -0.0, 1.0]);
        let ta = EvalCache::tag(&a);
        assert!(c.get(ta, &a).is_none());
        c.put(ta, &a, &[0.5, -2.0], 0.25);
        let (logits, value) = c.get(ta, &a).expect("a hit");
        assert_eq!((logits, value), (&[0.5, -2.0][..], 0.25));
        // The same tag with other planes (a forced collision) is a miss, never a wrong hit.
        assert!(c.get(ta, &b).is_none());
        assert_eq!(c.hits, 1);
    }

    #[test]
    fn a_new_entry_replaces_its_slot() {
        let mut c = EvalCache::new(1, 1);
        let slots = c.tags.len();
        assert!(slots.is_power_of_two() && slots > 1000);
        // Two tags of one slot: the second put evicts the first.
        let (t1, t2) = (1u64 | 1 << 7, 1u64 | (1 + slots as u64) << 7);
        c.put(t1, &[1.0], &[1.0], 1.0);
        c.put(t2, &[2.0], &[2.0], 2.0);
        assert!(c.get(t1, &[1.0]).is_none());
        assert_eq!(c.get(t2, &[2.0]).map(|(_, v)| v), Some(2.0));
    }

    #[test]
    fn an_entry_over_the_budget_disables_the_cache() {
        let mut c = EvalCache::new(BUDGET_BYTES / 4, 1);
        c.put(3, &vec![0.0; BUDGET_BYTES / 4], &[0.0], 0.0);
        assert!(c.get(3, &vec![0.0; BUDGET_BYTES / 4]).is_none());
    }
}
