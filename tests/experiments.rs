//! Sweeps, shards, merge, plots and the report through the binary (docs/experiments.md): a
//! 2-value x 2-seed sweep run whole and as two shards merged gives the same heads; a killed
//! sweep continues to the same heads; `run --set` and `branch --at 0`; bad input refused
//! with nothing written.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tabula::experiments::sweep::{Shard, Sweep};

#[path = "common/binary.rs"]
mod binary;
use binary::{bin, fails, json, ok, tabula};

/// Run name -> head, from `tabula ls --json`.
fn heads(db: &Path) -> BTreeMap<String, String> {
    json(&tabula(db, &["ls", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["head"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

/// A tiny base spec (EWN 3x3x3, 3 iterations of 40 games) and a 2 x 2 sweep over it.
fn setup(dir: &Path, iterations: u32, games: u32) -> std::path::PathBuf {
    std::fs::write(
        dir.join("base.toml"),
        format!(
            "variant = \"ewn:3x3x3\"\nseed = 1\niterations = {iterations}\n\
             games_per_iteration = {games}\ncheckpoint_every = 2\n[search]\nsimulations = 10\n\
             [eval]\ngames = 100\n"
        ),
    )
    .unwrap();
    let sweep = dir.join("tiny.toml");
    std::fs::write(
        &sweep,
        "name = \"tiny\"\nbase = \"base.toml\"\nseeds = [1, 2]\n[axes]\n\
         \"search.init_q\" = [\"loss\", \"draw\"]\n",
    )
    .unwrap();
    sweep
}

#[test]
fn whole_and_sharded_merged_sweeps_have_the_same_heads() {
    let dir = tempfile::tempdir().unwrap();
    let file = setup(dir.path(), 3, 40);
    let f = file.to_str().unwrap();
    let whole = dir.path().join("whole.db");
    // Whole: one run at a time on 2 threads; shards below: 1 thread each.
    let out = json(&tabula(&whole, &["sweep", f, "--threads", "2", "--json"]));
    assert_eq!(out["runs"].as_array().unwrap().len(), 4);
    assert!(
        out["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "done")
    );
    let want = heads(&whole);
    assert_eq!(want.len(), 4, "{want:?}");
    assert!(want.contains_key("tiny/init_q=draw/seed=2"), "{want:?}");
    assert!(want.values().all(|h| h.len() == 64));

    // Running it again skips every finished run.
    let again = json(&tabula(&whole, &["sweep", f, "--json"]));
    assert!(
        again["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "finished")
    );

    // Two shards into two stores (one thread each), merged.
    let (s1, s2, all) = (
        dir.path().join("s1.db"),
        dir.path().join("s2.db"),
        dir.path().join("all.db"),
    );
    ok(&tabula(
        &s1,
        &["sweep", f, "--shard", "1/2", "--threads", "1"],
    ));
    ok(&tabula(
        &s2,
        &["sweep", f, "--shard", "2/2", "--threads", "1"],
    ));
    assert_eq!(heads(&s1).len(), 2);
    assert_eq!(heads(&s2).len(), 2);
    let (a, b, i) = (
        s1.to_str().unwrap(),
        s2.to_str().unwrap(),
        all.to_str().unwrap(),
    );
    let merge = || json(&tabula(&all, &["merge", a, b, "--into", i, "--json"]));
    let merged = merge();
    // The second shard's run ids 1 and 2 were taken by the first's: renumbered.
    assert_eq!(
        merged[1]["renumbered"].as_array().unwrap().len(),
        2,
        "{merged}"
    );
    assert_eq!(heads(&all), want);
    // The sweep is one join away, with all four members.
    let rows = json(&tabula(
        &all,
        &[
            "sql",
            "--json",
            "SELECT run_name, head FROM sweep_runs WHERE sweep = 'tiny' ORDER BY point, seed_index",
        ],
    ));
    assert_eq!(rows.as_array().unwrap().len(), 4);
    for r in rows.as_array().unwrap() {
        assert_eq!(
            want[r["run_name"].as_str().unwrap()],
            r["head"].as_str().unwrap()
        );
    }
    // Idempotent: merging again adds nothing.
    let again = merge();
    for s in again.as_array().unwrap() {
        assert_eq!(s["objects_new"], 0);
        assert_eq!(s["runs_new"], 0);
        assert_eq!(s["rows_new"], 0);
    }
    assert_eq!(heads(&all), want);
    // A merged run verifies (re-executed, every record hash compared).
    ok(&tabula(&all, &["verify", "tiny/init_q=draw/seed=2"]));
    ok(&tabula(&all, &["fsck"]));

    // Plot and report from the merged store.
    let svg = dir.path().join("wr.svg");
    let csv = ok(&tabula(
        &all,
        &[
            "plot",
            "tiny",
            "--metric",
            "wr_p",
            "--out",
            svg.to_str().unwrap(),
            "--csv",
        ],
    ));
    assert_eq!(csv.lines().count(), 1 + 2 * 4, "{csv}");
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(
        picture.contains("<svg") && picture.contains("<polyline"),
        "{picture}"
    );
    let out = dir.path().join("report");
    ok(&tabula(
        &all,
        &["report", "tiny", "--out", out.to_str().unwrap()],
    ));
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    for needle in [
        "Summary per grid point",
        "init_q=draw",
        "wr_p final",
        "<svg",
        "varies:",
    ] {
        assert!(page.contains(needle), "{needle}");
    }
    // The page does not depend on which store (whole or merged) it came from.
    let out2 = dir.path().join("report2");
    ok(&tabula(
        &whole,
        &["report", "tiny", "--out", out2.to_str().unwrap()],
    ));
    let page2 = std::fs::read_to_string(out2.join("index.html")).unwrap();
    let strip = |p: &str| {
        // Run ids differ between the stores (renumbered); everything else is equal.
        p.split("<h2>Runs</h2>").next().unwrap().to_string()
    };
    assert_eq!(strip(&page), strip(&page2));
}

#[test]
fn a_killed_sweep_continues_to_the_same_heads() {
    let dir = tempfile::tempdir().unwrap();
    let file = setup(dir.path(), 4, 300);
    let f = file.to_str().unwrap();
    let whole = dir.path().join("whole.db");
    ok(&tabula(&whole, &["sweep", f, "--threads", "1"]));
    let want = heads(&whole);

    let killed = dir.path().join("killed.db");
    for round in 0..2 {
        let mut child = bin()
            .arg("--db")
            .arg(&killed)
            .args(["sweep", f, "--jobs", "2", "--threads", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill it once some work is committed (a later round kills it further along).
        let t = Instant::now();
        let target = 2 + 4 * round;
        loop {
            std::thread::sleep(Duration::from_millis(30));
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            let done = Command::new(env!("CARGO_BIN_EXE_tabula"))
                .arg("--db")
                .arg(&killed)
                .args([
                    "sql",
                    "--csv",
                    "SELECT coalesce(sum(iterations_done), 0) FROM runs",
                ])
                .output()
                .ok()
                .and_then(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .nth(1)
                        .map(str::to_string)
                })
                .and_then(|l| l.trim().parse::<u32>().ok())
                .unwrap_or(0);
            if done >= target || t.elapsed() > Duration::from_secs(60) {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    let out = json(&tabula(&killed, &["sweep", f, "--json"]));
    assert_eq!(out["runs"].as_array().unwrap().len(), 4);
    assert_eq!(heads(&killed), want);
}

#[test]
fn run_set_and_branch_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), 2, 30);
    let base = dir.path().join("base.toml");
    let db = dir.path().join("t.db");
    // --set is the same as writing the keys into the spec.
    let a = json(&tabula(
        &db,
        &[
            "run",
            base.to_str().unwrap(),
            "--set",
            "search.init_q=draw",
            "--set",
            "seed=7",
            "--json",
        ],
    ));
    let text = std::fs::read_to_string(&base)
        .unwrap()
        .replace("seed = 1", "seed = 7")
        .replace("[search]\n", "[search]\ninit_q = \"draw\"\n");
    let written = dir.path().join("written.toml");
    std::fs::write(&written, text).unwrap();
    let b = json(&tabula(
        &db,
        &[
            "run",
            written.to_str().unwrap(),
            "--set",
            "name=written",
            "--json",
        ],
    ));
    assert_eq!(a["head"], b["head"]);
    // A fresh branch with the parent's seed and no change replays the parent.
    let parent = a["run"].to_string();
    let c = json(&tabula(
        &db,
        &["branch", &parent, "--at", "0", "--seed", "7", "--json"],
    ));
    assert_eq!(c["head"], a["head"]);
    // With a change, it differs and names itself after the parent.
    let d = json(&tabula(
        &db,
        &[
            "branch",
            &parent,
            "--at",
            "0",
            "--set",
            "search.simulations=12",
            "--json",
        ],
    ));
    assert_ne!(d["head"], a["head"]);
    // Names are unique: the second default branch name gets a number.
    assert_eq!(c["name"], "base-branch");
    assert_eq!(d["name"], "base-branch-2");
    for (set, key, allowed) in [
        ("search.simulationz=3", "search.simulationz", "allowed"),
        (
            "search.simulations=0",
            "search.simulations",
            "allowed: an integer >=",
        ),
    ] {
        let e = fails(&tabula(&db, &["run", base.to_str().unwrap(), "--set", set]));
        assert!(e.contains(key) && e.contains(allowed), "{set}: {e}");
    }
}

#[test]
fn bad_input_is_refused_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = setup(dir.path(), 2, 20);
    let d = dir.path();
    let db = d.join("x.db");
    let write = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let cases = [
        ("\"search.bogus\" = [1, 2]", "search.bogus"),
        ("\"search.simulations\" = [0, 5]", "search.simulations"),
        ("\"search.c_puct\" = [-1.0]", "search.c_puct"),
        ("\"search.init_q\" = [\"maybe\"]", "maybe"),
        ("\"window\" = []", "empty"),
        ("\"seed\" = [1, 2]", "seeds"),
        ("\"window\" = [1, 1]", "twice"),
    ];
    for (axis, needle) in cases {
        let p = write(
            "bad.toml",
            &format!("name = \"bad\"\nbase = \"base.toml\"\nseeds = [1]\n[axes]\n{axis}\n"),
        );
        let e = fails(&tabula(&db, &["sweep", p.to_str().unwrap()]));
        assert!(e.contains(needle), "{axis}: {e}");
    }
    let p = write(
        "noseeds.toml",
        "name = \"bad\"\nbase = \"base.toml\"\nseeds = []\n",
    );
    assert!(fails(&tabula(&db, &["sweep", p.to_str().unwrap()])).contains("empty"));
    let p = write(
        "nobase.toml",
        "name = \"bad\"\nbase = \"missing.toml\"\nseeds = [1]\n",
    );
    assert!(fails(&tabula(&db, &["sweep", p.to_str().unwrap()])).contains("missing.toml"));
    for shard in ["0/2", "3/2", "1/0", "x"] {
        let e = fails(&tabula(
            &db,
            &["sweep", file.to_str().unwrap(), "--shard", shard],
        ));
        assert!(e.contains("--shard"), "{shard}: {e}");
    }
    assert!(!db.exists(), "a refused sweep wrote a store");

    // Merge: a store of another schema version, a damaged record, a conflicting run.
    let good = d.join("good.db");
    ok(&tabula(
        &good,
        &["sweep", file.to_str().unwrap(), "--shard", "1/2"],
    ));
    let copy = |name: &str| {
        let p = d.join(name);
        std::fs::copy(&good, &p).unwrap();
        rusqlite::Connection::open(&p).unwrap()
    };
    let old = copy("old.db");
    old.pragma_update(None, "user_version", 3).unwrap();
    drop(old);
    let damaged = copy("damaged.db");
    damaged
        .execute(
            "UPDATE packs SET bytes = X'00' || bytes WHERE id = (SELECT max(id) FROM packs)",
            [],
        )
        .unwrap();
    drop(damaged);
    let into = d.join("into.db");
    let i = into.to_str().unwrap();
    for (src, needle) in [("old.db", "schema version 3"), ("damaged.db", "damaged")] {
        let p = d.join(src);
        let e = fails(&tabula(
            &into,
            &[
                "merge",
                good.to_str().unwrap(),
                p.to_str().unwrap(),
                "--into",
                i,
            ],
        ));
        assert!(e.contains(needle) && e.contains(src), "{src}: {e}");
        assert!(!into.exists(), "{src}: a refused merge left {i}");
    }
    // An existing destination is left exactly as it was.
    ok(&tabula(
        &into,
        &["merge", good.to_str().unwrap(), "--into", i],
    ));
    let before = heads(&into);
    let conflict = copy("conflict.db");
    conflict
        .execute(
            "UPDATE runs SET head = (SELECT hash FROM iterations i WHERE i.run_id = runs.id AND \
             i.iteration = 1) WHERE id = 1",
            [],
        )
        .unwrap();
    drop(conflict);
    let p = d.join("conflict.db");
    let e = fails(&tabula(&into, &["merge", p.to_str().unwrap(), "--into", i]));
    // A head moved behind the row's back is a row that disagrees with its chain: refused
    // before the destination is touched (as fsck names it), not copied in.
    assert!(e.contains("disagree with their chains"), "{e}");
    let p = d.join("damaged.db");
    fails(&tabula(&into, &["merge", p.to_str().unwrap(), "--into", i]));
    assert_eq!(heads(&into), before);
    let n = json(&tabula(
        &into,
        &["sql", "--json", "SELECT count(*) AS n FROM objects"],
    ));
    let m = json(&tabula(
        &good,
        &["sql", "--json", "SELECT count(*) AS n FROM objects"],
    ));
    assert_eq!(n, m);
}

/// Grid order, names and shards, without running anything.
#[test]
fn grids_shards_and_names() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), 2, 20);
    let text = "name = \"g\"\nbase = \"base.toml\"\nseeds = [5, 6, 7]\n[set]\niterations = 4\n\
                [axes]\n\"search.simulations\" = [6, 12, 25]\n\"search.init_q\" = [\"loss\", \"draw\", \"win\", \"first\"]\n\
                \"eval.games\" = [100]\n";
    let s = Sweep::parse(text, dir.path()).unwrap();
    assert_eq!(s.runs.len(), 3 * 4 * 3);
    assert_eq!(s.points(), 12);
    // Axes sorted by key, the first slowest; seeds fastest.
    assert_eq!(
        s.runs[0].cfg.name,
        "g/games=100,init_q=loss,simulations=6/seed=5"
    );
    assert_eq!(
        s.runs[1].cfg.name,
        "g/games=100,init_q=loss,simulations=6/seed=6"
    );
    assert_eq!(
        s.runs[3].cfg.name,
        "g/games=100,init_q=loss,simulations=12/seed=5"
    );
    assert_eq!(
        s.runs[35].cfg.name,
        "g/games=100,init_q=first,simulations=25/seed=7"
    );
    assert!(s.runs.iter().all(|r| r.cfg.iterations == 4));
    // [set] iterations = 4: the default schedule follows it (beta 0.1 from 4/2 + 1).
    assert_eq!(
        s.runs[0].cfg.settings.learning_rate,
        vec![(1, 1.0), (3, 0.1)]
    );
    // Every run hash distinct; the same file gives the same sweep hash.
    let hashes: std::collections::BTreeSet<_> = s.runs.iter().map(|r| r.run_hash).collect();
    assert_eq!(hashes.len(), 36);
    assert_eq!(Sweep::parse(text, dir.path()).unwrap().hash, s.hash);
    // Shards partition the runs, for any count.
    for n in 1..=8u32 {
        let mut seen = vec![0; s.runs.len()];
        for i in 1..=n {
            let sh: Shard = format!("{i}/{n}").parse().unwrap();
            for r in &s.runs {
                if sh.contains(r.index) {
                    seen[r.index] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{n}");
    }
}
