//! The `tabula` command line. Clap structs in [`cli::args`] are parsed, then resolved into
//! validated configs before any work starts; library errors are typed, this binary reports
//! them through `anyhow` and exits non-zero.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::args::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
