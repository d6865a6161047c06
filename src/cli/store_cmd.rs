//! `tabula sql` and `tabula fsck`.

use std::path::Path;

use anyhow::bail;
use tabula::store::{QueryResult, Store};

use super::args::{FsckArgs, SqlArgs};

pub fn sql(db: Option<&Path>, args: &SqlArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&Store::resolve_path(db))?;
    let result = store.query(&args.query)?;
    if args.json {
        println!("{}", to_json(&result));
    } else if args.csv {
        print!("{}", to_csv(&result));
    } else {
        print!("{}", to_table(&result));
    }
    Ok(())
}

pub fn fsck(db: Option<&Path>, args: &FsckArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    let store = Store::open_read_only(&path)?;
    let bar = super::progress::bar(0, "checking objects");
    let report = store.fsck(|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    // Runs: every reference resolvable, and where each damaged object sits.
    let refs = tabula::runs::check_references(&store)?;
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

fn to_json(r: &QueryResult) -> String {
    let rows: Vec<serde_json::Value> = r
        .rows
        .iter()
        .map(|row| {
            let obj: serde_json::Map<String, serde_json::Value> = r
                .columns
                .iter()
                .cloned()
                .zip(row.iter().map(|v| v.to_json()))
                .collect();
            serde_json::Value::Object(obj)
        })
        .collect();
    serde_json::Value::Array(rows).to_string()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn to_csv(r: &QueryResult) -> String {
    let mut out = String::new();
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .map(|c| csv_field(c))
            .collect::<Vec<_>>()
            .join(",")
    };
    out += &line(r.columns.clone());
    out.push('\n');
    for row in &r.rows {
        out += &line(row.iter().map(|v| v.to_text()).collect());
        out.push('\n');
    }
    out
}

/// An aligned text table (numbers right-aligned), with a row count.
pub fn to_table(r: &QueryResult) -> String {
    use tabula::store::Value;
    let cells: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|row| row.iter().map(|v| v.to_text()).collect())
        .collect();
    let mut widths: Vec<usize> = r.columns.iter().map(|c| c.chars().count()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = r
        .columns
        .iter()
        .zip(&widths)
        .map(|(c, w)| format!("{c:<w$}"))
        .collect();
    out += header.join("  ").trim_end();
    out.push('\n');
    out += &widths
        .iter()
        .map(|w| "-".repeat(*w))
        .collect::<Vec<_>>()
        .join("  ");
    out.push('\n');
    for (row, raw) in cells.iter().zip(&r.rows) {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .zip(raw)
            .map(|((c, w), v)| match v {
                Value::Integer(_) | Value::Real(_) => format!("{c:>w$}"),
                _ => format!("{c:<w$}"),
            })
            .collect();
        out += line.join("  ").trim_end();
        out.push('\n');
    }
    out += &format!(
        "({} row{})\n",
        r.rows.len(),
        if r.rows.len() == 1 { "" } else { "s" }
    );
    out
}
