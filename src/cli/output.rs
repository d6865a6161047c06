//! Everything a command writes outside the store goes through here: stdout ([`outln!`],
//! [`Stdout`]), a command's report ([`emit`]) and output files ([`OutputFile`]).
//!
//! - **reports**: a command builds its result as data, a [`Report`] (`Serialize` for
//!   `--json`, `Display` for the text), and prints it once with [`emit`]; no command
//!   formats its result twice in an `if json` branch. The JSON keys come out sorted at every
//!   level, as `serde_json::json!` objects always had them (serde_json's maps are sorted:
//!   the crate does not enable `preserve_order`), whatever the order of a report's fields.
//! - **stdout**: a write that fails (a full disk, `> /dev/full`) is remembered, never a
//!   panic; the command finishes its work (a run still commits its iterations and ends `done`),
//!   later writes are skipped, and [`finish`] turns the first failure into `error: writing the
//!   output: ...` and exit 1. `println!` is refused in the binary by clippy
//!   (`clippy::print_stdout` in `main.rs`), so a new command cannot bypass it.
//! - **output files** (`plot --out`, `report --out`, `checkout --export`): never the store
//!   being used nor its `-wal`, `-shm` or `-journal` (compared by device and inode, and by
//!   resolved name for a journal that does not exist yet, so another spelling, a symlink or a
//!   hard link is caught), and written to a temporary name beside the target, then renamed
//!   over it: a failure (a full disk) leaves no partial file and an older file stays whole.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, bail};

/// The first error writing stdout, if any, as text.
static FAILED: Mutex<Option<String>> = Mutex::new(None);

fn failed() -> bool {
    FAILED.lock().map(|f| f.is_some()).unwrap_or(true)
}

fn record(e: &std::io::Error) {
    if let Ok(mut f) = FAILED.lock()
        && f.is_none()
    {
        *f = Some(e.to_string());
    }
}

/// Writes `args` and a newline to stdout, whole under stdout's lock (lines of several
/// threads never interleave); a failure is remembered for [`finish`].
pub(crate) fn print_line(args: std::fmt::Arguments<'_>) {
    print(format_args!("{args}\n"));
}

/// Writes `args` to stdout (no newline); a failure is remembered for [`finish`].
pub(crate) fn print(args: std::fmt::Arguments<'_>) {
    if failed() {
        return;
    }
    let text = args.to_string();
    #[allow(clippy::disallowed_methods)]
    let r = std::io::stdout().lock().write_all(text.as_bytes());
    if let Err(e) = r {
        record(&e);
    }
}

/// `println!` through [`print_line`]: a failed write is an error at the end, not a panic.
macro_rules! outln {
    () => {
        $crate::cli::output::print_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::print_line(format_args!($($arg)*))
    };
}

/// `print!` through [`print`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::print(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln};

/// How `--json` lays a report out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JsonLayout {
    /// Indented over several lines (`show`, `sweep --dry-run`, a run's end).
    Pretty,
    /// On one line (`fsck`, `checkout`, `verify`: one line a script can read).
    Line,
}

/// A command's result as data: `--json` prints it serialized, else its `Display` text (whole
/// lines, each ended by a newline).
pub(crate) trait Report: serde::Serialize + std::fmt::Display {
    /// The layout of `--json`.
    const JSON: JsonLayout;
    /// Whether the JSON keys are sorted (the default; see the module's notes); `false` keeps
    /// the fields' order, for a library struct printed as it is (`sweep`'s outcome).
    const SORTED_KEYS: bool = true;
}

/// Prints `report` once: as JSON with `json`, else as its text.
pub(crate) fn emit<R: Report>(report: &R, json: bool) -> anyhow::Result<()> {
    if !json {
        print(format_args!("{report}"));
        return Ok(());
    }
    let text = match (R::SORTED_KEYS, R::JSON) {
        (true, JsonLayout::Pretty) => serde_json::to_string_pretty(&serde_json::to_value(report)?)?,
        (true, JsonLayout::Line) => serde_json::to_value(report)?.to_string(),
        (false, JsonLayout::Pretty) => serde_json::to_string_pretty(report)?,
        (false, JsonLayout::Line) => serde_json::to_string(report)?,
    };
    print_line(format_args!("{text}"));
    Ok(())
}

/// Stdout as a writer: its errors are returned and remembered for [`finish`]; once one
/// failed, every later write fails at once.
pub(crate) struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if failed() {
            return Err(std::io::Error::other("stdout failed earlier"));
        }
        #[allow(clippy::disallowed_methods)]
        let r = std::io::stdout().write(buf);
        r.inspect_err(record)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if failed() {
            return Err(std::io::Error::other("stdout failed earlier"));
        }
        #[allow(clippy::disallowed_methods)]
        let r = std::io::stdout().flush();
        r.inspect_err(record)
    }
}

/// After a command: flushes stdout, and makes a write that failed on the way the command's
/// error (`writing the output: ...`), whatever the command returned.
pub(crate) fn finish(result: anyhow::Result<()>) -> anyhow::Result<()> {
    let _ = Stdout.flush();
    let Some(e) = FAILED.lock().ok().and_then(|f| f.clone()) else {
        return result;
    };
    match result {
        // An error of the command's own (not the failed write again) is said too.
        Err(other) if !format!("{other:#}").contains(&e) => {
            bail!("writing the output: {e}; then: {other:#}")
        }
        _ => bail!("writing the output: {e}"),
    }
}

/// Where an output file goes: the flag that named it, for messages, and the path.
pub(crate) struct OutputFile<'a> {
    pub(crate) flag: &'static str,
    pub(crate) path: &'a Path,
}

/// The store's own files (by resolved name): the database and its journals.
fn store_files(db: &Path) -> Vec<PathBuf> {
    let store = resolve(db);
    let mut files = vec![store.clone()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut s = store.clone().into_os_string();
        s.push(suffix);
        files.push(PathBuf::from(s));
    }
    files
}

/// `path` with every link followed (also one whose target does not exist yet) and its
/// directory resolved: the file a write to `path` would create or replace.
fn resolve(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(t) if t.is_absolute() => p = t,
            Ok(t) => p = p.parent().unwrap_or(Path::new(".")).join(t),
            Err(_) => break,
        }
    }
    std::fs::canonicalize(&p).unwrap_or_else(|_| resolve_name(&p))
}

/// `path` with its directory resolved (links, `..`), for a file that may not exist yet.
fn resolve_name(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(d), Some(name)) => d.join(name),
        _ => path.to_path_buf(),
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    false
}

impl OutputFile<'_> {
    /// Refuses the store (`db`) and its journals; with `dir`, the path is a directory to
    /// write into (it must be one, or not exist yet), else a file (never a directory).
    pub(crate) fn check(&self, db: &Path, dir: bool) -> anyhow::Result<()> {
        let shown = self.path.display();
        let files = store_files(db);
        let resolved = resolve(self.path);
        let target = std::fs::metadata(self.path).ok();
        let is_store = files.iter().any(|f| {
            *f == resolved
                || match (&target, std::fs::metadata(f)) {
                    (Some(t), Ok(s)) => same_file(t, &s),
                    _ => false,
                }
        });
        if is_store {
            bail!(
                "{} {shown}: that is the store being read ({}) or one of its files; write to \
                 another path",
                self.flag,
                files[0].display()
            );
        }
        match &target {
            Some(m) if dir && !m.is_dir() => bail!(
                "{} {shown}: that is a file, not a directory; give a directory (it is created \
                 if missing)",
                self.flag
            ),
            Some(m) if !dir && m.is_dir() => bail!(
                "{} {shown}: that is a directory; give a file path",
                self.flag
            ),
            Some(m) if !dir && !m.is_file() => bail!(
                "{} {shown}: that is not a regular file (a device, a FIFO or a socket); give a \
                 file path",
                self.flag
            ),
            // A new file's folder must be there now: found missing only after the work (a
            // tournament played and stored), the work's output would be lost.
            None if !dir => {
                let folder = match self.path.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                match std::fs::metadata(folder) {
                    Ok(m) if m.is_dir() => Ok(()),
                    Ok(_) => bail!(
                        "{} {shown}: {} is not a directory; give a file path in an existing \
                         directory",
                        self.flag,
                        folder.display()
                    ),
                    Err(e) => bail!(
                        "{} {shown}: the directory {} cannot be used ({e}); create it first",
                        self.flag,
                        folder.display()
                    ),
                }
            }
            // A directory to be made: its nearest existing ancestor must be a directory.
            None => {
                let mut up = self.path.parent();
                while let Some(d) = up.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
                    up = d.parent();
                }
                match up.filter(|d| !d.as_os_str().is_empty()) {
                    Some(d) if !d.is_dir() => bail!(
                        "{} {shown}: {} is not a directory, so the directory cannot be made",
                        self.flag,
                        d.display()
                    ),
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// Writes the file through a temporary file beside it, renamed over it once complete
    /// (after [`OutputFile::check`] against the store `db`). A link is followed: the file it
    /// names is replaced.
    pub(crate) fn write(
        &self,
        db: &Path,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> anyhow::Result<()> {
        self.check(db, false)?;
        let shown = self.path.display();
        let path = resolve(self.path);
        let Some(name) = path.file_name() else {
            bail!("{} {shown}: not a file path", self.flag);
        };
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        let result = (|| -> anyhow::Result<()> {
            let f = std::fs::File::create(&tmp)
                .with_context(|| format!("{} {shown}: creating {}", self.flag, tmp.display()))?;
            let mut w = std::io::BufWriter::new(f);
            let failed = |e: std::io::Error| {
                anyhow::anyhow!("{} {shown}: writing {}: {e}", self.flag, tmp.display())
            };
            write(&mut w).map_err(failed)?;
            let f = w.into_inner().map_err(|e| failed(e.into_error()))?;
            f.sync_all().map_err(failed)?;
            std::fs::rename(&tmp, &path).with_context(|| {
                format!(
                    "{} {shown}: renaming {} to {}",
                    self.flag,
                    tmp.display(),
                    path.display()
                )
            })
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}
