//! Per-thread recording state and the hot path.
//!
//! Each thread owns one [`ThreadState`], reached through a thread-local pointer, so the
//! hot path takes no lock. States are never freed: they stay on a lock-free list so the
//! exit and crash handlers can flush every thread's last partial chunk.
//!
//! A recording thread runs the stride predictor (`tdmap_wire::predict`) on its accesses
//! and writes predicted chunks (wire version 7, `KIND_PREDICTED`): a run word for each
//! stretch of accesses the predictor foresaw and a record for each other one. Its ticks,
//! yields and flushes still fall where a version-6 chunk of one word per access (and per
//! CPU and repeat word) would put them, counted in [`ThreadState`]'s `len`, so that
//! `tdmap_wire::raw::expand` gives back exactly that chunk.

use crate::aggregate::Blocks;
use crate::collapse::{self, Read, Runs};
use crate::io;
use crate::window::MODE_PAUSE;
use std::cell::Cell;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};
use tdmap_wire::predict::Predictor;
use tdmap_wire::raw::{self as wire, ChunkHeader, CHUNK_RECORDS, HEADER_BYTES, TICKS, TICK_EVERY};

/// Recording mode of a thread: record every access.
pub const MODE_RECORD: u8 = 0;
/// Recording mode: only count accesses (the overhead benchmark's baseline).
pub const MODE_COUNT: u8 = 1;
/// Recording mode: ignore accesses (after exit, a crash or a write failure).
pub const MODE_OFF: u8 = 2;

const LINE_SHIFT: u32 = 6;

mod current;
mod lines;
mod record;

use record::{fast_path_from, push_run, record_body, record_fast, record_known};

/// One thread's buffer: the chunk header and clock ticks sit right before the records so
/// that a chunk leaves in a single `write`.
#[repr(C)]
pub struct ThreadState {
    hdr: ChunkHeader,
    ticks: [u64; TICKS],
    /// The chunk's words: a recording thread's runs and records, an aggregating one's
    /// records and counts.
    recs: [u64; CHUNK_RECORDS],
    /// Words of the version-6 chunk this one stands for: the position of the next
    /// access, CPU or repeat word, which places the ticks, yields and flush.
    len: usize,
    /// Words written in `recs` (at most `len`: a run word stands for 1 or more accesses).
    words: usize,
    /// CPU and repeat words among `len`: an access's index is `len - sides`.
    sides: usize,
    /// `len` after the last word: the accesses since then are the run of predicted
    /// accesses held, written as one run word before the next word ([`push_run`]).
    run_from: usize,
    /// While `len` is below this, [`fast_path`](record::fast_path) holds (0: not known
    /// to): one compare on the callbacks' hot path in place of `fast_path`'s, set by
    /// [`fast_path_from`] and cleared wherever `len` goes back. A u32 beside the flags
    /// (`len` stays far below 2^32).
    fast_end: u32,
    mode: AtomicU8,
    /// `filter`, `aggregate` or `no_runs`: the thread never takes [`fast_path`](record::fast_path).
    special: bool,
    collapse: bool,
    filter: bool,
    /// Accesses seen, but for a recording thread's accesses in its current chunk
    /// ([`ThreadState::seen`]), which `flush` adds: so that the hot path counts nothing.
    seen: u64,
    /// An aggregating thread's reads collapsed since it last counted a block new to its
    /// table: a poll's ([`lines::polled`]).
    polls: u32,
    /// The thread's kernel id, whose CPU clock the batch clock reads (`crate::batch`).
    tid: AtomicU32,
    /// The thread's CPU time in ns when the batch clock last ended its batch (the
    /// clock's own field).
    batch_cpu: AtomicU64,
    /// The wall-clock time in ns before which the batch clock need not read the thread's
    /// CPU clock again (the clock's own field, [`end_batches`]).
    batch_wall: AtomicU64,
    /// The page size minus 1 (`page_shift`'s): two addresses whose xor is at most this
    /// lie on one page.
    page_low: u64,
    /// The recording thread's predictor, afresh in every chunk ([`flush`]).
    pred: Predictor,
    runs: Runs,
    /// Counts accesses per line instead of recording each (`aggregate.rs`).
    aggregate: bool,
    /// Writes every access as a record, no runs (`wire::ENV_PREDICT`; false when zeroed).
    no_runs: bool,
    /// log2 of the page size ([`PAGE_SHIFT`] when the thread registered).
    page_shift: u32,
    /// An aggregating thread's first first touch was recorded: its node is known.
    node_known: bool,
    dead: AtomicBool,
    id: u32,
    last_key: u64,
    last_page: u64,
    filtered: u64,
    next: *mut ThreadState,
    /// An aggregating thread's table (136 KiB), last: the recording path's fields stay
    /// together before it.
    blocks: Blocks,
}

impl ThreadState {
    /// Derives the fields the hot path reads in place of others (`special`,
    /// `page_low`), after those are set.
    fn settle(&mut self) {
        self.special = self.filter | self.aggregate | self.no_runs;
        self.page_low = (1u64 << self.page_shift) - 1;
    }

    /// Accesses this thread made (counted, aggregated, recorded, collapsed or filtered).
    /// A recording thread's accesses in its chunk are its positions but its CPU and
    /// repeat words (`len - sides`); an aggregating thread's positions are not accesses.
    fn seen(&self) -> u64 {
        if self.aggregate {
            self.seen
        } else {
            self.seen + (self.len - self.sides) as u64
        }
    }
}

// The records must follow the header without padding for the single-write flush.
const _: () = assert!(std::mem::size_of::<ChunkHeader>() == HEADER_BYTES);
const _: () = assert!(std::mem::offset_of!(ThreadState, ticks) == HEADER_BYTES);
const _: () = assert!(std::mem::offset_of!(ThreadState, recs) == HEADER_BYTES + TICKS * 8);

thread_local! {
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
/// Whether new recording threads write runs of foreseen accesses (`wire::ENV_PREDICT`).
pub static PREDICT: AtomicBool = AtomicBool::new(true);
/// log2 of the page size, for first-touch records.
pub static PAGE_SHIFT: AtomicU32 = AtomicU32::new(12);
/// One bit per page of the address space: set once some thread touched the page.
pub static TOUCHED: AtomicPtr<AtomicU64> = AtomicPtr::new(null_mut());
/// Number of `AtomicU64` words behind [`TOUCHED`].
pub static TOUCHED_WORDS: AtomicU64 = AtomicU64::new(0);

/// Records one access by the calling thread: the whole hot path.
///
/// An aggregating thread (`--model-only`) takes its own path, [`lines::access`]. Most
/// other accesses take [`record_fast`], [`record_body`] without its rare steps: the
/// thread records, filters nothing and has room before the next clock tick or flush.
/// Those conditions are checked before anything changes; every other access takes
/// [`record_slow`], which runs the same body with every step. Both are out of line,
/// reached by tail calls, so that this function, inlined into every callback, keeps no
/// registers on its counting and aggregating paths.
#[inline(always)]
pub fn record(addr: u64, size_log2: u32, write: bool) {
    let st = current::get();
    // SAFETY: a non-null `st` is this thread's own live state; other threads only touch
    // it in the exit and crash handlers, when this one is finished or about to die, and
    // its mode word, which is atomic.
    if let Some(s) = unsafe { st.as_mut() } {
        match s.mode.load(Ordering::Relaxed) {
            MODE_RECORD if s.len < s.fast_end as usize => {
                return record_fast(s, addr, size_log2, write)
            }
            mode => return record_other(s, mode, addr, size_log2, write),
        }
    }
    record_slow(st, addr, size_log2, write);
}

/// [`record`] for a callback that knows the access's size and kind: its common case,
/// [`record_known`], runs inlined in the callback with no call. An aggregating thread
/// is told apart first: behind the `fast_end` compare, `--model-only` measured 11 %
/// more CPU on stencil3d (2 instructions more per access, and the recording path 2
/// fewer).
#[inline(always)]
pub fn record_sized<const LOG2: u32, const WRITE: bool>(addr: u64) {
    let st = current::get();
    // SAFETY: as in `record`.
    if let Some(s) = unsafe { st.as_mut() } {
        match s.mode.load(Ordering::Relaxed) {
            MODE_RECORD if s.aggregate => return lines::access(s, addr, LOG2, WRITE),
            MODE_RECORD if s.len < s.fast_end as usize => {
                return record_known::<LOG2, WRITE>(s, addr)
            }
            mode => return record_other(s, mode, addr, LOG2, WRITE),
        }
    }
    record_slow(st, addr, LOG2, WRITE);
}

/// A registered thread's access not below its `fast_end` in [`record`], in `mode`:
/// aggregating and counting threads' own paths, the first fast position of a tick block
/// (which sets `fast_end`), [`record_slow`] for the rest.
#[inline(always)]
fn record_other(s: &mut ThreadState, mode: u8, addr: u64, size_log2: u32, write: bool) {
    match mode {
        MODE_RECORD if s.aggregate => lines::access(s, addr, size_log2, write),
        MODE_RECORD if fast_path_from(s) => record_fast(s, addr, size_log2, write),
        MODE_COUNT => s.seen += 1,
        _ => record_slow(s, addr, size_log2, write),
    }
}

/// Everything but the fast path: a thread's first access, counting, pausing or stopped
/// threads, and accesses that filter, touch a new page, read the clock or flush.
/// `extern "C"` so that callbacks reach it by a tail call ([`record_fast`]).
#[cold]
#[inline(never)]
extern "C" fn record_slow(st: *mut ThreadState, addr: u64, size_log2: u32, write: bool) {
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

/// A read that the spin collapse counted in an earlier record, counted here (it takes
/// no position): a spinning thread yields as often as a recording one, so that the
/// threads it waits for get the CPU.
#[inline(always)]
fn collapsed(s: &mut ThreadState) {
    s.seen += 1;
    if s.seen().is_multiple_of(YIELD_EVERY as u64) {
        yield_cpu();
    }
}

/// The spin collapse's step for one access (the rule is in collapse.rs): a write ends
/// the runs on its line; a read already counted by a run is counted here and gives None;
/// otherwise Some, with the way and watch flag of a read that starts a record.
#[inline(always)]
pub(super) fn collapse_step(
    s: &mut ThreadState,
    line: u64,
    write: bool,
) -> Option<Option<(usize, bool)>> {
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

/// Positions between two `sched_yield` calls of a recording thread: one chunk, so it
/// yields at each chunk's first position. A program traced with more threads than CPUs
/// (8 threads on this 2-CPU machine, say) runs each thread for whole scheduler slices,
/// and the trace, which every replay merges in time order, then shows each thread's work
/// in bursts that a machine with a core per thread never runs: on `fft 8 32 4` the bursts
/// made SAMMU's Eq. 6 move pages after each one (1.24 of os; 0.95-0.96 with yields every
/// 4,096 records, 5 traces). Yielding interleaves the runnable threads at this grain
/// (`tests/trace/interleave.rs`); with a CPU free the call returns at once. With more
/// threads than CPUs each yield is a context switch, which the predicted chunks (a few
/// ns per access) made a part of tracing's CPU time: at 4,096 positions, as before, it
/// cost 3-10 % on the bench's programs. At 8,192 SAMMU against os on the fft traces of
/// `make bench-sim-fft` (32:1, 32:4, 64:1, 5 traces each) stayed as it was: means 1.019,
/// 0.947, 1.023 against 1.022, 0.951, 1.011 at 4,096 (docs/bench-trace.md). A polling
/// thread, whose reads are collapsed and so make no records, yields at every 8,192nd
/// access: it hands the CPU to the threads it waits for (spinbar polled 22-25 M reads
/// without it: `tests/trace_spin.rs`). An aggregating thread, which counts no
/// positions, yields at every 8,192nd read collapsed since it last counted a new block
/// ([`lines::polled`]).
const YIELD_EVERY: usize = CHUNK_RECORDS;
const _: () = assert!(YIELD_EVERY.is_multiple_of(TICK_EVERY));

/// Gives the CPU to another runnable thread, if any ([`YIELD_EVERY`]).
#[cold]
#[inline(never)]
fn yield_cpu() {
    #[cfg(test)]
    tests::YIELDS.with(|y| y.set(y.get() + 1));
    // SAFETY: sched_yield has no preconditions.
    unsafe { libc::sched_yield() };
}

/// Reads the clock at every TICK_EVERY-th position (after yielding the CPU at every
/// YIELD_EVERY-th); with `TICK` false the caller knows this is not one ([`fast_path`](record::fast_path)).
#[inline(always)]
pub(super) fn tick<const TICK: bool>(s: &mut ThreadState) {
    if TICK && s.len.is_multiple_of(TICK_EVERY) {
        if s.len.is_multiple_of(YIELD_EVERY) {
            yield_cpu();
        }
        s.ticks[s.len / TICK_EVERY] = now_ns();
    }
}

/// Appends one word that takes a position: a record, a CPU or repeat word.
#[inline(always)]
fn push<const TICK: bool>(s: &mut ThreadState, word: u64) {
    tick::<TICK>(s);
    s.recs[s.words] = word;
    s.words += 1;
    s.len += 1;
    s.run_from = s.len;
}

/// Appends a CPU or repeat word, after the run before it.
#[inline(always)]
pub(super) fn push_side<const TICK: bool>(s: &mut ThreadState, word: u64) {
    push_run(s);
    s.sides += 1;
    push::<TICK>(s, word);
}

/// Writes the CPU word that follows each first-touch record: where the thread ran, which
/// tells the page's node under first-touch placement.
#[inline(always)]
fn push_cpu(s: &mut ThreadState) {
    // SAFETY: sched_getcpu has no preconditions (vDSO, only once per page).
    let cpu = unsafe { libc::sched_getcpu() };
    push_side::<true>(s, wire::pack_cpu(cpu.max(0) as u32));
}

/// Whether the access at `addr` is the first touch of its page, which becomes the
/// thread's last page (a page this thread touched, so its next access there needs no
/// look at the bitmap).
#[inline(always)]
fn page_first(s: &mut ThreadState, addr: u64) -> bool {
    let page = addr >> s.page_shift;
    page != s.last_page && {
        s.last_page = page;
        first_touch(page)
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
    clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// Clock `clock` in nanoseconds, None when the kernel refuses it.
#[inline(always)]
fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    let ok = unsafe { libc::clock_gettime(clock, &mut ts) } == 0;
    ok.then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Writes out the buffered records of `s`: for an aggregating thread its table's lines
/// too, which ends its batch (`crate::aggregate`).
#[cold]
fn flush(s: &mut ThreadState) {
    if s.aggregate {
        lines::drain(s);
    }
    write_chunk(s);
}

/// Writes out the buffered records of `s` as one access chunk.
fn write_chunk(s: &mut ThreadState) {
    if s.len == 0 {
        return;
    }
    let (kind, extra) = if s.aggregate {
        (wire::KIND_COUNTED, 0)
    } else {
        // Repeat words name accesses of this chunk (`record` keeps room for them): the
        // next chunk starts new runs. An aggregating thread writes none, and its runs
        // go on.
        let mut runs = std::mem::take(&mut s.runs);
        runs.end_all(|w| push_side::<true>(s, w));
        push_run(s);
        (wire::KIND_PREDICTED, s.len as u64)
    };
    s.hdr = ChunkHeader {
        magic: wire::MAGIC,
        kind,
        thread: s.id,
        count: s.words as u32,
        t0: s.ticks[0],
        t1: now_ns(),
        extra,
    };
    let bytes = HEADER_BYTES + TICKS * 8 + s.words * 8;
    // SAFETY: `hdr`, `ticks` and `recs` are contiguous (checked above), `words` <= `len`
    // <= CHUNK_RECORDS.
    let raw = unsafe { std::slice::from_raw_parts((&s.hdr as *const ChunkHeader).cast(), bytes) };
    #[cfg(test)]
    tests::FLUSHED.with(|f| f.borrow_mut().push(raw.to_vec()));
    io::write_data(raw);
    if !s.aggregate {
        s.seen += (s.len - s.sides) as u64;
    }
    s.len = 0;
    s.words = 0;
    s.sides = 0;
    s.run_from = 0;
    s.fast_end = 0;
    // Every chunk expands alone (`tdmap_wire::raw::expand`): a reader may start at any
    // chunk (after a spill, or once `tdmap trace` stops converting while the program runs).
    s.pred.reset();
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
    let existing = current::get();
    if !existing.is_null() {
        return existing;
    }
    let size = std::mem::size_of::<ThreadState>();
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    if AGGREGATE.load(Ordering::Relaxed) {
        // The table of counted lines is read before it is written (a tag compared, a
        // leaving block's counts scanned): left to fault, each of its pages came as the
        // zero page and was then copied on write, and the copy flushed the TLB of every
        // CPU running the program's threads (an IPI per page, per thread). Populated
        // here, the kernel gives the pages written at once.
        flags |= libc::MAP_POPULATE;
    }
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
    if s.aggregate {
        s.blocks.empty_tags();
    }
    s.no_runs = !PREDICT.load(Ordering::Relaxed);
    s.last_key = u64::MAX;
    s.last_page = u64::MAX;
    s.page_shift = PAGE_SHIFT.load(Ordering::Relaxed);
    s.settle();
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
    s.tid.store(tid, Ordering::Relaxed);
    let mut head = ALL.load(Ordering::Acquire);
    loop {
        s.next = head;
        match ALL.compare_exchange_weak(head, st, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(h) => head = h,
        }
    }
    current::set(st);
    crate::init::watch_thread_exit(st.cast());
    write_marker(wire::KIND_THREAD, id, tid as u64);
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
        seen += unsafe { (*st).seen() };
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
    let st = current::get();
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
    s.words = 0;
    s.sides = 0;
    s.run_from = 0;
    s.fast_end = 0;
    s.pred.reset();
    s.seen = 0;
    s.polls = 0;
    s.filtered = 0;
    // Quiet: a compiler may make these clears `memset` calls, which the interceptor would
    // record as the child's own writes (forkshare's child had 2 such events).
    quiet(|| {
        s.runs = Runs::default();
        s.blocks.clear();
    });
    s.node_known = false;
    s.last_key = u64::MAX;
    s.last_page = u64::MAX;
    s.dead.store(false, Ordering::Relaxed);
    s.mode.store(mode, Ordering::Relaxed);
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
    s.tid.store(tid, Ordering::Relaxed);
    s.batch_cpu.store(0, Ordering::Relaxed);
    s.batch_wall.store(0, Ordering::Relaxed);
    write_marker(wire::KIND_THREAD, 0, tid as u64);
}

/// Ends the batch of every aggregating thread that ran `every` ns of CPU time since the
/// last one ended (`crate::batch`): flips its mode to [`MODE_PAUSE`], which its next
/// access resolves (`resolve_pause`: its table drained, its chunk written). A thread's
/// CPU clock runs no faster than the wall clock, so a thread `r` ns of CPU short of its
/// batch's end is not read again for `r` ns of wall time: the batches end where they
/// would if every clock were read at every tick, with about half the system calls for
/// a thread that runs a quarter of the time (8 threads on 2 CPUs; `state/tests.rs`).
pub(crate) fn end_batches(every: u64) {
    let now = now_ns();
    for_each(|st| {
        // SAFETY: registry states are never freed; only their atomic fields are touched
        // here, and `aggregate`, which never changes once the state is published.
        let (aggregate, tid, last, wall, mode) = unsafe {
            (
                (*st).aggregate,
                &(*st).tid,
                &(*st).batch_cpu,
                &(*st).batch_wall,
                &(*st).mode,
            )
        };
        if !aggregate
            || mode.load(Ordering::Relaxed) != MODE_RECORD
            || now < wall.load(Ordering::Relaxed)
        {
            return;
        }
        let cpu = || thread_cpu_ns(tid.load(Ordering::Relaxed));
        let Some(step) = batch_step(now, last.load(Ordering::Relaxed), every, cpu) else {
            return;
        };
        last.store(step.since, Ordering::Relaxed);
        wall.store(step.wall, Ordering::Relaxed);
        if step.ends {
            let _ =
                mode.compare_exchange(MODE_RECORD, MODE_PAUSE, Ordering::SeqCst, Ordering::SeqCst);
        }
    });
}

/// What the batch clock makes of one thread read at wall time `now` ([`end_batches`]).
#[derive(Debug, PartialEq)]
struct BatchStep {
    /// The thread's CPU time when its batch started (the `batch_cpu` field).
    since: u64,
    /// The wall time before which its CPU clock need not be read (`batch_wall`).
    wall: u64,
    /// Its batch ends now.
    ends: bool,
}

/// One read of a thread's CPU clock `cpu` at wall time `now`, its batch having started
/// at CPU time `since` (0: not seen yet), batches being `every` ns long; None when the
/// thread is gone. Pure, so that the rule is tested apart from the clocks.
fn batch_step(
    now: u64,
    since: u64,
    every: u64,
    cpu: impl FnOnce() -> Option<u64>,
) -> Option<BatchStep> {
    let cpu = cpu()?;
    Some(if since == 0 {
        // A thread's first batch starts when the clock first sees it: the main
        // thread's CPU time so far is the program's start, not its batch.
        BatchStep {
            since: cpu.max(1),
            wall: now + every,
            ends: false,
        }
    } else if cpu >= since + every {
        BatchStep {
            since: cpu,
            wall: now + every,
            ends: true,
        }
    } else {
        BatchStep {
            since,
            wall: now + (since + every - cpu),
            ends: false,
        }
    })
}

/// The CPU time in ns that thread `tid` of this process has run, None once it is gone.
fn thread_cpu_ns(tid: u32) -> Option<u64> {
    // Linux's clock of one thread's CPU time: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED);
    // a gone thread's gives EINVAL.
    clock_ns(((!tid) << 3 | 6) as libc::clockid_t)
}

/// Stops recording in every thread without writing anything (write failure, fork child).
pub fn stop_all() {
    DEFAULT_MODE.store(MODE_OFF, Ordering::Relaxed);
    // SAFETY: `st` came from the registry; `mode` is atomic.
    for_each(|st| unsafe { (*st).mode.store(MODE_OFF, Ordering::Relaxed) });
}

#[cfg(test)]
pub(crate) mod tests;
