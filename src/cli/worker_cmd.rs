//! `tabula worker DIR`: a self-play worker of a run spread over processes
//! (docs/distributed.md).

use tabula::runs::Exchange;

use super::args::WorkerArgs;
use super::workers::{lease, serve};

pub(crate) fn worker(args: &WorkerArgs) -> anyhow::Result<()> {
    let x = Exchange::open(&args.exchange, lease(args.lease)?, 0)?;
    serve(&x, args.threads, args.idle_exit, args.quiet, args.json)
}
