//! Test helpers for the thread state (a fresh state, the shared first-touch bitmap, the
//! chunks a test thread flushed) and the state's own tests.

use super::*;
use std::cell::RefCell;

thread_local! {
    /// The chunks this test thread's states flushed, as written.
    pub(crate) static FLUSHED: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Words of the first-touch bitmap the tests share: pages below 65,536 (256 MiB of
/// addresses); each test keeps to pages of its own.
pub(crate) const TEST_BITMAP_WORDS: usize = 1024;

/// Installs the first-touch bitmap the tests share (the same one every time).
pub(crate) fn test_bitmap() -> &'static [AtomicU64] {
    static BITMAP: [AtomicU64; TEST_BITMAP_WORDS] =
        [const { AtomicU64::new(0) }; TEST_BITMAP_WORDS];
    TOUCHED_WORDS.store(TEST_BITMAP_WORDS as u64, Ordering::Relaxed);
    TOUCHED.store(BITMAP.as_ptr().cast_mut(), Ordering::Relaxed);
    &BITMAP
}

/// A fresh state of a thread that records (or aggregates), with pages of 4 KiB.
pub(crate) fn fresh_state(aggregate: bool, collapse: bool) -> Box<ThreadState> {
    // SAFETY: all zeros is a valid ThreadState (integers, atomics, a null pointer),
    // as `register_current` relies on for its mmap'd one.
    let mut s = unsafe { Box::<ThreadState>::new_zeroed().assume_init() };
    s.aggregate = aggregate;
    s.blocks.clear();
    s.collapse = collapse;
    s.last_key = u64::MAX;
    s.last_page = u64::MAX;
    s.page_shift = 12;
    s.settle();
    s
}

/// `flush` writes the header's memory as it is; readers decode it as `encode` lays
/// it out.
#[test]
fn the_headers_memory_is_its_wire_encoding() {
    let h = ChunkHeader {
        magic: wire::MAGIC,
        kind: wire::KIND_ACCESS,
        thread: 3,
        count: 4,
        t0: 5,
        t1: 6,
        extra: 7,
    };
    // SAFETY: ChunkHeader is repr(C), HEADER_BYTES long with no padding.
    let mem: &[u8] =
        unsafe { std::slice::from_raw_parts((&h as *const ChunkHeader).cast(), HEADER_BYTES) };
    assert_eq!(mem, &h.encode()[..]);
}
