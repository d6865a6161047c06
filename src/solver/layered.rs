//! Games that may cycle: levels solved from the lowest up by retrograde analysis.
//!
//! Spec `solver.md`, "Cycles". A game supplies a level per decision position
//! ([`Solvable::level`]) that no action raises (Chinese dark chess: 2 x face-down pieces +
//! revealed pieces on the board; reduced Chinese Checkers: one level). An action that keeps
//! the level is an *internal* move: deterministic, to the other player. Every other action is
//! an *exit* whose value is known once the lower levels are solved (flips through chance,
//! captures, wins).
//!
//! Enumeration goes top-down: a level's positions are all known once every higher level has
//! been expanded, so each level is closed by a breadth-first search inside it, in parallel
//! over the frontier. Solving goes bottom-up, one level at a time:
//! 1. in parallel over positions: `best[p]` = the best exit value (or -inf) and the list of
//!    internal successors; predecessor lists are then built in position order;
//! 2. sequentially, the exact fixed point: a position whose internal successors are all final
//!    is final with its best value; positions with `best > 0` wait in a max-heap; when a
//!    position becomes final with value v, each predecessor's best rises to -v and its pending
//!    count falls; when nothing more follows, the heap's largest becomes final. Positive
//!    values thus settle in decreasing order, negative ones when their last successor settles,
//!    and what is left can at least keep the game cycling: `max(best, 0)`.
//!
//! All values derive from the same comparisons and the same sums in the same order, whatever
//! the number of threads.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

use rayon::prelude::*;

use super::fasthash::FastSet;
use super::{Progress, Solution, Solvable, SolveError, value_for_pooled};
use crate::game::{Action, ChanceOutcome, Game, Turn};

/// Positions per parallel work unit.
const CHUNK: usize = 2048;

fn invariant<G: Game>(g: &G, reason: String) -> SolveError {
    SolveError::Invariant {
        variant: g.variant(),
        reason,
    }
}

fn decode<G: Game>(g: &G, k: G::Key) -> Result<G::State, SolveError> {
    g.state_from_key(k)
        .map_err(|e| invariant(g, format!("a reachable key does not decode: {e}")))
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

/// Successor keys of a frontier chunk: in the same level, and (level, key) below it.
type Expansion<K> = (Vec<K>, Vec<(u32, K)>);

/// The keys of every reachable decision position, per level, sorted.
pub fn enumerate<G: Solvable>(
    g: &G,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<Vec<G::Key>>, SolveError> {
    let mut pending: BTreeMap<u32, FastSet<G::Key>> = BTreeMap::new();
    let mut seeds = Vec::new();
    decisions_of(g, &g.initial_state(), &mut Vec::new(), 0, &mut seeds);
    for s in &seeds {
        pending.entry(g.level(s)).or_default().insert(g.key(s));
    }
    let top = pending.keys().next_back().copied().unwrap_or(0);
    let mut levels: Vec<Vec<G::Key>> = vec![Vec::new(); top as usize + 1];
    let mut found = 0u64;
    while let Some((level, mut set)) = pending.pop_last() {
        let mut frontier: Vec<G::Key> = set.iter().copied().collect();
        while !frontier.is_empty() {
            let expanded: Vec<Result<Expansion<G::Key>, SolveError>> = frontier
                .par_chunks(CHUNK)
                .map(|chunk| {
                    let mut same = Vec::new();
                    let mut lower = Vec::new();
                    let mut actions: Vec<Action> = Vec::new();
                    let mut outcomes = Vec::new();
                    let mut reached = Vec::new();
                    for &k in chunk {
                        let s = decode(g, k)?;
                        g.legal_actions(&s, &mut actions);
                        for &a in &actions {
                            reached.clear();
                            decisions_of(g, &g.apply(&s, a), &mut outcomes, 0, &mut reached);
                            for d in &reached {
                                let l = g.level(d);
                                match l.cmp(&level) {
                                    Ordering::Equal => same.push(g.key(d)),
                                    Ordering::Less => lower.push((l, g.key(d))),
                                    Ordering::Greater => {
                                        return Err(invariant(
                                            g,
                                            format!(
                                                "an action raises the level from {level} to {l}"
                                            ),
                                        ));
                                    }
                                }
                            }
                        }
                    }
                    Ok((same, lower))
                })
                .collect();
            let mut next = Vec::new();
            for r in expanded {
                let (same, lower) = r?;
                for k in same {
                    if set.insert(k) {
                        next.push(k);
                    }
                }
                for (l, k) in lower {
                    pending.entry(l).or_default().insert(k);
                }
            }
            frontier = next;
        }
        let mut keys: Vec<G::Key> = set.into_iter().collect();
        keys.par_sort_unstable();
        found += keys.len() as u64;
        progress(Progress::Found(found));
        levels[level as usize] = keys;
    }
    Ok(levels)
}

/// Solves a game that may cycle (see the module docs).
pub fn solve<G: Solvable>(
    g: &G,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Solution<G::Key>, SolveError> {
    let levels = enumerate(g, progress)?;
    let total: u64 = levels.iter().map(|l| l.len() as u64).sum();
    let mut values: Vec<Vec<f64>> = Vec::with_capacity(levels.len());
    let mut done = 0u64;
    for level in 0..levels.len() {
        let v = solve_level(g, &levels, &values, level)?;
        done += v.len() as u64;
        values.push(v);
        progress(Progress::Valued { done, total });
    }
    let mut pairs = Vec::with_capacity(total as usize);
    for (keys, vals) in levels.into_iter().zip(values) {
        pairs.extend(keys.into_iter().zip(vals));
    }
    Ok(Solution::from_pairs(g.variant(), pairs))
}

/// A max-heap entry: value, then position (so pops are deterministic).
#[derive(PartialEq)]
struct Entry(f64, u32);

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

/// Per chunk of positions: best exit values, internal-move counts, successor indices.
type ChunkEdges = (Vec<f64>, Vec<u32>, Vec<u32>);

/// Values of the positions of `level`, given the values of every lower level.
fn solve_level<G: Solvable>(
    g: &G,
    levels: &[Vec<G::Key>],
    lower: &[Vec<f64>],
    level: usize,
) -> Result<Vec<f64>, SolveError> {
    let keys = &levels[level];
    let n = keys.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    // Values of decision states at lower levels (for exits).
    let lookup = |t: &G::State| -> Option<f64> {
        let l = g.level(t) as usize;
        if l >= level {
            return None;
        }
        let i = levels[l].binary_search(&g.key(t)).ok()?;
        Some(lower[l][i])
    };

    // Phase 1, parallel: exits and internal edges.
    let chunks: Vec<Result<ChunkEdges, SolveError>> = keys
        .par_chunks(CHUNK)
        .map(|chunk| {
            let mut best = Vec::with_capacity(chunk.len());
            let mut counts = Vec::with_capacity(chunk.len());
            let mut succ = Vec::new();
            let mut actions: Vec<Action> = Vec::new();
            let mut pool = Vec::new();
            for &k in chunk {
                let s = decode(g, k)?;
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
                            let t = keys.binary_search(&g.key(&child)).map_err(|_| {
                                invariant(g, format!("a successor of {k:?} was not enumerated"))
                            })?;
                            succ.push(t as u32);
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
                best.push(b);
                counts.push(internal);
            }
            Ok((best, counts, succ))
        })
        .collect();

    let mut best = Vec::with_capacity(n);
    let mut pending = Vec::with_capacity(n);
    let mut succ = Vec::new();
    for c in chunks {
        let (b, p, s) = c?;
        best.extend(b);
        pending.extend(p);
        succ.extend(s);
    }

    // Predecessor lists (CSR), filled in position order.
    let mut pred_start = vec![0u32; n + 1];
    for &t in &succ {
        pred_start[t as usize + 1] += 1;
    }
    for i in 0..n {
        pred_start[i + 1] += pred_start[i];
    }
    let mut fill = pred_start.clone();
    let mut preds = vec![0u32; succ.len()];
    let mut e = 0;
    for (p, &count) in pending.iter().enumerate() {
        for &t in &succ[e..e + count as usize] {
            preds[fill[t as usize] as usize] = p as u32;
            fill[t as usize] += 1;
        }
        e += count as usize;
    }
    drop(succ);
    drop(fill);

    // Phase 2, sequential: the exact fixed point.
    let mut value = vec![0.0f64; n];
    let mut is_final = vec![false; n];
    let mut settled: Vec<u32> = Vec::new();
    let mut heap = BinaryHeap::new();
    for p in 0..n {
        if pending[p] == 0 {
            is_final[p] = true;
            value[p] = if best[p].is_finite() { best[p] } else { -1.0 };
            settled.push(p as u32);
        } else if best[p] > 0.0 {
            heap.push(Entry(best[p], p as u32));
        }
    }
    loop {
        while let Some(t) = settled.pop() {
            let v = -value[t as usize];
            let range = pred_start[t as usize] as usize..pred_start[t as usize + 1] as usize;
            for &p in &preds[range] {
                let p = p as usize;
                if is_final[p] {
                    continue;
                }
                pending[p] -= 1;
                if v > best[p] {
                    best[p] = v;
                    if v > 0.0 {
                        heap.push(Entry(v, p as u32));
                    }
                }
                if pending[p] == 0 {
                    is_final[p] = true;
                    value[p] = best[p];
                    settled.push(p as u32);
                }
            }
        }
        match heap.pop() {
            Some(Entry(w, p)) => {
                if !is_final[p as usize] {
                    is_final[p as usize] = true;
                    value[p as usize] = w;
                    settled.push(p);
                }
            }
            None => break,
        }
    }
    for p in 0..n {
        if !is_final[p] {
            value[p] = best[p].max(0.0);
        }
    }
    Ok(value)
}
