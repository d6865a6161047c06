//! `tabula run`, `tabula ls`, `tabula show`: runs of tabular AlphaZero in the store.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;
use tabula::runs::{Exchange, RunConfig};
use tabula::store::{QueryResult, RunRow, SessionRow, Store, Subject};

use super::args::{LsArgs, RunArgs, ShowArgs};
use super::common::{annotate_config, resume_and_report, start_and_report};
use super::output::{JsonLayout, Report, emit, outln};
use super::rows::to_table;
use super::workers::{Role, role, serve};

pub(crate) fn run(db: Option<&Path>, args: &RunArgs) -> anyhow::Result<()> {
    let spread = match role(&args.spread)? {
        Role::Worker(x) => return serve(&x, args.threads, 600.0, args.json, args.json),
        Role::Trainer(spread) => spread,
    };
    let x = spread.exchange.as_ref();
    let text = tabula::runs::spec::read_spec_file(&args.spec)
        .with_context(|| format!("reading the run spec {}", args.spec.display()))?;
    let default_name = args
        .spec
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".to_string());
    // `--set key=value` is written into the spec before it is read, so defaults that
    // depend on other keys follow the overridden values (runs::overrides).
    let (cfg, text) = if args.set.is_empty() {
        let cfg = RunConfig::from_toml(&text, &default_name)
            .with_context(|| format!("{}", args.spec.display()))?;
        (cfg, text)
    } else {
        use tabula::runs::overrides::{Place, parse_sets, spec_with_overrides};
        let sets = parse_sets(&args.set)?;
        spec_with_overrides(Place::Run, &text, &sets, None, &default_name, "--set")
            .with_context(|| format!("{}", args.spec.display()))?
    };
    let mut cfg = cfg;
    annotate_config(&mut cfg, &args.annotate)?;
    if again(db, &cfg, args, x)? {
        return Ok(());
    }
    start_and_report(db, &cfg, &text, args.threads, args.json, x)
}

/// The same spec run again (`make run` a second time): when the store holds a run of this
/// name with this spec's run record (variant, seed, settings) and planned iterations, a
/// finished one is shown and an interrupted one resumed; returns whether it was. A run of
/// this name with anything else (a spec without a seed draws a new one each time) is left to
/// the store, which refuses the name.
fn again(
    db: Option<&Path>,
    cfg: &RunConfig,
    args: &RunArgs,
    x: Option<&Exchange>,
) -> anyhow::Result<bool> {
    let path = Store::resolve_path(db);
    if !path.exists() {
        return Ok(false);
    }
    // Opened as the writer `run` is: a store another process is creating this instant
    // (an empty file) is waited for, not refused.
    let mut store = Store::open(&path)?;
    let Some(row) = tabula::experiments::run_specs::stored_run_of(&store, cfg)? else {
        return Ok(false);
    };
    if !args.json {
        let state = if row.iterations_done >= row.iterations_planned {
            "finished"
        } else {
            "interrupted: continuing it"
        };
        outln!(
            "run {} ({}) is in the store already, from this spec (same variant, seed, settings \
             and iterations; run record {}): {}/{} iterations, {state}",
            row.id,
            row.name,
            row.hash.short(),
            row.iterations_done,
            row.iterations_planned
        );
    }
    resume_and_report(&mut store, &row.id.to_string(), args.threads, args.json, x)?;
    Ok(true)
}

pub(crate) fn ls(db: Option<&Path>, args: &LsArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&Store::resolve_path(db))?;
    let runs = store.runs()?.into_iter().map(LsRow::of).collect();
    emit(&LsReport { runs }, args.json)
}

/// `ls`: the runs of the store; a JSON array of them.
#[derive(Serialize)]
#[serde(transparent)]
struct LsReport {
    runs: Vec<LsRow>,
}

/// A run in `ls`.
#[derive(Serialize)]
struct LsRow {
    id: i64,
    name: String,
    variant: String,
    seed: String,
    iterations_done: u32,
    iterations_planned: u32,
    status: tabula::store::RunStatus,
    head: Option<String>,
    run_hash: String,
    created_at: String,
}

impl LsRow {
    fn of(r: RunRow) -> LsRow {
        LsRow {
            id: r.id,
            name: r.name,
            variant: r.variant,
            seed: r.seed,
            iterations_done: r.iterations_done,
            iterations_planned: r.iterations_planned,
            status: r.status,
            head: r.head.map(|h| h.to_hex()),
            run_hash: r.hash.to_hex(),
            created_at: r.created_at,
        }
    }
}

impl Report for LsReport {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for LsReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.runs.is_empty() {
            return writeln!(
                f,
                "no runs yet (start one with `tabula run runs/quick.toml`)"
            );
        }
        writeln!(
            f,
            "{:>4}  {:<16} {:<12} {:>11}  {:<11} head",
            "id", "name", "variant", "iterations", "status"
        )?;
        for r in &self.runs {
            writeln!(
                f,
                "{:>4}  {:<16} {:<12} {:>5}/{:<5}  {:<11} {}",
                r.id,
                r.name,
                r.variant,
                r.iterations_done,
                r.iterations_planned,
                r.status.as_str(),
                r.head.as_deref().unwrap_or("-")
            )?;
        }
        Ok(())
    }
}

pub(crate) fn show(db: Option<&Path>, args: &ShowArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&Store::resolve_path(db))?;
    let run = tabula::runs::find(&store, &args.run)?;
    if let Some(i) = args.games {
        return show_games(&store, &run, i, args.json);
    }
    emit(&ShowReport::of(&store, run)?, args.json)
}

/// `show RUN`: the run's row, settings, provenance and metrics table.
#[derive(Serialize)]
struct ShowReport {
    run: i64,
    name: String,
    variant: String,
    seed: String,
    status: tabula::store::RunStatus,
    iterations_done: u32,
    iterations_planned: u32,
    run_hash: String,
    head: Option<String>,
    settings: serde_json::Value,
    parent: Option<ParentOf>,
    note: Option<String>,
    tags: Vec<String>,
    sessions: Vec<SessionRow>,
    /// The metrics table, a JSON object per row.
    metrics: Vec<serde_json::Value>,
    /// The text's lines from the run's settings: how self-play plays, one per stage.
    #[serde(skip)]
    plan: Vec<String>,
    #[serde(skip)]
    table: QueryResult,
}

/// A branch's parent, branch point and overrides (from its run record).
#[derive(Serialize)]
struct ParentOf {
    run: i64,
    name: String,
    iteration: u32,
    overrides: Vec<String>,
}

impl ShowReport {
    fn of(store: &Store, run: RunRow) -> anyhow::Result<ShowReport> {
        let table = store.run_metrics(run.id)?;
        let notes = store.annotations(&Subject::Run(run.id))?;
        let settings: serde_json::Value =
            serde_json::from_str(&run.settings_json).unwrap_or(serde_json::Value::Null);
        let parent = match run.parent {
            Some((pid, at)) => {
                let record: tabula::runs::RunRecord = store.get(&run.hash)?;
                let name = store
                    .runs()?
                    .into_iter()
                    .find(|r| r.id == pid)
                    .map(|r| r.name)
                    .unwrap_or_default();
                Some(ParentOf {
                    run: pid,
                    name,
                    iteration: at,
                    overrides: record.parent.map(|p| p.overrides).unwrap_or_default(),
                })
            }
            None => None,
        };
        let metrics = table
            .rows
            .iter()
            .map(|row| {
                serde_json::Value::Object(
                    table
                        .columns
                        .iter()
                        .cloned()
                        .zip(row.iter().map(|v| v.to_json()))
                        .collect(),
                )
            })
            .collect();
        Ok(ShowReport {
            sessions: store.run_sessions(run.id)?,
            plan: plan_in_words(store, &run),
            run: run.id,
            name: run.name,
            variant: run.variant,
            seed: run.seed,
            status: run.status,
            iterations_done: run.iterations_done,
            iterations_planned: run.iterations_planned,
            run_hash: run.hash.to_hex(),
            head: run.head.map(|h| h.to_hex()),
            settings,
            parent,
            note: notes.note,
            tags: notes.tags,
            metrics,
            table,
        })
    }
}

/// The `self-play` and `stage` lines of `show`: how an iteration plays, and each stage's
/// iterations and overrides; none when the run's config cannot be read back.
fn plan_in_words(store: &Store, run: &RunRow) -> Vec<String> {
    let Ok((cfg, _)) = tabula::runs::load_config(store, run) else {
        return Vec::new();
    };
    let mut lines = vec![format!("self-play  {}", self_play_in_words(&cfg.settings))];
    let mut first = 1u32;
    for (k, st) in cfg.settings.stages.iter().enumerate() {
        let last = match k + 1 == cfg.settings.stages.len() {
            true => cfg.iterations,
            false => first + st.iterations - 1,
        };
        let set = match st.set.is_empty() {
            true => "the run's settings".to_string(),
            false => st.set.join(" "),
        };
        lines.push(format!(
            "stage {}    `{}`, iterations {first}..={last}: {set}",
            k + 1,
            st.name
        ));
        first = last + 1;
    }
    lines
}

impl Report for ShowReport {
    const JSON: JsonLayout = JsonLayout::Pretty;
}

impl std::fmt::Display for ShowReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "run {}  {}  {}  seed {}  {}/{} iterations  {}",
            self.run,
            self.name,
            self.variant,
            self.seed,
            self.iterations_done,
            self.iterations_planned,
            self.status.as_str()
        )?;
        writeln!(f, "run record {}", self.run_hash)?;
        writeln!(f, "head       {}", self.head.as_deref().unwrap_or("-"))?;
        if let Some(p) = &self.parent {
            writeln!(
                f,
                "branch of  run {} ({}) at iteration {at}; overrides: {}; iterations 0..{at} \
                 below are inherited (from_run names whose row each is)",
                p.run,
                p.name,
                if p.overrides.is_empty() {
                    "none".to_string()
                } else {
                    p.overrides.join(" ")
                },
                at = p.iteration,
            )?;
        }
        writeln!(f, "settings   {}", self.settings)?;
        for line in &self.plan {
            writeln!(f, "{line}")?;
        }
        if let Some(line) = schedule_in_words(&self.settings, self.iterations_planned) {
            writeln!(f, "learning   {line}")?;
        }
        if let Some(n) = &self.note {
            writeln!(f, "note       {}", n.replace('\n', "\n           "))?;
        }
        if !self.tags.is_empty() {
            writeln!(f, "tags       {}", self.tags.join(", "))?;
        }
        for s in &self.sessions {
            writeln!(f, "session    {}", session_in_words(s))?;
        }
        writeln!(f)?;
        write!(f, "{}", to_table(&self.table))
    }
}

/// `show RUN --games I`: the games of iteration `i` of `run` (a branch's inherited iterations
/// are its ancestors' rows).
fn show_games(
    store: &Store,
    run: &tabula::store::RunRow,
    i: u32,
    json: bool,
) -> anyhow::Result<()> {
    // The iteration after the last committed one has games only while the run is unfinished
    // (an interrupted run keeps the games it had played of it).
    let unfinished = run.iterations_done < run.iterations_planned;
    let last = run.iterations_done + u32::from(unfinished);
    if i == 0 || i > last {
        if unfinished {
            anyhow::bail!(
                "run {} has iterations 1..={} (and the games of {} if it was interrupted); \
                 --games {i} is not one of them",
                run.id,
                run.iterations_done,
                run.iterations_done + 1
            );
        }
        anyhow::bail!(
            "run {} has iterations 1..={}; --games {i} is not one of them",
            run.id,
            run.iterations_done
        );
    }
    let runs = store.runs()?;
    let mut owner = run.clone();
    while let Some((pid, at)) = owner.parent
        && i <= at
    {
        match runs.iter().find(|r| r.id == pid) {
            Some(p) => owner = p.clone(),
            None => break,
        }
    }
    let games = store.run_games(owner.id, i)?;
    if games.is_empty() && i > run.iterations_done {
        anyhow::bail!(
            "run {} has no games of iteration {i} stored yet (it has iterations 1..={})",
            run.id,
            run.iterations_done
        );
    }
    let report = GamesReport {
        run: run.id,
        iteration: i,
        stored_in_run: owner.id,
        games: games
            .into_iter()
            .map(|(game, h)| GameRef {
                game,
                hash: h.to_hex(),
            })
            .collect(),
    };
    emit(&report, json)
}

/// `show RUN --games I`: the games of an iteration, and the run whose rows hold them.
#[derive(Serialize)]
struct GamesReport {
    run: i64,
    iteration: u32,
    stored_in_run: i64,
    games: Vec<GameRef>,
}

#[derive(Serialize)]
struct GameRef {
    game: u32,
    hash: String,
}

impl Report for GamesReport {
    const JSON: JsonLayout = JsonLayout::Pretty;
}

impl std::fmt::Display for GamesReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "run {} iteration {}: {} games stored",
            self.run,
            self.iteration,
            self.games.len()
        )?;
        for g in &self.games {
            writeln!(f, "{:>6}  {}", g.game, g.hash)?;
        }
        Ok(())
    }
}

/// How much an iteration of a run plays, in words; for a timed budget, what that means for
/// replaying it (docs/budgets.md).
fn self_play_in_words(s: &tabula::runs::Settings) -> String {
    let amount = s.self_play_in_words();
    match s.budget_kind() {
        Some(b) if b.is_timed() => format!(
            "{amount}: wall time decided how many games each iteration kept (column `games`); \
             the counts are recorded, so the run replays bit-exactly from this store (resume, \
             branch, verify, replay use them) but not from its seed alone"
        ),
        Some(_) => format!(
            "{amount}: each iteration kept the shortest prefix of its games reaching it \
             (column `games`), the same from the seed alone"
        ),
        None => amount,
    }
}

/// The learning-rate schedule of a run's settings in words, e.g. "beta 1 for iterations
/// 1..50, 0.1 from iteration 51 (the paper's switch at the half; docs/search.md)".
fn schedule_in_words(settings: &serde_json::Value, planned: u32) -> Option<String> {
    let steps = settings.get("learning_rate")?.as_array()?;
    let steps: Vec<(u64, f64)> = steps
        .iter()
        .filter_map(|s| Some((s.get(0)?.as_u64()?, s.get(1)?.as_f64()?)))
        .collect();
    if steps.is_empty() {
        return None;
    }
    let mut parts = Vec::with_capacity(steps.len());
    for (k, &(from, beta)) in steps.iter().enumerate() {
        let to = steps.get(k + 1).map(|&(next, _)| next - 1);
        parts.push(match to {
            Some(to) if to >= from => format!("beta {beta} for iterations {from}..{to}"),
            Some(_) => continue,
            None if from <= 1 => format!("beta {beta} throughout"),
            None => format!("beta {beta} from iteration {from}"),
        });
    }
    let half = steps.len() == 2 && steps[1].0 == u64::from(planned) / 2 + 1;
    let why = if half {
        " (switching after half the iterations, as the paper's \"at the half\"; docs/search.md)"
    } else {
        ""
    };
    Some(format!("{}{why}", parts.join(", ")))
}

/// A process's session on a run in one line: when, from which iteration to which and how it
/// ended, the build, the host and the command line.
fn session_in_words(s: &SessionRow) -> String {
    let end = match (&s.ended_at, s.iterations_to, &s.outcome) {
        (Some(at), Some(to), Some(o)) => {
            format!("to {at}, iterations {}..{to} ({o})", s.iterations_from)
        }
        _ => format!(
            "from iteration {}, not ended (running, or killed)",
            s.iterations_from
        ),
    };
    let commit = &s.engine_commit[..s.engine_commit.len().min(12)];
    format!(
        "{} {end}; tabula {} {commit} ({}, {}) on {} pid {}, {} threads: {}",
        s.started_at,
        s.engine_version,
        s.engine_tree,
        s.build_profile,
        s.host,
        s.pid,
        s.threads,
        s.command_line
    )
}
