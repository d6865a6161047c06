//! A global allocator that counts the heap allocations of the current thread (tests run on
//! several threads at once), for the tests that check a search does not allocate per
//! simulation. Included with `#[path]` by each test crate that needs it.

struct Counting;

thread_local! {
    static ALLOCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

// SAFETY: every method hands the call to the system allocator unchanged; the count is a
// thread-local cell, which allocates nothing.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: the caller's contract for `alloc`, passed on unchanged.
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: `p` came from this allocator, that is from `System`, with layout `l`.
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: `p` came from `System` with layout `l`: the caller's contract, passed on.
        unsafe { std::alloc::System.realloc(p, l, n) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

pub(crate) fn allocations() -> u64 {
    ALLOCS.with(|a| a.get())
}
