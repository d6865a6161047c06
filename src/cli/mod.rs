//! Command implementations. Each resolves its arguments into a validated config, then works.

pub mod args;
mod games_cmd;
mod play_cmd;

use args::{Cli, Command};

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Games(a) => games_cmd::run(&a),
        Command::Play(a) => play_cmd::run(&a),
    }
}
