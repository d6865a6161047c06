//! A run's lifecycle (docs/store.md: Resume, Branch, Replay and verify): resume after a
//! crash, branch at an iteration with changed settings, verify stored iterations by
//! re-executing them, check out the model of an iteration, and check every reference.
//!
//! **Resume.** Everything is rebuilt from the store: the model from the checkpoint of the
//! last committed iteration (through its learner), the training window and the coverage set (`seen`) from the stored
//! games of the head's chain, and the games of the next iteration already committed are
//! reused as they are. Since every random draw comes from a named stream of the run seed and
//! every reduction runs in a fixed order, the run ends with the head an uninterrupted run has.
//!
//! **Lock.** A run being worked on carries its holder (pid, host, since) in `runs`; a second
//! `run`/`resume` gets [`crate::store::StoreError::Locked`]. A lock whose process on this host
//! is dead is taken over. The lock is released when the process finishes or fails.
//!
//! **Branch.** `branch RUN --at I --set key=value ... [--seed S]` makes a run whose record
//! names its parent (run, I, the parent's iteration record at I, the canonical overrides). Its
//! runs row starts at `iterations_done = I` with the parent's iteration record as head: the
//! first I iterations are the parent's records and rows (shared, not copied; `run_lineage`
//! and `run_iterations` in `schema/0004_lifecycle.sql` show them). It continues from the
//! parent's model at I. The model's initial parameters and the evaluation streams keep the
//! root run's seed (the model is the same model); self-play uses the branch's seed.
//!
//! Iteration records carry the run's *line*: its run record with `parent` left out (for a
//! root run, the run record itself). So a branch with no overrides and the parent's seed
//! produces the parent's records, and its head equals the parent's.
//!
//! The branch's seed, unless given, is pinned as the first `u64` of the stream
//! `branch(I,O)` of the parent's seed, where `O` is the canonical overrides (each
//! `key=<JSON value>`, sorted by key) joined by `;` ([`branch_seed`]).
//!
//! Settings that cannot change mid-run are refused with the reason: `variant` (the model's
//! positions and actions belong to it), `learner.kind`, `seed` (use `--seed`), and the
//! settings the learner declares fixed ([`crate::learners::LearnerKind::fixed_settings`]:
//! tabular AlphaZero's `init_std`, the network's architecture and optimiser).

use std::time::Instant;

use rand_core::Rng;

use super::{
    Job, Loop, Observer, Records, RunConfig, RunError, RunOutcome, Settings, Work, chain,
    restore_at, run_locked, start_point,
};
use crate::games::Abilities;
use crate::games::AnyGame;
use crate::learners::{Learner, LearnerKind, ModelSummary};
use crate::record::GameRecord;
use crate::runs::records::{Parent, RunRecord};
use crate::runs::spec::SpecError;
use crate::store::{NewRun, ObjectHash, RunRow, RunStatus, Store, address};

/// Finds a run by id, name or hash prefix, or says how to name one.
pub fn find(store: &Store, text: &str) -> Result<RunRow, RunError> {
    store.find_run(text)?.ok_or_else(|| {
        RunError::Usage(format!(
            "no run `{text}` in the store (give its id, its name, or at least {} hex digits \
             of its run hash or head; `tabula ls` lists them)",
            crate::store::MIN_PREFIX
        ))
    })
}

/// A stored run's configuration, rebuilt from its records.
pub fn load_config(store: &Store, row: &RunRow) -> Result<(RunConfig, RunRecord), RunError> {
    let record: RunRecord = store.get(&row.hash)?;
    let settings: Settings = super::load_settings(store, &record.settings)?;
    let game = record.variant.parse().map_err(SpecError::Variant)?;
    let cfg = RunConfig {
        name: row.name.clone(),
        game,
        seed: record.seed,
        seed_drawn: false,
        iterations: row.iterations_planned,
        settings,
    };
    Ok((cfg, record))
}

/// The seed of a run's model (its initial parameters and evaluation streams): its root
/// ancestor's seed (a branch continues the same model).
pub fn model_seed_of(store: &Store, record: &RunRecord) -> Result<u64, RunError> {
    let mut seed = record.seed;
    let mut parent = record.parent.clone();
    while let Some(p) = parent {
        let r: RunRecord = store.get(&p.run)?;
        seed = r.seed;
        parent = r.parent;
    }
    Ok(seed)
}

/// The `run` field of a run's iteration records: its run record without `parent`.
pub fn line_of(record: &RunRecord) -> RunRecord {
    RunRecord {
        parent: None,
        ..record.clone()
    }
}

/// What `resume` did.
#[derive(Debug)]
pub enum Resumed {
    /// The run had already finished: nothing to do.
    Finished {
        run_id: i64,
        iterations: u32,
        head: Option<ObjectHash>,
    },
    Ran(Box<RunOutcome>),
}

/// Continues a run from what was committed (see the module docs); a finished run is left
/// as it is.
pub fn resume(
    store: &mut Store,
    text: &str,
    observer: &mut dyn Observer,
) -> Result<Resumed, RunError> {
    let since = Instant::now();
    let row = find(store, text)?;
    if row.iterations_done >= row.iterations_planned {
        // A process killed between its last commit and its unlock leaves a dead holder:
        // taken over and released (a live holder is left alone).
        if store.lock_run(row.id).is_ok() {
            let _ = store.unlock_run(row.id);
        }
        return Ok(Resumed::Finished {
            run_id: row.id,
            iterations: row.iterations_done,
            head: row.head,
        });
    }
    store.lock_run(row.id)?;
    // Read again under the lock: another process may have committed meanwhile.
    let row = match find(store, &row.id.to_string()) {
        Ok(r) => r,
        Err(e) => {
            let _ = store.unlock_run(row.id);
            return Err(e);
        }
    };
    let prepared = (|| {
        let (cfg, record) = load_config(store, &row)?;
        let line = line_of(&record);
        let work = Work {
            run_id: row.id,
            run_hash: row.hash,
            line: address(&line)?.0,
            model_seed: model_seed_of(store, &record)?,
            done: row.iterations_done,
            head: row.head,
            baseline: record.parent.is_none() && !store.has_evaluation(row.id, 0)?,
            since,
        };
        Ok::<_, RunError>((cfg, work))
    })();
    let (cfg, work) = match prepared {
        Ok(p) => p,
        Err(e) => {
            let _ = store.unlock_run(row.id);
            return Err(e);
        }
    };
    if work.done >= cfg.iterations {
        let _ = store.unlock_run(row.id);
        return Ok(Resumed::Finished {
            run_id: row.id,
            iterations: work.done,
            head: work.head,
        });
    }
    observer.created(row.id, &row.hash, cfg.seed);
    run_locked(store, &cfg, &work, observer).map(|o| Resumed::Ran(Box::new(o)))
}

/// The pinned seed of a branch (see the module docs).
pub fn branch_seed(parent_seed: u64, at: u32, canonical_overrides: &[String]) -> u64 {
    crate::rng::stream_fmt(
        parent_seed,
        format_args!("branch({at},{})", canonical_overrides.join(";")),
    )
    .next_u64()
}

/// Settings after `key=value` overrides, with the canonical override texts (sorted by key).
#[derive(Clone, Debug)]
pub struct Overridden {
    pub settings: Settings,
    /// `iterations=N` (the plan) if given.
    pub iterations: Option<u32>,
    /// `name=...` (a label) if given.
    pub name: Option<String>,
    pub canonical: Vec<String>,
}

/// Applies `key=value` overrides to `settings`. Keys are the run spec's (`window`,
/// `search.init_q`, `eval.games`, ...); values are TOML values, bare words read as strings.
pub fn apply_overrides(settings: &Settings, overrides: &[String]) -> Result<Overridden, RunError> {
    let bad = |text: &str, why: String| RunError::Usage(format!("--set {text}: {why}"));
    let mut json = serde_json::to_value(settings)
        .map_err(|e| RunError::Usage(format!("settings as JSON: {e}")))?;
    let fixed = settings.learner.kind.fixed_settings();
    let mut pairs: Vec<(String, serde_json::Value)> = Vec::new();
    let mut iterations = None;
    let mut name = None;
    for text in overrides {
        let Some((key, value)) = text.split_once('=') else {
            return Err(bad(text, "give key=value, e.g. search.init_q=draw".into()));
        };
        let (key, value) = (key.trim(), value.trim());
        let reason = match key {
            "variant" => Some(
                "the variant cannot change mid-run: the model's positions and actions belong \
                 to it (start a new run instead)"
                    .to_string(),
            ),
            "seed" => Some("give the branch's seed with --seed".to_string()),
            "learner.kind" => Some(
                "the learner cannot change mid-run: the branch continues the parent's model \
                 (start a new run instead)"
                    .to_string(),
            ),
            _ => fixed
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(k, why)| format!("{k} cannot change mid-run: {why}")),
        };
        if let Some(reason) = reason {
            return Err(bad(text, reason));
        }
        if pairs.iter().any(|(k, _)| k == key) {
            return Err(bad(text, format!("`{key}` is set twice")));
        }
        let parsed: serde_json::Value = match toml::from_str::<toml::Table>(&format!("v = {value}"))
        {
            Ok(mut t) => match t.remove("v") {
                Some(v) => serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
                None => serde_json::Value::String(value.to_string()),
            },
            Err(_) => serde_json::Value::String(value.to_string()),
        };
        match key {
            "iterations" => {
                let n = parsed
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad(text, "iterations: an integer >= 1".into()))?;
                iterations = Some(n);
            }
            "name" => {
                let n = parsed
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string);
                crate::runs::spec::check_name(&n).map_err(|e| bad(text, e.to_string()))?;
                name = Some(n);
            }
            _ => {
                let mut slot = Some(&mut json);
                for part in key.split('.') {
                    slot = slot
                        .and_then(|v| v.as_object_mut())
                        .and_then(|o| o.get_mut(part));
                }
                let Some(slot) = slot else {
                    // A branch continues the parent's model: its fixed settings cannot change.
                    let keys: Vec<String> = setting_keys(&json)
                        .into_iter()
                        .filter(|k| !fixed.iter().any(|(f, _)| f == k))
                        .collect();
                    return Err(bad(
                        text,
                        format!(
                            "no setting `{key}`; allowed: iterations, name, {}",
                            keys.join(", ")
                        ),
                    ));
                };
                *slot = parsed.clone();
            }
        }
        pairs.push((key.to_string(), parsed));
    }
    let settings: Settings = serde_json::from_value(json)
        .map_err(|e| RunError::Usage(format!("--set {}: {e}", overrides.join(" "))))?;
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let canonical = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Ok(Overridden {
        settings,
        iterations,
        name,
        canonical,
    })
}

/// Every leaf key of a settings JSON object, dotted (`search.init_q`), in the object's order:
/// the keys an override may name (the branch and sweep error messages list them).
pub fn setting_keys(settings: &serde_json::Value) -> Vec<String> {
    fn walk(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
        if let Some(o) = v.as_object() {
            for (k, v) in o {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                if v.is_object() {
                    walk(v, &key, out);
                } else {
                    out.push(key);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(settings, "", &mut out);
    out
}

/// Creates a branch of run `parent` at iteration `at` (see the module docs); returns its
/// run id, run hash and seed. Run it with [`resume`].
pub fn create_branch(
    store: &mut Store,
    parent: &str,
    at: u32,
    overrides: &[String],
    seed: Option<u64>,
    threads: u32,
) -> Result<(i64, ObjectHash, u64), RunError> {
    let row = find(store, parent)?;
    if at == 0 || at > row.iterations_done {
        return Err(RunError::Usage(format!(
            "--at {at}: run {} ({}) has committed iterations 1..={}; branch at one of them",
            row.id, row.name, row.iterations_done
        )));
    }
    let (cfg, record) = load_config(store, &row)?;
    let o = apply_overrides(&cfg.settings, overrides)?;
    let iterations = o.iterations.unwrap_or(cfg.iterations);
    if iterations <= at {
        return Err(RunError::Usage(format!(
            "the branch would have nothing to do: iterations = {iterations} <= --at {at} (set \
             iterations=N with N > {at})"
        )));
    }
    let branch_cfg = RunConfig {
        name: match &o.name {
            Some(n) => n.clone(),
            None => store.unused_run_name(&format!("{}-branch", row.name))?,
        },
        game: cfg.game.clone(),
        seed: seed.unwrap_or_else(|| branch_seed(record.seed, at, &o.canonical)),
        seed_drawn: false,
        iterations,
        settings: o.settings.clone(),
    };
    branch_cfg.validate()?;
    let records = chain(store, row.head)?;
    let at_record = address(&records[at as usize - 1])?.0;
    let settings_json = serde_json::to_string(&branch_cfg.settings).unwrap_or_default();
    let settings_record = super::settings_record(&branch_cfg.settings)?;
    let spec_toml = format!(
        "# branch of run {} ({}) at iteration {at}; overrides: {}; seed {}\n{}",
        row.id,
        row.name,
        if o.canonical.is_empty() {
            "none".to_string()
        } else {
            o.canonical.join(" ")
        },
        branch_cfg.seed,
        row.spec_toml
    );
    let (id, hash) = store.write(|w| {
        let settings = w.put_encoded(&settings_record)?;
        let run = RunRecord {
            variant: record.variant.clone(),
            seed: branch_cfg.seed,
            settings,
            parent: Some(Parent {
                run: row.hash,
                iteration: at,
                iteration_record: at_record,
                overrides: o.canonical.clone(),
            }),
        };
        w.put(&line_of(&run))?;
        let hash = w.put(&run)?;
        let id = w.create_run(&NewRun {
            hash,
            name: branch_cfg.name.clone(),
            variant: run.variant.clone(),
            seed: branch_cfg.seed,
            seed_drawn: false,
            settings,
            settings_json: settings_json.clone(),
            spec_toml: spec_toml.clone(),
            iterations_planned: iterations,
            parent: Some((row.id, at)),
            threads,
        })?;
        w.set_run_progress(id, at, Some(&at_record), RunStatus::Running)?;
        Ok((id, hash))
    })?;
    Ok((id, hash, branch_cfg.seed))
}

/// The result of `verify`.
#[derive(Clone, Debug, Default)]
pub struct Verified {
    pub run_id: i64,
    pub first: u32,
    pub last: u32,
    /// Records whose hash was recomputed and compared.
    pub records: u64,
    /// The first record that differs, described (`None`: all identical).
    pub differs: Option<String>,
    pub seconds: f64,
}

/// Re-executes iterations `first..=last` of a run from the stored snapshot before `first`
/// and compares every record hash (games, table chunks, snapshot, evaluation, iteration
/// record) with the stored ones, re-reading every stored object on the way (so a damaged
/// object is named too). Stops at the first difference.
/// `observer` hears of the re-executed self-play games (for a progress bar).
pub fn verify(
    store: &mut Store,
    text: &str,
    range: Option<(u32, u32)>,
    observer: &mut dyn super::Observer,
) -> Result<Verified, RunError> {
    let row = find(store, text)?;
    let (cfg, record) = load_config(store, &row)?;
    let done = row.iterations_done;
    let first_own = record.parent.as_ref().map_or(1, |p| p.iteration + 1);
    let (a, b) = range.unwrap_or((first_own.min(done.max(1)), done));
    if a == 0 || a > b || b > done {
        return Err(RunError::Usage(format!(
            "--iterations {a}..{b}: run {} has committed iterations 1..={done}",
            row.id
        )));
    }
    let line = address(&line_of(&record))?.0;
    let seed = model_seed_of(store, &record)?;
    let started = Instant::now();
    let mut out = crate::with_game!(&cfg.game, |g| {
        let truth = super::truth(g, store, &cfg)?;
        verify_any(
            g,
            &cfg,
            truth.as_ref(),
            store,
            &row,
            line,
            seed,
            (a, b),
            observer,
        )
    })?;
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn verify_any<G: Abilities>(
    g: &G,
    cfg: &RunConfig,
    truth: Option<&crate::eval::Truth<G>>,
    store: &Store,
    row: &RunRow,
    line: ObjectHash,
    model_seed: u64,
    range: (u32, u32),
    observer: &mut dyn super::Observer,
) -> Result<Verified, RunError> {
    crate::with_learner!(cfg.settings.learner.kind, L => {
        verify_game::<G, L<G>>(g, cfg, truth, store, row, line, model_seed, range, observer)
    })
}

#[allow(clippy::too_many_arguments)]
fn verify_game<G: Abilities, L: crate::learners::Learner<G>>(
    g: &G,
    cfg: &RunConfig,
    truth: Option<&crate::eval::Truth<G>>,
    store: &Store,
    row: &RunRow,
    line: ObjectHash,
    model_seed: u64,
    (a, b): (u32, u32),
    observer: &mut dyn super::Observer,
) -> Result<Verified, RunError> {
    let all = chain(store, row.head)?;
    let head_before = if a >= 2 {
        Some(address(&all[a as usize - 2])?.0)
    } else {
        None
    };
    let mut result = Verified {
        run_id: row.id,
        first: a,
        last: b,
        ..Verified::default()
    };
    let start = start_point::<G, L>(g, store, cfg, model_seed, head_before, a - 1)?;
    // Iterations before a branch point belong to (and are verified with) the ancestor's
    // settings and line; verify only what this run's settings produced.
    if let Some(first) = all.get(a as usize - 1)
        && first.run != line
    {
        return Err(RunError::Usage(format!(
            "iteration {a} of run {} was made by an ancestor (its record names another run); \
             verify the ancestor, or start at this run's first own iteration",
            row.id
        )));
    }
    let mut records = 0u64;
    let mut sink = |job: Job, _wait: &mut f64| -> Result<(), RunError> {
        let differs = |what: String| RunError::Differs(what);
        match job {
            Job::Baseline(_) => Ok(()),
            Job::Games { iteration, batches } => {
                let stored = &all[iteration as usize - 1];
                for r in batches.iter().flat_map(|b| &b.rows) {
                    let Some(h) = stored.games.get(r.game as usize) else {
                        return Err(differs(format!(
                            "iteration {iteration} game {}: not in the stored iteration record",
                            r.game
                        )));
                    };
                    store.get::<GameRecord>(h).map_err(|e| {
                        differs(format!("iteration {iteration} game {}: {e}", r.game))
                    })?;
                    records += 1;
                    if *h != r.hash {
                        return Err(differs(format!(
                            "iteration {iteration} game {}: stored game/v1 {h}, re-executed {}",
                            r.game, r.hash
                        )));
                    }
                }
                Ok(())
            }
            Job::Iteration(job) => {
                let i = job.record.iteration;
                let stored = &all[i as usize - 1];
                let stored_hash = address(stored)?.0;
                // Every checkpoint object must be stored, bytes and address intact.
                for (k, c) in job.checkpoint.iter().enumerate() {
                    records += 1;
                    let what = c.kind.split('/').next().unwrap_or(c.kind).replace('-', " ");
                    store
                        .check(&c.hash)
                        .map_err(|e| differs(format!("iteration {i} {what} {k}: {e}")))?;
                }
                let checks = [
                    ("snapshot", "checkpoint", stored.snapshot, job.row.snapshot),
                    (
                        "evaluation",
                        "evaluation/v1",
                        stored.evaluation,
                        job.row.evaluation,
                    ),
                    ("record", "iteration/v1", stored_hash, job.row.hash),
                ];
                for (what, kind, s, h) in checks {
                    records += 1;
                    if s != h {
                        return Err(differs(format!(
                            "iteration {i} {what}: stored {kind} {s}, re-executed {h}"
                        )));
                    }
                }
                store
                    .get::<L::Evaluation>(&stored.evaluation)
                    .map_err(|e| differs(format!("iteration {i} evaluation: {e}")))?;
                Ok(())
            }
        }
    };
    let lp = Loop {
        g,
        cfg,
        truth,
        run_id: row.id,
        run_hash: row.hash,
        line,
        last: b,
        baseline: false,
        model_seed,
        learner: std::marker::PhantomData::<L>,
    };
    let outcome = lp.iterate(start, Vec::new(), &mut sink, observer, Instant::now());
    result.records = records;
    match outcome {
        Ok(_) => Ok(result),
        Err(RunError::Differs(what)) => {
            result.differs = Some(what);
            Ok(result)
        }
        Err(e) => Err(e),
    }
}

/// A self-play game re-played from its inputs.
#[derive(Clone, Debug)]
pub struct SelfPlayReplay {
    pub run_id: i64,
    pub iteration: u32,
    pub game: u32,
    /// The re-played game's address (equal to the stored one when the replay is faithful).
    pub hash: ObjectHash,
}

/// Re-plays a stored self-play game from its inputs: the model after the previous iteration
/// (checked out from the store), the run's search settings, the run seed and the game's
/// stream. `None` when no run lists the game.
pub fn replay_self_play(
    store: &Store,
    hash: &ObjectHash,
) -> Result<Option<SelfPlayReplay>, RunError> {
    let Some((run_id, iteration, game)) = store.game_owner(hash)? else {
        return Ok(None);
    };
    let row = find(store, &run_id.to_string())?;
    let (cfg, record) = load_config(store, &row)?;
    let seed = model_seed_of(store, &record)?;
    let records = chain(store, row.head)?;
    if iteration as usize - 1 > records.len() {
        return Err(RunError::Usage(format!(
            "run {run_id} iteration {iteration}: the previous iteration is not committed"
        )));
    }
    let stored: GameRecord = store.get(hash)?;
    let again = crate::with_game!(&cfg.game, |g| replay_any(
        g, store, &cfg, seed, &records, &stored, iteration, game
    ))?;
    Ok(Some(SelfPlayReplay {
        run_id,
        iteration,
        game,
        hash: again,
    }))
}

#[allow(clippy::too_many_arguments)]
fn replay_any<G: Abilities>(
    g: &G,
    store: &Store,
    cfg: &RunConfig,
    model_seed: u64,
    records: &[super::IterationRecord],
    stored: &GameRecord,
    iteration: u32,
    game: u32,
) -> Result<ObjectHash, RunError> {
    crate::with_learner!(cfg.settings.learner.kind, L => {
        replay_game::<G, L<G>>(g, store, cfg, model_seed, records, stored, iteration, game)
    })
}

/// Re-plays self-play game `game` of `iteration` with the model after the previous iteration
/// (of the chain `records`), from the stored game's start (the start policy's choice,
/// recorded in it).
#[allow(clippy::too_many_arguments)]
fn replay_game<G: Abilities, L: crate::learners::Learner<G>>(
    g: &G,
    store: &Store,
    cfg: &RunConfig,
    model_seed: u64,
    records: &[super::IterationRecord],
    stored: &GameRecord,
    iteration: u32,
    game: u32,
) -> Result<ObjectHash, RunError> {
    let model: L = restore_at(
        g,
        store,
        &cfg.settings,
        model_seed,
        &mut Records::Whole(records),
        iteration - 1,
    )?;
    let start = stored.start_state(g)?;
    let mut search = crate::search::Search::new(cfg.settings.search)
        .map_err(|e| RunError::Usage(format!("the run's search settings: {e}")))?;
    let mut eval = model.evaluator();
    let r = crate::selfplay::self_play_game(
        g,
        &mut search,
        &mut eval,
        cfg.seed,
        iteration,
        game,
        stored.start.is_some().then_some(&start),
        None,
    )?;
    Ok(address(&r)?.0)
}

/// A run at an iteration, read for restoring its model: the run, its configuration, its
/// model seed and its chain of iteration records.
struct RunAt<'s> {
    row: RunRow,
    cfg: RunConfig,
    seed: u64,
    records: Records<'s>,
}

/// Finds run `text` and checks that iteration `i` is committed (0: untrained) and, where
/// `variant` is given, that the run plays it; `name` is how errors write the request
/// (`model:RUN@I`, `RUN@I`), `model` what iteration 0 gives.
fn run_at<'s>(
    store: &'s Store,
    text: &str,
    i: u32,
    name: &str,
    model: &str,
    variant: Option<String>,
) -> Result<RunAt<'s>, RunError> {
    let row = find(store, text)?;
    if i > row.iterations_done {
        return Err(RunError::Usage(format!(
            "{name}: run {} has committed iterations 0..={} (0: the untrained {model})",
            row.id, row.iterations_done
        )));
    }
    let (cfg, record) = load_config(store, &row)?;
    if let Some(v) = variant
        && record.variant != v
    {
        return Err(RunError::Usage(format!(
            "{name}: run {} plays {}, not {v}",
            row.id, record.variant
        )));
    }
    let seed = model_seed_of(store, &record)?;
    let records = chain_to(store, &row, &record, i)?;
    Ok(RunAt {
        row,
        cfg,
        seed,
        records,
    })
}

/// The iteration records 1..=`i` of run `row` (its run record `record`; none for 0), read
/// lazily from iteration `i`'s record down ([`Records`]): that record is the one in `i`'s own
/// `iterations` row when the run has one and it carries the run's line, else the one reached
/// from the run's head. Reading only the records `RUN@I` needs matters: each iteration
/// record's list of games is re-hashed from its packs when read (docs/store.md, "Elided
/// iteration records"), so walking a 300-iteration run from its head to read iteration 19 cost
/// most of a `checkout`. fsck checks the rows against the head's chain.
fn chain_to<'s>(
    store: &'s Store,
    row: &RunRow,
    record: &RunRecord,
    i: u32,
) -> Result<Records<'s>, RunError> {
    let whole = || Records::Whole(&[]);
    if i == 0 {
        return Ok(whole());
    }
    if i < row.iterations_done {
        let own = store
            .iteration_hashes(row.id)?
            .into_iter()
            .find(|(k, _)| *k == i);
        if let Some((_, h)) = own {
            let mut records = Records::down_from(store, h, i);
            if records.get(i)?.run == address(&line_of(record))?.0 {
                return Ok(records);
            }
        }
    }
    let Some(head) = row.head else {
        return Err(crate::store::StoreError::Query(format!(
            "run {} has {} committed iterations but no head",
            row.id, row.iterations_done
        ))
        .into());
    };
    let mut records = Records::down_from(store, head, row.iterations_done);
    records.get(i)?;
    Ok(records)
}

/// [`run_at`] for `RUN@I` of a run that must play `g`.
fn run_in<'s, G: Abilities>(
    g: &G,
    store: &'s Store,
    text: &str,
    i: u32,
) -> Result<RunAt<'s>, RunError> {
    run_at(
        store,
        text,
        i,
        &format!("{text}@{i}"),
        "model",
        Some(g.variant()),
    )
}

/// A trained model as a player: the model of run `text` after iteration `i` (0: untrained),
/// restored through its learner, with the run's search settings.
pub fn load_model<G: Abilities>(
    g: &G,
    store: &Store,
    text: &str,
    i: u32,
) -> Result<
    (
        std::sync::Arc<dyn crate::learners::Model<G>>,
        crate::search::SearchConfig,
    ),
    RunError,
> {
    let RunAt {
        cfg,
        seed,
        mut records,
        ..
    } = run_at(
        store,
        text,
        i,
        &format!("model:{text}@{i}"),
        "model",
        Some(g.variant()),
    )?;
    let model: std::sync::Arc<dyn crate::learners::Model<G>> = crate::with_learner!(cfg.settings.learner.kind, L => {
        std::sync::Arc::new(restore_at::<G, L<G>>(
            g,
            store,
            &cfg.settings,
            seed,
            &mut records,
            i,
        )?)
    });
    Ok((model, cfg.settings.search))
}

/// A model checked out at an iteration: what its learner says of it
/// ([`Learner::summary`](crate::learners::Learner::summary)).
#[derive(Clone, Debug)]
pub struct CheckedOut {
    pub run_id: i64,
    pub iteration: u32,
    /// The learner's name (`[learner] kind`).
    pub learner: &'static str,
    /// The snapshot the iteration record names (`None` for iteration 0).
    pub snapshot: Option<ObjectHash>,
    pub model: ModelSummary,
    pub seconds: f64,
}

/// The model of run `text` after iteration `i` (0: untrained) in game `g`, restored through
/// learner `L`: read from its checkpoint or rebuilt from the games (derived snapshots,
/// docs/store.md), checked against the snapshot's address either way. `L` must be the run's
/// learner.
pub fn model_at<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &Store,
    text: &str,
    i: u32,
) -> Result<L, RunError> {
    let RunAt {
        cfg,
        seed,
        mut records,
        ..
    } = run_in(g, store, text, i)?;
    if cfg.settings.learner.kind.name() != L::NAME {
        return Err(RunError::Usage(format!(
            "{text}@{i}: the run's learner is {}, not {}",
            cfg.settings.learner.kind.name(),
            L::NAME
        )));
    }
    restore_at(g, store, &cfg.settings, seed, &mut records, i)
}

/// ERR_p and MAE_v (docs/metrics.md) of the model of run `text` after iteration `i`, restored
/// through the run's learner, over the positions of `truth` (any set: the test positions, or
/// every position two runs visited). The model's priors and value are its leaf evaluator's.
pub fn model_errors<G: Abilities>(
    g: &G,
    store: &Store,
    text: &str,
    i: u32,
    truth: &crate::eval::Truth<G>,
) -> Result<(f64, f64), RunError> {
    let RunAt {
        cfg,
        seed,
        mut records,
        ..
    } = run_in(g, store, text, i)?;
    crate::with_learner!(cfg.settings.learner.kind, L => {
        let m: L<G> = restore_at(g, store, &cfg.settings, seed, &mut records, i)?;
        let mut eval = <L<G> as Learner<G>>::evaluator(&m);
        // Learners' evaluators draw nothing; the stream is there for the trait.
        let mut rng = crate::rng::stream(seed, "model-errors");
        Ok(truth.test_errors(g, |s, legal, priors| {
            crate::search::Evaluator::evaluate(&mut eval, g, s, legal, priors, &mut rng)
        }))
    })
}

/// The decision positions on the trajectories of run `text`'s self-play games of iterations
/// 1..=`i` (a branch's shared iterations included), in the order first met.
pub fn visited_positions<G: Abilities>(
    g: &G,
    store: &Store,
    text: &str,
    i: u32,
) -> Result<Vec<G::State>, RunError> {
    let RunAt { mut records, .. } = run_in(g, store, text, i)?;
    let mut seen = crate::solver::fasthash::FastSet::default();
    let mut out = Vec::new();
    for j in 1..=i {
        for h in &records.get(j)?.games {
            let rec: GameRecord = store.get(h)?;
            let states = rec.states(g)?;
            for s in super::decision_states(g, &states) {
                if seen.insert(g.key(s)) {
                    out.push(*s);
                }
            }
        }
    }
    Ok(out)
}

/// Reconstructs the model of iteration `i` of a run, through its learner, and describes it
/// (`with_rows`: with the rows `checkout --export` writes).
pub fn checkout_at(
    store: &Store,
    text: &str,
    i: u32,
    with_rows: bool,
) -> Result<CheckedOut, RunError> {
    let started = Instant::now();
    let RunAt {
        row,
        cfg,
        seed,
        mut records,
    } = run_at(store, text, i, &format!("{text}@{i}"), "model", None)?;
    let snapshot = match i {
        0 => None,
        _ => Some(records.get(i)?.snapshot),
    };
    let model = crate::with_game!(&cfg.game, |g| summarise(
        g,
        store,
        &cfg.settings,
        seed,
        &mut records,
        i,
        with_rows
    ))?;
    Ok(CheckedOut {
        run_id: row.id,
        iteration: i,
        learner: cfg.settings.learner.kind.name(),
        snapshot,
        model,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The model of iteration `i` of the run `records` belong to, restored through the run's
/// learner and described.
fn summarise<G: Abilities>(
    g: &G,
    store: &Store,
    settings: &Settings,
    model_seed: u64,
    records: &mut Records<'_>,
    i: u32,
    with_rows: bool,
) -> Result<ModelSummary, RunError> {
    crate::with_learner!(settings.learner.kind, L => {
        let m: L<G> = restore_at(g, store, settings, model_seed, records, i)?;
        Ok(m.summary(g, settings.learner_context(model_seed), i, with_rows)?)
    })
}

/// A reference that does not resolve, or an object that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Dangling {
    /// Where the reference sits (e.g. `run 2 iteration 3 game 7`, `snapshot <hash> chunk 0`).
    pub at: String,
    pub hash: String,
    pub problem: String,
}

/// What [`check_references`] found.
#[derive(Clone, Debug, Default)]
pub struct References {
    /// References that do not resolve, and records that cannot be read, in a fixed order.
    pub dangling: Vec<Dangling>,
    /// Every reference checked: (where it sits, the object it names); with fsck's damaged
    /// objects, this says which run, iteration, game or chunk a damaged object is.
    pub all: Vec<(String, ObjectHash)>,
}

impl References {
    /// Where `hash` is referenced from.
    pub fn referrers(&self, hash: &ObjectHash) -> Vec<&str> {
        self.all
            .iter()
            .filter(|(_, h)| h == hash)
            .map(|(at, _)| at.as_str())
            .collect()
    }
}

/// Checks that every hash the run tables and the run records hold names a stored object,
/// and that the records decode.
pub fn check_references(store: &Store) -> Result<References, RunError> {
    let mut out = Vec::new();
    let mut all: Vec<(String, ObjectHash)> = store.run_references()?;
    let mut miss = |at: String, h: &ObjectHash, problem: &str| {
        out.push(Dangling {
            at,
            hash: h.to_hex(),
            problem: problem.to_string(),
        })
    };
    for (at, h) in &all {
        if !store.contains(h)? {
            miss(at.clone(), h, "missing");
        }
    }
    // Each checkpoint root with the run's game and learner, which say how to read it.
    let mut snapshots: std::collections::BTreeMap<ObjectHash, (AnyGame, LearnerKind)> =
        std::collections::BTreeMap::new();
    let mut iterations = std::collections::BTreeMap::new();
    for run in store.runs()? {
        // The run record is read once: its references, and the game and learner that read
        // its snapshots (`None`: unreadable, reported once here).
        let owner = match store.get::<RunRecord>(&run.hash) {
            Ok(r) => {
                let mut refs = vec![("settings", r.settings)];
                if let Some(p) = &r.parent {
                    refs.push(("parent run", p.run));
                    refs.push(("parent iteration", p.iteration_record));
                }
                for (what, h) in refs {
                    let at = format!("run {} record: {what}", run.id);
                    if !store.contains(&h)? {
                        miss(at.clone(), &h, "missing");
                    }
                    all.push((at, h));
                }
                let settings = super::load_settings(store, &r.settings);
                match (settings, r.variant.parse::<AnyGame>()) {
                    (Ok(s), Ok(g)) => Some((g, s.learner.kind)),
                    // A missing settings record is reported above.
                    (Err(_), _) if !store.contains(&r.settings)? => None,
                    (Err(e), _) => {
                        let at = format!("run {} record: settings", run.id);
                        miss(at, &r.settings, &e.to_string());
                        None
                    }
                    (_, Err(e)) => {
                        miss(format!("run {} record", run.id), &run.hash, &e.to_string());
                        None
                    }
                }
            }
            Err(e) => {
                miss(format!("run {} record", run.id), &run.hash, &e.to_string());
                None
            }
        };
        for (_, h) in store.iteration_hashes(run.id)? {
            iterations.entry(h).or_insert_with(|| owner.clone());
        }
    }
    for (h, owner) in &iterations {
        let r: super::IterationRecord = match store.get(h) {
            Ok(r) => r,
            Err(e) => {
                miss(format!("iteration record {}", h.short()), h, &e.to_string());
                continue;
            }
        };
        let at = format!("iteration record {} (iteration {})", h.short(), r.iteration);
        let mut refs: Vec<(String, ObjectHash)> = vec![
            ("run".into(), r.run),
            ("settings".into(), r.settings),
            ("snapshot".into(), r.snapshot),
            ("evaluation".into(), r.evaluation),
        ];
        if let Some(p) = r.previous {
            refs.push(("previous".into(), p));
        }
        for (k, g) in r.games.iter().enumerate() {
            refs.push((format!("game {k}"), *g));
        }
        for (what, x) in refs {
            if !store.contains(&x)? {
                miss(format!("{at}: {what}"), &x, "missing");
            }
            all.push((format!("{at}: {what}"), x));
        }
        if let Some(o) = owner {
            snapshots.entry(r.snapshot).or_insert_with(|| o.clone());
        }
    }
    // Full checkpoints whose bytes the learner chose not to keep: derived, like deltas.
    let unkept: std::collections::BTreeSet<ObjectHash> =
        store.unkept_snapshots()?.into_iter().collect();
    for (h, (game, kind)) in &snapshots {
        let refs = crate::with_game!(game, |g| { refs_of(g, *kind, store, h) });
        let c = match refs {
            Ok(c) => c,
            Err(e) => {
                miss(format!("snapshot {}", h.short()), h, &e.to_string());
                continue;
            }
        };
        let at = format!("{} {} (iteration {})", c.kind, h.short(), c.iteration);
        for r in c.references {
            if r.stored && !unkept.contains(h) && !store.contains(&r.hash)? {
                miss(format!("{at}: {}", r.what), &r.hash, "missing");
            }
            all.push((format!("{at}: {}", r.what), r.hash));
        }
    }
    Ok(References { dangling: out, all })
}

/// The references of checkpoint root `h` as learner `kind` reads it (`g` only picks the
/// game type).
fn refs_of<G: Abilities>(
    _: &G,
    kind: LearnerKind,
    store: &Store,
    h: &ObjectHash,
) -> Result<crate::learners::CheckpointRefs, RunError> {
    crate::with_learner!(kind, L => Ok(<L<G> as Learner<G>>::references(store, h)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::InitQ;

    fn settings() -> Settings {
        RunConfig::from_toml("variant = \"ewn:3x3x3\"\nseed = 1\niterations = 10\n", "t")
            .unwrap()
            .settings
    }

    /// The branch seed derivation is pinned: changing it would change every branch.
    #[test]
    fn branch_seed_is_pinned() {
        let o = vec!["search.init_q=\"draw\"".to_string()];
        assert_eq!(branch_seed(11, 2, &o), branch_seed(11, 2, &o.clone()));
        assert_ne!(branch_seed(11, 2, &o), branch_seed(11, 3, &o));
        assert_ne!(branch_seed(11, 2, &o), branch_seed(12, 2, &o));
        assert_ne!(branch_seed(11, 2, &o), branch_seed(11, 2, &[]));
        // The first u64 of stream `branch(2,search.init_q="draw")` of seed 11.
        let mut r = crate::rng::stream(11, "branch(2,search.init_q=\"draw\")");
        assert_eq!(branch_seed(11, 2, &o), r.next_u64());
        assert_eq!(branch_seed(11, 2, &o), 0x711c_77a1_5aa4_4aef);
    }

    #[test]
    fn overrides_are_applied_canonically_and_checked() {
        let s = settings();
        // Order and spelling of the values do not change the canonical form.
        let a = apply_overrides(&s, &["window=3".into(), "search.init_q=draw".into()]).unwrap();
        let b =
            apply_overrides(&s, &["search.init_q = \"draw\"".into(), "window=3".into()]).unwrap();
        assert_eq!(a.canonical, b.canonical);
        assert_eq!(a.canonical, ["search.init_q=\"draw\"", "window=3"]);
        assert_eq!(a.settings.window, 3);
        assert_eq!(a.settings.search.init_q, InitQ::Draw);
        assert_eq!(a.settings.games_per_iteration, s.games_per_iteration);
        let n = apply_overrides(&s, &["iterations=40".into(), "name=x".into()]).unwrap();
        assert_eq!((n.iterations, n.name.as_deref()), (Some(40), Some("x")));
        assert_eq!(n.settings, s);
        let lr = apply_overrides(&s, &["learning_rate=[[1, 0.5]]".into()]).unwrap();
        assert_eq!(lr.settings.learning_rate, [(1, 0.5)]);
        for (bad, says) in [
            ("variant=ewn:3x3x4", "cannot change mid-run"),
            ("init_std=0.1", "cannot change mid-run"),
            ("seed=3", "--seed"),
            ("search.nope=1", "no setting `search.nope`"),
            ("window", "key=value"),
            ("search.init_q=sometimes", "sometimes"),
        ] {
            let e = apply_overrides(&s, &[bad.to_string()])
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // The learner's fixed settings are refused with its reason, and left out of the
        // allowed keys.
        let net = RunConfig::from_toml(
            "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\n[learner]\nkind = \"network\"\n\
             [learner.network]\nhidden = [16]\n",
            "t",
        )
        .unwrap()
        .settings;
        for key in [
            "learner.network.hidden=[8]",
            "learner.network.optimizer=adam",
        ] {
            let e = apply_overrides(&net, &[key.to_string()])
                .unwrap_err()
                .to_string();
            assert!(e.contains("cannot change mid-run"), "{key}: {e}");
        }
        assert!(apply_overrides(&net, &["learner.network.batch_size=8".into()]).is_ok());
        let e = apply_overrides(&s, &["nope=1".into()])
            .unwrap_err()
            .to_string();
        assert!(!e.contains("init_std") && e.contains("window"), "{e}");
        let e = apply_overrides(&s, &["window=3".into(), "window=4".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("set twice"), "{e}");
    }
}
