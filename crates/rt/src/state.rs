//! Per-thread recording state and the hot path.
//!
//! Each thread owns one [`ThreadState`], reached through a thread-local pointer, so the
//! hot path takes no lock. States are never freed: they stay on a lock-free list so the
//! exit and crash handlers can flush every thread's last partial chunk.

use crate::aggregate::Lines;
use crate::collapse::{self, Read, Runs, WAYS};
use crate::io;
use crate::window::MODE_PAUSE;
use std::cell::Cell;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};
use tdmap_wire::raw::{self as wire, ChunkHeader, CHUNK_RECORDS, HEADER_BYTES, TICKS, TICK_EVERY};

/// Recording mode of a thread: record every access.
pub const MODE_RECORD: u8 = 0;
/// Recording mode: only count accesses (the overhead benchmark's baseline).
pub const MODE_COUNT: u8 = 1;
/// Recording mode: ignore accesses (after exit, a crash or a write failure).
pub const MODE_OFF: u8 = 2;

const LINE_SHIFT: u32 = 6;

mod lines;

/// One thread's buffer: the chunk header and clock ticks sit right before the records so
/// that a chunk leaves in a single `write`.
#[repr(C)]
pub struct ThreadState {
    hdr: ChunkHeader,
    ticks: [u64; TICKS],
    recs: [u64; CHUNK_RECORDS],
    len: usize,
    mode: AtomicU8,
    filter: bool,
    collapse: bool,
    /// Counts accesses per line instead of recording each (`aggregate.rs`).
    aggregate: bool,
    runs: Runs,
    lines: Lines,
    dead: AtomicBool,
    id: u32,
    last_key: u64,
    last_page: u64,
    filtered: u64,
    seen: u64,
    /// log2 of the page size ([`PAGE_SHIFT`] when the thread registered).
    page_shift: u32,
    next: *mut ThreadState,
}

// The records must follow the header without padding for the single-write flush.
const _: () = assert!(std::mem::size_of::<ChunkHeader>() == HEADER_BYTES);
const _: () = assert!(std::mem::offset_of!(ThreadState, ticks) == HEADER_BYTES);
const _: () = assert!(std::mem::offset_of!(ThreadState, recs) == HEADER_BYTES + TICKS * 8);

thread_local! {
    static CURRENT: Cell<*mut ThreadState> = const { Cell::new(null_mut()) };
    /// The id `pthread_create` reserved for this thread, u32::MAX if none.
    pub static PENDING_ID: Cell<u32> = const { Cell::new(u32::MAX) };
    /// Set while [`record_range`] runs on this thread.
    static RANGE_BUSY: Cell<bool> = const { Cell::new(false) };
}

/// The next thread id; ids follow thread creation order.
pub static NEXT_ID: AtomicU32 = AtomicU32::new(0);
static ALL: AtomicPtr<ThreadState> = AtomicPtr::new(null_mut());
/// Mode given to newly registered threads.
pub static DEFAULT_MODE: AtomicU8 = AtomicU8::new(MODE_RECORD);
/// Whether new threads drop repeated accesses to the same line.
pub static FILTER: AtomicBool = AtomicBool::new(false);
/// Whether new threads collapse repeated reads of a line into one record with a count.
pub static COLLAPSE: AtomicBool = AtomicBool::new(true);
/// Whether new threads count their accesses per line (`--model-only`, `aggregate.rs`).
pub static AGGREGATE: AtomicBool = AtomicBool::new(false);
/// log2 of the page size, for first-touch records.
pub static PAGE_SHIFT: AtomicU32 = AtomicU32::new(12);
/// One bit per page of the address space: set once some thread touched the page.
pub static TOUCHED: AtomicPtr<AtomicU64> = AtomicPtr::new(null_mut());
/// Number of `AtomicU64` words behind [`TOUCHED`].
pub static TOUCHED_WORDS: AtomicU64 = AtomicU64::new(0);

/// Records one access by the calling thread: the whole hot path.
///
/// An aggregating thread (`--model-only`) takes its own path, [`lines::access`]. Most
/// other accesses take [`record_body`] without its rare steps: the thread records, filters
/// nothing, stays on its last page and has room before the next clock tick or flush.
/// Those conditions are checked before anything changes, so the fast path keeps no
/// callee-saved registers and makes no call; every other access takes [`record_slow`],
/// which runs the same body with every step.
#[inline(always)]
pub fn record(addr: u64, size_log2: u32, write: bool) {
    let st = CURRENT.with(Cell::get);
    // SAFETY: a non-null `st` is this thread's own live state; other threads only touch
    // it in the exit and crash handlers, when this one is finished or about to die, and
    // its mode word, which is atomic.
    if let Some(s) = unsafe { st.as_mut() } {
        match s.mode.load(Ordering::Relaxed) {
            MODE_RECORD if s.aggregate => return lines::access(s, addr, size_log2, write),
            MODE_RECORD if fast_path(s, addr) => {
                return record_body::<false>(s, addr, size_log2, write)
            }
            MODE_COUNT => {
                s.seen += 1;
                return;
            }
            _ => {}
        }
    }
    record_slow(st, addr, size_log2, write);
}

/// Positions in each tick block at which the fast path may write: it writes one or two
/// words, none at a tick position (a multiple of TICK_EVERY), and leaves the room that
/// `record_body` keeps before a flush (CHUNK_RECORDS is a whole number of blocks).
const FAST_LAST: usize = TICK_EVERY - 3 - WAYS;
const _: () = assert!(CHUNK_RECORDS.is_multiple_of(TICK_EVERY) && FAST_LAST > 1);

/// Whether a recording thread's access can skip [`record_body`]'s rare steps (see
/// [`record`]): its page is the thread's last one or was touched before, so it is no
/// first touch.
#[inline(always)]
fn fast_path(s: &ThreadState, addr: u64) -> bool {
    let at = s.len % TICK_EVERY;
    let page = addr >> s.page_shift;
    !s.filter
        && at.wrapping_sub(1) < FAST_LAST
        && (page == s.last_page
            || touched_word(page).is_none_or(|(w, bit)| w.load(Ordering::Relaxed) & bit != 0))
}

/// Everything but the fast path: a thread's first access, counting, pausing or stopped
/// threads, and accesses that filter, touch a new page, read the clock or flush.
#[cold]
#[inline(never)]
fn record_slow(st: *mut ThreadState, addr: u64, size_log2: u32, write: bool) {
    let st = if st.is_null() { register_current() } else { st };
    // SAFETY: as in `record`; register_current gives this thread's state or null.
    let Some(s) = (unsafe { st.as_mut() }) else {
        return;
    };
    match s.mode.load(Ordering::Relaxed) {
        MODE_RECORD => {}
        MODE_COUNT => {
            s.seen += 1;
            return;
        }
        MODE_PAUSE => {
            if !resolve_pause(s) {
                return;
            }
        }
        _ => return,
    }
    if s.aggregate {
        return lines::access(s, addr, size_log2, write);
    }
    record_body::<true>(s, addr, size_log2, write);
}

/// A read that the spin collapse counted in an earlier record: a spinning thread yields
/// as often as a recording one, so that the threads it waits for get the CPU.
#[inline(always)]
fn collapsed(s: &ThreadState) {
    if s.seen.is_multiple_of(YIELD_EVERY as u64) {
        yield_cpu();
    }
}

/// Records one access of a recording thread that does not aggregate. With `ALL` false,
/// the steps that [`fast_path`] ruled out (filter, first touch, flush, clock) are left
/// out.
#[inline(always)]
fn record_body<const ALL: bool>(s: &mut ThreadState, addr: u64, size_log2: u32, write: bool) {
    s.seen += 1;
    let key = ((addr >> LINE_SHIFT) << 1) | write as u64;
    if ALL && s.filter && key == s.last_key {
        s.filtered += 1;
        return;
    }
    s.last_key = key;
    let line = addr >> LINE_SHIFT;
    let Some(run) = collapse_step(s, line, write) else {
        return;
    };
    let first = page_first::<ALL>(s, addr);
    // Room for the repeat word of a run this record ends, the record, the CPU word after
    // a first touch, and the repeat words of every run at the flush.
    if ALL && s.len + 3 + WAYS > CHUNK_RECORDS {
        flush(s);
    }
    let mut start = None;
    if let Some((way, watch)) = run {
        if let Some(w) = s.runs.end(way) {
            push::<ALL>(s, w);
        }
        start = Some((way, s.len as u32, watch));
    }
    push::<ALL>(s, wire::pack(addr, size_log2, write, first));
    if first {
        push_cpu(s);
    }
    // The new run starts at the record's position; last, so that its rare call (the
    // watch) is a tail call.
    if let Some((way, at, watch)) = start {
        s.runs.start(way, line, at, watch);
    }
}

/// The spin collapse's step for one access (the rule is in collapse.rs): a write ends
/// the runs on its line; a read already counted by a run is counted here and gives None;
/// otherwise Some, with the way and watch flag of a read that starts a record.
#[inline(always)]
fn collapse_step(s: &mut ThreadState, line: u64, write: bool) -> Option<Option<(usize, bool)>> {
    if s.collapse {
        if write {
            collapse::wrote(line);
        } else {
            match s.runs.read(line) {
                Read::Collapsed => {
                    collapsed(s);
                    return None;
                }
                Read::Record { way, watch } => return Some(Some((way, watch))),
            }
        }
    }
    Some(None)
}

/// A window closed (`--window`) since this thread's last access: flushes its chunk and
/// forgets what other threads' unseen writes in the gap could make wrong (collapse runs,
/// the filter's line), then takes the current phase's mode; true when recording, else
/// the access is counted here.
#[cold]
#[inline(never)]
fn resolve_pause(s: &mut ThreadState) -> bool {
    flush(s);
    s.runs = Runs::default();
    s.last_key = u64::MAX;
    s.last_page = u64::MAX;
    match crate::window::resolve(&s.mode) {
        Some(MODE_RECORD) => true,
        Some(_) => {
            s.seen += 1;
            false
        }
        None => false,
    }
}

/// Moves every thread in mode `from` to mode `to` (a window opening or closing); a
/// thread stopped meanwhile keeps `MODE_OFF`.
pub fn flip_modes(from: u8, to: u8) {
    for_each(|st| {
        // SAFETY: `st` came from the registry; `mode` is atomic.
        let mode = unsafe { &(*st).mode };
        let _ = mode.compare_exchange(from, to, Ordering::SeqCst, Ordering::SeqCst);
    });
}

/// Records the accesses of a library call (`memcpy`, `strlen`, gcc's `__tsan_*_range`)
/// to the `len` bytes at `addr`: one record per 64-byte line touched, each sized to the
/// bytes it covers (rounded up to a power of two), as if the call's copy loop had been
/// instrumented at line granularity. A range met while another is being recorded on the
/// same thread (a copy made by the runtime itself) is dropped.
pub fn record_range(addr: u64, len: usize, write: bool) {
    if len == 0 || RANGE_BUSY.with(Cell::get) {
        return;
    }
    RANGE_BUSY.with(|b| b.set(true));
    let end = addr.saturating_add(len as u64);
    let mut a = addr;
    while a < end {
        let line_end = ((a >> LINE_SHIFT) + 1) << LINE_SHIFT;
        let n = line_end.min(end) - a;
        record(a, n.next_power_of_two().trailing_zeros(), write);
        a = line_end;
    }
    RANGE_BUSY.with(|b| b.set(false));
}

/// Runs `f` with the library-call interceptors forwarding only, so that the runtime's
/// own copies inside `f` (a maps snapshot) are not recorded as the program's accesses.
pub fn quiet<R>(f: impl FnOnce() -> R) -> R {
    let was = RANGE_BUSY.with(|b| b.replace(true));
    let r = f();
    RANGE_BUSY.with(|b| b.set(was));
    r
}

/// True while this thread is inside the runtime's range recording, or before the runtime
/// is ready for it: library-call interceptors then only forward the call, so that the
/// runtime's own copies (and `dlsym`'s) are never recorded or re-entered.
#[cfg_attr(test, allow(dead_code))] // only the interceptors, not built for tests
pub fn in_runtime() -> bool {
    RANGE_BUSY.with(Cell::get) || !crate::init::is_on()
}

/// Records between two `sched_yield` calls of a recording thread. A program traced with
/// more threads than CPUs (8 threads on this 2-CPU machine, say) runs each thread for
/// whole scheduler slices, and the trace, which every replay merges in time order, then
/// shows each thread's work in bursts that a machine with a core per thread never runs:
/// on `fft 8 32 4` the bursts made SAMMU's Eq. 6 move pages after each one (1.24 of os;
/// 0.95-0.96 with the yields, 5 traces). Yielding at every 4,096th record interleaves the
/// runnable threads at that grain (`tests/trace/interleave.rs`); with a CPU free the call
/// returns at once, and the CPU time of tracing did not change measurably. A polling
/// thread, whose reads are collapsed and so make no records, yields at every 4,096th
/// access: it hands the CPU to the threads it waits for (spinbar polled 22-25 M reads
/// before, 0.9-1.3 M after: `tests/trace_spin.rs`).
const YIELD_EVERY: usize = 4096;
const _: () = assert!(YIELD_EVERY.is_multiple_of(TICK_EVERY));

/// Gives the CPU to another runnable thread, if any ([`YIELD_EVERY`]).
#[cold]
#[inline(never)]
fn yield_cpu() {
    // SAFETY: sched_yield has no preconditions.
    unsafe { libc::sched_yield() };
}

/// Appends one word, reading the clock at every TICK_EVERY-th position (after yielding
/// the CPU at every YIELD_EVERY-th); with `TICK` false the caller knows this is not one
/// ([`fast_path`]).
#[inline(always)]
fn push<const TICK: bool>(s: &mut ThreadState, word: u64) {
    if TICK && s.len.is_multiple_of(TICK_EVERY) {
        if s.len.is_multiple_of(YIELD_EVERY) {
            yield_cpu();
        }
        s.ticks[s.len / TICK_EVERY] = now_ns();
    }
    s.recs[s.len] = word;
    s.len += 1;
}

/// Writes the CPU word that follows each first-touch record: where the thread ran, which
/// tells the page's node under first-touch placement.
#[inline(always)]
fn push_cpu(s: &mut ThreadState) {
    // SAFETY: sched_getcpu has no preconditions (vDSO, only once per page).
    let cpu = unsafe { libc::sched_getcpu() };
    push::<true>(s, wire::pack_cpu(cpu.max(0) as u32));
}

/// Whether the access at `addr` is the first touch of its page, which becomes the thread's
/// last page. Without `ALL`, [`fast_path`] found the page touched before.
#[inline(always)]
fn page_first<const ALL: bool>(s: &mut ThreadState, addr: u64) -> bool {
    let page = addr >> s.page_shift;
    page != s.last_page && {
        s.last_page = page;
        ALL && first_touch(page)
    }
}

/// True exactly once per page: for the first access by any thread (first-touch record).
fn first_touch(page: u64) -> bool {
    let Some((w, bit)) = touched_word(page) else {
        return false;
    };
    w.load(Ordering::Relaxed) & bit == 0 && w.fetch_or(bit, Ordering::Relaxed) & bit == 0
}

/// The first-touch bitmap's word and bit for `page`; None without a bitmap or beyond it
/// (no first-touch records there).
#[inline(always)]
fn touched_word(page: u64) -> Option<(&'static AtomicU64, u64)> {
    let map = TOUCHED.load(Ordering::Relaxed);
    let word = page >> 6;
    if map.is_null() || word >= TOUCHED_WORDS.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: `word` is below the number of words the bitmap mapping holds, which is
    // never unmapped.
    Some((unsafe { &*map.add(word as usize) }, 1u64 << (page & 63)))
}

/// Monotonic time in nanoseconds (vDSO, no system call, safe in signal handlers).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Writes out the buffered records of `s` as one access chunk.
#[cold]
fn flush(s: &mut ThreadState) {
    if s.aggregate {
        // The table's lines belong to this chunk's batch (`lines::aggregate_miss` keeps room).
        lines::drain_lines(s);
    }
    if s.len == 0 {
        return;
    }
    if !s.aggregate {
        // Repeat words name records of this chunk (`record` keeps room for them): the
        // next chunk starts new runs. An aggregating thread writes none, and its runs
        // go on.
        let mut runs = std::mem::take(&mut s.runs);
        runs.end_all(|w| push::<true>(s, w));
    }
    s.hdr = ChunkHeader {
        magic: wire::MAGIC,
        kind: wire::KIND_ACCESS,
        thread: s.id,
        count: s.len as u32,
        t0: s.ticks[0],
        t1: now_ns(),
        extra: 0,
    };
    let bytes = HEADER_BYTES + TICKS * 8 + s.len * 8;
    // SAFETY: `hdr`, `ticks` and `recs` are contiguous (checked above), `len` <= CHUNK_RECORDS.
    let raw = unsafe { std::slice::from_raw_parts((&s.hdr as *const ChunkHeader).cast(), bytes) };
    io::write_data(raw);
    s.len = 0;
}

fn write_marker(kind: u32, thread: u32, extra: u64) {
    let h = ChunkHeader {
        magic: wire::MAGIC,
        kind,
        thread,
        count: 0,
        t0: now_ns(),
        t1: 0,
        extra,
    };
    io::write_data(&h.encode());
}

/// Gives the calling thread its state; null when the runtime is off.
pub fn register_current() -> *mut ThreadState {
    if !crate::init::ensure() {
        return null_mut();
    }
    let existing = CURRENT.with(Cell::get);
    if !existing.is_null() {
        return existing;
    }
    let size = std::mem::size_of::<ThreadState>();
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    // SAFETY: an anonymous private mapping has no preconditions; zeroed memory is a
    // valid ThreadState (all integers, atomics, a null pointer).
    let p = unsafe { libc::mmap(null_mut(), size, prot, flags, -1, 0) };
    if p == libc::MAP_FAILED {
        return null_mut();
    }
    let st = p.cast::<ThreadState>();
    let reserved = PENDING_ID.with(|c| c.replace(u32::MAX));
    let id = if reserved == u32::MAX {
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    } else {
        reserved
    };
    // SAFETY: `st` is fresh, zeroed, exclusively ours until published below.
    let s = unsafe { &mut *st };
    s.id = id;
    s.mode = AtomicU8::new(DEFAULT_MODE.load(Ordering::Relaxed));
    s.filter = FILTER.load(Ordering::Relaxed);
    s.collapse = COLLAPSE.load(Ordering::Relaxed);
    // Filtering decides which accesses are records: it keeps the record-per-access path.
    s.aggregate = AGGREGATE.load(Ordering::Relaxed) && !s.filter;
    s.last_key = u64::MAX;
    s.last_page = u64::MAX;
    s.page_shift = PAGE_SHIFT.load(Ordering::Relaxed);
    let mut head = ALL.load(Ordering::Acquire);
    loop {
        s.next = head;
        match ALL.compare_exchange_weak(head, st, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(h) => head = h,
        }
    }
    CURRENT.with(|c| c.set(st));
    crate::init::watch_thread_exit(st.cast());
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u64;
    write_marker(wire::KIND_THREAD, id, tid);
    st
}

/// Flushes a thread's last chunk, writes its end marker and stops it; idempotent.
///
/// # Safety
/// `st` must come from [`register_current`].
pub unsafe fn finish_thread(st: *mut ThreadState) {
    // SAFETY: states are never unmapped, so `st` is valid; the caller's contract.
    let s = unsafe { &mut *st };
    if s.dead.swap(true, Ordering::AcqRel) {
        return;
    }
    s.mode.store(MODE_OFF, Ordering::Relaxed);
    flush(s);
    write_marker(wire::KIND_END, s.id, s.filtered);
}

/// Applies `f` to every registered thread state.
fn for_each(mut f: impl FnMut(*mut ThreadState)) {
    let mut p = ALL.load(Ordering::Acquire);
    while !p.is_null() {
        f(p);
        // SAFETY: list nodes are never freed; `next` was set before publication.
        p = unsafe { (*p).next };
    }
}

/// Flushes and stops every thread (process exit, fatal signal); returns accesses seen.
pub fn finish_all() -> u64 {
    let mut seen = 0;
    for_each(|st| {
        // SAFETY: `st` came from the registry, so from register_current.
        unsafe { finish_thread(st) };
        // SAFETY: as above; reading a counter of a finished thread.
        seen += unsafe { (*st).seen };
    });
    seen
}

/// In a forked child, whose only thread is the one that called `fork`: keeps that
/// thread's state as the child's thread 0 (the child's main thread, so ids stay in
/// creation order per process), with nothing buffered (those records are the parent's,
/// which flushes its own copy), in recording mode `mode`, and announces it in the child's
/// data file. The other threads' states are copies of threads the child does not have.
pub fn restart_in_child(mode: u8) {
    DEFAULT_MODE.store(mode, Ordering::Relaxed);
    let st = CURRENT.with(Cell::get);
    ALL.store(st, Ordering::Release);
    if st.is_null() {
        NEXT_ID.store(0, Ordering::Relaxed);
        return;
    }
    NEXT_ID.store(1, Ordering::Relaxed);
    // SAFETY: this thread's own state; no other thread exists in the child.
    let s = unsafe { &mut *st };
    s.next = null_mut();
    s.id = 0;
    s.len = 0;
    s.seen = 0;
    s.filtered = 0;
    s.runs = Runs::default();
    s.lines.clear();
    s.last_key = u64::MAX;
    s.last_page = u64::MAX;
    s.dead.store(false, Ordering::Relaxed);
    s.mode.store(mode, Ordering::Relaxed);
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u64;
    write_marker(wire::KIND_THREAD, 0, tid);
}

/// Stops recording in every thread without writing anything (write failure, fork child).
pub fn stop_all() {
    DEFAULT_MODE.store(MODE_OFF, Ordering::Relaxed);
    // SAFETY: `st` came from the registry; `mode` is atomic.
    for_each(|st| unsafe { (*st).mode.store(MODE_OFF, Ordering::Relaxed) });
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
