//! Packs: many small objects of one kind in one zstd blob, and the codecs of `objects.bytes`
//! (docs/store.md "Packs and codecs"; `schema/0008_packs.sql`). Private to the store.
//!
//! Why: a self-play game is about a hundred bytes; stored one object per row it carried its
//! 32-byte address three times (the row, the unique index, `run_games`) and compressed
//! alone it barely shrinks. A pack of a committed batch (256 games) compresses about 3.5x,
//! and a member's address is computed from its bytes when read, never stored beside it.
//!
//! Finding a member by address: the table `pack_members` (`schema/0018_pack_members.sql`)
//! holds each pack's distinct 4-byte member address prefixes, kept by the transaction that
//! stores or deletes the pack; a lookup reads the packs under its prefix (an index search, so
//! its cost does not grow with the store) and checks every candidate by hashing its bytes.
//! Decompressed packs are kept in a small cache, so reading an iteration's games in order
//! decompresses each pack once.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, params};

use super::objects::Error;
use super::{ObjectHash, StoreError};

/// zstd level of packs: they are compressed by the iteration loop between batches of
/// self-play, whose games can come faster than 30 µs each (EWN 3x3x3 at 6 simulations).
/// Measured on the EWN literature run's games (docs/store.md): level 3 keeps 30.7% of the
/// bytes, level 12 28.8% and 19 27.8%, but level 12 costs ten times level 3's CPU.
const PACK_LEVEL: i32 = 3;
/// zstd level of large single objects (table chunks): fast, they compress little.
const OBJECT_LEVEL: i32 = 3;
/// Objects at least this long are tried compressed; kept so only if it saves 1/16.
const COMPRESS_FROM: usize = 4096;
/// Decompressed packs kept.
const RECENT: usize = 8;

/// `objects.codec` values.
pub(super) const PLAIN: i64 = 0;
pub(super) const ZSTD: i64 = 1;
pub(super) const ELIDED: i64 = 2;
pub(super) const SHUFFLED: i64 = 3;
pub(super) const AGAINST: i64 = 4;

/// The largest zstd window an object against references may use (128 MiB): the references'
/// bytes and the object's must fit in it for matches to reach back to the references.
const MAX_WINDOW_LOG: u32 = 27;
/// Decoded references kept (a checkpoint's chunks refer to the previous kept checkpoint's,
/// several chunks each): about two PPPP checkpoints.
const REFERENCES_KEPT: usize = 128 << 20;
/// How deep references may nest before the store calls an object damaged (a writer keeps a
/// chain far shorter: `docs/store.md`, "Checkpoints against the previous one").
pub(super) const MAX_DEPTH: u32 = 64;

/// A pack's address: over its kind and its members' addresses in slot order.
pub(super) fn pack_hash<'a>(
    kind: &str,
    members: impl IntoIterator<Item = &'a ObjectHash>,
) -> ObjectHash {
    let mut h = blake3::Hasher::new();
    h.update(b"pack\0");
    h.update(kind.as_bytes());
    h.update(&[0]);
    for m in members {
        h.update(&m.0);
    }
    ObjectHash(*h.finalize().as_bytes())
}

/// A decompressed pack: its members' addresses and bytes, in slot order.
pub(super) struct Pack {
    pub hash: ObjectHash,
    pub kind: String,
    pub members: Vec<(ObjectHash, Vec<u8>)>,
}

#[derive(Default)]
struct Inner {
    recent: VecDeque<(i64, Arc<Pack>)>,
    /// The place after the member last found ([`find_next`]).
    next: Option<(i64, u32)>,
    /// Decoded bytes of objects read as references (codec 4), newest last, at most
    /// [`REFERENCES_KEPT`] bytes in all.
    references: VecDeque<(ObjectHash, Arc<Vec<u8>>)>,
    references_bytes: usize,
    /// Objects kept against references found whole (every reference, to the bottom, has a
    /// row): a kept checkpoint's chunks share most of their references.
    whole: std::collections::HashSet<ObjectHash>,
    /// The buffer codec 4 decodes assemble their references in.
    prefix: Vec<u8>,
}

/// The per-connection cache of recently read packs and decoded references.
#[derive(Default)]
pub(super) struct Cache(RefCell<Inner>);

impl Cache {
    /// Whether `hash` was found whole before ([`Inner::whole`]).
    pub(super) fn known_whole(&self, hash: &ObjectHash) -> bool {
        self.0.borrow().whole.contains(hash)
    }

    pub(super) fn note_whole(&self, hash: ObjectHash) {
        self.0.borrow_mut().whole.insert(hash);
    }

    /// Forgets everything (after a rolled-back write: its pack ids may be reused).
    pub(super) fn clear(&self) {
        *self.0.borrow_mut() = Inner::default();
    }
}

fn corrupt(hash: ObjectHash, reason: String) -> Error {
    Error::Store(StoreError::Corrupt { hash, reason })
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let c = *b.get(*at)?;
        *at += 1;
        v |= u64::from(c & 0x7f) << shift;
        if c < 0x80 {
            return Some(v);
        }
    }
    None
}

/// A batch of objects of one kind made ready to store as one pack: compressed, with its
/// address and prefixes (built off the writer thread; docs/store.md "Packs and codecs").
pub struct PreparedPack {
    kind: String,
    hash: ObjectHash,
    members: usize,
    size: usize,
    prefixes: Vec<u8>,
    bytes: Vec<u8>,
}

impl PreparedPack {
    /// The pack's address.
    pub(super) fn hash(&self) -> ObjectHash {
        self.hash
    }

    /// How many records it holds.
    pub(super) fn members(&self) -> usize {
        self.members
    }

    /// The members' kind tag.
    pub(super) fn kind(&self) -> &str {
        &self.kind
    }
}

/// Prepares a pack of `members` (address, bytes) of `kind`.
pub(super) fn prepare(kind: &str, members: &[(ObjectHash, &[u8])]) -> Result<PreparedPack, Error> {
    let hash = pack_hash(kind, members.iter().map(|(h, _)| h));
    let mut raw = Vec::new();
    let mut prefixes = Vec::with_capacity(4 * members.len());
    let mut size = 0usize;
    for (h, bytes) in members {
        put_varint(&mut raw, bytes.len() as u64);
        raw.extend_from_slice(bytes);
        prefixes.extend_from_slice(&h.0[..4]);
        size += bytes.len();
    }
    let bytes = zstd::bulk::compress(&raw, PACK_LEVEL)
        .map_err(|e| Error::Store(StoreError::Query(format!("cannot compress a pack: {e}"))))?;
    Ok(PreparedPack {
        kind: kind.to_string(),
        hash,
        members: members.len(),
        size,
        prefixes,
        bytes,
    })
}

/// Stores a prepared pack (if not already there); returns its id.
pub(super) fn insert(conn: &Connection, p: &PreparedPack) -> Result<i64, Error> {
    if let Some(id) = id_of(conn, &p.hash)? {
        return Ok(id);
    }
    conn.prepare_cached(
        "INSERT INTO packs (hash, kind, members, size, prefixes, bytes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        &p.hash.0[..],
        p.kind,
        p.members as i64,
        p.size as i64,
        p.prefixes,
        p.bytes
    ])?;
    let id = conn.last_insert_rowid();
    index_members(conn, id)?;
    Ok(id)
}

/// The slots 0 .. `members` - 1 of pack `?1`'s row, each with its member's address prefix
/// (a piece of the statements below: `prefixes` holds 4 bytes a member, in slot order).
macro_rules! member_prefixes {
    () => {
        "WITH RECURSIVE slot(i) AS (
             SELECT 0 UNION ALL
             SELECT i + 1 FROM slot WHERE i + 1 < (SELECT members FROM packs WHERE id = ?1))"
    };
}

/// Adds pack `id`'s rows to `pack_members` (one per distinct member address prefix), from
/// its `prefixes` column: by the transaction that stores the pack (here, and `merge`).
pub(super) fn index_members(conn: &Connection, id: i64) -> Result<(), Error> {
    conn.prepare_cached(concat!(
        member_prefixes!(),
        " INSERT OR IGNORE INTO pack_members (prefix, pack)
          SELECT substr(p.prefixes, 4 * slot.i + 1, 4), p.id FROM packs p CROSS JOIN slot
          WHERE p.id = ?1 AND slot.i < p.members"
    ))?
    .execute([id])?;
    Ok(())
}

/// Deletes pack `id` and its `pack_members` rows (each by its key: the table has no index by
/// pack); returns its stored bytes, `None` when there is no such pack.
pub(super) fn delete(conn: &Connection, id: i64) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(concat!(
        member_prefixes!(),
        " DELETE FROM pack_members WHERE (prefix, pack) IN
          (SELECT substr(p.prefixes, 4 * slot.i + 1, 4), p.id FROM packs p CROSS JOIN slot
           WHERE p.id = ?1 AND slot.i < p.members)"
    ))?
    .execute([id])?;
    conn.prepare_cached("DELETE FROM packs WHERE id = ?1 RETURNING length(bytes)")?
        .query_row([id], |r| r.get(0))
        .optional()
}

/// Stores a pack of `members` (address, bytes) of `kind` (if not already there); returns its
/// id and address.
#[cfg(test)]
pub(super) fn put(
    conn: &Connection,
    kind: &str,
    members: &[(ObjectHash, &[u8])],
) -> Result<(i64, ObjectHash), Error> {
    let p = prepare(kind, members)?;
    Ok((insert(conn, &p)?, p.hash))
}

/// The id of the pack with address `hash`.
pub(super) fn id_of(conn: &Connection, hash: &ObjectHash) -> Result<Option<i64>, Error> {
    Ok(conn
        .prepare_cached("SELECT id FROM packs WHERE hash = ?1")?
        .query_row([&hash.0[..]], |r| r.get(0))
        .optional()?)
}

/// Reads pack `id`, checking its address against its members' (cached).
pub(super) fn load(conn: &Connection, cache: &Cache, id: i64) -> Result<Arc<Pack>, Error> {
    if let Some((_, p)) = cache.0.borrow().recent.iter().find(|(i, _)| *i == id) {
        return Ok(p.clone());
    }
    let row: Option<(Vec<u8>, String, i64, Vec<u8>)> = conn
        .prepare_cached("SELECT hash, kind, members, bytes FROM packs WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    let Some((stored, kind, count, bytes)) = row else {
        return Err(Error::Store(StoreError::Query(format!(
            "pack {id} is not stored"
        ))));
    };
    let hash = super::runs::blob_hash(stored, 0)?;
    let pack = Arc::new(decode(hash, kind, count, &bytes)?);
    let mut inner = cache.0.borrow_mut();
    if inner.recent.len() == RECENT {
        inner.recent.pop_front();
    }
    inner.recent.push_back((id, pack.clone()));
    Ok(pack)
}

/// Decompresses and splits a pack's bytes, and checks them against its address.
pub(super) fn decode(
    hash: ObjectHash,
    kind: String,
    count: i64,
    bytes: &[u8],
) -> Result<Pack, Error> {
    let raw = inflate(bytes)
        .map_err(|e| corrupt(hash, format!("pack: cannot decompress its bytes ({e})")))?;
    let mut members = Vec::with_capacity(count.max(0) as usize);
    let mut at = 0;
    while at < raw.len() {
        let len = get_varint(&raw, &mut at)
            .filter(|&n| at + n as usize <= raw.len())
            .ok_or_else(|| corrupt(hash, format!("pack: member {} is cut short", members.len())))?
            as usize;
        let b = raw[at..at + len].to_vec();
        at += len;
        members.push((ObjectHash::of(&kind, &b), b));
    }
    if members.len() as i64 != count {
        return Err(corrupt(
            hash,
            format!("pack: {} members, its row says {count}", members.len()),
        ));
    }
    if pack_hash(&kind, members.iter().map(|(h, _)| h)) != hash {
        return Err(corrupt(
            hash,
            "pack: its members no longer hash to its address".into(),
        ));
    }
    Ok(Pack {
        hash,
        kind,
        members,
    })
}

/// The packs (ids, ascending) holding a member whose address prefix is in [lo, hi]: an index
/// search of `pack_members`, whatever the number of packs.
fn candidates(conn: &Connection, lo: [u8; 4], hi: [u8; 4]) -> Result<Vec<i64>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT pack FROM pack_members WHERE prefix BETWEEN ?1 AND ?2 ORDER BY pack",
    )?;
    let ids = stmt
        .query_map(params![&lo[..], &hi[..]], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(ids)
}

/// The first slot of pack `id` (read as `pack`) whose address prefix lacks its
/// `pack_members` row (fsck).
pub(super) fn unindexed_member(
    conn: &Connection,
    id: i64,
    pack: &Pack,
) -> Result<Option<usize>, Error> {
    let mut stmt =
        conn.prepare_cached("SELECT 1 FROM pack_members WHERE prefix = ?1 AND pack = ?2")?;
    for (slot, (h, _)) in pack.members.iter().enumerate() {
        if !stmt.exists(params![&h.0[..4], id])? {
            return Ok(Some(slot));
        }
    }
    Ok(None)
}

/// The pack (id, slot, contents) that holds the object at `hash`, if one does. A damaged pack
/// that may hold it is an error naming `hash`, the pack and the games it holds.
fn locate(
    conn: &Connection,
    cache: &Cache,
    hash: &ObjectHash,
) -> Result<Option<(i64, u32, Arc<Pack>)>, Error> {
    let key = [hash.0[0], hash.0[1], hash.0[2], hash.0[3]];
    for id in candidates(conn, key, key)? {
        let pack = load(conn, cache, id).map_err(|e| match e {
            Error::Store(StoreError::Corrupt { hash: p, reason }) => corrupt(
                *hash,
                format!(
                    "it may be in pack {}, which is damaged: {reason}{}",
                    p.short(),
                    holdings(conn, id).unwrap_or_default()
                ),
            ),
            e => e,
        })?;
        if let Some(slot) = pack.members.iter().position(|(h, _)| h == hash) {
            let slot = slot as u32;
            cache.0.borrow_mut().next = Some((id, slot + 1));
            return Ok(Some((id, slot, pack)));
        }
    }
    Ok(None)
}

/// The kind and bytes of the packed object at `hash`, if a pack holds it (see [`locate`]).
pub(super) fn find(
    conn: &Connection,
    cache: &Cache,
    hash: &ObjectHash,
) -> Result<Option<(String, Vec<u8>)>, Error> {
    Ok(locate(conn, cache, hash)?
        .map(|(_, slot, p)| (p.kind.clone(), p.members[slot as usize].1.clone())))
}

/// The kind and bytes of the member after the one last found, when that member is `hash`
/// and its pack is still decompressed: reading a pack's members in order (an iteration's
/// games) then needs no query. Its address was checked when the pack was read.
pub(super) fn find_next(cache: &Cache, hash: &ObjectHash) -> Option<(String, Vec<u8>)> {
    let mut inner = cache.0.borrow_mut();
    let (id, slot) = inner.next?;
    let pack = inner.recent.iter().find(|(i, _)| *i == id)?.1.clone();
    let (h, bytes) = pack.members.get(slot as usize)?;
    if h != hash {
        return None;
    }
    inner.next = Some((id, slot + 1));
    Some((pack.kind.clone(), bytes.clone()))
}

/// The (pack id, slot) of the packed object at `hash`, if a pack holds it.
pub(super) fn place(
    conn: &Connection,
    cache: &Cache,
    hash: &ObjectHash,
) -> Result<Option<(i64, u32)>, Error> {
    Ok(locate(conn, cache, hash)?.map(|(id, slot, _)| (id, slot)))
}

/// Addresses of packed objects of `kind` in [lo, hi] (at most `limit`), in hash order.
pub(super) fn in_range(
    conn: &Connection,
    cache: &Cache,
    lo: &[u8; 32],
    hi: &[u8; 32],
    kind: &str,
    limit: usize,
) -> Result<Vec<ObjectHash>, Error> {
    let (klo, khi) = ([lo[0], lo[1], lo[2], lo[3]], [hi[0], hi[1], hi[2], hi[3]]);
    let mut out = Vec::new();
    for id in candidates(conn, klo, khi)? {
        let pack = load(conn, cache, id)?;
        if pack.kind != kind {
            continue;
        }
        out.extend(
            pack.members
                .iter()
                .map(|(h, _)| *h)
                .filter(|h| h.0 >= *lo && h.0 <= *hi),
        );
    }
    out.sort_unstable();
    out.dedup();
    out.truncate(limit);
    Ok(out)
}

/// How an object's record bytes are kept when that saves at least 1/16: (codec, stored
/// bytes). Both zstd forms are tried: of the bytes, and of the bytes shuffled by byte plane
/// with stride 8 (a table chunk is mostly f64s, whose sign and exponent bytes repeat: on the
/// EWN literature run this stores a full checkpoint in 81% of its bytes, plain zstd in 92%).
pub(super) fn compress(bytes: &[u8]) -> Option<(i64, Vec<u8>)> {
    if bytes.len() < COMPRESS_FROM {
        return None;
    }
    let plain = zstd::bulk::compress(bytes, OBJECT_LEVEL).ok()?;
    let shuffled = zstd::bulk::compress(&shuffle(bytes), OBJECT_LEVEL).ok()?;
    let best = if shuffled.len() < plain.len() {
        (SHUFFLED, shuffled)
    } else {
        (ZSTD, plain)
    };
    (best.1.len() < bytes.len() - bytes.len() / 16).then_some(best)
}

/// Byte planes of stride 8: every 8-byte word's byte 0, then every byte 1, ..., then the
/// bytes after the last whole word.
fn shuffle(b: &[u8]) -> Vec<u8> {
    let n = b.len() / 8;
    let mut out = Vec::with_capacity(b.len());
    for plane in 0..8 {
        out.extend((0..n).map(|i| b[8 * i + plane]));
    }
    out.extend_from_slice(&b[8 * n..]);
    out
}

/// The inverse of [`shuffle`].
fn unshuffle(s: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; s.len()];
    unshuffle_into(s, &mut out);
    out
}

/// [`unshuffle`] into `out` (as long as `s`): written 8 bytes at a time, reading the 8
/// planes side by side.
pub(super) fn unshuffle_into(s: &[u8], out: &mut [u8]) {
    let n = s.len() / 8;
    let p: [&[u8]; 8] = std::array::from_fn(|k| &s[k * n..(k + 1) * n]);
    for (i, o) in out[..8 * n].chunks_exact_mut(8).enumerate() {
        o.copy_from_slice(&[
            p[0][i], p[1][i], p[2][i], p[3][i], p[4][i], p[5][i], p[6][i], p[7][i],
        ]);
    }
    out[8 * n..].copy_from_slice(&s[8 * n..]);
}

/// The largest decoded size a zstd frame's header is believed for (1 GiB): a damaged header
/// must not reserve memory.
const MAX_STATED: u64 = 1 << 30;

/// The decoded size a zstd frame's header states, when it states a plausible one (at most
/// [`MAX_STATED`]).
pub(super) fn stated_size(frame: &[u8]) -> Option<usize> {
    match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(n)) if n <= MAX_STATED => Some(n as usize),
        _ => None,
    }
}

/// Decompresses one zstd frame into a buffer of the size its header states (one allocation
/// instead of a growing one), or, when the header states none or an implausible one (over
/// 1 GiB: a damaged header must not reserve memory), as a stream.
fn inflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    match stated_size(bytes) {
        Some(n) => zstd::bulk::decompress(bytes, n),
        None => zstd::stream::decode_all(bytes),
    }
}

/// The stored form of an elided object (codec 2): its bytes without the member addresses
/// of `packs`, which sat at `at`.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Elided {
    pub at: u32,
    pub packs: Vec<ObjectHash>,
    pub rest: Vec<u8>,
}

/// The stored form of an object against references (codec 4): postcard of the referenced
/// objects' addresses, then the zstd frame as a postcard byte string (varint length, bytes),
/// whose prefix is those objects' record bytes, in order. Written and read by hand so the
/// frame is one copy, not a sequence of bytes decoded one by one.
fn against_form(refs: &[ObjectHash], frame: &[u8]) -> Option<Vec<u8>> {
    let mut out = postcard::to_stdvec(refs).ok()?;
    put_varint(&mut out, frame.len() as u64);
    out.extend_from_slice(frame);
    Some(out)
}

/// The references and the frame of a codec 4 form ([`against_form`]).
pub(super) fn parse_against(stored: &[u8]) -> Option<(Vec<ObjectHash>, &[u8])> {
    let (refs, rest) = postcard::take_from_bytes::<Vec<ObjectHash>>(stored).ok()?;
    let mut at = 0;
    let n = get_varint(rest, &mut at)? as usize;
    (rest.len() - at == n).then(|| (refs, &rest[at..]))
}

/// `bytes` compressed against `prefix` (the record bytes of `refs`, concatenated): zstd level
/// 3 with long-distance matching, so that rows unchanged since the referenced objects cost a
/// few bytes each. The stored form ([`against_form`]), or `None` when zstd fails.
pub(super) fn compress_against(
    bytes: &[u8],
    refs: &[ObjectHash],
    prefix: &[u8],
) -> Option<Vec<u8>> {
    use zstd::zstd_safe::{CCtx, CParameter};
    let span = (prefix.len() + bytes.len()).max(1 << 10);
    let window = (usize::BITS - (span - 1).leading_zeros()).clamp(10, MAX_WINDOW_LOG);
    let mut c = CCtx::try_create()?;
    c.set_parameter(CParameter::CompressionLevel(OBJECT_LEVEL))
        .ok()?;
    c.set_parameter(CParameter::EnableLongDistanceMatching(true))
        .ok()?;
    c.set_parameter(CParameter::WindowLog(window)).ok()?;
    c.set_pledged_src_size(Some(bytes.len() as u64)).ok()?;
    c.ref_prefix(prefix).ok()?;
    let mut frame = Vec::with_capacity(zstd::zstd_safe::compress_bound(bytes.len()));
    c.compress2(&mut frame, bytes).ok()?;
    against_form(refs, &frame)
}

/// The references of the object in row `id` (codec 4), read from the start of its stored
/// bytes without reading the rest; `None` when they cannot be decoded (damage).
pub(super) fn references_of(conn: &Connection, id: i64) -> Result<Option<Vec<ObjectHash>>, Error> {
    use std::io::Read;
    let mut blob = conn.blob_open(rusqlite::MAIN_DB, "objects", "bytes", id, true)?;
    let mut head = vec![0u8; 4096.min(blob.len())];
    if blob.read_exact(&mut head).is_err() {
        return Ok(None);
    }
    if let Ok((refs, _)) = postcard::take_from_bytes::<Vec<ObjectHash>>(&head) {
        return Ok(Some(refs));
    }
    let mut all = Vec::new();
    blob.reopen(id)?;
    if blob.read_to_end(&mut all).is_err() {
        return Ok(None);
    }
    Ok(postcard::take_from_bytes::<Vec<ObjectHash>>(&all)
        .ok()
        .map(|(refs, _)| refs))
}

/// The decoded bytes of `hash` if the cache kept them from an earlier read as a reference.
pub(super) fn cached_reference(cache: &Cache, hash: &ObjectHash) -> Option<Arc<Vec<u8>>> {
    let inner = cache.0.borrow();
    inner
        .references
        .iter()
        .find(|(h, _)| h == hash)
        .map(|(_, b)| b.clone())
}

/// Decompresses a codec 4 frame against `prefix` (its references' bytes, in order) into
/// `out`, which is as long as the frame states.
pub(super) fn decompress_against(
    frame: &[u8],
    prefix: &[u8],
    out: &mut [u8],
) -> Result<(), String> {
    use zstd::zstd_safe::{DCtx, DParameter};
    let name = |e: usize| zstd::zstd_safe::get_error_name(e).to_string();
    let mut d = DCtx::try_create().ok_or_else(|| "no decompression context".to_string())?;
    d.set_parameter(DParameter::WindowLogMax(MAX_WINDOW_LOG))
        .map_err(name)?;
    d.ref_prefix(prefix).map_err(name)?;
    let k = d.decompress(out, frame).map_err(name)?;
    if k != out.len() {
        return Err(format!("{k} bytes where its frame states {}", out.len()));
    }
    Ok(())
}

/// The decoded record bytes of `hash` for use as a reference (not checked against its address
/// here: what is decoded against it is, so damage is caught there, and fsck checks each object
/// itself), kept in the cache.
fn reference(
    conn: &Connection,
    cache: &Cache,
    of: &ObjectHash,
    hash: &ObjectHash,
    depth: u32,
) -> Result<Arc<Vec<u8>>, Error> {
    if let Some(b) = cached_reference(cache, hash) {
        return Ok(b);
    }
    let row: Option<(i64, Vec<u8>)> = conn
        .prepare_cached("SELECT bytes, codec FROM objects WHERE hash = ?1")?
        .query_row([&hash.0[..]], |r| Ok((r.get(1)?, r.get(0)?)))
        .optional()?;
    let Some((codec, stored)) = row else {
        return Err(corrupt(
            *of,
            format!("it is stored against {}, which is missing", hash.short()),
        ));
    };
    let bytes = Arc::new(
        // Only the outermost object wraps the reason: a chain names its first and last links.
        decode_at(conn, cache, hash, codec, stored, depth + 1).map_err(|e| match e {
            Error::Store(StoreError::Corrupt { reason, .. }) if depth == 0 => corrupt(
                *of,
                format!(
                    "it is stored against {}, which cannot be read: {reason}",
                    hash.short()
                ),
            ),
            e => e,
        })?,
    );
    let mut inner = cache.0.borrow_mut();
    inner.references_bytes += bytes.len();
    inner.references.push_back((*hash, bytes.clone()));
    while inner.references_bytes > REFERENCES_KEPT
        && let Some((_, old)) = inner.references.pop_front()
    {
        inner.references_bytes -= old.len();
    }
    Ok(bytes)
}

/// The record bytes an object row holds in `codec`.
pub(super) fn decode_object(
    conn: &Connection,
    cache: &Cache,
    hash: &ObjectHash,
    codec: i64,
    bytes: Vec<u8>,
) -> Result<Vec<u8>, Error> {
    decode_at(conn, cache, hash, codec, bytes, 0)
}

/// [`decode_object`] at `depth` references down.
fn decode_at(
    conn: &Connection,
    cache: &Cache,
    hash: &ObjectHash,
    codec: i64,
    bytes: Vec<u8>,
    depth: u32,
) -> Result<Vec<u8>, Error> {
    match codec {
        AGAINST => {
            if depth > MAX_DEPTH {
                return Err(corrupt(
                    *hash,
                    format!("its references nest deeper than {MAX_DEPTH}"),
                ));
            }
            let (refs, frame) = parse_against(&bytes)
                .ok_or_else(|| corrupt(*hash, "cannot decode its referenced form".into()))?;
            let refs: Vec<Arc<Vec<u8>>> = refs
                .iter()
                .map(|r| reference(conn, cache, hash, r, depth))
                .collect::<Result<_, _>>()?;
            // One prefix buffer, reused: references are resolved above, so no decode below
            // this one holds it.
            let mut prefix = std::mem::take(&mut cache.0.borrow_mut().prefix);
            prefix.clear();
            for r in &refs {
                prefix.extend_from_slice(r);
            }
            drop(refs);
            let n = stated_size(frame)
                .ok_or_else(|| corrupt(*hash, "its frame states no plausible size".into()))?;
            let mut out = vec![0u8; n];
            let done = decompress_against(frame, &prefix, &mut out);
            cache.0.borrow_mut().prefix = prefix;
            done.map_err(|e| corrupt(*hash, format!("cannot decompress its bytes ({e})")))?;
            Ok(out)
        }
        _ => decode_plain(conn, cache, hash, codec, bytes),
    }
}

/// The codecs that need no references.
fn decode_plain(
    conn: &Connection,
    cache: &Cache,
    hash: &ObjectHash,
    codec: i64,
    bytes: Vec<u8>,
) -> Result<Vec<u8>, Error> {
    match codec {
        PLAIN => Ok(bytes),
        ZSTD => inflate(&bytes)
            .map_err(|e| corrupt(*hash, format!("cannot decompress its bytes ({e})"))),
        SHUFFLED => inflate(&bytes)
            .map(|s| unshuffle(&s))
            .map_err(|e| corrupt(*hash, format!("cannot decompress its bytes ({e})"))),
        ELIDED => {
            let e: Elided = postcard::from_bytes(&bytes)
                .map_err(|e| corrupt(*hash, format!("cannot decode its elided form ({e})")))?;
            let at = e.at as usize;
            if at > e.rest.len() {
                return Err(corrupt(*hash, "its elided form is cut short".into()));
            }
            let mut out = Vec::with_capacity(e.rest.len() + 32 * 256 * e.packs.len());
            out.extend_from_slice(&e.rest[..at]);
            for p in &e.packs {
                let Some(id) = id_of(conn, p)? else {
                    return Err(corrupt(
                        *hash,
                        format!("part of it is kept in pack {}, which is missing", p.short()),
                    ));
                };
                let pack = load(conn, cache, id).map_err(|err| match err {
                    Error::Store(StoreError::Corrupt { reason, .. }) => corrupt(
                        *hash,
                        format!(
                            "part of it is kept in pack {}, which is damaged: {reason}{}",
                            p.short(),
                            holdings(conn, id).unwrap_or_default()
                        ),
                    ),
                    err => err,
                })?;
                for (h, _) in &pack.members {
                    out.extend_from_slice(&h.0);
                }
            }
            out.extend_from_slice(&e.rest[at..]);
            Ok(out)
        }
        other => Err(corrupt(*hash, format!("unknown codec {other}"))),
    }
}

/// The elided form of `bytes` over `packs` (id, address, member count), whose members'
/// addresses `members` must sit contiguously in `bytes`; `None` when they do not.
pub(super) fn elide(
    bytes: &[u8],
    kind: &str,
    members: &[ObjectHash],
    packs: &[(ObjectHash, usize)],
) -> Option<Elided> {
    let first = members.first()?;
    let mut k = 0;
    for (h, n) in packs {
        let slice = members.get(k..k + n)?;
        if pack_hash(kind, slice) != *h {
            return None;
        }
        k += n;
    }
    if k != members.len() {
        return None;
    }
    let need = 32 * members.len();
    let at = (0..bytes.len().checked_sub(need)? + 1).find(|&p| {
        bytes[p..p + 32] == first.0
            && members
                .iter()
                .enumerate()
                .all(|(i, m)| bytes[p + 32 * i..p + 32 * i + 32] == m.0)
    })?;
    let mut rest = bytes[..at].to_vec();
    rest.extend_from_slice(&bytes[at + need..]);
    Some(Elided {
        at: at as u32,
        packs: packs.iter().map(|(h, _)| *h).collect(),
        rest,
    })
}

/// What a pack holds, in words: "; it holds run 1 iteration 3 games 0..255" (empty when no
/// run names it).
pub(super) fn holdings(conn: &Connection, pack: i64) -> Result<String, Error> {
    let mut stmt = conn.prepare(
        "SELECT run_id, iteration, min(game), max(game) FROM run_games WHERE pack = ?1
         GROUP BY run_id, iteration ORDER BY run_id, iteration",
    )?;
    let parts: Vec<String> = stmt
        .query_map([pack], |r| {
            let (run, it, lo, hi): (i64, i64, i64, i64) =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
            Ok(format!("run {run} iteration {it} games {lo}..{hi}"))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(if parts.is_empty() {
        String::new()
    } else {
        format!("; it holds {}", parts.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn store() -> Connection {
        let mut c = Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut c)
            .map_err(|_| ())
            .unwrap();
        c
    }

    fn members(n: usize) -> Vec<(ObjectHash, Vec<u8>)> {
        (0..n)
            .map(|i| {
                let b: Vec<u8> = (0..(i * 7 % 300)).map(|k| (k * i) as u8).collect();
                (ObjectHash::of("game/v1", &b), b)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn shuffle_round_trips(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(unshuffle(&shuffle(&b)), b);
        }
    }

    #[test]
    fn a_pack_gives_back_its_members_by_slot_address_and_prefix() {
        let c = store();
        let cache = Cache::default();
        let m = members(40);
        let refs: Vec<(ObjectHash, &[u8])> = m.iter().map(|(h, b)| (*h, b.as_slice())).collect();
        let (id, hash) = put(&c, "game/v1", &refs).unwrap();
        assert_eq!(hash, pack_hash("game/v1", m.iter().map(|(h, _)| h)));
        // Stored once: the same members again give the same pack.
        assert_eq!(put(&c, "game/v1", &refs).unwrap().0, id);
        let p = load(&c, &cache, id).unwrap();
        assert_eq!(p.members, m);
        for (slot, (h, b)) in m.iter().enumerate() {
            assert_eq!(
                find(&c, &cache, h).unwrap(),
                Some(("game/v1".to_string(), b.clone()))
            );
            assert_eq!(place(&c, &cache, h).unwrap(), Some((id, slot as u32)));
        }
        let absent = ObjectHash::of("game/v1", b"not there");
        assert_eq!(find(&c, &cache, &absent).unwrap(), None);
        // Every member is within the range of its own address, and only it.
        let (h, _) = &m[7];
        assert_eq!(
            in_range(&c, &cache, &h.0, &h.0, "game/v1", 5).unwrap(),
            vec![*h]
        );
        assert!(
            in_range(&c, &cache, &h.0, &h.0, "other/v1", 5)
                .unwrap()
                .is_empty()
        );
    }

    /// The SQLite virtual-machine instructions `f` runs on `c` (its cost in statements and
    /// rows stepped, whatever the machine's speed).
    fn vm_steps<T>(c: &mut Connection, f: impl FnOnce(&Connection) -> T) -> (u64, T) {
        use std::sync::atomic::{AtomicU64, Ordering};
        let n = Arc::new(AtomicU64::new(0));
        let counter = n.clone();
        c.progress_handler(
            1,
            Some(move || {
                counter.fetch_add(1, Ordering::Relaxed);
                false
            }),
        )
        .unwrap();
        let out = f(c);
        c.progress_handler(1, None::<fn() -> bool>).unwrap();
        (n.load(Ordering::Relaxed), out)
    }

    /// A pack's members: (address, bytes) in slot order.
    type Members = Vec<(ObjectHash, Vec<u8>)>;

    /// A store of `packs` packs of 256 members, each member's bytes unique to its pack.
    fn store_of(packs: usize) -> (Connection, Vec<Members>) {
        let c = store();
        let all: Vec<Members> = (0..packs)
            .map(|p| {
                (0..256u32)
                    .map(|i| {
                        let b = format!("pack {p} member {i}").into_bytes();
                        (ObjectHash::of("game/v1", &b), b)
                    })
                    .collect()
            })
            .collect();
        for m in &all {
            let refs: Vec<(ObjectHash, &[u8])> =
                m.iter().map(|(h, b)| (*h, b.as_slice())).collect();
            put(&c, "game/v1", &refs).unwrap();
        }
        (c, all)
    }

    /// A lookup by address reads what it finds, not the store (issue 48): finding a member,
    /// its place, whether it is stored, and the members in its address range run the same
    /// SQLite instructions in a store of one pack and in one of forty (the map of every
    /// pack's prefixes that they built before stepped every pack's row).
    #[test]
    fn a_lookup_by_address_costs_the_same_whatever_the_number_of_packs() {
        let steps = |packs: usize| {
            let (mut c, all) = store_of(packs);
            let (h, b) = all[0][77].clone();
            let absent = ObjectHash::of("game/v1", b"not stored");
            let mut counts = Vec::new();
            let (n, found) = vm_steps(&mut c, |c| find(c, &Cache::default(), &h).unwrap());
            assert_eq!(found, Some(("game/v1".to_string(), b)));
            counts.push(n);
            let (n, at) = vm_steps(&mut c, |c| place(c, &Cache::default(), &h).unwrap());
            assert_eq!(at, Some((1, 77)));
            counts.push(n);
            let (n, yes) = vm_steps(&mut c, |c| {
                super::super::objects::contains(c, &Cache::default(), &h).unwrap()
            });
            assert!(yes);
            counts.push(n);
            let (n, range) = vm_steps(&mut c, |c| {
                in_range(c, &Cache::default(), &h.0, &h.0, "game/v1", 5).unwrap()
            });
            assert_eq!(range, vec![h]);
            counts.push(n);
            let (n, none) = vm_steps(&mut c, |c| find(c, &Cache::default(), &absent).unwrap());
            assert_eq!(none, None);
            counts.push(n);
            counts
        };
        let one = steps(1);
        assert!(one.iter().all(|&n| n > 0), "{one:?}");
        assert_eq!(steps(40), one);
    }

    /// Migration 18 indexes the packs a store already holds: every member is found by its
    /// address after it as before it, and a pack deleted takes its rows with it.
    #[test]
    fn a_store_migrated_to_the_member_index_finds_its_packed_members() {
        let mut c = Connection::open_in_memory().unwrap();
        super::super::schema::migrate_to(&c, 17).unwrap();
        let mut all = Vec::new();
        for p in 0..3usize {
            let m: Vec<(ObjectHash, Vec<u8>)> = (0..(100 + 60 * p))
                .map(|i| {
                    let b = format!("old pack {p} member {i}").into_bytes();
                    (ObjectHash::of("game/v1", &b), b)
                })
                .collect();
            let refs: Vec<(ObjectHash, &[u8])> =
                m.iter().map(|(h, b)| (*h, b.as_slice())).collect();
            let pp = prepare("game/v1", &refs).unwrap();
            c.execute(
                "INSERT INTO packs (hash, kind, members, size, prefixes, bytes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    &pp.hash.0[..],
                    pp.kind,
                    pp.members as i64,
                    pp.size as i64,
                    pp.prefixes,
                    pp.bytes
                ],
            )
            .unwrap();
            all.push(m);
        }
        super::super::schema::migrate(&mut c).unwrap();
        assert_eq!(super::super::schema::check(&c).unwrap(), vec![]);
        let rows: i64 = c
            .query_row("SELECT count(*) FROM pack_members", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 100 + 160 + 220);
        let cache = Cache::default();
        for (p, m) in all.iter().enumerate() {
            for (slot, (h, _)) in m.iter().enumerate() {
                assert_eq!(
                    place(&c, &cache, h).unwrap(),
                    Some((p as i64 + 1, slot as u32))
                );
            }
            let pack = load(&c, &cache, p as i64 + 1).unwrap();
            assert_eq!(unindexed_member(&c, p as i64 + 1, &pack).unwrap(), None);
        }
        assert!(delete(&c, 2).unwrap().is_some());
        let rows: i64 = c
            .query_row("SELECT count(*) FROM pack_members", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 100 + 220);
        assert_eq!(place(&c, &Cache::default(), &all[1][5].0).unwrap(), None);
        assert_eq!(
            place(&c, &Cache::default(), &all[2][5].0).unwrap(),
            Some((3, 5))
        );
    }

    #[test]
    fn an_elided_object_reads_back_byte_for_byte_and_a_damaged_pack_is_named() {
        let c = store();
        let cache = Cache::default();
        let (a, b) = (members(5), members(9));
        let mut packs = Vec::new();
        for m in [&a, &b] {
            let refs: Vec<(ObjectHash, &[u8])> =
                m.iter().map(|(h, b)| (*h, b.as_slice())).collect();
            let (_, h) = put(&c, "game/v1", &refs).unwrap();
            packs.push((h, m.len()));
        }
        let addrs: Vec<ObjectHash> = a.iter().chain(&b).map(|(h, _)| *h).collect();
        let mut bytes = b"a record's head".to_vec();
        for h in &addrs {
            bytes.extend_from_slice(&h.0);
        }
        bytes.extend_from_slice(b"and its tail");
        let hash = ObjectHash::of("iteration/v1", &bytes);
        // Wrong member lists are refused (the record is then stored plain).
        assert!(elide(&bytes, "game/v1", &addrs[1..], &packs).is_none());
        assert!(elide(&bytes, "game/v1", &addrs, &packs[..1]).is_none());
        let e = elide(&bytes, "game/v1", &addrs, &packs).unwrap();
        assert_eq!(e.at, 15);
        assert_eq!(e.rest.len(), bytes.len() - 32 * addrs.len());
        let stored = postcard::to_stdvec(&e).unwrap();
        assert_eq!(
            decode_object(&c, &cache, &hash, ELIDED, stored.clone()).unwrap(),
            bytes
        );
        // A changed byte in the second pack: the object names that pack and cannot be read.
        let mut raw: Vec<u8> = c
            .query_row(
                "SELECT bytes FROM packs WHERE hash = ?1",
                [&packs[1].0.0[..]],
                |r| r.get(0),
            )
            .unwrap();
        let k = raw.len() / 2;
        raw[k] ^= 1;
        c.execute(
            "UPDATE packs SET bytes = ?1 WHERE hash = ?2",
            rusqlite::params![raw, &packs[1].0.0[..]],
        )
        .unwrap();
        let fresh = Cache::default();
        match decode_object(&c, &fresh, &hash, ELIDED, stored) {
            Err(Error::Store(StoreError::Corrupt { hash: h, reason })) => {
                assert_eq!(h, hash);
                assert!(reason.contains(&packs[1].0.short()), "{reason}");
            }
            other => panic!("a damaged pack must be an error: {other:?}"),
        }
    }

    #[test]
    fn compressed_forms_round_trip() {
        // f64s: the shuffled form wins; text-like bytes: plain zstd.
        let floats: Vec<u8> = (0..2000)
            .flat_map(|i| (1.0f64 + f64::from(i) * 1e-3).to_le_bytes())
            .collect();
        let text: Vec<u8> = b"abcabcabd".iter().cycle().take(9000).copied().collect();
        let c = store();
        let cache = Cache::default();
        for (bytes, want) in [(floats, SHUFFLED), (text, ZSTD)] {
            let (codec, stored) = compress(&bytes).unwrap();
            assert_eq!(codec, want);
            let h = ObjectHash::of("x", &bytes);
            assert_eq!(decode_object(&c, &cache, &h, codec, stored).unwrap(), bytes);
        }
        assert!(compress(&[7u8; 100]).is_none(), "small objects stay plain");
    }

    /// Pseudo-random f64 rows (full-entropy mantissas, like a table's).
    fn rows(seed: u64, n: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                f64::from_bits(0x3fe0_0000_0000_0000 | (x >> 12)).to_le_bytes()
            })
            .collect()
    }

    fn insert_object(c: &Connection, bytes: &[u8], codec: i64, stored: &[u8]) -> ObjectHash {
        let h = ObjectHash::of("x", bytes);
        super::super::objects::put_coded(c, "x", bytes.len(), codec, stored, &h).unwrap();
        h
    }

    /// Codec 4: an object that shares most of its bytes with its references is stored in a
    /// fraction of its size and decodes exactly, through a chain of references; a missing
    /// reference is damage that names it, and a reference loop stops at the depth limit.
    #[test]
    fn objects_against_references_round_trip_and_name_what_is_missing() {
        let c = store();
        let a = rows(1, 40_000);
        let ha = insert_object(&c, &a, PLAIN, &a);
        // b: a with every tenth row of 41 changed; c: b with others changed, against b.
        let change = |base: &[u8], seed: u64, every: usize| {
            let mut out = base.to_vec();
            let fresh = rows(seed, base.len() / 8);
            for (k, row) in out.chunks_mut(41 * 8).enumerate() {
                if k % every == 0 {
                    let at = k * 41 * 8;
                    row.copy_from_slice(&fresh[at..at + row.len()]);
                }
            }
            out
        };
        let b = change(&a, 2, 10);
        let stored_b = compress_against(&b, &[ha], &a).unwrap();
        assert!(
            stored_b.len() < b.len() / 5,
            "{} of {}",
            stored_b.len(),
            b.len()
        );
        let hb = insert_object(&c, &b, AGAINST, &stored_b);
        let d = change(&b, 3, 7);
        let stored_d = compress_against(&d, &[hb], &b).unwrap();
        let hd = insert_object(&c, &d, AGAINST, &stored_d);
        let cache = Cache::default();
        assert_eq!(
            decode_object(&c, &cache, &hd, AGAINST, stored_d.clone()).unwrap(),
            d
        );
        assert_eq!(
            decode_object(&c, &cache, &hb, AGAINST, stored_b).unwrap(),
            b
        );
        // Through the object table, address checked.
        assert_eq!(
            super::super::objects::check(&c, &Cache::default(), &hd).unwrap(),
            "x"
        );

        let contains = |h: &ObjectHash| super::super::objects::contains(&c, &Cache::default(), h);
        assert!(contains(&hd).unwrap());
        // b's row gone: d cannot be read (so it is not stored, as far as readers go), and the
        // error names b; a is untouched.
        c.execute("DELETE FROM objects WHERE hash = ?1", [&hb.0[..]])
            .unwrap();
        assert!(!contains(&hd).unwrap() && contains(&ha).unwrap());
        match decode_object(&c, &Cache::default(), &hd, AGAINST, stored_d) {
            Err(Error::Store(StoreError::Corrupt { hash, reason })) => {
                assert_eq!(hash, hd);
                assert!(
                    reason.contains(&hb.short()) && reason.contains("missing"),
                    "{reason}"
                );
            }
            other => panic!("{:?}", other.map(|v| v.len())),
        }

        // An object stored against itself (only damage can make one): refused, not a loop.
        let e = rows(4, 1000);
        let he = ObjectHash::of("x", &e);
        let looped = compress_against(&e, &[he], &e).unwrap();
        insert_object(&c, &e, AGAINST, &looped);
        match decode_object(&c, &Cache::default(), &he, AGAINST, looped) {
            Err(Error::Store(StoreError::Corrupt { reason, .. })) => {
                assert!(reason.contains("nest deeper"), "{reason}")
            }
            other => panic!("{:?}", other.map(|v| v.len())),
        }
    }
}
