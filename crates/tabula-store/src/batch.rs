//! Reading many objects at once: their rows, and the rows of everything they are stored
//! against, are read on the connection, then decoded in parallel, level by level (an object
//! after the objects it references). Private to the store.
//!
//! Why: a PPPP checkpoint is 16 chunks of 2 MiB, each stored against four chunks of the
//! previous kept checkpoint, itself against the one before, up to four deep (docs/store.md
//! "Checkpoints against the previous one"). Read one object at a time, that chain decoded on
//! one core and assembled each chunk's four references in a prefix buffer (8 MiB copied per
//! chunk). Here each level decodes into one buffer, chunk after chunk, so the references of a
//! chunk (consecutive chunks of the level below, in order) are already one slice: no copy.
//!
//! This path only ever succeeds or steps aside: anything unusual (a missing reference, a
//! damaged frame, a form it does not handle, a record that does not hash to its address)
//! returns `None`, and the caller reads the objects one by one, whose errors name what is
//! wrong. So it adds no error of its own, and what it returns is checked exactly as a single
//! read is: every requested object against its address.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;
use rusqlite::{Connection, OptionalExtension};

use super::ObjectHash;
use super::objects::Error;
use super::packs::{self, Cache};

/// Where a reference's decoded bytes are.
enum Source {
    /// Another object of this batch.
    Node(usize),
    /// Bytes the connection's cache kept from an earlier read.
    Cached(Arc<Vec<u8>>),
}

/// The stored bytes of a batch, copied out of SQLite into blocks of [`BLOCK`] bytes (a few
/// large allocations rather than one per object: fewer fresh pages to fault in).
#[derive(Default)]
struct Blocks(Vec<Vec<u8>>);

/// The size of a block (an object larger than this gets a block of its own).
const BLOCK: usize = 16 << 20;

impl Blocks {
    /// Copies `b` in; returns where it lies.
    fn put(&mut self, b: &[u8]) -> Place {
        let fits = self
            .0
            .last()
            .is_some_and(|last| last.capacity() - last.len() >= b.len());
        if !fits {
            self.0.push(Vec::with_capacity(BLOCK.max(b.len())));
        }
        let block = self.0.len() - 1;
        let last = &mut self.0[block];
        let at = last.len();
        last.extend_from_slice(b);
        Place {
            block,
            at,
            len: b.len(),
        }
    }

    fn get(&self, p: &Place) -> &[u8] {
        &self.0[p.block][p.at..p.at + p.len]
    }
}

/// Where an object's stored bytes lie in [`Blocks`].
struct Place {
    block: usize,
    at: usize,
    len: usize,
}

/// One object of the batch: requested, or referenced by one.
struct Node {
    codec: i64,
    stored: Place,
    /// Codec 4: where the frame starts in `stored`, and its references in order.
    frame_at: usize,
    refs: Vec<Source>,
    /// Decoded size (as the frame states it, checked as it is decoded).
    size: usize,
    /// 0 for an object that references no other of the batch, else one more than the
    /// highest of its references.
    level: usize,
    /// Offset of its decoded bytes in its level's buffer.
    at: usize,
}

/// Reads the objects `hashes` (all of kind `kind`) and everything they are stored against,
/// decodes them, then applies `f` to each requested object's decoded bytes, in parallel; the
/// results in the order of `hashes`. `Ok(None)`: read them one by one instead (see the
/// module docs).
pub(super) fn decode_many<T: Send>(
    conn: &Connection,
    cache: &Cache,
    kind: &str,
    hashes: &[ObjectHash],
    f: impl Fn(&ObjectHash, &[u8]) -> Option<T> + Sync,
) -> Result<Option<Vec<T>>, Error> {
    let Some(mut batch) = Batch::read_roots(conn, kind, hashes)? else {
        return Ok(None);
    };
    if !batch.read_references(conn, cache)? || !assign_levels(&mut batch.nodes) {
        return Ok(None);
    }
    let Batch {
        blocks,
        mut nodes,
        of_root,
        ..
    } = batch;
    let (last_read, totals) = lay_out(&mut nodes, &of_root);
    let Some(levels) = decode_levels(&nodes, &blocks, &last_read, &totals) else {
        return Ok(None);
    };
    drop(blocks);
    let out: Option<Vec<T>> = of_root
        .par_iter()
        .zip(hashes.par_iter())
        .map(|(&i, h)| {
            let n = &nodes[i];
            f(h, &levels[n.level][n.at..n.at + n.size])
        })
        .collect();
    Ok(out)
}

/// The objects of a batch as they are read, before decoding.
struct Batch {
    blocks: Blocks,
    /// In the order they are met: the requested ones, then breadth first.
    nodes: Vec<Node>,
    /// Lookups only: the batch's order is the order objects are met in, never the map's.
    index: HashMap<ObjectHash, usize>,
    /// The node of each requested object, in the order of the request.
    of_root: Vec<usize>,
}

impl Batch {
    /// Reads the rows of the requested objects (a duplicate is one node); `None` when one is
    /// missing (a pack member, or not stored) or of another kind.
    fn read_roots(
        conn: &Connection,
        kind: &str,
        hashes: &[ObjectHash],
    ) -> Result<Option<Batch>, Error> {
        let mut b = Batch {
            blocks: Blocks::default(),
            nodes: Vec::with_capacity(hashes.len()),
            index: HashMap::new(),
            of_root: Vec::with_capacity(hashes.len()),
        };
        for h in hashes {
            if let Some(&i) = b.index.get(h) {
                b.of_root.push(i);
                continue;
            }
            let Some((codec, stored)) = read_row(conn, &mut b.blocks, h, Some(kind))? else {
                return Ok(None);
            };
            b.nodes.push(node(codec, stored));
            b.index.insert(*h, b.nodes.len() - 1);
            b.of_root.push(b.nodes.len() - 1);
        }
        Ok(Some(b))
    }

    /// Reads, breadth first, the rows of everything the batch's objects are stored against
    /// and notes each node's references and decoded size; false to step aside. Breadth
    /// first: a level's objects are met in the order of the objects that reference them, so
    /// a checkpoint's chunks lie in chunk order and each chunk's references (chunks k-3..=k
    /// of the previous checkpoint) are one run of the level below.
    fn read_references(&mut self, conn: &Connection, cache: &Cache) -> Result<bool, Error> {
        let mut k = 0;
        while k < self.nodes.len() {
            match self.nodes[k].codec {
                packs::PLAIN | packs::ZSTD | packs::SHUFFLED => {}
                packs::AGAINST => {
                    if !self.read_against(conn, cache, k)? {
                        return Ok(false);
                    }
                }
                // Elided objects and unknown codecs: one by one.
                _ => return Ok(false),
            }
            let Some(size) = stated_size(&self.nodes[k], &self.blocks) else {
                return Ok(false);
            };
            self.nodes[k].size = size;
            k += 1;
        }
        Ok(true)
    }

    /// Codec 4: parses node `k`'s references, each a node of the batch (added, with its row,
    /// when new) or bytes the cache kept; false to step aside.
    fn read_against(&mut self, conn: &Connection, cache: &Cache, k: usize) -> Result<bool, Error> {
        let stored = self.blocks.get(&self.nodes[k].stored);
        let Some((refs, frame)) = packs::parse_against(stored) else {
            return Ok(false);
        };
        let frame_at = stored.len() - frame.len();
        let mut sources = Vec::with_capacity(refs.len());
        for r in refs {
            let source = match self.index.get(&r) {
                Some(&j) => Source::Node(j),
                None => match packs::cached_reference(cache, &r) {
                    Some(bytes) => Source::Cached(bytes),
                    None => {
                        let Some((codec, stored)) = read_row(conn, &mut self.blocks, &r, None)?
                        else {
                            return Ok(false);
                        };
                        self.nodes.push(node(codec, stored));
                        self.index.insert(r, self.nodes.len() - 1);
                        Source::Node(self.nodes.len() - 1)
                    }
                },
            };
            sources.push(source);
        }
        self.nodes[k].frame_at = frame_at;
        self.nodes[k].refs = sources;
        Ok(true)
    }
}

/// Places each node's decoded bytes in its level's buffer (sets `at`); returns, for each
/// level, the last level that reads it (`usize::MAX` for the requested objects' levels, read
/// at the end) and its buffer's size.
fn lay_out(nodes: &mut [Node], of_root: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let top = nodes.iter().map(|n| n.level).max().unwrap_or(0);
    let mut last_read = vec![0usize; top + 1];
    for n in nodes.iter() {
        for r in &n.refs {
            if let Source::Node(j) = r {
                let l = nodes[*j].level;
                last_read[l] = last_read[l].max(n.level);
            }
        }
    }
    for &i in of_root {
        last_read[nodes[i].level] = usize::MAX;
    }
    let mut totals = vec![0usize; top + 1];
    for n in nodes.iter_mut() {
        n.at = totals[n.level];
        totals[n.level] += n.size;
    }
    (last_read, totals)
}

/// Decodes level after level, each level's nodes in parallel into one buffer; the buffers
/// (those of levels read only by others emptied); `None` on any failure.
fn decode_levels(
    nodes: &[Node],
    blocks: &Blocks,
    last_read: &[usize],
    totals: &[usize],
) -> Option<Vec<Vec<u8>>> {
    // A level's buffer is handed on to a later level once nothing reads it (memory already
    // touched, not fresh pages).
    let mut levels: Vec<Vec<u8>> = totals.iter().map(|_| Vec::new()).collect();
    let mut spare: Vec<Vec<u8>> = Vec::new();
    for (level, &total) in totals.iter().enumerate() {
        // A spare buffer too small is dropped, not grown (growing would copy its old bytes).
        let mut buf = match spare.pop() {
            Some(b) if b.capacity() >= total => b,
            _ => Vec::with_capacity(total),
        };
        buf.clear();
        buf.resize(total, 0);
        let (below, _) = levels.split_at(level);
        let mut parts: Vec<(&Node, &mut [u8])> = Vec::new();
        let mut rest: &mut [u8] = &mut buf;
        for n in nodes.iter().filter(|n| n.level == level) {
            let (part, tail) = rest.split_at_mut(n.size);
            parts.push((n, part));
            rest = tail;
        }
        let ok = parts
            .into_par_iter()
            .all(|(n, out)| decode_into(n, blocks.get(&n.stored), out, nodes, below));
        if !ok {
            return None;
        }
        levels[level] = buf;
        for (l, last) in last_read.iter().enumerate().take(level + 1) {
            if *last <= level && !levels[l].is_empty() {
                spare.push(std::mem::take(&mut levels[l]));
            }
        }
    }
    Some(levels)
}

/// The codec of object `hash`'s row and where its stored bytes now lie in `blocks`; `None`
/// when it has no row, or, with `kind`, a row of another kind. `bytes` is asked for before
/// `codec`, which sits behind it (schema/0010).
fn read_row(
    conn: &Connection,
    blocks: &mut Blocks,
    hash: &ObjectHash,
    kind: Option<&str>,
) -> Result<Option<(i64, Place)>, Error> {
    let row = conn
        .prepare_cached("SELECT kind, bytes, codec FROM objects WHERE hash = ?1")?
        .query_row([&hash.0[..]], |r| {
            if let Some(k) = kind
                && r.get_ref(0)?.as_str()? != k
            {
                return Ok(None);
            }
            Ok(Some((r.get(2)?, blocks.put(r.get_ref(1)?.as_blob()?))))
        })
        .optional()?;
    Ok(row.flatten())
}

fn node(codec: i64, stored: Place) -> Node {
    Node {
        codec,
        stored,
        frame_at: 0,
        refs: Vec::new(),
        size: 0,
        level: 0,
        at: 0,
    }
}

/// The decoded size of a node's bytes: a frame's stated size when plausible.
fn stated_size(n: &Node, blocks: &Blocks) -> Option<usize> {
    let stored = blocks.get(&n.stored);
    let frame = match n.codec {
        packs::PLAIN => return Some(stored.len()),
        packs::AGAINST => &stored[n.frame_at..],
        _ => stored,
    };
    packs::stated_size(frame)
}

/// Levels by relaxation; false when references nest deeper than [`packs::MAX_DEPTH`] (a
/// loop among references never settles, so it is caught here too).
fn assign_levels(nodes: &mut [Node]) -> bool {
    for _ in 0..=packs::MAX_DEPTH + 1 {
        let mut changed = false;
        for i in 0..nodes.len() {
            let level = nodes[i]
                .refs
                .iter()
                .filter_map(|r| match r {
                    Source::Node(j) => Some(nodes[*j].level + 1),
                    Source::Cached(_) => None,
                })
                .max()
                .unwrap_or(0);
            if level > packs::MAX_DEPTH as usize {
                return false;
            }
            if level != nodes[i].level {
                nodes[i].level = level;
                changed = true;
            }
        }
        if !changed {
            return true;
        }
    }
    false
}

/// Decodes one node into `out` (exactly its stated size); false on any failure.
fn decode_into(n: &Node, stored: &[u8], out: &mut [u8], nodes: &[Node], below: &[Vec<u8>]) -> bool {
    match n.codec {
        packs::PLAIN => {
            out.copy_from_slice(stored);
            true
        }
        packs::ZSTD => {
            matches!(zstd::zstd_safe::decompress(out, stored), Ok(k) if k == out.len())
        }
        packs::SHUFFLED => {
            let mut planes = vec![0u8; out.len()];
            if !matches!(zstd::zstd_safe::decompress(&mut planes[..], stored), Ok(k) if k == out.len())
            {
                return false;
            }
            packs::unshuffle_into(&planes, out);
            true
        }
        packs::AGAINST => {
            let bytes_of = |s| bytes_of(s, nodes, below);
            // One slice when the references lie side by side, in order, in one level.
            let mut run: Option<(usize, usize, usize)> = None;
            let mut contiguous = true;
            for s in &n.refs {
                match (bytes_of(s), run) {
                    ((Some((l, at)), b), None) => run = Some((l, at, at + b.len())),
                    ((Some((l, at)), b), Some((rl, start, end))) if rl == l && at == end => {
                        run = Some((l, start, end + b.len()))
                    }
                    _ => {
                        contiguous = false;
                        break;
                    }
                }
            }
            let copied: Vec<u8>;
            let prefix: &[u8] = match run {
                Some((l, start, end)) if contiguous => &below[l][start..end],
                _ if n.refs.is_empty() => &[],
                _ => {
                    copied = n.refs.iter().flat_map(|s| bytes_of(s).1).copied().collect();
                    &copied
                }
            };
            packs::decompress_against(&stored[n.frame_at..], prefix, out).is_ok()
        }
        _ => false,
    }
}

/// A reference's decoded bytes, and its (level, offset) when it is a node of the batch.
fn bytes_of<'a>(
    s: &'a Source,
    nodes: &[Node],
    below: &'a [Vec<u8>],
) -> (Option<(usize, usize)>, &'a [u8]) {
    match s {
        Source::Node(j) => {
            let m = &nodes[*j];
            (Some((m.level, m.at)), &below[m.level][m.at..m.at + m.size])
        }
        Source::Cached(b) => (None, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encoded;
    use crate::{Record, Store, prepare, prepare_against};
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Rows(Vec<u64>);

    impl Record for Rows {
        const KIND: &'static str = "test-rows/v1";
    }

    /// `n` pseudo-random words (a fixed LCG), changed where `k % every == phase`.
    fn words(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                x >> 11
            })
            .collect()
    }

    fn changed(base: &Rows, seed: u64, every: usize) -> Rows {
        let fresh = words(seed, base.0.len());
        Rows(
            base.0
                .iter()
                .zip(fresh)
                .enumerate()
                .map(|(k, (&b, f))| if (k / 41) % every == 0 { f } else { b })
                .collect(),
        )
    }

    /// Three levels of six objects, each of the upper two against objects k-3..=k of the
    /// level below (as kept checkpoints are), one against references out of order, one
    /// against a single reference.
    fn chain(store: &mut Store) -> (Vec<ObjectHash>, Vec<Rows>) {
        let mut hashes = Vec::new();
        let mut records = Vec::new();
        let mut below: Vec<(ObjectHash, Vec<u8>)> = Vec::new();
        for level in 0..3u64 {
            let mut here = Vec::new();
            for k in 0..6usize {
                let r = match below.is_empty() {
                    true => Rows(words(100 + k as u64, 4100)),
                    false => changed(
                        &records[records.len() - 6 + k - here.len()],
                        level * 10 + k as u64,
                        5,
                    ),
                };
                let e = Encoded::of(&r).unwrap();
                let refs: Vec<(ObjectHash, &[u8])> = match (level, k) {
                    (0, _) => Vec::new(),
                    (_, 4) => vec![(below[4].0, &below[4].1[..]), (below[1].0, &below[1].1[..])],
                    (_, 5) => vec![(below[5].0, &below[5].1[..])],
                    _ => below[k.saturating_sub(3)..=k]
                        .iter()
                        .map(|(h, b)| (*h, &b[..]))
                        .collect(),
                };
                let p = match refs.is_empty() {
                    true => prepare(e.clone()),
                    false => prepare_against(e.clone(), &refs),
                };
                assert_eq!(
                    p.codec == packs::AGAINST,
                    level > 0,
                    "level {level} chunk {k}"
                );
                store.write(|w| w.put_prepared(&p)).unwrap();
                here.push((e.hash, e.bytes));
                hashes.push(e.hash);
                records.push(r);
            }
            below = here;
        }
        (hashes, records)
    }

    fn fresh() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        (dir, store)
    }

    /// The batch decodes what one-by-one reads decode, through every level, duplicates and
    /// lower-level objects in the request included, and does so itself (no fallback).
    #[test]
    fn a_batch_reads_what_single_reads_read() {
        let (_dir, mut store) = fresh();
        let (hashes, records) = chain(&mut store);
        let want: Vec<&ObjectHash> = vec![
            &hashes[12],
            &hashes[15],
            &hashes[17],
            &hashes[12],
            &hashes[3],
            &hashes[9],
        ];
        let request: Vec<ObjectHash> = want.iter().map(|h| **h).collect();
        let direct = decode_many(&store.conn, &store.packs, Rows::KIND, &request, |h, b| {
            (ObjectHash::of(Rows::KIND, b) == *h).then(|| b.to_vec())
        })
        .unwrap()
        .expect("the batch path decodes a sound chain");
        let many: Vec<Rows> = store.get_many(&request).unwrap();
        for ((h, bytes), r) in request.iter().zip(&direct).zip(&many) {
            let i = hashes.iter().position(|x| x == h).unwrap();
            assert_eq!(r, &records[i]);
            assert_eq!(bytes, &Encoded::of(&records[i]).unwrap().bytes);
            assert_eq!(r, &store.get::<Rows>(h).unwrap());
        }
    }

    /// A missing or damaged link, and a loop: the batch steps aside and the reads report
    /// what single reads report.
    #[test]
    fn a_broken_chain_gives_the_single_reads_errors() {
        let (_dir, mut store) = fresh();
        let (hashes, _) = chain(&mut store);
        let request = vec![hashes[13], hashes[16]];
        store
            .conn
            .execute("DELETE FROM objects WHERE hash = ?1", [&hashes[7].0[..]])
            .unwrap();
        let single = store.get::<Rows>(&hashes[13]).unwrap_err().to_string();
        assert!(single.contains("missing"), "{single}");
        assert_eq!(
            store.get_many::<Rows>(&request).unwrap_err().to_string(),
            single
        );

        // A frame damaged in the middle of the chain (level 1, object 3): its magic number.
        let (_dir, mut store) = fresh();
        let (hashes, _) = chain(&mut store);
        let stored: Vec<u8> = store
            .conn
            .query_row(
                "SELECT bytes FROM objects WHERE hash = ?1",
                [&hashes[9].0[..]],
                |r| r.get(0),
            )
            .unwrap();
        let (_, frame) = packs::parse_against(&stored).unwrap();
        let at = stored.len() - frame.len();
        let mut damaged = stored.clone();
        damaged[at] ^= 0xff;
        store
            .conn
            .execute(
                "UPDATE objects SET bytes = ?1 WHERE hash = ?2",
                rusqlite::params![damaged, &hashes[9].0[..]],
            )
            .unwrap();
        let single = store.get::<Rows>(&hashes[15]).unwrap_err().to_string();
        assert_eq!(
            store
                .get_many::<Rows>(&[hashes[15], hashes[14]])
                .unwrap_err()
                .to_string(),
            single
        );

        // An object stored against itself.
        let r = Rows(words(9, 3000));
        let e = Encoded::of(&r).unwrap();
        let looped = prepare_against(e.clone(), &[(e.hash, &e.bytes[..])]);
        // prepare_against leaves out a reference to itself; write the loop by hand.
        assert_ne!(looped.codec, packs::AGAINST);
        let frame = packs::compress_against(&e.bytes, &[e.hash], &e.bytes).unwrap();
        store
            .conn
            .execute(
                "INSERT INTO objects (hash, kind, size, codec, bytes) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![
                    &e.hash.0[..],
                    Rows::KIND,
                    e.bytes.len() as i64,
                    packs::AGAINST,
                    frame
                ],
            )
            .unwrap();
        let single = store.get::<Rows>(&e.hash).unwrap_err().to_string();
        assert!(single.contains("nest deeper"), "{single}");
        assert_eq!(
            store.get_many::<Rows>(&[e.hash]).unwrap_err().to_string(),
            single
        );
    }
}
