//! The `tabula` command line. Clap structs in [`cli::args`] are parsed, then resolved into
//! validated configs before any work starts; library errors are typed, this binary reports
//! them through `anyhow` and exits non-zero. Nothing prints to stdout but `cli::output`
//! (a failed write is an error, not a panic).
#![deny(clippy::print_stdout)]

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
            eprintln!("error: {}", message(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes, joined by `: ` as `{:#}` joins them, leaving out a cause whose
/// text the message already holds (SQLite's `Error code N: ` prefix aside): a typed error that
/// shows its source (`store PATH: database or disk is full`) would otherwise repeat it once
/// per level of the chain.
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        let bare = match text.strip_prefix("Error code ") {
            Some(rest) => rest.split_once(": ").map_or(text.as_str(), |(_, t)| t),
            None => text.as_str(),
        };
        if out.is_empty() {
            out = text;
        } else if !out.contains(bare) {
            out = format!("{out}: {text}");
        }
    }
    out
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

/// The system allocator, with large blocks advised to the kernel as candidates for
/// transparent huge pages (`madvise(MADV_HUGEPAGE)`; effective where THP is set to `madvise`
/// or `always`, a no-op where it is `never`). A PPPP checkout decodes and rebuilds a 33 MB
/// table through a few such blocks; touching them page by page cost about 60,000 page
/// faults, a third of a checkout's CPU. Advised, the kernel backs them with 2 MiB pages
/// (docs/store.md, "Reading a derived snapshot"). Only speed changes, never a byte.
struct Allocator;

/// Blocks from this size on are advised.
const HUGE_FROM: usize = 2 << 20;

#[global_allocator]
static GLOBAL: Allocator = Allocator;

/// `p`, a block of `size` bytes the allocator just handed out, with the whole 2 MiB pages
/// inside it advised when it is [`HUGE_FROM`] or larger.
fn advised(p: *mut u8, size: usize) -> *mut u8 {
    if size < HUGE_FROM || p.is_null() {
        return p;
    }
    #[cfg(target_os = "linux")]
    {
        // 2 MiB: an x86-64 or AArch64 (4 KiB granule) huge page.
        const HUGE: usize = 2 << 20;
        let start = (p as usize).next_multiple_of(HUGE);
        let end = (p as usize + size) / HUGE * HUGE;
        if start < end {
            // SAFETY: the range lies inside a block this process owns; the advice changes
            // how the kernel backs its pages, never their contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    p
}

// SAFETY: every call is the system allocator's own; the advice only follows an allocation.
unsafe impl std::alloc::GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        advised(unsafe { std::alloc::System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        advised(
            unsafe { std::alloc::System.alloc_zeroed(layout) },
            layout.size(),
        )
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        advised(
            unsafe { std::alloc::System.realloc(ptr, layout, new_size) },
            new_size,
        )
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
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
