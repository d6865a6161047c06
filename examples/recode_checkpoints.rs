//! Re-codes the kept table checkpoints of a store written before codec 4 the way the run loop
//! now stores them (docs/store.md, "Checkpoints against the previous one"): each kept full
//! checkpoint's chunk k against the previous kept one's chunks k - 3 ..= k, every
//! `KEY_EVERY`-th on its own. Only stored forms change, never a record or an address. It is a
//! measuring tool: run it on a COPY of a store (it rewrites object rows in place), then
//! `VACUUM` the copy and compare sizes, or time `checkout` on it.
//!
//! ```sh
//! cp ppfull.db ppre.db
//! cargo run --release --example recode_checkpoints -- ppre.db [KEY_EVERY (5)]
//! sqlite3 ppre.db "VACUUM; SELECT * FROM object_forms"
//! ```

use tabula::learners::tabular::{SnapshotRecord, TableChunk};
use tabula::store::Encoded;
use tabula::store::{ObjectHash, Store, Value};

/// A checkpoint's chunks: address and record bytes, in order.
type Chunks = Vec<(ObjectHash, Vec<u8>)>;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = std::path::PathBuf::from(
        args.next()
            .ok_or_else(|| anyhow::anyhow!("usage: recode_checkpoints STORE-COPY [KEY_EVERY]"))?,
    );
    let key_every: u32 = args.next().map_or(Ok(5), |a| a.parse())?;
    // Opened for writing first: migrated to this build's schema.
    drop(Store::open(&path)?);
    let kept: Vec<(u32, ObjectHash)> = {
        let ro = Store::open_read_only(&path)?;
        let q = ro.query(
            "SELECT iteration, lower(hex(snapshot)) FROM iterations
             WHERE snapshot_kept = 1 AND snapshot_full = 1 ORDER BY run_id, iteration",
        )?;
        let mut out = Vec::new();
        for r in &q.rows {
            if let (Value::Integer(i), Value::Text(t)) = (&r[0], &r[1]) {
                out.push((*i as u32, t.parse().map_err(anyhow::Error::msg)?));
            }
        }
        out
    };
    let mut store = Store::open(&path)?;
    let raw = rusqlite::Connection::open(&path)?;
    // (depth, objects) of the previous kept checkpoint, as the run loop's `LastKept`.
    let mut last: Option<(u32, Chunks)> = None;
    for (iteration, snapshot) in kept {
        let s: SnapshotRecord = store.get(&snapshot)?;
        let mut objects = Vec::new();
        for c in &s.chunks {
            let chunk: TableChunk<u64> = store.get(c)?;
            objects.push(Encoded {
                kind: "table-chunk/v1",
                bytes: postcard::to_allocvec(&chunk)?,
                hash: *c,
            });
        }
        let base = last.take().filter(|l| l.0 + 1 < key_every);
        let keep: Chunks = objects.iter().map(|o| (o.hash, o.bytes.clone())).collect();
        if let Some((_, previous)) = &base {
            let prepared: Vec<_> = objects
                .into_iter()
                .enumerate()
                .map(|(k, e)| {
                    let hi = (k + 1).min(previous.len());
                    let refs: Vec<(ObjectHash, &[u8])> = previous[k.saturating_sub(3).min(hi)..hi]
                        .iter()
                        .map(|(h, v)| (*h, v.as_slice()))
                        .collect();
                    tabula::store::prepare_against(e, &refs)
                })
                .collect();
            for p in &prepared {
                raw.execute("DELETE FROM objects WHERE hash = ?1", [&p.hash.0[..]])?;
            }
            store.write(|w| {
                for p in &prepared {
                    w.put_prepared(p)?;
                }
                Ok(())
            })?;
        }
        let depth = base.map_or(0, |b| b.0 + 1);
        println!(
            "iteration {iteration}: {} chunks, depth {depth}",
            keep.len()
        );
        last = Some((depth, keep));
    }
    Ok(())
}
