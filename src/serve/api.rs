//! The JSON API (`/api/...`, docs/dashboard.md "The JSON API"): runs with their status,
//! progress, ETA and headline metrics; a run's settings, provenance and lineage; its metrics
//! per iteration (a branch's inherited iterations marked); its games per iteration, paged; a
//! sweep's members, progress, curves and final values. Everything is read through the store's
//! tables and SQL views on a read-only connection; every list is bounded.

use std::collections::BTreeMap;

use serde_json::{Value as Json, json};

use super::http::{Reply, Request};
use crate::experiments::plot::{self, At};
use crate::store::{QueryResult, RunRow, RunStatus, Store, StoreError};

/// The most runs one `/api/runs` page lists.
pub(super) const MAX_PER_PAGE: u64 = 1000;
/// The most iterations one `/api/runs/ID/metrics` reply holds (`from` pages on).
const MAX_ITERATIONS: u64 = 20_000;
/// The most games one `/api/runs/ID/games` page lists.
const MAX_GAMES_PER_PAGE: u64 = 500;
/// The largest page number accepted anywhere (a larger one is a 400, not an empty page).
pub(super) const MAX_PAGE: u64 = 1_000_000;
/// The headline metrics of the runs table (the tabular and network learners' exact metrics).
const HEADLINE: [&str; 3] = ["wr_p", "err_p", "mae_v"];

/// A store error as a reply: a store changed under an immutable read is a 503 (ask again),
/// anything else a 500.
pub(super) fn store_error(e: StoreError) -> Reply {
    match e {
        StoreError::ChangedWhileReading(_) => Reply::error(503, e.to_string()),
        e => Reply::error(500, e.to_string()),
    }
}

fn query(store: &Store, sql: &str) -> Result<QueryResult, Reply> {
    store.query(sql).map_err(store_error)
}

/// Rows as JSON objects, column name to value.
fn objects(q: &QueryResult) -> Vec<Json> {
    q.rows
        .iter()
        .map(|r| {
            Json::Object(
                q.columns
                    .iter()
                    .zip(r)
                    .map(|(c, v)| (c.clone(), v.to_json()))
                    .collect(),
            )
        })
        .collect()
}

fn num(v: &crate::store::Value) -> Option<f64> {
    match v {
        crate::store::Value::Integer(i) => Some(*i as f64),
        crate::store::Value::Real(r) => Some(*r),
        _ => None,
    }
}

/// A run's line in the runs table.
fn summary(row: &RunRow, extra: Option<&Extra>) -> Json {
    let e = extra.cloned().unwrap_or_default();
    let left = row.iterations_planned.saturating_sub(row.iterations_done);
    let eta = match (row.status, e.seconds_per_iteration) {
        (RunStatus::Running, Some(s)) => Some(s * f64::from(left)),
        _ => None,
    };
    json!({
        "id": row.id,
        "name": row.name,
        "variant": row.variant,
        "seed": row.seed,
        "status": row.status.as_str(),
        "iterations_done": row.iterations_done,
        "iterations_planned": row.iterations_planned,
        "seconds_per_iteration": e.seconds_per_iteration,
        "eta_seconds": eta,
        "sweep": e.sweep,
        "learner": e.learner,
        "start_policy": e.start_policy,
        "metrics_iteration": e.metrics_iteration,
        "wr_p": e.headline.get("wr_p"),
        "err_p": e.headline.get("err_p"),
        "mae_v": e.headline.get("mae_v"),
        "head": row.head.map(|h| h.to_hex()),
        "run_hash": row.hash.to_hex(),
        "parent": row.parent.map(|(run, iteration)| json!({"run": run, "iteration": iteration})),
        "created_at": row.created_at,
    })
}

/// What the runs table shows beyond a run's row.
#[derive(Clone, Debug, Default)]
struct Extra {
    learner: Option<String>,
    start_policy: Option<String>,
    sweep: Option<String>,
    seconds_per_iteration: Option<f64>,
    metrics_iteration: Option<i64>,
    headline: BTreeMap<String, f64>,
}

/// The extras of the runs with ids in `ids` (all when `None`).
fn extras(store: &Store, ids: Option<&[i64]>) -> Result<BTreeMap<i64, Extra>, Reply> {
    let filter = |col: &str| match ids {
        Some(ids) => format!(
            "WHERE {col} IN ({})",
            ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        ),
        None => String::new(),
    };
    let mut out: BTreeMap<i64, Extra> = BTreeMap::new();
    let q = query(
        store,
        &format!(
            "SELECT r.id, s.learner, s.start_policy,
                (SELECT group_concat(name, ', ') FROM (SELECT DISTINCT sw.name AS name
                    FROM sweep_members sm JOIN sweeps sw ON sw.hash = sm.sweep
                    WHERE sm.run_id = r.id ORDER BY sw.name)),
                (SELECT avg(i.self_play_seconds + i.training_seconds + i.evaluation_seconds
                    + i.store_seconds) FROM iterations i WHERE i.run_id = r.id),
                (SELECT max(m.iteration) FROM metrics m WHERE m.run_id = r.id)
             FROM runs r LEFT JOIN run_settings s ON s.run_id = r.id {}",
            filter("r.id")
        ),
    )?;
    for r in &q.rows {
        let crate::store::Value::Integer(id) = r[0] else {
            continue;
        };
        let text = |v: &crate::store::Value| match v {
            crate::store::Value::Null => None,
            v => Some(v.to_text()),
        };
        out.insert(
            id,
            Extra {
                learner: text(&r[1]),
                start_policy: text(&r[2]),
                sweep: text(&r[3]),
                seconds_per_iteration: num(&r[4]),
                metrics_iteration: match r[5] {
                    crate::store::Value::Integer(i) => Some(i),
                    _ => None,
                },
                headline: BTreeMap::new(),
            },
        );
    }
    let names = HEADLINE
        .iter()
        .map(|m| format!("'{m}'"))
        .collect::<Vec<_>>()
        .join(",");
    let q = query(
        store,
        &format!(
            "SELECT m.run_id, m.name, m.value FROM metrics m
             JOIN (SELECT run_id, max(iteration) AS it FROM metrics {} GROUP BY run_id) l
               ON l.run_id = m.run_id AND l.it = m.iteration
             WHERE m.name IN ({names})",
            filter("run_id")
        ),
    )?;
    for r in &q.rows {
        if let (crate::store::Value::Integer(id), Some(v)) = (&r[0], num(&r[2]))
            && let Some(e) = out.get_mut(id)
        {
            e.headline.insert(r[1].to_text(), v);
        }
    }
    Ok(out)
}

/// `/api/runs?page=P&per_page=N&settings=1&tag=T1,T2&group=tag`: the runs, oldest first, a
/// page at a time, each with its tags and note; with `settings=1` each with its
/// `run_settings` row (what the runs page filters by); with `tag=` only the runs that carry
/// every tag named; with `group=tag` the page's runs grouped by tag (`groups`). `tags` lists
/// every tag of the store with its number of runs.
pub(super) fn runs(store: &Store, req: &Request) -> Result<Json, Reply> {
    req.only(&["page", "per_page", "settings", "tag", "group"])?;
    let with_settings = req.int("settings", 0, 0, 1)? == 1;
    let page = req.int("page", 1, 1, MAX_PAGE)?;
    let per_page = req.int("per_page", 500, 1, MAX_PER_PAGE)?;
    let wanted: Vec<&str> = req
        .param("tag")
        .map(|t| {
            t.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let grouped = match req.param("group") {
        None | Some("") => false,
        Some("tag") => true,
        Some(g) => {
            return Err(Reply::error(400, format!("group={g}: allowed: tag")));
        }
    };
    let labels = labels(store)?;
    let carries = |id: i64| {
        let tags = labels.get(&id).map_or(&[][..], |l| &l.tags[..]);
        wanted.iter().all(|w| tags.iter().any(|t| t == w))
    };
    let all: Vec<RunRow> = store
        .runs()
        .map_err(store_error)?
        .into_iter()
        .filter(|r| carries(r.id))
        .collect();
    let total = all.len();
    let start = ((page - 1) * per_page).min(total as u64) as usize;
    let end = (start + per_page as usize).min(total);
    let rows = &all[start..end];
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let extra = if ids.is_empty() {
        BTreeMap::new()
    } else {
        extras(store, Some(&ids))?
    };
    let sweeps = query(
        store,
        "SELECT sweep, sweep_hash, runs, done, iterations_done, iterations_planned
         FROM sweep_progress ORDER BY sweep",
    )?;
    let mut settings = if with_settings {
        settings_of(store, &ids)?
    } else {
        BTreeMap::new()
    };
    let runs: Vec<Json> = rows
        .iter()
        .map(|r| {
            let mut j = summary(r, extra.get(&r.id));
            if let Json::Object(m) = &mut j {
                let l = labels.get(&r.id);
                m.insert("tags".into(), json!(l.map_or(&[][..], |l| &l.tags[..])));
                m.insert("note".into(), json!(l.and_then(|l| l.note.as_deref())));
                if let Some(s) = settings.remove(&r.id) {
                    m.insert("settings".into(), s);
                }
            }
            j
        })
        .collect();
    let mut reply = json!({
        "page": page,
        "per_page": per_page,
        "total": total,
        "tag": wanted,
        "tags": tag_counts(&labels),
        "runs": runs,
        "sweeps": objects(&sweeps),
    });
    if grouped && let Json::Object(m) = &mut reply {
        m.insert("groups".into(), groups(&labels, &ids));
    }
    Ok(reply)
}

/// A run's tags (sorted) and note.
#[derive(Debug, Default)]
struct Labels {
    tags: Vec<String>,
    note: Option<String>,
}

/// Every run's tags and note, by run id (runs with neither are absent).
fn labels(store: &Store) -> Result<BTreeMap<i64, Labels>, Reply> {
    let mut out: BTreeMap<i64, Labels> = BTreeMap::new();
    let q = query(
        store,
        "SELECT run_id, tag FROM run_tags ORDER BY run_id, tag",
    )?;
    for r in &q.rows {
        if let crate::store::Value::Integer(id) = r[0] {
            out.entry(id).or_default().tags.push(r[1].to_text());
        }
    }
    let q = query(store, "SELECT run_id, note FROM run_notes")?;
    for r in &q.rows {
        if let crate::store::Value::Integer(id) = r[0] {
            out.entry(id).or_default().note = Some(r[1].to_text());
        }
    }
    Ok(out)
}

/// Every tag with its number of runs, by tag.
fn tag_counts(labels: &BTreeMap<i64, Labels>) -> Json {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for l in labels.values() {
        for t in &l.tags {
            *counts.entry(t.as_str()).or_default() += 1;
        }
    }
    Json::Array(
        counts
            .into_iter()
            .map(|(tag, runs)| json!({"tag": tag, "runs": runs}))
            .collect(),
    )
}

/// The runs `ids` by tag, tags in order, then the untagged ones (`tag: null`); a run with
/// several tags is in each of their groups.
fn groups(labels: &BTreeMap<i64, Labels>, ids: &[i64]) -> Json {
    let mut by: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    let mut untagged = Vec::new();
    for id in ids {
        match labels.get(id).filter(|l| !l.tags.is_empty()) {
            Some(l) => l
                .tags
                .iter()
                .for_each(|t| by.entry(t.as_str()).or_default().push(*id)),
            None => untagged.push(*id),
        }
    }
    let mut out: Vec<Json> = by
        .into_iter()
        .map(|(tag, runs)| json!({"tag": tag, "runs": runs}))
        .collect();
    if !untagged.is_empty() {
        out.push(json!({"tag": null, "runs": untagged}));
    }
    Json::Array(out)
}

/// The `run_settings` rows of runs `ids`, by run id.
fn settings_of(store: &Store, ids: &[i64]) -> Result<BTreeMap<i64, Json>, Reply> {
    let mut settings = BTreeMap::new();
    if ids.is_empty() {
        return Ok(settings);
    }
    let q = query(
        store,
        &format!(
            "SELECT * FROM run_settings WHERE run_id IN ({})",
            ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        ),
    )?;
    for (r, o) in q.rows.iter().zip(objects(&q)) {
        if let crate::store::Value::Integer(id) = r[0] {
            settings.insert(id, o);
        }
    }
    Ok(settings)
}

/// `/api/runs/ID`: the run's line, every setting, its spec, provenance, lineage, children
/// and sweep.
pub(super) fn run(store: &Store, row: &RunRow) -> Result<Json, Reply> {
    let id = row.id;
    let extra = extras(store, Some(&[id]))?;
    let settings = query(
        store,
        &format!("SELECT * FROM run_settings WHERE run_id = {id}"),
    )?;
    let provenance = query(
        store,
        &format!("SELECT * FROM run_provenance WHERE run_id = {id}"),
    )?;
    let sessions = store.run_sessions(id).map_err(store_error)?;
    let lineage = query(
        store,
        &format!("SELECT * FROM run_lineage WHERE run_id = {id} ORDER BY depth"),
    )?;
    let children = query(
        store,
        &format!(
            "SELECT id, name, parent_iteration, status, iterations_done, iterations_planned
             FROM runs WHERE parent_run = {id} ORDER BY id LIMIT 1000"
        ),
    )?;
    let sweep = query(
        store,
        &format!(
            "SELECT sweep, sweep_hash, point, point_json, seed_index, seed
             FROM sweep_runs WHERE run_id = {id} ORDER BY sweep"
        ),
    )?;
    let record: crate::runs::RunRecord = store.get(&row.hash).map_err(store_error)?;
    let branch = record.parent.as_ref().map(|p| {
        json!({
            "run": row.parent.map(|x| x.0),
            "run_hash": p.run.to_hex(),
            "iteration": p.iteration,
            "overrides": p.overrides,
        })
    });
    let settings_json: Json = serde_json::from_str(&row.settings_json).unwrap_or(Json::Null);
    Ok(json!({
        "run": summary(row, extra.get(&id)),
        "settings": objects(&settings).into_iter().next(),
        "settings_json": settings_json,
        "spec_toml": row.spec_toml,
        "provenance": objects(&provenance).into_iter().next(),
        "sessions": sessions.iter().rev().take(100).collect::<Vec<_>>(),
        "branch": branch,
        "lineage": objects(&lineage),
        "children": objects(&children),
        "sweeps": objects(&sweep),
    }))
}

/// `/api/runs/ID/metrics?from=I`: every declared metric per measured iteration (iteration
/// 0: the untrained model of the run's root; an iteration `[eval] every` skipped is left out,
/// never filled in), a branch's inherited iterations included with the run that holds them
/// (`source_run`). At most [`MAX_ITERATIONS`] iterations from `from` on;
/// `next_from` says where the next reply starts when there are more.
pub(super) fn metrics(store: &Store, row: &RunRow, req: &Request) -> Result<Json, Reply> {
    req.only(&["from"])?;
    // `from` past the run's last iteration is a 400 naming the range, not an empty reply.
    let from = req.int("from", 0, 0, u64::from(row.iterations_done))?;
    let id = row.id;
    let names = query(
        store,
        "SELECT name FROM metric_defs ORDER BY position, name",
    )?;
    let names: Vec<String> = names.rows.iter().map(|r| r[0].to_text()).collect();
    let its = query(
        store,
        &format!(
            "WITH t(iteration, source_run) AS (
                SELECT iteration, source_run FROM run_iterations WHERE run_id = {id}
                    AND evaluation <> X'{skipped}'
                UNION ALL
                SELECT 0, coalesce((SELECT l.ancestor FROM run_lineage l
                    WHERE l.run_id = {id} ORDER BY l.depth DESC LIMIT 1), {id}))
             SELECT iteration, source_run FROM t WHERE iteration >= {from}
             ORDER BY iteration LIMIT {}",
            MAX_ITERATIONS + 1,
            skipped = crate::runs::records::NotMeasured::hash().to_hex(),
        ),
    )?;
    let mut iterations: Vec<i64> = Vec::new();
    let mut sources: Vec<i64> = Vec::new();
    for r in &its.rows {
        if let (crate::store::Value::Integer(i), crate::store::Value::Integer(s)) = (&r[0], &r[1]) {
            iterations.push(*i);
            sources.push(*s);
        }
    }
    let next_from = if iterations.len() as u64 > MAX_ITERATIONS {
        iterations.truncate(MAX_ITERATIONS as usize);
        sources.truncate(MAX_ITERATIONS as usize);
        iterations.last().map(|i| i + 1)
    } else {
        None
    };
    let mut values: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
    if let (Some(lo), Some(hi)) = (iterations.first(), iterations.last()) {
        let index: BTreeMap<(i64, i64), usize> = iterations
            .iter()
            .zip(&sources)
            .enumerate()
            .map(|(k, (i, s))| ((*s, *i), k))
            .collect();
        let runs: std::collections::BTreeSet<i64> = sources.iter().copied().collect();
        let q = query(
            store,
            &format!(
                "SELECT run_id, iteration, name, value FROM metrics
                 WHERE run_id IN ({}) AND iteration BETWEEN {lo} AND {hi}",
                runs.iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        )?;
        for r in &q.rows {
            let (crate::store::Value::Integer(run), crate::store::Value::Integer(it)) =
                (&r[0], &r[1])
            else {
                continue;
            };
            let Some(&k) = index.get(&(*run, *it)) else {
                continue;
            };
            let name = r[2].to_text();
            let col = values
                .entry(name)
                .or_insert_with(|| vec![None; iterations.len()]);
            col[k] = num(&r[3]);
        }
    }
    let declared: Vec<&String> = names.iter().filter(|n| values.contains_key(*n)).collect();
    Ok(json!({
        "run_id": id,
        "status": row.status.as_str(),
        "iterations_done": row.iterations_done,
        "iterations_planned": row.iterations_planned,
        "metrics": declared,
        "iterations": iterations,
        "source_run": sources,
        "values": values,
        "next_from": next_from,
    }))
}

/// `/api/runs/ID/games?iteration=I&page=P&per_page=N`: an iteration's self-play games (index
/// and address), a page at a time; without `iteration`, the run's last.
pub(super) fn games(store: &Store, row: &RunRow, req: &Request) -> Result<Json, Reply> {
    req.only(&["iteration", "page", "per_page"])?;
    // Only the run's iterations: one past its end is a 400 naming the range, not an empty
    // list (a run with none yet has no games to page through).
    if row.iterations_done == 0 {
        return Err(Reply::error(
            404,
            format!("run {} has no iterations yet, so no games", row.id),
        ));
    }
    let done = u64::from(row.iterations_done);
    let iteration = req.int("iteration", done, 1, done)? as u32;
    let page = req.int("page", 1, 1, MAX_PAGE)?;
    let per_page = req.int("per_page", 100, 1, MAX_GAMES_PER_PAGE)?;
    let all = store.run_games(row.id, iteration).map_err(store_error)?;
    let total = all.len();
    let start = ((page - 1) * per_page).min(total as u64) as usize;
    let end = (start + per_page as usize).min(total);
    Ok(json!({
        "run_id": row.id,
        "iteration": iteration,
        "page": page,
        "per_page": per_page,
        "total": total,
        "games": all[start..end]
            .iter()
            .map(|(g, h)| json!({"game": g, "hash": h.to_hex()}))
            .collect::<Vec<_>>(),
    }))
}

/// `/api/sweeps`: every sweep with its progress.
pub(super) fn sweeps(store: &Store) -> Result<Json, Reply> {
    let q = query(
        store,
        "SELECT sweep, sweep_hash, runs, done, iterations_done, iterations_planned
         FROM sweep_progress ORDER BY sweep LIMIT 10000",
    )?;
    Ok(json!({"sweeps": objects(&q)}))
}

/// `/api/sweeps/NAME`: the sweep's axes and seeds, its members with their status and
/// progress, "k of N" finished, and per metric the curves (mean and 95% band over the seeds
/// per grid point) and the final values against an axis (finished runs only; how many were
/// left out is given).
pub(super) fn sweep(store: &Store, row: &crate::store::SweepRow) -> Result<Json, Reply> {
    // A poll of a sweep whose runs wrote nothing since is answered from memory: the reply
    // reads every member's metrics, a few hundred milliseconds for 60 runs.
    let version = sweep_version(store, row)?;
    if let Ok(kept) = SWEEPS.lock()
        && let Some((_, _, reply)) = kept
            .iter()
            .find(|(h, v, _)| *h == row.hash && *v == version)
    {
        return Ok(reply.clone());
    }
    let reply = sweep_reply(store, row)?;
    if let Ok(mut kept) = SWEEPS.lock() {
        kept.retain(|(h, _, _)| *h != row.hash);
        if kept.len() >= SWEEPS_KEPT {
            kept.remove(0);
        }
        kept.push((row.hash, version, reply.clone()));
    }
    Ok(reply)
}

/// Sweep replies computed lately, with the version of their members' data they were
/// computed from ([`sweep_version`]).
static SWEEPS: std::sync::Mutex<Vec<(crate::store::ObjectHash, String, Json)>> =
    std::sync::Mutex::new(Vec::new());
const SWEEPS_KEPT: usize = 4;

/// What a sweep's reply depends on that changes while its runs write: each member's status,
/// committed iterations and count of metric values (read by the tables' keys, not the
/// values).
fn sweep_version(store: &Store, row: &crate::store::SweepRow) -> Result<String, Reply> {
    let q = query(
        store,
        &format!(
            "SELECT r.id, r.status, r.iterations_done, r.iterations_planned,
                (SELECT count(*) FROM metrics m WHERE m.run_id = r.id)
             FROM runs r WHERE r.id IN (SELECT run_id FROM sweep_members
                WHERE sweep = X'{}') ORDER BY r.id",
            row.hash.to_hex()
        ),
    )?;
    Ok(q.rows
        .iter()
        .map(|r| r.iter().map(|v| v.to_text()).collect::<Vec<_>>().join(","))
        .collect::<Vec<_>>()
        .join(";"))
}

fn sweep_reply(store: &Store, row: &crate::store::SweepRow) -> Result<Json, Reply> {
    let data =
        plot::load(store, &row.hash.to_hex()).map_err(|e| Reply::error(500, e.to_string()))?;
    let statuses: BTreeMap<i64, RunRow> = store
        .runs()
        .map_err(store_error)?
        .into_iter()
        .map(|r| (r.id, r))
        .collect();
    let extra = extras(
        store,
        Some(
            &data
                .stored
                .members
                .iter()
                .map(|m| m.run_id)
                .collect::<Vec<_>>(),
        ),
    )?;
    let members: Vec<Json> = data
        .stored
        .members
        .iter()
        .map(|m| {
            let point: Json = serde_json::from_str(&m.point_json).unwrap_or(Json::Null);
            let run = statuses
                .get(&m.run_id)
                .map(|r| summary(r, extra.get(&r.id)));
            json!({"point": m.point, "seed_index": m.seed_index, "seed": m.seed.to_string(),
                   "axes": point, "run": run})
        })
        .collect();
    let axes = &data.stored.record.axes;
    // The final-value figures' layout, as `tabula report`'s.
    let crate::experiments::report::Layout { x, by, facets } =
        crate::experiments::report::Layout::of(&data);
    let mut figures = serde_json::Map::new();
    for (metric, title, digits) in crate::experiments::report::METRICS {
        let curves = plot::curves(&data, metric, &[]);
        let mut finals = Vec::new();
        if let Some(x) = &x {
            for facet in &facets {
                if let Ok(f) = plot::finals(&data, metric, At::Final, x, by.as_deref(), facet) {
                    finals.push(json!({
                        "facet": facet.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                        "finals": f,
                    }));
                }
            }
        }
        figures.insert(
            metric.to_string(),
            json!({"title": title, "digits": digits, "curves": curves, "finals": finals,
                   "reference": plot::reference(metric).map(|r| r.0)}),
        );
    }
    let finished = data.finished.len();
    Ok(json!({
        "name": row.name,
        "hash": row.hash.to_hex(),
        "created_at": row.created_at,
        "axes": axes.iter().map(|(k, vs)| json!({"key": k, "values": vs})).collect::<Vec<_>>(),
        "seeds": row.seeds,
        "points": row.points,
        "runs": members.len(),
        "planned_runs": u64::from(row.points) * u64::from(row.seeds),
        "finished": finished,
        "members": members,
        "x": x,
        "by": by,
        "figures": figures,
        "order": crate::experiments::report::METRICS.iter().map(|m| m.0).collect::<Vec<_>>(),
    }))
}
