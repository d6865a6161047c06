//! Parallel loops over `0..n`, with rayon's machinery instantiated once for the whole library.
//!
//! Why: the driver, the evaluations and self-play are generic over the game and the learner
//! (seven games times three learners), and every `par_iter().map(..).collect()` written
//! inside them made its own copy of rayon's splitting, joining and collecting code for each
//! pair: a third of the library's LLVM IR was rayon's, compiled twice in every test build
//! (docs/conventions.md, "Parallel loops"). Here rayon runs one non-generic function,
//! [`for_each_range`], over a `dyn` body; the generic wrappers below only loop over a range
//! and keep its results, so a call site costs one small function per type, not rayon's tree.
//!
//! Results come back in index order and the first error is the one of the lowest index,
//! whatever the thread count or the scheduling: every item is computed (no early stop), so
//! which error is returned never depends on timing.

use std::ops::Range;
use std::sync::Mutex;

/// Runs `body` on disjoint ranges that together cover `0..n`, in parallel on rayon's current
/// pool. A range is split in halves while rayon's adaptive splitter asks for more pieces
/// (about one per thread, more when a piece is stolen) and it holds at least `2 * min_len`
/// items, as `(0..n).into_par_iter().with_min_len(min_len)` splits.
pub(crate) fn for_each_range(n: usize, min_len: usize, body: &(dyn Fn(Range<usize>) + Sync)) {
    use rayon::iter::ParallelIterator;
    let min = min_len.max(1);
    rayon::iter::split(0..n, |r: Range<usize>| {
        if r.len() < 2 * min {
            (r, None)
        } else {
            let mid = r.start + r.len() / 2;
            (r.start..mid, Some(mid..r.end))
        }
    })
    .for_each(body);
}

/// `f(i)` for every `i` in `0..n`, in parallel, in index order.
pub(crate) fn map<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    map_init(n, 1, || (), |(), i| f(i))
}

/// `f(state, i)` for every `i` in `0..n`, in parallel, in index order, with one `init()` per
/// range a thread takes (scratch buffers, a search tree: nothing that may change a result).
pub(crate) fn map_init<S, R: Send>(
    n: usize,
    min_len: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) -> R + Sync,
) -> Vec<R> {
    let parts: Mutex<Vec<(usize, Vec<R>)>> = Mutex::new(Vec::new());
    for_each_range(n, min_len, &|r: Range<usize>| {
        let mut state = init();
        let start = r.start;
        let out: Vec<R> = r.map(|i| f(&mut state, i)).collect();
        parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((start, out));
    });
    concat_in_order(parts.into_inner().unwrap_or_else(|e| e.into_inner()), n)
}

/// The parts' items in the order of their first index. Generic over the item only (not over
/// a call site's closures), and the sort is of plain index pairs: one instantiation of
/// the sort for the whole library.
fn concat_in_order<R>(parts: Vec<(usize, Vec<R>)>, n: usize) -> Vec<R> {
    let mut order: Vec<(usize, usize)> = parts.iter().enumerate().map(|(k, p)| (p.0, k)).collect();
    order.sort_unstable();
    let mut slots: Vec<Option<Vec<R>>> = parts.into_iter().map(|p| Some(p.1)).collect();
    let mut all = Vec::with_capacity(n);
    for (_, k) in order {
        all.extend(slots[k].take().unwrap_or_default());
    }
    all
}

/// [`map`] for fallible items: every item's result in index order, or the error of the
/// lowest index that failed.
pub(crate) fn try_map<R: Send, E: Send>(
    n: usize,
    f: impl Fn(usize) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    map(n, f).into_iter().collect()
}

/// [`map_init`] for fallible items: the error of the lowest index that failed.
pub(crate) fn try_map_init<S, R: Send, E: Send>(
    n: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    map_init(n, 1, init, f).into_iter().collect()
}

/// `f(i, xs[i])` for every item of `xs`, taken by value, in parallel, in index order.
pub(crate) fn map_owned<T: Send, R: Send>(xs: Vec<T>, f: impl Fn(usize, T) -> R + Sync) -> Vec<R> {
    let slots: Vec<Mutex<Option<T>>> = xs.into_iter().map(|x| Mutex::new(Some(x))).collect();
    map(slots.len(), |i| {
        let taken = slots[i].lock().unwrap_or_else(|e| e.into_inner()).take();
        f(i, taken.expect("for_each_range gives each index once"))
    })
}

/// The number of chunks of `len` items `chunk` at a time (the last may be shorter).
pub(crate) fn chunks(len: usize, chunk: usize) -> usize {
    len.div_ceil(chunk.max(1))
}

/// The `k`-th of `xs`'s chunks of `chunk` items (the last may be shorter).
pub(crate) fn chunk<T>(xs: &[T], chunk: usize, k: usize) -> &[T] {
    let c = chunk.max(1);
    &xs[k * c..((k + 1) * c).min(xs.len())]
}

/// CPU seconds the calling thread has used (0 where there is no thread clock): a rate over
/// it is not stretched by other work on the machine (the store writer's accounting, the
/// speed examples).
pub fn thread_cpu_seconds() -> f64 {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid, writable timespec; the call only writes it.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9;
        }
    }
    0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn ranges_cover_every_index_once_at_any_thread_count() {
        for threads in [1, 2, 5] {
            for (n, min_len) in [(0, 1), (1, 1), (7, 1), (1000, 1), (1000, 64), (33, 100)] {
                let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
                let ranges = AtomicUsize::new(0);
                pool(threads).install(|| {
                    for_each_range(n, min_len, &|r| {
                        ranges.fetch_add(1, Ordering::Relaxed);
                        assert!(r.len() >= min_len.min(n) || n < 2 * min_len);
                        for i in r {
                            hits[i].fetch_add(1, Ordering::Relaxed);
                        }
                    });
                });
                assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "n {n}");
                if n >= 2 * min_len && threads > 1 {
                    assert!(ranges.load(Ordering::Relaxed) > 1, "n {n} was not split");
                }
            }
        }
    }

    #[test]
    fn map_keeps_index_order_and_the_lowest_error() {
        for threads in [1, 3] {
            let squares = pool(threads).install(|| map(500, |i| i * i));
            assert_eq!(squares, (0..500).map(|i| i * i).collect::<Vec<_>>());
            let failed: Result<Vec<usize>, usize> = pool(threads)
                .install(|| try_map(500, |i| if i % 97 == 50 { Err(i) } else { Ok(i) }));
            assert_eq!(failed, Err(50));
            let inits = AtomicUsize::new(0);
            let sums = pool(threads).install(|| {
                map_init(
                    300,
                    10,
                    || {
                        inits.fetch_add(1, Ordering::Relaxed);
                        Vec::new()
                    },
                    |seen: &mut Vec<usize>, i| {
                        seen.push(i);
                        i + 1
                    },
                )
            });
            assert_eq!(sums, (1..=300).collect::<Vec<_>>());
            assert!(inits.load(Ordering::Relaxed) <= 30);
        }
    }

    #[test]
    fn chunks_cover_the_slice() {
        let xs: Vec<u32> = (0..10).collect();
        assert_eq!(chunks(xs.len(), 4), 3);
        assert_eq!(chunk(&xs, 4, 2), &[8, 9]);
        assert_eq!(chunks(0, 4), 0);
    }
}
