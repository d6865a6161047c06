//! The layering of the crate (docs/architecture.md, "Layers"): every import between top-level
//! modules of the library points down the layer list, so no two modules depend on each other;
//! the command line's commands never import each other. Reads the sources, so the layering
//! cannot silently regress.
//!
//! The layer list is the fenced `layers` block of docs/architecture.md, top first. A module may
//! name (`crate::x`, `$crate::x`, `use crate::{x, ..}`, a macro exported from `x`, a name
//! re-exported at the crate root from `x`) only modules listed below it. Comments, string
//! literals and `#[cfg(test)]` code are not read: a test inside a module may use anything.

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
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(p) = rest.find("crate::") {
        let before = rest[..p].chars().next_back();
        rest = &rest[p + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        out.extend(first_names(rest));
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
    let lib = code_only(&fs::read_to_string(src.join("lib.rs")).unwrap());
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = first_names(rest).remove(0);
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

/// Every upward import of the library, as `file: module -> target`.
fn upward_imports(src: &Path, layers: &[String]) -> Vec<String> {
    let rank = |m: &str| layers.iter().position(|l| l == m);
    let files = rust_files(src);
    let shown = |f: &Path| {
        f.strip_prefix(src.parent().unwrap())
            .unwrap_or(f)
            .display()
            .to_string()
    };
    let test_only = test_only_files(&files);
    let roots = root_names(src, &files);
    let mut bad = Vec::new();
    for f in &files {
        let Some(module) = top_module(src, f) else {
            continue;
        };
        if test_only.contains(f) {
            continue;
        }
        let Some(own) = rank(&module) else {
            bad.push(format!(
                "{}: module `{module}` is not in the layer list",
                f.display()
            ));
            continue;
        };
        let code = without_tests(&code_only(&fs::read_to_string(f).unwrap()));
        for name in crate_names(&code) {
            let target = roots.get(&name).cloned().unwrap_or(name);
            if target == module || target == "self" || target == "super" {
                continue;
            }
            match rank(&target) {
                Some(r) if r > own => {}
                Some(_) => bad.push(format!("{}: {module} -> {target}", shown(f))),
                None => bad.push(format!(
                    "{}: {module} -> `{target}`, a name not in the layer list",
                    shown(f)
                )),
            }
        }
    }
    bad.sort();
    bad.dedup();
    bad
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

/// The layer list names exactly the library's top-level modules (src/lib.rs).
#[test]
fn the_layer_list_is_the_module_list() {
    let lib = code_only(&fs::read_to_string(Path::new(ROOT).join("src/lib.rs")).unwrap());
    let modules: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').to_string())
        })
        .collect();
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
