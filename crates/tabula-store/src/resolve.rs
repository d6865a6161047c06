//! The one rule for naming stored things at the command line (docs/store.md, "Naming runs,
//! sweeps and objects"): a run by its id, its name, or a hash prefix; a sweep by its name or a
//! hash prefix; a stored object (a game for `replay`) by a hash prefix.
//!
//! A hash prefix is at least [`MIN_PREFIX`] hex digits (any case) and names the one thing whose
//! hash starts with it; a prefix that several things share is refused with the candidates
//! listed ([`super::StoreError::Ambiguous`]). All 64 digits are a prefix too.

use rusqlite::Connection;

use super::ObjectHash;

/// The fewest hex digits a hash prefix may have.
pub const MIN_PREFIX: usize = 4;

/// At most this many candidates are listed when a prefix or name is ambiguous.
pub(super) const MAX_LISTED: usize = 20;

/// What a lookup found.
#[derive(Debug)]
pub(super) enum Found<T> {
    None,
    One(T),
    /// Several match (the first [`MAX_LISTED`] + 1 of them).
    Many(Vec<T>),
}

impl Found<ObjectHash> {
    /// This result and `more` together (hash order, duplicates once, at most
    /// `MAX_LISTED + 1`).
    pub(super) fn with(self, more: Vec<ObjectHash>) -> Found<ObjectHash> {
        let mut all = match self {
            Found::None => Vec::new(),
            Found::One(h) => vec![h],
            Found::Many(v) => v,
        };
        all.extend(more);
        all.sort_unstable();
        all.dedup();
        all.truncate(MAX_LISTED + 1);
        Found::of(all)
    }
}

impl<T> Found<T> {
    /// The lookup's result from its rows (already limited to `MAX_LISTED + 1`).
    pub(super) fn of(mut rows: Vec<T>) -> Found<T> {
        match rows.len() {
            0 => Found::None,
            1 => Found::One(rows.remove(0)),
            _ => Found::Many(rows),
        }
    }
}

/// `text` as a hash prefix (lower case), if it is one: [`MIN_PREFIX`] to 64 hex digits.
pub(super) fn hex_prefix(text: &str) -> Option<String> {
    let t = text.trim();
    (t.len() >= MIN_PREFIX && t.len() <= 64 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| t.to_ascii_lowercase())
}

/// The range of 32-byte hashes that start with `prefix` (hex digits), inclusive: blobs
/// compare as bytes, so `hash BETWEEN lo AND hi` finds them with the index.
pub(super) fn bounds(prefix: &str) -> ([u8; 32], [u8; 32]) {
    let digit = |i: usize, fill: u8| -> u8 {
        prefix
            .as_bytes()
            .get(i)
            .map_or(fill, |&c| (c as char).to_digit(16).unwrap_or(0) as u8)
    };
    let mut lo = [0u8; 32];
    let mut hi = [0u8; 32];
    for i in 0..32 {
        lo[i] = (digit(2 * i, 0) << 4) | digit(2 * i + 1, 0);
        hi[i] = (digit(2 * i, 15) << 4) | digit(2 * i + 1, 15);
    }
    (lo, hi)
}

/// The rows of `select` (`SELECT columns FROM table`) whose `name` is `text`, else those whose
/// hash fits `text` as a prefix (`prefix_where` compares hash columns with `?1` and `?2`, the
/// prefix's [`bounds`]), ordered by `order`; at most `MAX_LISTED + 1`.
pub(super) fn by_name_or_prefix<T>(
    conn: &Connection,
    select: &str,
    prefix_where: &str,
    order: &str,
    text: &str,
    row: fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Found<T>> {
    let text = text.trim();
    let limit = MAX_LISTED as i64 + 1;
    let named = conn
        .prepare(&format!(
            "{select} WHERE name = ?1 ORDER BY {order} LIMIT ?2"
        ))?
        .query_map(rusqlite::params![text, limit], row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if !named.is_empty() {
        return Ok(Found::of(named));
    }
    let Some(prefix) = hex_prefix(text) else {
        return Ok(Found::None);
    };
    let (lo, hi) = bounds(&prefix);
    let rows = conn
        .prepare(&format!(
            "{select} WHERE {prefix_where} ORDER BY {order} LIMIT ?3"
        ))?
        .query_map(rusqlite::params![&lo[..], &hi[..], limit], row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Found::of(rows))
}

/// The hashes of stored objects of kind `kind` that start with `prefix` (at most
/// `MAX_LISTED + 1`), in hash order.
pub(super) fn objects(
    conn: &Connection,
    prefix: &str,
    kind: &str,
) -> rusqlite::Result<Found<ObjectHash>> {
    let (lo, hi) = bounds(prefix);
    let mut stmt = conn.prepare_cached(
        "SELECT hash FROM objects WHERE hash BETWEEN ?1 AND ?2 AND kind = ?3
         ORDER BY hash LIMIT ?4",
    )?;
    let rows = stmt
        .query_map(
            rusqlite::params![&lo[..], &hi[..], kind, MAX_LISTED as i64 + 1],
            |r| super::runs::blob_hash(r.get(0)?, 0),
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Found::of(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_their_bounds() {
        assert_eq!(hex_prefix("AbC1"), Some("abc1".to_string()));
        assert_eq!(hex_prefix("abc"), None, "3 digits are too few");
        assert_eq!(hex_prefix("abcg"), None);
        assert_eq!(hex_prefix(&"f".repeat(65)), None);
        let (lo, hi) = bounds("abc");
        assert_eq!(
            (lo[0], lo[1], hi[0], hi[1], hi[31]),
            (0xab, 0xc0, 0xab, 0xcf, 0xff)
        );
        let h = ObjectHash::of("x", b"y").to_hex();
        let (lo, hi) = bounds(&h);
        assert_eq!(
            (lo, hi),
            (ObjectHash::of("x", b"y").0, ObjectHash::of("x", b"y").0)
        );
    }
}
