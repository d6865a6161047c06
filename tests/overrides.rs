//! The one overrides engine (docs/experiments.md, "Overrides"): every key is judged the same
//! by `run --set`, `branch --at 0`, `branch --at I`, a `[[stage]]`'s `set` and a sweep axis,
//! each through its own path, and each refusal names the key, the value and what is allowed.

use tabula::runs::overrides::{self, Place, parse_value};
use tabula::runs::{RunConfig, apply_overrides};

/// One path an override takes: the key and value in, the path's answer out.
type Path = fn(&str, &str) -> Result<(), String>;

const BASE: &str = "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 10\ngames_per_iteration = 4\n";

/// `run BASE --set key=value`.
fn by_run(key: &str, value: &str) -> Result<(), String> {
    let sets = overrides::parse_sets(&[format!("{key}={value}")]).map_err(|e| e.to_string())?;
    overrides::spec_with_overrides(Place::Run, BASE, &sets, None, "t", "--set")
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// `branch RUN --at 0 --set key=value`: RUN's spec written out, a seed given.
fn by_fresh_branch(key: &str, value: &str) -> Result<(), String> {
    let sets = overrides::parse_sets(&[format!("{key}={value}")]).map_err(|e| e.to_string())?;
    overrides::spec_with_overrides(Place::FreshBranch, BASE, &sets, Some(7), "t", "--set")
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// `branch RUN --at I --set key=value`: applied to RUN's settings.
fn by_branch(key: &str, value: &str) -> Result<(), String> {
    let cfg = RunConfig::from_toml(BASE, "t").unwrap();
    apply_overrides(&cfg.settings, &[format!("{key}={value}")])
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A `[[stage]]` with `set = { "key" = value }`.
fn by_stage(key: &str, value: &str) -> Result<(), String> {
    let text = format!("{BASE}[[stage]]\niterations = 1\nset = {{ \"{key}\" = {value} }}\n");
    RunConfig::from_toml(&text, "t")
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A sweep with the axis `"key" = [value]`.
fn by_sweep(key: &str, value: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.toml"), BASE).unwrap();
    let text =
        format!("name = \"s\"\nbase = \"base.toml\"\nseeds = [1]\n[axes]\n\"{key}\" = [{value}]\n");
    tabula::experiments::sweep::Sweep::parse(&text, dir.path())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The refusal table, row by row: each key with a valid value, and whether it is allowed by
/// run --set, branch --at 0, branch --at I, a stage and a sweep axis. Every path must agree
/// with the table ([`overrides::judge`]), and a refused key's error must be the table's
/// refusal (key, value, why, allowed).
#[test]
fn every_path_judges_a_key_as_the_refusal_table_does() {
    let cases: &[(&str, &str, [bool; 5])] = &[
        ("name", "\"x\"", [true, true, true, false, false]),
        ("seed", "5", [true, false, false, false, false]),
        ("iterations", "12", [true, true, true, false, true]),
        ("variant", "\"ewn:3x3x4\"", [true, true, false, false, true]),
        (
            "learner.kind",
            "\"network\"",
            [true, true, false, false, true],
        ),
        // Tabular AlphaZero's fixed setting: a new run may set it, a continued model not.
        ("init_std", "0.5", [true, true, false, false, true]),
        ("window", "3", [true; 5]),
        ("search.init_q", "\"draw\"", [true; 5]),
        ("budget.moves", "500", [true; 5]),
        ("start.policy", "\"initial\"", [true; 5]),
        // A search key a settings record may leave out at its default.
        ("search.tie_break", "\"lowest\"", [true; 5]),
        // The evaluation interval (left out of the record at 1): measuring changes no model,
        // so a branch or a stage may measure at its own interval.
        ("eval.every", "3", [true; 5]),
        // Where the two engines disagreed before: a whole table of settings was written over
        // at a branch point (and read back with defaults), refused by `run --set`; now no
        // setting anywhere. Likewise `stages`.
        ("eval", "[1]", [false; 5]),
        ("stages", "[]", [false; 5]),
        ("budget.games", "5", [false; 5]),
        ("search.nope", "1", [false; 5]),
    ];
    let base = RunConfig::from_toml(BASE, "t").unwrap().settings;
    let paths: [(&str, Path, &str); 5] = [
        ("run --set", by_run, "--set "),
        ("branch --at 0", by_fresh_branch, "--set "),
        ("branch --at I", by_branch, "--set "),
        ("stage", by_stage, "set "),
        ("sweep axis", by_sweep, "axis "),
    ];
    for (key, value, wanted) in cases {
        for (((name, path, what), place), allowed) in paths.iter().zip(Place::ALL).zip(wanted) {
            let judged = overrides::judge(place, &base, key, &parse_value(value));
            assert_eq!(judged.is_ok(), *allowed, "the table, {name}: {key}={value}");
            let got = path(key, value);
            match judged {
                Ok(()) => assert!(got.is_ok(), "{name}: {key}={value}: {got:?}"),
                Err(refusal) => {
                    let e = got.expect_err(&format!("{name}: {key}={value} accepted"));
                    let text = format!("{what}{refusal}");
                    assert!(e.contains(&text), "{name}: {e}\nwanted: {text}");
                    assert!(e.contains(&format!("{key}={}", refusal.value)), "{e}");
                    assert!(e.contains("; allowed: "), "{e}");
                }
            }
        }
    }
}

/// `eval.every = 0` is refused, naming the key and what is allowed, by every path that
/// validates the settings it makes (`branch --at I` validates the branch's settings when it
/// creates the branch, runs/branch.rs).
#[test]
fn an_evaluation_interval_of_zero_is_refused_everywhere() {
    let paths: [(&str, Path); 4] = [
        ("run --set", by_run),
        ("branch --at 0", by_fresh_branch),
        ("stage", by_stage),
        ("sweep axis", by_sweep),
    ];
    for (name, path) in paths {
        let e = path("eval.every", "0").expect_err(name);
        assert!(
            e.contains("eval.every") && e.contains(">= 1"),
            "{name}: {e}"
        );
    }
    // A refusal's list of the keys allowed names it, though the record leaves it out at 1.
    let base = RunConfig::from_toml(BASE, "t").unwrap().settings;
    for place in Place::ALL {
        let refusal = overrides::judge(place, &base, "eval.nope", &parse_value("1")).unwrap_err();
        assert!(
            refusal.allowed.contains("eval.every"),
            "{place:?}: {refusal}"
        );
    }
}

/// Two keys of how much an iteration plays are refused alike everywhere they are allowed.
#[test]
fn alternatives_are_refused_alike() {
    let sets = [
        "budget.moves=5".to_string(),
        "games_per_iteration=3".to_string(),
    ];
    let parsed = overrides::parse_sets(&sets).unwrap();
    let cfg = RunConfig::from_toml(BASE, "t").unwrap();
    let wanted = "games_per_iteration=3: `budget.moves` and `games_per_iteration` are \
                  alternatives (how much an iteration plays); set one; allowed: one of";
    for place in [Place::Run, Place::FreshBranch] {
        let e = overrides::spec_with_overrides(place, BASE, &parsed, Some(1), "t", "--set")
            .unwrap_err()
            .to_string();
        assert!(e.contains(wanted), "{place:?}: {e}");
    }
    let e = apply_overrides(&cfg.settings, &sets)
        .unwrap_err()
        .to_string();
    assert!(e.contains(wanted), "{e}");
    let text = format!(
        "{BASE}[[stage]]\niterations = 1\nset = {{ \"budget.moves\" = 5, games_per_iteration = 3 }}\n"
    );
    let e = RunConfig::from_toml(&text, "t").unwrap_err().to_string();
    assert!(e.contains(wanted), "{e}");
}
