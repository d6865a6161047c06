//! Games that may cycle: levels solved from the lowest up by retrograde analysis, every
//! position found by its rank in a perfect index.
//!
//! docs/solver.md, "Cycles"; design in `docs/solver.md`. A game supplies a level per
//! decision position ([`Solvable::level`]) that no action raises (Chinese dark chess: 2 x
//! face-down pieces + revealed pieces on the board; reduced Chinese Checkers: one level) and a
//! [`PerfectIndex`] that ranks each level's positions onto `0..level_size`. An action that
//! keeps the level is an *internal* move: deterministic, to the other player. Every other
//! action is an *exit* whose value is known once the lower levels are solved (flips through
//! chance, captures, wins).
//!
//! Every per-position array is indexed by rank, so a successor's slot is arithmetic on its
//! key, never a search or a hash probe:
//! 1. **Reachability**, top-down: one bit per rank. A level's positions are all known once
//!    every higher level has been expanded; the level is closed by a search inside it, in
//!    parallel over the frontier (bits set atomically, so the set reached does not depend on
//!    the thread count). The solve on keys ([`solve_keys`], for a game that offers a
//!    [`KeySpace`]) needs no level order: one parallel search over all levels at once.
//! 2. **Values**, bottom-up, one level at a time, in one flat `f64` array per level by rank:
//!    a. in parallel over the level's reachable positions: `best[p]` = the best exit value
//!    (or -inf; lower levels' values by rank) and the internal successors' ranks;
//!    predecessor lists are then built in rank order;
//!    b. sequentially, the exact fixed point: a position whose internal successors are all
//!    final is final with its best value; positions with `best > 0` wait in a max-heap;
//!    when a position becomes final with value v, each predecessor's best rises to -v and
//!    its pending count falls; when nothing more follows, the heap's largest becomes final.
//!    Positive values thus settle in decreasing order, negative ones when their last
//!    successor settles, and what is left can at least keep the game cycling:
//!    `max(best, 0)`.
//!
//! Moves are generated twice per position (once to find the reachable set, once to value
//! it): keeping the successors of the first pass would take far more memory than the values
//! (a flip has one successor per face-down kind), and the generation is cheap next to it.
//! All values derive from the same comparisons and the same sums in the same order, whatever
//! the number of threads.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering as Atomic};

use crate::par;

use super::index::PerfectIndex;
use super::{Progress, Solution, Solvable, SolveError, value_for_pooled};
use crate::game::{Action, ChanceOutcome, Game, Turn};

/// Positions per parallel work unit (at most; see [`chunk_len`]).
const CHUNK: usize = 2048;

/// The smallest work unit.
const MIN_CHUNK: usize = 128;

fn invariant<G: Game>(g: &G, reason: String) -> SolveError {
    SolveError::Invariant {
        variant: g.variant(),
        reason,
    }
}

/// Appends the decision states reached from `s` (through any chance) to `out`.
/// `pool` holds one outcome buffer per chance depth, so nothing is allocated once warm.
fn decisions_of<G: Game>(
    g: &G,
    s: &G::State,
    pool: &mut Vec<Vec<ChanceOutcome>>,
    depth: usize,
    out: &mut Vec<G::State>,
) {
    match g.turn(s) {
        Turn::Terminal(_) => {}
        Turn::Player(_) => out.push(*s),
        Turn::Chance => {
            if pool.len() <= depth {
                pool.resize_with(depth + 1, Vec::new);
            }
            let mut outcomes = std::mem::take(&mut pool[depth]);
            g.chance_outcomes(s, &mut outcomes);
            for o in &outcomes {
                let child = g.apply_chance(s, o.outcome);
                decisions_of(g, &child, pool, depth + 1, out);
            }
            pool[depth] = outcomes;
        }
    }
}

/// One bit per rank of a level, set atomically.
struct Bits(Vec<AtomicU64>);

impl Bits {
    fn new(size: usize) -> Bits {
        Bits((0..size.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    /// Sets bit `r`; true if it was clear. Most successors were reached before, so the bit
    /// is read first and the atomic read-modify-write (a locked instruction) is spent only on
    /// a clear one; of two threads that both read it clear, the `fetch_or` tells the first.
    #[inline]
    fn set(&self, r: u32) -> bool {
        let bit = 1u64 << (r % 64);
        let word = &self.0[(r / 64) as usize];
        word.load(Atomic::Relaxed) & bit == 0 && word.fetch_or(bit, Atomic::Relaxed) & bit == 0
    }

    /// The number of set bits.
    fn count(&self) -> usize {
        self.0
            .iter()
            .map(|w| w.load(Atomic::Relaxed).count_ones() as usize)
            .sum()
    }

    /// The set bits, ascending.
    fn ranks(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (i, w) in self.0.iter().enumerate() {
            let mut w = w.load(Atomic::Relaxed);
            while w != 0 {
                out.push((i * 64) as u32 + w.trailing_zeros());
                w &= w - 1;
            }
        }
        out
    }
}

/// The layered view of a game: its index and the level sizes.
struct Layers<'a, G: Solvable> {
    g: &'a G,
    index: &'a dyn PerfectIndex<G>,
    sizes: Vec<usize>,
}

impl<G: Solvable> Layers<'_, G> {
    /// The (level, rank) of a decision state, checked against the rank space.
    #[inline]
    fn place(&self, s: &G::State) -> Result<(usize, u32), SolveError> {
        let l = self.g.level(s) as usize;
        let r = self.index.rank(self.g, s);
        if l >= self.sizes.len() || r >= self.sizes[l] as u64 {
            return Err(invariant(
                self.g,
                format!(
                    "position {:?} (level {l}) has rank {r}, outside its level's rank space",
                    self.g.key(s)
                ),
            ));
        }
        Ok((l, r as u32))
    }

    fn state(&self, level: usize, r: u32) -> Result<G::State, SolveError> {
        self.index
            .unrank(self.g, level as u32, r as u64)
            .ok_or_else(|| {
                invariant(
                    self.g,
                    format!("rank {r} of level {level} was reached but names no position"),
                )
            })
    }
}

/// The reachable ranks of every level, ascending (decision positions only).
fn reachable<G: Solvable>(
    layers: &Layers<G>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<Vec<u32>>, SolveError> {
    let g = layers.g;
    let bits: Vec<Bits> = layers.sizes.iter().map(|&n| Bits::new(n)).collect();
    let mut seeds = Vec::new();
    decisions_of(g, &g.initial_state(), &mut Vec::new(), 0, &mut seeds);
    for s in &seeds {
        let (l, r) = layers.place(s)?;
        bits[l].set(r);
    }
    close_levels(
        &bits,
        progress,
        |scratch: &mut (Vec<Action>, Vec<Vec<ChanceOutcome>>, Vec<G::State>), level, r, fresh| {
            let (actions, outcomes, reached) = scratch;
            let s = layers.state(level, r)?;
            g.legal_actions(&s, actions);
            for &a in actions.iter() {
                reached.clear();
                decisions_of(g, &g.apply(&s, a), outcomes, 0, reached);
                for d in reached.iter() {
                    let (l, rd) = layers.place(d)?;
                    match l.cmp(&level) {
                        Ordering::Equal => {
                            if bits[l].set(rd) {
                                fresh.push(rd);
                            }
                        }
                        Ordering::Less => {
                            bits[l].set(rd);
                        }
                        Ordering::Greater => {
                            return Err(invariant(
                                g,
                                format!("an action raises the level from {level} to {l}"),
                            ));
                        }
                    }
                }
            }
            Ok(())
        },
    )
}

/// The frame of the generic reachability pass: top-down, each level closed by a search over
/// its frontier (first its ranks reached from above), in parallel by chunks, each with its
/// own `S` scratch. `expand(scratch, level, rank, fresh)` marks a position's successors in
/// `bits` (atomic, so the set does not depend on the thread count) and pushes to `fresh` the
/// ranks of its own level that it marked first. A chunk goes on to expand what it found
/// itself, depth first, up to [`CHUNK`] more positions, and leaves the rest to the next
/// round: a level closes in a few parallel rounds instead of one per breadth-first layer
/// (each round wakes the threads and waits for the slowest). Returns each level's reachable
/// ranks, ascending.
fn close_levels<S: Default>(
    bits: &[Bits],
    progress: &(dyn Fn(Progress) + Sync),
    expand: impl Fn(&mut S, usize, u32, &mut Vec<u32>) -> Result<(), SolveError> + Sync,
) -> Result<Vec<Vec<u32>>, SolveError> {
    let mut levels = vec![Vec::new(); bits.len()];
    let mut found = 0u64;
    for level in (0..bits.len()).rev() {
        let mut frontier = bits[level].ranks();
        while !frontier.is_empty() {
            let per = chunk_len(frontier.len());
            let parts: Vec<Result<Vec<u32>, SolveError>> =
                par::map(par::chunks(frontier.len(), per), |c| {
                    let chunk = par::chunk(&frontier, per, c);
                    let mut stack = Vec::new();
                    let mut scratch = S::default();
                    for &r in chunk {
                        expand(&mut scratch, level, r, &mut stack)?;
                    }
                    for _ in 0..CHUNK {
                        let Some(r) = stack.pop() else { break };
                        expand(&mut scratch, level, r, &mut stack)?;
                    }
                    Ok(stack)
                });
            frontier = Vec::new();
            for p in parts {
                frontier.extend(p?);
            }
        }
        levels[level] = bits[level].ranks();
        found += levels[level].len() as u64;
        progress(Progress::Found(found));
    }
    Ok(levels)
}

/// Keys a search task keeps before it hands half of them to a new task.
const SPLIT: usize = 512;

/// The reachability search on keys: expands the keys of `stack`, depth first, each with
/// `expand(key, stack)`, which pushes the successors it was first to mark. A task whose stack
/// grows past [`SPLIT`] hands the older half to a new task, so both threads stay busy
/// without a barrier anywhere in the search.
fn search<'s, F: Fn(u64, &mut Vec<u64>) + Sync>(
    scope: &rayon::Scope<'s>,
    mut stack: Vec<u64>,
    expand: &'s F,
) {
    while let Some(key) = stack.pop() {
        expand(key, &mut stack);
        if stack.len() > SPLIT {
            let rest = stack.split_off(stack.len() / 2);
            let older = std::mem::replace(&mut stack, rest);
            scope.spawn(move |s| search(s, older, expand));
        }
    }
}

/// The work unit for `n` positions: [`CHUNK`], or smaller for a small level or frontier, so
/// that it still splits into enough units to keep every thread busy to the end.
fn chunk_len(n: usize) -> usize {
    (n / 32).clamp(MIN_CHUNK, CHUNK)
}

/// Solves a game that may cycle (see the module docs).
pub fn solve<G: Solvable>(
    g: &G,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Solution<G::Key>, SolveError> {
    let index = g
        .perfect_index()
        .ok_or_else(|| invariant(g, "the layered solver needs a perfect index".into()))?;
    let mut sizes = Vec::new();
    for s in decisions_start(g) {
        let top = g.level(&s) as usize;
        if sizes.len() <= top {
            sizes.resize(top + 1, 0);
        }
    }
    for (l, size) in sizes.iter_mut().enumerate() {
        let n = index.level_size(l as u32);
        if n > u32::MAX as u64 {
            return Err(SolveError::Unsolvable {
                variant: g.variant(),
                reason: format!("level {l} has {n} ranks; the solver takes at most 2^32"),
            });
        }
        *size = n as usize;
    }
    let layers = Layers {
        g,
        index: &*index,
        sizes,
    };
    let levels = reachable(&layers, progress)?;
    let total: u64 = levels.iter().map(|l| l.len() as u64).sum();
    let mut values: Vec<Vec<f64>> = Vec::with_capacity(levels.len());
    let mut pairs: Vec<(G::Key, f64)> = Vec::with_capacity(total as usize);
    let mut done = 0u64;
    for (level, ranks) in levels.iter().enumerate() {
        let (v, keys) = solve_level(&layers, ranks, &values, level)?;
        pairs.extend(keys.into_iter().zip(ranks.iter().map(|&r| v[r as usize])));
        done += ranks.len() as u64;
        values.push(v);
        progress(Progress::Valued { done, total });
    }
    drop(values);
    Ok(Solution::from_pairs(g.variant(), pairs))
}

/// The decision states of the start (through any chance at the start).
fn decisions_start<G: Game>(g: &G) -> Vec<G::State> {
    let mut seeds = Vec::new();
    decisions_of(g, &g.initial_state(), &mut Vec::new(), 0, &mut seeds);
    seeds
}

/// A max-heap entry of a positive value `v` and a position `p`: larger values first, then
/// smaller positions (so pops are deterministic). For positive finite floats the order of
/// their bits is their numeric order, so the entry is one integer, `v`'s bits over `!p`, and
/// compares as one.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry(u128);

impl Entry {
    #[inline]
    fn new(v: f64, p: u32) -> Entry {
        debug_assert!(v > 0.0 && v.is_finite());
        Entry(((v.to_bits() as u128) << 32) | !p as u128)
    }

    #[inline]
    fn value(self) -> f64 {
        f64::from_bits((self.0 >> 32) as u64)
    }

    #[inline]
    fn position(self) -> u32 {
        !(self.0 as u32)
    }
}

/// Per chunk of positions: keys, best exit values, internal-move counts, successor ranks.
type ChunkEdges<K> = (Vec<K>, Vec<f64>, Vec<u32>, Vec<u32>);

/// Empty per-chunk buffers for `n` positions.
fn chunk_edges<K>(n: usize) -> ChunkEdges<K> {
    (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::new(),
    )
}

/// Values by rank of `level` (its reachable positions `ranks`), given the values of every
/// lower level; with the keys of `ranks`, in their order.
fn solve_level<G: Solvable>(
    layers: &Layers<G>,
    ranks: &[u32],
    lower: &[Vec<f64>],
    level: usize,
) -> Result<(Vec<f64>, Vec<G::Key>), SolveError> {
    let g = layers.g;
    let size = layers.sizes[level];
    if ranks.is_empty() {
        return Ok((vec![0.0; size], Vec::new()));
    }
    // Values of decision states at lower levels (for exits), by rank.
    let lookup = |t: &G::State| -> Option<f64> {
        let (l, r) = layers.place(t).ok()?;
        if l >= level {
            return None;
        }
        Some(lower[l][r as usize])
    };

    // Phase 1, parallel: exits and internal edges.
    let per = chunk_len(ranks.len());
    let chunks: Vec<Result<ChunkEdges<G::Key>, SolveError>> =
        par::map(par::chunks(ranks.len(), per), |c| {
            let chunk = par::chunk(ranks, per, c);
            let (mut keys, mut best, mut counts, mut succ) = chunk_edges(chunk.len());
            let mut actions: Vec<Action> = Vec::new();
            let mut pool = Vec::new();
            for &r in chunk {
                let s = layers.state(level, r)?;
                let k = g.key(&s);
                let Turn::Player(mover) = g.turn(&s) else {
                    return Err(invariant(g, format!("position {k:?} is not a decision")));
                };
                g.legal_actions(&s, &mut actions);
                let mut b = f64::NEG_INFINITY;
                let mut internal = 0u32;
                for &a in &actions {
                    let child = g.apply(&s, a);
                    match g.turn(&child) {
                        Turn::Player(q) if g.level(&child) as usize == level => {
                            if q == mover {
                                return Err(invariant(
                                    g,
                                    format!("an internal move of {k:?} keeps the same mover"),
                                ));
                            }
                            succ.push(layers.place(&child)?.1);
                            internal += 1;
                        }
                        _ => {
                            let v = value_for_pooled(g, &child, mover, &lookup, &mut pool, 0)
                                .ok_or_else(|| {
                                    invariant(
                                        g,
                                        format!(
                                            "an exit of {k:?} (action {a}) reaches no lower level"
                                        ),
                                    )
                                })?;
                            b = b.max(v);
                        }
                    }
                }
                keys.push(k);
                best.push(b);
                counts.push(internal);
            }
            Ok((keys, best, counts, succ))
        });

    let mut keys = Vec::with_capacity(ranks.len());
    let value = gather_and_settle(ranks, size, chunks, &mut keys)?;
    Ok((value, keys))
}

/// The rank space from which a level's arrays are worth handing back once it is solved
/// (tens of megabytes; below it, handing back and faulting the pages in again for the next
/// level costs more than it saves: PPPP's levels are all smaller).
const TRIM_LEVEL: usize = 1 << 18;

/// Hands the allocator's free memory back to the system. The per-chunk buffers of a level are
/// allocated on the worker threads and freed after the level is settled; glibc keeps such
/// freed blocks in its per-thread arenas, where the next levels' larger arrays cannot reuse
/// them, so without this the process's peak holds tens of megabytes of free memory (CDC
/// GGCC: about 40 MiB at the end of the solve; docs/solver.md, "Measured against a hash
/// map").
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's arenas to the system;
    // no live allocation is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Phase 1's chunks of one level gathered into per-rank arrays (ranks not reachable stay
/// untouched: nothing reachable leads there), their keys appended to `keys`, then the fixed
/// point. Returns the values by rank.
fn gather_and_settle<K>(
    ranks: &[u32],
    size: usize,
    chunks: Vec<Result<ChunkEdges<K>, SolveError>>,
    keys: &mut Vec<K>,
) -> Result<Vec<f64>, SolveError> {
    let mut best = vec![f64::NEG_INFINITY; size];
    let mut pending = vec![0u32; size];
    // Sized exactly: grown by doubling, the list would briefly need up to twice its size.
    let edges = chunks
        .iter()
        .map(|c| c.as_ref().map_or(0, |c| c.3.len()))
        .sum();
    let mut succ = Vec::with_capacity(edges);
    let mut at = 0;
    for c in chunks {
        let (k, b, p, s) = c?;
        for i in 0..b.len() {
            let r = ranks[at + i] as usize;
            best[r] = b[i];
            pending[r] = p[i];
        }
        at += b.len();
        keys.extend(k);
        succ.extend(s);
    }
    Ok(fixed_point(ranks, best, pending, succ))
}

/// Predecessor lists (CSR by rank) of one level, from the internal successors `succ` of
/// `ranks` in their order (`pending` by rank: each one's count): t's list is
/// `preds[start[t + 1]..start[t + 2]]`. The counts are prefix-summed so that `start[t + 1]` is
/// the end of t's list, then the lists are filled from their ends, ranks and successors taken
/// in reverse; so each list ends up in rank order (the order a forward fill gives) without a
/// second cursor array. Returns `(start, preds)`; `succ` is freed before the caller's next
/// allocation.
fn predecessors(ranks: &[u32], pending: &[u32], succ: Vec<u32>) -> (Vec<u32>, Vec<u32>) {
    let size = pending.len();
    let mut start = vec![0u32; size + 2];
    for &t in &succ {
        start[t as usize + 1] += 1;
    }
    for i in 0..size {
        start[i + 1] += start[i];
    }
    start[size + 1] = succ.len() as u32;
    let mut preds = vec![0u32; succ.len()];
    let mut e = succ.len();
    for &p in ranks.iter().rev() {
        let count = pending[p as usize] as usize;
        e -= count;
        for &t in succ[e..e + count].iter().rev() {
            start[t as usize + 1] -= 1;
            preds[start[t as usize + 1] as usize] = p;
        }
    }
    (start, preds)
}

/// The exact fixed point of one level (module docs, 2b): `best` and `pending` by rank (exit
/// values and internal-move counts; ranks not reachable untouched), `succ` the internal
/// successors' ranks of `ranks` in their order. Returns the values by rank.
fn fixed_point(
    ranks: &[u32],
    mut best: Vec<f64>,
    mut pending: Vec<u32>,
    succ: Vec<u32>,
) -> Vec<f64> {
    let size = best.len();
    let (start, preds) = predecessors(ranks, &pending, succ);

    // Phase 2, sequential: the exact fixed point. A position's value is its `best` once it is
    // final (`best` of a final position is never changed again), so one array serves both.
    let mut is_final = vec![false; size];
    let mut settled: Vec<u32> = Vec::new();
    // The positions waiting with a positive value: those known at the start sorted once
    // (`ready`, largest last), those raised later in a heap; the next to settle is the larger
    // of the two tops. Entries are distinct, so this pops exactly what one heap of them all
    // would, for far less work (about half of a level's positions start with a winning exit;
    // few are raised later).
    let mut ready = Vec::new();
    let mut heap = BinaryHeap::new();
    for &p in ranks {
        let p = p as usize;
        if pending[p] == 0 {
            is_final[p] = true;
            if !best[p].is_finite() {
                best[p] = -1.0;
            }
            settled.push(p as u32);
        } else if best[p] > 0.0 {
            ready.push(Entry::new(best[p], p as u32));
        }
    }
    ready.sort_unstable();
    loop {
        while let Some(t) = settled.pop() {
            let v = -best[t as usize];
            let range = start[t as usize + 1] as usize..start[t as usize + 2] as usize;
            for &p in &preds[range] {
                let p = p as usize;
                if is_final[p] {
                    continue;
                }
                pending[p] -= 1;
                if v > best[p] {
                    best[p] = v;
                    if v > 0.0 {
                        heap.push(Entry::new(v, p as u32));
                    }
                }
                if pending[p] == 0 {
                    is_final[p] = true;
                    settled.push(p as u32);
                }
            }
        }
        let next = match (ready.last(), heap.peek()) {
            (Some(a), Some(b)) if b > a => heap.pop(),
            (Some(_), _) => ready.pop(),
            (None, _) => heap.pop(),
        };
        match next {
            Some(e) => {
                let (w, p) = (e.value(), e.position());
                if !is_final[p as usize] {
                    // The first entry of a position to come out is its latest best.
                    debug_assert_eq!(w.to_bits(), best[p as usize].to_bits());
                    is_final[p as usize] = true;
                    best[p as usize] = w;
                    settled.push(p);
                }
            }
            None => break,
        }
    }
    for &p in ranks {
        let p = p as usize;
        if !is_final[p] {
            best[p] = best[p].max(0.0);
        }
        // One zero: a draw reached through a negated 0 would otherwise be -0.0 or +0.0
        // depending on the order positions settled in, and the stored bytes would follow it.
        best[p] += 0.0;
    }
    // Ranks no position reaches hold 0, as they always have.
    for b in &mut best {
        if *b == f64::NEG_INFINITY {
            *b = 0.0;
        }
    }
    best
}

/// A layered game seen through its keys alone, for [`solve_keys`] (`docs/solver.md`, "Solving
/// on keys"): the game expands a decision position straight from its key and ranks its
/// successors from theirs, so the hot loops build, copy and re-check no game state. Keys are
/// the game's own ([`Game::Key`], here a `u64`); levels and ranks are those of the game's
/// [`Solvable::level`] and its perfect index.
///
/// Invariants the solve relies on (each game's tests hold its implementation to its `Game`
/// step, bit for bit): an internal successor keeps the level and passes the turn; an exit's
/// decision positions lie exactly one level lower; `place` of any key that `start` or `expand`
/// gives lies inside its level's rank space, and `unrank` of that rank gives the key back.
pub(crate) trait KeySpace: Sync {
    /// What [`KeySpace::unrank`] carries from one rank to the next of an ascending run.
    type Hint: Default;

    /// The game's variant name (the solution's, and the errors').
    fn variant(&self) -> String;

    /// The key of the start position, a decision position at the top level.
    fn start(&self) -> u64;

    /// The size of `level`'s rank space (at most 2^32).
    fn level_size(&self, level: usize) -> usize;

    /// The (level, rank) of the key of a decision position that `start` or `expand` gave.
    /// Unchecked (it runs once per successor in both passes): a key of any other kind may
    /// give a meaningless place.
    fn place(&self, key: u64) -> (usize, u32);

    /// The key of rank `r` of `level`, or `None` when no position has it; `hint` is the
    /// previous call's of an ascending run (start from `Default`).
    fn unrank(&self, level: usize, r: u32, hint: &mut Self::Hint) -> Option<u64>;

    /// Expands decision position `key`: each internal move's successor key goes to
    /// `internal`; each exit's decision positions (one level lower, the other side to move)
    /// go to `lower`, which answers their value for their side to move. Returns the best
    /// exit value for the mover (`-inf` when every move is internal), summed over chance in
    /// the game's outcome order (as [`value_for_pooled`] does).
    fn expand(
        &self,
        key: u64,
        internal: &mut impl FnMut(u64),
        lower: &mut impl FnMut(u64) -> f64,
    ) -> f64;
}

/// The layered solve on keys alone ([`KeySpace`], `docs/solver.md`, "Solving on keys"): the
/// same two passes and the same fixed point as [`solve`], but every position is expanded from
/// its key and its successors ranked from theirs, so no game state is built, copied or
/// re-checked in the hot loops. The solution is the one [`solve`] gives, byte for byte
/// (tested for Chinese dark chess). `space` is dropped before the final sort, so its tables
/// do not add to the peak.
pub(crate) fn solve_keys<K: KeySpace>(
    space: K,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Solution<u64>, SolveError> {
    let variant = space.variant();
    let start = space.start();
    let top = space.place(start).0;
    let sizes: Vec<usize> = (0..=top).map(|l| space.level_size(l)).collect();
    let bits = reach_keys(&space, start, &sizes);
    // Each level's reachable ranks are listed from its bits when its values are computed
    // (the bits take a bit per rank; the lists of every level would take 32).
    let total: usize = bits.iter().map(Bits::count).sum();
    progress(Progress::Found(total as u64));
    let (mut keys, mut values) = value_keys(&space, &variant, &sizes, &bits, total, progress)?;
    drop(bits);
    drop(space);
    release_free_memory();
    // The solution: keys and values sorted together, in place (no second array of either).
    sort_together(&mut keys, &mut values);
    Ok(Solution::from_sorted(variant, keys, values))
}

/// Pass 1 of [`solve_keys`]: reachability, one parallel search over all levels at once (the
/// set reached does not depend on the order, so no level waits for the one above). Returns
/// one bit per rank of each level.
fn reach_keys<K: KeySpace>(space: &K, start: u64, sizes: &[usize]) -> Vec<Bits> {
    let bits: Vec<Bits> = sizes.iter().map(|&n| Bits::new(n)).collect();
    let (l0, r0) = space.place(start);
    bits[l0].set(r0);
    let expand = |key: u64, stack: &mut Vec<u64>| {
        // Both of `expand`'s callbacks push to the stack (never at the same time).
        let stack = std::cell::RefCell::new(stack);
        let mark = |k: u64| {
            let (l, rk) = space.place(k);
            if bits[l].set(rk) {
                stack.borrow_mut().push(k);
            }
        };
        space.expand(key, &mut |k| mark(k), &mut |k| {
            mark(k);
            0.0
        });
    };
    rayon::scope(|s| search(s, vec![start], &expand));
    bits
}

/// Pass 2 of [`solve_keys`], bottom-up: values. Exits lead one level down (a flip or a
/// capture; checked in debug), so only the level below is read by rank; once the level above
/// it is solved, its values join the solution's at its reachable ranks, in the order its keys
/// were appended (level by level, ranks ascending). So the keys and values returned stay
/// aligned and no level's rank-sized array outlives the next level.
fn value_keys<K: KeySpace>(
    space: &K,
    variant: &str,
    sizes: &[usize],
    bits: &[Bits],
    total: usize,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Vec<u64>, Vec<f64>), SolveError> {
    let mut all_keys: Vec<u64> = Vec::with_capacity(total);
    let mut all_values: Vec<f64> = Vec::with_capacity(total);
    let mut below: (Vec<u32>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut done = 0u64;
    for (level, &size) in sizes.iter().enumerate() {
        let ranks = bits[level].ranks();
        let chunks = level_edges(space, variant, level, &ranks, &below.1);
        let v = gather_and_settle(&ranks, size, chunks, &mut all_keys)?;
        let (old_ranks, old_values) = std::mem::replace(&mut below, (ranks, v));
        all_values.extend(old_ranks.iter().map(|&r| old_values[r as usize]));
        drop(old_values);
        if size >= TRIM_LEVEL {
            release_free_memory();
        }
        done += below.0.len() as u64;
        progress(Progress::Valued {
            done,
            total: total as u64,
        });
    }
    all_values.extend(below.0.iter().map(|&r| below.1[r as usize]));
    Ok((all_keys, all_values))
}

/// Phase 1 of one level on keys (module docs, 2a), in parallel by chunks: each reachable
/// rank's key, best exit value (exits valued by `lower`, the level below by rank) and
/// internal successors' ranks.
fn level_edges<K: KeySpace>(
    space: &K,
    variant: &str,
    level: usize,
    ranks: &[u32],
    lower: &[f64],
) -> Vec<Result<ChunkEdges<u64>, SolveError>> {
    let per = chunk_len(ranks.len());
    par::map(par::chunks(ranks.len(), per), |c| {
        let chunk = par::chunk(ranks, per, c);
        let (mut keys, mut best, mut counts, mut succ) = chunk_edges(chunk.len());
        let mut hint = K::Hint::default();
        for &r in chunk {
            let key = space
                .unrank(level, r, &mut hint)
                .ok_or_else(|| SolveError::Invariant {
                    variant: variant.to_string(),
                    reason: format!("rank {r} of level {level} was reached but names no position"),
                })?;
            let before = succ.len();
            let b = space.expand(key, &mut |k| succ.push(space.place(k).1), &mut |k| {
                let (l, rk) = space.place(k);
                debug_assert_eq!(l + 1, level);
                lower[rk as usize]
            });
            keys.push(key);
            best.push(b);
            counts.push((succ.len() - before) as u32);
        }
        Ok((keys, best, counts, succ))
    })
}

/// Ranges shorter than this are sorted by insertion.
const SORT_SMALL: usize = 24;

/// Ranges longer than this sort their two parts on two threads.
const SORT_PARALLEL: usize = 1 << 15;

/// Sorts `keys` ascending and `values` with them (the same permutation), in place: a
/// quicksort (median-of-three pivot, insertion sort for short ranges, heapsort past a depth
/// limit, the two parts in parallel for long ranges). The keys are distinct, so the result
/// is the one sorted order whatever the algorithm or the thread count.
fn sort_together(keys: &mut [u64], values: &mut [f64]) {
    assert_eq!(keys.len(), values.len());
    let depth = 2 * (usize::BITS - keys.len().leading_zeros());
    quicksort_together(keys, values, depth);
}

fn quicksort_together(keys: &mut [u64], values: &mut [f64], depth: u32) {
    let n = keys.len();
    if n <= SORT_SMALL {
        for i in 1..n {
            let mut j = i;
            while j > 0 && keys[j - 1] > keys[j] {
                keys.swap(j - 1, j);
                values.swap(j - 1, j);
                j -= 1;
            }
        }
        return;
    }
    if depth == 0 {
        heapsort_together(keys, values);
        return;
    }
    // Median of the first, middle and last keys, moved to the end.
    let (a, b, c) = (0, n / 2, n - 1);
    let m = if (keys[a] < keys[b]) == (keys[b] < keys[c]) {
        b
    } else if (keys[b] < keys[a]) == (keys[a] < keys[c]) {
        a
    } else {
        c
    };
    keys.swap(m, n - 1);
    values.swap(m, n - 1);
    let pivot = keys[n - 1];
    let mut store = 0;
    for i in 0..n - 1 {
        if keys[i] < pivot {
            keys.swap(i, store);
            values.swap(i, store);
            store += 1;
        }
    }
    keys.swap(store, n - 1);
    values.swap(store, n - 1);
    let (kl, kr) = keys.split_at_mut(store);
    let (vl, vr) = values.split_at_mut(store);
    let (kr, vr) = (&mut kr[1..], &mut vr[1..]);
    if n > SORT_PARALLEL {
        rayon::join(
            || quicksort_together(kl, vl, depth - 1),
            || quicksort_together(kr, vr, depth - 1),
        );
    } else {
        quicksort_together(kl, vl, depth - 1);
        quicksort_together(kr, vr, depth - 1);
    }
}

fn heapsort_together(keys: &mut [u64], values: &mut [f64]) {
    let n = keys.len();
    let sift = |keys: &mut [u64], values: &mut [f64], mut root: usize, end: usize| loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && keys[child] < keys[child + 1] {
            child += 1;
        }
        if keys[root] >= keys[child] {
            return;
        }
        keys.swap(root, child);
        values.swap(root, child);
        root = child;
    };
    for i in (0..n / 2).rev() {
        sift(keys, values, i, n);
    }
    for end in (1..n).rev() {
        keys.swap(0, end);
        values.swap(0, end);
        sift(keys, values, 0, end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sort_together` gives the order of sorting the (key, value) pairs, on every path:
    /// insertion sort, quicksort, the parallel split and the heapsort past the depth limit.
    #[test]
    fn sort_together_sorts_values_with_their_keys() {
        for n in [0, 1, 2, 5, 24, 25, 1000, 3 * SORT_PARALLEL] {
            // Distinct keys in a scrambled order (an odd multiplier is a bijection), some
            // runs ascending or descending as in a solve's level-by-level order.
            let mut keys: Vec<u64> = (0..n as u64)
                .map(|i| match i % 3 {
                    0 => i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 8,
                    1 => (1 << 60) + i,
                    _ => (1 << 61) - i,
                })
                .collect();
            let mut values: Vec<f64> = keys.iter().map(|&k| pseudo(k)).collect();
            let mut want: Vec<(u64, u64)> = keys
                .iter()
                .zip(&values)
                .map(|(&k, v)| (k, v.to_bits()))
                .collect();
            want.sort_unstable();
            let (mut k2, mut v2) = (keys.clone(), values.clone());
            sort_together(&mut keys, &mut values);
            let got: Vec<(u64, u64)> = keys
                .iter()
                .zip(&values)
                .map(|(&k, v)| (k, v.to_bits()))
                .collect();
            assert_eq!(got, want, "n = {n}");
            heapsort_together(&mut k2, &mut v2);
            assert_eq!(k2, keys, "heapsort, n = {n}");
            assert_eq!(v2, values, "heapsort, n = {n}");
        }
    }

    /// A fixed pseudo-value in [-1, 1) per key, standing in for solved lower levels.
    fn pseudo(k: u64) -> f64 {
        let h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k >> 29);
        (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}
