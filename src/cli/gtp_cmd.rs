//! `tabula gtp`: a player of Go as a GTP engine on stdin and stdout (docs/gtp.md).

use std::path::Path;

use anyhow::Context;
use tabula::gtp_engine::Engine;
use tabula::players::PlayerSpec;
use tabula::store::Store;

use super::args::GtpArgs;
use super::output::Stdout;

pub(crate) fn run(db: Option<&Path>, args: &GtpArgs) -> anyhow::Result<()> {
    let spec: PlayerSpec = args.player.parse().context("PLAYER")?;
    let mut store = match spec {
        PlayerSpec::Model { .. } => Some(Store::open(&Store::resolve_path(db))?),
        _ => None,
    };
    let mut engine = Engine::new(spec, &args.variant, args.seed, store.as_mut())?;
    let script: String = args.commands.iter().map(|c| format!("{c}\n")).collect();
    if engine.serve(script.as_bytes(), Stdout)? {
        return Ok(());
    }
    engine.serve(std::io::stdin().lock(), Stdout)?;
    Ok(())
}
