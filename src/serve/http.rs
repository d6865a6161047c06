//! The HTTP side: a tiny_http server on a listener bound here (so a port in use is a clear
//! error), a few handler threads taking requests from it, and the request and reply types the
//! routes see. A handler that panics is answered with a 500 and its thread goes on.

use std::net::{SocketAddr, TcpListener};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{ServeError, Settings, routes};
use crate::store::Store;

/// The longest request target (path and query) answered; longer ones get a 414.
const MAX_URL: usize = 8192;

/// How often the server connects to itself (see [`nudge`]).
const NUDGE_EVERY: Duration = Duration::from_millis(200);

/// A bound dashboard server, not yet serving.
pub struct Server {
    http: Arc<tiny_http::Server>,
    addr: SocketAddr,
    db: PathBuf,
    threads: usize,
}

/// Whether a request's `Host` header names this machine's loopback (`localhost`, `127.0.0.1`,
/// `[::1]`, with any port). A server on a loopback address answers only those: a web page
/// elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) cannot read the store through
/// the visitor's browser.
fn loopback_host(request: &tiny_http::Request) -> bool {
    let Some(h) = request.headers().iter().find(|h| h.field.equiv("Host")) else {
        return false;
    };
    let host = h.value.as_str();
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl Server {
    /// Checks that the store opens read-only, then binds the address.
    pub fn bind(settings: &Settings) -> Result<Server, ServeError> {
        // A bad --db (missing, not a store, needing a migration) is refused before serving.
        drop(Store::open_read_only(&settings.db)?);
        let addr = settings.addr();
        let listener = TcpListener::bind(addr).map_err(|e| match e.kind() {
            std::io::ErrorKind::AddrInUse => ServeError::PortInUse {
                addr,
                port: settings.port,
            },
            _ => ServeError::Bind { addr, source: e },
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| ServeError::Bind { addr, source: e })?;
        let http =
            tiny_http::Server::from_listener(listener, None).map_err(|e| ServeError::Start {
                addr,
                reason: e.to_string(),
            })?;
        Ok(Server {
            http: Arc::new(http),
            addr,
            db: settings.db.clone(),
            threads: settings.threads.max(1),
        })
    }

    /// The address it listens on (the port chosen when `--port 0`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until the process ends.
    pub fn run(self) {
        let addr = self.addr;
        std::thread::spawn(move || nudge(addr));
        let mut handles = Vec::new();
        for _ in 0..self.threads {
            let http = Arc::clone(&self.http);
            let db = self.db.clone();
            let loopback = self.addr.ip().is_loopback();
            handles.push(std::thread::spawn(move || serve_loop(&http, &db, loopback)));
        }
        for h in handles {
            let _ = h.join();
        }
    }
}

/// Connects to the server and hangs up at once, every [`NUDGE_EVERY`], forever: the way
/// round a lost wake-up in tiny_http 0.12's connection pool.
///
/// tiny_http reads each connection on a thread of a pool, for as long as the connection
/// lives (a browser keeps its connections open between requests). When connections arrive
/// faster than idle pool threads get the CPU, a new connection's task is queued for a thread
/// that was already woken for another one, and no thread is woken for it (the pool counts
/// idle threads only when they run again): it then waits until some thread's connection
/// closes. A browser opening a page opens up to six connections at once; on a loaded machine
/// the last one's request (a script the page needs) sat unread for minutes, and the page
/// never finished loading (seen as chromedriver's "Timed out receiving message from
/// renderer", in 2 of 3 runs at load 2; the request's bytes waiting in the socket, four
/// threads reading the other connections). A connection that closes at once ends its task
/// at once, and the thread that ran it takes the next queued task: a waiting connection is
/// served within [`NUDGE_EVERY`].
fn nudge(addr: SocketAddr) {
    let to = match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, addr.port()))
        }
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port()))
        }
        _ => addr,
    };
    loop {
        std::thread::sleep(NUDGE_EVERY);
        drop(std::net::TcpStream::connect_timeout(
            &to,
            Duration::from_secs(1),
        ));
    }
}

fn serve_loop(http: &tiny_http::Server, db: &Path, loopback: bool) {
    loop {
        let Ok(request) = http.recv() else {
            continue;
        };
        let reply = if loopback && !loopback_host(&request) {
            Reply::error(
                403,
                "this server answers only requests for localhost, 127.0.0.1 or [::1] (the Host \
                 header names another machine)",
            )
        } else {
            answer(&request, db)
        };
        let head = *request.method() == tiny_http::Method::Head;
        let mut response =
            tiny_http::Response::from_data(if head { Vec::new() } else { reply.body })
                .with_status_code(reply.status);
        for (name, value) in [
            ("Content-Type", reply.content_type),
            ("Cache-Control", reply.cache.header()),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
        ] {
            if let Ok(h) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
                response.add_header(h);
            }
        }
        // A client that went away is no error of the server's.
        let _ = request.respond(response);
    }
}

/// The reply to one request; a panic inside the routes is a 500.
fn answer(request: &tiny_http::Request, db: &Path) -> Reply {
    let method = request.method();
    if *method != tiny_http::Method::Get && *method != tiny_http::Method::Head {
        return Reply::error(
            405,
            format!("method {method} not allowed: only GET and HEAD"),
        );
    }
    let url = request.url();
    if url.len() > MAX_URL {
        return Reply::error(
            414,
            format!(
                "the request target is {} bytes long; at most {MAX_URL}",
                url.len()
            ),
        );
    }
    let req = match Request::parse(url) {
        Ok(r) => r,
        Err(e) => return Reply::error(400, e),
    };
    match catch_unwind(AssertUnwindSafe(|| routes::route(&req, db))) {
        Ok(reply) => reply,
        Err(panic) => {
            routes::reset();
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Reply::error(
                500,
                format!("internal error answering {}: {what}", req.path_text),
            )
        }
    }
}

/// A request's path segments and query parameters, percent-decoded.
#[derive(Debug)]
pub(crate) struct Request {
    /// The path as sent (for messages).
    pub(crate) path_text: String,
    /// The decoded segments (`/runs/7` is `["runs", "7"]`; `/` is `[]`).
    pub(crate) segments: Vec<String>,
    /// The query's `key=value` pairs in order.
    pub query: Vec<(String, String)>,
}

impl Request {
    pub(crate) fn parse(url: &str) -> Result<Request, String> {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        if !path.starts_with('/') {
            return Err(format!("the path `{path}` does not start with /"));
        }
        let mut segments = Vec::new();
        for raw in path.split('/').skip(1) {
            if raw.is_empty() {
                continue;
            }
            let s = decode(raw).ok_or_else(|| {
                format!("the path segment `{raw}` is not valid percent-encoded UTF-8")
            })?;
            if s == "." || s == ".." {
                return Err(format!("the path `{path}` has a `{s}` segment"));
            }
            segments.push(s);
        }
        let mut pairs = Vec::new();
        for part in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let key = decode(k)
                .ok_or_else(|| format!("the query key `{k}` is not valid percent-encoded UTF-8"))?;
            let value = decode(v).ok_or_else(|| {
                format!("the value of `{key}` is not valid percent-encoded UTF-8")
            })?;
            pairs.push((key, value));
        }
        Ok(Request {
            path_text: path.to_string(),
            segments,
            query: pairs,
        })
    }

    /// The value of query parameter `key` (the last one if repeated).
    pub(crate) fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Refuses query parameters other than `allowed`, naming them.
    pub(crate) fn only(&self, allowed: &[&str]) -> Result<(), Reply> {
        for (k, _) in &self.query {
            if !allowed.contains(&k.as_str()) {
                return Err(Reply::error(
                    400,
                    format!(
                        "unknown query parameter `{k}`; allowed here: {}",
                        if allowed.is_empty() {
                            "none".to_string()
                        } else {
                            allowed.join(", ")
                        }
                    ),
                ));
            }
        }
        Ok(())
    }

    /// An integer parameter in `lo..=hi`, `default` when absent; out of range or not a
    /// number is a 400 naming it.
    pub(crate) fn int(&self, key: &str, default: u64, lo: u64, hi: u64) -> Result<u64, Reply> {
        let Some(text) = self.param(key) else {
            return Ok(default);
        };
        match text.parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(Reply::error(
                400,
                format!("{key}={text}: allowed: an integer from {lo} to {hi}"),
            )),
        }
    }
}

/// Percent-decoding (`+` stays `+`); `None` for a bad escape or bytes that are not UTF-8.
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// How long a client may keep a reply.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cache {
    /// Live data: never.
    No,
    /// The binary's own files: a day (they change only with the binary).
    Day,
}

impl Cache {
    fn header(self) -> &'static str {
        match self {
            Cache::No => "no-store",
            Cache::Day => "max-age=86400",
        }
    }
}

/// One reply: status, type and bytes.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub(crate) content_type: &'static str,
    pub body: Vec<u8>,
    pub cache: Cache,
}

impl Reply {
    pub(crate) fn json(value: &serde_json::Value) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body: serde_json::to_vec(value).unwrap_or_default(),
            cache: Cache::No,
        }
    }

    /// An error as JSON: `{"error": {"status": 404, "message": "..."}}`.
    pub(crate) fn error(status: u16, message: impl Into<String>) -> Reply {
        let v = serde_json::json!({"error": {"status": status, "message": message.into()}});
        Reply {
            status,
            ..Reply::json(&v)
        }
    }

    pub(crate) fn bytes(content_type: &'static str, body: Vec<u8>, cache: Cache) -> Reply {
        Reply {
            status: 200,
            content_type,
            body,
            cache,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_split_and_decoded() {
        let r = Request::parse("/runs/a%2Fb/metrics?x=1&y=%C3%A9&z").unwrap();
        assert_eq!(r.segments, ["runs", "a/b", "metrics"]);
        assert_eq!(r.param("y"), Some("é"));
        assert_eq!(r.param("z"), Some(""));
        assert!(Request::parse("/runs/%zz").is_err());
        assert!(Request::parse("/runs/%ff").is_err());
        assert!(Request::parse("/a/../b").is_err());
        assert!(Request::parse("/a/%2e%2e/b").is_err());
        assert!(Request::parse("/").unwrap().segments.is_empty());
        let r = Request::parse("/?page=99999999999999999999").unwrap();
        assert_eq!(r.int("page", 1, 1, 1000).unwrap_err().status, 400);
        assert_eq!(r.int("other", 7, 1, 1000).unwrap(), 7);
    }
}
