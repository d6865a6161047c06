//! The lookup table of tabular AlphaZero: per position, logits p_hat over the whole action
//! space and a value logit v_hat, materialised lazily.
//!
//! The table is conceptually complete from the start: every position's initial entries are a
//! pure function of (run seed, position key) — `|A|` draws of Normal(0, `init_std`) and then one
//! for v_hat, from the stream `table-init(<key:?>)` — so the order in which positions are first
//! visited never matters. Only trained positions are materialised ([`Table::materialise`]);
//! lookups of the others compute the initial entries on the fly.
//!
//! Layout: entries are rows of `|A| + 1` f64 in one flat `Vec` (logits first, v_hat last),
//! beside their keys and update counts; a fast hash map takes a key to its row. The map's
//! iteration order never decides anything: everything written out is sorted by key.
//!
//! During self-play the table is frozen and shared (`&Table`); each search owns a
//! [`TableEval`], which implements the search's [`Evaluator`] and caches the initial entries of
//! unmaterialised positions it has computed (a pure function, so caching changes nothing).

use rand::distr::Distribution;

use crate::game::{Action, Game, PositionKey};
use crate::rng::{StreamRng, stream_fmt};
use crate::search::Evaluator;
use crate::solver::fasthash::FastMap;

/// The lookup table of one run.
#[derive(Clone, Debug)]
pub struct Table<K: PositionKey> {
    num_actions: usize,
    seed: u64,
    init_std: f64,
    keys: Vec<K>,
    /// Row i is `data[i * stride .. (i + 1) * stride]`: `|A|` logits, then v_hat.
    data: Vec<f64>,
    updates: Vec<u32>,
    index: FastMap<K, u32>,
}

/// Writes the initial entries of position `key` (`|A|` logits, then v_hat) into `out`.
pub(crate) fn initial_entry<K: PositionKey>(seed: u64, init_std: f64, key: &K, out: &mut [f64]) {
    let mut rng = stream_fmt(seed, format_args!("table-init({key:?})"));
    // init_std is validated finite and >= 0; Normal::new fails only on a negative or NaN std.
    match rand_distr::Normal::new(0.0, init_std) {
        Ok(normal) => out.iter_mut().for_each(|x| *x = normal.sample(&mut rng)),
        Err(_) => out.fill(0.0),
    }
}

/// The logistic function: v = 1 / (1 + e^-v_hat).
#[inline]
pub(crate) fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Priors over the legal actions from a row's logits: softmax over all of A renormalised over
/// the legal actions, which equals the softmax of the legal logits alone.
#[inline]
pub fn legal_priors(logits: &[f64], legal: &[Action], priors: &mut [f64]) {
    let max = legal
        .iter()
        .map(|&a| logits[a as usize])
        .fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for (p, &a) in priors.iter_mut().zip(legal) {
        *p = (logits[a as usize] - max).exp();
        sum += *p;
    }
    for p in priors.iter_mut() {
        *p /= sum;
    }
}

/// The table player's move: the legal action of highest logit (so of highest probability),
/// ties to the lowest action.
#[inline]
pub(crate) fn greedy_action(logits: &[f64], legal: &[Action]) -> Action {
    let mut best = legal[0];
    for &a in &legal[1..] {
        if logits[a as usize] > logits[best as usize] {
            best = a;
        }
    }
    best
}

impl<K: PositionKey> Table<K> {
    /// An empty (all-initial) table.
    pub fn new(num_actions: usize, seed: u64, init_std: f64) -> Table<K> {
        Table {
            num_actions,
            seed,
            init_std,
            keys: Vec::new(),
            data: Vec::new(),
            updates: Vec::new(),
            index: FastMap::default(),
        }
    }

    /// |A|.
    pub fn num_actions(&self) -> usize {
        self.num_actions
    }

    /// f64 per row: |A| + 1.
    pub(crate) fn stride(&self) -> usize {
        self.num_actions + 1
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn init_std(&self) -> f64 {
        self.init_std
    }

    /// Materialised positions.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The row of a materialised position.
    #[inline]
    pub fn find(&self, key: &K) -> Option<usize> {
        self.index.get(key).map(|&i| i as usize)
    }

    #[inline]
    pub fn key(&self, i: usize) -> &K {
        &self.keys[i]
    }

    /// Row `i`: |A| logits, then v_hat.
    #[inline]
    pub fn row(&self, i: usize) -> &[f64] {
        let s = self.stride();
        &self.data[i * s..(i + 1) * s]
    }

    #[inline]
    pub(crate) fn row_mut(&mut self, i: usize) -> &mut [f64] {
        let s = self.stride();
        &mut self.data[i * s..(i + 1) * s]
    }

    /// How many samples row `i` has been trained on since the run began.
    #[inline]
    pub fn updates(&self, i: usize) -> u32 {
        self.updates[i]
    }

    pub(crate) fn add_updates(&mut self, i: usize, n: u32) {
        self.updates[i] = self.updates[i].saturating_add(n);
    }

    /// The row of `key`, creating it with its initial entries if needed.
    pub(crate) fn materialise(&mut self, key: K) -> usize {
        if let Some(i) = self.find(&key) {
            return i;
        }
        let i = self.keys.len();
        let s = self.stride();
        self.data.resize((i + 1) * s, 0.0);
        initial_entry(self.seed, self.init_std, &key, &mut self.data[i * s..]);
        self.keys.push(key);
        self.updates.push(0);
        self.index.insert(key, i as u32);
        i
    }

    /// Room for `rows` more rows without growing (a checkout knows how many it restores: a
    /// PPPP table grown row by row spent a fifth of its restore copying itself).
    pub(crate) fn reserve(&mut self, rows: usize) {
        self.keys.reserve(rows);
        self.data.reserve(rows * self.stride());
        self.updates.reserve(rows);
        self.index.reserve(rows);
    }

    /// Sets a row outright (checkout, resume): entries and update count.
    pub(crate) fn set_row(&mut self, key: K, row: &[f64], updates: u32) {
        assert_eq!(row.len(), self.stride(), "a row has |A| + 1 entries");
        match self.find(&key) {
            Some(i) => {
                self.row_mut(i).copy_from_slice(row);
                self.updates[i] = updates;
            }
            None => {
                // A new row: its initial entries would be overwritten, so they are not drawn.
                let i = self.keys.len();
                self.data.extend_from_slice(row);
                self.keys.push(key);
                self.updates.push(updates);
                self.index.insert(key, i as u32);
            }
        }
    }

    /// The entries of `key`: its row if materialised, else its initial entries in `scratch`.
    pub fn lookup<'a>(&'a self, key: &K, scratch: &'a mut Vec<f64>) -> &'a [f64] {
        match self.find(key) {
            Some(i) => self.row(i),
            None => {
                scratch.resize(self.stride(), 0.0);
                initial_entry(self.seed, self.init_std, key, scratch);
                scratch
            }
        }
    }

    /// Row indices in ascending key order (snapshots and metrics walk the table this way).
    pub(crate) fn sorted_rows(&self) -> Vec<usize> {
        let mut rows: Vec<usize> = (0..self.keys.len()).collect();
        rows.sort_unstable_by_key(|&i| self.keys[i]);
        rows
    }
}

/// A frozen table as a search evaluator, one per searcher: priors are the table's softmax over
/// the legal actions, the value is sigmoid(v_hat). Initial entries of unmaterialised positions
/// are computed once and cached here.
#[derive(Debug)]
pub struct TableEval<'a, K: PositionKey> {
    table: &'a Table<K>,
    cache: FastMap<K, u32>,
    cache_keys: Vec<K>,
    cache_data: Vec<f64>,
}

impl<'a, K: PositionKey> TableEval<'a, K> {
    pub fn new(table: &'a Table<K>) -> TableEval<'a, K> {
        TableEval {
            table,
            cache: FastMap::default(),
            cache_keys: Vec::new(),
            cache_data: Vec::new(),
        }
    }

    pub fn table(&self) -> &'a Table<K> {
        self.table
    }

    /// The entries (|A| logits, then v_hat) of `key`.
    #[inline]
    pub fn entries(&mut self, key: &K) -> &[f64] {
        if let Some(i) = self.table.find(key) {
            return self.table.row(i);
        }
        let s = self.table.stride();
        let i = match self.cache.get(key) {
            Some(&i) => i as usize,
            None => {
                let i = self.cache_keys.len();
                self.cache_data.resize((i + 1) * s, 0.0);
                initial_entry(
                    self.table.seed,
                    self.table.init_std,
                    key,
                    &mut self.cache_data[i * s..],
                );
                self.cache_keys.push(*key);
                self.cache.insert(*key, i as u32);
                i
            }
        };
        &self.cache_data[i * s..(i + 1) * s]
    }
}

impl<G: Game> Evaluator<G> for TableEval<'_, G::Key> {
    #[inline]
    fn evaluate(
        &mut self,
        g: &G,
        s: &G::State,
        _: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
        _: &mut StreamRng,
    ) -> f64 {
        let key = g.key(s);
        let n = g.num_actions();
        let row = self.entries(&key);
        legal_priors(&row[..n], legal, priors);
        sigmoid(row[n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialisation_does_not_depend_on_visit_order() {
        let keys: Vec<u64> = (0..200).map(|i| i * 7919 + 3).collect();
        let mut a: Table<u64> = Table::new(6, 42, 0.01);
        let mut b: Table<u64> = Table::new(6, 42, 0.01);
        for k in &keys {
            a.materialise(*k);
        }
        for k in keys.iter().rev() {
            b.materialise(*k);
        }
        // Lookups of unmaterialised keys through an evaluator agree too.
        let c: Table<u64> = Table::new(6, 42, 0.01);
        let mut eval = TableEval::new(&c);
        for k in &keys {
            let ra = a.row(a.find(k).unwrap()).to_vec();
            let rb = b.row(b.find(k).unwrap()).to_vec();
            assert_eq!(ra, rb);
            assert_eq!(eval.entries(k), &ra[..]);
            let mut scratch = Vec::new();
            assert_eq!(c.lookup(k, &mut scratch), &ra[..]);
        }
        // Draws are Normal(0, 0.01): small, not all equal, and a different seed differs.
        let r = a.row(0);
        assert!(r.iter().all(|x| x.abs() < 0.1) && r[0] != r[1]);
        let mut d: Table<u64> = Table::new(6, 43, 0.01);
        let i = d.materialise(keys[0]);
        assert_ne!(d.row(i), a.row(a.find(&keys[0]).unwrap()));
    }

    /// The initial entries are pinned: a change of stream naming or of the Normal sampler
    /// changes every experiment and must be deliberate.
    #[test]
    fn initial_entries_are_pinned() {
        let mut out = [0.0; 3];
        initial_entry(2026, 0.01, &12345u64, &mut out);
        assert_eq!(
            out,
            [
                -0.009178551014977662,
                -0.014638551581825547,
                0.006029093558396255
            ]
        );
    }

    #[test]
    fn priors_are_the_legal_softmax_and_greedy_breaks_ties_low() {
        let logits = [0.0, 2.0f64.ln(), 5.0, 0.0];
        let mut p = [0.0; 3];
        legal_priors(&logits, &[0, 1, 3], &mut p);
        let want = [0.25, 0.5, 0.25];
        for (x, y) in p.iter().zip(want) {
            assert!((x - y).abs() < 1e-12, "{p:?}");
        }
        assert_eq!(greedy_action(&logits, &[0, 1, 3]), 1);
        assert_eq!(greedy_action(&logits, &[0, 3]), 0);
        assert_eq!(sigmoid(0.0), 0.5);
    }
}
