//! `tabula sql` and `tabula fsck`.

use std::path::Path;

use std::io::Write;
use std::time::Duration;

use anyhow::bail;
use tabula::store::{Cell, QueryLimits, QueryResult, RowSink, Store, Value};

use super::args::{FsckArgs, SqlArgs};

pub fn sql(db: Option<&Path>, args: &SqlArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&Store::resolve_path(db))?;
    let limit = |x: f64| Duration::try_from_secs_f64(x).ok().filter(|d| !d.is_zero());
    let limits = QueryLimits {
        max_rows: Some(args.max_rows).filter(|&n| n > 0),
        timeout: limit(args.timeout),
    };
    let out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut sink: Box<dyn Sink> = if args.json {
        Box::new(JsonSink::new(out))
    } else if args.csv {
        Box::new(CsvSink::new(out))
    } else {
        Box::new(TableSink::new(out, TABLE_ALIGN_ROWS))
    };
    match store.query_stream(&args.query, &limits, sink.as_row_sink()) {
        Ok(rows) => sink.finish(Some(rows))?,
        Err(e) => {
            // Rows before a limit were the query's: print them (an aligned table's are still
            // buffered), then the error. The output is left unterminated (no row count, no
            // closing `]`) so that it cannot pass for a whole result.
            let _ = sink.finish(None);
            return Err(e.into());
        }
    }
    Ok(())
}

pub fn fsck(db: Option<&Path>, args: &FsckArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    let store = Store::open_read_only(&path)?;
    // The schema first: the checks below read its tables, and a store whose schema is not
    // the migrations' cannot be trusted by any command.
    let schema = store.check_schema()?;
    if !schema.is_empty() {
        if args.json {
            let out = serde_json::json!({
                "store": path.display().to_string(),
                "schema_problems": schema.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
                "clean": false,
            });
            println!("{out}");
        } else {
            for p in &schema {
                println!("SCHEMA {p}");
            }
        }
        bail!(
            "{}: the schema is not the one its migrations create ({} problem(s): the first, {}); \
             objects and references were not checked",
            path.display(),
            schema.len(),
            schema[0]
        );
    }
    let bar = super::progress::bar(0, "checking objects");
    let report = store.fsck(|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    // Runs: every reference resolvable, and where each damaged object sits.
    let refs = tabula::runs::check_references(&store)?;
    store.check_unchanged()?;
    let clean = report.is_clean() && refs.dangling.is_empty();
    if args.json {
        let damaged: Vec<_> = report
            .damaged
            .iter()
            .map(|(h, why)| {
                serde_json::json!({
                    "hash": h.to_hex(), "reason": why, "referenced_by": refs.referrers(h),
                })
            })
            .collect();
        let out = serde_json::json!({
            "store": path.display().to_string(),
            "objects": report.objects,
            "bytes": report.bytes,
            "damaged": damaged,
            "references": refs.all.len(),
            "dangling": refs.dangling,
            "schema_problems": [],
            "clean": clean,
        });
        println!("{out}");
    } else {
        println!(
            "{}: {} objects, {} bytes checked",
            path.display(),
            report.objects,
            report.bytes
        );
        for (h, why) in &report.damaged {
            let at = refs.referrers(h);
            if at.is_empty() {
                println!("DAMAGED {h}: {why}");
            } else {
                println!("DAMAGED {h}: {why} (referenced by {})", at.join("; "));
            }
        }
        for d in &refs.dangling {
            println!("DANGLING {}: {} {}", d.at, d.hash, d.problem);
        }
        println!("ok: the schema is the one its migrations create");
        if report.is_clean() {
            println!("ok: every object hashes to its address");
        }
        if refs.dangling.is_empty() {
            println!(
                "ok: every run reference resolves ({} references checked)",
                refs.all.len()
            );
        }
    }
    if !clean {
        bail!(
            "{} damaged object(s), {} dangling reference(s)",
            report.damaged.len(),
            refs.dangling.len()
        );
    }
    Ok(())
}

/// How many rows an aligned table measures before printing: a result up to this long is
/// aligned exactly; a longer one keeps these widths and streams the rest (a wider cell
/// pushes its line to the right rather than being cut). docs/store.md, "The SQL console".
pub const TABLE_ALIGN_ROWS: usize = 1000;

/// A streaming output format: a [`RowSink`] that can be finished.
trait Sink: RowSink {
    fn as_row_sink(&mut self) -> &mut dyn RowSink;
    /// Writes what is buffered and the closing lines (`rows`: the count; None when the query
    /// failed part way, so no closing lines) and flushes.
    fn finish(&mut self, rows: Option<u64>) -> std::io::Result<()>;
}

/// A cell as text, as a table or CSV shows it (blobs as lowercase hex).
fn cell_text(c: Cell<'_>, out: &mut String) {
    use std::fmt::Write;
    match c {
        Cell::Null => {}
        Cell::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        Cell::Real(r) => {
            let _ = write!(out, "{r}");
        }
        Cell::Text(t) => out.push_str(t),
        Cell::Blob(b) => {
            for x in b {
                let _ = write!(out, "{x:02x}");
            }
        }
    }
}

struct CsvSink<W: Write> {
    out: W,
    field: String,
}

impl<W: Write> CsvSink<W> {
    fn new(out: W) -> Self {
        CsvSink {
            out,
            field: String::new(),
        }
    }

    fn write_field(&mut self, index: usize, s: &str) -> std::io::Result<()> {
        if index > 0 {
            self.out.write_all(b",")?;
        }
        if s.contains([',', '"', '\n', '\r']) {
            write!(self.out, "\"{}\"", s.replace('"', "\"\""))
        } else {
            self.out.write_all(s.as_bytes())
        }
    }
}

impl<W: Write> RowSink for CsvSink<W> {
    fn columns(&mut self, names: &[String]) -> std::io::Result<()> {
        for (i, n) in names.iter().enumerate() {
            self.write_field(i, n)?;
        }
        self.out.write_all(b"\n")
    }
    fn cell(&mut self, index: usize, cell: Cell<'_>) -> std::io::Result<()> {
        let mut f = std::mem::take(&mut self.field);
        f.clear();
        cell_text(cell, &mut f);
        let r = self.write_field(index, &f);
        self.field = f;
        r
    }
    fn end_row(&mut self) -> std::io::Result<()> {
        self.out.write_all(b"\n")
    }
}

impl<W: Write> Sink for CsvSink<W> {
    fn as_row_sink(&mut self) -> &mut dyn RowSink {
        self
    }
    fn finish(&mut self, _rows: Option<u64>) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// A JSON array of objects, one per row, keys in column order, written as rows arrive.
struct JsonSink<W: Write> {
    out: W,
    /// Each column name as a JSON string followed by `:`.
    keys: Vec<String>,
    rows: u64,
}

impl<W: Write> JsonSink<W> {
    fn new(out: W) -> Self {
        JsonSink {
            out,
            keys: Vec::new(),
            rows: 0,
        }
    }
}

impl<W: Write> RowSink for JsonSink<W> {
    fn columns(&mut self, names: &[String]) -> std::io::Result<()> {
        self.keys = names
            .iter()
            .map(|n| format!("{}:", serde_json::Value::from(n.as_str())))
            .collect();
        self.out.write_all(b"[")
    }
    fn cell(&mut self, index: usize, cell: Cell<'_>) -> std::io::Result<()> {
        if index == 0 {
            self.out
                .write_all(if self.rows == 0 { b"{" } else { b",{" })?;
        } else {
            self.out.write_all(b",")?;
        }
        self.out.write_all(self.keys[index].as_bytes())?;
        let json = |e: serde_json::Error| std::io::Error::other(e);
        match cell {
            Cell::Null => self.out.write_all(b"null"),
            Cell::Integer(i) => write!(self.out, "{i}"),
            // serde_json writes a non-finite float as null.
            Cell::Real(r) => serde_json::to_writer(&mut self.out, &r).map_err(json),
            Cell::Text(t) => serde_json::to_writer(&mut self.out, t).map_err(json),
            Cell::Blob(b) => {
                self.out.write_all(b"\"")?;
                for x in b {
                    write!(self.out, "{x:02x}")?;
                }
                self.out.write_all(b"\"")
            }
        }
    }
    fn end_row(&mut self) -> std::io::Result<()> {
        if self.keys.is_empty() {
            self.out
                .write_all(if self.rows == 0 { b"{" } else { b",{" })?;
        }
        self.rows += 1;
        self.out.write_all(b"}")
    }
}

impl<W: Write> Sink for JsonSink<W> {
    fn as_row_sink(&mut self) -> &mut dyn RowSink {
        self
    }
    fn finish(&mut self, rows: Option<u64>) -> std::io::Result<()> {
        if rows.is_some() {
            self.out.write_all(b"]\n")?;
        }
        self.out.flush()
    }
}

/// An aligned text table (numbers right-aligned) with a row count; see [`TABLE_ALIGN_ROWS`].
struct TableSink<W: Write> {
    out: W,
    align_rows: usize,
    columns: Vec<String>,
    /// Rows measured but not yet printed: (text, right-aligned) per cell.
    buffered: Vec<Vec<(String, bool)>>,
    row: Vec<(String, bool)>,
    /// Column widths, fixed once the header is printed.
    widths: Option<Vec<usize>>,
    line: String,
}

impl<W: Write> TableSink<W> {
    fn new(out: W, align_rows: usize) -> Self {
        TableSink {
            out,
            align_rows,
            columns: Vec::new(),
            buffered: Vec::new(),
            row: Vec::new(),
            widths: None,
            line: String::new(),
        }
    }

    /// Fixes the widths from the header and the buffered rows, prints them.
    fn print_buffered(&mut self) -> std::io::Result<()> {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for row in &self.buffered {
            for (w, (c, _)) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let header: Vec<String> = self
            .columns
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        writeln!(self.out, "{}", header.join("  ").trim_end())?;
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        writeln!(self.out, "{}", rule.join("  "))?;
        self.widths = Some(widths);
        for row in std::mem::take(&mut self.buffered) {
            self.print_row(&row)?;
        }
        Ok(())
    }

    fn print_row(&mut self, row: &[(String, bool)]) -> std::io::Result<()> {
        use std::fmt::Write as _;
        let widths = self.widths.as_deref().unwrap_or_default();
        self.line.clear();
        for (i, ((c, right), w)) in row.iter().zip(widths).enumerate() {
            if i > 0 {
                self.line.push_str("  ");
            }
            let _ = if *right {
                write!(self.line, "{c:>w$}")
            } else {
                write!(self.line, "{c:<w$}")
            };
        }
        writeln!(self.out, "{}", self.line.trim_end())
    }
}

impl<W: Write> RowSink for TableSink<W> {
    fn columns(&mut self, names: &[String]) -> std::io::Result<()> {
        self.columns = names.to_vec();
        Ok(())
    }
    fn cell(&mut self, _index: usize, cell: Cell<'_>) -> std::io::Result<()> {
        let mut text = String::new();
        cell_text(cell, &mut text);
        self.row
            .push((text, matches!(cell, Cell::Integer(_) | Cell::Real(_))));
        Ok(())
    }
    fn end_row(&mut self) -> std::io::Result<()> {
        let row = std::mem::take(&mut self.row);
        if self.widths.is_some() {
            self.print_row(&row)?;
            self.row = row;
            self.row.clear();
            return Ok(());
        }
        self.buffered.push(row);
        if self.buffered.len() > self.align_rows {
            self.print_buffered()?;
        }
        Ok(())
    }
}

impl<W: Write> Sink for TableSink<W> {
    fn as_row_sink(&mut self) -> &mut dyn RowSink {
        self
    }
    fn finish(&mut self, rows: Option<u64>) -> std::io::Result<()> {
        // Nothing to print for a query that failed before it had columns.
        if rows.is_none() && self.columns.is_empty() {
            return self.out.flush();
        }
        if self.widths.is_none() {
            self.print_buffered()?;
        }
        if let Some(n) = rows {
            writeln!(self.out, "({n} row{})", if n == 1 { "" } else { "s" })?;
        }
        self.out.flush()
    }
}

/// An aligned text table (numbers right-aligned), with a row count: every row measured.
pub fn to_table(r: &QueryResult) -> String {
    let mut t = TableSink::new(Vec::new(), usize::MAX);
    let fill = |t: &mut TableSink<Vec<u8>>| -> std::io::Result<()> {
        t.columns(&r.columns)?;
        for row in &r.rows {
            for (i, v) in row.iter().enumerate() {
                let cell = match v {
                    Value::Null => Cell::Null,
                    Value::Integer(x) => Cell::Integer(*x),
                    Value::Real(x) => Cell::Real(*x),
                    // A blob is already hex: shown as it is.
                    Value::Text(s) | Value::Blob(s) => Cell::Text(s),
                };
                t.cell(i, cell)?;
            }
            t.end_row()?;
        }
        t.finish(Some(r.rows.len() as u64))
    };
    fill(&mut t).expect("writing to memory cannot fail");
    String::from_utf8(t.out).expect("the table is UTF-8")
}
