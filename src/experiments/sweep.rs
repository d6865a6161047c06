//! Sweeps: a base run spec, axes (settings keys with lists of values) and seeds; their
//! product is a set of runs (design: `docs/experiments.md`).
//!
//! ```toml
//! name = "init-q"
//! base = "ewn-3x3x3.toml"          # a run spec, relative to this file
//! seeds = [1, 2, 3]
//! [set]                            # optional: fixed overrides for every run
//! iterations = 20
//! [axes]
//! "search.init_q" = ["loss", "draw", "win", "first"]
//! "search.simulations" = [6, 12, 25]
//! ```
//!
//! **Grid order.** Axes are taken in key order (sorted), values in the order given; the first
//! axis varies slowest. Run `k` is grid point `k / seeds` with seed index `k % seeds`. Its
//! name is `SWEEP/key=value,.../seed=S` (keys shortened to their last part when unambiguous).
//!
//! **Record.** `sweep/v1` ([`SweepRecord`]) holds the name, the fixed overrides, the axes,
//! the seeds and the `run/v1` hash and planned iterations of every run in grid order: its hash
//! names exactly which runs (variant, seed, settings) the sweep is made of, wherever they ran.
//!
//! **Continuing.** Running a sweep again finds its runs through `sweep_members`: finished runs
//! are skipped, interrupted ones resumed (from what they committed), missing ones created. A
//! run created but not yet linked (the process died between the two transactions) is found
//! by its run hash and name and linked.
//!
//! **Shards.** `--shard I/N` (1 <= I <= N) takes runs `k` with `k mod N = I - 1`: a fixed,
//! deterministic share that depends on nothing but the sweep file.
//!
//! **Jobs.** `--jobs J` runs J runs at once, each on its own store connection and its own
//! rayon pool of `max(1, T / J)` threads (T: `--threads`, default all cores). A run's records
//! do not depend on its thread count, so neither J nor T changes any head.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{Error, driver};
use crate::runs::{IterationSummary, Observer, RunConfig};
use crate::store::{ObjectHash, Record, Store, SweepMember, SweepRow};

/// A sweep's identity: what its runs are (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepRecord {
    pub name: String,
    /// Fixed overrides, `key=<JSON value>`, sorted by key.
    pub set: Vec<String>,
    /// Axes in grid order: the key and its values as JSON texts, in the order given.
    pub axes: Vec<(String, Vec<String>)>,
    pub seeds: Vec<u64>,
    /// The `run/v1` hash of every run, in grid order.
    pub runs: Vec<ObjectHash>,
    /// The planned iterations of every run, in grid order (not part of a run's hash).
    pub iterations: Vec<u32>,
}

impl Record for SweepRecord {
    const KIND: &'static str = "sweep/v1";
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    name: String,
    base: String,
    seeds: Vec<u64>,
    #[serde(default)]
    set: toml::Table,
    #[serde(default)]
    axes: toml::Table,
}

/// One run of a sweep, resolved.
#[derive(Clone, Debug)]
pub struct PlannedRun {
    /// Position in grid order.
    pub index: usize,
    pub point: u32,
    pub seed_index: u32,
    pub seed: u64,
    /// The point's axis values, as JSON (`{"search.init_q": "loss", ...}`).
    pub point_json: String,
    pub cfg: RunConfig,
    /// The run's spec (the base with the overrides written in).
    pub spec: String,
    pub run_hash: ObjectHash,
}

/// A resolved sweep.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub name: String,
    /// The sweep file as given.
    pub text: String,
    pub record: SweepRecord,
    pub hash: ObjectHash,
    pub runs: Vec<PlannedRun>,
}

/// A fixed share of a sweep's runs: `index` of `count`, 1-based.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = Error;

    fn from_str(s: &str) -> Result<Shard, Error> {
        let bad = |why: &str| Error::Usage(format!("--shard {s}: {why}"));
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| bad("give I/N, e.g. 2/4 (shard I of N, 1 <= I <= N)"))?;
        let i: u32 = i.trim().parse().map_err(|_| bad("I must be an integer"))?;
        let n: u32 = n.trim().parse().map_err(|_| bad("N must be an integer"))?;
        if n == 0 {
            return Err(bad("N must be >= 1"));
        }
        if i == 0 || i > n {
            return Err(bad(&format!(
                "shard {i} is out of range: I must be in 1..={n}"
            )));
        }
        Ok(Shard { index: i, count: n })
    }
}

impl Shard {
    /// Whether run `k` (in grid order) belongs to this shard.
    pub fn contains(&self, k: usize) -> bool {
        k % self.count as usize == (self.index - 1) as usize
    }
}

fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn json_of(v: &toml::Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

impl Sweep {
    /// Reads and resolves a sweep file (the base spec is relative to it).
    pub fn load(path: &Path) -> Result<Sweep, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Sweep::parse(&text, dir).map_err(|e| match e {
            Error::Usage(m) => Error::Usage(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Resolves a sweep's text; `dir` is where `base` is looked up. Every run is resolved
    /// and validated, so a bad axis value is refused before anything is written.
    pub fn parse(text: &str, dir: &Path) -> Result<Sweep, Error> {
        let raw: RawSweep =
            toml::from_str(text).map_err(|e| Error::Usage(format!("sweep file: {e}")))?;
        let name = raw.name.trim().to_string();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(Error::Usage(format!(
                "`name` = {:?}: give a non-empty label of letters, digits, `-`, `_`, `.`",
                raw.name
            )));
        }
        let base_path: PathBuf = dir.join(&raw.base);
        let base = std::fs::read_to_string(&base_path).map_err(|e| {
            Error::Usage(format!(
                "`base` = {:?}: cannot read {} ({e}); give a run spec relative to the sweep file",
                raw.base,
                base_path.display()
            ))
        })?;
        if raw.seeds.is_empty() {
            return Err(Error::Usage(
                "`seeds` = []: the grid is empty; give at least one seed, e.g. seeds = [1, 2]"
                    .into(),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for s in &raw.seeds {
            if !seen.insert(*s) {
                return Err(Error::Usage(format!(
                    "`seeds`: seed {s} is listed twice (each seed once)"
                )));
            }
        }
        let reserved = |key: &str, place: &str| -> Result<(), Error> {
            match key {
                "seed" => Err(Error::Usage(format!(
                    "{place} `seed`: seeds are the sweep's `seeds` list, not a setting"
                ))),
                "name" => Err(Error::Usage(format!(
                    "{place} `name`: runs are named from their grid point"
                ))),
                _ => Ok(()),
            }
        };
        let mut set: Vec<(String, toml::Value)> = Vec::new();
        for (k, v) in &raw.set {
            reserved(k, "[set]")?;
            set.push((k.clone(), v.clone()));
        }
        set.sort_by(|a, b| a.0.cmp(&b.0));
        let mut axes: Vec<(String, Vec<toml::Value>)> = Vec::new();
        for (k, v) in &raw.axes {
            reserved(k, "axis")?;
            if set.iter().any(|(s, _)| s == k) {
                return Err(Error::Usage(format!(
                    "axis `{k}` is also in [set]: give it in one place"
                )));
            }
            let toml::Value::Array(values) = v else {
                return Err(Error::Usage(format!(
                    "axis `{k}` = {v}: give a list of values, e.g. [1, 2]"
                )));
            };
            if values.is_empty() {
                return Err(Error::Usage(format!(
                    "axis `{k}` = []: the grid is empty; give at least one value"
                )));
            }
            for (i, a) in values.iter().enumerate() {
                if values[..i].contains(a) {
                    return Err(Error::Usage(format!(
                        "axis `{k}`: value {a} is listed twice (each value once)"
                    )));
                }
            }
            axes.push((k.clone(), values.clone()));
        }
        axes.sort_by(|a, b| a.0.cmp(&b.0));
        // Unknown keys are named before any run is resolved.
        let base_cfg = RunConfig::from_toml(&base, "base")
            .map_err(|e| Error::Usage(format!("`base` {}: {e}", base_path.display())))?;
        let allowed = driver::allowed_keys(&base_cfg);
        for (k, place) in set
            .iter()
            .map(|(k, _)| (k, "[set]"))
            .chain(axes.iter().map(|(k, _)| (k, "axis")))
        {
            if !allowed.iter().any(|a| a == k) {
                return Err(Error::Usage(format!(
                    "{place} `{k}`: no such setting; allowed: {}",
                    allowed
                        .iter()
                        .filter(|a| *a != "seed" && *a != "name")
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        let short: Vec<String> = axes
            .iter()
            .map(|(k, _)| {
                let last = k.rsplit('.').next().unwrap_or(k);
                let clash = axes
                    .iter()
                    .filter(|(o, _)| o.rsplit('.').next() == Some(last))
                    .count()
                    > 1;
                if clash { k.clone() } else { last.to_string() }
            })
            .collect();
        let points: usize = axes.iter().map(|(_, v)| v.len()).product();
        let mut runs = Vec::with_capacity(points * raw.seeds.len());
        for p in 0..points {
            // Mixed radix, the first axis slowest.
            let mut rest = p;
            let mut values = vec![toml::Value::Boolean(false); axes.len()];
            for (a, (_, vals)) in axes.iter().enumerate().rev() {
                values[a] = vals[rest % vals.len()].clone();
                rest /= vals.len();
            }
            let label: Vec<String> = short
                .iter()
                .zip(&values)
                .map(|(k, v)| format!("{k}={}", value_text(v)))
                .collect();
            let point_json = serde_json::Value::Object(
                axes.iter()
                    .zip(&values)
                    .map(|((k, _), v)| (k.clone(), json_of(v)))
                    .collect(),
            )
            .to_string();
            for (si, &seed) in raw.seeds.iter().enumerate() {
                let run_name = if label.is_empty() {
                    format!("{name}/seed={seed}")
                } else {
                    format!("{name}/{}/seed={seed}", label.join(","))
                };
                let mut overrides = set.clone();
                overrides.extend(axes.iter().map(|(k, _)| k.clone()).zip(values.clone()));
                overrides.push(("name".into(), toml::Value::String(run_name.clone())));
                let (cfg, spec) = driver::spec_with_overrides(
                    &base,
                    &overrides,
                    Some(seed),
                    &run_name,
                    "sweep point",
                )?;
                let run_hash = driver::run_hash(&cfg)?;
                runs.push(PlannedRun {
                    index: runs.len(),
                    point: p as u32,
                    seed_index: si as u32,
                    seed,
                    point_json: point_json.clone(),
                    cfg,
                    spec,
                    run_hash,
                });
            }
        }
        let record = SweepRecord {
            name: name.clone(),
            set: set
                .iter()
                .map(|(k, v)| format!("{k}={}", json_of(v)))
                .collect(),
            axes: axes
                .iter()
                .map(|(k, vs)| {
                    (
                        k.clone(),
                        vs.iter().map(|v| json_of(v).to_string()).collect(),
                    )
                })
                .collect(),
            seeds: raw.seeds.clone(),
            runs: runs.iter().map(|r| r.run_hash).collect(),
            iterations: runs.iter().map(|r| r.cfg.iterations).collect(),
        };
        let hash = crate::store::address(&record)?.0;
        Ok(Sweep {
            name,
            text: text.to_string(),
            record,
            hash,
            runs,
        })
    }

    /// Grid points (the product of the axes' lengths).
    pub fn points(&self) -> usize {
        self.runs.len() / self.record.seeds.len()
    }
}

/// How to run a sweep.
#[derive(Clone, Debug)]
pub struct Options {
    /// Runs at once (>= 1).
    pub jobs: usize,
    /// Worker threads in all (default: all cores), shared out over the jobs.
    pub threads: Option<usize>,
    pub shard: Option<Shard>,
}

/// What happened to one run.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub index: usize,
    pub point: u32,
    pub seed: u64,
    pub run_id: i64,
    pub name: String,
    /// `done` (ran now), `finished` (already finished: skipped) or `failed`.
    pub status: &'static str,
    #[serde(serialize_with = "opt_hex")]
    pub head: Option<ObjectHash>,
    pub seconds: f64,
    pub error: Option<String>,
}

fn opt_hex<S: serde::Serializer>(h: &Option<ObjectHash>, s: S) -> Result<S::Ok, S::Error> {
    match h {
        Some(h) => s.serialize_str(&h.to_hex()),
        None => s.serialize_none(),
    }
}

/// The end of a sweep (of this process's share).
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub sweep: String,
    #[serde(serialize_with = "hex")]
    pub hash: ObjectHash,
    pub shard: Option<String>,
    pub runs: Vec<RunResult>,
    pub jobs: usize,
    pub threads_per_run: usize,
    pub seconds: f64,
}

fn hex<S: serde::Serializer>(h: &ObjectHash, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&h.to_hex())
}

impl Outcome {
    pub fn failed(&self) -> usize {
        self.runs.iter().filter(|r| r.status == "failed").count()
    }
}

/// Where a sweep reports its progress (the command line draws a bar with an ETA).
pub trait Progress: Sync {
    /// `games` self-play games to play over `runs` runs (`skipped` already finished).
    fn start(&self, runs: usize, skipped: usize, games: u64) {
        let _ = (runs, skipped, games);
    }
    /// `games` more self-play games committed.
    fn advance(&self, games: u64) {
        let _ = games;
    }
    /// A run ended (`done` of `of` in this process).
    fn run_done(&self, result: &RunResult, done: usize, of: usize) {
        let _ = (result, done, of);
    }
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {}

/// Per run: turns the run's game counts into progress steps.
struct Steps<'a> {
    progress: &'a dyn Progress,
    games: u64,
    pos: u64,
}

impl Observer for Steps<'_> {
    fn games_done(&mut self, iteration: u32, done: u32, _of: u32) {
        let now = u64::from(iteration - 1) * self.games + u64::from(done);
        if now > self.pos {
            self.progress.advance(now - self.pos);
            self.pos = now;
        }
    }

    fn iteration_done(&mut self, s: &IterationSummary) {
        self.games_done(s.iteration + 1, 0, 0);
    }
}

/// Runs a sweep (or its shard) into the store at `db`: links or creates its runs, skips the
/// finished ones and runs the rest, `opts.jobs` at a time. Failed runs are reported in the
/// outcome (the others go on).
pub fn run(
    db: &Path,
    sweep: &Sweep,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Outcome, Error> {
    let started = Instant::now();
    if opts.jobs == 0 {
        return Err(Error::Usage("--jobs 0: give at least 1".into()));
    }
    if opts.threads == Some(0) {
        return Err(Error::Usage(
            "--threads 0: give at least one thread (or leave it out for all cores)".into(),
        ));
    }
    let mut store = Store::open(db)?;
    let record = &sweep.record;
    store.write(|w| {
        let h = w.put(record)?;
        w.add_sweep(&SweepRow {
            hash: h,
            name: sweep.name.clone(),
            points: sweep.points() as u32,
            seeds: record.seeds.len() as u32,
            sweep_toml: sweep.text.clone(),
            created_at: crate::util::utc_now_rfc3339(),
        })
    })?;
    let members = store.sweep_members(&sweep.hash)?;
    let linked: std::collections::BTreeSet<i64> = members.iter().map(|m| m.run_id).collect();
    let mut mine: Vec<(&PlannedRun, i64)> = Vec::new();
    for r in &sweep.runs {
        if let Some(shard) = opts.shard
            && !shard.contains(r.index)
        {
            continue;
        }
        let known = members
            .iter()
            .find(|m| m.point == r.point && m.seed_index == r.seed_index);
        let id = match known {
            Some(m) => m.run_id,
            None => {
                let orphan = store
                    .runs()?
                    .into_iter()
                    .find(|row| {
                        row.hash == r.run_hash
                            && row.name == r.cfg.name
                            && !linked.contains(&row.id)
                    })
                    .map(|row| row.id);
                let id = match orphan {
                    Some(id) => id,
                    None => driver::create(&mut store, &r.cfg, &r.spec)?,
                };
                store.write(|w| {
                    w.add_sweep_member(
                        &sweep.hash,
                        &SweepMember {
                            point: r.point,
                            seed_index: r.seed_index,
                            seed: r.seed,
                            point_json: r.point_json.clone(),
                            run_id: id,
                        },
                    )
                })?;
                id
            }
        };
        mine.push((r, id));
    }
    // Finished runs are skipped; the rest run.
    let mut results = Vec::new();
    let mut pending = Vec::new();
    let mut games = 0u64;
    for (r, id) in &mine {
        let row = crate::runs::find(&store, &id.to_string())?;
        if row.iterations_done >= row.iterations_planned {
            results.push(RunResult {
                index: r.index,
                point: r.point,
                seed: r.seed,
                run_id: *id,
                name: row.name.clone(),
                status: "finished",
                head: row.head,
                seconds: 0.0,
                error: None,
            });
        } else {
            let m = u64::from(r.cfg.settings.games_per_iteration);
            games += u64::from(row.iterations_planned - row.iterations_done) * m;
            pending.push((*r, *id, u64::from(row.iterations_done) * m));
        }
    }
    // The exact solutions the metrics need, solved once before runs start in parallel.
    let mut prepared = std::collections::BTreeSet::new();
    for (r, _, _) in &pending {
        if prepared.insert(r.cfg.game.variant()) {
            driver::prepare_solution(&mut store, &r.cfg)?;
        }
    }
    drop(store);
    let total_threads = opts.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let jobs = opts.jobs.min(pending.len()).max(1);
    let per_run = (total_threads / jobs).max(1);
    progress.start(pending.len(), results.len(), games);
    let next = AtomicUsize::new(0);
    let done = Mutex::new(results);
    let finished_count = AtomicUsize::new(0);
    let of = pending.len();
    let worker = || -> Result<(), Error> {
        let mut store = Store::open(db)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(per_run)
            .build()
            .map_err(|e| Error::Usage(format!("starting {per_run} worker threads: {e}")))?;
        loop {
            let k = next.fetch_add(1, Ordering::SeqCst);
            let Some(&(r, id, pos)) = pending.get(k) else {
                return Ok(());
            };
            let t = Instant::now();
            let mut steps = Steps {
                progress,
                games: u64::from(r.cfg.settings.games_per_iteration),
                pos,
            };
            let out = pool.install(|| driver::resume(&mut store, id, &mut steps));
            let result = RunResult {
                index: r.index,
                point: r.point,
                seed: r.seed,
                run_id: id,
                name: r.cfg.name.clone(),
                status: if out.is_ok() { "done" } else { "failed" },
                head: out.as_ref().ok().copied().flatten(),
                seconds: t.elapsed().as_secs_f64(),
                error: out.err().map(|e| e.to_string()),
            };
            let n = finished_count.fetch_add(1, Ordering::SeqCst) + 1;
            progress.run_done(&result, n, of);
            done.lock().unwrap_or_else(|p| p.into_inner()).push(result);
        }
    };
    let errors: Vec<Error> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs).map(|_| s.spawn(worker)).collect();
        handles
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some(Error::Usage("a sweep worker panicked".into())),
            })
            .collect()
    });
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    let mut runs = done.into_inner().unwrap_or_else(|p| p.into_inner());
    runs.sort_by_key(|r| r.index);
    Ok(Outcome {
        sweep: sweep.name.clone(),
        hash: sweep.hash,
        shard: opts.shard.map(|s| format!("{}/{}", s.index, s.count)),
        runs,
        jobs,
        threads_per_run: per_run,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// A stored sweep: its row, record and member runs (grid order).
pub struct Stored {
    pub row: SweepRow,
    pub record: SweepRecord,
    pub members: Vec<SweepMember>,
}

/// Finds a sweep by name or hash prefix in a store.
pub fn find(store: &Store, text: &str) -> Result<Stored, Error> {
    let Some(row) = store.find_sweep(text)? else {
        let names: Vec<String> = store.sweeps()?.into_iter().map(|s| s.name).collect();
        return Err(Error::Usage(format!(
            "no sweep `{text}` in the store (give its name or at least {} hex digits of its \
             hash; sweeps here: {})",
            crate::store::MIN_PREFIX,
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    };
    let record: SweepRecord = store.get(&row.hash)?;
    let members = store.sweep_members(&row.hash)?;
    Ok(Stored {
        row,
        record,
        members,
    })
}
