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
//! **Growing.** A store holds one sweep of a name. An edited file of a stored sweep's name
//! that only adds seeds or values of its axes (every stored run still in its grid: same axes,
//! same `[set]`, same base) grows the sweep with `--extend` ([`Options::extend`]): the stored
//! sweep's row and links are replaced by the grown record's in one transaction, its runs are
//! linked to their new grid places and kept, the new ones created. Without `--extend` the
//! file is refused, saying what it adds ([`standing`]); a file that drops stored runs or
//! changes the axes is refused either way.
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

use super::{ExperimentError, run_specs};
use crate::runs::overrides::{Place, judge, spec_with_overrides};
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
    type Err = ExperimentError;

    fn from_str(s: &str) -> Result<Shard, ExperimentError> {
        let bad = |why: &str| ExperimentError::Usage(format!("--shard {s}: {why}"));
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
    pub fn load(path: &Path) -> Result<Sweep, ExperimentError> {
        let text =
            crate::runs::spec::read_spec_file(path).map_err(|e| ExperimentError::io(path, e))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Sweep::parse(&text, dir).map_err(|e| match e {
            ExperimentError::Usage(m) => ExperimentError::Usage(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Resolves a sweep's text; `dir` is where `base` is looked up. Every run is resolved
    /// and validated, so a bad axis value is refused before anything is written.
    pub fn parse(text: &str, dir: &Path) -> Result<Sweep, ExperimentError> {
        let raw: RawSweep =
            toml::from_str(text).map_err(|e| ExperimentError::Usage(format!("sweep file: {e}")))?;
        let name = checked_name(&raw.name)?;
        let base_path: PathBuf = dir.join(&raw.base);
        let base = crate::runs::spec::read_spec_file(&base_path).map_err(|e| {
            ExperimentError::Usage(format!(
                "`base` = {:?}: cannot read {} ({e}); give a run spec relative to the sweep file",
                raw.base,
                base_path.display()
            ))
        })?;
        check_seeds(&raw.seeds)?;
        let set = fixed_overrides(&raw.set)?;
        let axes = grid_axes(&raw.axes, &set)?;
        // Unknown keys are named before any run is resolved.
        let base_cfg = RunConfig::from_toml(&base, "base")
            .map_err(|e| ExperimentError::Usage(format!("`base` {}: {e}", base_path.display())))?;
        check_keys(&base_cfg, &set, &axes)?;
        check_grid_size(&axes, raw.seeds.len())?;
        let runs = plan_runs(&name, &base, &set, &axes, &raw.seeds)?;
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

/// Fixed overrides (`[set]`) and the axes, as read from the sweep file: key and value(s).
type Overrides = [(String, toml::Value)];
type Axes = [(String, Vec<toml::Value>)];

/// The sweep's name, trimmed: a label of letters, digits, `-`, `_` and `.`.
fn checked_name(raw: &str) -> Result<String, ExperimentError> {
    let name = raw.trim().to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(ExperimentError::Usage(format!(
            "`name` = {raw:?}: give a non-empty label of letters, digits, `-`, `_`, `.`"
        )));
    }
    Ok(name)
}

/// The most runs one sweep may have (grid points times seeds): far more than a machine runs
/// in a study, few enough to plan in memory at once. docs/limits.md.
pub(crate) const MAX_SWEEP_RUNS: usize = 100_000;

/// Refuses a grid of more than [`MAX_SWEEP_RUNS`] runs before any run is planned.
fn check_grid_size(axes: &Axes, seeds: usize) -> Result<(), ExperimentError> {
    let runs = axes
        .iter()
        .try_fold(seeds, |n, (_, v)| n.checked_mul(v.len()))
        .filter(|&n| n <= MAX_SWEEP_RUNS);
    if runs.is_none() {
        let sizes: Vec<String> = axes
            .iter()
            .map(|(k, v)| format!("{} `{k}`", v.len()))
            .collect();
        return Err(ExperimentError::Usage(format!(
            "the grid ({} values x {seeds} seeds) is more than {MAX_SWEEP_RUNS} runs; allowed: \
             at most {MAX_SWEEP_RUNS} runs in one sweep (split it into several)",
            sizes.join(" x ")
        )));
    }
    Ok(())
}

/// At least one seed, each once.
fn check_seeds(seeds: &[u64]) -> Result<(), ExperimentError> {
    if seeds.is_empty() {
        return Err(ExperimentError::Usage(
            "`seeds` = []: the grid is empty; give at least one seed, e.g. seeds = [1, 2]".into(),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for s in seeds {
        if !seen.insert(*s) {
            return Err(ExperimentError::Usage(format!(
                "`seeds`: seed {s} is listed twice (each seed once)"
            )));
        }
    }
    Ok(())
}

/// Whether two axis values are one setting: equal, or an integer and a float of equal value.
fn same_value(a: &toml::Value, b: &toml::Value) -> bool {
    match (a, b) {
        (toml::Value::Integer(i), toml::Value::Float(f))
        | (toml::Value::Float(f), toml::Value::Integer(i)) => *i as f64 == *f,
        _ => a == b,
    }
}

/// The `[set]` table, sorted by key.
fn fixed_overrides(raw: &toml::Table) -> Result<Vec<(String, toml::Value)>, ExperimentError> {
    let mut set: Vec<(String, toml::Value)> = Vec::new();
    for (k, v) in raw {
        set.push((k.clone(), v.clone()));
    }
    set.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(set)
}

/// The `[axes]` table in grid order (sorted by key): each a non-empty list of distinct
/// values, none also in `[set]`.
fn grid_axes(
    raw: &toml::Table,
    set: &Overrides,
) -> Result<Vec<(String, Vec<toml::Value>)>, ExperimentError> {
    let mut axes: Vec<(String, Vec<toml::Value>)> = Vec::new();
    for (k, v) in raw {
        if set.iter().any(|(s, _)| s == k) {
            return Err(ExperimentError::Usage(format!(
                "axis `{k}` is also in [set]: give it in one place"
            )));
        }
        let toml::Value::Array(values) = v else {
            return Err(ExperimentError::Usage(format!(
                "axis `{k}` = {v}: give a list of values, e.g. [1, 2]"
            )));
        };
        if values.is_empty() {
            return Err(ExperimentError::Usage(format!(
                "axis `{k}` = []: the grid is empty; give at least one value"
            )));
        }
        for (i, a) in values.iter().enumerate() {
            // `1` and `1.0` give one setting, hence one run: the same value.
            if values[..i].iter().any(|b| same_value(a, b)) {
                return Err(ExperimentError::Usage(format!(
                    "axis `{k}`: value {a} is listed twice (each value once)"
                )));
            }
        }
        axes.push((k.clone(), values.clone()));
    }
    axes.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(axes)
}

/// Every key of `[set]` and every value of `[axes]` is judged by the overrides' refusal
/// table at [`Place::Sweep`] (`seed` and `name` are the sweep's to give).
fn check_keys(base: &RunConfig, set: &Overrides, axes: &Axes) -> Result<(), ExperimentError> {
    let given = set.iter().map(|(k, v)| (k, v, "[set]"));
    let on_axes = axes
        .iter()
        .flat_map(|(k, vs)| vs.iter().map(move |v| (k, v, "axis")));
    for (k, v, place) in given.chain(on_axes) {
        judge(Place::Sweep, &base.settings, k, v).map_err(|r| r.usage(place))?;
    }
    Ok(())
}

/// The axis keys as run names show them: the last part, or the whole key where two axes
/// share their last part.
fn short_keys(axes: &Axes) -> Vec<String> {
    axes.iter()
        .map(|(k, _)| {
            let last = k.rsplit('.').next().unwrap_or(k);
            let clash = axes
                .iter()
                .filter(|(o, _)| o.rsplit('.').next() == Some(last))
                .count()
                > 1;
            if clash { k.clone() } else { last.to_string() }
        })
        .collect()
}

/// The axis values of grid point `p`: mixed radix, the first axis slowest.
fn point_values(axes: &Axes, p: usize) -> Vec<toml::Value> {
    let mut rest = p;
    let mut values = vec![toml::Value::Boolean(false); axes.len()];
    for (a, (_, vals)) in axes.iter().enumerate().rev() {
        values[a] = vals[rest % vals.len()].clone();
        rest /= vals.len();
    }
    values
}

/// Every run of the grid, in grid order (point by point, seed by seed), each resolved from
/// the base spec with the fixed overrides, the point's values and its name written in.
fn plan_runs(
    name: &str,
    base: &str,
    set: &Overrides,
    axes: &Axes,
    seeds: &[u64],
) -> Result<Vec<PlannedRun>, ExperimentError> {
    let short = short_keys(axes);
    let points: usize = axes.iter().map(|(_, v)| v.len()).product();
    let mut runs = Vec::with_capacity(points * seeds.len());
    for p in 0..points {
        let values = point_values(axes, p);
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
        for (si, &seed) in seeds.iter().enumerate() {
            let run_name = if label.is_empty() {
                format!("{name}/seed={seed}")
            } else {
                format!("{name}/{}/seed={seed}", label.join(","))
            };
            let mut overrides = set.to_vec();
            overrides.extend(axes.iter().map(|(k, _)| k.clone()).zip(values.clone()));
            overrides.push(("name".into(), toml::Value::String(run_name.clone())));
            // Each point's run is created as `run --set` creates one, its name and seed
            // the sweep's.
            let (cfg, spec) = spec_with_overrides(
                Place::Run,
                base,
                &overrides,
                Some(seed),
                &run_name,
                "sweep point",
            )?;
            let run_hash = run_specs::run_hash(&cfg)?;
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
    Ok(runs)
}

/// How to run a sweep.
#[derive(Clone, Debug)]
pub struct Options {
    /// Runs at once (>= 1).
    pub jobs: usize,
    /// Worker threads in all (default: all cores), shared out over the jobs.
    pub threads: Option<usize>,
    pub shard: Option<Shard>,
    /// Grow the stored sweep of this name when the file adds seeds or values
    /// ([`Standing::Grows`]); without it such a file is refused.
    pub extend: bool,
    /// Calibrate the grid points the store has not measured before the runs start
    /// ([`super::cost::calibrate`], as `--dry-run` does), so that the start's estimate
    /// covers every run left.
    pub calibrate: bool,
}

/// A sweep file against the store's sweep of the same name.
#[derive(Clone, Debug)]
pub enum Standing {
    /// No sweep of this name is stored.
    New,
    /// This very sweep is stored (its runs are continued).
    Same,
    /// The stored sweep of this name is a part of this one: this file adds runs.
    Grows {
        old: SweepRow,
        old_runs: usize,
        /// What the file adds, in words (`seeds 3, 4; search.simulations = 50`).
        added: String,
    },
}

/// Where `sweep` stands against the store's sweep of its name: new, the same, or grown from
/// it; a file that is neither (it drops stored runs, changes the axes, `[set]` or the base's
/// settings) is refused, saying why.
pub fn standing(store: &Store, sweep: &Sweep) -> Result<Standing, ExperimentError> {
    let named: Vec<SweepRow> = store
        .sweeps()?
        .into_iter()
        .filter(|s| s.name == sweep.name)
        .collect();
    if named.iter().any(|s| s.hash == sweep.hash) {
        return Ok(Standing::Same);
    }
    let old = match named.as_slice() {
        [] => return Ok(Standing::New),
        [one] => one.clone(),
        several => {
            return Err(ExperimentError::Usage(format!(
                "the store holds {} sweeps named `{}` ({}; merged from stores of different \
                 files?): give this file another `name`",
                several.len(),
                sweep.name,
                several
                    .iter()
                    .map(|s| s.hash.short())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    };
    let record: SweepRecord = store.get(&old.hash)?;
    if let Some(why) = not_grown_from(&record, &sweep.record) {
        return Err(ExperimentError::Usage(format!(
            "sweep `{}`: the store holds a sweep of this name ({}, {} points x {} seeds) and \
             this file is not that sweep grown: {why}. A sweep grows only by new seeds or new \
             values of its axes, keeping every run it has; give this file another `name` \
             (or put the stored sweep's runs back)",
            sweep.name,
            old.hash.short(),
            old.points,
            old.seeds
        )));
    }
    Ok(Standing::Grows {
        old,
        old_runs: record.runs.len(),
        added: added_to(&record, &sweep.record),
    })
}

/// Why sweep record `new` is not `old` grown (other axes, another `[set]`, or some of
/// `old`'s runs not in `new`'s grid), in words; `None` when it is.
fn not_grown_from(old: &SweepRecord, new: &SweepRecord) -> Option<String> {
    let keys = |axes: &[(String, Vec<String>)]| -> Vec<String> {
        axes.iter().map(|(k, _)| k.clone()).collect()
    };
    if keys(&old.axes) != keys(&new.axes) {
        return Some(format!(
            "its axes are [{}], this file's [{}]",
            keys(&old.axes).join(", "),
            keys(&new.axes).join(", ")
        ));
    }
    if old.set != new.set {
        return Some(format!(
            "its [set] is {{{}}}, this file's {{{}}}",
            old.set.join(", "),
            new.set.join(", ")
        ));
    }
    let planned: std::collections::BTreeSet<(ObjectHash, u32)> = new
        .runs
        .iter()
        .copied()
        .zip(new.iterations.iter().copied())
        .collect();
    let missing = old
        .runs
        .iter()
        .copied()
        .zip(old.iterations.iter().copied())
        .filter(|r| !planned.contains(r))
        .count();
    if missing == 0 {
        return None;
    }
    let seeds: Vec<String> = old
        .seeds
        .iter()
        .filter(|s| !new.seeds.contains(s))
        .map(u64::to_string)
        .collect();
    let mut why = format!(
        "{missing} of its {} runs are not in this file's grid",
        old.runs.len()
    );
    if !seeds.is_empty() {
        why.push_str(&format!(" (seeds {} left out)", seeds.join(", ")));
    } else {
        why.push_str(" (values left out, or the base spec's settings or iterations changed)");
    }
    Some(why)
}

/// What sweep record `new` adds to `old`, in words: `seeds 3, 4; search.simulations = 50`.
fn added_to(old: &SweepRecord, new: &SweepRecord) -> String {
    let mut added: Vec<String> = Vec::new();
    let seeds: Vec<String> = new
        .seeds
        .iter()
        .filter(|s| !old.seeds.contains(s))
        .map(u64::to_string)
        .collect();
    if !seeds.is_empty() {
        added.push(format!("seeds {}", seeds.join(", ")));
    }
    for ((k, more), (_, was)) in new.axes.iter().zip(&old.axes) {
        let more: Vec<&str> = more
            .iter()
            .filter(|v| !was.contains(v))
            .map(String::as_str)
            .collect();
        if !more.is_empty() {
            added.push(format!("{k} = {}", more.join(", ")));
        }
    }
    added.join("; ")
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
    /// Iterations this process ran (0 for a run already finished).
    pub iterations_run: u32,
    /// The last iteration's declared metrics (`wr_p`, `err_p`, `mae_v`, ...), as ran now;
    /// empty for a run already finished or failed.
    pub metrics: Vec<(String, f64)>,
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

/// What a sweep (this process's share) is about to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Runs to run (not finished).
    pub runs: usize,
    /// Runs already finished (skipped).
    pub skipped: usize,
    /// Units of self-play to play: a game per game of a run with M games per iteration, a
    /// thousandth of an iteration's budget for a run with a budget
    /// ([`crate::runs::Settings::progress_units`]).
    pub games: u64,
    /// How many of the runs to run play a self-play budget per iteration instead of M games
    /// (their part of `games` is in thousandths of a budget).
    pub budget_runs: usize,
    /// Runs at once.
    pub jobs: usize,
    /// Every run to run: (grid order index, grid point, iterations left).
    pub pending: Vec<(usize, u32, u32)>,
    /// Seconds per iteration measured so far (the store's committed iterations of the
    /// sweep's runs).
    pub costs: super::cost::Costs,
}

/// Where a sweep reports its progress (the command line draws a bar with an ETA).
pub trait Progress: Sync {
    /// The work ahead.
    fn start(&self, plan: &Plan) {
        let _ = plan;
    }
    /// `games` more units of self-play committed.
    fn advance(&self, games: u64) {
        let _ = games;
    }
    /// A run ended (`done` of `of` in this process).
    fn run_done(&self, result: &RunResult, done: usize, of: usize) {
        let _ = (result, done, of);
    }
    /// `points` grid points the store has not measured are calibrated on `threads` threads.
    fn calibrating(&self, points: usize, threads: usize) {
        let _ = (points, threads);
    }
    /// Grid point `point`'s iterations `a..=b` were calibrated at `seconds` an iteration.
    fn calibrated(&self, point: u32, (a, b): (u32, u32), seconds: f64) {
        let _ = (point, a, b, seconds);
    }
}

/// Calibrates the grid points of `pending` (grid point, iterations left) that `costs` has not
/// measured, into `costs` (a sweep before it starts, and `sweep --dry-run`); returns whether
/// any was.
pub fn calibrate_pending(
    sweep: &Sweep,
    pending: &[(u32, u32)],
    threads: usize,
    costs: &mut super::cost::Costs,
    progress: &dyn Progress,
) -> Result<bool, ExperimentError> {
    let mut points: Vec<u32> = pending
        .iter()
        .filter(|&&(p, left)| left > 0 && !costs.is_measured(p))
        .map(|&(p, _)| p)
        .collect();
    points.sort_unstable();
    points.dedup();
    if points.is_empty() {
        return Ok(false);
    }
    progress.calibrating(points.len(), threads);
    super::cost::calibrate(sweep, &points, threads, costs, &mut |p, r, s| {
        progress.calibrated(p, r, s);
    })?;
    Ok(true)
}

/// Per run: turns the run's game counts into progress steps; keeps the last iteration's
/// metrics and how many iterations ran.
struct Steps<'a> {
    progress: &'a dyn Progress,
    games: u64,
    pos: u64,
    ran: u32,
    metrics: Vec<(String, f64)>,
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
        self.ran += 1;
        self.metrics = s
            .metrics
            .iter()
            .filter_map(|(n, v)| v.map(|v| (n.to_string(), v)))
            .collect();
    }
}

/// A run of this process's share that is not finished: the planned run, its id, and the
/// self-play games it had committed (where its progress starts).
type Pending<'a> = (&'a PlannedRun, i64, u64);

/// Runs a sweep (or its shard) into the store at `db`: links or creates its runs, skips the
/// finished ones and runs the rest, `opts.jobs` at a time. Failed runs are reported in the
/// outcome (the others go on).
pub fn run(
    db: &Path,
    sweep: &Sweep,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Outcome, ExperimentError> {
    let started = Instant::now();
    if opts.jobs == 0 {
        return Err(ExperimentError::Usage("--jobs 0: give at least 1".into()));
    }
    if opts.threads == Some(0) {
        return Err(ExperimentError::Usage(
            "--threads 0: give at least one thread (or leave it out for all cores)".into(),
        ));
    }
    let mut store = Store::open(db)?;
    // A sweep refused part way would leave its record behind: every run it would create
    // must have a free name before anything is written.
    check_new_names(&store, sweep, opts.shard)?;
    register(&mut store, sweep, opts.extend)?;
    let mine = link_runs(&mut store, sweep, opts.shard)?;
    let (queue, skipped, games) = Queue::of(&store, &mine)?;
    let read = Store::open_read_only(db)?;
    let mut costs = super::cost::Costs::from_store(&read, sweep)?;
    // The exact solutions the metrics need, solved once before runs start in parallel.
    let mut prepared = std::collections::BTreeSet::new();
    for (r, _, _) in &queue.pending {
        if prepared.insert(r.cfg.game.variant()) {
            run_specs::prepare_solution(&mut store, &r.cfg)?;
        }
    }
    drop(store);
    let total_threads = opts.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let jobs = opts.jobs.min(queue.pending.len()).max(1);
    let per_run = (total_threads / jobs).max(1);
    let mut pending = Vec::with_capacity(queue.pending.len());
    for (r, id, _) in &queue.pending {
        let row = run_specs::find_run(&read, *id)?;
        pending.push((
            r.index,
            r.point,
            row.iterations_planned.saturating_sub(row.iterations_done),
        ));
    }
    drop(read);
    if opts.calibrate {
        let left: Vec<(u32, u32)> = pending.iter().map(|&(_, p, n)| (p, n)).collect();
        calibrate_pending(sweep, &left, per_run, &mut costs, progress)?;
    }
    let budget_runs = queue
        .pending
        .iter()
        .filter(|(r, _, _)| r.cfg.settings.games_per_iteration.is_none())
        .count();
    progress.start(&Plan {
        runs: queue.pending.len(),
        skipped,
        games,
        budget_runs,
        jobs,
        pending,
        costs,
    });
    let runs = queue.run(db, jobs, per_run, progress)?;
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

/// Refuses the sweep, naming the run, when a run it would create (one neither linked to it
/// nor left by an interrupted linking, as [`link_runs`] reads them) has a name another run
/// already has.
fn check_new_names(
    store: &Store,
    sweep: &Sweep,
    shard: Option<Shard>,
) -> Result<(), ExperimentError> {
    let members = store.sweep_members(&sweep.hash)?;
    let runs = store.runs()?;
    for r in &sweep.runs {
        if shard.is_some_and(|s| !s.contains(r.index))
            || members
                .iter()
                .any(|m| m.point == r.point && m.seed_index == r.seed_index)
        {
            continue;
        }
        if let Some(row) = runs.iter().find(|row| row.name == r.cfg.name)
            // (not a run of the same hash that an interrupted linking left unlinked)
            && (row.hash != r.run_hash || members.iter().any(|m| m.run_id == row.id))
        {
            return Err(crate::store::StoreError::NameTaken {
                name: r.cfg.name.clone(),
                id: row.id,
                status: row.status.as_str(),
                hash: row.hash.short(),
            }
            .into());
        }
    }
    Ok(())
}

/// Stores the sweep's record and row (both idempotent); a grown sweep (with `extend`)
/// replaces the stored one of its name, else is refused ([`standing`]).
fn register(store: &mut Store, sweep: &Sweep, extend: bool) -> Result<(), ExperimentError> {
    let record = &sweep.record;
    let replaced = match standing(store, sweep)? {
        Standing::New | Standing::Same => None,
        Standing::Grows { old, .. } if extend => Some(old.hash),
        Standing::Grows {
            old,
            old_runs,
            added,
        } => {
            return Err(ExperimentError::Usage(format!(
                "sweep `{}`: this file grows the stored sweep of that name ({}, {old_runs} \
                 runs) to {} runs ({added}); run it with --extend to grow the stored sweep \
                 (its runs are kept, the new ones added; --dry-run shows them and their cost), \
                 or give the file another `name` for a sweep of its own",
                sweep.name,
                old.hash.short(),
                sweep.runs.len()
            )));
        }
    };
    store.write(|w| {
        if let Some(old) = &replaced {
            w.remove_sweep(old)?;
        }
        let h = w.put(record)?;
        w.add_sweep(&SweepRow {
            hash: h,
            name: sweep.name.clone(),
            points: sweep.points() as u32,
            seeds: record.seeds.len() as u32,
            sweep_toml: sweep.text.clone(),
            created_at: crate::store::utc_now_rfc3339(),
        })
    })?;
    Ok(())
}

/// The runs of `shard` (all when `None`) with their ids, in grid order: a member already
/// linked to the sweep; else a run of the same hash and name not linked to it (created
/// before a crash cut the linking), linked now; else a new run, created and linked.
fn link_runs<'a>(
    store: &mut Store,
    sweep: &'a Sweep,
    shard: Option<Shard>,
) -> Result<Vec<(&'a PlannedRun, i64)>, ExperimentError> {
    let members = store.sweep_members(&sweep.hash)?;
    let linked: std::collections::BTreeSet<i64> = members.iter().map(|m| m.run_id).collect();
    let mut mine = Vec::new();
    for r in &sweep.runs {
        if let Some(shard) = shard
            && !shard.contains(r.index)
        {
            continue;
        }
        let known = members
            .iter()
            .find(|m| m.point == r.point && m.seed_index == r.seed_index);
        if let Some(m) = known {
            mine.push((r, m.run_id));
            continue;
        }
        let orphan = store
            .runs()?
            .into_iter()
            .find(|row| {
                row.hash == r.run_hash && row.name == r.cfg.name && !linked.contains(&row.id)
            })
            .map(|row| row.id);
        let id = match orphan {
            Some(id) => id,
            None => run_specs::create(store, &r.cfg, &r.spec)?,
        };
        let member = SweepMember {
            point: r.point,
            seed_index: r.seed_index,
            seed: r.seed,
            point_json: r.point_json.clone(),
            run_id: id,
        };
        store.write(|w| w.add_sweep_member(&sweep.hash, &member))?;
        mine.push((r, id));
    }
    Ok(mine)
}

/// The runs still to run, shared by the jobs: each job takes the next one until none is
/// left, so a slow run does not hold the others up.
struct Queue<'a> {
    pending: Vec<Pending<'a>>,
    next: AtomicUsize,
    /// Every run's result (the finished ones first), in the order they ended.
    done: Mutex<Vec<RunResult>>,
    /// How many of `pending` have ended.
    finished: AtomicUsize,
}

impl<'a> Queue<'a> {
    /// The queue of the runs in `mine` that are not finished; the finished ones are its
    /// first results (skipped). Also returns how many were skipped and the self-play games
    /// the queued runs still have to play.
    fn of(
        store: &Store,
        mine: &[(&'a PlannedRun, i64)],
    ) -> Result<(Queue<'a>, usize, u64), ExperimentError> {
        let mut finished = Vec::new();
        let mut pending = Vec::new();
        let mut games = 0u64;
        for &(r, id) in mine {
            let row = run_specs::find_run(store, id)?;
            // A run with every iteration committed but not marked done (its process failed or
            // was killed between its last commit and its status) is queued: resuming it
            // marks it done and plays nothing.
            let marked = row.status == crate::store::RunStatus::Done;
            if row.iterations_done >= row.iterations_planned && marked {
                finished.push(RunResult {
                    index: r.index,
                    point: r.point,
                    seed: r.seed,
                    run_id: id,
                    name: row.name.clone(),
                    status: "finished",
                    head: row.head,
                    seconds: 0.0,
                    iterations_run: 0,
                    metrics: Vec::new(),
                    error: None,
                });
            } else {
                // Progress units: M games, or thousandths of a budget.
                let m = u64::from(r.cfg.settings.progress_units());
                games += u64::from(row.iterations_planned.saturating_sub(row.iterations_done)) * m;
                pending.push((r, id, u64::from(row.iterations_done) * m));
            }
        }
        let skipped = finished.len();
        let queue = Queue {
            pending,
            next: AtomicUsize::new(0),
            done: Mutex::new(finished),
            finished: AtomicUsize::new(0),
        };
        Ok((queue, skipped, games))
    }

    /// Runs the queue on `jobs` jobs of `per_run` threads each; every run's result (the
    /// skipped ones included), in grid order.
    fn run(
        self,
        db: &Path,
        jobs: usize,
        per_run: usize,
        progress: &dyn Progress,
    ) -> Result<Vec<RunResult>, ExperimentError> {
        let errors: Vec<ExperimentError> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..jobs)
                .map(|_| s.spawn(|| self.work(db, per_run, progress)))
                .collect();
            handles
                .into_iter()
                .filter_map(|h| match h.join() {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e),
                    Err(_) => Some(ExperimentError::Usage("a sweep worker panicked".into())),
                })
                .collect()
        });
        if let Some(e) = errors.into_iter().next() {
            return Err(e);
        }
        let mut runs = self.done.into_inner().unwrap_or_else(|p| p.into_inner());
        runs.sort_by_key(|r| r.index);
        Ok(runs)
    }

    /// One job: its own store connection and a pool of `per_run` threads, running runs
    /// from the queue to their end. A failed run is a result; only a job that cannot
    /// start (store, threads) is an error.
    fn work(
        &self,
        db: &Path,
        per_run: usize,
        progress: &dyn Progress,
    ) -> Result<(), ExperimentError> {
        let mut store = Store::open(db)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(per_run)
            .build()
            .map_err(|e| {
                ExperimentError::Usage(format!("starting {per_run} worker threads: {e}"))
            })?;
        loop {
            let k = self.next.fetch_add(1, Ordering::SeqCst);
            let Some(&(r, id, pos)) = self.pending.get(k) else {
                return Ok(());
            };
            let t = Instant::now();
            let mut steps = Steps {
                progress,
                games: u64::from(r.cfg.settings.progress_units()),
                pos,
                ran: 0,
                metrics: Vec::new(),
            };
            let out = pool.install(|| run_specs::resume(&mut store, id, &mut steps));
            let result = RunResult {
                index: r.index,
                point: r.point,
                seed: r.seed,
                run_id: id,
                name: r.cfg.name.clone(),
                status: if out.is_ok() { "done" } else { "failed" },
                head: out.as_ref().ok().copied().flatten(),
                seconds: t.elapsed().as_secs_f64(),
                iterations_run: steps.ran,
                metrics: std::mem::take(&mut steps.metrics),
                error: out.err().map(|e| e.to_string()),
            };
            let n = self.finished.fetch_add(1, Ordering::SeqCst) + 1;
            progress.run_done(&result, n, self.pending.len());
            self.done
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(result);
        }
    }
}

/// A stored sweep: its row, record and member runs (grid order).
pub struct Stored {
    pub row: SweepRow,
    pub record: SweepRecord,
    pub members: Vec<SweepMember>,
}

/// Finds a sweep by name or hash prefix in a store.
pub(crate) fn find(store: &Store, text: &str) -> Result<Stored, ExperimentError> {
    let Some(row) = store.find_sweep(text)? else {
        let names: Vec<String> = store.sweeps()?.into_iter().map(|s| s.name).collect();
        return Err(ExperimentError::Usage(format!(
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
