//! `tabula serve` answers bad requests with a 4xx and a JSON error, keeps serving, and leaves
//! the store's bytes as they were (docs/dashboard.md "Errors", "Security"); a port in use and
//! a non-loopback --bind are said clearly.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// One raw HTTP/1.1 request (the target sent exactly as given): status and body.
pub(crate) fn request(port: u16, method: &str, target: &str) -> (u16, String) {
    request_for(port, method, target, &format!("127.0.0.1:{port}"))
}

/// [`request`] with a `Host` header of one's choice.
fn request_for(port: u16, method: &str, target: &str, host: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|x| x.1.to_string())
        .unwrap_or_default();
    (status, body)
}

pub(crate) struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `tabula serve --port 0 --json` on `db`; returns it and its port.
pub(crate) fn serve(db: &Path) -> (Serving, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tabula"))
        .arg("--db")
        .arg(db)
        .args(["serve", "--port", "0", "--json", "--threads", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut out = child.stdout.take().unwrap();
    let mut b = [0u8; 1];
    while out.read(&mut b).unwrap() == 1 && b[0] != b'\n' {
        line.push(b[0] as char);
    }
    let j: serde_json::Value = serde_json::from_str(&line).expect(&line);
    let port = j["port"].as_u64().unwrap() as u16;
    assert_eq!(j["url"], format!("http://127.0.0.1:{port}/"));
    (Serving(child), port)
}

fn tabula(db: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tabula"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

fn digest(path: &Path) -> String {
    blake3::hash(&std::fs::read(path).unwrap())
        .to_hex()
        .to_string()
}

#[test]
fn bad_requests_get_json_errors_and_the_store_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("tiny.toml"),
        "name = \"tiny\"\nvariant = \"ewn:3x3x2\"\nseed = 1\niterations = 2\n\
         games_per_iteration = 6\ncheckpoint_every = 1\n[search]\nsimulations = 4\n\
         [eval]\ngames = 20\n",
    )
    .unwrap();
    let db = d.join("t.db");
    let out = tabula(&db, &["run", &d.join("tiny.toml").display().to_string()]);
    assert!(out.status.success(), "{out:?}");
    let out = tabula(&db, &["show", "tiny", "--games", "1"]);
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let game = listing
        .split_whitespace()
        .find(|w| w.len() == 64)
        .expect(&listing)
        .to_string();
    let out = tabula(&db, &["note", "tiny", "a first look", "--tag", "probe"]);
    assert!(out.status.success(), "{out:?}");
    let before = digest(&db);
    let (_server, port) = serve(&db);

    // Good requests first: the API answers.
    let (status, body) = request(port, "GET", "/api/runs");
    assert_eq!(status, 200, "{body}");
    let j: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(j["total"], 1);
    assert_eq!(j["runs"][0]["name"], "tiny");
    assert_eq!(j["runs"][0]["status"], "done");
    // Tags and notes: each run carries them; `tag=` filters, `group=tag` groups.
    assert_eq!(j["runs"][0]["tags"], serde_json::json!(["probe"]));
    assert_eq!(j["runs"][0]["note"], "a first look");
    assert_eq!(j["tags"], serde_json::json!([{"tag": "probe", "runs": 1}]));
    for (target, total) in [("/api/runs?tag=probe", 1), ("/api/runs?tag=probe,other", 0)] {
        let (status, body) = request(port, "GET", target);
        assert_eq!(status, 200, "{target}: {body}");
        let t: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(t["total"], total, "{target}: {body}");
    }
    let (_, body) = request(port, "GET", "/api/runs?group=tag");
    let t: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        t["groups"],
        serde_json::json!([{"tag": "probe", "runs": [1]}])
    );
    let (status, _) = request(port, "GET", "/?tag=probe&group=tag&q=tiny");
    assert_eq!(status, 200, "a filtered runs list is a link");
    let (status, body) = request(port, "GET", &format!("/api/games/{game}"));
    assert_eq!(status, 200, "{body}");
    let g: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(g["owner"]["run"], 1);
    assert_eq!(g["owner"]["iteration"], 1);
    // The run solved ewn:3x3x2 into the store: the start position has an exact value.
    assert_eq!(g["solved"], true);
    assert!(g["positions"][0]["value_p0"].is_number(), "{body}");

    let bad: &[(&str, &str, u16, &str)] = &[
        ("GET", "/runs/999", 404, "no run `999`"),
        ("GET", "/api/runs/999", 404, "no run `999`"),
        (
            "GET",
            "/api/runs/nosuchrun/metrics",
            404,
            "no run `nosuchrun`",
        ),
        ("GET", "/sweeps/nosuch", 404, "no sweep `nosuch`"),
        ("GET", "/api/sweeps/nosuch", 404, "no sweep `nosuch`"),
        ("GET", "/games/zzzz", 400, "not a game address"),
        ("GET", "/api/games/12", 400, "not a game address"),
        (
            "GET",
            &format!("/api/games/{game}00"),
            400,
            "not a game address",
        ),
        ("GET", "/api/games/0000000000000000", 404, "no game record"),
        ("GET", "/api/runs?page=99999999999999999999", 400, "page="),
        (
            "GET",
            "/api/runs?page=1000001",
            400,
            "allowed: an integer from 1 to 1000000",
        ),
        ("GET", "/api/runs?per_page=0", 400, "per_page=0"),
        (
            "GET",
            "/api/runs/1/games?iteration=abc",
            400,
            "iteration=abc",
        ),
        ("GET", "/api/runs/1/games?page=0", 400, "page=0"),
        // Parameters past the run's end are out of range, not an empty list (issue 49).
        (
            "GET",
            "/api/runs/1/games?iteration=3",
            400,
            "iteration=3: allowed: an integer from 1 to 2",
        ),
        (
            "GET",
            "/api/runs/1/games?iteration=0",
            400,
            "iteration=0: allowed: an integer from 1 to 2",
        ),
        (
            "GET",
            "/api/runs/1/metrics?from=3",
            400,
            "from=3: allowed: an integer from 0 to 2",
        ),
        (
            "GET",
            "/api/runs?color=red",
            400,
            "unknown query parameter `color`",
        ),
        (
            "GET",
            "/api/runs?group=sweep",
            400,
            "group=sweep: allowed: tag",
        ),
        ("GET", "/?group=sweep", 400, "group=sweep: allowed: tag"),
        (
            "GET",
            "/?colour=red",
            400,
            "unknown query parameter `colour`",
        ),
        ("GET", "/compare", 400, "?runs=A,B"),
        ("GET", "/compare?runs=1,999", 404, "no run `999`"),
        ("GET", "/../../etc/passwd", 400, "`..` segment"),
        ("GET", "/assets/%2e%2e/Cargo.toml", 400, "`..` segment"),
        ("GET", "/assets/../../Cargo.toml", 400, "`..` segment"),
        ("GET", "/assets/Cargo.toml", 404, "no page or API"),
        ("GET", "/etc/passwd", 404, "no page or API"),
        (
            "GET",
            "/api/runs/%ff",
            400,
            "not valid percent-encoded UTF-8",
        ),
        (
            "GET",
            "/api/runs/%zz",
            400,
            "not valid percent-encoded UTF-8",
        ),
        ("GET", "/positions", 400, "?run=ID"),
        ("GET", "/api/positions?position=x", 400, "?run=ID"),
        (
            "GET",
            "/api/positions?run=1&past=x",
            400,
            "past= needs position=",
        ),
        ("GET", "/positions?run=999", 404, "no run `999`"),
        (
            "GET",
            "/api/positions?run=1&position=nonsense",
            400,
            "give a position of ewn:3x3x2 in its notation",
        ),
        (
            "GET",
            "/positions?run=1&position=nonsense",
            400,
            "e.g. position=",
        ),
        (
            "GET",
            "/api/positions?run=1&iteration=3",
            400,
            "`iteration`",
        ),
        ("POST", "/api/runs", 405, "only GET and HEAD"),
        ("DELETE", "/runs/1", 405, "only GET and HEAD"),
        (
            "GET",
            &format!("/{}", "a".repeat(9000)),
            414,
            "at most 8192",
        ),
    ];
    let mut failures = Vec::new();
    for (method, target, want, says) in bad {
        let (status, body) = request(port, method, target);
        let message = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|j| {
                (j["error"]["status"] == *want)
                    .then(|| j["error"]["message"].as_str().map(str::to_string))
                    .flatten()
            });
        match message {
            Some(m) if status == *want && m.contains(says) => {}
            _ => failures.push(format!(
                "{method} {}: {status} {body}",
                &target[..target.len().min(80)]
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // A page elsewhere that resolves to 127.0.0.1 (DNS rebinding) reads nothing.
    for host in ["evil.example", "evil.example:8080", "10.0.0.1"] {
        let (status, body) = request_for(port, "GET", "/api/runs", host);
        assert_eq!(status, 403, "{host}: {body}");
        assert!(
            body.contains("answers only requests for localhost"),
            "{body}"
        );
    }
    for host in ["localhost", "LOCALHOST:1", "[::1]:80", "127.0.0.1"] {
        let (status, body) = request_for(port, "GET", "/api/sweeps", host);
        assert_eq!(status, 200, "{host}: {body}");
    }

    // Still serving, and every page and endpoint answers.
    for target in [
        "/",
        "/runs/1",
        "/runs/tiny",
        "/compare?runs=1,tiny",
        &format!("/games/{}", &game[..8]),
        "/api/runs/1",
        "/api/runs/1/metrics",
        "/api/runs/1/games?iteration=2&per_page=3",
        "/api/sweeps",
        "/positions?run=1",
        "/assets/positions.js",
        "/assets/common.js",
        "/assets/uPlot.iife.min.js",
    ] {
        let (status, body) = request(port, "GET", target);
        assert_eq!(status, 200, "{target}: {body}");
    }
    let (_, body) = request(port, "GET", "/api/runs/1/metrics");
    let m: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(m["iterations"], serde_json::json!([0, 1, 2]));
    assert!(m["values"]["wr_p"][2].is_number(), "{body}");
    // A position across the stored checkpoints: the untrained model (iteration 0) and the
    // full checkpoint of iteration 2 (a full one each iteration, and tabular AlphaZero keeps
    // every other one's bytes: 1 is derived, left out), its priors a distribution over the legal moves, against the exact values.
    let (status, body) = request(port, "GET", "/api/positions?run=tiny");
    assert_eq!(status, 200, "{body}");
    let p: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(p["iterations"], serde_json::json!([0, 2]), "{body}");
    assert_eq!(p["derived"], 1, "{body}");
    assert_eq!(p["solved"], true);
    let first = &p["positions"][0];
    let notation = first["notation"].as_str().unwrap().to_string();
    assert!(first["value"].is_number(), "{body}");
    assert!(
        first["input"].is_null(),
        "a table reads no input planes: {body}"
    );
    let actions = first["actions"].as_array().unwrap();
    assert!(actions.iter().any(|a| a["best"] == true), "{body}");
    for k in 0..2 {
        let sum: f64 = actions
            .iter()
            .map(|a| a["policy"][k].as_f64().unwrap())
            .sum();
        assert!(
            (sum - 1.0).abs() < 1e-6,
            "iteration {k}: priors sum to {sum}"
        );
    }
    let one = format!(
        "/api/positions?run=1&position={}",
        notation
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    );
    let (status, body) = request(port, "GET", &one);
    assert_eq!(status, 200, "{one}: {body}");
    let p1: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(p1["positions"].as_array().unwrap().len(), 1);
    assert_eq!(
        p1["positions"][0], *first,
        "the same position, the same outputs"
    );
    // The game's past (for an input that reads it): a bad one is named; the table reads the
    // position alone, so its outputs are the same with a past.
    let (status, body) = request(port, "GET", &format!("{one}&past=nonsense"));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("past=, position 1 of the list"), "{body}");
    let past = one.split("position=").nth(1).unwrap();
    let (status, body) = request(port, "GET", &format!("{one}&past={past}%3B{past}"));
    assert_eq!(status, 200, "{body}");
    let p2: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(p2["positions"][0], *first, "a table reads no past");
    let (_, body) = request(port, "GET", "/api/runs/1/games?iteration=2&per_page=3");
    let gl: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(gl["total"], 6);
    assert_eq!(gl["games"].as_array().unwrap().len(), 3);

    drop(_server);
    assert_eq!(digest(&db), before, "the store's bytes changed");
    for side in ["t.db-wal", "t.db-shm", "t.db-journal"] {
        assert!(!d.join(side).exists(), "{side} appeared beside the store");
    }
}

#[test]
fn a_port_in_use_and_a_public_bind_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let out = tabula(&db, &["solve", "ewn:3x3x2"]);
    assert!(out.status.success(), "{out:?}");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = tabula(&db, &["serve", "--port", &port, "--check"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "--port {port}: 127.0.0.1:{port} is already in use"
        )),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let out = tabula(
        &db,
        &["serve", "--bind", "0.0.0.0", "--port", "0", "--check"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: --bind 0.0.0.0: the dashboard is reachable from other machines"),
        "{err}"
    );
    let out = tabula(&db, &["serve", "--port", "0", "--check"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).is_empty());
    let missing = dir.path().join("none.db");
    let out = tabula(&missing, &["serve", "--port", "0", "--check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no store at"));
    assert!(!missing.exists());
}

/// `[eval] every = 2` (docs/metrics.md, "The evaluation interval"): the run page's metrics
/// list the measured iterations only (0, 2, 4 and the last, 5), each with its values, none
/// carried over or filled in; a branch at an unmeasured iteration lists its parent's measured
/// ones up to there, then its own.
#[test]
fn the_metrics_api_lists_the_measured_iterations_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("every.toml"),
        "name = \"every\"\nvariant = \"ewn:3x3x2\"\nseed = 1\niterations = 5\n\
         games_per_iteration = 6\ncheckpoint_every = 1\n[search]\nsimulations = 4\n\
         [eval]\ngames = 20\nevery = 2\n",
    )
    .unwrap();
    let db = d.join("t.db");
    let out = tabula(&db, &["run", &d.join("every.toml").display().to_string()]);
    assert!(out.status.success(), "{out:?}");
    let out = tabula(
        &db,
        &["branch", "every", "--at", "3", "--set", "iterations=6"],
    );
    assert!(out.status.success(), "{out:?}");
    let (_server, port) = serve(&db);
    for (run, iterations, sources) in [
        ("1", vec![0, 2, 4, 5], vec![1, 1, 1, 1]),
        ("2", vec![0, 2, 4, 6], vec![1, 1, 2, 2]),
    ] {
        let (status, body) = request(port, "GET", &format!("/api/runs/{run}/metrics"));
        assert_eq!(status, 200, "{body}");
        let j: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(j["iterations"], serde_json::json!(iterations), "{body}");
        assert_eq!(j["source_run"], serde_json::json!(sources), "{body}");
        let wr = j["values"]["wr_p"].as_array().unwrap();
        assert_eq!(wr.len(), iterations.len());
        assert!(wr.iter().all(|v| v.is_number()), "{body}");
    }
}

/// A network run's positions carry the planes its network reads there (`/api/positions`'s
/// `input`), the same values `tabula encode` prints for the position.
#[test]
fn a_network_runs_positions_carry_its_input_planes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("net.toml"),
        "name = \"net\"\nvariant = \"ewn:3x3x2\"\nseed = 1\niterations = 1\n\
         games_per_iteration = 4\ncheckpoint_every = 1\n[search]\nsimulations = 4\n\
         [eval]\nwr_p = false\nerrors = false\n[learner]\nkind = \"network\"\n\
         [learner.network]\narch = \"mlp\"\nhidden = [8]\nbatch_size = 4\ntrain_steps = 1\n\
         [learner.network.reference]\nsolver_games = 0\n",
    )
    .unwrap();
    let db = d.join("t.db");
    let out = tabula(&db, &["run", &d.join("net.toml").display().to_string()]);
    assert!(out.status.success(), "{out:?}");
    let (_server, port) = serve(&db);
    let (status, body) = request(port, "GET", "/api/positions?run=net");
    assert_eq!(status, 200, "{body}");
    let p: serde_json::Value = serde_json::from_str(&body).unwrap();
    let first = &p["positions"][0];
    let input = &first["input"];
    assert_eq!(input["input"], "position", "{body}");
    assert_eq!(input["shape"], serde_json::json!([7, 3, 3]));
    let notation = first["notation"].as_str().unwrap();
    let out = tabula(&db, &["encode", "ewn:3x3x2", notation, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let floats = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    assert_eq!(floats(&input["values"]), floats(&cli["values"]));
    assert_eq!(input["plane_names"], cli["plane_names"]);
}
