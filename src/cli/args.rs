//! What the command line accepts (clap). Nothing here does work; `cli::run` resolves these
//! into validated configs first.

use clap::{Args, Parser, Subcommand};

/// tabula: AlphaZero-style self-play research on games small enough to be solved exactly.
///
/// Variants are named `family:params[,option=value...]`: `cdc:PPPP`, `cdc:4x8`, `ewn:3x3x3`,
/// `c4:7x6`, `checkers:7x7-6`. `tabula games` lists them all.
#[derive(Debug, Parser)]
#[command(name = "tabula", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every game family with its parameters, options and action-space size.
    Games(GamesArgs),
    /// Play one game between two players and print it move by move with boards.
    Play(PlayArgs),
}

#[derive(Debug, Args)]
pub struct GamesArgs {
    /// Print one JSON object (machine-readable) instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PlayArgs {
    /// The variant to play, e.g. cdc:PPPP, ewn:3x3x3, c4:7x6, checkers:5x5-3.
    pub variant: String,
    /// Seed of the game's ChaCha stream; the same seed replays the same game.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The two players, first mover first, comma-separated. Available: random.
    #[arg(long, default_value = "random,random")]
    pub players: String,
    /// Print only the final result line, not every board.
    #[arg(long)]
    pub quiet: bool,
    /// Print the game as one JSON object (actions, chance outcomes, result).
    #[arg(long)]
    pub json: bool,
}
