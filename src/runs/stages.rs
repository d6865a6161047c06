//! Stages (`[[stage]]`): a run in consecutive stages, each the run's settings with its own
//! overrides, such as Liu et al.'s heuristic pre-training then MCTS self-play
//! (docs/checkers.md, docs/learners.md "Stages").
//!
//! ```toml
//! [[stage]]
//! name = "heuristic"
//! iterations = 100
//! set = { "selfplay.mover" = "greedy", "learner.network.weight_decay" = 1e-4 }
//!
//! [[stage]]
//! name = "mcts"
//! iterations = 50
//! set = { "learner.network.weight_decay" = 5e-3 }
//! ```
//!
//! - Stage k covers the `iterations` after the earlier stages'; the last stage also every
//!   iteration beyond (so a longer run, or a branch that plans more, extends it).
//! - A stage's settings are the run's with its `set` applied by the one overrides engine
//!   (runs/overrides.rs, at [`Place::Stage`]), as `tabula branch --set` applies overrides:
//!   the same reader, values and refusal table (the variant, the learner and the settings it
//!   declares fixed cannot change mid-run; nor, in a stage, `iterations`, `name` or `seed`).
//!   They are stored in the overrides' canonical form (`key=<JSON>`, sorted by key), so the
//!   settings hash is the same however the spec wrote them.
//! - Each iteration record names the settings *in force*, the stage's own (with no stages),
//!   as a branch's iterations name the branch's: restore, verify, checkout and replay read
//!   them from there.
//! - The driver crosses a stage boundary the way a resumed run starts: it rebuilds the model,
//!   the training window and the start policy from the store under the next stage's settings
//!   (runs/execute.rs). So an interrupted run resumes to the same head wherever it stopped.

use serde::{Deserialize, Serialize};

use super::overrides::{Place, apply_at};
use super::{RunConfig, RunError, Settings};

/// One stage of a run (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// A label (shown by `show`; part of the settings, like everything else of a stage).
    pub name: String,
    /// Iterations of this stage (the last stage: at least; it runs to the run's end).
    pub iterations: u32,
    /// The overrides, canonical: `key=<JSON value>`, sorted by key.
    pub set: Vec<String>,
}

/// A stage as a spec writes it: `set` a table of keys (dotted, or nested tables) and values.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStage {
    name: Option<String>,
    iterations: u32,
    #[serde(default)]
    set: toml::Table,
}

impl RawStage {
    pub(crate) fn iterations(&self) -> u32 {
        self.iterations
    }
}

/// `table`'s leaves as `key=value` override texts (nested tables joined with dots).
fn override_texts(prefix: &str, table: &toml::Table, out: &mut Vec<String>) {
    for (k, v) in table {
        let key = match prefix {
            "" => k.clone(),
            p => format!("{p}.{k}"),
        };
        match v {
            toml::Value::Table(t) => override_texts(&key, t, out),
            v => out.push(format!("{key}={v}")),
        }
    }
}

/// The stages of a spec in canonical form against the run's settings `base` (with no
/// stages), each stage's overrides judged at [`Place::Stage`] (the settings in
/// force are validated with the run: `RunConfig::validate`).
pub(crate) fn stages_of(raw: Vec<RawStage>, base: &Settings) -> Result<Vec<Stage>, String> {
    let mut stages = Vec::with_capacity(raw.len());
    for (k, r) in raw.into_iter().enumerate() {
        let name = r.name.unwrap_or_else(|| format!("stage {}", k + 1));
        let at = format!("[[stage]] {} (`{name}`)", k + 1);
        if r.iterations == 0 {
            return Err(format!("{at}: iterations = 0; allowed: an integer >= 1"));
        }
        let mut texts = Vec::new();
        override_texts("", &r.set, &mut texts);
        let o = apply_at(Place::Stage, base, &texts).map_err(|e| format!("{at}: {}", plain(e)))?;
        stages.push(Stage {
            name,
            iterations: r.iterations,
            set: o.canonical,
        });
    }
    Ok(stages)
}

/// An override error without the `--` of the command line (`set key=value: why`).
fn plain(e: RunError) -> String {
    let text = e.to_string();
    text.strip_prefix("--").map_or(text.clone(), str::to_string)
}

/// Where a stage's error is: `[[stage]] 2 (`mcts`)`.
pub(crate) fn stage_label(k: usize, stage: &Stage) -> String {
    format!("[[stage]] {} (`{}`)", k + 1, stage.name)
}

impl Settings {
    /// The index of iteration `i`'s stage and its last iteration (`u32::MAX` for the last
    /// stage); `None` without stages.
    pub(crate) fn stage_of(&self, i: u32) -> Option<(usize, u32)> {
        let n = self.stages.len();
        let mut end = 0u32;
        for (k, s) in self.stages.iter().enumerate() {
            end = end.saturating_add(s.iterations);
            if k + 1 == n {
                return Some((k, u32::MAX));
            }
            if i <= end {
                return Some((k, end));
            }
        }
        None
    }

    /// The settings in force at iteration `i`: the run's own without stages, else its
    /// stage's (the run's with the stage's overrides, and no stages).
    pub(crate) fn in_force(&self, i: u32) -> Result<Settings, RunError> {
        let Some((k, _)) = self.stage_of(i) else {
            return Ok(self.clone());
        };
        let mut base = self.clone();
        base.stages.clear();
        Ok(apply_at(Place::Stage, &base, &self.stages[k].set)?.settings)
    }
}

impl Settings {
    /// The settings in force in each stage, in order (the run's own without stages).
    pub(crate) fn each_in_force(&self) -> Result<Vec<Settings>, RunError> {
        if self.stages.is_empty() {
            return Ok(vec![self.clone()]);
        }
        let mut first = 1u32;
        let mut all = Vec::with_capacity(self.stages.len());
        for s in &self.stages {
            all.push(self.in_force(first)?);
            first = first.saturating_add(s.iterations);
        }
        Ok(all)
    }
}

impl RunConfig {
    /// This configuration with the settings in force at iteration `i` ([`Settings::in_force`]).
    pub(crate) fn in_force(&self, i: u32) -> Result<RunConfig, RunError> {
        Ok(RunConfig {
            settings: self.settings.in_force(i)?,
            ..self.clone()
        })
    }

    /// The last iteration of iteration `i`'s stage, at most the run's last.
    pub(crate) fn stage_end(&self, i: u32) -> u32 {
        self.settings
            .stage_of(i)
            .map_or(self.iterations, |(_, end)| end.min(self.iterations))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selfplay::Mover;

    const BASE: &str = r#"
variant = "checkers:5x5-3"
seed = 1
games_per_iteration = 4
[eval]
wr_p = false
errors = false
[learner]
kind = "network"
"#;

    fn parse(stages: &str) -> Result<RunConfig, String> {
        RunConfig::from_toml(&format!("{BASE}{stages}"), "t").map_err(|e| e.to_string())
    }

    #[test]
    fn stages_resolve_per_iteration_and_hash_however_written() {
        let dotted = parse(
            r#"
[[stage]]
name = "a"
iterations = 2
set = { "selfplay.mover" = "greedy", "learner.network.weight_decay" = 1e-3 }
[[stage]]
iterations = 1
"#,
        )
        .unwrap();
        let nested = parse(
            r#"
[[stage]]
name = "a"
iterations = 2
set = { learner = { network = { weight_decay = 0.001 } }, selfplay = { mover = "greedy" } }
[[stage]]
iterations = 1
"#,
        )
        .unwrap();
        assert_eq!(dotted.iterations, 3, "N defaults to the stages' sum");
        assert_eq!(dotted.settings, nested.settings);
        let s = &dotted.settings;
        assert_eq!(s.stages[1].name, "stage 2");
        assert_eq!(
            s.stages[0].set,
            [
                "learner.network.weight_decay=0.001",
                "selfplay.mover=\"greedy\""
            ]
        );
        assert_eq!(s.stage_of(2), Some((0, 2)));
        assert_eq!(s.stage_of(3), Some((1, u32::MAX)));
        assert_eq!(
            s.stage_of(99),
            Some((1, u32::MAX)),
            "the last stage runs on"
        );
        let (one, three) = (s.in_force(1).unwrap(), s.in_force(3).unwrap());
        assert_eq!(one.selfplay.mover, Mover::Greedy);
        assert_eq!(three.selfplay.mover, Mover::Search);
        assert!(one.stages.is_empty() && three.stages.is_empty());
        let mut base = s.clone();
        base.stages.clear();
        assert_eq!(
            three, base,
            "a stage with no overrides is the run's settings"
        );
        assert_eq!(dotted.stage_end(1), 2);
        assert_eq!(dotted.stage_end(3), 3);
    }

    #[test]
    fn bad_stages_are_refused_naming_the_stage_and_key() {
        let cases = [
            (
                "[[stage]]\niterations = 0\n[[stage]]\niterations = 1\n",
                "[[stage]] 1 (`stage 1`): iterations = 0",
            ),
            (
                "[[stage]]\nname = \"x\"\niterations = 1\nset = { \"search.nope\" = 1 }\n",
                "[[stage]] 1 (`x`): set search.nope=1: no setting `search.nope`",
            ),
            (
                "[[stage]]\niterations = 1\nset = { \"learner.network.blocks\" = 3 }\n",
                "learner.network.blocks cannot change mid-run",
            ),
            (
                "[[stage]]\niterations = 1\nset = { iterations = 3 }\n",
                "a stage's length is its own `iterations`",
            ),
            (
                "[[stage]]\niterations = 1\nset = { \"search.simulations\" = 0 }\n",
                "[[stage]] 1 (`stage 1`): `search.simulations`",
            ),
        ];
        for (text, wanted) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.contains(wanted), "{text}: {e}");
        }
        // Every stage runs at least one iteration.
        let text =
            format!("iterations = 2\n{BASE}[[stage]]\niterations = 2\n[[stage]]\niterations = 1\n");
        let e = RunConfig::from_toml(&text, "t").unwrap_err().to_string();
        assert!(
            e.contains("`iterations` = 2") && e.contains("more than 2"),
            "{e}"
        );
        // The greedy opponent needs a greedy heuristic.
        let e = RunConfig::from_toml(
            "variant = \"ewn:3x3x3\"\niterations = 1\n[selfplay]\nopponent = \"greedy\"\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`selfplay.opponent`") && e.contains("ewn:3x3x3") && e.contains("greedy"),
            "{e}"
        );
        // The soft limit needs a race; its margin needs it.
        for (extra, wanted) in [
            ("soft_limit = 100\n", "`selfplay.soft_limit`"),
            ("soft_limit = 0\n", "`selfplay.soft_limit`"),
            ("distance_margin = 3\n", "`selfplay.distance_margin`"),
        ] {
            let text = format!("variant = \"ewn:3x3x3\"\niterations = 1\n[selfplay]\n{extra}");
            let e = RunConfig::from_toml(&text, "t").unwrap_err().to_string();
            assert!(e.contains(wanted), "{extra}: {e}");
        }
        // The greedy mover needs a greedy heuristic.
        let e = RunConfig::from_toml(
            "variant = \"ewn:3x3x3\"\niterations = 1\n[selfplay]\nmover = \"greedy\"\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`selfplay.mover`") && e.contains("greedy heuristic"),
            "{e}"
        );
    }
}
