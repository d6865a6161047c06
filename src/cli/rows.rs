//! How query rows are printed: an aligned table, CSV or JSON, streamed as the rows come
//! (`tabula sql`), and a whole result as a table (`tabula show`).

use std::io::Write;

use tabula::store::{Cell, QueryResult, RowSink, Value};

/// How many rows an aligned table measures before printing: a result up to this long is
/// aligned exactly; a longer one keeps these widths and streams the rest (a wider cell
/// pushes its line to the right rather than being cut). docs/store.md, "The SQL console".
const TABLE_ALIGN_ROWS: usize = 1000;

/// The most characters an aligned table shows of one cell; a longer cell is cut there and
/// ends in a note of how much was left out (`--csv` and `--json` show every cell whole).
pub(crate) const TABLE_CELL_CHARS: usize = 4096;

/// A cell as an aligned table shows it: as [`cell_text`], cut to [`TABLE_CELL_CHARS`]
/// characters with a note of how many were left out (only the shown part of a long blob is
/// turned into hex).
fn table_text(c: Cell<'_>) -> String {
    let mut text = String::new();
    let left = match c {
        Cell::Blob(b) if b.len() * 2 > TABLE_CELL_CHARS => {
            cell_text(Cell::Blob(&b[..TABLE_CELL_CHARS / 2]), &mut text);
            (b.len() - TABLE_CELL_CHARS / 2) * 2
        }
        Cell::Text(t) => match t.char_indices().nth(TABLE_CELL_CHARS) {
            Some((at, _)) => {
                text.push_str(&t[..at]);
                t[at..].chars().count()
            }
            None => {
                text.push_str(t);
                0
            }
        },
        _ => {
            cell_text(c, &mut text);
            0
        }
    };
    if left > 0 {
        text.push_str(&format!(
            "… ({left} more characters; --csv or --json shows them)"
        ));
    }
    text
}

/// `c` padded with spaces to `width` characters, on the left when `right`.
fn pad(line: &mut String, c: &str, width: usize, right: bool) {
    let fill = width.saturating_sub(c.chars().count());
    if right {
        line.extend(std::iter::repeat_n(' ', fill));
        line.push_str(c);
    } else {
        line.push_str(c);
        line.extend(std::iter::repeat_n(' ', fill));
    }
}

/// A streaming output format: a [`RowSink`] that can be finished.
pub(crate) trait Sink: RowSink {
    fn as_row_sink(&mut self) -> &mut dyn RowSink;
    /// Writes what is buffered and the closing lines (`rows`: the count; None when the query
    /// failed part way, so no closing lines) and flushes.
    fn finish(&mut self, rows: Option<u64>) -> std::io::Result<()>;
}

/// The sink `tabula sql` streams rows into: JSON, CSV, else an aligned table.
pub(crate) fn sink<'a, W: Write + 'a>(out: W, json: bool, csv: bool) -> Box<dyn Sink + 'a> {
    if json {
        Box::new(JsonSink::new(out))
    } else if csv {
        Box::new(CsvSink::new(out))
    } else {
        Box::new(TableSink::new(out, TABLE_ALIGN_ROWS))
    }
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
        let mut header = String::new();
        for (i, (c, w)) in self.columns.iter().zip(&widths).enumerate() {
            if i > 0 {
                header.push_str("  ");
            }
            pad(&mut header, c, *w, false);
        }
        writeln!(self.out, "{}", header.trim_end())?;
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        writeln!(self.out, "{}", rule.join("  "))?;
        self.widths = Some(widths);
        for row in std::mem::take(&mut self.buffered) {
            self.print_row(&row)?;
        }
        Ok(())
    }

    fn print_row(&mut self, row: &[(String, bool)]) -> std::io::Result<()> {
        let widths = self.widths.as_deref().unwrap_or_default();
        self.line.clear();
        for (i, ((c, right), w)) in row.iter().zip(widths).enumerate() {
            if i > 0 {
                self.line.push_str("  ");
            }
            pad(&mut self.line, c, *w, *right);
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
        self.row.push((
            table_text(cell),
            matches!(cell, Cell::Integer(_) | Cell::Real(_)),
        ));
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
pub(crate) fn to_table(r: &QueryResult) -> String {
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
