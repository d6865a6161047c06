//! The run lifecycle through the binary (docs/store.md: Resume, Branch, Replay and verify):
//! kill -9 and resume, the run lock, two processes on one store, branches, verify and fsck
//! after a byte of a stored record is changed, checkout.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rand_core::Rng;

use crate::binary;
use binary::{bin, fails, json, ok, tabula};

fn spawn(db: &Path, args: &[&str]) -> Child {
    bin()
        .arg("--db")
        .arg(db)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts")
}

fn sql(db: &Path, q: &str) -> serde_json::Value {
    json(&tabula(db, &["sql", "--json", q]))
}

/// Writes `text` to `dir/NAME.toml`; returns the path.
fn write_spec(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A small spec: EWN 3x3x3, 600 games per iteration (3 batches), 0.15 s or so an iteration.
fn spec(dir: &Path, name: &str, seed: u64, iterations: u32) -> String {
    let text = format!(
        r#"
name = "{name}"
variant = "ewn:3x3x3"
seed = {seed}
iterations = {iterations}
games_per_iteration = 600
window = 2
learning_rate = [[1, 1.0], [4, 0.1]]
checkpoint_every = 3

[search]
simulations = 200

[eval]
games = 3000
"#
    );
    write_spec(dir, name, &text)
}

/// A smaller one for the tests that need several runs.
fn tiny(dir: &Path, name: &str, seed: u64, iterations: u32) -> String {
    let text = format!(
        r#"
name = "{name}"
variant = "ewn:3x3x3"
seed = {seed}
iterations = {iterations}
games_per_iteration = 100
window = 2
learning_rate = [[1, 1.0], [3, 0.1]]
checkpoint_every = 2

[search]
simulations = 30

[eval]
games = 300
"#
    );
    write_spec(dir, name, &text)
}

fn head(db: &Path, run: &str) -> String {
    let v = json(&tabula(db, &["show", "--json", run]));
    v["head"].as_str().unwrap_or_default().to_string()
}

/// The runs of a store; none while it does not exist or is not yet migrated (a process
/// killed in its first milliseconds).
fn runs(db: &Path) -> Vec<serde_json::Value> {
    if !db.exists() {
        return Vec::new();
    }
    let out = tabula(db, &["ls", "--json"]);
    if !out.status.success() {
        return Vec::new();
    }
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// Kill -9 at random instants (self-play, training, evaluation, a commit: wherever the delay
/// falls), resume, again and again; the final head equals the uninterrupted run's. The delays
/// come from a seeded ChaCha stream and are printed, so a failure can be reproduced; what is
/// asserted holds whatever they are. Each resume starts from the last coverage set stored (with
/// the iterations where few positions were new; docs/store.md, "Finding a game in a big
/// store"), which the metric `seen` in the evaluation records, and so the head, depend on.
#[test]
fn killed_and_resumed_runs_end_with_the_uninterrupted_head() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(dir.path(), "k", 7, 10);
    kill_and_resume(dir.path(), &s, 10, Some(600), 8, 2026, 0.0);
    // The same iterations store a set whatever the kills (here 5..=10: more than half of the
    // positions of iterations 1-4 were new), the last one among them.
    let q = "SELECT group_concat(iteration) AS i FROM (SELECT iteration FROM run_coverage \
             ORDER BY iteration)";
    let clean = sql(&dir.path().join("clean.db"), q)[0]["i"].clone();
    assert_eq!(sql(&dir.path().join("killed.db"), q)[0]["i"], clean);
    assert!(
        clean.as_str().is_some_and(|i| i.ends_with(",10")),
        "{clean}"
    );
}

/// A moves budget: kill -9 at random instants and resume give the uninterrupted head (the
/// games an interrupted iteration committed are a prefix of the ones it keeps).
#[test]
fn killed_and_resumed_budget_runs_end_with_the_uninterrupted_head() {
    let dir = tempfile::tempdir().unwrap();
    let s = budget_spec(dir.path(), "b", "moves = 6000", 8);
    kill_and_resume(dir.path(), &s, 8, None, 6, 2027, 0.0);
}

/// `spec`'s settings with a `[budget]` (its TOML lines) instead of M.
fn budget_spec(dir: &Path, name: &str, budget: &str, iterations: u32) -> String {
    let path = spec(dir, name, 7, iterations);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("games_per_iteration = 600\n", "");
    std::fs::write(&path, format!("{text}\n[budget]\n{budget}\n")).unwrap();
    path
}

/// T_self: `show` says plainly that the counts came from wall time and are recorded; the
/// run verifies from its store, resumes after a kill, and branches (to a moves budget) and
/// verifies again.
#[test]
fn a_seconds_budget_run_says_so_verifies_resumes_and_branches() {
    let dir = tempfile::tempdir().unwrap();
    let s = budget_spec(dir.path(), "t", "seconds = 0.1", 4);
    let db = dir.path().join("t.db");
    ok(&tabula(&db, &["solve", "ewn:3x3x3"]));
    let mut child = spawn(&db, &["run", &s, "--threads", "2"]);
    std::thread::sleep(Duration::from_millis(700));
    let _ = child.kill();
    child.wait().unwrap();
    match runs(&db).is_empty() {
        true => ok(&tabula(&db, &["run", &s, "--threads", "1"])),
        false => ok(&tabula(&db, &["resume", "t", "--threads", "1"])),
    };
    let show = ok(&tabula(&db, &["show", "t"]));
    assert!(
        show.contains("0.1 s of self-play per iteration (T_self)")
            && show.contains("not from its seed alone"),
        "{show}"
    );
    let v = sql(
        &db,
        "SELECT iteration, games FROM iterations ORDER BY iteration",
    );
    let counts: Vec<u64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["games"].as_u64().unwrap())
        .collect();
    assert_eq!(counts.len(), 4);
    assert!(counts.iter().all(|&k| k >= 1), "{counts:?}");
    let stored = sql(&db, "SELECT sum(games) AS n FROM games_per_iteration")[0]["n"].as_u64();
    assert_eq!(stored, Some(counts.iter().sum::<u64>()));
    for threads in ["1", "2"] {
        let out = ok(&tabula(&db, &["verify", "t", "--threads", threads]));
        assert!(out.contains("identical"), "{out}");
    }
    ok(&tabula(
        &db,
        &[
            "branch",
            "t",
            "--at",
            "2",
            "--set",
            "budget.moves=3000",
            "--seed",
            "5",
        ],
    ));
    // Named after its overrides, the given seed and the branch point.
    ok(&tabula(
        &db,
        &["resume", "t+moves=3000,seed=5@2", "--threads", "2"],
    ));
    let out = ok(&tabula(&db, &["verify", "t+moves=3000,seed=5@2"]));
    assert!(out.contains("identical"), "{out}");
}

/// Runs `spec` (N `iterations` of `games` games, `None`: a budget decides) uninterrupted,
/// then again with kill -9 at `lives` seeded random instants (each at least `min_fraction`
/// of the uninterrupted run's time into its life) and resumes; the heads agree. Returns the
/// head.
fn kill_and_resume(
    dir: &Path,
    s: &str,
    iterations: u64,
    games: Option<u64>,
    lives: u32,
    delay_seed: u64,
    min_fraction: f64,
) -> String {
    let clean_db = dir.join("clean.db");
    let db = dir.join("killed.db");
    // The solution first (EWN runs need it), so the delays fall in the run's own work.
    if std::fs::read_to_string(s)
        .unwrap()
        .contains("variant = \"ewn:3x3x3\"")
    {
        for d in [&clean_db, &db] {
            ok(&tabula(d, &["solve", "ewn:3x3x3"]));
        }
    }
    let t = Instant::now();
    ok(&tabula(&clean_db, &["run", s, "--threads", "2"]));
    let clean_seconds = t.elapsed().as_secs_f64();
    let expected = head(&clean_db, "1");

    let mut rng = tabula::rng::stream(delay_seed, "kill-delays");
    let mut delays = Vec::new();
    println!("uninterrupted: {clean_seconds:.2} s");
    for _ in 0..lives {
        // Between 0.1 s and a quarter of an uninterrupted run: each life gets a little done.
        let min = ((clean_seconds * 1000.0 * min_fraction) as u64).max(100);
        let ms = min + rng.next_u64() % ((clean_seconds * 250.0) as u64).max(100);
        delays.push(ms);
        let started = runs(&db);
        let mut child = if started.is_empty() {
            spawn(&db, &["run", s, "--threads", "2"])
        } else {
            spawn(&db, &["resume", "1", "--threads", "2"])
        };
        std::thread::sleep(Duration::from_millis(ms));
        let _ = child.kill();
        child.wait().unwrap();
        let done = runs(&db)
            .first()
            .map_or(0, |r| r["iterations_done"].as_u64().unwrap());
        let next = if done > 0 || !runs(&db).is_empty() {
            sql(
                &db,
                &format!(
                    "SELECT count(*) AS n FROM run_games WHERE iteration = {}",
                    done + 1
                ),
            )[0]["n"]
                .as_u64()
                .unwrap()
        } else {
            0
        };
        println!(
            "kill after {ms} ms: {done}/{iterations} iterations committed, {next} games of \
             the next"
        );
    }
    println!("delays (ms): {delays:?}");
    if runs(&db).is_empty() {
        ok(&tabula(&db, &["run", s, "--threads", "2"]));
    } else {
        ok(&tabula(&db, &["resume", "1", "--threads", "1"]));
    }
    assert_eq!(head(&db, "1"), expected, "delays {delays:?}");
    assert_eq!(runs(&db).len(), 1);
    // No game was stored twice, and every one is indexed (with a budget: the games the
    // iterations kept, as the uninterrupted run kept them).
    let all = match games {
        Some(m) => iterations * m,
        None => {
            let q = "SELECT sum(games) AS n FROM iterations";
            let kept = sql(&clean_db, q)[0]["n"].as_u64().unwrap();
            assert_eq!(sql(&db, q)[0]["n"].as_u64().unwrap(), kept);
            kept
        }
    };
    let v = sql(
        &db,
        "SELECT count(*) AS n, count(DISTINCT iteration || '/' || game) AS d FROM run_games",
    );
    assert_eq!(v[0]["n"], all);
    assert_eq!(v[0]["d"], all);
    // A finished run resumes to nothing, exit 0.
    let out = ok(&tabula(&db, &["resume", "1"]));
    assert!(out.contains("already finished"), "{out}");
    // And the lock is released.
    let v = sql(&db, "SELECT count(*) AS n FROM run_locks");
    assert_eq!(v[0]["n"], 0);
    expected
}

/// A Go-Exploit spec: EWN 3x3x3, 300 games per iteration, `archive` given.
fn go_exploit(dir: &Path, name: &str, archive: &str, iterations: u32) -> String {
    let text = format!(
        r#"
name = "{name}"
variant = "ewn:3x3x3"
seed = 5
iterations = {iterations}
games_per_iteration = 300
window = 2
learning_rate = [[1, 1.0], [3, 0.1]]
checkpoint_every = 2

[search]
simulations = 40

[eval]
games = 300

[start]
policy = "go-exploit"
archive = "{archive}"
archive_prob = 0.8
archive_size = 500
"#
    );
    write_spec(dir, name, &text)
}

/// Go-Exploit runs (a visited and a search archive): the same head at 1 and 2 threads and
/// after kill -9 at random instants plus resume (the archive is rebuilt from the store), and
/// `verify` re-executes them; their games start elsewhere than the game's start.
#[test]
fn go_exploit_runs_are_deterministic_and_resume_to_the_same_head() {
    for (k, archive) in ["search-reservoir", "visited-circular"].iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let s = go_exploit(dir.path(), "ge", archive, 8);
        let h = kill_and_resume(dir.path(), &s, 8, Some(300), 5, 90 + k as u64, 0.0);
        let one = dir.path().join("one.db");
        ok(&tabula(&one, &["run", &s, "--threads", "1"]));
        assert_eq!(head(&one, "1"), h, "{archive}: 1 thread");
        ok(&tabula(&one, &["verify", "1"]));
        ok(&tabula(&one, &["verify", "1", "--iterations", "6..8"]));
        let v = sql(
            &one,
            "SELECT count(*) AS n FROM objects WHERE kind = 'settings/v2'",
        );
        assert_eq!(v[0]["n"], 1, "{archive}");
        // Archived starts are recorded in the games (iteration 1's archive is the start
        // state alone, so they show from iteration 2).
        let started = sql(
            &one,
            "SELECT avg(plies) AS p FROM run_games WHERE iteration >= 2",
        );
        let plain = sql(
            &one,
            "SELECT avg(plies) AS p FROM run_games WHERE iteration = 1",
        );
        assert!(
            started[0]["p"].as_f64().unwrap() < plain[0]["p"].as_f64().unwrap(),
            "{archive}: Go-Exploit games are shorter ({started} vs {plain})"
        );
    }
}

/// A branch from AlphaZero to Go-Exploit shares the parent's iterations up to the branch
/// point and differs from the first of its own.
#[test]
fn a_branch_to_go_exploit_diverges_after_its_branch_point() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("g.db");
    let p = tiny(dir.path(), "az", 3, 4);
    ok(&tabula(&db, &["run", &p]));
    let b = json(&tabula(
        &db,
        &[
            "branch",
            "az",
            "--at",
            "2",
            "--set",
            "start.policy=go-exploit",
            "--set",
            "start.archive=visited-expanding",
            "--json",
        ],
    ));
    let id = b["run"].as_i64().unwrap();
    let q = |run: i64| {
        sql(
            &db,
            &format!(
                "SELECT iteration, lower(hex(hash)) AS h FROM run_iterations WHERE run_id = {run} \
                 ORDER BY iteration"
            ),
        )
    };
    let (parent, branch) = (q(1), q(id));
    assert_eq!(parent.as_array().unwrap().len(), 4);
    assert_eq!(branch.as_array().unwrap().len(), 4);
    for i in 0..2 {
        assert_eq!(parent[i], branch[i], "iteration {}", i + 1);
    }
    for i in 2..4 {
        assert_ne!(parent[i]["h"], branch[i]["h"], "iteration {}", i + 1);
    }
    // The branch's own games start from the archive; the shared ones from the game's start.
    let v = sql(
        &db,
        &format!("SELECT count(*) AS n FROM run_games WHERE run_id = {id} AND iteration = 3"),
    );
    assert_eq!(v[0]["n"], 100);
    ok(&tabula(&db, &["verify", &id.to_string()]));
}

/// Two processes on two runs of one store both finish; two on one run: the second is refused
/// with the holder named.
#[test]
fn runs_are_locked_and_a_store_takes_several_writers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("two.db");
    let a = tiny(dir.path(), "a", 1, 4);
    let b = tiny(dir.path(), "b", 2, 4);
    let mut pa = spawn(&db, &["run", &a, "--threads", "1"]);
    let mut pb = spawn(&db, &["run", &b, "--threads", "1"]);
    assert!(pa.wait().unwrap().success());
    assert!(pb.wait().unwrap().success());
    let all = runs(&db);
    assert_eq!(all.len(), 2);
    for r in &all {
        assert_eq!(r["status"], "done", "{r}");
        assert_eq!(r["iterations_done"], 4);
    }
    // The same heads as runs alone in their own stores.
    for (name, path) in [("a", &a), ("b", &b)] {
        let alone = dir.path().join(format!("{name}.db"));
        ok(&tabula(&alone, &["run", path]));
        assert_eq!(head(&alone, name), head(&db, name));
    }

    // One run, two processes.
    let long = spec(dir.path(), "long", 3, 40);
    let mut first = spawn(&db, &["run", &long, "--threads", "1"]);
    let t = Instant::now();
    let id = loop {
        if let Some(r) = runs(&db).iter().find(|r| r["name"] == "long") {
            break r["id"].as_i64().unwrap().to_string();
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the run never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let second = tabula(&db, &["resume", &id]);
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success());
    assert!(
        err.contains("locked") && err.contains(&format!("process {}", first.id())),
        "{err}"
    );
    let v = sql(&db, "SELECT lock_pid, lock_host, lock_since FROM run_locks");
    assert_eq!(v[0]["lock_pid"], i64::from(first.id()));
    first.kill().unwrap();
    first.wait().unwrap();
    // The holder is dead: its lock is taken over (resume for one more iteration's worth, then
    // stop it again).
    let mut again = spawn(&db, &["resume", &id, "--threads", "1"]);
    let t = Instant::now();
    loop {
        let v = sql(&db, "SELECT lock_pid FROM run_locks");
        if v[0]["lock_pid"] == i64::from(again.id()) {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the lock was not taken over: {v}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    again.kill().unwrap();
    again.wait().unwrap();
}

/// A branch with no overrides and the parent's seed has the parent's head; a branch with
/// init_q draw at iteration 2 shares the first 2 iterations (the parent's rows in SQL) and
/// diverges after.
#[test]
fn branches_share_their_first_iterations_and_diverge_after() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("b.db");
    let p = tiny(dir.path(), "p", 11, 4);
    ok(&tabula(&db, &["run", &p]));
    let parent_head = head(&db, "p");

    let same = json(&tabula(
        &db,
        &["branch", "p", "--at", "2", "--seed", "11", "--json"],
    ));
    assert_eq!(same["head"].as_str().unwrap(), parent_head);

    let draw = json(&tabula(
        &db,
        &[
            "branch",
            "1",
            "--at",
            "2",
            "--set",
            "search.init_q=draw",
            "--json",
        ],
    ));
    let id = draw["run"].as_i64().unwrap();
    assert_ne!(draw["head"].as_str().unwrap(), parent_head);
    // Its derived seed is the pinned derivation of (11, 2, the canonical override).
    let seed = tabula::runs::branch_seed(11, 2, &["search.init_q=\"draw\"".to_string()]);
    assert_eq!(draw["seed"].as_u64().unwrap(), seed);
    // Iterations 1 and 2 are the parent's rows (no copies); 3 and 4 are the branch's own and
    // differ from the parent's.
    let v = sql(
        &db,
        &format!(
            "SELECT b.iteration, b.source_run, b.hash_hex = p.hash_hex AS same
             FROM run_iterations b JOIN run_iterations p ON p.run_id = 1
               AND p.iteration = b.iteration
             WHERE b.run_id = {id} ORDER BY b.iteration"
        ),
    );
    let rows: Vec<(i64, i64, i64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["iteration"].as_i64().unwrap(),
                r["source_run"].as_i64().unwrap(),
                r["same"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows, [(1, 1, 1), (2, 1, 1), (3, id, 0), (4, id, 0)]);
    let v = sql(
        &db,
        &format!("SELECT count(*) AS n FROM iterations WHERE run_id = {id}"),
    );
    assert_eq!(v[0]["n"], 2);
    // Checkouts of the branch read the records its chain names: the parent's below the
    // branch point (no rows of its own), its own above, the last from its head.
    for i in 1..=4 {
        let c = json(&tabula(&db, &["checkout", &format!("{id}@{i}"), "--json"]));
        let v = sql(
            &db,
            &format!(
                "SELECT lower(hex(snapshot)) AS s FROM run_iterations
                 WHERE run_id = {id} AND iteration = {i}"
            ),
        );
        assert_eq!(c["snapshot"], v[0]["s"], "branch@{i}: {c}");
    }
    let v = sql(
        &db,
        &format!(
            "SELECT ancestor, at_iteration FROM run_lineage WHERE run_id = {id} AND depth = 1"
        ),
    );
    assert_eq!(v[0]["ancestor"], 1);
    assert_eq!(v[0]["at_iteration"], 2);
    // Its settings say draw; the parent's say loss.
    let v = sql(
        &db,
        &format!("SELECT init_q FROM run_settings WHERE run_id IN (1, {id}) ORDER BY run_id"),
    );
    assert_eq!(v[0]["init_q"], "loss");
    assert_eq!(v[1]["init_q"], "draw");
    // A branch of the branch resumes the chain through both.
    let deep = json(&tabula(
        &db,
        &[
            "branch",
            &id.to_string(),
            "--at",
            "3",
            "--set",
            "iterations=5",
            "--json",
        ],
    ));
    assert!(deep["head"].is_string());
    ok(&tabula(
        &db,
        &["verify", &deep["run"].as_i64().unwrap().to_string()],
    ));

    // Refusals, each with its reason.
    let out = tabula(&db, &["branch", "p", "--at", "5"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("iterations 1..=4"));
    let out = tabula(
        &db,
        &["branch", "p", "--at", "2", "--set", "variant=ewn:3x3x4"],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot change mid-run"));
    let out = tabula(&db, &["branch", "p", "--at", "2", "--set", "search.nope=1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no setting `search.nope`"));
}

/// Flips one byte of the stored object `hash`.
fn damage(db: &Path, hash: &str) -> Vec<u8> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let bytes: Vec<u8> = conn
        .query_row(
            "SELECT bytes FROM objects WHERE lower(hex(hash)) = ?1",
            [hash],
            |r| r.get(0),
        )
        .unwrap();
    let mut bad = bytes.clone();
    let k = bad.len() / 2;
    bad[k] ^= 0x01;
    conn.execute(
        "UPDATE objects SET bytes = ?1 WHERE lower(hex(hash)) = ?2",
        rusqlite::params![bad, hash],
    )
    .unwrap();
    bytes
}

/// A game's address as `show RUN --games I` lists it (packed games have no address in SQL).
fn game_hash(db: &Path, run: &str, iteration: u32, game: usize) -> String {
    let v = json(&tabula(
        db,
        &["show", run, "--games", &iteration.to_string(), "--json"],
    ));
    v["games"][game]["hash"].as_str().unwrap().to_string()
}

/// Flips a byte in the middle of the pack that holds game `game` of iteration `iteration`
/// of run `run_id`; returns the pack's address (hex) and its bytes before.
fn damage_pack(db: &Path, run_id: i64, iteration: u32, game: u32) -> (String, Vec<u8>) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let (id, hash, bytes): (i64, String, Vec<u8>) = conn
        .query_row(
            "SELECT p.id, lower(hex(p.hash)), p.bytes FROM run_games g JOIN packs p ON p.id = g.pack
             WHERE g.run_id = ?1 AND g.iteration = ?2 AND g.game = ?3",
            rusqlite::params![run_id, iteration, game],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let mut bad = bytes.clone();
    let k = bad.len() / 2;
    bad[k] ^= 0x01;
    conn.execute(
        "UPDATE packs SET bytes = ?1 WHERE id = ?2",
        rusqlite::params![bad, id],
    )
    .unwrap();
    (hash, bytes)
}

fn restore_pack(db: &Path, hash: &str, bytes: &[u8]) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute(
        "UPDATE packs SET bytes = ?1 WHERE lower(hex(hash)) = ?2",
        rusqlite::params![bytes, hash],
    )
    .unwrap();
}

fn restore(db: &Path, hash: &str, bytes: &[u8]) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute(
        "UPDATE objects SET bytes = ?1 WHERE lower(hex(hash)) = ?2",
        rusqlite::params![bytes, hash],
    )
    .unwrap();
}

/// verify passes on a clean run and fails, naming the record, once a byte of a stored game
/// or table chunk is changed; fsck names the same object and where it sits. A self-play game
/// replays from its inputs. checkout of an
/// iteration with a full checkpoint gives back that checkpoint's hash.
#[test]
fn verify_and_fsck_name_a_changed_record_and_checkout_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v.db");
    let p = tiny(dir.path(), "v", 5, 4);
    ok(&tabula(&db, &["run", &p]));
    let out = ok(&tabula(&db, &["verify", "v"]));
    assert!(out.contains("every hash identical"), "{out}");
    ok(&tabula(&db, &["verify", "v", "--iterations", "3..4"]));
    ok(&tabula(&db, &["fsck"]));

    // A game of iteration 3.
    let game = game_hash(&db, "v", 3, 7);
    // replay re-plays it from its inputs (the table after iteration 2, the run's settings,
    // seed and stream) and checks its hash.
    let out = ok(&tabula(&db, &["replay", &game]));
    assert!(
        out.contains("self-play game 7 of iteration 3 of run 1") && out.contains("identical"),
        "{out}"
    );
    // A changed byte in the pack that holds it (docs/store.md "Packs and codecs"): the pack's
    // games and the iteration record that lists them cannot be read; verify and fsck name the
    // pack and what it holds.
    let (pack, saved) = damage_pack(&db, 1, 3, 7);
    let out = tabula(&db, &["verify", "v", "--iterations", "3..4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("run 1 iteration 3 games 0..") && err.contains(&pack[..12]),
        "{err}"
    );
    let out = tabula(&db, &["fsck"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        text.contains(&format!("DAMAGED {pack}")) && text.contains("run 1 iteration 3 games 0.."),
        "{text}"
    );
    restore_pack(&db, &pack, &saved);
    ok(&tabula(&db, &["fsck"]));

    // A chunk of iteration 4's snapshot (a full checkpoint at 4: checkpoint_every = 2).
    let v = sql(
        &db,
        "SELECT lower(hex(snapshot)) AS s FROM iterations WHERE iteration = 4",
    );
    let snapshot = v[0]["s"].as_str().unwrap().to_string();
    let c = json(&tabula(&db, &["checkout", "v@4", "--json"]));
    assert_eq!(c["table_hash"].as_str().unwrap(), snapshot);
    assert_eq!(c["snapshot"].as_str().unwrap(), snapshot);
    let export = dir.path().join("t3.jsonl");
    let c3 = json(&tabula(
        &db,
        &[
            "checkout",
            "v@3",
            "--json",
            "--export",
            export.to_str().unwrap(),
        ],
    ));
    let lines = std::fs::read_to_string(&export).unwrap();
    // A header line naming the columns, then one line per row.
    assert_eq!(
        lines.lines().count() as u64,
        c3["entries"].as_u64().unwrap() + 1
    );
    let header: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    for column in ["key", "position", "row", "updates", "legal"] {
        assert!(header["header"]["columns"][column].is_string(), "{header}");
    }
    let first: serde_json::Value = serde_json::from_str(lines.lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["row"].as_array().unwrap().len(), 6 + 1);
    // `--no-header`: the same rows, without the header line.
    let bare = dir.path().join("t3-bare.jsonl");
    ok(&tabula(
        &db,
        &[
            "checkout",
            "v@3",
            "--export",
            bare.to_str().unwrap(),
            "--no-header",
        ],
    ));
    let bare = std::fs::read_to_string(&bare).unwrap();
    assert_eq!(
        bare.lines().collect::<Vec<_>>(),
        lines.lines().skip(1).collect::<Vec<_>>()
    );
    // The position in the game's notation: `tabula value` takes it.
    let position = first["position"].as_str().unwrap();
    assert!(!first["legal"].as_array().unwrap().is_empty(), "{first}");
    let variant = sql(&db, "SELECT variant FROM runs LIMIT 1")[0]["variant"]
        .as_str()
        .unwrap()
        .to_string();
    let v = json(&tabula(&db, &["value", &variant, position, "--json"]));
    assert_eq!(v["position"].as_str().unwrap(), position);
    assert!(c3["entries"].as_u64().unwrap() > 0);
    assert!(c3["entries"].as_u64() <= c["entries"].as_u64());
    let chunk = {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let kind: String = conn
            .query_row(
                "SELECT kind FROM objects WHERE lower(hex(hash)) = ?1",
                [&snapshot],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(kind, "table-snapshot/v1");
        // The snapshot record's chunk list: found through fsck's reference report.
        drop(conn);
        let f = json(&tabula(&db, &["fsck", "--json"]));
        assert_eq!(f["clean"], true);
        let v = sql(
            &db,
            "SELECT lower(hex(hash)) AS h FROM objects WHERE kind = 'table-chunk/v1'
             ORDER BY id DESC LIMIT 1",
        );
        v[0]["h"].as_str().unwrap().to_string()
    };
    let saved = damage(&db, &chunk);
    let out = tabula(&db, &["verify", "v", "--iterations", "4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("iteration 4 table chunk") && err.contains(&chunk),
        "{err}"
    );
    let out = tabula(&db, &["fsck"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        text.contains(&format!("DAMAGED {chunk}")) && text.contains("(iteration 4): chunk"),
        "{text}"
    );
    restore(&db, &chunk, &saved);
    ok(&tabula(&db, &["verify", "v"]));

    // A missing chunk (only a snapshot record refers to it): a dangling reference.
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute("DELETE FROM objects WHERE lower(hex(hash)) = ?1", [&chunk])
            .unwrap();
    }
    let out = tabula(&db, &["fsck"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        text.contains("DANGLING snapshot") && text.contains("chunk 0") && text.contains(&chunk),
        "{text}"
    );
    let out = tabula(&db, &["verify", "v", "--iterations", "4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("iteration 4 table chunk 0") && err.contains(&chunk),
        "{err}"
    );
}

/// Runs `spec` into `TAG1.db` on one thread and `TAG2.db` on two (in `dir`); asserts the
/// heads are equal and returns it.
fn same_head_at_1_and_2_threads(dir: &Path, spec: &str, tag: &str) -> String {
    let heads: Vec<String> = ["1", "2"]
        .iter()
        .map(|t| {
            let db = dir.join(format!("{tag}{t}.db"));
            ok(&tabula(&db, &["run", spec, "--threads", t]));
            head(&db, "1")
        })
        .collect();
    assert_eq!(heads[0], heads[1], "{tag}: 1 and 2 threads");
    heads[0].clone()
}

/// A network spec (docs/network.md): EWN 3x3x3, 300 games per iteration, a tiny MLP (SGD)
/// or residual net (Adam).
fn network(dir: &Path, name: &str, arch: &str, iterations: u32) -> String {
    let net = match arch {
        "mlp" => "arch = \"mlp\"\nhidden = [16]\noptimizer = \"sgd\"\n",
        _ => {
            "arch = \"resnet\"\nblocks = 1\nchannels = 4\noptimizer = \"adam\"\nlr = [[1, 0.003]]\n"
        }
    };
    let text = format!(
        r#"
name = "{name}"
variant = "ewn:3x3x3"
seed = 3
iterations = {iterations}
games_per_iteration = 300
window = 2

[search]
simulations = 40

[eval]
games = 300

[learner]
kind = "network"

[learner.network]
{net}replay_games = 400
batch_size = 32
train_steps = 10
"#
    );
    write_spec(dir, name, &text)
}

/// The network learner: the same head at 1 and 2 threads and after kill -9 at random
/// instants plus resume (weights and optimiser state come back from the checkpoint);
/// `verify` re-executes it, fsck follows its checkpoints, `checkout RUN@I` restores the
/// stored checkpoint exactly, and `model:RUN@I` plays in `tabula match`.
#[test]
fn network_runs_are_deterministic_resume_and_play() {
    let dir = tempfile::tempdir().unwrap();
    let s = network(dir.path(), "net", "mlp", 6);
    let h = kill_and_resume(dir.path(), &s, 6, Some(300), 4, 13, 0.0);
    let one = dir.path().join("one.db");
    ok(&tabula(&one, &["run", &s, "--threads", "1"]));
    assert_eq!(head(&one, "1"), h, "1 thread");
    ok(&tabula(&one, &["verify", "1"]));
    ok(&tabula(&one, &["fsck"]));
    let c = json(&tabula(&one, &["checkout", "net@6", "--json"]));
    let stored = sql(
        &one,
        "SELECT lower(hex(snapshot)) AS s FROM iterations WHERE iteration = 6",
    );
    assert_eq!(c["table_hash"], stored[0]["s"]);
    for a in ["model:net@6", "model:net@6,sims=20", "model:net@0"] {
        let m = json(&tabula(
            &one,
            &[
                "match",
                "ewn:3x3x3",
                "--a",
                a,
                "--b",
                "random",
                "--games",
                "40",
                "--json",
            ],
        ));
        assert_eq!(m["games"], 40, "{a}");
    }
    // The residual net with Adam: the same head on 1 and 2 threads.
    let r = network(dir.path(), "res", "resnet", 3);
    same_head_at_1_and_2_threads(dir.path(), &r, "res");
}

/// MuZero (docs/muzero.md) on `runs/muzero-tiny.toml`: the same head at 1 and 2 threads
/// and after kill -9 + `resume` (all three networks and their optimiser states come back
/// from the checkpoint); `verify` re-executes it and fsck follows its six references; a
/// branch with no overrides ends at the parent's head; a self-play game (searched in the
/// learned model) replays; the model plays in `tabula match`, greedily and searching its
/// learned model; `checkout --export` writes one ONNX file per network; MAE_v by unroll
/// depth and the root values' errors are stored.
#[test]
fn muzero_tiny_is_deterministic_resumes_branches_verifies_and_exports() {
    muzero_lifecycle(
        "muzero-tiny",
        29,
        &["representation", "dynamics", "prediction"],
        &[
            ("mae_v_depth_5", 1.0),
            ("mae_root_model", 1.0),
            ("mae_root_rules", 1.0),
        ],
    );
}

/// Stochastic MuZero (docs/muzero.md, "Stochastic MuZero") on
/// `runs/stochastic-muzero-tiny.toml`: as MuZero's, with six networks (the afterstate
/// dynamics and prediction and the encoder too, checkpointed and exported) and the chance
/// metrics stored.
#[test]
fn muzero_stochastic_tiny_is_deterministic_resumes_branches_verifies_and_exports() {
    muzero_lifecycle(
        "stochastic-muzero-tiny",
        37,
        &[
            "representation",
            "dynamics",
            "prediction",
            "afterstate_dynamics",
            "afterstate_prediction",
            "encoder",
        ],
        &[
            ("mae_v_depth_5", 1.0),
            ("mae_root_model", 1.0),
            ("tv_chance", 1.0),
            ("code_usage", 8.0),
        ],
    );
}

/// The lifecycle of a MuZero spec `runs/NAME.toml`: its networks' export names, and
/// metrics stored at iteration 6 in [0, their bound].
fn muzero_lifecycle(name: &str, delay_seed: u64, nets: &[&str], metrics: &[(&str, f64)]) {
    let dir = tempfile::tempdir().unwrap();
    let s = format!("{}/runs/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let h = kill_and_resume(dir.path(), &s, 6, Some(100), 3, delay_seed, 0.0);
    let one = dir.path().join("one.db");
    ok(&tabula(&one, &["run", &s, "--threads", "1"]));
    assert_eq!(head(&one, "1"), h, "1 thread");
    ok(&tabula(&one, &["verify", "1"]));
    ok(&tabula(&one, &["fsck"]));
    let b = ok(&tabula(&one, &["branch", "1", "--at", "3", "--seed", "1"]));
    assert!(b.contains(&format!("head {h}")), "branch: {b}");
    // Commitment is Stochastic MuZero's only branchable key; a MuZero run's branch cannot
    // become Stochastic MuZero.
    let set = "learner.muzero.stochastic.commitment=0.5";
    let b = tabula(&one, &["branch", "1", "--at", "3", "--set", set]);
    let plain = !nets.contains(&"encoder");
    assert_eq!(b.status.success(), !plain, "{b:?}");
    if plain {
        let e = String::from_utf8_lossy(&b.stderr);
        assert!(e.contains("learner.muzero.stochastic.commitment"), "{e}");
    }
    let games = ok(&tabula(&one, &["show", "1", "--games", "2"]));
    let game = games.lines().nth(2).unwrap().split_whitespace().nth(1);
    let r = ok(&tabula(&one, &["replay", game.unwrap()]));
    assert!(r.contains("identical, hash checked"), "{r}");
    // The greedy policy, the search in the learned model, and the same search over the
    // rules (`tree=rules`, the study's cost in play): the last two play different games.
    let mut hashes = Vec::new();
    for a in [
        "model:1@6",
        "model:1@6,sims=8",
        "model:1@6,sims=8,tree=rules",
    ] {
        let m = json(&tabula(
            &one,
            &[
                "match",
                "ewn:3x3x3",
                "--a",
                a,
                "--b",
                "random",
                "--games",
                "20",
                "--json",
            ],
        ));
        assert_eq!(m["games"], 20, "{a}");
        assert_eq!(m["a"], a);
        let detail = m["games_detail"].as_array().unwrap();
        hashes.push(detail.iter().map(|g| g["hash"].clone()).collect::<Vec<_>>());
    }
    assert_ne!(
        hashes[1], hashes[2],
        "tree=rules searches the rules, not the model"
    );
    let path = dir.path().join("m.onnx");
    let c = json(&tabula(
        &one,
        &[
            "checkout",
            "1@6",
            "--export",
            path.to_str().unwrap(),
            "--json",
        ],
    ));
    assert_eq!(c["learner"], "muzero");
    for net in nets {
        let f = dir.path().join(format!("m.{net}.onnx"));
        assert!(std::fs::metadata(&f).unwrap().len() > 1000, "{net}");
    }
    assert!(!path.exists(), "the networks' files only");
    for &(name, most) in metrics {
        let q = format!(
            "SELECT value FROM metrics WHERE name = '{name}' AND run_id = 1 AND iteration = 6"
        );
        let v = sql(&one, &q)[0]["value"].as_f64().unwrap();
        assert!((0.0..=most).contains(&v), "{name}: {v}");
    }
}

/// Liu et al.'s data pipeline on a small Chinese Checkers board (docs/network.md, "Liu et
/// al.'s data pipeline"; docs/learners.md, `mixed`): mixed starts, retained and mirrored
/// samples, drawn games skipped, passes over the buffer.
fn checkers_data(dir: &Path, name: &str) -> String {
    let text = format!(
        r#"
name = "{name}"
variant = "checkers:4x4-3,max_plies=60"
seed = 7
iterations = 4
games_per_iteration = 64
window = 2

[search]
simulations = 16

[eval]
wr_p = false
errors = false

[start]
policy = "mixed"
weights = [5, 3, 2]
opening_moves = 2

[learner]
kind = "network"

[learner.network]
hidden = [16]
batch_size = 16
train_epochs = 2
retain = 0.5
augment = "mirror"
skip_draws = true

[learner.network.reference]
solver_games = 0
"#
    );
    write_spec(dir, name, &text)
}

/// The data pipeline's run has the same head at 1 and 2 threads and after kill -9 + resume,
/// and trains on samples (the buffer is not empty).
#[test]
fn checkers_data_pipeline_runs_are_deterministic_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let s = checkers_data(dir.path(), "ccdata");
    let h = kill_and_resume(dir.path(), &s, 4, Some(64), 3, 31, 0.3);
    assert_eq!(same_head_at_1_and_2_threads(dir.path(), &s, "cc"), h);
    let one = dir.path().join("cc1.db");
    let buffer = sql(
        &one,
        "SELECT min(value) AS n FROM metrics WHERE name = 'replay_samples' AND iteration > 0",
    );
    assert!(buffer[0]["n"].as_f64().unwrap() > 0.0, "{buffer}");
    // Both kinds of game were played: drawn ones (skipped) and decided ones (trained on).
    let games = sql(
        &one,
        "SELECT sum(score_p0 = 0.5) AS drawn, sum(score_p0 <> 0.5) AS decided FROM run_games",
    );
    assert!(
        games[0]["drawn"].as_i64() > Some(0) && games[0]["decided"].as_i64() > Some(0),
        "{games}"
    );
}

/// A tiny network on 5x5 Go (docs/network.md, "Go"): OpenSpiel's observation planes, a
/// residual net, the win rate against MCTS-Solver as the reference metric.
fn go_network(dir: &Path, name: &str) -> String {
    let text = format!(
        r#"
name = "{name}"
variant = "go:5x5"
seed = 5
iterations = 8
games_per_iteration = 48
window = 2

[search]
simulations = 16

[eval]
wr_p = false
errors = false

[learner]
kind = "network"

[learner.network]
arch = "resnet"
blocks = 1
channels = 4
optimizer = "adam"
lr = [[1, 0.003]]
batch_size = 32
train_steps = 4

[learner.network.reference]
solver_games = 4
solver_multipliers = [1]
"#
    );
    write_spec(dir, name, &text)
}

/// A Go network run has the same head at 1 and 2 threads and after kill -9 + resume, its
/// iterations carry the win rate against MCTS-Solver, and its model plays Go in `match`.
#[test]
fn go_network_runs_are_deterministic_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let s = go_network(dir.path(), "go");
    let h = kill_and_resume(dir.path(), &s, 8, Some(48), 4, 29, 0.0);
    let one = dir.path().join("one.db");
    ok(&tabula(&one, &["run", &s, "--threads", "1"]));
    assert_eq!(head(&one, "1"), h, "1 thread");
    let wr = sql(
        &one,
        "SELECT count(*) AS n FROM metrics WHERE name = 'wr_solver_1x' AND value BETWEEN 0 AND 1",
    );
    assert_eq!(
        wr[0]["n"], 9,
        "iterations 0..8 each have a win rate against MCTS-Solver"
    );
    let m = json(&tabula(
        &one,
        &[
            "match",
            "go:5x5",
            "--a",
            "model:go@8,sims=4",
            "--b",
            "random",
            "--games",
            "4",
            "--json",
        ],
    ));
    assert_eq!(m["games"], 4);
}

/// A KataGo search-control spec (docs/go-exploit.md, "KataGo's search control"): Connect
/// Four 7x6, a tiny MLP, trajectory initialisation, forks and side positions all on (at
/// probabilities well above KataGo's, so a short run has many), around `policy`.
fn katago(dir: &Path, name: &str, policy: &str) -> String {
    let text = format!(
        r#"
name = "{name}"
variant = "c4:7x6"
seed = 11
iterations = 10
games_per_iteration = 300
window = 2

[search]
simulations = 12

[eval]
wr_p = false
errors = false

[learner]
kind = "network"

[learner.network]
arch = "mlp"
hidden = [16]
optimizer = "sgd"
batch_size = 32
train_steps = 8

[learner.network.reference]
solver_games = 0
c4_sets = []

[start]
policy = "{policy}"

[start.katago]
init_moves = 1.68
early_fork_prob = 0.3
early_fork_moves = 1.05
fork_prob = 0.2
side_position_prob = 0.03
"#
    );
    write_spec(dir, name, &text)
}

/// KataGo's search control, alone and around Go-Exploit: the same head at 1 and 2 threads
/// and after kill -9 + resume (the queued forks are rebuilt from the stored games and the
/// models that played them), and `verify` re-executes it.
#[test]
fn katago_search_control_is_deterministic_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let s = katago(dir.path(), "akti", "initial");
    let h = kill_and_resume(dir.path(), &s, 10, Some(300), 4, 41, 0.0);
    let one = dir.path().join("one.db");
    ok(&tabula(&one, &["run", &s, "--threads", "1"]));
    assert_eq!(head(&one, "1"), h, "1 thread");
    ok(&tabula(&one, &["verify", "1"]));
    let ge = katago(dir.path(), "gesckb", "go-exploit");
    let around_go_exploit = same_head_at_1_and_2_threads(dir.path(), &ge, "ge");
    assert_ne!(around_go_exploit, h);
}

/// A Gumbel spec (docs/search.md, "Gumbel AlphaZero"): EWN 3x3x3, 200 games per
/// iteration, 8 simulations, m = 4; `learner` is "" (tabular) or a tiny network.
fn gumbel(dir: &Path, name: &str, learner: &str, iterations: u32) -> String {
    let text = format!(
        r#"
name = "{name}"
variant = "ewn:3x3x3"
seed = 5
iterations = {iterations}
games_per_iteration = 200
window = 2

[search]
simulations = 8
algorithm = "gumbel"
gumbel_actions = 4

[eval]
games = 300
{learner}"#
    );
    write_spec(dir, name, &text)
}

/// Gumbel search, tabular and network learners: the same head at 1 and 2 threads and after
/// kill -9 at random instants plus resume; `verify` re-executes it; the stored games carry
/// the improved policy as their targets (not the visit counts), and the learners train on
/// them.
#[test]
fn gumbel_runs_are_deterministic_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let net = "[learner]\nkind = \"network\"\n[learner.network]\narch = \"mlp\"\n\
               hidden = [8]\nreplay_games = 300\nbatch_size = 32\ntrain_steps = 5\n";
    for (name, learner) in [("gt", ""), ("gn", net)] {
        let s = gumbel(dir.path(), name, learner, 4);
        let h = kill_and_resume(dir.path(), &s, 4, Some(200), 3, 31, 0.0);
        let one = dir.path().join(format!("{name}-one.db"));
        ok(&tabula(&one, &["run", &s, "--threads", "1"]));
        assert_eq!(head(&one, "1"), h, "{name}: 1 thread");
        ok(&tabula(&one, &["verify", "1"]));
        for f in ["clean.db", "killed.db"] {
            let _ = std::fs::remove_file(dir.path().join(f));
        }
        // A stored game's searched moves carry a target apart from their visits: pi'.
        let games = json(&tabula(&one, &["show", "1", "--games", "1", "--json"]));
        let hash = games.to_string();
        let hash = hash
            .split('"')
            .find(|t| t.len() == 64 && t.chars().all(|c| c.is_ascii_hexdigit()))
            .unwrap_or_else(|| panic!("no game hash in {games}"))
            .to_string();
        let shown = ok(&tabula(&one, &["replay", &hash, "--show"]));
        assert!(shown.contains("target pi:"), "{shown}");
    }
}

/// The value of metric `name` at iteration `i` in rows of `SELECT iteration AS i, name, value`.
fn metric_at(rows: &serde_json::Value, i: u64, name: &str) -> Option<f64> {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["i"] == i && r["name"] == name)
        .and_then(|r| r["value"].as_f64())
}

/// The reference metrics of an unsolved variant (`runs/network-c4-tiny.toml`, Connect Four
/// 7x6: games against MCTS-Solver, the exact test positions): the same head on 1 and 2
/// threads; `verify` of the last iteration alone (its AUC continues from the stored metrics
/// of the one before) matches every hash; the AUC is the running sum of the win rates.
#[test]
fn network_reference_metrics_on_connect_four() {
    let dir = tempfile::tempdir().unwrap();
    let spec = concat!(env!("CARGO_MANIFEST_DIR"), "/runs/network-c4-tiny.toml");
    let plain = same_head_at_1_and_2_threads(dir.path(), spec, "c4-");
    let db = dir.path().join("c4-2.db");
    ok(&tabula(&db, &["verify", "1", "--iterations", "3"]));
    let rows = sql(
        &db,
        "SELECT iteration AS i, name, value FROM metrics WHERE name IN \
         ('wr_solver_1x', 'auc_solver_1x', 'c4_best_move', 'c4_value_error') \
         ORDER BY iteration, name",
    );
    let value = |i: u64, name: &str| metric_at(&rows, i, name);
    let mut sum = 0.0;
    for i in 0..=3 {
        let w = value(i, "wr_solver_1x").expect("measured every iteration");
        assert!((0.0..=1.0).contains(&w));
        let b = value(i, "c4_best_move").expect("measured every iteration");
        assert!(b > 0.2 && b <= 1.0, "{b}");
        assert!(value(i, "c4_value_error").is_some_and(|e| e < 0.6));
        if i == 0 {
            assert_eq!(value(0, "auc_solver_1x"), None);
        } else {
            sum += w;
            assert_eq!(value(i, "auc_solver_1x"), Some(sum), "iteration {i}");
        }
    }
    let searched = sql(
        &db,
        "SELECT count(*) AS n FROM metrics WHERE name LIKE 'c4_search_best_move%'",
    );
    assert_eq!(searched[0]["n"], 0, "not asked for: not measured");

    // The Pons benchmark of the search player (`c4_search = true`): measured every
    // iteration on both sets, replayed bit for bit by `verify` on another thread count.
    let db = dir.path().join("c4-search.db");
    let searched_spec = dir.path().join("c4-search.toml");
    std::fs::write(
        &searched_spec,
        std::fs::read_to_string(spec).unwrap() + "c4_search = true\n",
    )
    .unwrap();
    let searched_spec = searched_spec.to_str().unwrap();
    ok(&tabula(&db, &["run", searched_spec, "--threads", "2"]));
    ok(&tabula(&db, &["verify", "1", "--threads", "1"]));
    let rows = sql(
        &db,
        "SELECT iteration AS i, name, value FROM metrics WHERE name LIKE 'c4_search_best_move%' \
         ORDER BY iteration, name",
    );
    let rows = rows.as_array().unwrap();
    // Per iteration: the share over both sets, and each set's.
    assert_eq!(rows.len(), 4 * 3, "{rows:?}");
    for r in rows {
        let v = r["value"].as_f64().unwrap();
        assert!(v > 0.2 && v <= 1.0, "{r}");
    }
    assert!(head(&db, "1") != plain);
}

/// `[eval] every` through the binary (docs/metrics.md, "The evaluation interval"). Connect
/// Four's reference metrics (`runs/network-c4-tiny.toml`, 5 iterations, `every = 2`) are
/// measured after iterations 0, 2, 4 and 5 only, with the same head at 1 and 2 threads; the
/// AUC is the running sum over the measured iterations; `verify` of iterations 4..5 (started
/// after unmeasured iteration 3, so the AUC continues from iteration 2's stored values) and of
/// the whole run matches every hash; `export` has the measured iterations' rows only. An EWN
/// run with `every = 2` killed -9 at random instants and resumed ends at its uninterrupted
/// head, and verifies.
#[test]
fn an_evaluation_interval_measures_every_kth_iteration_and_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let c4 = concat!(env!("CARGO_MANIFEST_DIR"), "/runs/network-c4-tiny.toml");
    let text = std::fs::read_to_string(c4)
        .unwrap()
        .replace("iterations = 3", "iterations = 5")
        .replace("[eval]\n", "[eval]\nevery = 2\n");
    assert!(text.contains("iterations = 5") && text.contains("every = 2"));
    let spec = write_spec(dir.path(), "c4-every", &text);
    same_head_at_1_and_2_threads(dir.path(), &spec, "every-");
    let db = dir.path().join("every-2.db");
    let rows = sql(
        &db,
        "SELECT iteration AS i, name, value FROM metrics \
         WHERE name IN ('wr_solver_1x', 'auc_solver_1x') ORDER BY iteration, name",
    );
    let value = |i: u64, name: &str| metric_at(&rows, i, name);
    let mut sum = 0.0;
    for i in 0..=5 {
        let measured = [0, 2, 4, 5].contains(&i);
        assert_eq!(
            value(i, "wr_solver_1x").is_some(),
            measured,
            "iteration {i}"
        );
        if measured && i > 0 {
            sum += value(i, "wr_solver_1x").unwrap();
            assert_eq!(value(i, "auc_solver_1x"), Some(sum), "iteration {i}");
        }
    }
    for range in ["4..5", "1..5"] {
        let out = ok(&tabula(&db, &["verify", "1", "--iterations", range]));
        assert!(out.contains("identical"), "{range}: {out}");
    }
    let tidy = json(&tabula(&db, &["export", "1", "--json"]));
    let its: Vec<u64> = tidy
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(its, [0, 2, 4, 5]);

    let ewn = tiny(dir.path(), "k", 3, 5);
    let text = std::fs::read_to_string(&ewn)
        .unwrap()
        .replace("[eval]\n", "[eval]\nevery = 2\n");
    std::fs::write(&ewn, text).unwrap();
    kill_and_resume(dir.path(), &ewn, 5, Some(100), 3, 53, 0.0);
    let out = ok(&tabula(&dir.path().join("killed.db"), &["verify", "1"]));
    assert!(out.contains("identical"), "{out}");
}

/// Derived snapshots (docs/store.md): a delta checkpoint keeps only its snapshot record; its
/// table is rebuilt by re-training from the stored games and is bit-exact. The same run with
/// a full checkpoint every iteration (`checkpoint_every` changes no table, only which
/// checkpoints are full) stores every table whole, and the derived tables hash the same. With
/// a full checkpoint's chunk gone too, the table is rebuilt from the one before (fsck names
/// the missing chunk); with a byte of a game in the window changed, checkout names the game.
#[test]
fn derived_snapshots_rebuild_bit_exact_tables_from_the_games() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    let p = tiny(dir.path(), "d", 7, 5);
    ok(&tabula(&db, &["run", &p]));
    let every = dir.path().join("every.toml");
    std::fs::write(
        &every,
        std::fs::read_to_string(&p)
            .unwrap()
            .replace("name = \"d\"", "name = \"e\"")
            .replace("checkpoint_every = 2", "checkpoint_every = 1"),
    )
    .unwrap();
    ok(&tabula(&db, &["run", every.to_str().unwrap()]));
    // Chunks are stored for the full checkpoints the table learner keeps (every second one,
    // counting iteration / checkpoint_every, and the last planned iteration): iteration 4 of
    // `d`, 2, 4 and 5 of `e` (one chunk each: a tiny table); d's is e's (the same table),
    // stored once. `iterations.snapshot_kept` records which.
    let v = sql(
        &db,
        "SELECT count(*) AS n FROM objects WHERE kind = 'table-chunk/v1'",
    );
    assert_eq!(v[0]["n"], 3, "{v}");
    let v = sql(
        &db,
        "SELECT group_concat(r.name || i.iteration, ' ' ORDER BY r.name, i.iteration) AS k FROM iterations i
         JOIN runs r ON r.id = i.run_id WHERE i.snapshot_kept = 1 AND i.snapshot_full = 1",
    );
    assert_eq!(v[0]["k"], "d4 e2 e4 e5", "{v}");
    let f = json(&tabula(&db, &["fsck", "--json"]));
    assert_eq!(f["clean"], true, "{f}");
    ok(&tabula(&db, &["verify", "d"]));
    let table = |run: &str, i: u32| {
        let c = json(&tabula(&db, &["checkout", &format!("{run}@{i}"), "--json"]));
        (
            c["table_hash"].as_str().unwrap().to_string(),
            c["snapshot"].as_str().unwrap().to_string(),
        )
    };
    for i in 1..=5 {
        let (derived, _) = table("d", i);
        let (whole, snapshot) = table("e", i);
        assert_eq!(whole, snapshot, "e@{i} is a full checkpoint");
        assert_eq!(derived, whole, "d@{i}: the derived table differs");
    }
    // Without iteration 4's chunk, iteration 5 is rebuilt from iteration 2's checkpoint.
    let chunk4 = {
        let v = sql(
            &db,
            "SELECT lower(hex(i.snapshot)) AS s FROM iterations i JOIN runs r ON r.id = i.run_id
             WHERE r.name = 'd' AND i.iteration = 4",
        );
        let s = v[0]["s"].as_str().unwrap().to_string();
        let conn = rusqlite::Connection::open(&db).unwrap();
        let id: i64 = conn
            .query_row(
                "SELECT max(id) FROM objects WHERE kind = 'table-chunk/v1' AND id < (
                     SELECT id FROM objects WHERE lower(hex(hash)) = ?1)",
                [&s],
                |r| r.get(0),
            )
            .unwrap();
        let h: String = conn
            .query_row(
                "SELECT lower(hex(hash)) FROM objects WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .unwrap();
        conn.execute("DELETE FROM objects WHERE id = ?1", [id])
            .unwrap();
        h
    };
    let out = tabula(&db, &["fsck"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        text.contains("DANGLING snapshot") && text.contains(&chunk4),
        "{text}"
    );
    assert_eq!(table("d", 5).0, table("e", 5).0);
    assert_eq!(table("d", 4).0, table("e", 4).0);
    // A changed byte in a game of iteration 5's window: the rebuild stops and names it.
    // (The pack that holds the game: its games and iteration 5's record are unreadable.)
    let d_id = sql(&db, "SELECT id FROM runs WHERE name = 'd'")[0]["id"]
        .as_i64()
        .unwrap();
    let (pack, saved) = damage_pack(&db, d_id, 5, 0);
    let out = tabula(&db, &["checkout", "d@5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&pack[..12]) && err.contains(&format!("run {d_id} iteration 5 games 0..")),
        "{err}"
    );
    restore_pack(&db, &pack, &saved);

    // RUN@I reads only the iteration records it needs, from I down: with iteration 1's games
    // (and so its record) unreadable, e's stored checkpoints at 4 and 5 still check out, the
    // same tables as before; fsck still names the damage.
    let e_id = sql(&db, "SELECT id FROM runs WHERE name = 'e'")[0]["id"]
        .as_i64()
        .unwrap();
    let (e4, e5) = (table("e", 4), table("e", 5));
    let (pack, saved) = damage_pack(&db, e_id, 1, 0);
    assert_eq!(table("e", 5), e5);
    assert_eq!(table("e", 4), e4);
    let out = tabula(&db, &["checkout", "e@1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&pack[..12]));
    let out = tabula(&db, &["fsck"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("DAMAGED {pack}")));
    restore_pack(&db, &pack, &saved);
}

/// Provenance (docs/store.md, "Provenance"): each process that works on a run leaves a
/// session (its build, host, command line, iterations from and to, outcome); notes and tags
/// are kept beside the records, editable with `tabula note`, copied by `merge`, and change
/// no hash; bad ones are refused before anything is written.
#[test]
fn runs_keep_their_provenance_notes_and_tags() {
    let dir = tempfile::tempdir().unwrap();
    let (db, plain) = (dir.path().join("s.db"), dir.path().join("plain.db"));
    let spec = tiny(dir.path(), "p", 5, 6);
    // Killed after its first iteration, then resumed: two sessions, the first never ended.
    let mut child = spawn(
        &db,
        &[
            "run",
            &spec,
            "--threads",
            "1",
            "--note",
            "first try\nwith two lines",
            "--tag",
            "t1",
            "--tag",
            "t2",
        ],
    );
    let t = Instant::now();
    while runs(&db).first().is_none_or(|r| r["iterations_done"] == 0) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no iteration in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    ok(&tabula(&db, &["resume", "p", "--threads", "2"]));
    let s = sql(
        &db,
        "SELECT iterations_from, iterations_to, outcome, threads, command_line, engine_commit,
             ended_at FROM run_sessions ORDER BY started_at",
    );
    let s = s.as_array().unwrap();
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s[0]["iterations_from"], 0);
    assert!(
        s[0]["ended_at"].is_null() && s[0]["outcome"].is_null(),
        "{s:?}"
    );
    assert!(s[1]["iterations_from"].as_u64().unwrap() >= 1, "{s:?}");
    assert_eq!(
        (&s[1]["iterations_to"], &s[1]["outcome"]),
        (&6.into(), &"done".into())
    );
    assert_eq!((&s[0]["threads"], &s[1]["threads"]), (&1.into(), &2.into()));
    let line = s[0]["command_line"].as_str().unwrap();
    assert!(
        line.contains(" run ") && line.contains("'first try"),
        "{line}"
    );
    let line = s[1]["command_line"].as_str().unwrap();
    assert!(line.contains(" resume p "), "{line}");
    let commit = s[0]["engine_commit"].as_str().unwrap();
    assert!(commit == "unknown" || commit.len() == 40, "{commit}");
    let p = sql(&db, "SELECT note, tags, sessions FROM run_provenance");
    assert_eq!(p[0]["note"], "first try\nwith two lines");
    assert_eq!(p[0]["tags"], "t1,t2");
    assert_eq!(p[0]["sessions"], 2);

    // Edited later: the head and the run record are what a run without notes has.
    let before = head(&db, "p");
    let n = json(&tabula(
        &db,
        &[
            "note", "p", "second", "--untag", "t1", "--tag", "t3", "--json",
        ],
    ));
    assert_eq!(n["note"], "second");
    assert_eq!(n["tags"], serde_json::json!(["t2", "t3"]));
    assert_eq!(head(&db, "p"), before);
    ok(&tabula(&plain, &["run", &spec, "--threads", "1"]));
    assert_eq!(head(&plain, "p"), before);
    ok(&tabula(&db, &["fsck"]));
    // Refused before anything is written.
    let e = binary::fails(&tabula(&db, &["note", "p", "--tag", "two words"]));
    assert!(e.contains("tag") && e.contains("no spaces"), "{e}");
    let e = binary::fails(&tabula(&db, &["note", "p", "bell \u{7}"]));
    assert!(e.contains("control character"), "{e}");
    let e = binary::fails(&tabula(&db, &["note", "--sweep", "nosuch", "x"]));
    assert!(e.contains("no sweep named `nosuch`"), "{e}");
    let e = binary::fails(&tabula(
        &db,
        &["run", &spec, "--set", "name=q", "--tag", ""],
    ));
    assert!(e.contains("--tag"), "{e}");
    assert_eq!(runs(&db).len(), 1);
    let n = json(&tabula(&db, &["note", "p", "--json"]));
    assert_eq!(n["tags"], serde_json::json!(["t2", "t3"]));

    // Merged with the run: its sessions, note and tags come along.
    let merged = dir.path().join("m.db");
    ok(&tabula(
        &merged,
        &[
            "merge",
            db.to_str().unwrap(),
            "--into",
            merged.to_str().unwrap(),
        ],
    ));
    let p = sql(&merged, "SELECT note, tags, sessions FROM run_provenance");
    assert_eq!(
        (&p[0]["note"], &p[0]["tags"], &p[0]["sessions"]),
        (&"second".into(), &"t2,t3".into(), &2.into())
    );
    let shown = json(&tabula(&merged, &["show", "p", "--json"]));
    assert_eq!(shown["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(shown["note"], "second");
}

/// Stages (runs/stages.rs, docs/checkers.md): Liu et al.'s pipeline in miniature, greedy
/// self-play then MCTS self-play (`runs/checkers-tiny-pipeline.toml`). The same head after
/// kill -9 at random instants + resume (wherever the kills fall, stage boundary included) and
/// at 1 and 2 threads; `verify` re-executes both stages; a branch with no overrides and the
/// parent's seed, at any iteration of either stage or at the boundary, ends at the parent's
/// head, and one with an override diverges and verifies; games of both stages replay; the
/// model plays the greedy player.
#[test]
fn staged_runs_are_deterministic_resume_branch_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let s = format!(
        "{}/runs/checkers-tiny-pipeline.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let h = kill_and_resume(dir.path(), &s, 4, Some(16), 3, 37, 0.0);
    let one = dir.path().join("one.db");
    let out = ok(&tabula(&one, &["run", &s, "--threads", "1"]));
    assert!(out.contains("stage 2 `mcts`: iterations 3..=4"), "{out}");
    assert_eq!(head(&one, "1"), h, "1 thread");
    ok(&tabula(&one, &["verify", "1"]));
    // The stages' settings records, which the iteration records name, are stored.
    let fsck = ok(&tabula(&one, &["fsck"]));
    assert!(fsck.contains("ok: every run reference resolves"), "{fsck}");
    let shown = ok(&tabula(&one, &["show", "1"]));
    let stage = shown
        .lines()
        .find(|l| l.starts_with("stage 1 "))
        .unwrap_or("");
    assert!(
        stage.starts_with("stage 1    `heuristic`, iterations 1..=2: ")
            && stage.contains(" selfplay.mover=\"greedy\""),
        "{shown}"
    );
    // Every iteration is scored against the greedy player; stage 2's are gated.
    let count = |name: &str| {
        let q = format!("SELECT count(*) AS n FROM metrics WHERE name = '{name}' AND run_id = 1");
        sql(&one, &q)[0]["n"].as_u64().unwrap()
    };
    assert_eq!((count("wr_greedy"), count("gate_score")), (5, 2));
    for at in ["1", "2", "3"] {
        let b = ok(&tabula(&one, &["branch", "1", "--at", at, "--seed", "1"]));
        assert!(b.contains(&format!("head {h}")), "branch at {at}: {b}");
    }
    let b = ok(&tabula(
        &one,
        &[
            "branch",
            "1",
            "--at",
            "2",
            "--seed",
            "1",
            "--set",
            "learner.network.weight_decay=0.001",
        ],
    ));
    assert!(!b.contains(&format!("head {h}")), "{b}");
    let id = runs(&one).len().to_string();
    ok(&tabula(&one, &["verify", &id]));
    // A gate every model passes: M* is replaced, so self-play and the head change.
    let b = ok(&tabula(
        &one,
        &[
            "branch",
            "1",
            "--at",
            "3",
            "--seed",
            "1",
            "--set",
            "learner.network.gate.threshold=0",
        ],
    ));
    assert!(!b.contains(&format!("head {h}")), "{b}");
    let id = runs(&one).len().to_string();
    let q = format!(
        "SELECT value FROM metrics WHERE name = 'gate_promoted' AND run_id = {id} AND iteration = 4"
    );
    assert_eq!(sql(&one, &q)[0]["value"].as_f64(), Some(1.0));
    ok(&tabula(&one, &["verify", &id]));
    for it in ["1", "3"] {
        let games = ok(&tabula(&one, &["show", "1", "--games", it]));
        let game = games
            .lines()
            .nth(2)
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap();
        let r = ok(&tabula(&one, &["replay", game]));
        assert!(r.contains("identical, hash checked"), "iteration {it}: {r}");
    }
    let m = json(&tabula(
        &one,
        &[
            "match",
            "checkers:5x5-3,max_plies=60",
            "--a",
            "model:1@4,sims=8",
            "--b",
            "greedy",
            "--games",
            "4",
            "--json",
        ],
    ));
    assert_eq!(m["games"], 4);
}

/// On a Chinese Checkers board the run solves, the network learner reports the exact metrics
/// and, asked for, its games against the greedy player (docs/metrics.md); the other
/// reference metrics are not played there; the same head at 1 and 2 threads.
#[test]
fn solved_checkers_runs_report_exact_and_greedy_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "cc3",
        "name = \"cc3\"\nvariant = \"checkers:3x3-1,max_plies=40\"\nseed = 2\niterations = 2\n\
         games_per_iteration = 8\n[search]\nsimulations = 4\n[eval]\ngames = 20\n\
         [learner]\nkind = \"network\"\n[learner.network]\nhidden = [8]\nbatch_size = 8\n\
         [learner.network.reference]\ngreedy_games = 6\n",
    );
    same_head_at_1_and_2_threads(dir.path(), &spec, "cc3-");
    let db = dir.path().join("cc3-1.db");
    let rows = sql(
        &db,
        "SELECT name, count(*) AS n FROM metrics WHERE name IN ('wr_p', 'mae_v', 'wr_greedy', \
         'greedy_win_share', 'wr_solver_1x', 'c4_best_move') GROUP BY name ORDER BY name",
    );
    let got: Vec<(String, i64)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["n"].as_i64().unwrap(),
            )
        })
        .collect();
    let want = ["greedy_win_share", "mae_v", "wr_greedy", "wr_p"].map(|n| (n.to_string(), 3));
    assert_eq!(got, want);
}

/// The tiny Q-learning runs (a lookup table and a network, against the greedy player in the
/// opponent seat), the tiny tabula rasa run (the soft move limit) and the pipeline with Liu et
/// al.'s input (the game's history): the same head at 1 and
/// 2 threads and after kill -9 + `resume`; `verify` re-executes them; a branch with no
/// overrides ends at the parent's head; a self-play game replays; the trained model plays
/// the greedy player; the table's greedy policy really learns to beat the greedy player.
#[test]
fn q_learning_and_rasa_runs_are_deterministic_resume_branch_and_verify() {
    let specs = [
        ("checkers-tiny-tabular-q", 40, 128, "checkers:4x4-1"),
        ("checkers-tiny-dqn", 10, 128, "checkers:4x4-1"),
        ("checkers-tiny-rasa", 4, 16, "checkers:5x5-3,max_plies=200"),
        // Liu et al.'s input, which reads the game's past: resume, verify and replay hand the
        // network the history self-play did.
        ("checkers-tiny-liu", 4, 16, "checkers:5x5-3,max_plies=60"),
    ];
    for (spec, iterations, games, variant) in specs {
        let dir = tempfile::tempdir().unwrap();
        let s = format!("{}/runs/{spec}.toml", env!("CARGO_MANIFEST_DIR"));
        let h = kill_and_resume(dir.path(), &s, iterations, Some(games), 3, 41, 0.0);
        let one = dir.path().join("one.db");
        ok(&tabula(&one, &["run", &s, "--threads", "1"]));
        assert_eq!(head(&one, "1"), h, "{spec}: 1 thread");
        ok(&tabula(&one, &["verify", "1"]));
        let b = ok(&tabula(&one, &["branch", "1", "--at", "3", "--seed", "1"]));
        assert!(b.contains(&format!("head {h}")), "{spec}: branch: {b}");
        let games = ok(&tabula(&one, &["show", "1", "--games", "2"]));
        let game = games.lines().nth(2).unwrap().split_whitespace().nth(1);
        let r = ok(&tabula(&one, &["replay", game.unwrap()]));
        assert!(r.contains("identical, hash checked"), "{spec}: {r}");
        if spec == "checkers-tiny-rasa" {
            assert!(
                r.contains("(the soft move limit, by forward distance)"),
                "{r}"
            );
        }
        let at = format!("model:1@{iterations}");
        let m = json(&tabula(
            &one,
            &[
                "match", variant, "--a", &at, "--b", "greedy", "--games", "4", "--json",
            ],
        ));
        assert_eq!(m["games"], 4, "{spec}");
        if spec == "checkers-tiny-tabular-q" {
            let score = |i: u64| {
                let q = format!(
                    "SELECT value FROM metrics WHERE name = 'wr_greedy' AND run_id = 1 \
                     AND iteration = {i}"
                );
                sql(&one, &q)[0]["value"].as_f64().unwrap()
            };
            let (first, last) = (score(1), score(iterations));
            assert!(first < 0.45 && last > 0.75, "wr_greedy {first} -> {last}");
        }
    }
}

/// Keeping fewer games (docs/store.md, "Keeping fewer games"): a run with
/// `[store] keep_games = "every:3"` has the head of the same run keeping all (in another
/// store, so no pack is shared), keeps the games of iterations 3 and 6 and those its stored
/// checkpoints (4 and 6: every second full checkpoint and the last) train on next (4, 6),
/// stores fewer pack bytes, passes fsck and verify, branches from its stored checkpoint to
/// its own head, and refuses, naming why, a branch that needs games it no longer has.
#[test]
fn a_run_keeping_fewer_games_has_the_same_head_verifies_and_branches_from_its_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let (all_db, kept_db) = (dir.path().join("all.db"), dir.path().join("kept.db"));
    let all = tiny(dir.path(), "k", 5, 6);
    let text = std::fs::read_to_string(&all).unwrap() + "\n[store]\nkeep_games = \"every:3\"\n";
    let kept = write_spec(dir.path(), "kept", &text);
    ok(&tabula(&all_db, &["run", &all]));
    ok(&tabula(&kept_db, &["run", &kept]));
    assert_eq!(head(&all_db, "k"), head(&kept_db, "k"));
    let iterations = |db: &Path, q: &str| -> Vec<i64> {
        sql(db, q)
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["iteration"].as_i64().unwrap())
            .collect()
    };
    let with_games = "SELECT DISTINCT iteration FROM run_games ORDER BY iteration";
    assert_eq!(iterations(&all_db, with_games), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(iterations(&kept_db, with_games), vec![3, 4, 6]);
    assert_eq!(
        iterations(
            &kept_db,
            "SELECT iteration FROM iterations WHERE games_kept = 0 ORDER BY iteration"
        ),
        vec![1, 2, 5]
    );
    assert_eq!(
        iterations(
            &kept_db,
            "SELECT iteration FROM iterations WHERE snapshot_kept = 1 ORDER BY iteration"
        ),
        vec![4, 6]
    );
    let packs = |db: &Path| sql(db, "SELECT sum(length(bytes)) AS b FROM packs")[0]["b"].as_i64();
    let (a, k) = (packs(&all_db).unwrap(), packs(&kept_db).unwrap());
    assert!(k * 6 < a * 4, "kept {k} pack bytes of {a}");
    assert_eq!(
        sql(&kept_db, "SELECT keep_games FROM runs")[0]["keep_games"],
        "every:3"
    );
    ok(&tabula(&kept_db, &["fsck"]));
    ok(&tabula(&kept_db, &["verify", "k"]));
    let same = json(&tabula(
        &kept_db,
        &["branch", "k", "--at", "4", "--seed", "5", "--json"],
    ));
    assert_eq!(same["head"].as_str().unwrap(), head(&kept_db, "k"));
    let err = fails(&tabula(
        &kept_db,
        &["branch", "k", "--at", "5", "--seed", "5"],
    ));
    assert!(
        err.contains("iteration 5 are not stored") && err.contains("keep_games"),
        "{err}"
    );
    ok(&tabula(&kept_db, &["fsck"]));

    // Changed later (`tabula keep`): the finished run that kept all, told "every:3", keeps
    // what the run that chose it from the start keeps; told "all" again, it says the removed
    // games stay removed. An unfinished run (a branch not yet run) stores the change and
    // applies it when it finishes: keeping none, its own iterations 5 and 6 keep only what its
    // last checkpoint (6) trains on next.
    let kept = json(&tabula(&all_db, &["keep", "k", "every:3", "--json"]));
    assert_eq!(
        (&kept["applied"], &kept["was"], &kept["iterations_removed"]),
        (&true.into(), &"all".into(), &3.into()),
        "{kept}"
    );
    assert_eq!(iterations(&all_db, with_games), vec![3, 4, 6]);
    ok(&tabula(&all_db, &["fsck"]));
    let back = ok(&tabula(&all_db, &["keep", "k", "all"]));
    assert!(back.contains("cannot be brought back"), "{back}");
    assert_eq!(iterations(&all_db, with_games), vec![3, 4, 6]);
    ok(&tabula(
        &all_db,
        &[
            "branch", "k", "--at", "4", "--seed", "5", "--no-run", "--set", "name=b",
        ],
    ));
    let later = json(&tabula(&all_db, &["keep", "b", "none", "--json"]));
    assert_eq!(later["applied"], false, "{later}");
    ok(&tabula(&all_db, &["resume", "b"]));
    assert_eq!(head(&all_db, "b"), head(&all_db, "k"));
    assert_eq!(
        iterations(
            &all_db,
            "SELECT i.iteration FROM iterations i JOIN runs r ON r.id = i.run_id
             WHERE r.name = 'b' AND i.games_kept = 0"
        ),
        vec![5]
    );
}

/// `du`, `rm` and `gc` (docs/store.md, "What a store holds: du, rm and gc"): removing a run
/// frees its objects and packs and shrinks the file (VACUUM), leaves every other run
/// verifying, refuses a run with branches unless told, and refuses beside a live writer
/// (this test's own process holding a lock) leaving the store as it was.
#[test]
fn rm_returns_a_runs_bytes_and_leaves_the_other_runs_verifying() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rm.db");
    ok(&tabula(&db, &["run", &tiny(dir.path(), "a", 1, 4)]));
    ok(&tabula(&db, &["run", &tiny(dir.path(), "b", 2, 4)]));
    ok(&tabula(
        &db,
        &["branch", "a", "--at", "2", "--set", "search.init_q=draw"],
    ));
    let du = json(&tabula(&db, &["du", "--json"]));
    let games: Vec<i64> = du["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["games"].as_i64().unwrap())
        .collect();
    assert_eq!(games, vec![400, 400, 200], "{du}");
    let err = fails(&tabula(&db, &["rm", "a"]));
    assert!(
        err.contains("--with-branches") && err.contains("(a+"),
        "{err}"
    );
    // A live writer: refused, nothing changed.
    let locked = dir.path().join("locked.db");
    std::fs::copy(&db, &locked).unwrap();
    rusqlite::Connection::open(&locked)
        .unwrap()
        .execute(
            "UPDATE runs SET lock_pid = ?1, lock_host = ?2, lock_since = '2026-01-01T00:00:00Z'
             WHERE id = 1",
            rusqlite::params![std::process::id(), tabula::store::host_name()],
        )
        .unwrap();
    let before = std::fs::read(&locked).unwrap();
    for args in [&["rm", "b"][..], &["gc"][..]] {
        let err = fails(&tabula(&locked, args));
        assert!(err.contains("is locked"), "{err}");
    }
    assert!(std::fs::read(&locked).unwrap() == before);
    let size = std::fs::metadata(&db).unwrap().len();
    let rm = json(&tabula(&db, &["rm", "b", "--json"]));
    assert!(
        rm["objects"].as_i64().unwrap() > 0 && rm["packs"].as_i64().unwrap() >= 4,
        "{rm}"
    );
    assert_eq!(rm["vacuumed"], true);
    let after = std::fs::metadata(&db).unwrap().len();
    assert!(after < size, "{after} >= {size}");
    // Once removed, the run is no more: said plainly, the store unchanged.
    let err = fails(&tabula(&db, &["rm", "b"]));
    assert!(err.contains("no run `b` in the store"), "{err}");
    assert_eq!(std::fs::metadata(&db).unwrap().len(), after);
    ok(&tabula(&db, &["fsck"]));
    ok(&tabula(&db, &["verify", "a"]));
    ok(&tabula(&db, &["verify", "3"]));
    // Nothing left that no run reaches.
    let gc = json(&tabula(&db, &["gc", "--json"]));
    assert_eq!(
        (gc["objects"].as_i64(), gc["packs"].as_i64()),
        (Some(0), Some(0))
    );
    ok(&tabula(&db, &["rm", "a", "--with-branches"]));
    assert_eq!(runs(&db).len(), 0);
    let left = sql(
        &db,
        "SELECT (SELECT count(*) FROM packs) + (SELECT count(*) FROM pack_members)
        + (SELECT count(*) FROM objects WHERE kind NOT IN ('run/v1', 'settings/v1', 'settings/v2', 'not-measured/v1',
        'solution/v1', 'solution-chunk/v1')) AS n",
    );
    assert_eq!(left[0]["n"], 0);
    ok(&tabula(&db, &["fsck"]));
}
