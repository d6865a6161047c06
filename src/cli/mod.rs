//! Command implementations. Each resolves its arguments into a validated config, then works.
//!
//! Every clap struct is in [`args`]; what several commands share is in `common` (threads, a
//! run on the terminal, a game board by board), `rows` (query results), `progress` (bars) and
//! `output` (stdout and output files, guarded). A `*_cmd` module imports those, never another
//! `*_cmd`.

pub(crate) mod args;
mod common;
mod encode_cmd;
mod export_cmd;
mod games_cmd;
mod gtp_cmd;
mod lifecycle_cmd;
mod match_cmd;
mod merge_cmd;
mod note_cmd;
mod output;
mod play_cmd;
mod plot_cmd;
mod progress;
mod rate_cmd;
mod replay_cmd;
mod report_cmd;
mod rows;
mod run_cmd;
mod serve_cmd;
mod solve_cmd;
mod space_cmd;
mod store_cmd;
mod sweep_cmd;
mod worker_cmd;
mod workers;

use args::{Cli, Command};

/// Runs the command; a failed write to stdout on the way is its error (`output::finish`).
pub(crate) fn run(cli: Cli) -> anyhow::Result<()> {
    output::finish(command(cli))
}

fn command(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Games(a) => games_cmd::run(&a),
        Command::Play(a) => play_cmd::run(cli.db.as_deref(), &a),
        Command::Solve(a) => solve_cmd::solve_cmd(cli.db.as_deref(), &a),
        Command::Value(a) => solve_cmd::value_cmd(cli.db.as_deref(), &a),
        Command::Encode(a) => encode_cmd::encode(&a),
        Command::Sql(a) => store_cmd::sql(cli.db.as_deref(), &a),
        Command::Fsck(a) => store_cmd::fsck(cli.db.as_deref(), &a),
        Command::Migrate(a) => store_cmd::migrate(cli.db.as_deref(), &a),
        Command::Du(a) => space_cmd::du(cli.db.as_deref(), &a),
        Command::Rm(a) => space_cmd::rm(cli.db.as_deref(), &a),
        Command::Gc(a) => space_cmd::gc(cli.db.as_deref(), &a),
        Command::Keep(a) => space_cmd::keep(cli.db.as_deref(), &a),
        Command::Match(a) => match_cmd::run(cli.db.as_deref(), &a),
        Command::Rate(a) => rate_cmd::run(cli.db.as_deref(), &a),
        Command::Gtp(a) => gtp_cmd::run(cli.db.as_deref(), &a),
        Command::Replay(a) => replay_cmd::run(cli.db.as_deref(), &a),
        Command::Run(a) => run_cmd::run(cli.db.as_deref(), &a),
        Command::Worker(a) => worker_cmd::worker(&a),
        Command::Ls(a) => run_cmd::ls(cli.db.as_deref(), &a),
        Command::Show(a) => run_cmd::show(cli.db.as_deref(), &a),
        Command::Resume(a) => lifecycle_cmd::resume(cli.db.as_deref(), &a),
        Command::Branch(a) => lifecycle_cmd::branch(cli.db.as_deref(), &a),
        Command::Verify(a) => lifecycle_cmd::verify(cli.db.as_deref(), &a),
        Command::Checkout(a) => lifecycle_cmd::checkout(cli.db.as_deref(), &a),
        Command::Sweep(a) => sweep_cmd::sweep(cli.db.as_deref(), &a),
        Command::Merge(a) => merge_cmd::merge(&a),
        Command::Plot(a) => plot_cmd::plot(cli.db.as_deref(), &a),
        Command::Report(a) => report_cmd::report(cli.db.as_deref(), &a),
        Command::Note(a) => note_cmd::note(cli.db.as_deref(), &a),
        Command::Export(a) => export_cmd::export(cli.db.as_deref(), &a),
        Command::Serve(a) => serve_cmd::serve(cli.db.as_deref(), &a),
    }
}
