//! Branch a run at an iteration with changed settings (its overrides: docs/experiments.md,
//! "Overrides").
//!
//! `branch RUN --at I --set key=value ... [--seed S]` makes a run whose record names its
//! parent (run, I, the parent's iteration record at I, the canonical overrides). Its runs row
//! starts at `iterations_done = I` with the parent's iteration record as head: the first I
//! iterations are the parent's records and rows (shared, not copied; `run_lineage` and
//! `run_iterations` in `schema/0004_lifecycle.sql` show them). It continues from the parent's
//! model at I. The model's initial parameters and the evaluation streams keep the root run's
//! seed (the model is the same model); self-play uses the branch's seed.
//!
//! Iteration records carry the run's *line*: its run record with `parent` left out (for a
//! root run, the run record itself). So a branch with no overrides and the parent's seed
//! produces the parent's records, and its head equals the parent's.
//!
//! The branch's seed, unless given, is pinned as the first `u64` of the stream
//! `branch(I,O)` of the parent's seed, where `O` is the canonical overrides (each
//! `key=<JSON value>`, sorted by key) joined by `;` ([`branch_seed`]).
//!
//! The overrides are read, judged and applied by the one overrides engine (runs/overrides.rs,
//! at [`Place::Branch`](super::overrides::Place)): settings that cannot change mid-run are
//! refused with the reason: `variant` (the model's positions and actions belong to it),
//! `learner.kind`, `seed` (use `--seed`), and the settings the learner declares fixed
//! ([`crate::learners::LearnerKind::fixed_settings`]: tabular AlphaZero's `init_std`, the
//! network's architecture and optimiser).

use rand_core::Rng;

use super::overrides::apply_overrides;
use super::records::Parent;
use super::{RunConfig, RunError, RunRecord, chain, find, line_of, load_config, settings_record};
use crate::store::{NewRun, ObjectHash, RunStatus, Store, address};

/// The pinned seed of a branch (see the module docs).
pub fn branch_seed(parent_seed: u64, at: u32, canonical_overrides: &[String]) -> u64 {
    crate::rng::stream_fmt(
        parent_seed,
        format_args!("branch({at},{})", canonical_overrides.join(";")),
    )
    .next_u64()
}

/// A branch's automatic name: the parent's name, `+` and its overrides as `key=value` (keys
/// shortened to their last part where that is unambiguous, values as given: the branch's,
/// not the parent's), then `@` and the branch point: `quick+init_q=draw,window=3@50`;
/// `PARENT@I` with no overrides. `seed` is the seed given with `--seed`, if any. The store
/// numbers a name already taken (`-2`, `-3`, ...).
pub fn branch_name(parent: &str, at: u32, canonical: &[String], seed: Option<u64>) -> String {
    let mut pairs: Vec<(&str, String)> = canonical
        .iter()
        .filter_map(|c| c.split_once('='))
        .filter(|(k, _)| *k != "name")
        .map(|(k, v)| {
            let v = match serde_json::from_str::<serde_json::Value>(v) {
                Ok(serde_json::Value::String(s)) => s,
                _ => v.to_string(),
            };
            (k, v)
        })
        .collect();
    let seed = seed.map(|s| s.to_string());
    if let Some(s) = &seed {
        pairs.push(("seed", s.clone()));
    }
    let last = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
    let shown: Vec<String> = pairs
        .iter()
        .map(|(k, v)| {
            let short = last(k);
            let clash = pairs.iter().filter(|(o, _)| last(o) == short).count() > 1;
            format!("{}={v}", if clash { k.to_string() } else { short })
        })
        .collect();
    if shown.is_empty() {
        format!("{parent}@{at}")
    } else {
        format!("{parent}+{}@{at}", shown.join(","))
    }
}

/// Creates a branch of run `parent` at iteration `at` (see the module docs); returns its
/// run id, run hash and seed. Run it with [`resume`](fn@super::resume).
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
        annotations: Default::default(),
        keep_games: cfg.keep_games,
        name: match &o.name {
            Some(n) => n.clone(),
            None => store.unused_run_name(&branch_name(&row.name, at, &o.canonical, seed))?,
        },
        game: cfg.game.clone(),
        seed: seed.unwrap_or_else(|| branch_seed(record.seed, at, &o.canonical)),
        seed_drawn: false,
        iterations,
        settings: o.settings.clone(),
    };
    branch_cfg.validate()?;
    let records = chain(store, row.head)?;
    let Some(at_record) = records.get(at as usize - 1) else {
        return Err(RunError::Inconsistent(format!(
            "run {} ({}): its row says {} iterations done, but the chain from its head has {}; \
             `tabula fsck` names what disagrees",
            row.id,
            row.name,
            row.iterations_done,
            records.len()
        )));
    };
    let at_record = address(at_record)?.0;
    let settings_json = serde_json::to_string(&branch_cfg.settings).unwrap_or_default();
    let settings_record = settings_record(&branch_cfg.settings)?;
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
            annotations: Default::default(),
        })?;
        w.set_keep_games(id, &branch_cfg.keep_games.to_string())?;
        w.set_run_progress(id, at, Some(&at_record), RunStatus::Running)?;
        Ok((id, hash))
    })?;
    Ok((id, hash, branch_cfg.seed))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::runs::Settings;

    /// A small EWN run's settings: the base the branch and override tests change.
    pub(crate) fn settings() -> Settings {
        RunConfig::from_toml("variant = \"ewn:3x3x3\"\nseed = 1\niterations = 10\n", "t")
            .unwrap()
            .settings
    }

    /// A branch is named after its overrides' values (not the parent's) and its branch point.
    #[test]
    fn branch_names_carry_the_overrides_and_the_branch_point() {
        let s = settings();
        let o = apply_overrides(&s, &["search.init_q=loss".into(), "window=3".into()]).unwrap();
        assert_eq!(
            branch_name("init-q/init_q=draw/seed=1", 50, &o.canonical, None),
            "init-q/init_q=draw/seed=1+init_q=loss,window=3@50"
        );
        assert_eq!(branch_name("quick", 7, &[], None), "quick@7");
        assert_eq!(branch_name("quick", 7, &[], Some(5)), "quick+seed=5@7");
        // Two keys with one last part keep their whole key; a label override is no part.
        let o = apply_overrides(
            &s,
            &[
                "search.temperature=0.5".into(),
                "name=x".into(),
                "iterations=20".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            branch_name("p", 3, &o.canonical, None),
            "p+iterations=20,temperature=0.5@3"
        );
        let clash = ["a.init_q=\"win\"".to_string(), "b.init_q=1".to_string()];
        assert_eq!(
            branch_name("p", 1, &clash, None),
            "p+a.init_q=win,b.init_q=1@1"
        );
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
}
