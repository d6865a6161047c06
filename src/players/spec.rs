//! The player spec grammar: what a user writes for a player, validated into a
//! [`PlayerSpec`].
//!
//! Spec syntax: `name[:key=value,...]`.
//! - `random`: uniform over the legal actions.
//! - `optimal`: the optimal player of docs/solver.md: declared the winner at once in a position
//!   of value 1, otherwise uniform among the actions within 1e-9 of the best. Needs a
//!   solvable variant; the solution is loaded from the store (solved and saved first if
//!   absent).
//! - `greedy[:mode=deterministic|stochastic]` (Chinese Checkers, docs/games.md): deterministic:
//!   largest forward gain Psi, ties toward the rearmost checker, then uniformly at random;
//!   stochastic: proportional to Psi over the moves with Psi > 0. With no forward move both
//!   take a move of smallest |Psi| (uniformly among those). `greedy-stochastic` is short for
//!   `greedy:mode=stochastic`.
//! - `mcts[:...]`: PUCT MCTS ([`crate::search::puct`]) for evaluation play: no root noise and
//!   the most visited move unless told otherwise. Keys: `sims` (800), `c` (c_puct, 1),
//!   `init` (loss|draw|win|first, loss), `alpha` (1.5), `eps` (0), `tau` (0), `sample_moves`
//!   (all|N, all), `eval` (rollout|uniform, rollout), `rollouts` (playouts per leaf, 1),
//!   `p_full` and `n_fast` (playout cap), `forced` (k of forced playouts), `prune`
//!   (true|false).
//! - `mcts-solver[:sims=N,c=X]`: MCTS-Solver ([`crate::search::mcts_solver`]), `sims` 1000,
//!   `c` 1.
//! - `model:RUN@I[,sims=N]`: a trained model from the store (a run's id, name or hash prefix
//!   and an iteration): its greedy policy, or the PUCT search of `sims` simulations it guides.
//!
//! The canonical text of a spec ([`PlayerSpec`]'s `Display`) spells out every key, so a
//! recorded game re-plays with the same settings even if defaults change.

use std::fmt;
use std::str::FromStr;

use super::PlayerError;
use crate::search::{ForcedPlayouts, InitQ, PlayoutCap, SearchConfig, SolverConfig};

/// Every player name, for error messages.
pub const PLAYER_NAMES: &str =
    "random, optimal, greedy, greedy-stochastic, mcts, mcts-solver, model:RUN@I[,sims=N]";

const MCTS_KEYS: &str =
    "sims, c, init, alpha, eps, tau, sample_moves, eval, rollouts, p_full, n_fast, forced, prune";

/// The leaf evaluator of an MCTS player.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EvalSpec {
    Uniform,
    /// Random playouts per leaf.
    Rollout(u32),
}

/// Greedy player flavours (Chinese Checkers).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GreedyMode {
    Deterministic,
    Stochastic,
}

/// A validated player spec, not yet tied to a game.
#[derive(Clone, Debug, PartialEq)]
pub enum PlayerSpec {
    Random,
    Optimal,
    Greedy(GreedyMode),
    Mcts {
        config: SearchConfig,
        eval: EvalSpec,
    },
    MctsSolver(SolverConfig),
    /// A trained model from the store: run (id, name or hash prefix), iteration, and the
    /// simulations of a PUCT search it guides (`None`: its greedy policy, no search).
    Model {
        run: String,
        iteration: u32,
        sims: Option<u32>,
    },
}

impl PlayerSpec {
    /// The MCTS player's defaults: evaluation play (no noise, most visited), 800 simulations,
    /// one random rollout per leaf.
    pub fn mcts_default() -> PlayerSpec {
        PlayerSpec::Mcts {
            config: SearchConfig::evaluation(800),
            eval: EvalSpec::Rollout(1),
        }
    }
}

fn bad(spec: &str, reason: impl Into<String>) -> PlayerError {
    PlayerError::BadSpec {
        spec: spec.to_string(),
        reason: reason.into(),
    }
}

fn num<T: FromStr>(spec: &str, key: &str, v: &str, allowed: &str) -> Result<T, PlayerError> {
    v.parse().map_err(|_| {
        bad(
            spec,
            format!("{key}={v} is not allowed; allowed: {allowed}"),
        )
    })
}

impl FromStr for PlayerSpec {
    type Err = PlayerError;

    fn from_str(text: &str) -> Result<PlayerSpec, PlayerError> {
        let text = text.trim();
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n.trim().to_ascii_lowercase(), r.trim()),
            None => (text.to_ascii_lowercase(), ""),
        };
        if name == "model" {
            // model:RUN@I[,sims=N]: the first comma-separated part is RUN@I.
            let (head, rest) = match rest.split_once(',') {
                Some((h, r)) => (h.trim(), r),
                None => (rest, ""),
            };
            let Some((run, it)) = head.rsplit_once('@') else {
                return Err(bad(text, "give model:RUN@I (a run and an iteration)"));
            };
            let iteration = num(text, "@", it.trim(), "an iteration number >= 0")?;
            let mut sims = None;
            for part in rest.split(',').filter(|p| !p.trim().is_empty()) {
                match part.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                    Some(("sims", v)) => {
                        let n: u32 = num(text, "sims", v, "an integer >= 1")?;
                        if n == 0 {
                            return Err(bad(text, "sims=0 is not allowed; allowed: >= 1"));
                        }
                        sims = Some(n);
                    }
                    _ => {
                        return Err(bad(text, format!("`{part}`: allowed: sims=N")));
                    }
                }
            }
            if run.trim().is_empty() {
                return Err(bad(text, "give model:RUN@I (a run and an iteration)"));
            }
            return Ok(PlayerSpec::Model {
                run: run.trim().to_string(),
                iteration,
                sims,
            });
        }
        let mut pairs = Vec::new();
        if !rest.is_empty() {
            for part in rest.split(',') {
                let Some((k, v)) = part.split_once('=') else {
                    return Err(bad(text, format!("`{part}` is not of the form key=value")));
                };
                let k = k.trim().to_ascii_lowercase();
                if pairs.iter().any(|(seen, _): &(String, String)| *seen == k) {
                    return Err(bad(text, format!("key `{k}` given twice")));
                }
                pairs.push((k, v.trim().to_string()));
            }
        }
        let no_keys = |pairs: &[(String, String)]| match pairs.first() {
            Some((k, _)) => Err(bad(
                text,
                format!("unknown key `{k}`; `{name}` takes no keys"),
            )),
            None => Ok(()),
        };
        match name.as_str() {
            "random" => no_keys(&pairs).map(|_| PlayerSpec::Random),
            "optimal" => no_keys(&pairs).map(|_| PlayerSpec::Optimal),
            "greedy-stochastic" => {
                no_keys(&pairs).map(|_| PlayerSpec::Greedy(GreedyMode::Stochastic))
            }
            "greedy" => {
                let mut mode = GreedyMode::Deterministic;
                for (k, v) in &pairs {
                    match (k.as_str(), v.as_str()) {
                        ("mode", "deterministic") => mode = GreedyMode::Deterministic,
                        ("mode", "stochastic") => mode = GreedyMode::Stochastic,
                        ("mode", v) => {
                            return Err(bad(
                                text,
                                format!(
                                    "mode={v} is not allowed; allowed: deterministic, stochastic"
                                ),
                            ));
                        }
                        (k, _) => {
                            return Err(bad(text, format!("unknown key `{k}`; allowed: mode")));
                        }
                    }
                }
                Ok(PlayerSpec::Greedy(mode))
            }
            "mcts" => parse_mcts(text, &pairs),
            "mcts-solver" => {
                let mut cfg = SolverConfig::default();
                for (k, v) in &pairs {
                    match k.as_str() {
                        "sims" => {
                            cfg.simulations = num(text, k, v, "an integer >= 1")?;
                            if cfg.simulations == 0 {
                                return Err(bad(
                                    text,
                                    "sims=0 is not allowed; allowed: an integer >= 1",
                                ));
                            }
                        }
                        "c" => {
                            cfg.uct_c = num(text, k, v, "a finite number >= 0")?;
                            if !(cfg.uct_c.is_finite() && cfg.uct_c >= 0.0) {
                                return Err(bad(
                                    text,
                                    format!("c={v} is not allowed; allowed: a finite number >= 0"),
                                ));
                            }
                        }
                        _ => return Err(bad(text, format!("unknown key `{k}`; allowed: sims, c"))),
                    }
                }
                Ok(PlayerSpec::MctsSolver(cfg))
            }
            _ => Err(bad(
                text,
                format!("unknown player `{name}`; allowed: {PLAYER_NAMES}"),
            )),
        }
    }
}

fn parse_mcts(text: &str, pairs: &[(String, String)]) -> Result<PlayerSpec, PlayerError> {
    let PlayerSpec::Mcts {
        mut config,
        mut eval,
    } = PlayerSpec::mcts_default()
    else {
        unreachable!()
    };
    let mut p_full = None;
    let mut n_fast = None;
    let mut rollouts = None;
    for (k, v) in pairs {
        let number = "a number";
        match k.as_str() {
            "sims" => config.simulations = num(text, k, v, "an integer >= 1")?,
            "c" => config.c_puct = num(text, k, v, number)?,
            "init" => {
                config.init_q = InitQ::parse(v).ok_or_else(|| {
                    bad(
                        text,
                        format!("init={v} is not allowed; allowed: {}", InitQ::NAMES),
                    )
                })?
            }
            "alpha" => config.dirichlet_alpha = num(text, k, v, number)?,
            "eps" => config.dirichlet_epsilon = num(text, k, v, number)?,
            "tau" => config.temperature = num(text, k, v, number)?,
            "sample_moves" => {
                config.sample_moves = if v == "all" {
                    None
                } else {
                    Some(num(text, k, v, "all or an integer >= 0")?)
                }
            }
            "eval" => {
                eval = match v.as_str() {
                    "uniform" => EvalSpec::Uniform,
                    "rollout" => EvalSpec::Rollout(1),
                    _ => {
                        return Err(bad(
                            text,
                            format!("eval={v} is not allowed; allowed: rollout, uniform"),
                        ));
                    }
                }
            }
            "rollouts" => rollouts = Some(num::<u32>(text, k, v, "an integer >= 1")?),
            "p_full" => p_full = Some(num::<f64>(text, k, v, number)?),
            "n_fast" => n_fast = Some(num::<u32>(text, k, v, "an integer >= 1")?),
            "forced" => {
                config.forced_playouts = Some(ForcedPlayouts {
                    k: num(text, k, v, number)?,
                })
            }
            "prune" => config.policy_target_pruning = num(text, k, v, "true, false")?,
            _ => {
                return Err(bad(
                    text,
                    format!("unknown key `{k}`; allowed: {MCTS_KEYS}"),
                ));
            }
        }
    }
    match (p_full, n_fast) {
        (None, None) => {}
        (p, Some(n)) => {
            config.playout_cap = Some(PlayoutCap {
                p_full: p.unwrap_or(0.25),
                n_fast: n,
            })
        }
        (Some(_), None) => {
            return Err(bad(
                text,
                "p_full needs n_fast (the fast search's simulations)",
            ));
        }
    }
    if let Some(r) = rollouts {
        match eval {
            EvalSpec::Rollout(_) if r >= 1 => eval = EvalSpec::Rollout(r),
            EvalSpec::Rollout(_) => {
                return Err(bad(
                    text,
                    "rollouts=0 is not allowed; allowed: an integer >= 1",
                ));
            }
            EvalSpec::Uniform => return Err(bad(text, "rollouts applies only to eval=rollout")),
        }
    }
    config.validate().map_err(|e| {
        let key = match e.key {
            "simulations" => "sims",
            "c_puct" => "c",
            "dirichlet_alpha" => "alpha",
            "dirichlet_epsilon" => "eps",
            "temperature" => "tau",
            "playout_cap.p_full" => "p_full",
            "playout_cap.n_fast" => "n_fast",
            "forced_playouts.k" => "forced",
            "policy_target_pruning" => "prune",
            other => other,
        };
        bad(
            text,
            format!("{key}={} is out of range; allowed: {}", e.value, e.allowed),
        )
    })?;
    Ok(PlayerSpec::Mcts { config, eval })
}

impl fmt::Display for PlayerSpec {
    /// The canonical text: every key spelled out, parsed back to an equal spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlayerSpec::Random => f.write_str("random"),
            PlayerSpec::Optimal => f.write_str("optimal"),
            PlayerSpec::Greedy(GreedyMode::Deterministic) => f.write_str("greedy"),
            PlayerSpec::Greedy(GreedyMode::Stochastic) => f.write_str("greedy:mode=stochastic"),
            PlayerSpec::MctsSolver(c) => {
                write!(f, "mcts-solver:sims={},c={}", c.simulations, c.uct_c)
            }
            PlayerSpec::Model {
                run,
                iteration,
                sims,
            } => {
                write!(f, "model:{run}@{iteration}")?;
                if let Some(n) = sims {
                    write!(f, ",sims={n}")?;
                }
                Ok(())
            }
            PlayerSpec::Mcts { config: c, eval } => {
                write!(
                    f,
                    "mcts:sims={},c={},init={},alpha={},eps={},tau={},sample_moves=",
                    c.simulations,
                    c.c_puct,
                    c.init_q.name(),
                    c.dirichlet_alpha,
                    c.dirichlet_epsilon,
                    c.temperature
                )?;
                match c.sample_moves {
                    None => f.write_str("all")?,
                    Some(k) => write!(f, "{k}")?,
                }
                match eval {
                    EvalSpec::Uniform => f.write_str(",eval=uniform")?,
                    EvalSpec::Rollout(r) => write!(f, ",eval=rollout,rollouts={r}")?,
                }
                if let Some(pc) = c.playout_cap {
                    write!(f, ",p_full={},n_fast={}", pc.p_full, pc.n_fast)?;
                }
                if let Some(fp) = c.forced_playouts {
                    write!(f, ",forced={}", fp.k)?;
                }
                if c.policy_target_pruning {
                    f.write_str(",prune=true")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_canonically() {
        for text in [
            "random",
            "optimal",
            "greedy",
            "greedy:mode=stochastic",
            "mcts-solver:sims=8000,c=1",
            "mcts:sims=800,c=1,init=loss,alpha=1.5,eps=0,tau=0,sample_moves=all,eval=rollout,rollouts=1",
            "mcts:sims=50,c=0.5,init=first,alpha=0.3,eps=0.25,tau=1,sample_moves=4,eval=uniform,p_full=0.25,n_fast=10,forced=2,prune=true",
        ] {
            let spec: PlayerSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
        }
        let spec: PlayerSpec = "mcts:sims=800,c=1,init=draw".parse().unwrap();
        let PlayerSpec::Mcts { config, eval } = &spec else {
            panic!()
        };
        assert_eq!(config.init_q, InitQ::Draw);
        assert_eq!(config.dirichlet_epsilon, 0.0);
        assert_eq!(*eval, EvalSpec::Rollout(1));
        assert_eq!(spec.to_string().parse::<PlayerSpec>().unwrap(), spec);
        assert_eq!(
            "greedy-stochastic".parse::<PlayerSpec>().unwrap(),
            PlayerSpec::Greedy(GreedyMode::Stochastic)
        );
    }

    #[test]
    fn bad_specs_name_the_bad_part_and_the_allowed_ones() {
        for (text, needles) in [
            ("alphazero", &["alphazero", "mcts-solver"][..]),
            ("mcts:simz=8", &["simz", "sims"]),
            ("mcts:init=maybe", &["maybe", "loss, draw, win, first"]),
            ("mcts:sims=0", &["sims", ">= 2"]),
            ("mcts:c=-1", &["c=-1", ">= 0"]),
            ("mcts:eps=2", &["eps", "[0, 1]"]),
            ("mcts:n_fast=900", &["n_fast", "below"]),
            ("mcts:sims=ten", &["sims=ten", "integer"]),
            ("mcts:prune=true", &["prune", "forced"]),
            ("mcts-solver:sims=0", &["sims=0"]),
            ("random:x=1", &["`x`"]),
            ("greedy:mode=lazy", &["lazy", "stochastic"]),
            ("mcts:sims", &["sims", "key=value"]),
        ] {
            let e = text.parse::<PlayerSpec>().unwrap_err().to_string();
            for n in needles {
                assert!(e.contains(n), "`{text}`: {e}");
            }
        }
    }
}
