//! The object table: put, get, fsck. Private to the store.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::packs::{self, Cache};
use super::{ObjectHash, StoreError};

/// A record kind that can be stored. `KIND` names the kind and its encoding version
/// (`"solution-chunk/v1"`): changing a record's fields or meaning is a new version, because
/// the bytes and the hash are a contract.
pub trait Record: Serialize + DeserializeOwned {
    const KIND: &'static str;
}

#[derive(Debug)]
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
    put_coded(conn, kind, bytes.len(), packs::PLAIN, bytes, hash)
}

/// Like [`put_raw`], keeping the bytes zstd-compressed when that saves (large objects).
pub(super) fn put_compressed(
    conn: &Connection,
    kind: &str,
    bytes: &[u8],
    hash: &ObjectHash,
) -> Result<(), Error> {
    match packs::compress(bytes) {
        Some((codec, c)) => put_coded(conn, kind, bytes.len(), codec, &c, hash),
        None => put_raw(conn, kind, bytes, hash),
    }
}

/// Stores an object whose record bytes are `size` long, kept as `stored` in `codec`.
pub(super) fn put_coded(
    conn: &Connection,
    kind: &str,
    size: usize,
    codec: i64,
    stored: &[u8],
    hash: &ObjectHash,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO objects (hash, kind, size, codec, bytes) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(hash) DO NOTHING",
    )?
    .execute(params![&hash.0[..], kind, size as i64, codec, stored])?;
    Ok(())
}

pub(super) fn contains(conn: &Connection, cache: &Cache, hash: &ObjectHash) -> Result<bool, Error> {
    contains_at(conn, cache, hash, 0)
}

fn contains_at(
    conn: &Connection,
    cache: &Cache,
    hash: &ObjectHash,
    depth: u32,
) -> Result<bool, Error> {
    let row: Option<(i64, i64)> = conn
        // The index holds the codec: the row's bytes are not read (schema/0010).
        .prepare_cached("SELECT id, codec FROM objects INDEXED BY objects_codec WHERE hash = ?1")?
        .query_row([&hash.0[..]], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    if let Some((id, codec)) = row {
        if codec != packs::AGAINST || cache.known_whole(hash) {
            return Ok(true);
        }
        // Kept against other objects (docs/store.md "Packs and codecs"): readable only while
        // they are, so a checkpoint whose references are gone is rebuilt like a missing one.
        let Some(refs) = packs::references_of(conn, id)? else {
            return Ok(false);
        };
        for r in &refs {
            if depth >= packs::MAX_DEPTH || !contains_at(conn, cache, r, depth + 1)? {
                return Ok(false);
            }
        }
        cache.note_whole(*hash);
        return Ok(true);
    }
    // A member of a damaged pack cannot be read: not stored, as far as readers go (fsck
    // reports the pack itself).
    match packs::find(conn, cache, hash) {
        Ok(found) => Ok(found.is_some()),
        Err(Error::Store(StoreError::Corrupt { .. })) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Reads an object and checks that its bytes hash to its address; returns its kind.
pub(super) fn check(conn: &Connection, cache: &Cache, hash: &ObjectHash) -> Result<String, Error> {
    load(conn, cache, hash).map(|(kind, _)| kind)
}

/// An object's kind and record bytes (decoded, from its row or its pack), checked against
/// its address.
fn load(conn: &Connection, cache: &Cache, hash: &ObjectHash) -> Result<(String, Vec<u8>), Error> {
    load_expecting(conn, cache, hash, None)
}

/// [`load`], refusing an object stored as another kind than `expected` before decoding its
/// bytes (a wrong kind is the more useful error than a corrupt one).
fn load_expecting(
    conn: &Connection,
    cache: &Cache,
    hash: &ObjectHash,
    expected: Option<&'static str>,
) -> Result<(String, Vec<u8>), Error> {
    if let Some(found) = packs::find_next(cache, hash) {
        return Ok(found);
    }
    // `bytes` before `codec`: SQLite then reaches the codec behind the blob through the
    // overflow pages it has just read (schema/0010).
    let row: Option<(String, i64, Vec<u8>)> = conn
        .prepare_cached("SELECT kind, bytes, codec FROM objects WHERE hash = ?1")?
        .query_row([&hash.0[..]], |r| Ok((r.get(0)?, r.get(2)?, r.get(1)?)))
        .optional()?;
    if let (Some(expected), Some((kind, _, _))) = (expected, &row)
        && kind != expected
    {
        return Err(Error::Store(StoreError::WrongKind {
            hash: *hash,
            found: kind.clone(),
            expected,
        }));
    }
    let (kind, bytes) = match row {
        Some((kind, codec, stored)) => {
            let bytes = packs::decode_object(conn, cache, hash, codec, stored)?;
            (kind, bytes)
        }
        // A pack member is checked against its address as its pack is read.
        None => match packs::find(conn, cache, hash)? {
            Some(found) => return Ok(found),
            None => return Err(Error::Store(StoreError::NotFound(*hash))),
        },
    };
    if ObjectHash::of(&kind, &bytes) != *hash {
        return Err(Error::Store(StoreError::Corrupt {
            hash: *hash,
            reason: "its bytes no longer hash to its address".into(),
        }));
    }
    Ok((kind, bytes))
}

pub(super) fn get<R: Record>(
    conn: &Connection,
    cache: &Cache,
    hash: &ObjectHash,
) -> Result<R, Error> {
    let (kind, bytes) = load_expecting(conn, cache, hash, Some(R::KIND))?;
    if kind != R::KIND {
        return Err(Error::Store(StoreError::WrongKind {
            hash: *hash,
            found: kind,
            expected: R::KIND,
        }));
    }
    postcard::from_bytes(&bytes).map_err(|e| {
        Error::Store(StoreError::Corrupt {
            hash: *hash,
            reason: format!("cannot decode as `{}`: {e}", R::KIND),
        })
    })
}

/// [`get`] of each of `hashes`; rows kept whole or against references are decoded together
/// ([`super::batch`]), anything else (pack members, elided records, any failure) one by one.
pub(super) fn get_many<R: Record + Send>(
    conn: &Connection,
    cache: &Cache,
    hashes: &[ObjectHash],
) -> Result<Vec<R>, Error> {
    let one_by_one = || hashes.iter().map(|h| get(conn, cache, h)).collect();
    let decoded = super::batch::decode_many(conn, cache, R::KIND, hashes, |h, bytes| {
        if ObjectHash::of(R::KIND, bytes) != *h {
            return None;
        }
        postcard::from_bytes(bytes).ok()
    })?;
    match decoded {
        Some(records) => Ok(records),
        None => one_by_one(),
    }
}

/// Recomputes every object's hash (see [`Store::fsck`](super::Store::fsck)), packs first;
/// `progress` gets (objects and packs seen, their total).
pub(super) fn fsck(
    conn: &Connection,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<super::FsckReport, Error> {
    let total: i64 = conn.query_row(
        "SELECT (SELECT count(*) FROM objects) + (SELECT count(*) FROM packs)",
        [],
        |r| r.get(0),
    )?;
    let mut report = super::FsckReport::default();
    let mut seen = 0u64;
    fsck_packs(conn, &mut report, &mut seen, total as u64, progress)?;
    fsck_objects(conn, &mut report, &mut seen, total as u64, progress)?;
    progress(seen, total as u64);
    Ok(report)
}

/// Packs: each is decompressed and its members hashed (a pack's address is over its
/// members' addresses); every member counts as an object.
fn fsck_packs(
    conn: &Connection,
    report: &mut super::FsckReport,
    seen: &mut u64,
    total: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), Error> {
    let mut stmt =
        conn.prepare("SELECT hash, kind, members, size, bytes, id FROM packs ORDER BY id")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let stored: Vec<u8> = row.get(0)?;
        let kind: String = row.get(1)?;
        let count: i64 = row.get(2)?;
        let size: i64 = row.get(3)?;
        let bytes: Vec<u8> = row.get(4)?;
        *seen += 1;
        let hash = ObjectHash(<[u8; 32]>::try_from(stored.as_slice()).unwrap_or([0; 32]));
        match packs::decode(hash, kind, count, &bytes) {
            Ok(p) => {
                report.objects += p.members.len() as u64;
                report.bytes += size as u64;
                let id: i64 = row.get(5)?;
                if let Some(slot) = packs::unindexed_member(conn, id, &p)? {
                    report.damaged.push((
                        hash,
                        format!(
                            "pack: member {slot}'s address prefix has no `pack_members` row, so \
                             a lookup by address does not find it{}",
                            packs::holdings(conn, id)?
                        ),
                    ));
                }
            }
            Err(Error::Store(StoreError::Corrupt { hash, reason })) => {
                let id: i64 = row.get(5)?;
                report
                    .damaged
                    .push((hash, format!("{reason}{}", packs::holdings(conn, id)?)));
            }
            Err(e) => return Err(e),
        }
        progress(*seen, total);
    }
    Ok(())
}

/// Objects: each decoded (its references and packs read through a cache) and hashed.
fn fsck_objects(
    conn: &Connection,
    report: &mut super::FsckReport,
    seen: &mut u64,
    total: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), Error> {
    let cache = Cache::default();
    let mut stmt = conn.prepare("SELECT hash, kind, bytes, codec FROM objects ORDER BY id")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let stored: Vec<u8> = row.get(0)?;
        let kind: String = row.get(1)?;
        let codec: i64 = row.get(3)?;
        let raw: Vec<u8> = row.get(2)?;
        report.objects += 1;
        *seen += 1;
        let Ok(stored) = <[u8; 32]>::try_from(stored.as_slice()) else {
            let actual = ObjectHash::of(&kind, &raw);
            report
                .damaged
                .push((actual, format!("address is {} bytes, not 32", stored.len())));
            continue;
        };
        let stored = ObjectHash(stored);
        let bytes = match packs::decode_object(conn, &cache, &stored, codec, raw) {
            Ok(b) => b,
            Err(Error::Store(StoreError::Corrupt { hash, reason })) => {
                report.damaged.push((hash, format!("`{kind}`: {reason}")));
                continue;
            }
            Err(e) => return Err(e),
        };
        report.bytes += bytes.len() as u64;
        let actual = ObjectHash::of(&kind, &bytes);
        if actual != stored {
            report.damaged.push((
                stored,
                format!("`{kind}` bytes hash to {actual}, not to their address"),
            ));
        }
        if seen.is_multiple_of(1024) {
            progress(*seen, total);
        }
    }
    Ok(())
}
