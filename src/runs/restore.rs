//! The learner's state after any committed iteration, rebuilt from the store alone
//! ([`start_point`]), and the model after an iteration ([`restore_at`]): read from its
//! checkpoint, or re-trained from the last stored one (derived snapshots, docs/store.md).

use std::collections::VecDeque;

use crate::par;

use super::records::NotMeasured;
use super::retention::CoverageLog;
use super::{
    Chain, GameYield, IterationRecord, RunConfig, RunError, Settings, chain, game_yield,
    load_settings, replay_tree,
};
use crate::eval::MetricValues;
use crate::games::Abilities;
use crate::learners::{Learner, LearnerContext};
use crate::search::{Evaluator, Uniform};
use crate::solver::fasthash::FastSet;
use crate::start::StartPolicy;
use crate::store::{ObjectHash, Store, StoreError};

/// The learner's state after an iteration: everything the next iteration needs.
pub(crate) struct StartPoint<G: Abilities, L: Learner<G>> {
    pub done: u32,
    pub model: L,
    pub window: VecDeque<Vec<L::Sample>>,
    /// The coverage set `seen` and what of it is not stored yet.
    pub coverage: CoverageLog<G::Key>,
    pub start: Box<dyn StartPolicy<G>>,
    pub previous: Option<ObjectHash>,
    pub(crate) previous_snapshot: Option<ObjectHash>,
    /// The metric values of the last measured iteration up to `done` (`None` when none of
    /// 1..=`done` was measured; docs/metrics.md, "The evaluation interval").
    pub(crate) previous_metrics: Option<MetricValues>,
}

/// Rebuilds the learner's state after iteration `done` from the store alone: the model from
/// its checkpoint, the training window, the coverage set and the start policy from the stored
/// games (and, for a start policy that wants search-tree states, from their searches
/// re-played with the model each was played with).
pub(crate) fn start_point<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &Store,
    cfg: &RunConfig,
    model_seed: u64,
    head: Option<ObjectHash>,
    done: u32,
) -> Result<StartPoint<G, L>, RunError> {
    let s = &cfg.settings;
    let ctx = s.learner_context(model_seed);
    let records = committed_chain(store, head, done)?;
    let model = restore_at::<G, L>(g, store, s, model_seed, &mut Chain::Whole(&records), done)?;
    let previous_snapshot = records.last().map(|r| r.snapshot);
    let previous_metrics = last_measured::<G, L>(store, &records)?;
    let mut window = VecDeque::new();
    let mut start = s.start.policy(g);
    let first_in_window = done.saturating_sub(s.window) + 1;
    // A stored coverage set (docs/store.md, "Keeping fewer games") stands for the games up
    // to its iteration, but for those the next iteration trains on.
    let (covered, mut coverage) = covered_until::<G>(store, cfg, &records, head)?;
    let learns = super::retention::start_learns(cfg);
    let mut before: Option<&IterationRecord> = None;
    for r in &records {
        if r.iteration <= covered && r.iteration + s.window < done + 2 {
            if r.iteration >= first_in_window {
                // Never trained on again: the next iteration's window drops it.
                window.push_back(Vec::new());
            }
            before = Some(r);
            continue;
        }
        if !learns && r.iteration < first_in_window {
            // Not trained on again nor taken in by the start policy: its positions only.
            add_positions(g, store, r, &mut coverage)?;
            before = Some(r);
            continue;
        }
        let games = super::retention::stored_games(store, r)?;
        // The model the games were played with: for search-state archives and KataGo's
        // search control only.
        let wants_tree = start.wants_tree_states();
        let replay_model = if wants_tree || start.wants_model() {
            Some(restore_at::<G, L>(
                g,
                store,
                s,
                model_seed,
                &mut Chain::Whole(&records),
                before.map_or(0, |b| b.iteration),
            )?)
        } else {
            None
        };
        let derived: Vec<GameYield<G, L>> = par::try_map(games.len(), |k| {
            let rec = &games[k];
            let tree = match &replay_model {
                Some(m) if wants_tree && rec.start.is_none() => {
                    replay_tree(g, m, cfg, rec, r.iteration, k as u32)?
                }
                _ => Vec::new(),
            };
            game_yield::<G, L>(g, ctx, rec, tree)
        })?;
        let mut iteration_samples = Vec::new();
        // The model the games were played with; a policy without `wants_model` is handed
        // one that knows nothing.
        let mut played_by = replay_model.as_ref().map(|m| m.evaluator());
        let eval: &mut dyn Evaluator<G> = match &mut played_by {
            Some(e) => e,
            None => &mut Uniform,
        };
        for (k, (d, rec)) in derived.into_iter().zip(&games).enumerate() {
            if r.iteration > covered {
                coverage.extend(d.positions);
            }
            let slot = crate::rng::GameSlot::new(cfg.seed, r.iteration, k as u32);
            start.observe(g, slot, rec, &d.states, &d.tree, eval);
            if r.iteration >= first_in_window {
                iteration_samples.extend(d.samples);
            }
        }
        if r.iteration >= first_in_window {
            window.push_back(iteration_samples);
        }
        before = Some(r);
    }
    Ok(StartPoint {
        done,
        model,
        window,
        coverage,
        start,
        previous: head,
        previous_snapshot,
        previous_metrics,
    })
}

/// The chain ending at `head`, which must hold the `done` iterations the run says it committed.
fn committed_chain(
    store: &Store,
    head: Option<ObjectHash>,
    done: u32,
) -> Result<Vec<IterationRecord>, RunError> {
    let records = chain(store, head)?;
    if records.len() != done as usize {
        return Err(RunError::Inconsistent(format!(
            "the run says {done} iterations are committed, but its head's chain has {}",
            records.len()
        )));
    }
    Ok(records)
}

/// Adds the decision positions of the stored games of iteration record `r` to the coverage
/// set, in game order.
fn add_positions<G: Abilities>(
    g: &G,
    store: &Store,
    r: &IterationRecord,
    coverage: &mut CoverageLog<G::Key>,
) -> Result<(), RunError> {
    for keys in super::retention::stored_positions(g, store, r)? {
        coverage.extend(keys);
    }
    Ok(())
}

/// The last iteration of `records` (ending at `head`) with a stored coverage set, and that
/// set; (0, empty) when there is none, or when the run's start policy learns from every game
/// (which must then be read anyway, and whose new keys are not kept).
fn covered_until<G: Abilities>(
    store: &Store,
    cfg: &RunConfig,
    records: &[IterationRecord],
    head: Option<ObjectHash>,
) -> Result<(u32, CoverageLog<G::Key>), RunError> {
    if super::retention::start_learns(cfg) {
        return Ok((0, CoverageLog::new(FastSet::default(), None, false)));
    }
    let hashes = super::retention::record_hashes(records, head);
    for (k, h) in hashes.iter().enumerate().rev() {
        if let Some(c) = store.coverage_of(h)? {
            let seen = super::retention::read_coverage::<G>(store, c)?;
            return Ok((k as u32 + 1, CoverageLog::new(seen, Some(c), true)));
        }
    }
    Ok((0, CoverageLog::new(FastSet::default(), None, true)))
}

/// The metric values of the last measured iteration of the chain `records` (oldest first):
/// the evaluation interval (`[eval] every`) may have skipped the last ones; `None` when none
/// was measured.
fn last_measured<G: Abilities, L: Learner<G>>(
    store: &Store,
    records: &[IterationRecord],
) -> Result<Option<MetricValues>, RunError> {
    match records
        .iter()
        .rev()
        .find(|r| !NotMeasured::is(&r.evaluation))
    {
        Some(r) => Ok(Some(L::metric_values(
            &store.get::<L::Evaluation>(&r.evaluation)?,
        ))),
        None => Ok(None),
    }
}

/// The model after iteration `done` of the chain `records` (oldest first, at least `done`
/// long; `done` 0: the untrained model, made with `settings`).
///
/// Derived snapshots (docs/store.md): only full checkpoints keep their bytes in the store, so
/// the model is restored from the latest checkpoint at or before `done` that is stored
/// ([`Learner::stored`]) and re-trained from there, iteration by iteration, exactly as the run
/// trained it: iteration i's window of the last K stored games' samples, with the settings its
/// record names. Every rebuilt checkpoint must hash to the snapshot address its iteration
/// record holds, else the store is damaged and the error says which iteration.
pub(crate) fn restore_at<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &Store,
    settings: &Settings,
    model_seed: u64,
    records: &mut Chain<'_>,
    done: u32,
) -> Result<L, RunError> {
    let mut base = done;
    while let Some(h) = records.snapshot(base)?
        && !L::stored(store, &h)?
    {
        base -= 1;
    }
    let ctx = settings.learner_context(model_seed);
    let mut model = L::restore(g, ctx, store, records.snapshot(base)?.as_ref())?;
    // The settings of each iteration (a branch's differ from its parent's), read once.
    let mut known: Vec<(ObjectHash, Settings)> = Vec::new();
    let mut window: VecDeque<(u32, Vec<L::Sample>)> = VecDeque::new();
    // Iteration i + 1's new games are read and replayed on this thread while iteration i
    // trains and hashes its checkpoint on another: neither reads what the other writes, and
    // each iteration trains on exactly the samples it would have sequentially.
    let mut next: Option<(u32, Vec<L::Sample>)> = None;
    for i in base + 1..=done {
        let snapshot = records.get(i)?.snapshot;
        let previous = records.snapshot(i - 1)?;
        let k = settings_index(store, &mut known, records, i)?;
        let next_k = match i < done {
            true => Some(settings_index(store, &mut known, records, i + 1)?),
            false => None,
        };
        let s = &known[k].1;
        let ctx = s.learner_context(model_seed);
        let first = i.saturating_sub(s.window) + 1;
        while window.front().is_some_and(|(j, _)| *j < first) {
            window.pop_front();
        }
        window.extend(next.take());
        for j in first..=i {
            if !window.iter().any(|(k, _)| *k == j) {
                window.push_back((j, window_samples::<G, L>(g, store, records, j, ctx)?));
            }
        }
        // Samples in their stored order: iteration by iteration, game by game.
        window.make_contiguous().sort_by_key(|(j, _)| *j);
        let refs: Vec<&L::Sample> = window.iter().flat_map(|(_, v)| v).collect();
        let model_ref = &mut model;
        let (rebuilt, read) = std::thread::scope(|scope| {
            let trainer = scope.spawn(move || {
                model_ref.train(ctx, i, &refs);
                model_ref.checkpoint(g, ctx, i, previous)
            });
            let read = next_k.map(|k| {
                let ctx = known[k].1.learner_context(model_seed);
                window_samples::<G, L>(g, store, records, i + 1, ctx)
            });
            let rebuilt = trainer
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (rebuilt, read)
        });
        let rebuilt = rebuilt?;
        if let Some(read) = read {
            next = Some((i + 1, read?));
        }
        if rebuilt.root != snapshot {
            return Err(StoreError::Corrupt {
                hash: snapshot,
                reason: format!(
                    "iteration {i}'s snapshot is derived (its bytes are not stored), and \
                     re-training it from the stored games gives {}",
                    rebuilt.root
                ),
            }
            .into());
        }
    }
    Ok(model)
}

/// The index in `known` of iteration `i`'s settings, read from the store the first time a
/// settings record is met.
fn settings_index(
    store: &Store,
    known: &mut Vec<(ObjectHash, Settings)>,
    records: &mut Chain<'_>,
    i: u32,
) -> Result<usize, RunError> {
    let h = records.get(i)?.settings;
    Ok(match known.iter().position(|(k, _)| *k == h) {
        Some(k) => k,
        None => {
            known.push((h, load_settings(store, &h)?));
            known.len() - 1
        }
    })
}

/// The training samples of iteration `j`'s stored games, in game order (read through their
/// addresses, so a changed byte is named), replayed in parallel.
fn window_samples<G: Abilities, L: Learner<G>>(
    g: &G,
    store: &Store,
    records: &mut Chain<'_>,
    j: u32,
    ctx: LearnerContext<'_>,
) -> Result<Vec<L::Sample>, RunError> {
    let games = super::retention::stored_games(store, records.get(j)?)?;
    let per_game: Vec<Vec<L::Sample>> = par::try_map(games.len(), |k| -> Result<_, RunError> {
        let rec = &games[k];
        let states = rec.states(g)?;
        let mut out = Vec::new();
        L::samples(g, ctx, rec, &states, &mut out)?;
        Ok(out)
    })?;
    Ok(per_game.into_iter().flatten().collect())
}
