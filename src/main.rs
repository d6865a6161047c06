//! The `tabula` command line. Clap structs in [`cli::args`] are parsed, then resolved into
//! validated configs before any work starts; library errors are typed, this binary reports
//! them through `anyhow` and exits non-zero.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    restore_sigpipe();
    let args = cli::args::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Rust ignores SIGPIPE, so `tabula ... | head` would panic on a closed pipe; a command-line
/// tool should simply stop, as other Unix tools do.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
