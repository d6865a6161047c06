//! `/api/games/HASH`: a stored game position by position (docs/dashboard.md "The game
//! viewer"): each position's board as the game draws it, whose turn, every chance outcome
//! and move; the search's visit counts per move when the record has them; and, when the
//! store holds the variant's solution, each position's exact value, each legal move's exact
//! value, the best moves and the value the played move lost.
//!
//! Values are the solver's, in [-1, 1] for the side to move (+1 a certain win); a move's
//! value is the position after it, seen by the mover. The solution is read from the store
//! only: a variant not solved there is shown without values (the viewer never solves).

use std::any::Any;
use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};

use super::api::store_error;
use super::http::Reply;
use crate::game::{Game, Player, Turn};
use crate::game_record::{GameRecord, Step};
use crate::games::AnyGame;
use crate::solver::Solution;
use crate::store::{ObjectHash, Store};
use crate::with_game;

/// The game record at `hash` with every position, as JSON.
pub(super) fn game(store: &Store, hash: &ObjectHash) -> Result<Json, Reply> {
    let record: GameRecord = store.get(hash).map_err(store_error)?;
    let any: AnyGame = record.variant.parse().map_err(|e| {
        Reply::error(
            500,
            format!("the record's variant `{}`: {e}", record.variant),
        )
    })?;
    // A self-play game's stream names its place (`self-play(I,G)`): looked up by key, not
    // by scanning every game row.
    let owner = match crate::game_record::self_play_place(&record.stream) {
        Some((iteration, game)) => store.game_owner_at(hash, iteration, game),
        None => store.game_owner(hash),
    }
    .map_err(store_error)?;
    let mut out = with_game!(&any, |g| positions(store, g, &record))?;
    if let Json::Object(m) = &mut out {
        m.insert("hash".into(), json!(hash.to_hex()));
        m.insert("variant".into(), json!(record.variant));
        m.insert("seed".into(), json!(record.seed.to_string()));
        m.insert("stream".into(), json!(record.stream));
        m.insert("players".into(), json!(record.players));
        m.insert("start".into(), json!(record.start));
        m.insert("end".into(), json!(record.end.to_string()));
        m.insert("plies".into(), json!(record.plies()));
        m.insert(
            "owner".into(),
            json!(owner.map(|(run, iteration, game)| json!({
                "run": run, "iteration": iteration, "game": game
            }))),
        );
    }
    Ok(out)
}

/// Solutions read lately, by their manifest's address (shared by the handler threads): a
/// solution is read once, not per request. At most [`SOLUTIONS_KEPT`].
static SOLUTIONS: Mutex<Vec<(ObjectHash, Arc<dyn Any + Send + Sync>)>> = Mutex::new(Vec::new());
const SOLUTIONS_KEPT: usize = 4;

/// The stored solution of `variant`, if the store has one.
pub(super) fn solution<G: Game>(
    store: &Store,
    variant: &str,
) -> Result<Option<Arc<Solution<G::Key>>>, Reply> {
    let Some(row) = store.solution(variant).map_err(store_error)? else {
        return Ok(None);
    };
    if let Ok(kept) = SOLUTIONS.lock()
        && let Some((_, any)) = kept.iter().find(|(h, _)| *h == row.hash)
        && let Ok(sol) = Arc::clone(any).downcast::<Solution<G::Key>>()
    {
        return Ok(Some(sol));
    }
    let Some((sol, hash)) =
        crate::solver::load_solution::<G::Key>(store, variant).map_err(store_error)?
    else {
        return Ok(None);
    };
    let sol = Arc::new(sol);
    if let Ok(mut kept) = SOLUTIONS.lock() {
        kept.retain(|(h, _)| *h != hash);
        if kept.len() >= SOLUTIONS_KEPT {
            kept.remove(0);
        }
        kept.push((hash, Arc::clone(&sol) as Arc<dyn Any + Send + Sync>));
    }
    Ok(Some(sol))
}

fn turn_text(t: Turn) -> String {
    match t {
        Turn::Player(p) => format!("player {}", p.index()),
        Turn::Chance => "chance".into(),
        Turn::Terminal(r) => format!("end: {r}"),
    }
}

fn positions<G: Game>(store: &Store, g: &G, record: &GameRecord) -> Result<Json, Reply> {
    let states = record
        .states(g)
        .map_err(|e| Reply::error(500, e.to_string()))?;
    let solution = solution::<G>(store, &g.variant())?;
    let sol = solution.as_deref();
    let value_p0 =
        |s: &G::State| sol.and_then(|sol| crate::solver::state_value(g, sol, s, Player::P0));
    let mut positions = Vec::with_capacity(states.len());
    for s in &states {
        positions.push(json!({
            "board": g.render(s),
            "notation": g.notation(s),
            "turn": turn_text(g.turn(s)),
            "value_p0": value_p0(s),
        }));
    }
    let mut steps = Vec::with_capacity(record.steps.len());
    let mut ply = 0;
    let mut legal = Vec::new();
    for (k, step) in record.steps.iter().enumerate() {
        let s = &states[k];
        match step {
            Step::Chance { outcome } => steps.push(json!({
                "kind": "chance",
                "text": g.outcome_name(s, *outcome),
            })),
            Step::Move { action, search } => {
                ply += 1;
                g.legal_actions(s, &mut legal);
                let mover = match g.turn(s) {
                    Turn::Player(p) => p.index(),
                    _ => 0,
                };
                let values = sol.and_then(|sol| crate::solver::action_values(g, sol, s));
                let best = values
                    .as_ref()
                    .map(|v| v.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max));
                let mut moves = Vec::with_capacity(legal.len());
                for (j, a) in legal.iter().enumerate() {
                    let v = values.as_ref().and_then(|v| v.get(j)).map(|x| x.1);
                    moves.push(json!({
                        "action": a,
                        "name": g.action_name(s, *a),
                        "value": v,
                        "best": match (v, best) {
                            (Some(v), Some(b)) => Some(v >= b - crate::solver::OPTIMAL_TOLERANCE),
                            _ => None,
                        },
                        "visits": search.as_ref().and_then(|st| st.visits.get(j)),
                        "target": search.as_ref().and_then(|st| st.target.as_ref()).and_then(|t| t.get(j)),
                        "played": a == action,
                    }));
                }
                let played = values
                    .as_ref()
                    .and_then(|v| v.iter().find(|x| x.0 == *action))
                    .map(|x| x.1);
                steps.push(json!({
                    "kind": "move",
                    "ply": ply,
                    "player": mover,
                    "text": g.action_name(s, *action),
                    "value": played,
                    "best_value": best,
                    "lost": match (played, best) {
                        (Some(p), Some(b)) => Some((b - p).max(0.0)),
                        _ => None,
                    },
                    "full_search": search.as_ref().map(|st| st.full),
                    "moves": moves,
                }));
            }
        }
    }
    Ok(json!({
        "solved": sol.is_some(),
        "positions": positions,
        "steps": steps,
    }))
}

#[cfg(test)]
mod tests {
    use crate::game_record::self_play_place;

    #[test]
    fn a_self_play_stream_names_its_place() {
        let stream = crate::selfplay::self_play_stream(3, 17);
        assert_eq!(self_play_place(&stream), Some((3, 17)));
        assert_eq!(self_play_place("match(0)"), None);
        assert_eq!(self_play_place("self-play(3)"), None);
    }
}
