//! A recording thread's side of the hot path (wire version 7): the spin collapse (which
//! a read the predictor foresees with a nonzero step skips), then the stride predictor,
//! then a run or a record. A child of `state`, whose thread state
//! it fills; `tdmap_wire::raw::expand` is the reader's side. Most accesses end in
//! [`record_known`], inlined into each callback with its size and kind: it checks that
//! the general path ([`record_body`]) would only lengthen the run, and then does just
//! that (stencil3d: 73 instructions per access over counting on average, against 110;
//! docs/bench-trace.md).

use super::{
    collapse_step, collapsed, flush, page_first, push, push_cpu, push_side, tick, ThreadState,
    LINE_SHIFT,
};
use crate::collapse::{self, Fast, WAYS};
use tdmap_wire::raw::{self as wire, CHUNK_RECORDS, TICK_EVERY};

/// Positions in each tick block at which the fast path may take an access: it takes up
/// to three positions (a repeat word, the access, a CPU word), none at a tick position
/// (a multiple of TICK_EVERY), and leaves the room that `record_body` keeps before a
/// flush (CHUNK_RECORDS is a whole number of blocks). Position 0, a chunk's first
/// access, is never on it: its predictor has nothing recorded yet to step from.
const FAST_LAST: usize = TICK_EVERY - 3 - WAYS;
const _: () = assert!(CHUNK_RECORDS.is_multiple_of(TICK_EVERY) && FAST_LAST > 1);

/// Whether a recording thread's access can skip [`record_body`]'s rare steps (see
/// [`record`]).
#[inline(always)]
pub(super) fn fast_path(s: &ThreadState) -> bool {
    !s.special && (s.len % TICK_EVERY).wrapping_sub(1) < FAST_LAST
}

/// [`fast_path`], which when true also sets `fast_end` past the last fast position of
/// the tick block: `len` only grows until `flush` (which clears `fast_end`), so every
/// position below it is one where `fast_path` holds, and the callbacks test only that
/// (once per block, the first fast access comes here).
#[inline(always)]
pub(super) fn fast_path_from(s: &mut ThreadState) -> bool {
    let fast = fast_path(s);
    if fast {
        s.fast_end = (s.len - s.len % TICK_EVERY + 1 + FAST_LAST) as u32;
    }
    fast
}

/// A recording thread's access of a size and kind known at compile time (one callback),
/// on [`fast_path`], in its common cases: a read that the predictor foresaw with a
/// nonzero step (which the spin collapse never sees) on the page of the access it steps
/// from; a read that the predictor did not foresee, which the collapse counts
/// ([`Fast::Collapsed`]) or keeps as a plain record
/// ([`Runs::read_fast`](crate::collapse::Runs::read_fast)); a write to a line no thread
/// watches that the predictor foresaw on the page of the access it steps from. It
/// changes the state exactly as [`record_body`] would, which then leaves it no word to
/// write: the access only lengthens the run. Any other access goes to [`record_fast`]
/// untouched, or, once the collapse kept it, to [`take_rest`] (what `record_body` does
/// after the collapse at a fast position), by a tail call. Inlined into each callback,
/// with the callback's constants, it needs no saved register.
#[inline(always)]
pub(super) fn record_known<const LOG2: u32, const WRITE: bool>(s: &mut ThreadState, addr: u64) {
    if !WRITE {
        let a = addr & wire::ADDR_MASK;
        let meta = const { wire::meta(LOG2, WRITE) };
        let at = taken(s);
        let (guess, guess_meta, prev) = s.pred.guess_step_from(at);
        if (guess, guess_meta) == (a, meta) {
            // Foreseen with a nonzero step: no collapse ([`collapse::moves_on`]); most
            // reads of a loop are such. With a zero step (a poll, which the collapse
            // may count), the general path.
            if !collapse::moves_on(guess, prev) {
                return record_fast(s, addr, LOG2, WRITE);
            }
            if on_step_page(s, a, prev) {
                s.pred.foreseen_at(at, a, meta);
                return predicted::<false>(s);
            }
            return take_rest::<false>(s, addr, LOG2, WRITE, NO_WATCH);
        }
        // Not foreseen: the collapse, then a record.
        if s.collapse {
            match s.runs.read_fast(addr >> LINE_SHIFT) {
                Fast::Plain => {}
                Fast::Collapsed => return collapsed(s),
                Fast::Other => return record_fast(s, addr, LOG2, WRITE),
            }
        }
        return take_rest::<false>(s, addr, LOG2, WRITE, NO_WATCH);
    }
    if s.collapse && collapse::watched(addr >> LINE_SHIFT) {
        return record_fast(s, addr, LOG2, WRITE);
    }
    let a = addr & wire::ADDR_MASK;
    let meta = const { wire::meta(LOG2, WRITE) };
    let at = taken(s);
    if !foreseen_on_page(s, at, a, meta) {
        return take_rest::<false>(s, addr, LOG2, WRITE, NO_WATCH);
    }
    // What `take` does with this access.
    s.pred.foreseen_at(at, a, meta);
    predicted::<false>(s);
}

/// Accesses this chunk's predictor took: one per position but the CPU and repeat words
/// (it starts afresh with the chunk, and sees every access the collapse keeps). The
/// fast path passes it to the predictor ([`Predictor::foreseen_at`]) in place of the
/// count the predictor would store on each access; the slow path sets it there first
/// ([`pack`]).
///
/// [`Predictor::foreseen_at`]: tdmap_wire::predict::Predictor::foreseen_at
#[inline(always)]
fn taken(s: &ThreadState) -> usize {
    s.len - s.sides
}

/// [`record_body`] on the fast path, out of line: the predictor's path needs registers
/// that the counting and aggregating paths of `record` must not pay for. `extern "C"`,
/// which cannot unwind: a callback (itself `extern "C"`) may reach only such a function
/// by a tail call, with no frame of its own (a call that may unwind needs one).
#[inline(never)]
pub(super) extern "C" fn record_fast(s: &mut ThreadState, addr: u64, size_log2: u32, write: bool) {
    record_body::<false>(s, addr, size_log2, write)
}

/// Records one access of a recording thread that does not aggregate. With `ALL` false,
/// the steps that [`fast_path`] ruled out (filter, flush, clock) are left out. The spin
/// collapse decides first, but for a read that the predictor foresees with a nonzero
/// step ([`steps_on`]): a collapsed read never reaches the predictor ([`pack`]). An
/// access that takes a position is counted by it (`ThreadState::seen`), the others
/// where they leave.
#[inline(always)]
pub(super) fn record_body<const ALL: bool>(
    s: &mut ThreadState,
    addr: u64,
    size_log2: u32,
    write: bool,
) {
    if ALL && s.filter {
        let key = ((addr >> LINE_SHIFT) << 1) | write as u64;
        if key == s.last_key {
            // Counted here: a filtered access takes no position (`ThreadState::seen`).
            s.seen += 1;
            s.filtered += 1;
            return;
        }
        s.last_key = key;
    }
    let line = addr >> LINE_SHIFT;
    let stepping = !write && {
        let a = addr & wire::ADDR_MASK;
        steps_on(s, taken(s), a, wire::meta(size_log2, write))
    };
    let run = if stepping {
        Some(None)
    } else {
        collapse_step(s, line, write)
    };
    let Some(run) = run else {
        return;
    };
    if ALL && full(s) {
        flush(s);
    }
    // A read that starts a collapse run: the run begins here, at the access's index;
    // its watch (a call, once per run of WATCH_AFTER records) is left to `take_rest`.
    let mut watch = NO_WATCH;
    if let Some((way, w)) = run {
        let repeat = s.runs.end(way);
        let at = end_run::<ALL>(s, repeat);
        s.runs.begin(way, line, at);
        if w {
            watch = way as u32;
        }
    }
    take::<ALL>(s, addr, size_log2, write, watch)
}

/// A `watch` for [`take`]: no collapse run to watch.
pub(super) const NO_WATCH: u32 = u32::MAX;

/// Takes one access that the collapse kept, then watches the collapse run that it began
/// in way `watch`, if not [`NO_WATCH`] (`collapse::Runs::watch`). Every such access goes
/// through the predictor, in order ([`pack`]). The fast path's common case, an access
/// the predictor foresaw on the page of the access it steps from and no watch to start,
/// is decided here with no call, so that the fast path keeps few registers; every other
/// access continues in [`take_rest`], by a tail call.
#[inline(always)]
pub(super) fn take<const ALL: bool>(
    s: &mut ThreadState,
    addr: u64,
    size_log2: u32,
    write: bool,
    watch: u32,
) {
    let a = addr & wire::ADDR_MASK;
    let meta = wire::meta(size_log2, write);
    let at = taken(s);
    if !ALL && watch == NO_WATCH && foreseen_on_page(s, at, a, meta) {
        // What `pack` does with this access.
        s.pred.foreseen_at(at, a, meta);
        return predicted::<ALL>(s);
    }
    take_rest::<ALL>(s, addr, size_log2, write, watch)
}

/// The rest of [`take`], out of line: misses, first touches, page checks and watches.
/// `extern "C"` (which cannot unwind), so that [`record_fast`] reaches it by a tail call,
/// as the callbacks reach [`record_fast`].
#[inline(never)]
extern "C" fn take_rest<const ALL: bool>(
    s: &mut ThreadState,
    addr: u64,
    size_log2: u32,
    write: bool,
    watch: u32,
) {
    pack::<ALL>(s, addr, size_log2, write);
    if watch != NO_WATCH {
        s.runs.watch(watch as usize, addr >> LINE_SHIFT);
    }
}

/// Whether the chunk must leave before the next access: it keeps room for the repeat
/// word of a run that access ends, the access, the CPU word after a first touch, and
/// the repeat words of every run at the flush.
#[inline(always)]
pub(super) fn full(s: &ThreadState) -> bool {
    s.len + 3 + WAYS > CHUNK_RECORDS
}

/// Writes the repeat word of the collapse run that the next access (a read starting a
/// run in the same way) ends, if it collapsed any read; returns the next access's index
/// in the chunk, where its own run starts.
#[inline(always)]
pub(super) fn end_run<const TICK: bool>(s: &mut ThreadState, repeat: Option<u64>) -> u32 {
    if let Some(w) = repeat {
        push_side::<TICK>(s, w);
    }
    (s.len - s.sides) as u32
}

/// Packs one access that the collapse kept: every such access goes through
/// [`Predictor::observe`](tdmap_wire::predict::Predictor::observe), in order. One that it
/// foresaw on the page of the access it steps from ([`on_step_page`]) only lengthens the
/// run, with no page check (the fast path's saving). The rest take [`checked`].
#[inline(always)]
pub(super) fn pack<const ALL: bool>(s: &mut ThreadState, addr: u64, size_log2: u32, write: bool) {
    let a = addr & wire::ADDR_MASK;
    s.pred.seek(taken(s));
    let (.., prev) = s.pred.guess_step();
    let hit = s.pred.observe(a, wire::meta(size_log2, write)) && !s.no_runs;
    // The slow path checks every page: at a chunk's first access `prev` is no access.
    if !ALL && hit && on_step_page(s, a, prev) {
        predicted::<ALL>(s);
    } else {
        checked::<ALL>(s, addr, size_log2, write, hit);
    }
}

/// Whether the predictor, after `at` accesses ([`taken`]), foresees access `a` with
/// `meta` on the page of the access it steps from (`Predictor::guess_step`,
/// [`on_step_page`]): the case that only lengthens
/// the run, once the collapse kept it.
#[inline(always)]
fn foreseen_on_page(s: &ThreadState, at: usize, a: u64, meta: u8) -> bool {
    let (guess, guess_meta, prev) = s.pred.guess_step_from(at);
    (guess, guess_meta) == (a, meta) && on_step_page(s, a, prev)
}

/// Whether the predictor, after `at` accesses ([`taken`]), foresees a read of `a` with
/// `meta` with a nonzero step, which the spin collapse never sees
/// ([`collapse::moves_on`]).
#[inline(always)]
fn steps_on(s: &ThreadState, at: usize, a: u64, meta: u8) -> bool {
    let (guess, guess_meta, prev) = s.pred.guess_step_from(at);
    (guess, guess_meta) == (a, meta) && collapse::moves_on(guess, prev)
}

/// Whether address `a` is on the page of `prev`, the access a foreseen access steps from:
/// recorded by this thread in this chunk, so its page is touched and `a` is no first
/// touch. At a chunk's first access `prev` is no access, which the fast path's positions
/// ([`FAST_LAST`]) and the slow path's page check leave out.
#[inline(always)]
fn on_step_page(s: &ThreadState, a: u64, prev: u64) -> bool {
    (a ^ prev) <= s.page_low
}

/// An access that needs its page checked (`page_first`): a first touch is written as a
/// record with its CPU word after it even when predicted (the fault rides on it); any
/// other access the predictor foresaw lengthens the run, the rest are records.
#[inline(always)]
fn checked<const ALL: bool>(
    s: &mut ThreadState,
    addr: u64,
    size_log2: u32,
    write: bool,
    hit: bool,
) {
    let first = page_first(s, addr);
    if hit && !first {
        return predicted::<ALL>(s);
    }
    push_run(s);
    push::<ALL>(s, wire::pack(addr, size_log2, write, first));
    if first {
        push_cpu(s);
    }
}

/// An access the predictor foresaw: it takes its version-6 position (and the clock
/// tick there) but no word, only a place in the run.
#[inline(always)]
fn predicted<const TICK: bool>(s: &mut ThreadState) {
    tick::<TICK>(s);
    s.len += 1;
}

/// Writes the run of predicted accesses held, if any: before any word that follows
/// them. The run is every position since the last word (each word sets `run_from`).
#[inline(always)]
pub(super) fn push_run(s: &mut ThreadState) {
    let run = s.len - s.run_from;
    if run != 0 {
        s.recs[s.words] = wire::pack_run(run as u32);
        s.words += 1;
        s.run_from = s.len;
    }
}

#[cfg(test)]
mod tests;
