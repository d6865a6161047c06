//! The object table: put, get, fsck. Private to the store.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ObjectHash, StoreError};

/// A record kind that can be stored. `KIND` names the kind and its encoding version
/// (`"solution-chunk/v1"`): changing a record's fields or meaning is a new version, because
/// the bytes and the hash are a contract.
pub trait Record: Serialize + DeserializeOwned {
    const KIND: &'static str;
}

pub(super) enum Error {
    Sqlite(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        Error::Sqlite(e)
    }
}

impl Error {
    pub(super) fn into_store_error(self, path: &Path) -> StoreError {
        match self {
            Error::Sqlite(e) => super::sqlite(path, e),
            Error::Store(e) => e,
        }
    }
}

pub(super) fn encode<R: Record>(record: &R) -> Result<Vec<u8>, Error> {
    postcard::to_stdvec(record).map_err(|source| {
        Error::Store(StoreError::Encode {
            kind: R::KIND,
            source,
        })
    })
}

pub(super) fn put<R: Record>(conn: &Connection, record: &R) -> Result<ObjectHash, Error> {
    put_sized(conn, record).map(|x| x.0)
}

/// Like [`put`], also returning the encoded size in bytes.
pub(super) fn put_sized<R: Record>(
    conn: &Connection,
    record: &R,
) -> Result<(ObjectHash, usize), Error> {
    let bytes = encode(record)?;
    let size = bytes.len();
    let hash = ObjectHash::of(R::KIND, &bytes);
    put_raw(conn, R::KIND, &bytes, &hash)?;
    Ok((hash, size))
}

/// Stores encoded bytes of `kind` at `hash` (the caller computed it with [`ObjectHash::of`]).
pub(super) fn put_raw(
    conn: &Connection,
    kind: &str,
    bytes: &[u8],
    hash: &ObjectHash,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO objects (hash, kind, size, bytes) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(hash) DO NOTHING",
    )?
    .execute(params![&hash.0[..], kind, bytes.len() as i64, bytes])?;
    Ok(())
}

pub(super) fn contains(conn: &Connection, hash: &ObjectHash) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM objects WHERE hash = ?1")?
        .query_row([&hash.0[..]], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Reads an object and checks that its bytes hash to its address; returns its kind.
pub(super) fn check(conn: &Connection, hash: &ObjectHash) -> Result<String, Error> {
    load(conn, hash).map(|(kind, _)| kind)
}

/// An object's kind and bytes, checked against its address.
fn load(conn: &Connection, hash: &ObjectHash) -> Result<(String, Vec<u8>), Error> {
    let row: Option<(String, Vec<u8>)> = conn
        .prepare_cached("SELECT kind, bytes FROM objects WHERE hash = ?1")?
        .query_row([&hash.0[..]], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((kind, bytes)) = row else {
        return Err(Error::Store(StoreError::NotFound(*hash)));
    };
    if ObjectHash::of(&kind, &bytes) != *hash {
        return Err(Error::Store(StoreError::Corrupt {
            hash: *hash,
            reason: "its bytes no longer hash to its address".into(),
        }));
    }
    Ok((kind, bytes))
}

pub(super) fn get<R: Record>(conn: &Connection, hash: &ObjectHash) -> Result<R, Error> {
    // The kind is checked before the bytes: a wrong kind is the more useful error.
    let kind: Option<String> = conn
        .prepare_cached("SELECT kind FROM objects WHERE hash = ?1")?
        .query_row([&hash.0[..]], |r| r.get(0))
        .optional()?;
    match kind {
        None => return Err(Error::Store(StoreError::NotFound(*hash))),
        Some(kind) if kind != R::KIND => {
            return Err(Error::Store(StoreError::WrongKind {
                hash: *hash,
                found: kind,
                expected: R::KIND,
            }));
        }
        Some(_) => {}
    }
    let (_, bytes) = load(conn, hash)?;
    postcard::from_bytes(&bytes).map_err(|e| {
        Error::Store(StoreError::Corrupt {
            hash: *hash,
            reason: format!("cannot decode as `{}`: {e}", R::KIND),
        })
    })
}

pub(super) fn fsck(
    conn: &Connection,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<super::FsckReport, Error> {
    let total: i64 = conn.query_row("SELECT count(*) FROM objects", [], |r| r.get(0))?;
    let mut report = super::FsckReport::default();
    let mut stmt = conn.prepare("SELECT hash, kind, bytes FROM objects ORDER BY id")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let stored: Vec<u8> = row.get(0)?;
        let kind: String = row.get(1)?;
        let bytes: Vec<u8> = row.get(2)?;
        report.objects += 1;
        report.bytes += bytes.len() as u64;
        let actual = ObjectHash::of(&kind, &bytes);
        let Ok(stored) = <[u8; 32]>::try_from(stored.as_slice()) else {
            report
                .damaged
                .push((actual, format!("address is {} bytes, not 32", stored.len())));
            continue;
        };
        if actual.0 != stored {
            report.damaged.push((
                ObjectHash(stored),
                format!("`{kind}` bytes hash to {actual}, not to their address"),
            ));
        }
        if report.objects % 1024 == 0 {
            progress(report.objects, total as u64);
        }
    }
    progress(report.objects, total as u64);
    Ok(report)
}
