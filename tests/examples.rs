//! Every example command of the README and of the `--help` texts runs.
//!
//! Examples are the README's indented lines that start with `tabula ` (a quoted argument may
//! continue on the next lines) and every `` `tabula ...` `` in backticks, in the README and in
//! `tabula --help` and each command's `--help`. A synopsis with placeholders (`RUN`, `N`,
//! `VARIANT`: an upper-case word outside quotes) is not an example. They run in README order
//! in one temporary directory with its own store and a copy of `runs/` whose specs are made
//! small (the same keys, a few games and simulations), so `run runs/quick.toml` and what follows
//! it work as written; the few that stay long are in [`SKIPPED`] with the reason.

use std::path::Path;
use std::process::Command;

/// Examples not run here, with why.
const SKIPPED: &[(&str, &str)] = &[
    (
        "tabula sweep runs/ewn-3x3x3-init-q.toml --jobs 2",
        "a 12-point grid of full runs; tests/experiments.rs runs small sweeps the same way",
    ),
    (
        "tabula report ewn-3x3x3-init-q --out report/",
        "needs the sweep above; tests/experiments.rs writes reports of small sweeps",
    ),
    (
        "tabula serve --open",
        "serves until stopped; tests/serve_browser.rs drives it in Chromium, and `tabula serve \
         --port 0 --check` (its --help example) runs here",
    ),
];

/// Commands the issue found refused; they must run too.
const ALSO: &[&str] = &[
    // (`solve checkers:5x5-3` is refused by design, naming the limit: too many positions.)
    "tabula solve checkers:5x5-1",
    "tabula play cdc:PPPP --players optimal,random",
    "tabula match ewn:3x3x2 --a mcts:sims=20,c=1,init=draw --b random --games 4",
];

/// Splits a command line into arguments: whitespace-separated, `"..."` and `'...'` quoted.
fn split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            None => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The line without a trailing `# comment` (outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return line[..i].trim_end(),
            None => {}
        }
    }
    line.trim_end()
}

/// Whether a command is a synopsis: an upper-case placeholder word, `...` or an optional
/// `[...]` outside quotes.
fn is_synopsis(cmd: &str) -> bool {
    split(cmd).iter().enumerate().any(|(i, a)| {
        // Quoted arguments (SQL) keep their words; a placeholder is a whole bare argument.
        let bare = !cmd.contains(&format!("\"{a}\"")) && !cmd.contains(&format!("'{a}'"));
        i > 0
            && bare
            && (a.contains("...")
                || a.starts_with('[')
                || a.split(['=', '@', '/', ',', ':', '.']).any(|w| {
                    !w.is_empty() && w.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                }) && a.chars().any(|c| c.is_ascii_uppercase())
                    && !a.contains(':'))
    })
}

/// The README's examples, in order.
fn readme_examples(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(rest) = line.strip_prefix("    tabula ") {
            let mut cmd = format!("tabula {}", strip_comment(rest).trim());
            // A quoted argument continues on the next lines.
            while cmd.matches('"').count() % 2 == 1 && i + 1 < lines.len() {
                i += 1;
                cmd.push(' ');
                cmd.push_str(strip_comment(lines[i].trim()));
            }
            out.push(cmd);
        }
        out.extend(backticked(line));
        i += 1;
    }
    out
}

/// Every `` `tabula COMMAND ARG ...` `` in a text; one with no argument but flags names the
/// command (`tabula match --record`) and is not an example.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("tabula "))
        .filter(|s| split(s).iter().skip(2).any(|a| !a.starts_with("--")))
        .map(str::to_string)
        .collect()
}

fn tabula(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tabula"));
    c.current_dir(dir).env("TABULA_DB", dir.join("tabula.db"));
    c
}

/// A copy of `runs/` with small sizes: a few games, simulations and evaluation games.
fn small_runs(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/runs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let small: String = text
            .lines()
            .map(|l| {
                let key = l.split('=').next().unwrap_or("").trim();
                match key {
                    "games_per_iteration" => "games_per_iteration = 4".to_string(),
                    "simulations" => "simulations = 8".to_string(),
                    "games" => "games = 20".to_string(),
                    _ => l.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(to.join(p.file_name().unwrap()), small).unwrap();
    }
}

#[test]
fn every_example_in_the_readme_and_the_help_runs() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    small_runs(&dir.path().join("runs"));
    let mut examples = readme_examples(&readme);
    // The help texts' examples.
    let top = tabula(dir.path()).arg("--help").output().unwrap();
    let top = String::from_utf8_lossy(&top.stdout).to_string();
    examples.extend(backticked(&top));
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 15, "{commands:?}");
    for c in &commands {
        let out = tabula(dir.path()).args([c, "--help"]).output().unwrap();
        examples.extend(backticked(&String::from_utf8_lossy(&out.stdout)));
    }
    examples.extend(ALSO.iter().map(|s| s.to_string()));
    let mut ran = 0;
    let mut failures = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for ex in &examples {
        if is_synopsis(ex) || !seen.insert(ex.clone()) {
            continue;
        }
        if SKIPPED.iter().any(|(s, _)| s == ex) {
            continue;
        }
        let args = split(ex);
        if args.len() < 2 {
            continue;
        }
        let t = std::time::Instant::now();
        let out = tabula(dir.path()).args(&args[1..]).output().unwrap();
        println!("{:6.2} s  {ex}", t.elapsed().as_secs_f64());
        ran += 1;
        if !out.status.success() {
            failures.push(format!(
                "{ex}\n  exit {:?}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(ran >= 15, "only {ran} examples found: {examples:#?}");
    assert!(
        failures.is_empty(),
        "{} of {ran} examples failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn synopses_are_told_from_examples() {
    assert!(is_synopsis("tabula resume RUN"));
    assert!(is_synopsis("tabula checkout RUN@I"));
    assert!(is_synopsis("tabula play VARIANT --seed N"));
    assert!(!is_synopsis("tabula show quick"));
    assert!(!is_synopsis("tabula play cdc:PPPP --seed 1"));
    assert!(!is_synopsis("tabula sql \"SELECT * FROM runs\""));
    assert_eq!(
        split("tabula sql \"SELECT 'a' FROM t\" --json"),
        ["tabula", "sql", "SELECT 'a' FROM t", "--json"]
    );
}
