//! A run's or a sweep's results as one tidy table (docs/python.md, "A tidy table"): one row
//! per run and iteration, a column per sweep axis, per setting and per metric; built as one
//! read-only SQL query over the store's views, so `tabula export` streams it like `sql`.
//!
//! A branch's rows include the iterations it shares with its parent (their metrics are the
//! parent's rows; `source_run` says whose) and iteration 0, the untrained model of its root.
//! An iteration the evaluation interval skipped (`[eval] every`, docs/metrics.md) has no row:
//! the table holds the measured iterations only.

use super::ExperimentError;
use super::sweep::find;
use crate::store::Store;

/// What to export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A run by id, name or hash prefix.
    Run(String),
    /// A sweep by name or hash prefix: all its runs in this store.
    Sweep(String),
}

/// The SQL of the tidy table of `target` (one statement, for [`Store::query_stream`]).
pub fn tidy_sql(store: &Store, target: &Target) -> Result<String, ExperimentError> {
    let settings = columns(store, "run_settings", &["run_id"])?;
    let metrics = columns(
        store,
        "metrics_wide",
        &["run_id", "name", "variant", "iteration"],
    )?;
    let mut select = vec![
        "t.run_id".to_string(),
        "t.iteration".to_string(),
        "t.source_run".to_string(),
    ];
    let (front, join, runs) = match target {
        Target::Run(text) => {
            let run = crate::runs::find(store, text)?;
            (Vec::new(), String::new(), run.id.to_string())
        }
        Target::Sweep(text) => {
            let s = find(store, text)?;
            let mut front = vec![
                format!("{} AS sweep", quote_text(&s.row.name)),
                "sm.point".to_string(),
                "sm.seed_index".to_string(),
            ];
            // An axis key is dotted (`search.init_q`): quoted inside the JSON path.
            for (key, _) in &s.record.axes {
                front.push(format!(
                    "json_extract(sm.point_json, '$.\"{}\"') AS {}",
                    key.replace('\'', "''").replace('"', "\\\""),
                    quote_ident(&format!("axis.{key}"))
                ));
            }
            let join = format!(
                "JOIN sweep_members sm ON sm.run_id = t.run_id AND sm.sweep = X'{}'",
                s.row.hash.to_hex()
            );
            let ids: Vec<String> = s.members.iter().map(|m| m.run_id.to_string()).collect();
            (front, join, ids.join(", "))
        }
    };
    if runs.is_empty() {
        return Err(ExperimentError::Usage(
            "the sweep has no runs in this store".to_string(),
        ));
    }
    select.splice(0..0, front);
    select.extend(metrics.iter().map(|c| format!("m.{}", quote_ident(c))));
    select.extend(settings.iter().map(|c| format!("s.{}", quote_ident(c))));
    Ok(format!(
        "WITH t(run_id, iteration, source_run) AS (
             SELECT run_id, iteration, source_run FROM run_iterations
                 WHERE evaluation <> X'{skipped}'
             UNION ALL
             SELECT r.id, 0, coalesce((SELECT l.ancestor FROM run_lineage l
                 WHERE l.run_id = r.id ORDER BY l.depth DESC LIMIT 1), r.id)
             FROM runs r)
         SELECT {}
         FROM t {join}
         JOIN run_settings s ON s.run_id = t.run_id
         LEFT JOIN metrics_wide m ON m.run_id = t.source_run AND m.iteration = t.iteration
         WHERE t.run_id IN ({runs})
         ORDER BY t.run_id, t.iteration",
        select.join(", "),
        skipped = crate::runs::records::NotMeasured::hash().to_hex(),
    ))
}

/// The columns of a view, less `skip`.
fn columns(store: &Store, view: &str, skip: &[&str]) -> Result<Vec<String>, ExperimentError> {
    let q = store.query(&format!("SELECT name FROM pragma_table_info('{view}')"))?;
    Ok(q.rows
        .iter()
        .map(|r| r[0].to_text())
        .filter(|c| !skip.contains(&c.as_str()))
        .collect())
}

fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

fn quote_text(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
