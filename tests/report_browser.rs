//! The sweep report in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `scripts/install-chromium.sh`, which `make test` calls when it is missing) loads the page
//! without console messages, and the figures are drawn (the page's script counts the SVG
//! curves into `data-curves` on `<body>`, read back from the dumped DOM). A control page with
//! a deliberate console error shows that such errors are caught.

use std::path::Path;
use std::process::Command;

fn chromium() -> Option<String> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(name.to_string());
        }
    }
    None
}

/// The dumped DOM and the console lines of loading `page` headless.
fn load(browser: &str, page: &Path) -> (String, Vec<String>) {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

fn attr(dom: &str, name: &str) -> Option<u64> {
    let at = dom.find(&format!("{name}=\""))? + name.len() + 2;
    dom[at..].split('"').next()?.parse().ok()
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!(
            "\n!!!!!!!!\n!!! SKIPPED: no chromium on PATH and it could not be installed \
             (run scripts/install-chromium.sh; `make test` does it when missing)\n!!!!!!!!\n"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("base.toml"),
        "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 3\ngames_per_iteration = 30\n\
         [search]\nsimulations = 8\n[eval]\ngames = 100\n",
    )
    .unwrap();
    std::fs::write(
        d.join("s.toml"),
        "name = \"browser\"\nbase = \"base.toml\"\nseeds = [1, 2]\n[axes]\n\
         \"search.init_q\" = [\"loss\", \"draw\"]\n",
    )
    .unwrap();
    let db = d.join("t.db");
    let tabula = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_tabula"))
            .arg("--db")
            .arg(&db)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    tabula(&[
        "sweep",
        d.join("s.toml").to_str().unwrap(),
        "--no-calibrate",
    ]);
    let out = d.join("report");
    tabula(&["report", "browser", "--out", out.to_str().unwrap()]);

    let (dom, console) = load(&browser, &out.join("index.html"));
    assert!(console.is_empty(), "console messages: {console:?}");
    // Eight figures: the final values of WR_p, ERR_p, MAE_v and coverage against init_q,
    // then their curves against iteration, each with two lines, bands and axes.
    assert_eq!(attr(&dom, "data-figures"), Some(8), "{dom}");
    let curves = attr(&dom, "data-curves").expect("the page's script ran");
    assert!(curves >= 8, "{curves} curves");
    assert!(dom.contains("<polyline"), "no lines drawn");

    // Control: a console error is seen.
    let bad = d.join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>missing();</script></body></html>",
    )
    .unwrap();
    let (_, console) = load(&browser, &bad);
    assert!(!console.is_empty(), "a console error went unnoticed");
}
