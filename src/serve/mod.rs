//! `tabula serve`: a live local dashboard over one store (design: `docs/dashboard.md`).
//!
//! - [`http`]: the server (tiny_http on a listener bound here, a few handler threads, a
//!   panic in a handler answered as a 500 and never fatal), requests and replies.
//! - [`routes`]: the URL table: pages, assets, and the JSON API; every 4xx is a JSON error.
//! - [`api`]: the JSON behind the pages, read through the store's SQL views.
//! - [`game_view`]: a stored game position by position, with exact values where the variant
//!   is solved in the store.
//! - [`positions`]: a run's model at one position across its stored checkpoints, against the
//!   position's exact values.
//!
//! The store is opened read-only ([`crate::store::Store::open_read_only`]): nothing a request
//! does can write it. Each handler thread keeps its connection while it reads the latest
//! commits ([`crate::store::Store::still_current`]) and opens it again when not (a writer
//! started beside an immutable open, or ended), so pages see a run or sweep that writes the
//! store meanwhile.

mod api;
#[cfg(test)]
mod fuzz;
mod game_view;
mod http;
mod positions;
mod routes;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

pub use http::Server;

use crate::store::StoreError;

/// What `tabula serve` serves, and where.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The store (must exist; opened read-only per request).
    pub db: PathBuf,
    /// The address to listen on (loopback unless the user says otherwise).
    pub bind: IpAddr,
    /// The port (0: any free one; [`Server::addr`] says which).
    pub port: u16,
    /// Handler threads (requests answered at once).
    pub threads: usize,
}

impl Settings {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.bind, self.port)
    }
}

/// Errors of `tabula serve` before it serves (a request's errors are answers, not these).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "--port {port}: {addr} is already in use (another `tabula serve` or another server); \
         give another port, or --port 0 for any free one"
    )]
    PortInUse { addr: SocketAddr, port: u16 },
    #[error("--bind {addr}: cannot listen there: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the HTTP server could not start on {addr}: {reason}")]
    Start { addr: SocketAddr, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}
