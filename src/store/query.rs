//! Read-only SQL for people and scripts (`tabula sql`).

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::StoreError;

/// One cell of a query result.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    /// Blobs (object hashes among them) as lowercase hex.
    Blob(String),
}

impl Value {
    /// The cell as text, as a table or CSV shows it.
    pub fn to_text(&self) -> String {
        match self {
            Value::Null => String::new(),
            Value::Integer(i) => i.to_string(),
            Value::Real(r) => r.to_string(),
            Value::Text(t) => t.clone(),
            Value::Blob(h) => h.clone(),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Integer(i) => (*i).into(),
            Value::Real(r) => serde_json::Number::from_f64(*r)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Text(t) | Value::Blob(t) => t.clone().into(),
        }
    }
}

/// Column names and rows of a query.
#[derive(Clone, Debug, Default)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

pub(super) fn run(conn: &Connection, sql: &str) -> Result<QueryResult, StoreError> {
    let q = |e: rusqlite::Error| StoreError::Query(e.to_string());
    let mut stmt = conn.prepare(sql).map_err(q)?;
    let columns: Vec<String> = stmt.column_names().map(|c| c.to_string()).collect();
    let n = columns.len();
    let mut rows = stmt.query([]).map_err(q)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(q)? {
        let mut cells = Vec::with_capacity(n);
        for i in 0..n {
            cells.push(match row.get_ref(i).map_err(q)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(v) => Value::Integer(v),
                ValueRef::Real(v) => Value::Real(v),
                ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Value::Blob(b.iter().map(|x| format!("{x:02x}")).collect()),
            });
        }
        out.push(cells);
    }
    Ok(QueryResult { columns, rows: out })
}
