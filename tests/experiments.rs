//! Sweeps, shards, merge, plots and the report through the binary (docs/experiments.md): a
//! 2-value x 2-seed sweep run whole and as two shards merged gives the same heads; a killed
//! sweep continues to the same heads; `run --set` and `branch --at 0`; bad input refused
//! with nothing written.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tabula::experiments::sweep::{Shard, Sweep};

use crate::binary;
use crate::python;
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
    let out = json(&tabula(
        &whole,
        &["sweep", f, "--no-calibrate", "--threads", "2", "--json"],
    ));
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
    let again = json(&tabula(&whole, &["sweep", f, "--no-calibrate", "--json"]));
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
    let said = ok(&tabula(
        &s1,
        &[
            "sweep",
            f,
            "--no-calibrate",
            "--shard",
            "1/2",
            "--threads",
            "1",
        ],
    ));
    // The work ahead in plain words (issue 48): 2 runs of 3 iterations of 40 games.
    assert!(
        said.contains("2 runs to run (6 iterations, 240 self-play games), 0 already finished"),
        "{said}"
    );
    ok(&tabula(
        &s2,
        &[
            "sweep",
            f,
            "--no-calibrate",
            "--shard",
            "2/2",
            "--threads",
            "1",
        ],
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
            "SELECT name, head FROM sweep_runs WHERE sweep = 'tiny' ORDER BY point, seed_index",
        ],
    ));
    assert_eq!(rows.as_array().unwrap().len(), 4);
    for r in rows.as_array().unwrap() {
        assert_eq!(
            want[r["name"].as_str().unwrap()],
            r["head"].as_str().unwrap()
        );
    }
    // The tidy table: a row per run and iteration (0 to 3), the axis and the settings as
    // columns, the metrics of each row those `show` gives.
    let tidy = json(&tabula(&all, &["export", "tiny", "--sweep", "--json"]));
    let tidy = tidy.as_array().unwrap();
    assert_eq!(tidy.len(), 4 * 4);
    for r in tidy {
        assert_eq!(r["sweep"], "tiny");
        assert_eq!(r["axis.search.init_q"], r["init_q"], "{r}");
        let shown = json(&tabula(&all, &["show", &r["run_id"].to_string(), "--json"]));
        let it = r["iteration"].as_u64().unwrap() as usize;
        assert_eq!(shown["metrics"][it]["wr_p"], r["wr_p"], "{r}");
    }
    let csv = ok(&tabula(&all, &["export", "tiny", "--sweep"]));
    assert_eq!(csv.lines().count(), 1 + 16);
    assert!(csv.starts_with("sweep,point,seed_index,axis.search.init_q,run_id,iteration,"));
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
    // The figure says what it shows (issue 48): metric, seeds, interval, sweep, commit, date.
    for needle in [
        ">wr_p: mean over 2 seeds a point</text>",
        ">interval: 95% Student-t interval over the seeds</text>",
        ">sweep tiny (",
        "; commit ",
        "; run 20",
    ] {
        assert!(picture.contains(needle), "{needle}: {picture}");
    }
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
        "<p class=\"provenance\">Built from commit ",
        "class=\"caption\"",
        // One axis: its second value against its first, both seeds paired.
        "<td class=\"l\">init_q=draw − init_q=loss</td><td class=\"l\"></td><td>2</td>",
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
        // Run ids differ between the stores (renumbered), and the two sweeps may have run on
        // either side of midnight (the captions' dates); everything else is equal.
        undated(p.split("<h2 id=\"runs\">Runs</h2>").next().unwrap())
            .replace("YYYY-MM-DD to YYYY-MM-DD", "YYYY-MM-DD")
    };
    assert_eq!(strip(&page), strip(&page2));
}

/// `text` with every date (`YYYY-MM-DD`) written as `YYYY-MM-DD`.
fn undated(text: &str) -> String {
    let b = text.as_bytes();
    let is_date = |w: &[u8]| {
        w.len() == 10
            && w.iter().enumerate().all(|(i, c)| match i {
                4 | 7 => *c == b'-',
                _ => c.is_ascii_digit(),
            })
    };
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b.len() - i >= 10 && is_date(&b[i..i + 10]) {
            out.extend_from_slice(b"YYYY-MM-DD");
            i += 10;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("dates are ASCII")
}

#[test]
fn a_killed_sweep_continues_to_the_same_heads() {
    let dir = tempfile::tempdir().unwrap();
    let file = setup(dir.path(), 4, 300);
    let f = file.to_str().unwrap();
    let whole = dir.path().join("whole.db");
    ok(&tabula(
        &whole,
        &["sweep", f, "--no-calibrate", "--threads", "1"],
    ));
    let want = heads(&whole);

    let killed = dir.path().join("killed.db");
    for round in 0..2 {
        let mut child = bin()
            .arg("--db")
            .arg(&killed)
            .args([
                "sweep",
                f,
                "--no-calibrate",
                "--jobs",
                "2",
                "--threads",
                "2",
            ])
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
    let out = json(&tabula(&killed, &["sweep", f, "--no-calibrate", "--json"]));
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
    // A branch is named after its changes (the override's value) and its branch point;
    // names are unique: the same changes again get a number.
    assert_eq!(c["name"], "base+seed=7@0");
    assert_eq!(d["name"], "base+simulations=12@0");
    let e = json(&tabula(
        &db,
        &[
            "branch",
            &parent,
            "--at",
            "0",
            "--set",
            "search.simulations=12",
            "--no-run",
            "--json",
        ],
    ));
    let e = json(&tabula(
        &db,
        &[
            "sql",
            "--json",
            &format!("SELECT name FROM runs WHERE id = {}", e["run"]),
        ],
    ));
    assert_eq!(e[0]["name"], "base+simulations=12@0-2");
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
        &[
            "sweep",
            file.to_str().unwrap(),
            "--no-calibrate",
            "--shard",
            "1/2",
        ],
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

/// A sweep file edited to add a seed and a value (issue 24): refused without --extend, saying
/// what it adds and naming the flag; with it, the stored sweep grows under its one name, its
/// finished runs kept (same ids and heads), only the new ones run; each finished run's line
/// shows its final metrics, not a hash. A file dropping a stored run is refused either way;
/// --dry-run estimates the cost from the runs in the store.
#[test]
fn an_edited_sweep_grows_under_its_name_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = setup(dir.path(), 2, 20);
    let f = file.to_str().unwrap();
    let db = dir.path().join("grow.db");
    let first = ok(&tabula(&db, &["sweep", f, "--threads", "1"]));
    assert!(first.contains("[4/4] run"), "{first}");
    // Before the runs start, the unmeasured grid points are calibrated and the start line
    // carries the estimate --dry-run would give (issue 48).
    assert!(
        first.contains("calibrating: iteration 1") && first.contains("  point 1, iterations 1-2: "),
        "{first}"
    );
    assert!(
        first.contains(
            "4 runs to run (8 iterations, 160 self-play games), 0 already finished; about 0:0"
        ) && first.contains("calibrated on iteration 1)"),
        "{first}"
    );
    assert!(
        first.contains("WR_p 0.") && first.contains("MAE_v 0."),
        "{first}"
    );
    let before = heads(&db);
    let ids = |db: &Path| {
        json(&tabula(db, &["ls", "--json"]))
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["name"].as_str().unwrap().to_string(), r["id"].clone()))
            .collect::<BTreeMap<_, _>>()
    };
    let ids_before = ids(&db);

    std::fs::write(
        &file,
        "name = \"tiny\"\nbase = \"base.toml\"\nseeds = [1, 2, 3]\n[axes]\n\
         \"search.init_q\" = [\"loss\", \"draw\", \"win\"]\n",
    )
    .unwrap();
    let err = fails(&tabula(&db, &["sweep", f, "--threads", "1"]));
    assert!(
        err.contains("grows the stored sweep of that name")
            && err.contains("to 9 runs (seeds 3; search.init_q = \"win\")")
            && err.contains("--extend"),
        "{err}"
    );
    let dry = ok(&tabula(&db, &["sweep", f, "--dry-run", "--threads", "1"]));
    assert!(
        dry.contains("by 5 runs") && dry.contains("estimated cost: 0:"),
        "{dry}"
    );
    assert!(
        dry.contains("tiny/init_q=loss/seed=1  2 iterations"),
        "{dry}"
    );
    assert!(dry.contains("finished") && dry.contains("new"), "{dry}");

    let grown = json(&tabula(
        &db,
        &[
            "sweep",
            f,
            "--no-calibrate",
            "--extend",
            "--threads",
            "1",
            "--json",
        ],
    ));
    let runs = grown["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 9);
    assert_eq!(runs.iter().filter(|r| r["status"] == "finished").count(), 4);
    assert_eq!(runs.iter().filter(|r| r["status"] == "done").count(), 5);
    let after = heads(&db);
    let ids_after = ids(&db);
    for (name, head) in &before {
        assert_eq!(&after[name], head, "{name}");
        assert_eq!(ids_after[name], ids_before[name], "{name}");
    }
    assert_eq!(after.len(), 9);
    // One sweep of the name, with all nine members; `report` finds it.
    let rows = json(&tabula(
        &db,
        &[
            "sql",
            "--json",
            "SELECT (SELECT count(*) FROM sweeps WHERE name = 'tiny') AS sweeps, \
             (SELECT count(*) FROM sweep_runs WHERE sweep = 'tiny') AS members",
        ],
    ));
    assert_eq!(
        (rows[0]["sweeps"].as_i64(), rows[0]["members"].as_i64()),
        (Some(1), Some(9))
    );
    // Running it again continues (nothing to do) without --extend.
    let again = json(&tabula(&db, &["sweep", f, "--no-calibrate", "--json"]));
    assert!(
        again["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "finished")
    );

    // Dropping a stored seed is refused, with or without --extend.
    std::fs::write(
        &file,
        "name = \"tiny\"\nbase = \"base.toml\"\nseeds = [1, 2]\n[axes]\n\
         \"search.init_q\" = [\"loss\", \"draw\", \"win\"]\n",
    )
    .unwrap();
    let err = fails(&tabula(&db, &["sweep", f, "--extend"]));
    assert!(
        err.contains("3 of its 9 runs are not in this file's grid (seeds 3 left out)")
            && err.contains("another `name`"),
        "{err}"
    );
}

/// The points of the `polyline.line` of each `g.series` of an SVG, by label.
fn svg_lines(svg: &str) -> BTreeMap<String, Vec<(f64, f64)>> {
    let mut out = BTreeMap::new();
    for part in svg.split("<g class=\"series\" data-label=\"").skip(1) {
        let label = part.split('"').next().unwrap().to_string();
        let line = part
            .split("<polyline class=\"line\" points=\"")
            .nth(1)
            .expect("each series has a line");
        let pts = line
            .split('"')
            .next()
            .unwrap()
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        out.insert(label, pts);
    }
    out
}

/// An attribute of the first element that opens with `open`.
fn svg_attr(svg: &str, open: &str, name: &str) -> Option<String> {
    let at = svg.find(open)?;
    let rest = &svg[at..];
    let end = rest.find('>')?;
    let tag = &rest[..end];
    let k = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(tag[k..].split('"').next()?.to_string())
}

/// The 2023 study's Fig. 20 form (issue 24): `plot --x AXIS --by AXIS` draws a line per value
/// of --by over the values of --x, mean and interval over the seeds' finished runs, a reference
/// line at WR_p 0.5, the legend beside the plot; an unfinished run is left out and counted;
/// the report opens with these figures, a table of contents and pivoted tables.
#[test]
fn final_values_against_an_axis_one_line_per_value() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), 2, 20);
    let file = dir.path().join("grid.toml");
    std::fs::write(
        &file,
        "name = \"grid\"\nbase = \"base.toml\"\nseeds = [1, 2]\n[axes]\n\
         \"search.init_q\" = [\"loss\", \"draw\"]\n\"search.simulations\" = [4, 8, 16]\n",
    )
    .unwrap();
    let db = dir.path().join("grid.db");
    ok(&tabula(
        &db,
        &[
            "sweep",
            file.to_str().unwrap(),
            "--no-calibrate",
            "--threads",
            "1",
        ],
    ));
    // One run made unfinished (as if interrupted with more iterations planned).
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute(
            "UPDATE runs SET iterations_planned = 5, status = 'running' \
             WHERE name = 'grid/init_q=draw,simulations=16/seed=2'",
            [],
        )
        .unwrap();
    }
    let svg = dir.path().join("fig20.svg");
    let plot = |extra: &[&str]| {
        // (the metric: wr_p unless --metric is given)
        let mut args = vec!["plot", "grid", "--out", svg.to_str().unwrap()];
        args.extend_from_slice(extra);
        tabula(&db, &args)
    };
    let out = plot(&[
        "--x",
        "search.simulations",
        "--by",
        "search.init_q",
        "--csv",
    ]);
    let csv = ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("1 unfinished runs left out"),
        "{:?}",
        out
    );
    // line, x, mean, lo, hi, seeds: 2 lines x 3 values; the unfinished run is not averaged in.
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 6, "{csv}");
    let cell = |line: &str, x: &str| {
        rows.iter()
            .find(|r| r[0] == format!("\"init_q={line}\"") && r[1] == format!("\"{x}\""))
            .unwrap_or_else(|| panic!("{line} {x}: {csv}"))
            .clone()
    };
    assert_eq!(cell("draw", "16")[5], "1");
    assert_eq!(cell("loss", "16")[5], "2");
    let picture = std::fs::read_to_string(&svg).unwrap();
    let lines = svg_lines(&picture);
    assert_eq!(
        lines.keys().cloned().collect::<Vec<_>>(),
        ["init_q=draw", "init_q=loss"],
        "{picture}"
    );
    assert!(lines.values().all(|pts| pts.len() == 3), "{lines:?}");
    // The reference line at 0.5 spans the plot; the legend sits right of it.
    let ref_y = svg_attr(&picture, "<line class=\"ref\"", "data-y");
    assert_eq!(ref_y.as_deref(), Some("0.5"), "{picture}");
    let plot_right: f64 = svg_attr(&picture, "<line class=\"ref\"", "x2")
        .unwrap()
        .parse()
        .unwrap();
    let legend = &picture[picture.find("<g class=\"legend\">").unwrap()..];
    let legend_x: f64 = svg_attr(legend, "<line", "x1").unwrap().parse().unwrap();
    assert!(
        legend_x > plot_right,
        "legend at {legend_x}, plot ends at {plot_right}"
    );
    // Each line: its own dash pattern and markers, not colour alone.
    let dashes: Vec<Option<String>> = picture
        .split("<polyline class=\"line\"")
        .skip(1)
        .map(|p| svg_attr(&format!("<x{p}"), "<x", "stroke-dasharray"))
        .collect();
    assert_eq!(dashes.len(), 2);
    assert_ne!(dashes[0], dashes[1]);
    assert!(picture.matches("class=\"marker\"").count() >= 6);
    // Higher is better on the SVG's y (pixels grow downwards): a point's y matches its mean's
    // order among the CSV rows of its line.
    let means: Vec<f64> = ["4", "8", "16"]
        .iter()
        .map(|x| cell("loss", x)[2].parse().unwrap())
        .collect();
    let ys: Vec<f64> = lines["init_q=loss"].iter().map(|p| p.1).collect();
    for a in 0..3 {
        for b in 0..3 {
            if means[a] > means[b] + 1e-9 {
                assert!(ys[a] < ys[b], "{means:?} {ys:?}");
            }
        }
    }
    // Counts get integer ticks.
    ok(&plot(&[
        "--x",
        "search.simulations",
        "--by",
        "search.init_q",
        "--metric",
        "updated_1",
    ]));
    let counts = std::fs::read_to_string(&svg).unwrap();
    assert!(!counts.contains("<line class=\"ref\""));
    for tick in counts.split("class=\"tick\"").skip(1) {
        let text = tick.split('>').nth(1).unwrap().split('<').next().unwrap();
        assert!(!text.contains('.'), "tick {text}");
    }
    // Bad requests name what is allowed.
    let err = fails(&plot(&["--x", "search.simulations"]));
    assert!(
        err.contains("axis `search.init_q` has several values")
            && err.contains("--by search.init_q"),
        "{err}"
    );
    let err = fails(&plot(&[
        "--x",
        "search.simulations",
        "--by",
        "search.simulations",
    ]));
    assert!(err.contains("the same axis as --x"), "{err}");
    let err = fails(&plot(&["--x", "window"]));
    assert!(
        err.contains(
            "--x window: not an axis of sweep grid; axes: search.init_q, search.simulations"
        ),
        "{err}"
    );
    let err = fails(&plot(&[
        "--x",
        "search.simulations",
        "--by",
        "search.init_q",
        "--at",
        "last",
    ]));
    assert!(err.contains("--at last: allowed: final"), "{err}");
    ok(&plot(&[
        "--x",
        "search.simulations",
        "--where",
        "search.init_q=loss",
        "--at",
        "auc",
    ]));

    // The report opens with the contents and these figures; tables pivoted; the unfinished
    // run counted, not averaged in.
    let out = dir.path().join("report");
    ok(&tabula(
        &db,
        &["report", "grid", "--out", out.to_str().unwrap()],
    ));
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    let at = |needle: &str| page.find(needle).unwrap_or_else(|| panic!("{needle}"));
    assert!(
        at("<nav><h2>Contents</h2>") < at("id=\"finals\"")
            && at("id=\"finals\"") < at("id=\"settings\"")
    );
    assert!(at("id=\"finals\"") < at("id=\"curves\""));
    assert_eq!(page.matches("<div class=\"fig final\"").count(), 4);
    assert!(page.contains("<th>simulations=16</th>"), "pivot");
    assert!(page.contains("1 unfinished runs left out of this table."));
    // Paired per seed: init_q=draw against loss at each simulations value; at 16 the draw
    // line's seed 2 is unfinished, so one seed pairs and there is no interval.
    let paired = &page[at("<table class=\"paired\" data-metric=\"wr_p\"")..];
    let paired = &paired[..paired.find("</table>").unwrap()];
    assert_eq!(
        paired
            .matches("<tr><td class=\"l\">init_q=draw − init_q=loss</td>")
            .count(),
        3,
        "{paired}"
    );
    assert!(
        paired.contains("<td class=\"l\">simulations=16</td><td>1</td><td>")
            && paired.contains("(one pair: no interval)"),
        "{paired}"
    );
    assert!(
        paired.contains("<td class=\"l\">simulations=4</td><td>2</td><td>"),
        "{paired}"
    );
    // Every WR_p figure shares one y-range: the reference line sits at the same height.
    let ys: Vec<String> = page
        .split("<line class=\"ref\"")
        .skip(1)
        .map(|p| svg_attr(&format!("<x{p}"), "<x", "y1").unwrap())
        .collect();
    assert!(ys.len() >= 3, "{ys:?}");
    assert!(ys.windows(2).all(|w| w[0] == w[1]), "{ys:?}");
}

/// The fenced ```python block of docs/python.md that is its complete example (the last one).
fn python_example() -> String {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/python.md"))
        .unwrap();
    let start = doc.rfind("```python\n").expect("a python block") + "```python\n".len();
    let end = start + doc[start..].find("```").expect("the block ends");
    doc[start..end].to_string()
}

/// docs/python.md lists every view of a new store with its columns as they are (the two
/// views whose columns depend on the settings and metrics by their fixed ones), and its
/// example runs on a store with a run and a branch and gives tabula's own numbers.
#[test]
fn python_example_reads_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let spec = dir.path().join("a.toml");
    std::fs::write(
        &spec,
        "name = \"a\"\nvariant = \"ewn:3x3x3\"\nseed = 2\niterations = 3\n\
         games_per_iteration = 60\n[search]\nsimulations = 20\n[eval]\ngames = 200\n",
    )
    .unwrap();
    ok(&tabula(
        &db,
        &["run", spec.to_str().unwrap(), "--threads", "1"],
    ));
    ok(&tabula(
        &db,
        &[
            "branch",
            "a",
            "--at",
            "1",
            "--set",
            "search.init_q=draw",
            "--threads",
            "1",
        ],
    ));

    // The views table against the schema.
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/python.md"))
        .unwrap();
    let documented: BTreeMap<String, Vec<String>> = doc
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells
                .get(1)?
                .strip_prefix('`')?
                .strip_suffix('`')?
                .to_string();
            let cols = cells.get(2)?.split(", ").filter_map(|c| {
                let c = c.split_whitespace().next()?;
                Some(c.strip_prefix('`')?.strip_suffix('`')?.to_string())
            });
            Some((name, cols.collect()))
        })
        .collect();
    let views = json(&tabula(
        &db,
        &[
            "sql",
            "--json",
            "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name",
        ],
    ));
    for v in views.as_array().unwrap() {
        let v = v["name"].as_str().unwrap();
        let cols = json(&tabula(
            &db,
            &[
                "sql",
                "--json",
                &format!("SELECT name FROM pragma_table_info('{v}')"),
            ],
        ));
        let cols: Vec<String> = cols
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        let doc_cols = documented
            .get(v)
            .unwrap_or_else(|| panic!("view {v} is not in docs/python.md"));
        if v == "run_settings" || v == "metrics_wide" {
            assert_eq!(&cols[..4], &doc_cols[..4], "{v}");
            assert!(
                doc_cols.iter().all(|c| cols.contains(c)),
                "{v}: {doc_cols:?}"
            );
        } else {
            assert_eq!(&cols, doc_cols, "{v} in docs/python.md");
        }
    }

    let py = match python::python() {
        Ok(py) => py,
        Err(why) => {
            eprintln!(
                "\n!!!!!!!!\n!!! SKIPPED: docs/python.md's example did not run: {why}\n!!!!!!!!\n"
            );
            return;
        }
    };
    let script = dir.path().join("example.py");
    std::fs::write(&script, python_example()).unwrap();
    let out = Command::new(&py).arg(&script).arg(&db).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    for (run, inherited) in [("1", 0), ("2", 1)] {
        let shown = json(&tabula(&db, &["show", run, "--json"]));
        let last = shown["metrics"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(r["final_wr_p"][run], last["wr_p"], "run {run}: {stdout}");
        assert_eq!(r["final_iteration"][run], 3, "run {run}");
        assert_eq!(r["inherited"][run], inherited, "run {run}: {stdout}");
    }
}

/// --dry-run of a sweep over a staged spec (`[[stage]]`, docs/learners.md) calibrates one
/// iteration of each stage, each in force with its own overrides, and weights them by the
/// stage's iterations; nothing is written to the store.
#[test]
fn a_staged_sweep_is_calibrated_stage_by_stage() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("staged.toml"),
        "variant = \"ewn:3x3x3\"\nseed = 1\ngames_per_iteration = 20\n[search]\n\
         simulations = 10\n[eval]\ngames = 100\n\
         [[stage]]\nname = \"few\"\niterations = 3\n\
         [[stage]]\nname = \"many\"\niterations = 2\nset = { games_per_iteration = 400 }\n",
    )
    .unwrap();
    let file = dir.path().join("sw.toml");
    std::fs::write(
        &file,
        "name = \"staged\"\nbase = \"staged.toml\"\nseeds = [1, 2]\n",
    )
    .unwrap();
    let db = dir.path().join("staged.db");
    let dry = ok(&tabula(
        &db,
        &[
            "sweep",
            file.to_str().unwrap(),
            "--dry-run",
            "--threads",
            "1",
        ],
    ));
    let per = |range: &str| -> f64 {
        let line = dry
            .lines()
            .find(|l| l.contains(range))
            .unwrap_or_else(|| panic!("{dry}"));
        let s = line.rsplit(": ").next().unwrap();
        s.trim_end_matches(" s per iteration").parse().unwrap()
    };
    // Twenty times the games: the second stage costs more an iteration.
    let (few, many) = (
        per("point 0, iterations 1-3"),
        per("point 0, iterations 4-5"),
    );
    assert!(many > few, "{dry}");
    assert!(dry.contains("estimated cost: 0:"), "{dry}");
    assert!(!db.exists(), "a dry run wrote the store");
}

/// A study's arms as sweeps of their own (issue 50: AlphaZero and MuZero differ in a
/// learner table no axis can vary): `plot A --with B` draws both in one figure, each line
/// labelled with its sweep; `--metrics` draws several metrics' final values along x, x
/// labelled by what follows their shared prefix; misuse is refused with the reason.
#[test]
fn several_sweeps_and_several_metrics_in_one_figure() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = setup(dir.path(), 2, 20);
    let other = dir.path().join("other.toml");
    std::fs::write(
        &other,
        "name = \"other\"\nbase = \"base.toml\"\nseeds = [1, 2]\n[set]\n\"search.simulations\" = 4\n",
    )
    .unwrap();
    let db = dir.path().join("arms.db");
    for f in [&tiny, &other] {
        ok(&tabula(
            &db,
            &[
                "sweep",
                f.to_str().unwrap(),
                "--no-calibrate",
                "--threads",
                "1",
            ],
        ));
    }
    let svg = dir.path().join("arms.svg");
    let plot = |extra: &[&str]| {
        let mut args = vec!["plot", "tiny", "--out", svg.to_str().unwrap()];
        args.extend_from_slice(extra);
        tabula(&db, &args)
    };
    let csv = ok(&plot(&[
        "--with",
        "other",
        "--where",
        "search.init_q=loss",
        "--csv",
    ]));
    let labels: std::collections::BTreeSet<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split('"').nth(1).unwrap())
        .collect();
    assert_eq!(
        labels.into_iter().collect::<Vec<_>>(),
        ["other", "tiny"],
        "{csv}"
    );
    // Two iterations (and the baseline, iteration 0) a line, two seeds a point.
    assert_eq!(csv.lines().count(), 1 + 2 * 3, "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",2")), "{csv}");
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(
        picture.contains("sweep other ("),
        "the caption names both sweeps"
    );
    assert!(picture.contains("sweep tiny ("));

    let csv = ok(&plot(&[
        "--with",
        "other",
        "--metrics",
        "wr_p,err_p",
        "--csv",
    ]));
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    // 3 lines (tiny's two grid points, other's one) x 2 metrics.
    assert_eq!(rows.len(), 6, "{csv}");
    assert!(
        rows.iter()
            .any(|r| r[0] == "\"other\"" && r[1] == "\"err_p\"")
    );
    let out = ok(&plot(&["--metrics", "mae_v,mae_v"]));
    assert!(
        out.contains("1 lines of 2 metrics") || out.contains("2 lines of 2 metrics"),
        "{out}"
    );

    let err = fails(&plot(&["--with", "other", "--x", "search.init_q"]));
    assert!(err.contains("--x and --by draw one sweep's axis"), "{err}");
    let err = fails(&plot(&["--with", "nosuch"]));
    assert!(err.contains("nosuch"), "{err}");
    let err = fails(&plot(&["--metrics", "wr_p,err_p", "--metric", "mae_v"]));
    assert!(err.contains("give the metrics in --metrics alone"), "{err}");
    let err = fails(&plot(&["--metrics", "no_such,other_one"]));
    assert!(err.contains("no final values"), "{err}");
}
