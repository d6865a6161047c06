//! `tabula resume`, `branch`, `verify`, `checkout`: a run's lifecycle (docs/store.md).

use std::io::Write;
use std::path::Path;

use anyhow::bail;
use serde::Serialize;
use tabula::runs::{
    CheckedOut, ExportFormat, ExportedModel, checkout_at, create_branch, export_model_at,
    verify as verify_run,
};
use tabula::store::{Store, Subject};

use super::args::{BranchArgs, CheckoutArgs, ResumeArgs, VerifyArgs};
use super::common::{
    annotate, annotate_config, check_annotations, pool, resume_and_report, start_and_report,
};
use super::output::{JsonLayout, OutputFile, Report, emit};
use super::workers::{Role, role, serve};

fn open(db: Option<&Path>) -> anyhow::Result<Store> {
    let path = Store::resolve_path(db);
    if !path.exists() {
        bail!("no store at {}", path.display());
    }
    Ok(Store::open(&path)?)
}

pub(crate) fn resume(db: Option<&Path>, args: &ResumeArgs) -> anyhow::Result<()> {
    let spread = match role(&args.spread)? {
        Role::Worker(x) => return serve(&x, args.threads, 600.0, args.json, args.json),
        Role::Trainer(spread) => spread,
    };
    let mut store = open(db)?;
    if args.take_over {
        let row = tabula::runs::find(&store, &args.run)?;
        if let Some(h) = store.take_over_run(row.id)? {
            eprintln!(
                "warning: took over the lock of run {} ({}) from process {} on host {} \
                 (holding it since {}); if that process is still working, the two will write \
                 the same iterations: stop it",
                row.id, row.name, h.pid, h.host, h.since
            );
        }
    }
    let x = spread.exchange.as_ref();
    resume_and_report(&mut store, &args.run, args.threads, args.json, x)
}

pub(crate) fn branch(db: Option<&Path>, args: &BranchArgs) -> anyhow::Result<()> {
    check_annotations(&args.annotate)?;
    let mut store = open(db)?;
    if args.at == 0 {
        return fresh_branch(db, store, args);
    }
    let threads = pool(args.threads)?.current_num_threads() as u32;
    let (id, hash, seed) = create_branch(
        &mut store, &args.run, args.at, &args.set, args.seed, threads,
    )?;
    annotate(&mut store, &Subject::Run(id), &args.annotate)?;
    if !args.json || args.no_run {
        let report = BranchMade {
            run: id,
            name: tabula::runs::find(&store, &id.to_string())?.name,
            run_hash: hash.to_hex(),
            seed,
            parent: &args.run,
            at: args.at,
        };
        emit(&report, args.json)?;
    }
    if args.no_run {
        return Ok(());
    }
    resume_and_report(&mut store, &id.to_string(), args.threads, args.json, None)
}

/// `branch --at I` (I > 0): the branch made; with `--json`, printed only with `--no-run`
/// (else the run's end says it).
#[derive(Serialize)]
struct BranchMade<'a> {
    run: i64,
    name: String,
    run_hash: String,
    seed: u64,
    #[serde(skip)]
    parent: &'a str,
    #[serde(skip)]
    at: u32,
}

impl Report for BranchMade<'_> {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for BranchMade<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "branch: run {} {} (run record {}, seed {}) from run {} at iteration {}",
            self.run,
            self.name,
            &self.run_hash[..12],
            self.seed,
            self.parent,
            self.at
        )
    }
}

/// `a..b` (inclusive) or `a`.
fn parse_range(text: &str) -> anyhow::Result<(u32, u32)> {
    let bad = || {
        anyhow::anyhow!("--iterations {text}: give A..B (inclusive, 1-based) or one iteration A")
    };
    match text.split_once("..") {
        Some((a, b)) => {
            let a = a.trim().parse().map_err(|_| bad())?;
            let b = b
                .trim()
                .trim_start_matches('=')
                .parse()
                .map_err(|_| bad())?;
            Ok((a, b))
        }
        None => {
            let a = text.trim().parse().map_err(|_| bad())?;
            Ok((a, a))
        }
    }
}

/// `verify`'s progress: a bar over the re-executed self-play games, past 2 s.
struct VerifyProgress {
    bar: super::progress::Delayed,
    first: u32,
    games: u64,
}

impl tabula::runs::Observer for VerifyProgress {
    fn games_done(&mut self, iteration: u32, done: u32, _of: u32) {
        let before = u64::from(iteration.saturating_sub(self.first)) * self.games;
        self.bar.set_position(before + u64::from(done));
        self.bar
            .bar
            .set_message(format!("verify: iteration {iteration}"));
    }
}

pub(crate) fn verify(db: Option<&Path>, args: &VerifyArgs) -> anyhow::Result<()> {
    let range = args.iterations.as_deref().map(parse_range).transpose()?;
    let mut store = Store::open_read_only(&Store::resolve_path(db))?;
    let pool = pool(args.threads)?;
    let row = tabula::runs::find(&store, &args.run)?;
    let games = u64::from(super::common::progress_units(&row.settings_json));
    let first_own = row.parent.map_or(1, |p| p.1 + 1);
    let (a, b) = range.unwrap_or((first_own, row.iterations_done.max(first_own)));
    let mut progress = VerifyProgress {
        bar: super::progress::Delayed::new(
            u64::from(b.saturating_sub(a) + 1) * games,
            "verify",
            !args.json,
        ),
        first: a,
        games,
    };
    let v = pool.install(|| verify_run(&mut store, &args.run, range, &mut progress));
    progress.bar.finish();
    let v = v?;
    store.check_unchanged()?;
    let report = VerifyReport {
        run: v.run_id,
        first: v.first,
        last: v.last,
        records: v.records,
        identical: v.differs.is_none(),
        differs: v.differs.clone(),
        seconds: v.seconds,
    };
    emit(&report, args.json)?;
    if let Some(d) = v.differs {
        bail!(
            "run {} differs at {d} (re-executed {} records of iterations {}..{} first)",
            v.run_id,
            v.records,
            v.first,
            v.last
        );
    }
    Ok(())
}

/// `verify`: which iterations were re-executed and whether every hash came out the same (the
/// text says only that; a difference is the command's error).
#[derive(Serialize)]
struct VerifyReport {
    run: i64,
    first: u32,
    last: u32,
    records: u64,
    identical: bool,
    differs: Option<String>,
    seconds: f64,
}

impl Report for VerifyReport {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.identical {
            return Ok(());
        }
        writeln!(
            f,
            "run {} iterations {}..{}: {} records re-executed, every hash identical ({:.2} s)",
            self.run, self.first, self.last, self.records, self.seconds
        )
    }
}

pub(crate) fn checkout(db: Option<&Path>, args: &CheckoutArgs) -> anyhow::Result<()> {
    let Some((run, i)) = args.target.rsplit_once('@') else {
        bail!(
            "`{}`: give RUN@I, e.g. 3@10 or quick@10 (I = 0 is the untrained table)",
            args.target
        );
    };
    let i: u32 = match i.parse::<u64>() {
        Ok(n) => u32::try_from(n).map_err(|_| {
            anyhow::anyhow!(
                "`{}`: the iteration {n} is out of range; allowed: 0 to {}",
                args.target,
                u32::MAX
            )
        })?,
        Err(_) => bail!(
            "`{}`: the iteration `{i}` is not a number >= 0",
            args.target
        ),
    };
    let db_path = Store::resolve_path(db);
    let format = args.export.as_deref().map(ExportFormat::of_path);
    let export = args.export.as_deref().map(|path| OutputFile {
        flag: "--export",
        path,
    });
    if let Some(out) = &export {
        out.check(&db_path, false)?;
    }
    let store = Store::open_read_only(&db_path)?;
    // A model format is checked (and written) before the summary: a table run asking for one
    // fails at once, before its table is rebuilt.
    let model = match format {
        Some(f @ (ExportFormat::Onnx | ExportFormat::Safetensors)) => {
            Some(export_model_at(&store, run, i, f)?)
        }
        _ => None,
    };
    let c = checkout_at(&store, run, i, format == Some(ExportFormat::Rows))?;
    if let Some(out) = &export {
        match &model {
            // A model of several networks: one file each, named beside the asked path.
            Some(m) if !m.parts.is_empty() => {
                for (name, bytes) in &m.parts {
                    let path = part_path(out.path, name);
                    let part = OutputFile {
                        flag: "--export",
                        path: &path,
                    };
                    part.check(&db_path, false)?;
                    part.write(&db_path, |w| w.write_all(bytes))?;
                }
            }
            _ => out.write(&db_path, |w| match &model {
                Some(m) => w.write_all(&m.bytes),
                None => write_rows(w, &c, !args.no_header),
            })?,
        }
    }
    let report = CheckoutReport {
        run: c.run_id,
        iteration: c.iteration,
        snapshot: c.snapshot.map(|h| h.to_hex()),
        learner: c.learner,
        model_hash: c.model.identity.to_hex(),
        units: c.model.units,
        unit: c.model.unit,
        table_hash: c.model.identity.to_hex(),
        entries: c.model.units,
        bytes: c.model.bytes,
        num_actions: c.model.num_actions,
        seconds: c.seconds,
        export: args.export.as_ref().map(|p| p.display().to_string()),
        format: format.map(ExportFormat::name),
        opset: model.as_ref().and_then(|m| m.opset),
        export_bytes: model
            .as_ref()
            .map(|m| m.bytes.len() + m.parts.iter().map(|p| p.1.len()).sum::<usize>()),
        model: model.as_ref(),
    };
    emit(&report, args.json)
}

/// `checkout RUN@I`: the model after an iteration, and what `--export` wrote.
#[derive(Serialize)]
struct CheckoutReport<'a> {
    run: i64,
    iteration: u32,
    snapshot: Option<String>,
    learner: &'static str,
    model_hash: String,
    units: u64,
    unit: &'static str,
    /// `table_hash` and `entries` are the first names of `model_hash` and `units`, kept.
    table_hash: String,
    entries: u64,
    bytes: u64,
    num_actions: usize,
    seconds: f64,
    export: Option<String>,
    format: Option<&'static str>,
    opset: Option<i64>,
    export_bytes: Option<usize>,
    /// The network written by `--export` as ONNX or safetensors, for the text.
    #[serde(skip)]
    model: Option<&'a ExportedModel>,
}

impl Report for CheckoutReport<'_> {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for CheckoutReport<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "run {} iteration {}: {} model {}  {} {}, {} bytes as a full checkpoint ({:.3} s)",
            self.run,
            self.iteration,
            self.learner,
            self.model_hash,
            self.units,
            self.unit,
            self.bytes,
            self.seconds
        )?;
        if let Some(s) = &self.snapshot {
            writeln!(f, "snapshot {s}")?;
        }
        let Some(p) = &self.export else {
            return Ok(());
        };
        let Some(m) = self.model else {
            return writeln!(f, "rows written to {p}");
        };
        if !m.parts.is_empty() {
            let files: Vec<String> = (m.parts.iter())
                .map(|(name, b)| {
                    let path = part_path(std::path::Path::new(p), name);
                    format!("{name} to {} ({} bytes)", path.display(), b.len())
                })
                .collect();
            return writeln!(f, "one network a file: {}", files.join(", "));
        }
        let [ch, h, w] = m.input;
        let what = match (m.ir_version, m.opset) {
            (Some(ir), Some(opset)) => {
                format!("ONNX model (IR version {ir}, opset {opset}: graph and weights)")
            }
            _ => "weights (safetensors)".to_string(),
        };
        writeln!(
            f,
            "{what} of the {} network written to {p} ({} bytes, {} tensors): input planes [N, \
             {ch}, {h}, {w}], outputs policy_logits [N, {}] and value [N, 1] ({})",
            m.arch,
            m.bytes.len(),
            m.tensors,
            m.actions,
            m.value
        )
    }
}

/// The file of network `name` of a model exported to `path`: the name before the extension
/// (`m.onnx` -> `m.dynamics.onnx`).
fn part_path(path: &std::path::Path, name: &str) -> std::path::PathBuf {
    match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => path.with_extension(format!("{name}.{ext}")),
        None => path.with_extension(name),
    }
}

/// A table's rows as JSON lines: a header naming the columns, then one row a line.
fn write_rows(w: &mut dyn Write, c: &CheckedOut, with_header: bool) -> std::io::Result<()> {
    // The first line names the columns (unless left out); every other line is one row.
    let header = serde_json::json!({"header": {
        "run": c.run_id, "iteration": c.iteration, "num_actions": c.model.num_actions,
        "table_hash": c.model.identity.to_hex(),
        "columns": {
            "key": "the position's key as the table stores it",
            "position": "the position in the game's notation (as `tabula value` takes it)",
            "row": format!("the logits of actions 0..{} by action index, then v_hat (the value estimate)", c.model.num_actions.saturating_sub(1)),
            "updates": "how many training updates the row received",
            "legal": "the position's legal actions: [action index into row, name]",
        },
    }});
    if with_header {
        writeln!(w, "{header}")?;
    }
    for r in &c.model.rows {
        writeln!(w, "{}", serde_json::to_string(r)?)?;
    }
    Ok(())
}

/// `branch RUN --at 0`: a fresh run with RUN's settings (all written out) and the changes;
/// its seed, unless --seed is given, derives from RUN's seed and the changes as a branch's
/// does (stream `branch(0,O)`), so it replays.
fn fresh_branch(db: Option<&Path>, mut store: Store, args: &BranchArgs) -> anyhow::Result<()> {
    use tabula::experiments::run_specs;
    use tabula::runs::overrides::{self, Place};
    let (row, spec) = run_specs::spec_of_run(&store, &args.run)?;
    let mut sets = overrides::parse_sets(&args.set)?;
    let canonical = overrides::canonical(&sets);
    let parent_seed: u64 = row.seed.parse().unwrap_or(0);
    let seed = args
        .seed
        .unwrap_or_else(|| tabula::runs::branch_seed(parent_seed, 0, &canonical));
    if !sets.iter().any(|(k, _)| k == "name") {
        sets.push((
            "name".into(),
            toml::Value::String(store.unused_run_name(&tabula::runs::branch_name(
                &row.name, 0, &canonical, args.seed,
            ))?),
        ));
    }
    let (mut cfg, text) = overrides::spec_with_overrides(
        Place::FreshBranch,
        &spec,
        &sets,
        Some(seed),
        &row.name,
        "--set",
    )?;
    annotate_config(&mut cfg, &args.annotate)?;
    let text = format!(
        "# fresh branch of run {} ({}) at iteration 0; overrides: {}; seed {seed}\n{text}",
        row.id,
        row.name,
        if canonical.is_empty() {
            "none".to_string()
        } else {
            canonical.join(" ")
        }
    );
    if args.no_run {
        let id = run_specs::create(&mut store, &cfg, &text)?;
        let report = FreshBranch {
            run: id,
            seed,
            parent: row.id,
        };
        return emit(&report, args.json);
    }
    drop(store);
    start_and_report(db, &cfg, &text, args.threads, args.json, None)
}

/// `branch RUN --at 0 --no-run`: the fresh run made.
#[derive(Serialize)]
struct FreshBranch {
    run: i64,
    seed: u64,
    #[serde(skip)]
    parent: i64,
}

impl Report for FreshBranch {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for FreshBranch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "branch: run {} (seed {}), a fresh run from run {} at iteration 0",
            self.run, self.seed, self.parent
        )
    }
}
