//! A plain hash-map prototype of the layered solve, the baseline the perfect-index solver is
//! measured against (`docs/solver.md`, "Measured against a hash map").
//!
//! Same definition and the same retrograde analysis as `tabula::solver::layered`, written
//! the obvious way: breadth-first enumeration into a `std` `HashMap` from position key to
//! index, one thread, successors found by hashing their keys. It prints the number of
//! positions, the start value and the seconds taken, nothing is stored.
//!
//!     cargo run --release --example hashmap_solver -- cdc:GGCC

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Instant;

use tabula::game::{Action, Game, Player, Turn};
use tabula::solver::{Solvable, to_unit, value_for};

/// The decision states reached from `s` through any chance.
fn decisions<G: Game>(g: &G, s: &G::State, out: &mut Vec<G::State>) {
    match g.turn(s) {
        Turn::Terminal(_) => {}
        Turn::Player(_) => out.push(*s),
        Turn::Chance => {
            let mut os = Vec::new();
            g.chance_outcomes(s, &mut os);
            for o in os {
                decisions(g, &g.apply_chance(s, o.outcome), out);
            }
        }
    }
}

#[derive(PartialEq)]
struct Entry(f64, usize);
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(o.1.cmp(&self.1))
    }
}

fn run<G: Solvable>(g: &G) -> (usize, f64) {
    // Enumerate: key -> index, with each position's level.
    let mut index: HashMap<G::Key, usize> = HashMap::new();
    let mut keys: Vec<G::Key> = Vec::new();
    let mut queue = VecDeque::new();
    let mut found = Vec::new();
    decisions(g, &g.initial_state(), &mut found);
    for s in found.drain(..) {
        let k = g.key(&s);
        if let std::collections::hash_map::Entry::Vacant(e) = index.entry(k) {
            e.insert(keys.len());
            keys.push(k);
            queue.push_back(k);
        }
    }
    let mut actions: Vec<Action> = Vec::new();
    while let Some(k) = queue.pop_front() {
        let s = g.state_from_key(k).expect("reachable keys decode");
        g.legal_actions(&s, &mut actions);
        for &a in &actions {
            decisions(g, &g.apply(&s, a), &mut found);
            for t in found.drain(..) {
                let kt = g.key(&t);
                if let std::collections::hash_map::Entry::Vacant(e) = index.entry(kt) {
                    e.insert(keys.len());
                    keys.push(kt);
                    queue.push_back(kt);
                }
            }
        }
    }
    let n = keys.len();
    let levels: Vec<u32> = keys
        .iter()
        .map(|&k| g.level(&g.state_from_key(k).unwrap()))
        .collect();
    let top = levels.iter().copied().max().unwrap_or(0);
    let mut value = vec![0.0f64; n];
    let mut solved = vec![false; n];
    let mut best = vec![f64::NEG_INFINITY; n];
    let mut pending = vec![0u32; n];
    let mut done = vec![false; n];
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for level in 0..=top {
        let members: Vec<usize> = (0..n).filter(|&i| levels[i] == level).collect();
        for &i in &members {
            let s = g.state_from_key(keys[i]).unwrap();
            let Turn::Player(me) = g.turn(&s) else {
                panic!("not a decision")
            };
            g.legal_actions(&s, &mut actions);
            for &a in &actions {
                let t = g.apply(&s, a);
                match g.turn(&t) {
                    Turn::Player(_) if g.level(&t) == level => {
                        preds[index[&g.key(&t)]].push(i);
                        pending[i] += 1;
                    }
                    _ => {
                        let lookup = |u: &G::State| {
                            let j = *index.get(&g.key(u))?;
                            solved[j].then_some(value[j])
                        };
                        let v = value_for(g, &t, me, &lookup).expect("exit valued");
                        best[i] = best[i].max(v);
                    }
                }
            }
        }
        let mut settled = Vec::new();
        let mut heap = BinaryHeap::new();
        for &i in &members {
            if pending[i] == 0 {
                done[i] = true;
                value[i] = if best[i].is_finite() { best[i] } else { -1.0 };
                settled.push(i);
            } else if best[i] > 0.0 {
                heap.push(Entry(best[i], i));
            }
        }
        loop {
            while let Some(t) = settled.pop() {
                let v = -value[t];
                for &p in &preds[t] {
                    if done[p] {
                        continue;
                    }
                    pending[p] -= 1;
                    if v > best[p] {
                        best[p] = v;
                        if v > 0.0 {
                            heap.push(Entry(v, p));
                        }
                    }
                    if pending[p] == 0 {
                        done[p] = true;
                        value[p] = best[p];
                        settled.push(p);
                    }
                }
            }
            match heap.pop() {
                Some(Entry(w, p)) => {
                    if !done[p] {
                        done[p] = true;
                        value[p] = w;
                        settled.push(p);
                    }
                }
                None => break,
            }
        }
        for &i in &members {
            if !done[i] {
                value[i] = best[i].max(0.0);
            }
            solved[i] = true;
            preds[i] = Vec::new();
        }
    }
    let lookup = |u: &G::State| index.get(&g.key(u)).map(|&j| value[j]);
    let v0 = value_for(g, &g.initial_state(), Player::P0, &lookup).expect("start valued");
    (n, v0)
}

fn main() {
    let variant = std::env::args().nth(1).unwrap_or_else(|| "cdc:PPPP".into());
    let game: tabula::AnyGame = match variant.parse() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let start = Instant::now();
    let (n, v0) = match &game {
        tabula::AnyGame::Cdc(g) => run(g),
        tabula::AnyGame::Checkers(g) => run(g),
        _ => {
            eprintln!("{variant}: the prototype takes the layered games (cdc 2x4, checkers)");
            std::process::exit(2);
        }
    };
    println!(
        "{{\"variant\":\"{variant}\",\"positions\":{n},\"value\":{},\"seconds\":{:.3}}}",
        to_unit(v0),
        start.elapsed().as_secs_f64()
    );
}
