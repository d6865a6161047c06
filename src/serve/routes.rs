//! The URL table (docs/dashboard.md "Pages" and "The JSON API"). Pages are one HTML shell
//! (`web/page.html`) naming the page and what it shows (a run id, a sweep's hash, a game's
//! address, resolved here so an unknown one is a 404 before any script runs); their scripts
//! poll the JSON API. The binary's own files are served from a fixed list under `/assets/`
//! (nothing is read from disk, so no path reaches the file system). Every 4xx is JSON:
//! `{"error": {"status": N, "message": "..."}}`.

use std::path::Path;

use serde_json::json;

use super::api;
use super::game_view;
use super::http::{Cache, Reply, Request};
use super::positions;
use crate::experiments::chart::{COLOURS, DASHES};
use crate::game_record::GameRecord;
use crate::store::{ObjectHash, Record, RunRow, Store, StoreError, SweepRow};

/// The most runs `/compare` sets side by side.
const MAX_COMPARED: usize = 16;

/// The binary's own files: name, content type, bytes.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/vendor/uplot/uPlot.iife.min.js"),
    ),
    (
        "uPlot.min.css",
        "text/css; charset=utf-8",
        include_str!("../../web/vendor/uplot/uPlot.min.css"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../web/style.css"),
    ),
    (
        "common.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/common.js"),
    ),
    (
        "runs.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/runs.js"),
    ),
    (
        "run.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/run.js"),
    ),
    (
        "sweep.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/sweep.js"),
    ),
    (
        "compare.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/compare.js"),
    ),
    (
        "game.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/game.js"),
    ),
    (
        "positions.js",
        "text/javascript; charset=utf-8",
        include_str!("../../web/positions.js"),
    ),
    (
        "LICENSE-uPlot.txt",
        "text/plain; charset=utf-8",
        include_str!("../../web/vendor/uplot/LICENSE"),
    ),
];

const SHELL: &str = include_str!("../../web/page.html");

/// Answers one request.
pub(super) fn route(req: &Request, db: &Path) -> Reply {
    let seg: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    // Files first: they need no store.
    if let ["assets", name] = seg.as_slice() {
        return match ASSETS.iter().find(|a| a.0 == *name) {
            Some((_, ty, body)) => Reply::bytes(ty, body.as_bytes().to_vec(), Cache::Day),
            None => not_found(req),
        };
    }
    if let ["favicon.ico"] = seg.as_slice() {
        return Reply::bytes("image/x-icon", Vec::new(), Cache::Day);
    }
    let known = matches!(
        seg.as_slice(),
        [] | ["runs", _]
            | ["sweeps", _]
            | ["compare"]
            | ["games", _]
            | ["positions"]
            | ["api", "runs"]
            | ["api", "runs", _]
            | ["api", "runs", _, "metrics" | "games"]
            | ["api", "sweeps"]
            | ["api", "sweeps", _]
            | ["api", "games", _]
            | ["api", "positions"]
    );
    if !known {
        return not_found(req);
    }
    with_store(db, |store: &Store| match answer(req, &seg, store) {
        Ok(r) | Err(r) => r,
    })
}

thread_local! {
    /// This handler thread's read-only connection, kept while it reads the latest commits
    /// ([`Store::still_current`]): its caches then serve later requests too.
    static STORE: std::cell::RefCell<Option<Store>> = const { std::cell::RefCell::new(None) };
}

/// Drops this thread's connection (after a panic in a handler: nothing of it is trusted).
pub(super) fn reset() {
    STORE.with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            *slot = None;
        }
    });
}

fn with_store(db: &Path, f: impl FnOnce(&Store) -> Reply) -> Reply {
    STORE.with(|cell| use_store(&mut cell.borrow_mut(), db, f))
}

/// Runs `f` on the connection in `slot`, opened again when it no longer reads the latest
/// commits (or after an error).
fn use_store(slot: &mut Option<Store>, db: &Path, f: impl FnOnce(&Store) -> Reply) -> Reply {
    if !slot.as_ref().is_some_and(Store::still_current) {
        *slot = None;
        match Store::open_read_only(db) {
            Ok(s) => *slot = Some(s),
            Err(e) => return api::store_error(e),
        }
    }
    let Some(store) = slot.as_ref() else {
        return Reply::error(500, "no store connection");
    };
    let reply = f(store);
    if reply.status >= 500 {
        // A store error may leave the connection in doubt: the next request opens anew.
        *slot = None;
    }
    reply
}

fn answer(req: &Request, seg: &[&str], store: &Store) -> Result<Reply, Reply> {
    Ok(match seg {
        [] => {
            // A filtered or grouped runs list is a link: `/?tag=T1,T2&group=tag&q=TEXT`.
            req.only(&["tag", "group", "q"])?;
            if let Some(g) = req.param("group").filter(|g| !g.is_empty() && *g != "tag") {
                return Err(Reply::error(400, format!("group={g}: allowed: tag")));
            }
            page("runs", "runs", "")
        }
        ["runs", id] => {
            req.only(&[])?;
            let row = find_run(store, id)?;
            page(&row.name, "run", &row.id.to_string())
        }
        ["sweeps", name] => {
            req.only(&[])?;
            let row = find_sweep(store, name)?;
            page(&format!("sweep {}", row.name), "sweep", &row.hash.to_hex())
        }
        ["compare"] => {
            req.only(&["runs"])?;
            let Some(list) = req.param("runs") else {
                return Err(Reply::error(
                    400,
                    "compare: give the runs as ?runs=A,B,... (ids, names or hash prefixes)",
                ));
            };
            let texts: Vec<&str> = list.split(',').filter(|s| !s.trim().is_empty()).collect();
            if texts.is_empty() || texts.len() > MAX_COMPARED {
                return Err(Reply::error(
                    400,
                    format!(
                        "runs={list}: allowed: 1 to {MAX_COMPARED} runs, comma-separated (ids, \
                         names or hash prefixes)"
                    ),
                ));
            }
            let mut ids = Vec::new();
            for t in texts {
                ids.push(find_run(store, t)?.id.to_string());
            }
            page("compare runs", "compare", &ids.join(","))
        }
        ["games", hash] => {
            req.only(&[])?;
            let h = find_game(store, hash)?;
            page(&format!("game {}", h.short()), "game", &h.to_hex())
        }
        ["positions"] => {
            req.only(&["run", "position"])?;
            let row = positions_run(store, req)?;
            if let Some(text) = req.param("position") {
                positions::check(&row, text)?;
            }
            page(
                &format!("positions of run {}", row.id),
                "positions",
                &row.id.to_string(),
            )
        }
        ["api", "positions"] => {
            let row = positions_run(store, req)?;
            Reply::json(&positions::positions(store, &row, req)?)
        }
        ["api", "runs"] => Reply::json(&api::runs(store, req)?),
        ["api", "runs", id] => {
            req.only(&[])?;
            let row = find_run(store, id)?;
            Reply::json(&api::run(store, &row)?)
        }
        ["api", "runs", id, "metrics"] => {
            let row = find_run(store, id)?;
            Reply::json(&api::metrics(store, &row, req)?)
        }
        ["api", "runs", id, "games"] => {
            let row = find_run(store, id)?;
            Reply::json(&api::games(store, &row, req)?)
        }
        ["api", "sweeps"] => {
            req.only(&[])?;
            Reply::json(&api::sweeps(store)?)
        }
        ["api", "sweeps", name] => {
            req.only(&[])?;
            let row = find_sweep(store, name)?;
            Reply::json(&api::sweep(store, &row)?)
        }
        ["api", "games", hash] => {
            req.only(&[])?;
            let h = find_game(store, hash)?;
            Reply::json(&game_view::game(store, &h)?)
        }
        _ => not_found(req),
    })
}

fn not_found(req: &Request) -> Reply {
    Reply::error(
        404,
        format!(
            "no page or API at {}; pages: /, /runs/ID, /sweeps/NAME, /compare?runs=A,B, \
             /games/HASH, /positions?run=ID&position=P; API: /api/runs, /api/runs/ID, \
             /api/runs/ID/metrics, /api/runs/ID/games, /api/sweeps, /api/sweeps/NAME, \
             /api/games/HASH, /api/positions?run=ID&position=P",
            req.path_text
        ),
    )
}

/// The run of a positions page or reply (`run=ID`, required).
fn positions_run(store: &Store, req: &Request) -> Result<RunRow, Reply> {
    let Some(text) = req.param("run") else {
        return Err(Reply::error(
            400,
            "positions: give the run as ?run=ID (its id, name or a hash prefix), and a position \
             as &position=P in the game's notation (none: the default positions)",
        ));
    };
    find_run(store, text)
}

/// A lookup's error: several matches are a 400 naming them; anything else a 500.
fn lookup_error(e: StoreError) -> Reply {
    match e {
        e @ StoreError::Ambiguous { .. } => Reply::error(400, e.to_string()),
        e => api::store_error(e),
    }
}

fn find_run(store: &Store, text: &str) -> Result<RunRow, Reply> {
    store.find_run(text).map_err(lookup_error)?.ok_or_else(|| {
        Reply::error(
            404,
            format!("no run `{text}` in the store (give its id, its name, or a hash prefix)"),
        )
    })
}

fn find_sweep(store: &Store, text: &str) -> Result<SweepRow, Reply> {
    store
        .find_sweep(text)
        .map_err(lookup_error)?
        .ok_or_else(|| {
            Reply::error(
                404,
                format!("no sweep `{text}` in the store (give its name or a hash prefix)"),
            )
        })
}

/// A game record by its address or a prefix of it: anything but 4 to 64 hex digits is a 400.
fn find_game(store: &Store, text: &str) -> Result<ObjectHash, Reply> {
    let hex = text.len() >= crate::store::MIN_PREFIX
        && text.len() <= 64
        && text.bytes().all(|b| b.is_ascii_hexdigit());
    if !hex {
        return Err(Reply::error(
            400,
            format!(
                "`{text}` is not a game address: give {} to 64 hex digits",
                crate::store::MIN_PREFIX
            ),
        ));
    }
    store
        .find_object(text, <GameRecord as Record>::KIND)
        .map_err(lookup_error)?
        .ok_or_else(|| Reply::error(404, format!("no game record `{text}` in the store")))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The HTML shell of page `kind` about `key`.
fn page(title: &str, kind: &str, key: &str) -> Reply {
    let palette = json!({"colours": COLOURS, "dashes": DASHES}).to_string();
    let html = SHELL
        .replace("{{title}}", &esc(title))
        .replace("{{page}}", kind)
        .replace("{{key}}", &esc(key))
        .replace("{{palette}}", &esc(&palette));
    Reply::bytes("text/html; charset=utf-8", html.into_bytes(), Cache::No)
}
