//! Tabular AlphaZero as a [`Learner`]: the lookup table of [`table`] (Hsueh et al.,
//! TAAI 2018 and IEEE Access 2023), trained sample by sample with the schedule's beta.
//!
//! Records (unchanged since the first runs, so old stores keep their heads): a checkpoint is a
//! `table-snapshot/v1` ([`SnapshotRecord`]) over `table-chunk/v1` chunks ([`TableChunk`]): a
//! full checkpoint every `checkpoint_every` iterations, else the rows the iteration trained;
//! the evaluation is an `evaluation/v1` ([`EvaluationRecord`]).
//!
//! Settings: the run's `learning_rate` schedule, `init_std` (the Normal std of every
//! position's initial entries, drawn from the stream `table-init(key)` of the model seed) and
//! `checkpoint_every`.

use super::{
    Checkpoint, CheckpointRefs, EvalContext, ExportRow, Learner, LearnerContext, LearnerError,
    ModelSummary, Reference, SettingsCheck, TrainReport,
};
use crate::error::SettingError;
use crate::eval::phases::timed;
use crate::eval::{MetricDef, MetricValues, WinRate};
use crate::game::{Action, Game, PositionKey};
use crate::game_record::{GameRecord, ReplayError};
use crate::store::{Encoded, ObjectHash, Store};
use table::greedy_action;
pub use table::{Table, TableEval};
pub use train::{Sample, train};

pub mod metrics;
pub mod records;
pub mod table;
pub mod train;

pub use records::{EvaluationRecord, SnapshotRecord, TableChunk};

/// Tabular AlphaZero's model: the table, and the rows the last training touched (the next
/// delta checkpoint).
#[derive(Clone, Debug)]
pub struct TabularAz<K: PositionKey> {
    table: Table<K>,
    trained: Vec<usize>,
}

impl<K: PositionKey> TabularAz<K> {
    pub fn table(&self) -> &Table<K> {
        &self.table
    }

    pub(crate) fn from_table(table: Table<K>) -> TabularAz<K> {
        TabularAz {
            table,
            trained: Vec::new(),
        }
    }

    /// The checkpoint of `rows` (table row indices, ascending by key) after `iteration`: its
    /// chunks, then its `table-snapshot/v1` root; `full` with every row, else a delta on
    /// `base`.
    fn encode(
        &self,
        iteration: u32,
        rows: &[usize],
        full: bool,
        base: Option<ObjectHash>,
    ) -> Result<Checkpoint, LearnerError> {
        // Chunks are encoded and hashed in parallel (rayon keeps their order): a PPPP
        // checkpoint is about 18 MB, and re-training a derived snapshot hashes one per
        // iteration (docs/store.md "Derived snapshots").
        let mut objects: Vec<Encoded> = records::encode_chunks(&self.table, rows)?;
        let chunk_hashes: Vec<ObjectHash> = objects.iter().map(|e| e.hash).collect();
        let mut bytes: u64 = objects.iter().map(|e| e.bytes.len() as u64).sum();
        let snapshot = SnapshotRecord {
            iteration,
            num_actions: self.table.num_actions() as u32,
            full,
            base,
            entries: self.table.len() as u64,
            chunks: chunk_hashes,
        };
        let e = Encoded::of(&snapshot)?;
        let root = e.hash;
        bytes += e.bytes.len() as u64;
        objects.push(e);
        Ok(Checkpoint {
            objects,
            root,
            full,
            bytes,
        })
    }
}

/// Settings a branch cannot change ([`super::LearnerKind::fixed_settings`]).
pub(crate) const FIXED_SETTINGS: &[(&str, &str)] = &[(
    "init_std",
    "it defines the initial entries of the shared table's unmaterialised rows",
)];

/// The metrics of tabular AlphaZero (docs/metrics.md), in the order of the `evaluations`
/// columns.
pub(crate) const TABULAR_METRICS: &[MetricDef] = &[
    MetricDef {
        name: "wr_p",
        description: "score of the table's greedy policy against the optimal player \
                      (win 1, draw 0.5), half the games first",
    },
    MetricDef {
        name: "wr_p_ci95",
        description: "half-width of WR_p's 95% confidence interval (normal approximation)",
    },
    MetricDef {
        name: "wr_p_games",
        description: "games played for WR_p",
    },
    MetricDef {
        name: "wr_p_wins",
        description: "WR_p games the table player won",
    },
    MetricDef {
        name: "wr_p_draws",
        description: "WR_p games drawn",
    },
    MetricDef {
        name: "wr_p_losses",
        description: "WR_p games the table player lost",
    },
    MetricDef {
        name: "err_p",
        description: "over the test positions, mean expected value drop of acting by the \
                      policy, sum_a p_a (v*_best - v*_a), [0, 1] value scale",
    },
    MetricDef {
        name: "mae_v",
        description: "over the test positions, mean |v* - v| on the [0, 1] scale",
    },
    MetricDef {
        name: "updated_1",
        description: "positions (table rows) trained on at least 1 sample since the run began",
    },
    MetricDef {
        name: "updated_4",
        description: "positions trained on at least 4 samples since the run began",
    },
    MetricDef {
        name: "updated_16",
        description: "positions trained on at least 16 samples since the run began",
    },
    MetricDef {
        name: "seen",
        description: "distinct decision positions on the trajectories of the run's \
                      self-play games so far (search trees not counted)",
    },
    MetricDef {
        name: "err_p_updated",
        description: "ERR_p over every position updated at least once",
    },
    MetricDef {
        name: "mae_v_updated",
        description: "MAE_v over every position updated at least once",
    },
    MetricDef {
        name: "err_p_updated_w",
        description: "ERR_p over updated positions, weighted by their update counts",
    },
    MetricDef {
        name: "mae_v_updated_w",
        description: "MAE_v over updated positions, weighted by their update counts",
    },
];

impl<G: Game> Learner<G> for TabularAz<G::Key> {
    const NAME: &'static str = "tabular-az";
    const METRICS: &'static [MetricDef] = TABULAR_METRICS;
    /// A table re-trains fast (about 0.04-0.045 s of CPU per CDC PPPP literature iteration, 0.01 s
    /// for EWN 3x3x3) and its rows of f64s barely compress: every other full checkpoint is
    /// kept (docs/store.md "What a run costs").
    const KEEP_FULL_EVERY: u32 = 2;

    type Sample = Sample<G::Key>;
    type Eval<'a> = TableEval<'a, G::Key>;
    type Evaluation = EvaluationRecord;

    fn validate(check: SettingsCheck<'_>) -> Result<(), SettingError> {
        let _ = check;
        // The schedule, init_std and checkpoint_every are checked with the run's settings.
        Ok(())
    }

    fn new(g: &G, ctx: LearnerContext<'_>) -> Result<Self, LearnerError> {
        Ok(TabularAz::from_table(Table::new(
            g.num_actions(),
            ctx.model_seed,
            ctx.init_std,
        )))
    }

    fn restore(
        g: &G,
        ctx: LearnerContext<'_>,
        store: &Store,
        root: Option<&ObjectHash>,
    ) -> Result<Self, LearnerError> {
        match root {
            None => <Self as Learner<G>>::new(g, ctx),
            Some(h) => Ok(TabularAz::from_table(records::table_at(
                store,
                h,
                ctx.model_seed,
                ctx.init_std,
            )?)),
        }
    }

    fn stored(store: &Store, root: &ObjectHash) -> Result<bool, LearnerError> {
        // The chain of deltas back to its full checkpoint, every chunk present.
        let mut cur = Some(*root);
        while let Some(h) = cur {
            let s: SnapshotRecord = store.get(&h)?;
            for c in &s.chunks {
                if !store.contains(c)? {
                    return Ok(false);
                }
            }
            cur = if s.full { None } else { s.base };
        }
        Ok(true)
    }

    fn references(store: &Store, root: &ObjectHash) -> Result<CheckpointRefs, LearnerError> {
        let s: SnapshotRecord = store.get(root)?;
        let mut references = Vec::new();
        if let Some(b) = s.base {
            references.push(Reference {
                what: "base".into(),
                hash: b,
                stored: true,
            });
        }
        for (k, c) in s.chunks.iter().enumerate() {
            // A delta's chunks are derived (docs/store.md, "Derived snapshots"): absent by
            // design, rebuilt from the games and checked against the snapshot's address.
            references.push(Reference {
                what: format!("chunk {k}"),
                hash: *c,
                stored: s.full,
            });
        }
        Ok(CheckpointRefs {
            kind: "snapshot",
            iteration: s.iteration,
            references,
        })
    }

    fn summary(
        &self,
        g: &G,
        _: LearnerContext<'_>,
        iteration: u32,
        with_rows: bool,
    ) -> Result<ModelSummary, LearnerError> {
        let table = &self.table;
        let sorted = table.sorted_rows();
        let full = self.encode(iteration, &sorted, true, None)?;
        // The chunks' bytes (the root record not counted).
        let bytes = full
            .objects
            .iter()
            .filter(|o| o.hash != full.root)
            .map(|o| o.bytes.len() as u64)
            .sum();
        let rows = if with_rows {
            sorted.iter().map(|&r| export_row(g, table, r)).collect()
        } else {
            Vec::new()
        };
        Ok(ModelSummary {
            identity: full.root,
            units: table.len() as u64,
            unit: "rows",
            bytes,
            num_actions: table.num_actions(),
            rows,
        })
    }

    fn evaluator(&self) -> TableEval<'_, G::Key> {
        TableEval::new(&self.table)
    }

    fn greedy_action(&self, g: &G, s: &G::State, _: &[G::State], legal: &[Action]) -> Action {
        let mut scratch = Vec::new();
        let row = self.table.lookup(&g.key(s), &mut scratch);
        greedy_action(&row[..g.num_actions()], legal)
    }

    fn samples(
        g: &G,
        _: LearnerContext<'_>,
        record: &GameRecord,
        states: &[G::State],
        out: &mut Vec<Sample<G::Key>>,
    ) -> Result<(), ReplayError> {
        super::searched_decisions(g, record, states, |s, _, legal, counts, z| {
            out.push(Sample {
                key: g.key(s),
                actions: legal.into(),
                counts: counts.into(),
                z,
            });
        });
        Ok(())
    }

    fn train(
        &mut self,
        ctx: LearnerContext<'_>,
        iteration: u32,
        window: &[&Sample<G::Key>],
    ) -> TrainReport {
        let beta = ctx.beta(iteration);
        let report = timed("train", || train(&mut self.table, window, beta));
        self.trained = report.rows;
        TrainReport {
            samples: report.samples,
            units: self.trained.len() as u64,
            beta,
        }
    }

    fn checkpoint(
        &self,
        _: &G,
        ctx: LearnerContext<'_>,
        iteration: u32,
        previous: Option<ObjectHash>,
    ) -> Result<Checkpoint, LearnerError> {
        let full = iteration.is_multiple_of(ctx.checkpoint_every);
        timed("checkpoint", || match full {
            true => self.encode(iteration, &self.table.sorted_rows(), true, None),
            false => self.encode(iteration, &self.trained, false, previous),
        })
    }

    fn evaluate(&self, g: &G, _: LearnerContext<'_>, e: EvalContext<'_, G>) -> EvaluationRecord {
        EvaluationRecord {
            iteration: e.iteration,
            metrics: metrics::measure(g, &self.table, e.truth, e.plan, e.iteration, e.seen),
        }
    }

    fn metric_values(e: &EvaluationRecord) -> MetricValues {
        let m = &e.metrics;
        let w = m.wr_p.as_ref();
        let values = WinRate::values(w).into_iter().chain([
            m.err_p,
            m.mae_v,
            Some(m.updated[0] as f64),
            Some(m.updated[1] as f64),
            Some(m.updated[2] as f64),
            Some(m.seen as f64),
            m.err_p_updated,
            m.mae_v_updated,
            m.err_p_updated_weighted,
            m.mae_v_updated_weighted,
        ]);
        TABULAR_METRICS
            .iter()
            .zip(values)
            .map(|(d, v)| (d.name, v))
            .collect()
    }
}

/// Row `r` of `table` as `checkout --export` writes it.
fn export_row<G: Game>(g: &G, table: &Table<G::Key>, r: usize) -> ExportRow {
    let key = table.key(r);
    let (position, legal) = match g.state_from_key(*key) {
        Ok(s) => {
            let mut actions = Vec::new();
            g.legal_actions(&s, &mut actions);
            let legal = actions.iter().map(|&a| (a, g.action_name(&s, a))).collect();
            (g.notation(&s), legal)
        }
        Err(e) => (format!("(not decodable: {e})"), Vec::new()),
    };
    ExportRow {
        key: format!("{key:?}"),
        position,
        row: table.row(r).to_vec(),
        updates: table.updates(r),
        legal,
    }
}
