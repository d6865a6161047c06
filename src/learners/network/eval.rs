//! The network as the search's leaf evaluator.

use super::Network;
use super::cache::{EvalCache, same_bits};
use crate::game::{Action, Game};
use crate::games::Abilities;
use crate::nn::{Scratch, legal_softmax};
use crate::rng::StreamRng;
use crate::search::{Evaluator, Leaf};

/// The network as the search's leaf evaluator: priors the softmax of the legal logits,
/// value the value head's on the [0, 1] scale for the side to move.
pub struct NetEval<'a, G: Game> {
    pub(super) net: &'a Network<G>,
    pub(super) x: Vec<f32>,
    pub(super) scratch: Scratch,
    /// The search's evaluations: made on the first (greedy play never allocates it).
    pub(super) cache: Option<EvalCache>,
    /// A batch's encoded planes, a position a row.
    pub(super) staged: Vec<f32>,
    /// Per position of the batch: its row among the network's inputs, or `HIT`.
    pub(super) rows: Vec<usize>,
    /// Per network input: the position of the batch it came from, and its tag.
    pub(super) fresh: Vec<(usize, u64)>,
    /// The network's inputs: the rows of `fresh`, in order.
    pub(super) inputs: Vec<f32>,
    /// Positions the network computed for the search.
    pub(super) computed: u64,
}

/// A position answered from the cache.
const HIT: usize = usize::MAX;

impl<G: Abilities> NetEval<'_, G> {
    /// The greedy move at `s` after the game's `past`: the legal action of highest logit,
    /// ties to the lowest action.
    pub fn greedy(&mut self, s: &G::State, past: &[G::State], legal: &[Action]) -> Action {
        self.greedy_value(s, past, legal).0
    }

    /// The greedy move and the value on the [0, 1] scale, from one forward pass.
    pub(crate) fn greedy_value(
        &mut self,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
    ) -> (Action, f64) {
        let pre = self.net.infer(s, past, &mut self.x, &mut self.scratch);
        let logits = &self.scratch.logits;
        let mut best = legal[0];
        for &a in &legal[1..] {
            if logits[a as usize] > logits[best as usize] {
                best = a;
            }
        }
        (best, self.net.layout.unit_value(pre))
    }

    /// Fills `priors` over `legal` and returns the value on the [0, 1] scale.
    pub(crate) fn priors_value(
        &mut self,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
    ) -> f64 {
        let pre = self.net.infer(s, past, &mut self.x, &mut self.scratch);
        legal_softmax(&self.scratch.logits, legal, priors);
        self.net.layout.unit_value(pre)
    }

    /// How many positions the search asked for were answered from the cache, and how many
    /// the network computed (a position asked twice in one batch is computed once).
    pub fn cache_counts(&self) -> (u64, u64) {
        (self.cache.as_ref().map_or(0, |c| c.hits), self.computed)
    }

    /// Encodes every leaf into `staged` and answers the ones the cache holds; the others
    /// get a row in `inputs` (a position asked twice in the batch gets one), listed in `fresh`.
    fn stage(&mut self, leaves: &mut [Leaf<'_, G>]) {
        let (len, layout) = (self.net.layout.input().len(), &self.net.layout);
        let cache = self
            .cache
            .get_or_insert_with(|| EvalCache::new(len, layout.actions()));
        self.staged.resize(leaves.len() * len, 0.0);
        for (l, row) in leaves.iter().zip(self.staged.chunks_exact_mut(len)) {
            self.net.encoder.encode(l.state, l.past, row);
        }
        self.rows.clear();
        self.fresh.clear();
        self.inputs.clear();
        for (k, l) in leaves.iter_mut().enumerate() {
            let planes = &self.staged[k * len..(k + 1) * len];
            let tag = EvalCache::tag(planes);
            if let Some((logits, pre)) = cache.get(tag, planes) {
                legal_softmax(logits, l.legal, l.priors);
                l.value = layout.unit_value(pre);
                self.rows.push(HIT);
                continue;
            }
            let same = |&(j, t): &(usize, u64)| {
                t == tag && same_bits(&self.staged[j * len..(j + 1) * len], planes)
            };
            let row = self.fresh.iter().position(same).unwrap_or_else(|| {
                self.fresh.push((k, tag));
                self.inputs.extend_from_slice(planes);
                self.fresh.len() - 1
            });
            self.rows.push(row);
        }
    }
}

impl<G: Abilities> Evaluator<G> for NetEval<'_, G> {
    fn past(&self) -> usize {
        self.net.past()
    }

    fn evaluate(
        &mut self,
        g: &G,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
        rng: &mut StreamRng,
    ) -> f64 {
        let mut leaf = [Leaf {
            state: s,
            past,
            legal,
            priors,
            rng,
            value: 0.0,
        }];
        self.evaluate_batch(g, &mut leaf);
        leaf[0].value
    }

    /// One forward pass over the leaves the cache does not hold: each gets the bits it would
    /// get alone (the cache's invariant, `cache.rs`).
    fn evaluate_batch(&mut self, _: &G, leaves: &mut [Leaf<'_, G>]) {
        self.stage(leaves);
        let (n, len, na) = (
            self.fresh.len(),
            self.net.layout.input().len(),
            self.net.layout.actions(),
        );
        if n == 0 {
            return;
        }
        self.computed += n as u64;
        let net = self.net;
        net.layout.forward_batch(
            &net.params,
            &net.weights,
            &self.inputs,
            n,
            &mut self.scratch,
        );
        let (logits, values) = (&self.scratch.logits, &self.scratch.values);
        for (l, &row) in leaves.iter_mut().zip(&self.rows) {
            if row != HIT {
                legal_softmax(&logits[row * na..(row + 1) * na], l.legal, l.priors);
                l.value = net.layout.unit_value(values[row]);
            }
        }
        let cache = self.cache.as_mut().expect("staged");
        for (row, &(k, tag)) in self.fresh.iter().enumerate() {
            let planes = &self.staged[k * len..(k + 1) * len];
            cache.put(tag, planes, &logits[row * na..(row + 1) * na], values[row]);
        }
    }
}
