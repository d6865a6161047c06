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
//!   (true|false), `chance` (sample|proportional, sample: how a chance node below the root
//!   picks its outcome).
//! - `mcts-solver[:sims=N,c=X]`: MCTS-Solver ([`crate::search::mcts_solver`]), `sims` 1000,
//!   `c` 1.
//! - `model:RUN@I[,sims=N][,tree=rules]`: a trained model from the store (a run's id, name or
//!   hash prefix and an iteration): its greedy policy, or the PUCT search of `sims`
//!   simulations it guides (`tree=rules`: over the game's rules even for a learner that
//!   searches its own model, MuZero).
//! - `gtp:COMMAND` (Go only): any GTP engine, started as `sh -c "exec COMMAND"` for each game
//!   (e.g. `gtp:gnugo --mode gtp --level 1`); everything after `gtp:` is the command, commas
//!   and `=` included ([`crate::players::gtp`], docs/gtp.md).
//!
//! The canonical text of a spec ([`PlayerSpec`]'s `Display`) spells out every key, so a
//! recorded game re-plays with the same settings even if defaults change.

use std::fmt;
use std::str::FromStr;

use super::PlayerError;
use crate::search::{
    ChanceRule, ForcedPlayouts, InitQ, PlayoutCap, SearchConfig, SearchConfigError, SolverConfig,
};

/// Every player name, for error messages.
pub const PLAYER_NAMES: &str = "random, optimal, greedy, greedy-stochastic, mcts, mcts-solver, \
     model:RUN@I[,sims=N][,tree=rules], gtp:COMMAND";

/// The leaf evaluator of an MCTS player.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EvalSpec {
    Uniform,
    /// Random playouts per leaf.
    Rollout(u32),
}

/// Greedy player flavours (Chinese Checkers).
pub use crate::games::GreedyMode;

/// A validated player spec, not yet tied to a game.
// The search variants carry a whole `SearchConfig` (a progressive simulations schedule makes
// it 248 bytes); a spec is parsed once per command and never held in bulk, so boxing it
// would buy nothing.
#[allow(clippy::large_enum_variant)]
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
        /// `tree=rules`: the search runs over the game's rules with the model at its leaves
        /// even where the learner searches a model of its own (MuZero's learned dynamics,
        /// docs/muzero.md); false (`tree=model`, the default): the learner's own search.
        rules: bool,
    },
    /// A GTP engine, started by this command line for each game (Go only).
    Gtp {
        command: String,
    },
}

impl PlayerSpec {}

/// The error of a refused `spec`, with why.
fn bad(spec: &str, reason: impl Into<String>) -> PlayerError {
    PlayerError::BadSpec {
        spec: spec.to_string(),
        reason: reason.into(),
    }
}

/// Why a key's value was refused.
enum Refused {
    /// The value is not one of these: the message repeats `key=value` as written.
    Allowed(&'static str),
    /// A message of its own.
    Reason(&'static str),
}

impl Refused {
    /// The reason shown after the spec, for `key=value` as written.
    fn message(self, key: &str, value: &str) -> String {
        match self {
            Refused::Allowed(allowed) => {
                format!("{key}={value} is not allowed; allowed: {allowed}")
            }
            Refused::Reason(reason) => reason.to_string(),
        }
    }
}

/// `value` parsed as a `T`, or refused with the `allowed` values.
fn parse<T: FromStr>(value: &str, allowed: &'static str) -> Result<T, Refused> {
    value.parse().map_err(|_| Refused::Allowed(allowed))
}

/// One key of a player's `key=value` list, spelled once for both directions: [`FromStr`]
/// finds it by `short` and calls `set`, [`fmt::Display`] writes `short=show(..)` for every
/// key of the table in order. `T` is what one player's keys fill in.
struct Key<T> {
    /// The key as specs spell it (`sims`, `c`, `init`, ...).
    short: &'static str,
    /// The settings field it sets: for `mcts:` keys the [`SearchConfig`] field as the run
    /// spec's TOML and [`crate::search::SearchConfigError`] name it (`simulations`, `c_puct`,
    /// `playout_cap.n_fast`, ...); `None` for a setting of the player itself.
    field: Option<&'static str>,
    /// Reads the value text into `T`.
    set: fn(&mut T, &str) -> Result<(), Refused>,
    /// The canonical value text of a finished `T`; `None` leaves the key out (a setting the
    /// spec does not use, such as `rollouts` with `eval=uniform`).
    show: fn(&T) -> Option<String>,
}

/// The names of a table's keys, in order, for error messages.
fn key_names<T>(table: &[Key<T>]) -> String {
    let names: Vec<&str> = table.iter().map(|k| k.short).collect();
    names.join(", ")
}

/// Reads `pairs` into `target` through `table`. A key not in the table is refused, naming the
/// table's keys (or, for a player without keys, the player).
fn read_keys<T>(
    text: &str,
    name: &str,
    table: &[Key<T>],
    target: &mut T,
    pairs: &[(String, String)],
) -> Result<(), PlayerError> {
    for (k, v) in pairs {
        let Some(key) = table.iter().find(|key| key.short == k) else {
            let reason = if table.is_empty() {
                format!("unknown key `{k}`; `{name}` takes no keys")
            } else {
                format!("unknown key `{k}`; allowed: {}", key_names(table))
            };
            return Err(bad(text, reason));
        };
        (key.set)(target, v).map_err(|r| bad(text, r.message(k, v)))?;
    }
    Ok(())
}

/// Writes `name` and, after a colon, `short=value` for every key of `table` that `target`
/// shows, comma-separated.
fn write_keys<T>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    table: &[Key<T>],
    target: &T,
) -> fmt::Result {
    f.write_str(name)?;
    let mut separator = ':';
    for key in table {
        if let Some(value) = (key.show)(target) {
            write!(f, "{separator}{}={value}", key.short)?;
            separator = ',';
        }
    }
    Ok(())
}

/// An `mcts:` spec while its keys are read. The playout cap's two keys and `rollouts` depend
/// on each other or on `eval`, so their values wait here until every key is read
/// ([`Mcts::finish`]); `show` reads a finished spec's `config` and `eval`.
#[derive(Copy, Clone, Debug)]
struct Mcts {
    config: SearchConfig,
    eval: EvalSpec,
    p_full: Option<f64>,
    n_fast: Option<u32>,
    rollouts: Option<u32>,
}

const NUMBER: &str = "a number";

/// Every count a player spec takes (`sims`, `rollouts`, `n_fast`) is at most the run spec's
/// [`MAX_SIMULATIONS`](crate::runs::spec::MAX_SIMULATIONS), so a typo cannot start a search
/// that grows without end (0 is refused where it is read, as before).
const COUNT: &str = "an integer from 1 to 1000000";
const _: () = assert!(crate::runs::spec::MAX_SIMULATIONS == 1_000_000);

/// `value` as a count: an integer up to [`COUNT`]'s limit (0 is refused where it is read,
/// naming that key's own lower bound). Every other refusal names the range, whether the text
/// is no integer or too large for any integer type (`99999999999`).
fn count(value: &str) -> Result<u32, Refused> {
    match value.parse::<u32>() {
        Ok(n) if n <= crate::runs::spec::MAX_SIMULATIONS => Ok(n),
        _ => Err(Refused::Allowed(COUNT)),
    }
}

/// The iterations `model:RUN@I` may name (a run's iterations are `u32`s).
const ITERATION: &str = "an iteration from 0 to 4294967295";

/// The keys of `mcts:`, in the order of the canonical text.
const MCTS_KEYS: &[Key<Mcts>] = &[
    Key {
        short: "sims",
        field: Some("simulations"),
        set: |m, v| {
            m.config.simulations = count(v)?.into();
            Ok(())
        },
        show: |m| Some(m.config.simulations.first().to_string()),
    },
    Key {
        short: "c",
        field: Some("c_puct"),
        set: |m, v| {
            m.config.c_puct = parse(v, NUMBER)?;
            Ok(())
        },
        show: |m| Some(m.config.c_puct.to_string()),
    },
    Key {
        short: "init",
        field: Some("init_q"),
        set: |m, v| {
            m.config.init_q = InitQ::parse(v).ok_or(Refused::Allowed(InitQ::NAMES))?;
            Ok(())
        },
        show: |m| Some(m.config.init_q.name().to_string()),
    },
    Key {
        short: "alpha",
        field: Some("dirichlet_alpha"),
        set: |m, v| {
            m.config.dirichlet_alpha = parse(v, NUMBER)?;
            Ok(())
        },
        show: |m| Some(m.config.dirichlet_alpha.to_string()),
    },
    Key {
        short: "eps",
        field: Some("dirichlet_epsilon"),
        set: |m, v| {
            m.config.dirichlet_epsilon = parse(v, NUMBER)?;
            Ok(())
        },
        show: |m| Some(m.config.dirichlet_epsilon.to_string()),
    },
    Key {
        short: "tau",
        field: Some("temperature"),
        set: |m, v| {
            m.config.temperature = parse(v, NUMBER)?;
            Ok(())
        },
        show: |m| Some(m.config.temperature.to_string()),
    },
    Key {
        short: "sample_moves",
        field: Some("sample_moves"),
        set: |m, v| {
            m.config.sample_moves = match v {
                "all" => None,
                _ => Some(parse(v, "all or an integer >= 0")?),
            };
            Ok(())
        },
        show: |m| {
            Some(
                m.config
                    .sample_moves
                    .map_or_else(|| "all".into(), |k| k.to_string()),
            )
        },
    },
    Key {
        short: "chance",
        field: Some("chance"),
        set: |m, v| {
            m.config.chance = ChanceRule::parse(v).ok_or(Refused::Allowed(ChanceRule::NAMES))?;
            Ok(())
        },
        show: |m| (!m.config.chance.is_sample()).then(|| m.config.chance.name().to_string()),
    },
    Key {
        short: "eval",
        field: None,
        set: |m, v| {
            m.eval = match v {
                "uniform" => EvalSpec::Uniform,
                "rollout" => EvalSpec::Rollout(1),
                _ => return Err(Refused::Allowed("rollout, uniform")),
            };
            Ok(())
        },
        show: |m| {
            Some(match m.eval {
                EvalSpec::Uniform => "uniform".into(),
                EvalSpec::Rollout(_) => "rollout".into(),
            })
        },
    },
    Key {
        short: "rollouts",
        field: None,
        set: |m, v| {
            m.rollouts = Some(count(v)?);
            Ok(())
        },
        show: |m| match m.eval {
            EvalSpec::Rollout(r) => Some(r.to_string()),
            EvalSpec::Uniform => None,
        },
    },
    Key {
        short: "p_full",
        field: Some("playout_cap.p_full"),
        set: |m, v| {
            m.p_full = Some(parse(v, NUMBER)?);
            Ok(())
        },
        show: |m| m.config.playout_cap.map(|pc| pc.p_full.to_string()),
    },
    Key {
        short: "n_fast",
        field: Some("playout_cap.n_fast"),
        set: |m, v| {
            m.n_fast = Some(count(v)?);
            Ok(())
        },
        show: |m| m.config.playout_cap.map(|pc| pc.n_fast.to_string()),
    },
    Key {
        short: "forced",
        field: Some("forced_playouts.k"),
        set: |m, v| {
            let k = parse(v, NUMBER)?;
            m.config.forced_playouts = Some(ForcedPlayouts { k });
            Ok(())
        },
        show: |m| m.config.forced_playouts.map(|fp| fp.k.to_string()),
    },
    Key {
        short: "prune",
        field: Some("policy_target_pruning"),
        set: |m, v| {
            m.config.policy_target_pruning = parse(v, "true, false")?;
            Ok(())
        },
        show: |m| m.config.policy_target_pruning.then(|| "true".to_string()),
    },
];

impl Mcts {
    /// Before any key: evaluation play (no noise, most visited), 800 simulations, one random
    /// rollout per leaf.
    fn new() -> Mcts {
        Mcts {
            config: SearchConfig::evaluation(800),
            eval: EvalSpec::Rollout(1),
            p_full: None,
            n_fast: None,
            rollouts: None,
        }
    }

    /// A finished spec, for printing.
    fn of(config: SearchConfig, eval: EvalSpec) -> Mcts {
        Mcts {
            config,
            eval,
            ..Mcts::new()
        }
    }

    /// After every key: the playout cap (`p_full` defaults to KataGo's 0.25 but needs
    /// `n_fast`), the rollouts per leaf, then the config's validation with each key spelled
    /// as the spec spells it.
    fn finish(self, text: &str) -> Result<PlayerSpec, PlayerError> {
        let Mcts {
            mut config,
            mut eval,
            p_full,
            n_fast,
            rollouts,
        } = self;
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
                EvalSpec::Uniform => {
                    return Err(bad(text, "rollouts applies only to eval=rollout"));
                }
            }
        }
        config.validate().map_err(|SearchConfigError(e)| {
            let key = MCTS_KEYS
                .iter()
                .find(|k| k.field == Some(e.key.as_str()))
                .map_or(e.key.as_str(), |k| k.short);
            bad(
                text,
                format!("{key}={} is out of range; allowed: {}", e.value, e.allowed),
            )
        })?;
        Ok(PlayerSpec::Mcts { config, eval })
    }
}

/// The keys of `mcts-solver:`, in the order of the canonical text (both always written).
const SOLVER_KEYS: &[Key<SolverConfig>] = &[
    Key {
        short: "sims",
        field: Some("simulations"),
        set: |cfg, v| match count(v)? {
            0 => Err(Refused::Reason(
                "sims=0 is not allowed; allowed: an integer >= 1",
            )),
            n => {
                cfg.simulations = n;
                Ok(())
            }
        },
        show: |cfg| Some(cfg.simulations.to_string()),
    },
    Key {
        short: "c",
        field: Some("uct_c"),
        set: |cfg, v| {
            const FINITE: &str = "a finite number >= 0";
            match parse::<f64>(v, FINITE)? {
                c if c.is_finite() && c >= 0.0 => {
                    cfg.uct_c = c;
                    Ok(())
                }
                _ => Err(Refused::Allowed(FINITE)),
            }
        },
        show: |cfg| Some(cfg.uct_c.to_string()),
    },
];

/// The key of `greedy:`; `greedy` alone is the deterministic flavour.
const GREEDY_KEYS: &[Key<GreedyMode>] = &[Key {
    short: "mode",
    field: None,
    set: |mode, v| {
        *mode = match v {
            "deterministic" => GreedyMode::Deterministic,
            "stochastic" => GreedyMode::Stochastic,
            _ => return Err(Refused::Allowed("deterministic, stochastic")),
        };
        Ok(())
    },
    show: |mode| match mode {
        GreedyMode::Deterministic => None,
        GreedyMode::Stochastic => Some("stochastic".into()),
    },
}];

/// The players without keys.
const NO_KEYS: &[Key<()>] = &[];

impl FromStr for PlayerSpec {
    type Err = PlayerError;

    fn from_str(text: &str) -> Result<PlayerSpec, PlayerError> {
        let text = text.trim();
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n.trim().to_ascii_lowercase(), r.trim()),
            None => (text.to_ascii_lowercase(), ""),
        };
        if name == "model" {
            return parse_model(text, rest);
        }
        if name == "gtp" {
            if rest.is_empty() {
                return Err(bad(
                    text,
                    "give gtp:COMMAND, the engine's command line, e.g. gtp:gnugo --mode gtp",
                ));
            }
            return Ok(PlayerSpec::Gtp {
                command: rest.to_string(),
            });
        }
        let pairs = key_value_pairs(text, rest)?;
        let name = name.as_str();
        let no_keys = || read_keys(text, name, NO_KEYS, &mut (), &pairs);
        match name {
            "random" => no_keys().map(|_| PlayerSpec::Random),
            "optimal" => no_keys().map(|_| PlayerSpec::Optimal),
            "greedy-stochastic" => no_keys().map(|_| PlayerSpec::Greedy(GreedyMode::Stochastic)),
            "greedy" => {
                let mut mode = GreedyMode::Deterministic;
                read_keys(text, name, GREEDY_KEYS, &mut mode, &pairs)?;
                Ok(PlayerSpec::Greedy(mode))
            }
            "mcts" => {
                let mut mcts = Mcts::new();
                read_keys(text, name, MCTS_KEYS, &mut mcts, &pairs)?;
                mcts.finish(text)
            }
            "mcts-solver" => {
                let mut cfg = SolverConfig::default();
                read_keys(text, name, SOLVER_KEYS, &mut cfg, &pairs)?;
                Ok(PlayerSpec::MctsSolver(cfg))
            }
            _ => Err(bad(
                text,
                format!("unknown player `{name}`; allowed: {PLAYER_NAMES}"),
            )),
        }
    }
}

/// The `key=value` list after a player's name: keys trimmed and lower-cased, values trimmed,
/// each key at most once.
fn key_value_pairs(text: &str, rest: &str) -> Result<Vec<(String, String)>, PlayerError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    if rest.is_empty() {
        return Ok(pairs);
    }
    for part in rest.split(',') {
        let Some((k, v)) = part.split_once('=') else {
            return Err(bad(text, format!("`{part}` is not of the form key=value")));
        };
        let k = k.trim().to_ascii_lowercase();
        if pairs.iter().any(|(seen, _)| *seen == k) {
            return Err(bad(text, format!("key `{k}` given twice")));
        }
        pairs.push((k, v.trim().to_string()));
    }
    Ok(pairs)
}

/// `model:RUN@I[,sims=N]` (after `model:`): the first comma-separated part is RUN@I. A grammar
/// of its own: the run comes first, and `sims` is the only key.
fn parse_model(text: &str, rest: &str) -> Result<PlayerSpec, PlayerError> {
    let (head, rest) = match rest.split_once(',') {
        Some((h, r)) => (h.trim(), r),
        None => (rest, ""),
    };
    let Some((run, it)) = head.rsplit_once('@') else {
        return Err(bad(text, "give model:RUN@I (a run and an iteration)"));
    };
    let iteration =
        parse(it.trim(), ITERATION).map_err(|r| bad(text, r.message("@", it.trim())))?;
    let mut sims = None;
    let mut rules = false;
    for part in rest.split(',').filter(|p| !p.trim().is_empty()) {
        match part.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
            Some(("tree", "rules")) => rules = true,
            Some(("tree", "model")) => rules = false,
            Some(("tree", v)) => {
                return Err(bad(
                    text,
                    format!(
                        "tree={v}: allowed: model (the learner's own search: MuZero's in its \
                         learned model) or rules (a search over the game's rules with the \
                         model at the leaves)"
                    ),
                ));
            }
            Some(("sims", v)) => {
                let n: u32 = count(v).map_err(|r| bad(text, r.message("sims", v)))?;
                if n == 0 {
                    return Err(bad(text, "sims=0 is not allowed; allowed: >= 1"));
                }
                sims = Some(n);
            }
            _ => {
                return Err(bad(
                    text,
                    format!("`{part}`: allowed: sims=N, tree=model|rules"),
                ));
            }
        }
    }
    if run.trim().is_empty() {
        return Err(bad(text, "give model:RUN@I (a run and an iteration)"));
    }
    if rules && sims.is_none() {
        return Err(bad(
            text,
            "tree=rules goes with sims=N (without it the model plays its greedy policy, no search)",
        ));
    }
    Ok(PlayerSpec::Model {
        run: run.trim().to_string(),
        iteration,
        sims,
        rules,
    })
}

impl fmt::Display for PlayerSpec {
    /// The canonical text: every key spelled out, parsed back to an equal spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlayerSpec::Random => write_keys(f, "random", NO_KEYS, &()),
            PlayerSpec::Optimal => write_keys(f, "optimal", NO_KEYS, &()),
            PlayerSpec::Greedy(mode) => write_keys(f, "greedy", GREEDY_KEYS, mode),
            PlayerSpec::MctsSolver(cfg) => write_keys(f, "mcts-solver", SOLVER_KEYS, cfg),
            PlayerSpec::Mcts { config, eval } => {
                write_keys(f, "mcts", MCTS_KEYS, &Mcts::of(*config, *eval))
            }
            PlayerSpec::Model {
                run,
                iteration,
                sims,
                rules,
            } => {
                write!(f, "model:{run}@{iteration}")?;
                if let Some(n) = sims {
                    write!(f, ",sims={n}")?;
                }
                if *rules {
                    write!(f, ",tree=rules")?;
                }
                Ok(())
            }
            PlayerSpec::Gtp { command } => write!(f, "gtp:{command}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;

    use super::*;

    #[test]
    fn specs_parse_and_print_canonically() {
        for text in [
            "random",
            "optimal",
            "greedy",
            "greedy:mode=stochastic",
            "mcts-solver:sims=8000,c=1",
            "gtp:gnugo --mode gtp --level 1,x=2",
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

    /// The text of every kind of refusal and of the canonical forms, byte for byte, as the
    /// grammar gave them before the key tables (tests/cli_errors.rs checks some through the
    /// CLI).
    #[test]
    fn spec_texts_are_exact() {
        let table = include_str!("../../tests/data/player_specs.tsv");
        let rows = table.lines().filter(|l| !l.starts_with('#'));
        for (n, row) in rows.enumerate() {
            let (text, expected) = row.split_once('\t').expect("spec, tab, result");
            let got = match text.parse::<PlayerSpec>() {
                Ok(spec) => format!("ok {spec}"),
                Err(e) => format!("err {e}"),
            };
            assert_eq!(got, expected, "row {n}: `{text}`");
        }
    }

    /// Every key of every table parses from `key=value` (with the keys it needs) and prints
    /// back as given; the tables' order is the canonical text's.
    #[test]
    fn each_key_parses_and_displays() {
        fn check<T>(player: &str, table: &[Key<T>], samples: &[(&str, &str)]) {
            let shorts: Vec<&str> = samples
                .iter()
                .map(|(kv, _)| kv.split('=').next().unwrap())
                .collect();
            assert_eq!(shorts, table.iter().map(|k| k.short).collect::<Vec<_>>());
            for (kv, needs) in samples {
                let spec: PlayerSpec = format!("{player}:{kv}{needs}").parse().unwrap();
                let text = spec.to_string();
                assert!(
                    text.split([':', ',']).any(|part| part == *kv),
                    "{kv}: {text}"
                );
                assert_eq!(text.parse::<PlayerSpec>().unwrap(), spec);
            }
        }
        let mcts = [
            ("sims=50", ""),
            ("c=0.5", ""),
            ("init=first", ""),
            ("alpha=0.3", ""),
            ("eps=0.25", ""),
            ("tau=1", ""),
            ("sample_moves=4", ""),
            ("chance=proportional", ""),
            ("eval=uniform", ""),
            ("rollouts=3", ""),
            ("p_full=0.5", ",n_fast=10"),
            ("n_fast=10", ""),
            ("forced=2", ""),
            ("prune=true", ",forced=2"),
        ];
        check("mcts", MCTS_KEYS, &mcts);
        check(
            "mcts-solver",
            SOLVER_KEYS,
            &[("sims=40", ""), ("c=0.5", "")],
        );
        check("greedy", GREEDY_KEYS, &[("mode=stochastic", "")]);
        assert_eq!(
            key_names(MCTS_KEYS),
            "sims, c, init, alpha, eps, tau, sample_moves, chance, eval, rollouts, p_full, n_fast, \
             forced, prune"
        );
    }

    /// Each `mcts:` key's field is a path into the serialised [`SearchConfig`] (the run
    /// spec's `[search]` keys), and every key a validation error can name has a short key.
    #[test]
    fn mcts_keys_name_search_config_fields() {
        let config = SearchConfig {
            playout_cap: Some(PlayoutCap {
                p_full: 0.25,
                n_fast: 10,
            }),
            forced_playouts: Some(ForcedPlayouts { k: 2.0 }),
            chance: ChanceRule::Proportional,
            ..SearchConfig::default()
        };
        let json = serde_json::to_value(config).unwrap();
        let fields: Vec<&str> = MCTS_KEYS.iter().filter_map(|k| k.field).collect();
        for field in &fields {
            let found = field.split('.').try_fold(&json, |v, part| v.get(part));
            assert!(found.is_some(), "{field}");
        }
        for key in [
            "c_puct",
            "dirichlet_alpha",
            "dirichlet_epsilon",
            "temperature",
            "simulations",
            "playout_cap.p_full",
            "playout_cap.n_fast",
            "forced_playouts.k",
            "policy_target_pruning",
            "chance",
        ] {
            assert!(fields.contains(&key), "{key}");
        }
    }

    fn finite_at_least_zero() -> impl Strategy<Value = f64> {
        use proptest::num::f64::{NORMAL, POSITIVE, SUBNORMAL};
        prop_oneof![Just(0.0), 0.0..64.0, POSITIVE | NORMAL | SUBNORMAL]
    }

    fn positive() -> impl Strategy<Value = f64> {
        use proptest::num::f64::{NORMAL, POSITIVE, SUBNORMAL};
        prop_oneof![0.01..16.0, POSITIVE | NORMAL | SUBNORMAL]
    }

    /// Any valid `mcts:` spec: every knob the keys reach, in range (`n_fast` below `sims`,
    /// pruning only with forced playouts).
    fn mcts_spec() -> impl Strategy<Value = PlayerSpec> {
        let knobs = (
            3..100_000u32,
            finite_at_least_zero(),
            0..4usize,
            positive(),
            0.0..=1.0f64,
            finite_at_least_zero(),
            proptest::option::of(any::<u32>()),
        );
        let options = (
            proptest::option::of(0..100u32),
            proptest::option::of((0.0..=1.0f64, any::<u32>())),
            proptest::option::of(positive()),
            any::<bool>(),
            any::<bool>(),
        );
        (knobs, options).prop_map(|((sims, c, init, alpha, eps, tau, sample), options)| {
            let (rollouts, cap, forced, prune, proportional) = options;
            let chance = if proportional {
                ChanceRule::Proportional
            } else {
                ChanceRule::Sample
            };
            let init_q = [InitQ::Loss, InitQ::Draw, InitQ::Win, InitQ::First][init];
            let config = SearchConfig {
                simulations: sims.into(),
                c_puct: c,
                init_q,
                dirichlet_alpha: alpha,
                dirichlet_epsilon: eps,
                temperature: tau,
                sample_moves: sample,
                playout_cap: cap.map(|(p_full, n)| PlayoutCap {
                    p_full,
                    n_fast: 2 + n % (sims - 2),
                }),
                forced_playouts: forced.map(|k| ForcedPlayouts { k }),
                policy_target_pruning: prune && forced.is_some(),
                chance,
                ..SearchConfig::evaluation(sims)
            };
            let eval = rollouts.map_or(EvalSpec::Uniform, |r| EvalSpec::Rollout(r + 1));
            PlayerSpec::Mcts { config, eval }
        })
    }

    fn any_spec() -> impl Strategy<Value = PlayerSpec> {
        prop_oneof![
            Just(PlayerSpec::Random),
            Just(PlayerSpec::Optimal),
            Just(PlayerSpec::Greedy(GreedyMode::Deterministic)),
            Just(PlayerSpec::Greedy(GreedyMode::Stochastic)),
            (
                1..=crate::runs::spec::MAX_SIMULATIONS,
                finite_at_least_zero()
            )
                .prop_map(|(simulations, uct_c)| {
                    PlayerSpec::MctsSolver(SolverConfig {
                        simulations,
                        uct_c,
                        ..SolverConfig::default()
                    })
                }),
            // A run is named by an id, a name or a hash prefix: no comma, no outer spaces.
            (
                "[a-z0-9][a-z0-9_.@-]{0,12}",
                any::<u32>(),
                proptest::option::of(1..=crate::runs::spec::MAX_SIMULATIONS)
            )
                .prop_map(|(run, iteration, sims)| PlayerSpec::Model {
                    run,
                    iteration,
                    rules: sims.is_some_and(|n| n % 2 == 0),
                    sims,
                }),
            mcts_spec(),
            // A command line: anything without outer spaces.
            "[a-z][a-z0-9 ,=:./-]{0,20}[a-z0-9]".prop_map(|command| PlayerSpec::Gtp { command }),
        ]
    }

    proptest! {
        /// The canonical text parses back to an equal spec, and prints the same again.
        #[test]
        fn canonical_text_round_trips(spec in any_spec()) {
            if let PlayerSpec::Mcts { config, .. } = &spec {
                prop_assert!(config.validate().is_ok(), "{config:?}");
            }
            let text = spec.to_string();
            let back: PlayerSpec = text.parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
            prop_assert_eq!(&back, &spec);
            prop_assert_eq!(back.to_string(), text);
        }
    }
}
