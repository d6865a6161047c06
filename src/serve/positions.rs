//! `/api/positions?run=ID&position=P[&past=P1;P2;...]`: the policy and value of a run's model
//! at one position across iterations, against the position's exact values (the 2023 study's
//! Fig. 22; docs/dashboard.md "Positions"). `past` gives the game's earlier decision positions,
//! oldest first, for a network whose input reads the game's history (docs/network.md,
//! "Inputs"); without it a position is evaluated as the first of its game.
//!
//! Only models whose checkpoints are stored in full are evaluated: restoring one reads it
//! from the store (milliseconds), while a derived checkpoint is rebuilt by re-training from
//! the games (docs/store.md, "Derived snapshots"), too slow for a page. Which iterations were
//! left out is said (`derived`), and at most [`MAX_MODELS`] models are evaluated per reply,
//! evenly spread over the stored ones (the first and the last always). A model's outputs at
//! a position are kept in memory ([`MEMO`]), so a page that polls a growing run evaluates
//! only the new iterations.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value as Json, json};

use super::api::store_error;
use super::http::{Reply, Request};
use crate::game::{Game, Player, Turn};
use crate::games::{Abilities, AnyGame};
use crate::learners::Learner;
use crate::search::Evaluator;
use crate::store::{ObjectHash, RunRow, Store, Value};
use crate::with_game;

/// The most models one reply evaluates.
pub(super) const MAX_MODELS: usize = 60;
/// The most default positions listed (the start's decision positions, then the test set's).
const MAX_DEFAULTS: usize = 8;
/// The most (model, position) outputs kept in memory.
const MEMO_KEPT: usize = 50_000;

/// A model's value (for the side to move, [0, 1]) and priors over the legal actions (in
/// their ascending order) at a position.
type Output = (f64, Vec<f64>);

/// Outputs by (checkpoint root, position notation); `None` for the untrained model, which
/// the run's model seed fixes (keyed by the run's id then).
type MemoKey = (Option<ObjectHash>, i64, String);

static MEMO: Mutex<BTreeMap<MemoKey, Output>> = Mutex::new(BTreeMap::new());

/// Checkpoint roots found stored in full ([`Learner::stored`] walks a table's chain of deltas
/// back to its full checkpoint): a stored checkpoint stays stored, a derived one is asked
/// again (its bytes may be added).
static STORED: Mutex<std::collections::BTreeSet<ObjectHash>> =
    Mutex::new(std::collections::BTreeSet::new());

/// The reply of `/api/positions`.
pub(super) fn positions(store: &Store, row: &RunRow, req: &Request) -> Result<Json, Reply> {
    req.only(&["run", "position", "past"])?;
    let any: AnyGame = row
        .variant
        .parse()
        .map_err(|e| Reply::error(500, format!("the run's variant `{}`: {e}", row.variant)))?;
    let (position, past) = (req.param("position"), req.param("past"));
    if past.is_some() && position.is_none() {
        return Err(Reply::error(
            400,
            "past= needs position=: the earlier positions of the game that reached it",
        ));
    }
    with_game!(&any, |g| across(g, store, row, position, past))
}

/// The game's earlier decision positions `past=P1;P2;...` (oldest first), each as `position`
/// takes it; a 400 naming the bad one.
fn parse_past<G: Game>(g: &G, text: Option<&str>) -> Result<Vec<G::State>, Reply> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(Vec::new());
    };
    text.split(';')
        .enumerate()
        .map(|(k, p)| {
            parse_position(g, "past", p).map_err(|why| {
                Reply::error(400, format!("past=, position {} of the list: {why}", k + 1))
            })
        })
        .collect()
}

/// Whether `text` is a decision position of the run's game (a 400 naming what is allowed
/// when not).
pub(super) fn check(row: &RunRow, text: &str) -> Result<(), Reply> {
    let any: AnyGame = row
        .variant
        .parse()
        .map_err(|e| Reply::error(500, format!("the run's variant `{}`: {e}", row.variant)))?;
    with_game!(&any, |g| parse(g, text).map(|_| ()))
}

/// A position from the text the user gave: the game's notation (as `tabula value` takes it;
/// Connect Four also as the columns played, `4453`); a 400 naming what is allowed otherwise.
fn parse<G: Game>(g: &G, text: &str) -> Result<G::State, Reply> {
    parse_position(g, "position", text).map_err(|why| Reply::error(400, why))
}

/// [`parse`] for parameter `key`, its error the message naming what is allowed.
fn parse_position<G: Game>(g: &G, key: &str, text: &str) -> Result<G::State, String> {
    let parsed = crate::games::inputs::parse_position(g, text);
    let example = g.notation(&first_decision(g));
    let s = parsed.map_err(|e| {
        format!(
            "{key}={text}: {e}; give a position of {} in its notation (as `tabula value` takes \
             it), e.g. position={example}",
            g.variant()
        )
    })?;
    match g.turn(&s) {
        Turn::Player(_) => Ok(s),
        t => Err(format!(
            "{key}={text}: it is not a decision position (it is {t}); allowed: a position where \
             a player moves, e.g. position={example}"
        )),
    }
}

/// The first decision position from the start (through the first outcome of each chance
/// step).
fn first_decision<G: Game>(g: &G) -> G::State {
    let mut s = g.initial_state();
    let mut out = Vec::new();
    while g.turn(&s) == Turn::Chance {
        g.chance_outcomes(&s, &mut out);
        let Some(o) = out.first() else { break };
        s = g.apply_chance(&s, o.outcome);
    }
    s
}

/// The positions shown when none is asked for: the start when a player moves there, else
/// the decision positions one chance step after it (EWN's first die rolls); then the first
/// of the test positions the run's metrics use; at most [`MAX_DEFAULTS`], no repeats.
fn defaults<G: Abilities>(g: &G) -> Vec<G::State> {
    let start = g.initial_state();
    let mut list = Vec::new();
    match g.turn(&start) {
        Turn::Player(_) => list.push(start),
        Turn::Chance => {
            let mut out = Vec::new();
            g.chance_outcomes(&start, &mut out);
            for o in out {
                let s = g.apply_chance(&start, o.outcome);
                if matches!(g.turn(&s), Turn::Player(_)) {
                    list.push(s);
                }
            }
        }
        Turn::Terminal(_) => {}
    }
    for s in g.test_positions() {
        if list.len() >= MAX_DEFAULTS {
            break;
        }
        if !list.iter().any(|t| g.key(t) == g.key(&s)) {
            list.push(s);
        }
    }
    list.truncate(MAX_DEFAULTS);
    list
}

fn to_unit(v: f64) -> f64 {
    (v + 1.0) / 2.0
}

/// Every iteration's checkpoint root (a branch's inherited ones included), iteration 0's
/// (the untrained model) first.
fn checkpoint_roots(store: &Store, row: &RunRow) -> Result<Vec<(u32, Option<ObjectHash>)>, Reply> {
    let q = store
        .query(&format!(
            "SELECT iteration, lower(hex(snapshot)) FROM run_iterations WHERE run_id = {} \
             ORDER BY iteration",
            row.id
        ))
        .map_err(store_error)?;
    let mut roots: Vec<(u32, Option<ObjectHash>)> = vec![(0, None)];
    for r in &q.rows {
        if let (Value::Integer(i), Value::Text(h)) = (&r[0], &r[1]) {
            let hash: ObjectHash = h
                .parse()
                .map_err(|_| Reply::error(500, format!("iteration {i}: a bad snapshot address")))?;
            roots.push((u32::try_from(*i).unwrap_or(u32::MAX), Some(hash)));
        }
    }
    Ok(roots)
}

fn across<G: Abilities>(
    g: &G,
    store: &Store,
    row: &RunRow,
    position: Option<&str>,
    past: Option<&str>,
) -> Result<Json, Reply> {
    let states = match position {
        Some(text) => vec![parse(g, text)?],
        None => defaults(g),
    };
    let past = parse_past(g, past)?;
    let (cfg, record) = crate::runs::load_config(store, row)
        .map_err(|e| Reply::error(500, format!("run {}: {e}", row.id)))?;
    let seed = crate::runs::model_seed_of(store, &record)
        .map_err(|e| Reply::error(500, format!("run {}: {e}", row.id)))?;
    let roots = checkpoint_roots(store, row)?;
    let evaluated = crate::with_learner!(cfg.settings.learner.kind, L => {
        evaluate::<G, L<G>>(g, store, row.id, &cfg.settings, seed, &roots, (&states, &past))?
    });
    let Evaluated {
        iterations,
        outputs,
        derived,
        stored,
    } = evaluated;
    let solution = super::game_view::solution::<G>(store, &g.variant())?;
    let sol = solution.as_deref();
    // The planes the run's network reads at each position (`tabula encode`'s; a table none).
    let input_name = cfg.settings.learner.kind.input(&cfg.settings.learner);
    let mut list = Vec::with_capacity(states.len());
    let mut legal = Vec::new();
    for (k, s) in states.iter().enumerate() {
        g.legal_actions(s, &mut legal);
        let mover = match g.turn(s) {
            Turn::Player(p) => p,
            _ => Player::P0,
        };
        let exact = sol.and_then(|sol| crate::solver::state_value(g, sol, s, mover));
        let values = sol.and_then(|sol| crate::solver::action_values(g, sol, s));
        let best = values
            .as_ref()
            .map(|v| v.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max));
        let actions: Vec<Json> = legal
            .iter()
            .enumerate()
            .map(|(j, a)| {
                let v = values.as_ref().and_then(|v| v.get(j)).map(|x| x.1);
                json!({
                    "action": a,
                    "name": g.action_name(s, *a),
                    "value": v.map(to_unit),
                    "best": match (v, best) {
                        (Some(v), Some(b)) => Some(v >= b - crate::solver::OPTIMAL_TOLERANCE),
                        _ => None,
                    },
                    "policy": outputs.iter().map(|o| o[k].1.get(j).copied()).collect::<Vec<_>>(),
                })
            })
            .collect();
        let input = match input_name {
            Some(name) => Some(
                crate::games::inputs::network_input(g, name, s, &past)
                    .map_err(|e| Reply::error(500, format!("run {}: {e}", row.id)))?,
            ),
            None => None,
        };
        list.push(json!({
            "notation": g.notation(s),
            "input": input,
            "board": g.render(s),
            "player": mover.index(),
            "value": exact.map(to_unit),
            "model_value": outputs.iter().map(|o| o[k].0).collect::<Vec<_>>(),
            "actions": actions,
        }));
    }
    Ok(json!({
        "run_id": row.id,
        "name": row.name,
        "variant": g.variant(),
        "learner": cfg.settings.learner.kind.name(),
        "status": row.status.as_str(),
        "iterations_done": row.iterations_done,
        "solved": sol.is_some(),
        "iterations": iterations,
        "stored": stored,
        "derived": derived,
        "max_models": MAX_MODELS,
        "defaults": defaults(g).iter().map(|s| g.notation(s)).collect::<Vec<_>>(),
        "positions": list,
    }))
}

struct Evaluated {
    /// The iterations evaluated, ascending.
    iterations: Vec<u32>,
    /// Per iteration evaluated, per position: the model's output.
    outputs: Vec<Vec<Output>>,
    /// Iterations whose checkpoint is derived (left out).
    derived: usize,
    /// Iterations whose checkpoint is stored (iteration 0 counted).
    stored: usize,
}

/// The models at the stored checkpoints among `roots`, at most [`MAX_MODELS`] of them evenly
/// spread, evaluated at `states` by learner `L`'s leaf evaluator.
fn evaluate<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &Store,
    run_id: i64,
    settings: &crate::runs::Settings,
    seed: u64,
    roots: &[(u32, Option<ObjectHash>)],
    (states, past): (&[G::State], &[G::State]),
) -> Result<Evaluated, Reply> {
    let learner_error = |e: crate::learners::LearnerError| Reply::error(500, e.to_string());
    let mut stored = Vec::with_capacity(roots.len());
    for (i, root) in roots {
        let ok = match root {
            None => true,
            Some(h) if STORED.lock().is_ok_and(|s| s.contains(h)) => true,
            Some(h) => {
                let ok = L::stored(store, h).map_err(learner_error)?;
                if ok && let Ok(mut s) = STORED.lock() {
                    if s.len() >= MEMO_KEPT {
                        s.clear();
                    }
                    s.insert(*h);
                }
                ok
            }
        };
        if ok {
            stored.push((*i, *root));
        }
    }
    let derived = roots.len() - stored.len();
    let picked = spread(&stored, MAX_MODELS);
    // A model's output depends on the past it is handed: the memo's key names it.
    let before: Vec<String> = past.iter().map(|s| g.notation(s)).collect();
    let names: Vec<String> = states
        .iter()
        .map(|s| format!("{}|{}", g.notation(s), before.join(";")))
        .collect();
    let ctx = settings.learner_context(seed);
    let mut rng = crate::rng::stream(seed, "positions");
    let mut legal = Vec::new();
    let mut outputs = Vec::with_capacity(picked.len());
    for (_, root) in &picked {
        let key = |k: usize| {
            (
                *root,
                if root.is_none() { run_id } else { 0 },
                names[k].clone(),
            )
        };
        let known: Option<Vec<Output>> = MEMO
            .lock()
            .ok()
            .and_then(|m| (0..states.len()).map(|k| m.get(&key(k)).cloned()).collect());
        if let Some(o) = known {
            outputs.push(o);
            continue;
        }
        let model = L::restore(g, ctx, store, root.as_ref()).map_err(learner_error)?;
        let mut eval = model.evaluator();
        let mut row = Vec::with_capacity(states.len());
        for s in states {
            g.legal_actions(s, &mut legal);
            let mut priors = vec![0.0; legal.len()];
            let v = eval.evaluate(g, s, past, &legal, &mut priors, &mut rng);
            row.push((v, priors));
        }
        if let Ok(mut m) = MEMO.lock() {
            if m.len() + row.len() > MEMO_KEPT {
                m.clear();
            }
            for (k, o) in row.iter().enumerate() {
                m.insert(key(k), o.clone());
            }
        }
        outputs.push(row);
    }
    Ok(Evaluated {
        iterations: picked.iter().map(|x| x.0).collect(),
        outputs,
        derived,
        stored: stored.len(),
    })
}

/// At most `n` of `items`, evenly spread, the first and the last always among them.
fn spread<T: Copy>(items: &[T], n: usize) -> Vec<T> {
    if items.len() <= n || n < 2 {
        return items.iter().take(n).copied().collect();
    }
    let last = items.len() - 1;
    let mut out: Vec<T> = Vec::with_capacity(n);
    let mut prev = usize::MAX;
    for k in 0..n {
        let at = (k * last + (n - 1) / 2) / (n - 1);
        if at != prev {
            out.push(items[at]);
            prev = at;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn spread_keeps_the_ends_and_at_most_n() {
        let v: Vec<u32> = (0..=100).collect();
        let s = spread(&v, 60);
        assert_eq!(s.len(), 60);
        assert_eq!(s[0], 0);
        assert_eq!(*s.last().unwrap(), 100);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(spread(&v[..5], 60), v[..5]);
        assert_eq!(spread(&v, 2), [0, 100]);
    }
}
