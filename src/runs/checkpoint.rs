//! How an iteration's checkpoint is stored (docs/store.md): which full checkpoints keep their
//! bytes ([`keeps_full`]; the others are derived, rebuilt by re-training), and kept ones
//! stored against the previous kept one's objects ([`prepare_checkpoint`]).

use rayon::prelude::*;

use crate::store::Encoded;
use crate::store::{ObjectHash, Prepared};

/// Whether the bytes of iteration `i`'s full checkpoint are kept: every `every`-th full
/// checkpoint (counting `i / checkpoint_every`) and the run's last planned iteration
/// ([`crate::learners::Learner::KEEP_FULL_EVERY`]).
pub(super) fn keeps_full(every: u32, checkpoint_every: u32, i: u32, planned: u32) -> bool {
    i == planned || (i / checkpoint_every.max(1)).is_multiple_of(every.max(1))
}

/// A kept checkpoint is stored against the previous kept one's objects (codec 4), except
/// every this-many-th, stored on its own: reading a kept checkpoint then decodes at most
/// `KEY_EVERY - 1` earlier ones. Measured on the whole PPPP literature run (docs/store.md,
/// "Checkpoints against the previous one"): 5 keeps its table bytes under the 1 MB an
/// iteration of issue 10.
const KEY_EVERY: u32 = 5;

/// The objects (root left out) of the last kept checkpoint this loop stored, and how many
/// kept checkpoints back its chain of references reaches one stored on its own.
pub(super) struct DeltaBase {
    depth: u32,
    objects: Vec<(ObjectHash, Vec<u8>)>,
}

/// The stored forms of a checkpoint's objects, chosen in parallel off the writer thread. A
/// kept checkpoint's object at position k is tried against the last kept checkpoint's objects
/// at positions k - 3 ..= k: a learner lists a checkpoint's objects in a stable order (a
/// table's chunks by key), and rows added since only shift later ones to higher positions
/// (early in a PPPP run, 20 iterations add about three chunks of rows; adding k + 1 saved
/// nothing, measured). Only how bytes are kept depends on this, never an address: a resumed
/// run starts a new chain.
pub(super) fn prepare_checkpoint(
    objects: Vec<Encoded>,
    root: ObjectHash,
    kept: bool,
    last: &mut Option<DeltaBase>,
) -> Vec<Prepared> {
    if !kept {
        return objects.into_iter().map(crate::store::prepare).collect();
    }
    let base = last.take().filter(|l| l.depth + 1 < KEY_EVERY);
    let keep: Vec<(ObjectHash, Vec<u8>)> = objects
        .iter()
        .filter(|o| o.hash != root)
        .map(|o| (o.hash, o.bytes.clone()))
        .collect();
    let prepared = objects
        .into_par_iter()
        .enumerate()
        .map(|(k, e)| match &base {
            Some(b) if e.hash != root => {
                let hi = (k + 1).min(b.objects.len());
                let refs: Vec<(ObjectHash, &[u8])> = b.objects[k.saturating_sub(3).min(hi)..hi]
                    .iter()
                    .map(|(h, v)| (*h, v.as_slice()))
                    .collect();
                crate::store::prepare_against(e, &refs)
            }
            _ => crate::store::prepare(e),
        })
        .collect();
    *last = Some(DeltaBase {
        depth: base.map_or(0, |b| b.depth + 1),
        objects: keep,
    });
    prepared
}
