//! A run's chain of iteration records (each names the previous one; the last one's address
//! is the run's head), read whole ([`chain`]) or lazily from an iteration down ([`Chain`]).

use super::{IterationRecord, RunError, RunRecord, line_of};
use crate::store::{ObjectHash, RunRow, Store, address};

/// The iteration records of the chain ending at `head`, oldest first.
pub fn chain(store: &Store, head: Option<ObjectHash>) -> Result<Vec<IterationRecord>, RunError> {
    let mut out = Vec::new();
    let mut cur = head;
    while let Some(h) = cur {
        let r: IterationRecord = store.get(&h)?;
        cur = r.previous;
        out.push(r);
    }
    out.reverse();
    for (k, r) in out.iter().enumerate() {
        if r.iteration != k as u32 + 1 {
            return Err(RunError::Inconsistent(format!(
                "iteration record {} says iteration {}, but it is number {} of its chain",
                address(r)?.0,
                r.iteration,
                k + 1
            )));
        }
    }
    Ok(out)
}

/// The iteration records of one chain, 1-based: a whole chain already read, or one read from
/// its top down only as far as a reader asks ([`Chain::down_from`]). `RUN@I` readers need
/// the records from I down to the stored checkpoint they restore from and its window, not the
/// whole chain: each elided record re-hashes its packs' games when read (docs/store.md,
/// "Elided iteration records"), which made reading the 280 records under a late PPPP
/// iteration cost half a second.
pub(crate) enum Chain<'a> {
    Whole(&'a [IterationRecord]),
    Down {
        store: &'a Store,
        top: u32,
        /// Newest first: iterations `top`, `top - 1`, ...
        read: Vec<IterationRecord>,
        /// The record below the lowest read (`None`: the chain ends there).
        next: Option<ObjectHash>,
    },
}

impl<'a> Chain<'a> {
    /// The chain whose iteration `top` has the record `hash`, read lazily downwards.
    pub(crate) fn down_from(store: &'a Store, hash: ObjectHash, top: u32) -> Chain<'a> {
        Chain::Down {
            store,
            top,
            read: Vec::new(),
            next: Some(hash),
        }
    }

    /// Iteration `i`'s record (1 <= i <= the top), reading the records above it first. Each
    /// record read must carry its place's iteration number, and only the first may have no
    /// previous record.
    pub(crate) fn get(&mut self, i: u32) -> Result<&IterationRecord, RunError> {
        match self {
            Chain::Whole(all) => {
                if i == 0 || i as usize > all.len() {
                    return Err(RunError::Usage(format!(
                        "iteration {i} is not in a chain of {} iteration records",
                        all.len()
                    )));
                }
                Ok(&all[i as usize - 1])
            }
            Chain::Down {
                store,
                top,
                read,
                next,
            } => {
                if i == 0 || i > *top {
                    return Err(RunError::Usage(format!(
                        "iteration {i} is not in a chain of {top} iteration records"
                    )));
                }
                while *top - (read.len() as u32) >= i {
                    let want = *top - read.len() as u32;
                    let Some(h) = *next else {
                        return Err(RunError::Inconsistent(format!(
                            "the chain of iteration records ends above iteration {want}"
                        )));
                    };
                    let r: IterationRecord = store.get(&h)?;
                    if r.iteration != want || (want == 1) != r.previous.is_none() {
                        return Err(RunError::Inconsistent(format!(
                            "iteration record {h} says iteration {} (previous {}), but it is \
                             number {want} of its chain",
                            r.iteration,
                            if r.previous.is_some() { "set" } else { "none" }
                        )));
                    }
                    *next = r.previous;
                    read.push(r);
                }
                Ok(&read[(*top - i) as usize])
            }
        }
    }

    /// The snapshot after iteration `i` (`None` for 0, the untrained model).
    pub(super) fn snapshot(&mut self, i: u32) -> Result<Option<ObjectHash>, RunError> {
        Ok(if i == 0 {
            None
        } else {
            Some(self.get(i)?.snapshot)
        })
    }
}

/// The iteration records 1..=`i` of run `row` (its run record `record`; none for 0), read
/// lazily from iteration `i`'s record down ([`Chain`]): that record is the one in `i`'s own
/// `iterations` row when the run has one and it carries the run's line, else the one reached
/// from the run's head. Reading only the records `RUN@I` needs matters: each iteration
/// record's list of games is re-hashed from its packs when read (docs/store.md, "Elided
/// iteration records"), so walking a 300-iteration run from its head to read iteration 19 cost
/// most of a `checkout`. fsck checks the rows against the head's chain.
pub(super) fn chain_to<'s>(
    store: &'s Store,
    row: &RunRow,
    record: &RunRecord,
    i: u32,
) -> Result<Chain<'s>, RunError> {
    let whole = || Chain::Whole(&[]);
    if i == 0 {
        return Ok(whole());
    }
    if i < row.iterations_done {
        let own = store
            .iteration_hashes(row.id)?
            .into_iter()
            .find(|(k, _)| *k == i);
        if let Some((_, h)) = own {
            let mut records = Chain::down_from(store, h, i);
            if records.get(i)?.run == address(&line_of(record))?.0 {
                return Ok(records);
            }
        }
    }
    let Some(head) = row.head else {
        return Err(RunError::Inconsistent(format!(
            "run {} has {} committed iterations but no head",
            row.id, row.iterations_done
        )));
    };
    let mut records = Chain::down_from(store, head, row.iterations_done);
    records.get(i)?;
    Ok(records)
}
