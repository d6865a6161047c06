//! The layering of the crate (docs/architecture.md, "Layers"): every import between top-level
//! modules of the library points down the layer list, so no two modules depend on each other;
//! the command line's commands never import each other. Reads the sources, so the layering
//! cannot silently regress.
//!
//! The layer list is the fenced `layers` block of docs/architecture.md, top first. A module may
//! name (`crate::x`, `$crate::x`, `use crate::{x, ..}`, a macro exported from `x`, a name
//! re-exported at the crate root from `x`) only modules listed below it. Comments, string
//! literals and `#[cfg(test)]` code are not read: a test inside a module may use anything.
//! The workspace's crates that `src/lib.rs` re-exports as layers (`pub use tabula_store as
//! store;`, `pub use tabula_core::{error, game, rng};`; docs/architecture.md, "Crates") are
//! read the same way: a crate that is one layer may name below it through other crates'
//! names, a crate of several layers also through `crate::`.
//!
//! Two rules keep the seams where the layer list cannot see them (docs/architecture.md,
//! "Abilities"): no library layer from `solver` up but `games` itself names a game family
//! (a `games::<family>` path, a family type `games/mod.rs` re-exports, a variant of the edge
//! enum `AnyGame`): generic code asks a game's `Abilities`, and the edge enum `AnyGame` and
//! `with_game!` (which name no family at the call) are the one way in. The command line and
//! the binary are not held to it: they sit at the edge, above every layer, and a command may
//! serve one game by name (`tabula value` on a Connect Four position). And nothing outside
//! `src/learners/` (the command line included) names a learner kind (`LearnerKind::Network`):
//! code asks the learner (`LearnerKind::exports`, `progress_metrics`, `with_learner!`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The layer list of docs/architecture.md, top first.
fn layer_list() -> Vec<String> {
    let doc = fs::read_to_string(Path::new(ROOT).join("docs/architecture.md")).unwrap();
    let block = doc
        .split("```layers\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/architecture.md has a ```layers block");
    block
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The source with comments, string and char literals blanked out (newlines kept), so only
/// code is searched.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[u8]| {
        out.extend(s.iter().map(|&c| if c == b'\n' { '\n' } else { ' ' }));
    };
    while i < b.len() {
        let rest = &b[i..];
        let end = if rest.starts_with(b"//") {
            i + rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            i + 2 + find(&rest[2..], b"*/").map_or(rest.len() - 2, |p| p + 2)
        } else if let Some(n) = raw_string_len(rest) {
            i + n
        } else if rest[0] == b'"' {
            i + quoted_len(rest, b'"')
        } else if rest[0] == b'\'' && char_literal(rest) {
            i + quoted_len(rest, b'\'')
        } else {
            let c = src[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
            continue;
        };
        blank(&mut out, &b[i..end]);
        i = end;
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The length of a literal opened by `q` at the start of `s`, escapes honoured.
fn quoted_len(s: &[u8], q: u8) -> usize {
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            c if c == q => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

/// A char literal (`'a'`, `'\n'`, `'"'`), as opposed to a lifetime or label (`'a`).
fn char_literal(s: &[u8]) -> bool {
    s.get(1) == Some(&b'\\')
        || std::str::from_utf8(&s[1..s.len().min(6)])
            .ok()
            .or_else(|| std::str::from_utf8(&s[1..s.len().min(2)]).ok())
            .and_then(|t| t.chars().next().map(|c| (c, t)))
            .is_some_and(|(c, t)| t[c.len_utf8()..].starts_with('\''))
}

/// The length of a raw string (`r"…"`, `r#"…"#`, `br"…"`) at the start of `s`.
fn raw_string_len(s: &[u8]) -> Option<usize> {
    let start = if s.starts_with(b"br") {
        2
    } else if s.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = s[start..].iter().take_while(|&&c| c == b'#').count();
    if s.get(start + hashes) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let body = start + hashes + 1;
    Some(body + find(&s[body..], &close).map_or(s.len() - body, |p| p + close.len()))
}

/// `code` without the items marked `#[cfg(test)]` (a `mod … { … }` block or one item).
fn without_tests(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let open = out[at..].find(['{', ';']).map(|p| at + p).unwrap();
        let end = if out.as_bytes()[open] == b';' {
            open + 1
        } else {
            let mut depth = 0;
            let mut end = out.len();
            for (i, c) in out[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = open + i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            end
        };
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
    }
    out
}

/// Files declared as `#[cfg(test)] mod name;` (test-only files).
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for f in files {
        let code = code_only(&fs::read_to_string(f).unwrap());
        let dir = if f.ends_with("mod.rs") || f.ends_with("lib.rs") {
            f.parent().unwrap().to_path_buf()
        } else {
            f.with_extension("")
        };
        for part in code.split("#[cfg(test)]").skip(1) {
            let t = part.trim_start();
            if let Some(rest) = t.strip_prefix("mod ")
                && let Some(name) = rest.split(';').next().filter(|n| !n.contains('{'))
            {
                let name = name.trim();
                out.insert(dir.join(format!("{name}.rs")));
                out.insert(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// The top-level module a library file belongs to (`None`: the crate root or the binary).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main" | "cli")).then(|| name.to_string())
}

/// The names `path_start` refers to after `crate::`: one name, or each first name of a
/// `{a, b::c, d::{e, f}}` group.
fn first_names(after: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = after.strip_prefix('{') else {
        return vec![ident(after)];
    };
    let mut names = Vec::new();
    let (mut depth, mut at_start) = (0, true);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_start = true,
            c if at_start && !c.is_whitespace() => {
                names.push(ident(&group[i..]));
                at_start = false;
            }
            _ => {}
        }
    }
    names
}

/// Every name `code` reaches through `crate::` (and `$crate::`).
fn crate_names(code: &str) -> Vec<String> {
    names_after(code, "crate::")
}

/// Every name `code` reaches through `prefix` (`crate::`, `tabula_core::`), where `prefix`
/// starts a path (is not the end of a longer name).
fn names_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(p) = rest.find(prefix) {
        let before = rest[..p].chars().next_back();
        rest = &rest[p + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        out.extend(first_names(rest));
    }
    out
}

/// A crate of the workspace that the library re-exports as layers (docs/architecture.md,
/// "Crates"): `pub use tabula_store as store;` makes the whole crate one layer,
/// `pub use tabula_core::{error, game};` makes each named top-level module a layer.
struct Reexport {
    /// The crate's name in paths (`tabula_core`).
    krate: String,
    /// Its sources: `crates/<name with dashes>/src` beside the library's `src`.
    src: PathBuf,
    /// `Some(layer)` where the whole crate is one layer.
    whole: Option<String>,
    /// The layers it holds (one for a whole crate, else its re-exported modules).
    layers: Vec<String>,
}

/// The workspace crates `src/lib.rs` re-exports, with the layers each holds.
fn reexports(src: &Path) -> Vec<Reexport> {
    let lib = code_only(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut out: Vec<Reexport> = Vec::new();
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim_end_matches(';');
        let krate = first_names(rest).remove(0);
        let dir = src
            .parent()
            .unwrap()
            .join("crates")
            .join(krate.replace('_', "-"));
        if !dir.join("src/lib.rs").exists() {
            continue;
        }
        let (whole, layers) = match rest[krate.len()..].trim().strip_prefix("as ") {
            Some(alias) => (
                Some(alias.trim().to_string()),
                vec![alias.trim().to_string()],
            ),
            None => (
                None,
                first_names(rest[krate.len()..].trim_start_matches("::")),
            ),
        };
        match out.iter_mut().find(|r| r.krate == krate) {
            Some(r) => r.layers.extend(layers),
            None => out.push(Reexport {
                krate,
                src: dir.join("src"),
                whole,
                layers,
            }),
        }
    }
    out
}

/// Where names reached at the crate root live: exported macros and the root's `pub use`s.
fn root_names(src: &Path, files: &[PathBuf]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for f in files {
        let Some(module) = top_module(src, f) else {
            continue;
        };
        let code = code_only(&fs::read_to_string(f).unwrap());
        for part in code.split("#[macro_export]").skip(1) {
            if let Some(rest) = part.trim_start().strip_prefix("macro_rules!") {
                let name = first_names(rest.trim_start()).remove(0);
                out.insert(name, module.clone());
            }
        }
    }
    let mut crates = BTreeSet::new();
    for r in reexports(src) {
        for layer in r.layers {
            out.insert(layer.clone(), layer);
        }
        crates.insert(r.krate);
    }
    let lib = code_only(&fs::read_to_string(src.join("lib.rs")).unwrap());
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = first_names(rest).remove(0);
        if crates.contains(&module) {
            continue;
        }
        let items = rest[module.len()..].trim_start_matches("::");
        for name in first_names(items) {
            out.insert(name, module.clone());
        }
        if let Some(single) = items.rsplit("::").next().filter(|s| !s.contains('{')) {
            out.insert(single.trim_end_matches(';').to_string(), module.clone());
        }
    }
    out
}

/// Every upward import of the library and of the workspace crates it re-exports as layers,
/// as `file: module -> target`.
fn upward_imports(src: &Path, layers: &[String]) -> Vec<String> {
    let crates = reexports(src);
    let files = rust_files(src);
    let roots = root_names(src, &files);
    let test_only = test_only_files(&files);
    let mut bad = Vec::new();
    for f in &files {
        if let Some(module) = top_module(src, f) {
            let code = code_of(f, &test_only);
            let mut names: Vec<String> = crate_names(&code)
                .into_iter()
                .map(|n| roots.get(&n).cloned().unwrap_or(n))
                .collect();
            names.extend(crate_paths(&code, &crates));
            judge(&shown(src, f), &module, names, layers, &mut bad);
        }
    }
    for r in &crates {
        let files = rust_files(&r.src);
        let test_only = test_only_files(&files);
        for f in &files {
            let module = match &r.whole {
                Some(layer) => layer.clone(),
                None => match top_module(&r.src, f) {
                    Some(m) => m,
                    None => continue,
                },
            };
            let code = code_of(f, &test_only);
            // Inside a crate that is one layer, `crate::` stays in that layer.
            let mut names = match r.whole {
                Some(_) => Vec::new(),
                None => crate_names(&code),
            };
            names.extend(crate_paths(&code, &crates));
            judge(&shown(src, f), &module, names, layers, &mut bad);
        }
    }
    bad.sort();
    bad.dedup();
    bad
}

/// A file's path as the failures show it, from the workspace root.
fn shown(src: &Path, f: &Path) -> String {
    f.strip_prefix(src.parent().unwrap())
        .unwrap_or(f)
        .display()
        .to_string()
}

/// A file's code with comments, literals and test modules blanked (empty for a file only
/// tests use, one of `test_only`).
fn code_of(f: &Path, test_only: &BTreeSet<PathBuf>) -> String {
    if test_only.contains(f) {
        return String::new();
    }
    without_tests(&code_only(&fs::read_to_string(f).unwrap()))
}

/// The layers `code` reaches through a re-exported crate's own name (`tabula_core::rng`).
fn crate_paths(code: &str, crates: &[Reexport]) -> Vec<String> {
    let mut out = Vec::new();
    for r in crates {
        for name in names_after(code, &format!("{}::", r.krate)) {
            out.push(r.whole.clone().unwrap_or(name));
        }
    }
    out
}

/// Adds to `bad` each of `targets` that `module` may not name: one above it in `layers`, or
/// a name that is no layer.
fn judge(
    shown: &str,
    module: &str,
    targets: Vec<String>,
    layers: &[String],
    bad: &mut Vec<String>,
) {
    let rank = |m: &str| layers.iter().position(|l| l == m);
    let Some(own) = rank(module) else {
        bad.push(format!(
            "{shown}: module `{module}` is not in the layer list"
        ));
        return;
    };
    for target in targets {
        if target == module || target == "self" || target == "super" {
            continue;
        }
        match rank(&target) {
            Some(r) if r > own => {}
            Some(_) => bad.push(format!("{shown}: {module} -> {target}")),
            None => bad.push(format!(
                "{shown}: {module} -> `{target}`, a name not in the layer list"
            )),
        }
    }
}

/// The game families of `src/games/`: its folders, the types `games/mod.rs` re-exports from
/// them, and the variants of its edge enum `AnyGame`.
struct Families {
    folders: BTreeSet<String>,
    types: BTreeSet<String>,
    variants: BTreeSet<String>,
}

fn families(src: &Path) -> Families {
    let games = src.join("games");
    let folders: BTreeSet<String> = fs::read_dir(&games)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    let code = code_only(&fs::read_to_string(games.join("mod.rs")).unwrap());
    let mut types = BTreeSet::new();
    for line in code.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = first_names(rest).remove(0);
        if folders.contains(&module) {
            let items = rest[module.len()..].trim_start_matches("::");
            types.extend(first_names(items).into_iter().filter(|n| !n.is_empty()));
        }
    }
    let variants = code
        .split("enum AnyGame")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .map(|block| {
            block
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
                .map(|l| first_names(l).remove(0))
                .collect()
        })
        .unwrap_or_default();
    Families {
        folders,
        types,
        variants,
    }
}

/// Each place `code` follows `prefix` (at a word start) with a name `bad` accepts, as
/// `prefix` + the names.
fn named_after(code: &str, prefix: &str, bad: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[i + prefix.len()..];
        let names: Vec<String> = if rest.starts_with('*') {
            vec!["*".to_string()]
        } else {
            first_names(rest)
        };
        let hit: Vec<String> = names.into_iter().filter(|n| bad(n)).collect();
        if !hit.is_empty() {
            out.push(format!("{prefix}{}", hit.join(", ")));
        }
    }
    out
}

/// Every library file of a layer from `solver` up (but `games`) that names a game family.
fn family_paths(src: &Path, layers: &[String]) -> Vec<String> {
    let fam = families(src);
    let solver = layers.iter().position(|l| l == "solver").unwrap();
    let files = rust_files(src);
    let test_only = test_only_files(&files);
    let mut bad = Vec::new();
    for f in &files {
        let Some(module) = top_module(src, f) else {
            continue;
        };
        let above = layers
            .iter()
            .position(|l| *l == module)
            .is_some_and(|r| r <= solver);
        if module == "games" || !above || test_only.contains(f) {
            continue;
        }
        let code = without_tests(&code_only(&fs::read_to_string(f).unwrap()));
        let family = |n: &str| fam.folders.contains(n) || fam.types.contains(n);
        let mut found = named_after(&code, "games::", family);
        found.extend(named_after(&code, "AnyGame::", |n| {
            fam.variants.contains(n)
        }));
        let shown = f.strip_prefix(src).unwrap().display();
        bad.extend(
            found
                .into_iter()
                .map(|h| format!("src/{shown}: {module} names {h}")),
        );
    }
    bad.sort();
    bad.dedup();
    bad
}

/// Every file outside `src/learners/` that names a learner kind (`LearnerKind::Network`).
fn learner_kinds(src: &Path) -> Vec<String> {
    let files = rust_files(src);
    let test_only = test_only_files(&files);
    let learners = src.join("learners");
    let mut bad = Vec::new();
    for f in &files {
        if f.starts_with(&learners) || test_only.contains(f) {
            continue;
        }
        let code = without_tests(&code_only(&fs::read_to_string(f).unwrap()));
        // A variant is CamelCase (`Network`); `LearnerKind::ALL` and `NAMES` are constants.
        let kind = |n: &str| {
            n == "*"
                || (n.starts_with(|c: char| c.is_uppercase()) && n.contains(char::is_lowercase))
        };
        let shown = f.strip_prefix(src).unwrap().display();
        for h in named_after(&code, "LearnerKind::", kind) {
            bad.push(format!("src/{shown}: names {h}"));
        }
    }
    bad.sort();
    bad.dedup();
    bad
}

#[test]
fn no_layer_above_the_games_names_a_game_family() {
    let src = Path::new(ROOT).join("src");
    let fam = families(&src);
    assert!(
        fam.folders.contains("go") && fam.types.contains("Go9"),
        "{:?}",
        fam.types
    );
    assert!(fam.variants.contains("ConnectFour"), "{:?}", fam.variants);
    let bad = family_paths(&src, &layer_list());
    assert!(
        bad.is_empty(),
        "code above `games` that names a game family (ask the game's Abilities instead):\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_code_outside_the_learners_names_a_learner_kind() {
    let bad = learner_kinds(&Path::new(ROOT).join("src"));
    assert!(
        bad.is_empty(),
        "code outside src/learners/ that names a learner kind (ask the learner instead):\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_import_points_down_the_layer_list() {
    let layers = layer_list();
    let bad = upward_imports(&Path::new(ROOT).join("src"), &layers);
    assert!(
        bad.is_empty(),
        "imports that point up the layer list of docs/architecture.md ({}):\n{}",
        layers.join(" > "),
        bad.join("\n")
    );
}

/// The layer list names exactly the library's top-level modules (src/lib.rs) and the layers
/// it re-exports from the workspace's crates.
#[test]
fn the_layer_list_is_the_module_list() {
    let src = Path::new(ROOT).join("src");
    let lib = code_only(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let crates = reexports(&src);
    assert!(
        crates.len() >= 3,
        "src/lib.rs re-exports the crates tabula-core, tabula-store and tabula-nn"
    );
    let mut modules: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))
                .or_else(|| l.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').to_string())
        })
        .collect();
    modules.extend(crates.into_iter().flat_map(|r| r.layers));
    let layers: BTreeSet<String> = layer_list().into_iter().collect();
    assert_eq!(
        modules, layers,
        "src/lib.rs modules vs docs/architecture.md layers"
    );
}

/// The command line's commands (`src/cli/*_cmd.rs`) never import each other: what they share
/// lives in `cli/args.rs` and `cli/common.rs`.
#[test]
fn commands_never_import_each_other() {
    let dir = Path::new(ROOT).join("src/cli");
    let files = rust_files(&dir);
    let commands: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_stem()?.to_str())
        .filter(|n| n.ends_with("_cmd"))
        .map(str::to_string)
        .collect();
    let mut bad = Vec::new();
    for f in &files {
        let stem = f.file_stem().unwrap().to_str().unwrap();
        if !stem.ends_with("_cmd") {
            continue;
        }
        let code = code_only(&fs::read_to_string(f).unwrap());
        for other in commands.iter().filter(|c| *c != stem) {
            let named = code
                .match_indices(other.as_str())
                .any(|(i, _)| !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'));
            if named {
                bad.push(format!("{stem} -> {other}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "commands that import each other:\n{}",
        bad.join("\n")
    );
}

/// The checker itself: an upward import in a scratch crate is found, a downward one is not,
/// and comments, strings and test modules are not read.
#[test]
fn the_checker_finds_an_upward_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("high")).unwrap();
    fs::write(
        src.join("lib.rs"),
        "pub mod high;\npub mod low;\npub use high::Top;\n",
    )
    .unwrap();
    fs::write(
        src.join("high/mod.rs"),
        "use crate::low::{self, f};\npub struct Top;\n#[macro_export]\nmacro_rules! up { () => {} }\n",
    )
    .unwrap();
    let low_ok = "// crate::high is fine in a comment\nconst S: &str = \"crate::high\";\n\
                  #[cfg(test)]\nmod tests { use crate::high::Top; }\npub fn f() {}\n";
    fs::write(src.join("low.rs"), low_ok).unwrap();
    let layers = vec!["high".to_string(), "low".to_string()];
    assert_eq!(upward_imports(&src, &layers), Vec::<String>::new());
    for upward in [
        "use crate::high::Top;",
        "use crate::{high, low};",
        "fn g() { crate::up!(); }",
        "fn g() -> crate::Top { crate::Top }",
    ] {
        fs::write(src.join("low.rs"), format!("{low_ok}{upward}\n")).unwrap();
        let bad = upward_imports(&src, &layers);
        assert_eq!(bad.len(), 1, "{upward}: {bad:?}");
        assert!(bad[0].ends_with("low -> high"), "{upward}: {bad:?}");
    }
}

/// The checker across crates: a workspace crate re-exported as one layer or as several is
/// read too; an upward name through `crate::` inside a crate of several layers, or through
/// another crate's name, is found, and `crate::` inside a crate of one layer is not.
#[test]
fn the_checker_reads_the_workspace_crates() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let base = dir.path().join("crates/scratch-base/src");
    let mid = dir.path().join("crates/scratch-mid/src");
    for d in [&src, &base, &mid] {
        fs::create_dir_all(d).unwrap();
    }
    let write = |p: PathBuf, s: &str| fs::write(p, s).unwrap();
    write(
        src.join("lib.rs"),
        "pub mod top;\npub use scratch_mid as mid;\npub use scratch_base::{low, lowest};\n",
    );
    write(
        src.join("top.rs"),
        "use crate::mid::m;\nuse scratch_base::low::g;\n",
    );
    write(base.join("lib.rs"), "pub mod low;\npub mod lowest;\n");
    write(
        base.join("low.rs"),
        "use crate::lowest::f;\npub fn g() {}\n",
    );
    write(base.join("lowest.rs"), "pub fn f() {}\n");
    write(
        mid.join("lib.rs"),
        "mod inner;\nuse crate::inner::i;\nuse scratch_base::low::g;\n",
    );
    write(mid.join("inner.rs"), "pub fn i() {}\n");
    let layers: Vec<String> = ["top", "mid", "low", "lowest"].map(String::from).to_vec();
    assert_eq!(upward_imports(&src, &layers), Vec::<String>::new());

    write(base.join("lowest.rs"), "pub fn f() { crate::low::g(); }\n");
    assert_eq!(
        upward_imports(&src, &layers),
        ["crates/scratch-base/src/lowest.rs: lowest -> low"]
    );
    write(base.join("lowest.rs"), "pub fn f() {}\n");
    let swapped: Vec<String> = ["top", "low", "mid", "lowest"].map(String::from).to_vec();
    assert_eq!(
        upward_imports(&src, &swapped),
        ["crates/scratch-mid/src/lib.rs: mid -> low"]
    );
}

/// The seam rules themselves: a family path, a family type, an edge-enum variant or a
/// learner kind planted in a scratch crate is found; the edge enum and `with_game!`, the
/// `games` layer itself, layers below `solver`, the command line, comments, strings and
/// test modules are not.
#[test]
fn the_checker_finds_a_named_family_and_a_named_learner_kind() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for d in [
        "games/go",
        "games/connect4",
        "learners",
        "runs",
        "store",
        "cli",
    ] {
        fs::create_dir_all(src.join(d)).unwrap();
    }
    fs::write(
        src.join("games/mod.rs"),
        "pub mod go;\npub mod connect4;\npub use go::{Go9, Go19};\npub use connect4::ConnectFour;\n\
         pub enum AnyGame {\n    /// Go.\n    Go(Go9),\n    ConnectFour(ConnectFour),\n}\n",
    )
    .unwrap();
    fs::write(src.join("games/go/mod.rs"), "pub struct Go9;\n").unwrap();
    fs::write(
        src.join("learners/mod.rs"),
        "fn f() { LearnerKind::Network; }\n",
    )
    .unwrap();
    fs::write(src.join("store/mod.rs"), "use crate::games::go::Go9;\n").unwrap();
    fs::write(src.join("cli/mod.rs"), "use tabula::games::go::Go9;\n").unwrap();
    let runs_ok = "use crate::games::{Abilities, AnyGame};\n// crate::games::go::Go9\n\
                   const S: &str = \"games::Go9 LearnerKind::Network\";\n\
                   fn f(g: &AnyGame) { crate::with_game!(g, |g| g.go_rules()); }\n\
                   fn k(k: LearnerKind) { k.exports(); LearnerKind::ALL; }\n\
                   #[cfg(test)]\nmod tests { use crate::games::Go9; fn f() { LearnerKind::Network; } }\n";
    fs::write(src.join("runs/mod.rs"), runs_ok).unwrap();
    let layers: Vec<String> = ["runs", "learners", "games", "solver", "store"]
        .map(String::from)
        .to_vec();
    assert_eq!(family_paths(&src, &layers), Vec::<String>::new());
    assert_eq!(learner_kinds(&src), Vec::<String>::new());
    for (planted, named) in [
        ("use crate::games::go::{Go, GoState};", "games::go"),
        (
            "use crate::games::{Abilities, connect4};",
            "games::connect4",
        ),
        ("fn g(x: &crate::games::Go19) {}", "games::Go19"),
        (
            "fn g(a: &AnyGame) { if let AnyGame::Go(g) = a {} }",
            "AnyGame::Go",
        ),
    ] {
        fs::write(src.join("runs/mod.rs"), format!("{runs_ok}{planted}\n")).unwrap();
        let bad = family_paths(&src, &layers);
        assert_eq!(bad.len(), 1, "{planted}: {bad:?}");
        assert!(
            bad[0].ends_with(&format!("runs names {named}")),
            "{planted}: {bad:?}"
        );
    }
    for planted in [
        "fn g(k: LearnerKind) -> bool { k == LearnerKind::Network }",
        "fn g(k: crate::learners::LearnerKind) -> bool { k != crate::learners::LearnerKind::TabularAz }",
        "use crate::learners::LearnerKind::{Network, QLearning};",
    ] {
        fs::write(src.join("runs/mod.rs"), format!("{runs_ok}{planted}\n")).unwrap();
        let bad = learner_kinds(&src);
        assert_eq!(bad.len(), 1, "{planted}: {bad:?}");
        assert!(
            bad[0].starts_with("src/runs/mod.rs: names LearnerKind::"),
            "{bad:?}"
        );
    }
    // The command line is held to the learner rule too.
    fs::write(src.join("runs/mod.rs"), runs_ok).unwrap();
    fs::write(
        src.join("cli/mod.rs"),
        "fn g() { LearnerKind::QLearning; }\n",
    )
    .unwrap();
    assert_eq!(learner_kinds(&src).len(), 1);
}

/// Functions longer than `max` lines (from the `fn` line to the closing brace at its indent),
/// as `file:line name (n lines)`, over every `.rs` file under `dirs`.
fn long_functions(dirs: &[PathBuf], max: usize) -> Vec<String> {
    let mut out = Vec::new();
    for f in dirs.iter().flat_map(|d| rust_files(d)) {
        let code = code_only(&fs::read_to_string(&f).unwrap());
        let lines: Vec<&str> = code.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let Some(name) = fn_name(l) else { continue };
            let indent = l.len() - l.trim_start().len();
            let body = lines[i..]
                .iter()
                .position(|b| b.contains('{') || b.ends_with(';'));
            let Some(open) = body.filter(|&b| !lines[i + b].trim_end().ends_with(';')) else {
                continue;
            };
            // A body opened and closed on one line; else the brace back at the `fn`'s indent.
            let t = lines[i + open];
            let close = if t.matches('{').count() == t.matches('}').count() {
                Some(0)
            } else {
                let brace = format!("{}}}", " ".repeat(indent));
                lines[i + open..].iter().position(|b| b.trim_end() == brace)
            };
            let n = close.map_or(0, |c| open + c + 1);
            if n > max {
                out.push(format!("{}:{} {name} ({n} lines)", f.display(), i + 1));
            }
        }
    }
    out
}

/// The name of the function a line declares (`pub(crate) unsafe fn name<..>(`), if any.
fn fn_name(line: &str) -> Option<&str> {
    let at = line.find("fn ")?;
    let head = line[..at].trim();
    let words_ok = head.split_whitespace().all(|w| {
        w.starts_with("pub") || ["const", "unsafe", "async", "extern", "\"C\""].contains(&w)
    });
    let name = line[at + 3..]
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()?;
    (words_ok && !name.is_empty()).then_some(name)
}

/// Functions stay short enough to read whole (docs/conventions.md, "Lints"): none of the
/// library's, the binary's or the workspace crates' is over 100 lines.
#[test]
fn no_function_is_over_100_lines() {
    let root = Path::new(ROOT);
    let mut dirs = vec![root.join("src")];
    dirs.extend(
        fs::read_dir(root.join("crates"))
            .unwrap()
            .map(|e| e.unwrap().path().join("src")),
    );
    let long = long_functions(&dirs, 100);
    assert!(
        long.is_empty(),
        "functions over 100 lines:\n{}",
        long.join("\n")
    );
}

/// The counter itself: a planted 101-line function is found, a 100-line one, a declaration
/// without a body and a one-line function are not.
#[test]
fn the_counter_finds_a_long_function() {
    let dir = tempfile::tempdir().unwrap();
    let body = |n: usize| "    let x = 1;\n".repeat(n - 2);
    let src = format!(
        "trait T {{\n    fn decl(&self);\n}}\nfn short() {{ }}\n\
         pub(crate) fn hundred() {{\n{}}}\n\
         impl S {{\n    pub unsafe fn long(&self) {{\n    {}    }}\n}}\n",
        body(100),
        body(101).replace("\n    let", "\n        let")
    );
    fs::write(dir.path().join("a.rs"), src).unwrap();
    let long = long_functions(&[dir.path().to_path_buf()], 100);
    assert_eq!(long.len(), 1, "{long:?}");
    assert!(long[0].ends_with("long (101 lines)"), "{long:?}");
}
