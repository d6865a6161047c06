//! `tabula serve`: the live dashboard (docs/dashboard.md). Binds, prints the address, and
//! serves until stopped (Ctrl-C).

use std::path::Path;

use anyhow::bail;
use serde::Serialize;
use tabula::serve::{Server, Settings};
use tabula::store::Store;

use super::args::ServeArgs;
use super::output::{JsonLayout, Report, emit, finish};

/// The most handler threads `--threads` takes.
const MAX_THREADS: usize = 64;

pub(crate) fn serve(db: Option<&Path>, args: &ServeArgs) -> anyhow::Result<()> {
    let db = Store::resolve_path(db);
    if !db.exists() {
        bail!(
            "no store at {} (give --db PATH, or set TABULA_DB; `tabula run` makes one)",
            db.display()
        );
    }
    if !(1..=MAX_THREADS).contains(&args.threads) {
        bail!("--threads {}: allowed: 1 to {MAX_THREADS}", args.threads);
    }
    let settings = Settings {
        db: db.clone(),
        bind: args.bind,
        port: args.port,
        threads: args.threads,
    };
    let server = Server::bind(&settings)?;
    let addr = server.addr();
    if !args.bind.is_loopback() {
        eprintln!(
            "warning: --bind {}: the dashboard is reachable from other machines, and anyone who \
             can reach {addr} can read the whole store (it has no login); use 127.0.0.1 unless \
             you mean it",
            args.bind
        );
    }
    let host = if args.bind.is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        match addr {
            std::net::SocketAddr::V4(a) => a.ip().to_string(),
            std::net::SocketAddr::V6(a) => format!("[{}]", a.ip()),
        }
    };
    let url = format!("http://{host}:{}/", addr.port());
    let report = Serving {
        url: url.clone(),
        address: addr.to_string(),
        port: addr.port(),
        db: db.display().to_string(),
        check: args.check,
    };
    emit(&report, args.json)?;
    // A stdout that cannot be written (a full disk) is an error now, not after serving.
    finish(Ok(()))?;
    if args.check {
        return Ok(());
    }
    if args.open {
        open_browser(&url);
    }
    server.run();
    Ok(())
}

/// Opens `url` in the desktop's browser; a failure is a warning (the URL is printed anyway).
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => {}
        Err(e) => eprintln!("warning: --open: could not run {opener} ({e}); open {url} yourself"),
    }
}

/// `serve`: where the store is served (with `--check`: that it opens and the address binds).
#[derive(Serialize)]
struct Serving {
    url: String,
    address: String,
    port: u16,
    db: String,
    check: bool,
}

impl Report for Serving {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.check {
            writeln!(
                f,
                "{}: {} opens read-only and {} binds",
                self.url, self.db, self.address
            )
        } else {
            writeln!(
                f,
                "serving {} read-only at {} (Ctrl-C stops)",
                self.db, self.url
            )
        }
    }
}
