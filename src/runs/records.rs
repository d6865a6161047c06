//! The records of a run (docs/store.md), versioned postcard structs addressed by blake3.
//!
//! - `run/v1` ([`RunRecord`]): variant, seed, the settings' hash, and the parent for branches.
//!   Its hash is the run's identity.
//! - `settings/v1` ([`crate::runs::Settings`]): everything that decides the results.
//! - `game/v1` ([`crate::game_record::GameRecord`]): each self-play game, visit counts included.
//! - the learner's checkpoint (its root is the iteration's `snapshot`) and evaluation
//!   records: each learner defines its own (e.g. [`crate::learners::tabular::records`]); the
//!   driver handles them as encoded objects and addresses.
//! - `iteration/v1` ([`IterationRecord`]): the run's line (its run record without the
//!   parent), the iteration number, the settings in
//!   force, its games in order, its snapshot and evaluation, and the previous iteration
//!   record. The last one's hash is the run's head.
//! - `not-measured/v1` ([`NotMeasured`]): the evaluation an iteration names when the
//!   evaluation interval (`[eval] every`) skips it; one object, empty, for every such
//!   iteration.
//!
//! Nothing machine-dependent (times, thread counts, paths, hosts, engine version) enters any
//! of them; those are plain columns of the store's tables.

use serde::{Deserialize, Serialize};

use crate::store::{ObjectHash, Record};

/// A run's identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Canonical variant name.
    pub variant: String,
    pub seed: u64,
    /// The `settings/v1` record the run starts with.
    pub settings: ObjectHash,
    /// For a branch: the parent run and the iteration it branches at.
    pub parent: Option<Parent>,
}

/// Where a branch leaves its parent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parent {
    /// The parent's `run/v1` hash.
    pub run: ObjectHash,
    /// The parent's iteration the branch continues from (its first I iterations are shared).
    pub iteration: u32,
    /// The parent's `iteration/v1` record of that iteration.
    pub(crate) iteration_record: ObjectHash,
    /// The settings changed, as `key=value` texts, in the order given.
    pub overrides: Vec<String>,
}

impl Record for RunRecord {
    const KIND: &'static str = "run/v1";
}

/// One iteration of a run; the last one's hash is the run's head.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    /// The run's *line*: the hash of its `run/v1` record with `parent` left out (for a root
    /// run, its run record; for a branch, a record stored beside its own). So a branch with
    /// no overrides and its parent's seed makes its parent's records.
    pub run: ObjectHash,
    /// 1-based.
    pub iteration: u32,
    /// The `settings/v1` in force.
    pub settings: ObjectHash,
    /// The iteration's self-play games, in game order.
    pub games: Vec<ObjectHash>,
    /// The root of the learner's checkpoint after training (for tabular AlphaZero, the
    /// table's `table-snapshot/v1`).
    pub snapshot: ObjectHash,
    pub evaluation: ObjectHash,
    /// The previous iteration record (`None` for the first).
    pub previous: Option<ObjectHash>,
}

impl Record for IterationRecord {
    const KIND: &'static str = "iteration/v1";
}

/// The evaluation of an iteration that was not measured (`[eval] every = K` skips it;
/// docs/store.md, "Unmeasured iterations"). It has no fields, so its address is the same
/// for every such iteration ([`NotMeasured::hash`]): one stored object, and no `evaluations`
/// or `metrics` rows for the iteration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NotMeasured {}

impl Record for NotMeasured {
    const KIND: &'static str = "not-measured/v1";
}

impl NotMeasured {
    /// The record, encoded (no bytes: postcard writes nothing for a struct without fields).
    pub(crate) fn encoded() -> crate::store::Encoded {
        crate::store::Encoded {
            kind: Self::KIND,
            bytes: Vec::new(),
            hash: Self::hash(),
        }
    }

    /// Its address: what an unmeasured iteration's record names as its evaluation.
    pub(crate) fn hash() -> ObjectHash {
        ObjectHash::of(Self::KIND, &[])
    }

    /// Whether `evaluation` (an iteration record's) says the iteration was not measured.
    pub(crate) fn is(evaluation: &ObjectHash) -> bool {
        *evaluation == Self::hash()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-built encoding is postcard's, so `fsck` and `get` accept the object.
    #[test]
    fn not_measured_is_postcards_empty_record() {
        let e = crate::store::Encoded::of(&NotMeasured {}).unwrap();
        assert!(e.bytes.is_empty());
        assert_eq!(e.hash, NotMeasured::hash());
        assert_eq!(NotMeasured::encoded().bytes, e.bytes);
        assert!(NotMeasured::is(&e.hash));
    }
}
