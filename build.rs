//! Build provenance (docs/store.md, "Provenance"): the git commit this binary was built from
//! and whether its tree had uncommitted changes, captured at build time so that every run a
//! process records names the code that produced it. Outside a git checkout (a source tarball)
//! both read "unknown". Nothing here enters a hash.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    // No optional locks: `git status` must not refresh (rewrite) the index, which would make
    // this script run again on every build.
    let out = Command::new("git")
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| c.len() == 40);
    // Dirty: any tracked file changed, or a file git does not ignore added.
    let dirty = commit
        .as_ref()
        .and_then(|_| git(&["status", "--porcelain", "--untracked-files=normal"]))
        .map(|s| if s.is_empty() { "clean" } else { "dirty" });
    println!(
        "cargo:rustc-env=TABULA_GIT_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=TABULA_GIT_TREE={}",
        dirty.unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=TABULA_BUILD_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into())
    );
    // Run again when the commit or the index moves, or a source file changes (the tree's
    // state is as of then: an edit to tests or docs alone is seen at the next commit). Only
    // this checkout's own branch is watched, not every branch: a commit in another worktree
    // of the same repository must not rebuild this one. A watched file that does not exist
    // would rerun the script on every build, so only existing ones are named.
    for f in watched_git_files() {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    for d in ["src", "crates", "Cargo.toml", "Cargo.lock", "build.rs"] {
        println!("cargo:rerun-if-changed={d}");
    }
}

/// HEAD and the index of this checkout, its branch's ref file and the packed refs.
fn watched_git_files() -> Vec<PathBuf> {
    let Some(dir) = git(&["rev-parse", "--git-dir"]).map(PathBuf::from) else {
        return Vec::new();
    };
    let common = git(&["rev-parse", "--git-common-dir"]).map_or_else(|| dir.clone(), PathBuf::from);
    let mut files = vec![
        dir.join("HEAD"),
        dir.join("index"),
        common.join("packed-refs"),
    ];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        files.push(common.join(branch));
    }
    files.retain(|f| f.exists());
    files
}
