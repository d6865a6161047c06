//! [`Encoded`]: a record encoded for the store, its type erased.

use super::{ObjectHash, Record, StoreError};

/// An object encoded for the store with its address: a [`Record`] with its type erased, so a
/// learner's checkpoint records of any kind travel to the store writer together.
#[derive(Clone, Debug)]
pub struct Encoded {
    pub kind: &'static str,
    pub bytes: Vec<u8>,
    pub hash: ObjectHash,
}

impl Encoded {
    /// Encodes `record` (postcard) and computes its address.
    pub fn of<R: Record>(record: &R) -> Result<Encoded, StoreError> {
        let bytes = postcard::to_stdvec(record).map_err(|source| StoreError::Encode {
            kind: R::KIND,
            source,
        })?;
        Ok(Encoded {
            kind: R::KIND,
            hash: ObjectHash::of(R::KIND, &bytes),
            bytes,
        })
    }
}
