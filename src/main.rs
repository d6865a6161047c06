//! The `tabula` command line. Clap structs in [`cli::args`] are parsed, then resolved into
//! validated configs before any work starts; library errors are typed, this binary reports
//! them through `anyhow` and exits non-zero.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    restore_sigpipe();
    tune_allocator();
    let args = cli::args::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// glibc gives allocations of 128 KiB and more their own mappings and unmaps them when freed,
/// so each decoded table chunk, training buffer and checkpoint encoding costs fresh page
/// faults. Serving allocations up to 32 MiB from the heap, and keeping up to 512 MiB freed
/// there, made PPPP checkouts 10-15% faster (docs/store.md, "Reading a derived snapshot").
/// Only speed and resident memory change, never a result.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt before any thread starts or any large allocation is made.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
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
