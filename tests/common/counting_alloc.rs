//! A global allocator that counts the heap allocations of the current thread (tests run on
//! several threads at once), for the tests that check a search does not allocate per
//! simulation. Included with `#[path]` by each test crate that needs it.

struct Counting;

thread_local! {
    static ALLOCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        unsafe { std::alloc::System.realloc(p, l, n) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

pub fn allocations() -> u64 {
    ALLOCS.with(|a| a.get())
}
