//! The dashboard in a real browser while a run writes the store: headless Chromium (Debian's
//! `chromium`), driven over WebDriver by `chromedriver` (Debian's `chromium-driver`; both
//! installed by `scripts/install-chromium.sh`), speaking WebDriver's JSON over HTTP from here.
//! Each page is opened once and read twice from its live DOM: the runs table lists the run
//! and its iteration count grows, the run page's WR_p curve gains points, all without a reload
//! (the page's navigation entries stay one); no page logs a console error; the runs list
//! filters and groups by tag from its URL and shows notes; the run page says its ETA once and
//! every chart's tick labels differ; the sweep page says "k of N", draws a final-value figure
//! and shows one seed without an interval; the compare page's settings of four runs fit a
//! 1280 px window; the game viewer opens at the first move's position and steps through a
//! stored EWN game with the keyboard, showing exact values; the positions page draws a run's
//! policy and value against the exact values. Skipped loudly when either program is missing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn found(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.1 exchange with JSON bodies. The reply is read to its Content-Length (or its
/// last chunk): chromedriver keeps the connection open.
fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let data = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{data}",
        data.len()
    )
    .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head_end, head) = loop {
        let n = s.read(&mut chunk).unwrap();
        assert!(
            n > 0,
            "{method} {path}: the connection closed before the headers"
        );
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break (
                i + 4,
                String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase(),
            );
        }
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let length = head.lines().find_map(|l| {
        l.strip_prefix("content-length:")
            .and_then(|v| v.trim().parse::<usize>().ok())
    });
    let chunked = head.contains("transfer-encoding: chunked");
    loop {
        let have = buf.len() - head_end;
        let done = match length {
            Some(n) => have >= n,
            None if chunked => buf[head_end..].ends_with(b"0\r\n\r\n"),
            None => false,
        };
        if done {
            break;
        }
        let n = s.read(&mut chunk).unwrap();
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let mut body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
    if chunked {
        body = dechunk(&body);
    }
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn dechunk(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// A WebDriver session.
struct Browser {
    port: u16,
    session: String,
}

impl Drop for Browser {
    /// Ends the session, which quits Chromium (killing chromedriver would leave it running).
    fn drop(&mut self) {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
            let _ = write!(
                s,
                "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
                self.session
            );
            let _ = s.read(&mut [0u8; 1024]);
        }
    }
}

impl Browser {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, v) = http(
            self.port,
            method,
            &format!("/session/{}{path}", self.session),
            body.as_ref(),
        );
        assert_eq!(status, 200, "{method} {path}: {v}");
        v["value"].clone()
    }

    fn go(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Evaluates `script` until `ok` holds for its value (at most `secs` seconds).
    fn wait(&self, script: &str, secs: u64, ok: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let v = self.js(script);
            if ok(&v) {
                return v;
            }
            assert!(
                start.elapsed() < Duration::from_secs(secs),
                "waited {secs} s for `{script}`; last: {v}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The browser's console messages since the last call, those at level SEVERE.
    fn console_errors(&self) -> Vec<String> {
        let v = self.call("POST", "/se/log", Some(json!({"type": "browser"})));
        v.as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].to_string())
            .collect()
    }

    /// Marks the page's window: a reload makes a new one without the mark.
    fn mark(&self) {
        self.js("window.__probe = 'same page'; return null");
    }

    /// Whether the page is the one marked (never reloaded), with one navigation entry.
    fn not_reloaded(&self) -> bool {
        self.js("return window.__probe === 'same page' && \
             performance.getEntriesByType('navigation').length === 1")
            == Value::Bool(true)
    }

    fn key(&self, key: &str) {
        let body = self.call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": "body"})),
        );
        let id = body
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap()
            .to_string();
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": key })),
        );
    }
}

/// Prints the end of chromedriver's log when the test fails (a panic unwinds through it).
struct LogTail(std::path::PathBuf);

impl Drop for LogTail {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.0).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            eprintln!(
                "--- the last lines of chromedriver's log ---\n{}",
                lines[lines.len().saturating_sub(60)..].join("\n")
            );
        }
    }
}

fn tabula(db: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tabula"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

// This test once failed in 2 of 3 runs on a loaded machine (chromedriver's "Timed out
// receiving message from renderer" on the first page): the server's connection pool
// (tiny_http's) lost a wake-up when the browser opened several connections at once, and the
// page's last script was never read. The server now works round it (`nudge` in
// src/serve/http.rs); chromedriver's own log is kept and its tail printed on a failure.
#[test]
fn every_page_works_live_in_headless_chromium() {
    if !found("chromium") || !found("chromedriver") {
        eprintln!(
            "\n!!!!!!!!\n!!! SKIPPED: chromium or chromedriver is missing (run \
             scripts/install-chromium.sh; `make test` does it when missing)\n!!!!!!!!\n"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A finished sweep of four runs (its store holds the solution of ewn:3x3x3; its name as
    // long as a study's, so the compare page's column heads are too), a full
    // checkpoint each iteration (iteration 2's kept: the positions page draws 0 and 2).
    std::fs::write(
        d.join("base.toml"),
        "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\ngames_per_iteration = 20\n\
         checkpoint_every = 1\n[search]\nsimulations = 8\n[eval]\ngames = 100\n",
    )
    .unwrap();
    std::fs::write(
        d.join("s.toml"),
        "name = \"ewn-3x3x3-simulations-by-seed-grid\"\nbase = \"base.toml\"\nseeds = [1, 2]\n[axes]\n\
         \"search.simulations\" = [4, 8]\n",
    )
    .unwrap();
    let db = d.join("t.db");
    let out = tabula(
        &db,
        &[
            "sweep",
            &d.join("s.toml").display().to_string(),
            "--no-calibrate",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    for args in [
        &["note", "1", "the first seed", "--tag", "baseline"][..],
        &["note", "2", "--tag", "baseline", "--tag", "probe"],
    ] {
        let out = tabula(&db, args);
        assert!(out.status.success(), "{out:?}");
    }
    // The server starts on the finished store (an immutable read), then a run starts writing.
    let mut serve = Command::new(env!("CARGO_BIN_EXE_tabula"))
        .arg("--db")
        .arg(&db)
        .args(["serve", "--port", "0", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    {
        let out = serve.stdout.as_mut().unwrap();
        let mut b = [0u8; 1];
        while out.read(&mut b).unwrap() == 1 && b[0] != b'\n' {
            line.push(b[0] as char);
        }
    }
    let _serve = Killed(serve);
    let url = serde_json::from_str::<Value>(&line).expect(&line)["url"]
        .as_str()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    std::fs::write(
        d.join("long.toml"),
        "name = \"long\"\nvariant = \"ewn:3x3x3\"\nseed = 3\niterations = 100000\n\
         games_per_iteration = 40\n[search]\nsimulations = 8\n[eval]\ngames = 200\n",
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_tabula"))
        .arg("--db")
        .arg(&db)
        .args([
            "run",
            &d.join("long.toml").display().to_string(),
            "--threads",
            "1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _run = Killed(run);

    let wd_port = free_port();
    let log = d.join("chromedriver.log");
    let _tail = LogTail(log.clone());
    let driver = Command::new("chromedriver")
        .arg(format!("--port={wd_port}"))
        .arg(format!("--log-path={}", log.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _driver = Killed(driver);
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", wd_port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "chromedriver did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let profile = tempfile::tempdir().unwrap();
    let caps = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:loggingPrefs": {"browser": "ALL"},
        // A page that does not load fails the test in bounded time, not at the read timeout.
        "timeouts": {"pageLoad": 60000, "script": 30000},
        // Navigation returns at DOMContentLoaded; the checks below wait for what they read.
        // (With "normal", a loaded machine sometimes timed out waiting for the renderer on
        // the first page.)
        "pageLoadStrategy": "eager",
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                     "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                     "--window-size=1400,1000", "--disable-renderer-backgrounding",
                     "--disable-background-timer-throttling",
                     format!("--user-data-dir={}", profile.path().display())]
        }
    }}});
    let (status, v) = http(wd_port, "POST", "/session", Some(&caps));
    assert_eq!(status, 200, "{v}");
    let b = Browser {
        port: wd_port,
        session: v["value"]["sessionId"].as_str().unwrap().to_string(),
    };
    let mut errors = Vec::new();

    // `/`: the runs table lists the running run, and its iteration count grows.
    b.go(&format!("{url}/"));
    let row = "const r = [...document.querySelectorAll('tr[data-run]')].find(t => \
               t.textContent.includes('long')); return r ? Number(r.dataset.iterations) : -1";
    let first = b.wait(row, 60, |v| v.as_i64().is_some_and(|n| n >= 1));
    b.mark();
    let grown = b.wait(row, 60, |v| v.as_i64() > first.as_i64());
    assert!(grown.as_i64() > first.as_i64());
    assert!(b.not_reloaded(), "the runs page reloaded");
    let listed = b.js("return document.querySelectorAll('tr[data-run]').length");
    assert_eq!(listed, 5, "the sweep's four runs and the long one");
    let status = b.js(
        "return [...document.querySelectorAll('tr[data-run]')].find(t => \
         t.textContent.includes('long')).dataset.status",
    );
    assert_eq!(status, "running");
    errors.extend(b.console_errors().into_iter().map(|e| format!("/: {e}")));

    // The long run's id, for its page below.
    let id = b.js(
        "return [...document.querySelectorAll('tr[data-run]')].find(t => \
         t.textContent.includes('long')).dataset.run",
    );
    let id = id.as_str().unwrap().to_string();
    // `/?tag=baseline&group=tag`: the runs of one tag, a table per tag, notes shown; the
    // view is the URL (unticking the grouping leaves `?tag=baseline`).
    b.go(&format!("{url}/?tag=baseline&group=tag"));
    let groups = b.wait(
        "return [...document.querySelectorAll('#tables table')].map(t => t.dataset.group + \
         ':' + t.querySelectorAll('tr[data-run]').length).join(' ')",
        30,
        |v| v.as_str().is_some_and(|s| s.contains("tag baseline:")),
    );
    assert_eq!(groups, "tag baseline:2 tag probe:1");
    let note = b.js("return document.querySelector('tr[data-run=\"1\"] td.note-cell').textContent");
    assert_eq!(note, "the first seed");
    b.js("document.getElementById('group').click(); return null");
    assert_eq!(b.js("return location.search"), "?tag=baseline");
    assert_eq!(
        b.js("return document.querySelectorAll('tr[data-run]').length"),
        2
    );
    errors.extend(
        b.console_errors()
            .into_iter()
            .map(|e| format!("/?tag: {e}")),
    );

    // `/runs/ID`: the WR_p curve gains points without a reload.
    b.go(&format!("{url}/runs/{id}"));
    let points = "const c = document.querySelector('.chart[data-metric=wr_p]'); \
                  return c && c.querySelector('canvas') ? Number(c.dataset.points) : -1";
    let p1 = b.wait(points, 60, |v| v.as_i64().is_some_and(|n| n >= 2));
    b.mark();
    let p2 = b.wait(points, 60, |v| v.as_i64() > p1.as_i64());
    assert!(p2.as_i64() > p1.as_i64());
    let its = "return Number(document.getElementById('status').dataset.iterations)";
    let i1 = b.js(its);
    b.wait(its, 60, |v| v.as_i64() > i1.as_i64());
    assert!(b.not_reloaded(), "the run page reloaded");
    // The running run's ETA is said once (the status cell's), not again after the iterations.
    let etas = b.wait(
        "return document.getElementById('status').textContent.split('ETA').length - 1",
        30,
        |v| v.as_u64().is_some_and(|n| n >= 1),
    );
    assert_eq!(etas, 1, "the ETA is printed once");
    // Every chart's y tick labels differ (wr_p_ci95's once all read "0.006").
    let ticks = b.js(
        "return [...document.querySelectorAll('.chart[data-metric]')].map(c => \
         [c.dataset.metric, c.dataset.yTicks || ''])",
    );
    let ticks = ticks.as_array().unwrap();
    assert!(
        ticks.iter().any(|t| t[0] == "wr_p_ci95"),
        "a wr_p_ci95 chart: {ticks:?}"
    );
    for t in ticks {
        let labels: Vec<&str> = t[1].as_str().unwrap().split('|').collect();
        let distinct: std::collections::BTreeSet<&&str> = labels.iter().collect();
        assert!(
            labels.len() >= 2 && distinct.len() == labels.len(),
            "{}: tick labels {labels:?}",
            t[0]
        );
    }
    let settings = b.js("return document.getElementById('info').textContent");
    assert!(
        settings.as_str().unwrap().contains("simulations"),
        "{settings}"
    );
    errors.extend(
        b.console_errors()
            .into_iter()
            .map(|e| format!("/runs/{id}: {e}")),
    );

    // `/sweeps/grid`: "k of N" and a final-value figure.
    b.go(&format!("{url}/sweeps/ewn-3x3x3-simulations-by-seed-grid"));
    let progress = b.wait(
        "return document.getElementById('progress').textContent",
        30,
        |v| v.as_str().is_some_and(|s| !s.is_empty()),
    );
    assert!(
        progress
            .as_str()
            .unwrap()
            .starts_with("4 of 4 runs finished"),
        "{progress}"
    );
    let figures = b.wait(
        "return document.querySelectorAll('.final-figure canvas').length",
        30,
        |v| v.as_u64().is_some_and(|n| n >= 1),
    );
    assert!(figures.as_u64().unwrap() >= 4, "one per metric: {figures}");
    let pivot = b.js("return document.querySelector('table.pivot').textContent");
    assert!(pivot.as_str().unwrap().contains("n=2"), "{pivot}");
    // One seed is shown without an interval; tick labels 0.0005 apart keep 4 decimals.
    let one = b.js("return T.stat({mean: 0.087, lo: 0.087, hi: 0.087, n: 1}, 3)");
    assert_eq!(one, "0.087 (n=1, no interval)");
    let labels = b.js("return T.tickLabels([0.0055, 0.006, 0.0065], 0.0005).join(' ')");
    assert_eq!(labels, "0.0055 0.0060 0.0065");
    errors.extend(
        b.console_errors()
            .into_iter()
            .map(|e| format!("/sweeps/grid: {e}")),
    );

    // `/compare`: three of the sweep's runs and the long one, every setting shown, in a
    // 1280 px window: the settings table fits it.
    b.call(
        "POST",
        "/window/rect",
        Some(json!({"width": 1280, "height": 900})),
    );
    b.go(&format!("{url}/compare?runs=1,2,3,{id}"));
    let differing = b.wait(
        "return document.getElementById('diff').dataset.differing",
        30,
        |v| v.is_string(),
    );
    assert!(
        differing.as_str().unwrap().parse::<u32>().unwrap() >= 3,
        "{differing}"
    );
    b.wait(
        "return document.querySelectorAll('#charts canvas').length",
        30,
        |v| v.as_u64().is_some_and(|n| n >= 1),
    );
    let fits = b.js("document.getElementById('all').click(); \
         const t = document.querySelector('#diff table'); \
         return [t.querySelectorAll('tr').length, Math.ceil(t.getBoundingClientRect().right), \
                 document.documentElement.scrollWidth, window.innerWidth]");
    let f: Vec<u64> = fits
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(f[0] > 20, "every setting shown: {f:?}");
    assert!(
        f[1] <= f[3] && f[2] <= f[3],
        "the settings table (right edge, page width) fits the {} px window: {f:?}",
        f[3]
    );
    errors.extend(
        b.console_errors()
            .into_iter()
            .map(|e| format!("/compare: {e}")),
    );

    // `/games/HASH`: a game of the sweep's first run, stepped with the arrow keys.
    let (_, games) = http(
        url.rsplit(':').next().unwrap().parse().unwrap(),
        "GET",
        "/api/runs/1/games?iteration=1&per_page=1",
        None,
    );
    let hash = games["games"][0]["hash"].as_str().unwrap().to_string();
    let (_, game) = http(
        url.rsplit(':').next().unwrap().parse().unwrap(),
        "GET",
        &format!("/api/games/{hash}"),
        None,
    );
    // The viewer opens at the position of the first move (after EWN's first roll), its board
    // beside that move's table.
    let first = game["steps"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| s["kind"] == "move")
        .unwrap();
    assert!(first >= 1, "EWN places and rolls before the first move");
    // Six steps on, or to the game's end.
    let last = (first + 6).min(game["steps"].as_array().unwrap().len());
    b.go(&format!("{url}/games/{hash}"));
    b.wait(
        "return document.getElementById('main').dataset.step",
        30,
        |v| v.as_str().and_then(|s| s.parse::<usize>().ok()) == Some(first),
    );
    let shown = b.js("return [document.getElementById('board').textContent, \
         document.querySelector('#moves h3').textContent]");
    assert_eq!(
        shown[0], game["positions"][first]["board"],
        "the board of the first move"
    );
    let heading = shown[1].as_str().unwrap();
    assert!(
        heading.starts_with("ply 1,") && !heading.contains("after the chance steps"),
        "{heading}"
    );
    let value = b.js("return document.getElementById('exact').dataset.value");
    assert!(
        value.as_str().unwrap().parse::<f64>().is_ok(),
        "the first position's exact value: {value}"
    );
    let mut moves_seen = 0;
    let mut chance_seen = 0;
    for step in first + 1..=last {
        b.key("\u{E014}"); // ArrowRight
        let at = b.js("return document.getElementById('main').dataset.step");
        assert_eq!(at, step.to_string(), "step {step}");
        // EWN rolls a die before every move: the roll is shown above the board.
        let chance = b.js("return document.getElementById('chance').textContent");
        if chance.as_str().is_some_and(|t| t.starts_with("chance: ")) {
            chance_seen += 1;
        }
        let best =
            b.js("return [...document.querySelectorAll('#moves td.best')].map(t => t.textContent)");
        if let Some(list) = best.as_array().filter(|l| !l.is_empty()) {
            moves_seen += 1;
            for v in list {
                let x: f64 = v.as_str().unwrap().parse().unwrap();
                assert!((-1.0..=1.0).contains(&x), "{v}");
            }
        }
    }
    assert!(
        moves_seen >= 2,
        "exact move values shown on {moves_seen} of {} steps",
        last - first
    );
    assert!(
        chance_seen >= 1,
        "a die roll shown on {chance_seen} of {} steps",
        last - first
    );
    b.key("\u{E012}"); // ArrowLeft
    assert_eq!(
        b.js("return document.getElementById('main').dataset.step"),
        (last - 1).to_string()
    );
    errors.extend(
        b.console_errors()
            .into_iter()
            .map(|e| format!("/games: {e}")),
    );

    // `/positions`: the first run's default positions across its stored checkpoints (the
    // untrained model and iteration 2's), each against its exact values.
    b.go(&format!("{url}/positions?run=1"));
    let models = b.wait(
        "return Number(document.getElementById('positions').dataset.models || 0)",
        60,
        |v| v.as_i64().is_some_and(|n| n >= 1),
    );
    assert_eq!(models, 2, "iterations 0 and 2 (1 is derived)");
    let drawn = b.js("return [document.querySelectorAll('.position').length, \
         document.querySelectorAll('.policy-chart canvas').length, \
         document.querySelectorAll('.value-chart canvas').length]");
    let drawn: Vec<u64> = drawn
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(
        drawn[0] >= 1 && drawn[1] == drawn[0] && drawn[2] == drawn[0],
        "{drawn:?}"
    );
    let exact = b.js("return document.querySelector('.position .exact').dataset.value");
    let exact: f64 = exact.as_str().unwrap().parse().unwrap();
    assert!((0.0..=1.0).contains(&exact), "{exact}");
    errors.extend(
        b.console_errors()
            .into_iter()
            .map(|e| format!("/positions: {e}")),
    );

    // The checks can fail: a reload is seen, and so is a console error.
    b.mark();
    b.js("location.reload(); return null");
    b.wait("return document.readyState", 30, |v| v == "complete");
    assert!(!b.not_reloaded(), "a reload went unseen");
    b.go("data:text/html,<script>console.error('deliberate')</script>");
    let control = b.console_errors();
    assert!(
        control.iter().any(|e| e.contains("deliberate")),
        "a console error went unseen: {control:?}"
    );

    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
}
