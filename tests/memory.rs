//! Peak memory of the `tabula` binary, measured by the kernel (wait4's `ru_maxrss`). A test
//! binary of its own (Cargo.toml), not a module of `tests/it.rs`: a child's figure is at least
//! the spawning process's own resident size, and in the one binary of all integration tests
//! that is whatever the tests running beside it hold (a stored solution: hundreds of MiB).
//! Here the spawning process is this small one.

use tabula::store::Store;

/// Peak resident memory (KiB) of `tabula args` run with stdout to `out`, from the kernel's
/// account of the child (wait4), and its exit status.
fn peak_rss_kib(args: &[&str], out: &std::path::Path) -> (i64, i32) {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_tabula"))
        .args(args)
        .stdout(std::fs::File::create(out).unwrap())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: plain libc calls on owned, zeroed out-parameters; the child is ours and
    // nothing else waits for it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut usage), pid);
        usage
    };
    // Reaped above by wait4: dropping the handle only closes its (absent) pipes.
    drop(child);
    (usage.ru_maxrss, libc::WEXITSTATUS(status))
}

/// The first and last 200 bytes of a file, its line count and how many JSON rows (`{"x":`)
/// it holds, read in 64 KiB blocks.
fn scan(path: &std::path::Path) -> (String, String, usize, usize) {
    use std::io::{Read, Seek, SeekFrom};
    const ROW: &[u8] = b"{\"x\":";
    let mut f = std::fs::File::open(path).unwrap();
    let (mut lines, mut rows) = (0, 0);
    // The block with the last bytes of the one before, so a row key split between two
    // blocks is still seen (once).
    let mut block = vec![0u8; ROW.len() - 1 + (1 << 16)];
    let mut carry = 0;
    loop {
        let n = f.read(&mut block[carry..]).unwrap();
        if n == 0 {
            break;
        }
        let seen = &block[..carry + n];
        lines += seen[carry..].iter().filter(|&&b| b == b'\n').count();
        rows += seen.windows(ROW.len()).filter(|w| *w == ROW).count();
        let keep = (ROW.len() - 1).min(seen.len());
        let start = seen.len() - keep;
        block.copy_within(start..start + keep, 0);
        carry = keep;
    }
    let len = f.seek(SeekFrom::End(0)).unwrap();
    let mut head = String::new();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.by_ref().take(200).read_to_string(&mut head).unwrap();
    let mut tail = String::new();
    f.seek(SeekFrom::Start(len.saturating_sub(200))).unwrap();
    f.read_to_string(&mut tail).unwrap();
    (head, tail, lines, rows)
}

/// `tabula sql` streams: a million-row result costs a few MiB whatever the format (before
/// streaming: 190 MiB as CSV, 380 MiB as a table, 970 MiB as JSON), and every row arrives.
#[test]
fn sql_streams_a_million_rows_in_flat_memory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    drop(Store::open(&db).unwrap());
    let db = db.to_str().unwrap();
    let q = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000)
             SELECT x, x * 2 AS y, 'row ' || x AS label FROM c";
    let out = dir.path().join("out");
    for format in ["table", "--csv", "--json"] {
        let mut args = vec!["--db", db, "sql", q];
        if format != "table" {
            args.push(format);
        }
        let (kib, code) = peak_rss_kib(&args, &out);
        assert_eq!(code, 0, "{format}");
        // Read back in pieces: this process must stay small, since the peak the kernel
        // reports for a child is at least the peak of the process that spawned it (its
        // memory is accounted when the child calls exec). So the figure is an upper bound.
        let (head, tail, lines, rows) = scan(&out);
        let rows = match format {
            "--json" => {
                assert!(head.starts_with("[{\"x\":1,\"y\":2,\"label\":\"row 1\"},"));
                assert!(
                    tail.ends_with("{\"x\":1000000,\"y\":2000000,\"label\":\"row 1000000\"}]\n")
                );
                assert_eq!(lines, 1);
                rows
            }
            "--csv" => {
                assert!(head.starts_with("x,y,label\n1,2,row 1\n"));
                assert!(tail.ends_with("\n1000000,2000000,row 1000000\n"));
                lines - 1
            }
            _ => {
                // The widths of the first 1000 rows, kept: a wider number overflows its column.
                assert!(
                    head.starts_with(
                        "x     y     label\n----  ----  --------\n   1     2  row 1\n"
                    )
                );
                assert!(tail.ends_with("\n1000000  2000000  row 1000000\n(1000000 rows)\n"));
                lines - 3
            }
        };
        assert_eq!(rows, 1_000_000, "{format}");
        println!("{format}: peak RSS {kib} KiB");
        assert!(kib < 64 * 1024, "{format}: peak RSS {kib} KiB");
    }
}
