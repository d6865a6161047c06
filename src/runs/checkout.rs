//! A model at an iteration (`RUN@I`, `model:RUN@I`), restored through its learner from the
//! store: as a player, checked out and described, or measured against an exact solution; and
//! the positions a run's self-play visited.

use std::time::Instant;

use super::Settings;
use super::chain::chain_to;
use super::restore_at;
use super::{Chain, RunConfig, RunError, decision_states, find, load_config, model_seed_of};
use crate::eval::Truth;
use crate::game_record::GameRecord;
use crate::games::Abilities;
use crate::learners::{Learner, LearnerKind, ModelFormat, ModelSummary};
use crate::store::{ObjectHash, RunRow, Store};

/// A run at an iteration, read for restoring its model: the run, its configuration, its
/// model seed and its chain of iteration records.
struct RunAt<'s> {
    row: RunRow,
    cfg: RunConfig,
    seed: u64,
    records: Chain<'s>,
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
    // The settings the model was trained under: its stage's (runs/stages.rs).
    let cfg = cfg.in_force(i)?;
    Ok(RunAt {
        row,
        cfg,
        seed,
        records,
    })
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
    Ok((model, cfg.settings.search.at_iteration(i)))
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
    truth: &Truth<G>,
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
        // Test positions: no game before them.
        Ok(truth.test_errors(g, |s, legal, priors| {
            crate::search::Evaluator::evaluate(&mut eval, g, s, &[], legal, priors, &mut rng)
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
            for s in decision_states(g, &states) {
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
    records: &mut Chain<'_>,
    i: u32,
    with_rows: bool,
) -> Result<ModelSummary, RunError> {
    crate::with_learner!(settings.learner.kind, L => {
        let m: L<G> = restore_at(g, store, settings, model_seed, records, i)?;
        Ok(m.summary(g, settings.learner_context(model_seed), i, with_rows)?)
    })
}

/// What `checkout --export PATH` writes, chosen by PATH's extension (docs/network.md,
/// "Export").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// A table's rows as JSON lines (any extension but the two below).
    Rows,
    /// A network as an ONNX model, graph and weights (`.onnx`).
    Onnx,
    /// A network's weights alone as safetensors (`.safetensors`).
    Safetensors,
}

impl ExportFormat {
    /// The format a path asks for: `.onnx`, `.safetensors` (any case), else rows.
    pub fn of_path(path: &std::path::Path) -> ExportFormat {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("onnx") => ExportFormat::Onnx,
            Some("safetensors") => ExportFormat::Safetensors,
            _ => ExportFormat::Rows,
        }
    }

    /// The model file this format writes (`None`: a table's rows).
    fn model_format(self) -> Option<ModelFormat> {
        match self {
            ExportFormat::Rows => None,
            ExportFormat::Onnx => Some(ModelFormat::Onnx),
            ExportFormat::Safetensors => Some(ModelFormat::Safetensors),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Rows => "rows",
            ExportFormat::Onnx => "onnx",
            ExportFormat::Safetensors => "safetensors",
        }
    }
}

/// A network model exported ([`export_model_at`]): the file's bytes and what they hold.
#[derive(Clone, Debug)]
pub struct ExportedModel {
    pub format: ExportFormat,
    /// The file's bytes (empty when the model's networks are named `parts`).
    pub bytes: Vec<u8>,
    /// A model of several networks (MuZero's): each network's name and file bytes, written
    /// to the asked path with the name before its extension.
    pub parts: Vec<(String, Vec<u8>)>,
    /// The ONNX operator set (`Some` for [`ExportFormat::Onnx`]).
    pub opset: Option<i64>,
    /// The ONNX IR version (`Some` for [`ExportFormat::Onnx`]).
    pub ir_version: Option<i64>,
    /// The input planes: channels, height, width.
    pub input: [usize; 3],
    pub actions: usize,
    /// Weight tensors written.
    pub tensors: usize,
    /// The architecture in words (`mlp [64, 64]`, `resnet 2x16`).
    pub arch: String,
    /// How the `value` output reads (its squashing and scale), in words.
    pub value: &'static str,
}

/// The network of run `text` after iteration `i` (0: untrained) as an ONNX model or as
/// safetensors ([`crate::nn::export`]); a usage error for a run whose learner has no network
/// (its rows are [`checkout_at`]'s).
pub fn export_model_at(
    store: &Store,
    text: &str,
    i: u32,
    format: ExportFormat,
) -> Result<ExportedModel, RunError> {
    let RunAt {
        row,
        cfg,
        seed,
        mut records,
    } = run_at(store, text, i, &format!("{text}@{i}"), "model", None)?;
    let kind = cfg.settings.learner.kind;
    let Some(model) = format.model_format().filter(|m| kind.exports().contains(m)) else {
        let exporting = LearnerKind::exporting(ModelFormat::Onnx);
        return Err(RunError::Usage(format!(
            "{text}@{i}: run {} has a {} model; .onnx and .safetensors export the model of a \
             {} run (learner kind = {}); a table's rows are written to a path with any other \
             extension, as JSON lines",
            row.id,
            kind.name(),
            exporting.join(" or "),
            exporting
                .iter()
                .map(|k| format!("\"{k}\""))
                .collect::<Vec<_>>()
                .join(" or ")
        )));
    };
    let snapshot = match i {
        0 => "none (the untrained network)".to_string(),
        _ => records.get(i)?.snapshot.to_hex(),
    };
    let mut graphs = crate::with_game!(&cfg.game, |g| model_graphs(
        g,
        store,
        &cfg.settings,
        seed,
        &mut records,
        i
    ))?;
    let meta: Vec<(String, String)> = [
        ("run", row.id.to_string()),
        ("name", row.name.clone()),
        ("variant", cfg.game.variant()),
        ("iteration", i.to_string()),
        ("snapshot", snapshot),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut files = Vec::with_capacity(graphs.len());
    for (name, graph) in &graphs {
        let bytes = match model {
            ModelFormat::Onnx => graph
                .onnx(&meta)
                .map_err(|e| RunError::Usage(format!("{text}@{i}: {e}")))?,
            ModelFormat::Safetensors => graph.safetensors(&meta),
        };
        files.push((name.to_string(), bytes));
    }
    let (bytes, parts) = match files.as_slice() {
        [(name, _)] if name.is_empty() => (files.swap_remove(0).1, Vec::new()),
        _ => (Vec::new(), files),
    };
    let graph = graphs.swap_remove(0).1;
    Ok(ExportedModel {
        format,
        bytes,
        parts,
        opset: (format == ExportFormat::Onnx).then_some(crate::nn::export::OPSET),
        ir_version: (format == ExportFormat::Onnx).then_some(crate::nn::export::IR_VERSION),
        input: graph.input,
        actions: graph.actions,
        tensors: graph.tensors.len(),
        arch: graph.arch,
        value: graph.value,
    })
}

/// The networks of iteration `i`'s model, restored, as export graphs
/// ([`Learner::graphs`](crate::learners::Learner::graphs)).
fn model_graphs<G: Abilities>(
    g: &G,
    store: &Store,
    settings: &Settings,
    model_seed: u64,
    records: &mut Chain<'_>,
    i: u32,
) -> Result<Vec<(&'static str, crate::nn::export::Graph)>, RunError> {
    use crate::learners::Learner;
    crate::with_learner!(settings.learner.kind, L => {
        let m: L<G> = restore_at(g, store, settings, model_seed, records, i)?;
        Ok(Learner::<G>::graphs(&m)?)
    })
}
