//! The checks on a store path before SQLite sees it, and the files beside a store (module
//! docs of `store`, "Opening"; docs/store.md "Opening a store").

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{Result, StoreError};

/// What identifies a file's content cheaply: device, inode, size, modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileStamp {
    pub(super) fn of(path: &Path) -> std::io::Result<FileStamp> {
        let m = std::fs::metadata(path)?;
        #[cfg(unix)]
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        };
        #[cfg(not(unix))]
        let (dev, ino) = (0, 0);
        Ok(FileStamp {
            dev,
            ino,
            len: m.len(),
            modified: m.modified().ok(),
        })
    }
}

/// The file beside the store with `suffix` appended to its name (`-wal`, `-shm`).
pub(super) fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// What a path that is not a regular file is, in words; None for a regular file (symbolic
/// links are followed). Only `stat` is used: opening a FIFO would block.
fn not_a_file(m: &std::fs::Metadata) -> Option<&'static str> {
    let t = m.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_char_device() || t.is_block_device() {
            return Some("a device");
        }
    }
    Some("not a regular file")
}

/// The 16 bytes every SQLite database file starts with.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Checks a store path before SQLite opens it: an existing path must be a regular file that
/// is empty or starts with SQLite's header; a missing one is refused for reading, and for
/// writing needs an existing directory. Returns the file's length (None: it does not exist).
pub(super) fn check_path(path: &Path, writing: bool) -> Result<Option<u64>> {
    let shown = || path.display().to_string();
    let m = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !writing {
                return Err(StoreError::Missing(shown()));
            }
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            return match std::fs::metadata(dir) {
                Ok(d) if d.is_dir() => Ok(None),
                _ => Err(StoreError::NoDirectory {
                    path: shown(),
                    dir: dir.display().to_string(),
                }),
            };
        }
        Err(e) => {
            return Err(StoreError::NotAStore {
                path: shown(),
                reason: format!("it cannot be examined ({e})"),
            });
        }
    };
    if let Some(what) = not_a_file(&m) {
        return Err(StoreError::NotAFile {
            path: shown(),
            what,
        });
    }
    if m.len() == 0 {
        return Ok(Some(0));
    }
    let mut head = [0u8; 16];
    let read = std::fs::File::open(path).and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut head)
    });
    match read {
        Ok(()) if &head == SQLITE_HEADER => Ok(Some(m.len())),
        Ok(()) => Err(StoreError::NotAStore {
            path: shown(),
            reason: "it is not a SQLite database (its first bytes are not SQLite's header)".into(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(StoreError::NotAStore {
            path: shown(),
            reason: format!("it is not a SQLite database (only {} bytes long)", m.len()),
        }),
        Err(e) => Err(StoreError::NotAStore {
            path: shown(),
            reason: format!("it cannot be read ({e})"),
        }),
    }
}

/// A `file:` URI for `path` with `query` appended, every byte outside the unreserved set
/// percent-encoded (so `?`, `#` and `%` in a file name mean themselves).
pub(super) fn file_uri(path: &Path, query: &str) -> String {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().into_owned().into_bytes();
    // An absolute path gets an empty authority (`file:///abs`), so `//x` is never a host.
    let mut uri = String::from(if bytes.first() == Some(&b'/') {
        "file://"
    } else {
        "file:"
    });
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
}
