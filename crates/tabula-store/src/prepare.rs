//! Work done without a store, off the writer thread: a record's address, and the form an
//! object or a pack of games will be stored in (docs/store.md "Packs and codecs").

use std::path::Path;

use super::{ObjectHash, PreparedPack, Record, Result, StoreError, objects, packs};

/// A record's address and encoded size, computed without a store (what `put` would return).
pub fn address<R: Record>(record: &R) -> Result<(ObjectHash, usize)> {
    match objects::encode(record) {
        Ok(bytes) => Ok((ObjectHash::of(R::KIND, &bytes), bytes.len())),
        Err(e) => Err(e.into_store_error(Path::new(""))),
    }
}

/// Prepares a batch of encoded records of one kind for [`Writer::add_packed_games`](super::Writer::add_packed_games):
/// compressed here, so the work can run beside self-play rather than on the writer thread.
/// `None` for an empty batch.
pub fn prepare_pack(records: &[super::Encoded]) -> Result<Option<PreparedPack>> {
    let Some(kind) = records.first().map(|r| r.kind) else {
        return Ok(None);
    };
    if records.iter().any(|r| r.kind != kind) {
        return Err(StoreError::Query("a pack holds records of one kind".into()));
    }
    let members: Vec<(ObjectHash, &[u8])> = records
        .iter()
        .map(|r| (r.hash, r.bytes.as_slice()))
        .collect();
    packs::prepare(kind, &members)
        .map(Some)
        .map_err(|e| e.into_store_error(Path::new("")))
}

/// An encoded object with the form the store will keep it in (compressed when that saves;
/// docs/store.md "Packs and codecs"), chosen by [`prepare`] off the writer thread.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub kind: &'static str,
    pub hash: ObjectHash,
    /// The record's encoded length.
    pub size: usize,
    pub(super) codec: i64,
    pub(super) stored: Vec<u8>,
}

/// Chooses how `e` is stored (see [`Prepared`]).
pub fn prepare(e: super::Encoded) -> Prepared {
    let size = e.bytes.len();
    let (codec, stored) = match packs::compress(&e.bytes) {
        Some(c) => c,
        None => (packs::PLAIN, e.bytes),
    };
    Prepared {
        kind: e.kind,
        hash: e.hash,
        size,
        codec,
        stored,
    }
}

/// [`prepare`], also trying `e` compressed against `refs` (objects already stored, with their
/// record bytes): codec 4, kept when it is the smallest form. A learner's kept checkpoint
/// against the previous kept one stores mostly the rows that changed (docs/store.md,
/// "Checkpoints against the previous one").
pub fn prepare_against(e: super::Encoded, refs: &[(ObjectHash, &[u8])]) -> Prepared {
    let refs: Vec<&(ObjectHash, &[u8])> = refs.iter().filter(|(h, _)| *h != e.hash).collect();
    let against = (!refs.is_empty())
        .then(|| {
            let hashes: Vec<ObjectHash> = refs.iter().map(|(h, _)| *h).collect();
            let mut prefix = Vec::with_capacity(refs.iter().map(|(_, b)| b.len()).sum());
            for (_, b) in &refs {
                prefix.extend_from_slice(b);
            }
            packs::compress_against(&e.bytes, &hashes, &prefix)
        })
        .flatten();
    let mut p = prepare(e);
    if let Some(a) = against
        && a.len() < p.stored.len()
    {
        p.codec = packs::AGAINST;
        p.stored = a;
    }
    p
}
