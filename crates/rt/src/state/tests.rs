//! Test helpers for the thread state (a fresh state, the shared first-touch bitmap, the
//! chunks a test thread flushed) and the state's own tests.

use super::*;
use std::cell::RefCell;

thread_local! {
    /// The chunks this test thread's states flushed, as written.
    pub(crate) static FLUSHED: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    /// The CPU yields this test thread made (`yield_cpu`).
    pub(crate) static YIELDS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
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

proptest::proptest! {
    /// The batch clock that skips reads until a thread could be due ends every batch at
    /// the same tick, with the same start, as one that reads every clock at every tick:
    /// however much of each tick the thread runs (at most the whole tick, since a
    /// thread's CPU clock runs no faster than the wall clock), and whether it is first
    /// seen with CPU time already run.
    #[test]
    fn skipping_reads_ends_the_batches_where_reading_every_tick_does(
        start in 0u64..20_000_000,
        runs in proptest::collection::vec(0u64..=1_000_000, 1..400),
    ) {
        const TICK: u64 = 1_000_000;
        const EVERY: u64 = 4_000_000;
        let (mut cpu, mut reads) = (start, 0);
        let (mut every_tick, mut skipping) = ((0, Vec::new()), (0, 0, Vec::new()));
        for (k, run) in runs.iter().enumerate() {
            cpu += run;
            let now = (k as u64 + 1) * TICK;
            let step = batch_step(now, every_tick.0, EVERY, || Some(cpu)).unwrap();
            every_tick.0 = step.since;
            if step.ends {
                every_tick.1.push((k, step.since));
            }
            if now >= skipping.1 {
                reads += 1;
                let step = batch_step(now, skipping.0, EVERY, || Some(cpu)).unwrap();
                (skipping.0, skipping.1) = (step.since, step.wall);
                if step.ends {
                    skipping.2.push((k, step.since));
                }
            }
        }
        proptest::prop_assert_eq!(&skipping.2, &every_tick.1);
        proptest::prop_assert!(reads <= runs.len());
    }
}

/// A thread that runs a quarter of each tick is read at half the ticks: after a batch
/// ends, after 4 ticks, then 3, 2.25, ... (each time the CPU time it is still short),
/// then at each tick near the end; and a gone thread's clock changes nothing.
#[test]
fn a_thread_running_a_quarter_of_the_time_is_read_every_few_ticks() {
    const TICK: u64 = 1_000_000;
    let (mut since, mut wall, mut reads, mut ends) = (0, 0, 0, 0);
    for k in 1..=400u64 {
        let (now, cpu) = (k * TICK, 7_000_000 + k * TICK / 4);
        if now < wall {
            continue;
        }
        reads += 1;
        let step = batch_step(now, since, 4 * TICK, || Some(cpu)).unwrap();
        (since, wall) = (step.since, step.wall);
        ends += step.ends as u32;
    }
    assert_eq!(
        ends, 24,
        "one batch per 16 ticks, the first starting when first seen"
    );
    assert_eq!(reads, 200, "8 reads per batch of 16 ticks");
    assert_eq!(batch_step(5, 1, 4, || None), None);
}
