//! The aggregating thread's side of the hot path (`--model-only`, `crate::aggregate`):
//! where its accesses go into the table of counted lines and where the table's blocks go
//! into the chunk, a counted chunk (`tdmap_wire::raw::walk_counted`). A child of `state`,
//! whose thread state it fills.

use super::{
    collapse_step, flush, now_ns, page_first, write_chunk, yield_cpu, ThreadState, LINE_SHIFT,
    YIELD_EVERY,
};
use crate::aggregate::{self, CountAt, MAX_BLOCK_WORDS};
use tdmap_wire::raw::{self as wire, CHUNK_RECORDS, FIRST_WORDS};

/// A count this close to `u16::MAX` leaves with its block ([`hot`]).
const COUNT_LIMIT: u16 = u16::MAX - 1;

/// One access of an aggregating thread, its whole hot path: its line's count in the
/// table goes up. A hit checks nothing else: a block gets into the table only on a
/// miss, which saw its page's first touch, so an access it counts is no first touch.
/// Counted accesses join the thread's `seen` when their block leaves the table.
#[inline(always)]
pub(super) fn access(s: &mut ThreadState, addr: u64, size_log2: u32, write: bool) {
    match s.blocks.hit_at(addr) {
        Some((c, _)) if c < aggregate::HOT => {}
        Some((_, at)) => hot(s, addr, write, at),
        None => miss(s, addr, size_log2, write),
    }
}

/// An access to a line counted [`HOT`](aggregate::HOT) times or more in this batch, this
/// one included: the spin collapse's rule (`collapse.rs`) decides it, as for every
/// access of a recording thread: a read it collapses is taken back from the count (the
/// collapse counts it); a write ends the runs on its line. Ordinary loops seldom reach
/// `HOT` accesses to one line in a batch, so their accesses never pay for the rule; a
/// polled flag reaches it at once. A read that joins the run of a line it polls, most
/// of a spin-wait's, is decided first, with nothing else done. `extern "C"` (which
/// cannot unwind), so that the callbacks, into which [`access`] is inlined, reach it by
/// a tail call and keep no frame (`state::record_fast`). `at` is where the hit found
/// the line's count.
#[cold]
#[inline(never)]
extern "C" fn hot(s: &mut ThreadState, addr: u64, write: bool, at: CountAt) {
    let line = addr >> LINE_SHIFT;
    if !write && s.collapse && s.runs.collapse_again(line) {
        *s.blocks.count_in(at) -= 1;
        return polled(s);
    }
    hot_counted(s, addr, write, at);
}

/// A read that [`hot`] collapsed: an access seen, and a poll. At every
/// [`YIELD_EVERY`]th poll since the thread last counted a block new to its table
/// ([`miss`] starts the count again), the thread gives the CPU away, as a recording
/// thread's poll does (`state::collapsed`): a thread spinning on a flag hands the CPU
/// to the threads it waits for (spinbar under `--model-only` took 2-3x the CPU time
/// without it). A loop that rereads a bound passed by reference moves on through memory
/// and so counts new blocks: its collapsed reads yield nothing (ep yielded 4,464 times
/// a run when every 8,192nd access yielded, 4 % of its CPU time).
#[inline(always)]
fn polled(s: &mut ThreadState) {
    s.seen += 1;
    s.polls += 1;
    if s.polls as usize == YIELD_EVERY {
        s.polls = 0;
        yield_cpu();
    }
}

/// [`hot`]'s access that does not join a run: the rule's step, then the count.
#[cold]
#[inline(never)]
extern "C" fn hot_counted(s: &mut ThreadState, addr: u64, write: bool, at: CountAt) {
    let line = addr >> LINE_SHIFT;
    let run = collapse_step(s, line, write);
    if let Some(Some((way, w))) = run {
        s.runs.end(way);
        s.runs.begin(way, line, 0);
        if w {
            s.runs.watch(way, line);
        }
    }
    // Nothing above changes the table: the count is still at `at`.
    let c = s.blocks.count_in(at);
    if run.is_none() {
        // Collapsed, and counted by the step: never after `hot`'s check, kept for the rule.
        *c -= 1;
    } else if *c >= COUNT_LIMIT {
        // The block leaves; its next access installs it anew.
        take(s, at.entry());
    }
}

/// An aggregating thread's access to a block not in its table: the page's first touch
/// is decided here (a first touch is an entry of its own, with its CPU word), then the
/// entry takes the block, and the block it evicts goes into the chunk.
#[cold]
#[inline(never)]
extern "C" fn miss(s: &mut ThreadState, addr: u64, size_log2: u32, write: bool) {
    s.polls = 0;
    if s.words + FIRST_WORDS + MAX_BLOCK_WORDS > CHUNK_RECORDS {
        // A full chunk ends the batch, as an access chunk did: the table goes with it.
        flush(s);
    }
    let first = page_first(s, addr);
    if first {
        if !s.node_known {
            // The accesses before it were made on a node `--model-only` did not know.
            drain(s);
            s.node_known = true;
        }
        // SAFETY: sched_getcpu has no preconditions (vDSO, only once per page).
        let cpu = unsafe { libc::sched_getcpu() }.max(0) as u32;
        let record = wire::pack(addr, size_log2, write, true);
        append(s, &wire::pack_first(record, wire::pack_cpu(cpu)));
        s.seen += 1;
    }
    room(s, MAX_BLOCK_WORDS);
    let (n, accesses) = s.blocks.install(addr, &mut s.recs[s.words..]);
    grow(s, n);
    s.seen += accesses;
    if !first {
        s.blocks.first(addr);
    }
    s.blocks.prefetch_next(addr);
}

/// Makes room for `n` more words in the chunk, writing it first when full.
#[inline(always)]
fn room(s: &mut ThreadState, n: usize) {
    if s.words + n > CHUNK_RECORDS {
        write_chunk(s);
    }
}

/// Counts `n` words just written at the chunk's end; the chunk's first entry reads the
/// clock (its time: a counted chunk has no other tick).
#[inline(always)]
fn grow(s: &mut ThreadState, n: usize) {
    if s.words == 0 && n != 0 {
        s.ticks[0] = now_ns();
    }
    s.words += n;
    s.len += n;
}

/// Appends a whole entry to the chunk (written before it is counted, so that a crash
/// handler flushing this thread mid-way writes no half entry).
fn append(s: &mut ThreadState, entry: &[u64]) {
    room(s, entry.len());
    s.recs[s.words..s.words + entry.len()].copy_from_slice(entry);
    grow(s, entry.len());
}

/// Writes entry `i` of the table into the chunk.
fn take(s: &mut ThreadState, i: usize) {
    room(s, MAX_BLOCK_WORDS);
    let (n, accesses) = s.blocks.take(i, &mut s.recs[s.words..]);
    grow(s, n);
    s.seen += accesses;
}

/// Writes every block of an aggregating thread's table into its chunk (the batch ends).
pub(super) fn drain(s: &mut ThreadState) {
    for i in 0..aggregate::BLOCKS {
        take(s, i);
    }
}

const _: () = assert!(FIRST_WORDS <= MAX_BLOCK_WORDS);

#[cfg(test)]
mod tests {
    use super::super::tests::{fresh_state, test_bitmap, FLUSHED};
    use super::*;
    use crate::aggregate::HOT;
    use crate::collapse::WATCH_AFTER;
    use std::collections::HashMap;
    use std::sync::atomic::Ordering;
    use tdmap_wire::raw::{unpack, walk_counted, ChunkHeader, Counted, HEADER_BYTES, TICKS};

    /// A fresh aggregating thread state, collapsing or not.
    fn state(collapse: bool) -> Box<ThreadState> {
        fresh_state(true, collapse)
    }

    /// Far above the first-touch bitmap of the tests (no first touches there).
    const HIGH: u64 = 1 << 40;

    /// The entries of every chunk this test thread flushed since the last call, in order.
    fn flushed() -> Vec<Counted> {
        let chunks = FLUSHED.with(|f| std::mem::take(&mut *f.borrow_mut()));
        let mut out = Vec::new();
        for c in chunks {
            let h = ChunkHeader::decode(&c).unwrap();
            assert_eq!(h.kind, wire::KIND_COUNTED);
            let words: Vec<u64> = c[HEADER_BYTES + TICKS * 8..]
                .chunks_exact(8)
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
                .collect();
            assert_eq!(words.len(), h.count as usize);
            walk_counted(&words, |e| out.push(e)).unwrap();
        }
        out
    }

    /// Accesses per line address in `entries`.
    fn per_line(entries: &[Counted]) -> HashMap<u64, u64> {
        let mut got = HashMap::new();
        for e in entries {
            if let Counted::Line { addr, count } = *e {
                *got.entry(addr).or_insert(0) += count as u64;
            }
        }
        got
    }

    #[test]
    fn a_batch_writes_each_lines_accesses_once_with_its_count() {
        let _ = flushed();
        let mut s = state(false);
        let mut want = HashMap::new();
        for (line, n) in [(1u64, 5), (2, 1), (1, 2), (3, 4), (70, 3)] {
            for _ in 0..n {
                access(&mut s, HIGH + (line << LINE_SHIFT) + 8, 3, n % 2 == 0);
                *want.entry(HIGH + (line << LINE_SHIFT)).or_insert(0) += 1;
            }
        }
        assert_eq!(
            s.len, 0,
            "hits and installs into empty entries write nothing"
        );
        flush(&mut s);
        let got = flushed();
        assert_eq!(per_line(&got), want);
        // Lines 1-3 share a block: one entry for them, one for line 70's block.
        assert_eq!(got.len(), 4);
        assert_eq!(s.seen, 15);
        flush(&mut s);
        assert!(flushed().is_empty(), "a drained table writes nothing more");
    }

    #[test]
    fn the_table_is_written_before_the_threads_first_first_touch_only() {
        let _ = flushed();
        let bitmap = test_bitmap();
        let mut s = state(false);
        let (old, new, newer) = (0x5000u64, 0x9040u64, 0xb000u64);
        bitmap[0].fetch_or(1 << (old >> 12), Ordering::Relaxed);
        for a in [
            old,
            old + 8,
            old + 16,
            new,
            new + 8,
            new + 16,
            old,
            newer,
            old,
        ] {
            access(&mut s, a, 3, false);
        }
        flush(&mut s);
        let got = flushed();
        let firsts: Vec<u64> = got
            .iter()
            .filter_map(|e| match e {
                Counted::First { record, cpu } => {
                    assert!(cpu.is_some(), "a first touch has its CPU");
                    Some(unpack(*record).addr)
                }
                Counted::Line { .. } => None,
            })
            .collect();
        assert_eq!(firsts, [new, newer]);
        assert_eq!(
            got[0],
            Counted::Line {
                addr: old,
                count: 3
            },
            "the old page's line first, then the first touch"
        );
        assert!(matches!(got[1], Counted::First { .. }));
        // The later first touch did not empty the table: the old line's two later
        // accesses are counted after it.
        let lines = per_line(&got[2..]);
        assert!(got[2..].contains(&Counted::Line {
            addr: old,
            count: 2
        }));
        assert_eq!(lines.get(&new), Some(&2), "the page's later accesses");
        assert_eq!(s.seen, 9);
    }

    #[test]
    fn a_full_chunk_leaves_and_no_access_is_lost() {
        let _ = flushed();
        let mut s = state(false);
        // One line per block, blocks far apart: every block an entry of its own.
        let mut n = 0u64;
        let mut k = 0u64;
        while FLUSHED.with(|f| f.borrow().is_empty()) {
            for _ in 0..=k % 3 {
                access(&mut s, HIGH + (k << 16), 3, true);
                n += 1;
            }
            k += 1;
        }
        flush(&mut s);
        let got = flushed();
        let counted: u64 = per_line(&got).values().sum();
        assert_eq!(counted, n, "every access is in a chunk");
        assert_eq!(s.seen, n);
        assert_eq!(per_line(&got).len() as u64, k);
    }

    #[test]
    fn a_polled_line_collapses_once_it_is_hot() {
        let _ = flushed();
        let mut s = state(true);
        let flag = HIGH + (5 << LINE_SHIFT);
        let polls = HOT as u64 + 10 * WATCH_AFTER as u64;
        for _ in 0..polls {
            access(&mut s, flag, 3, false);
        }
        flush(&mut s);
        let got = per_line(&flushed());
        let counted = got[&flag];
        // The first HOT - 1 reads count as they come; from the HOTth, the rule: its first
        // WATCH_AFTER records in a row count too, the last of them starts the watch, and
        // the rest collapse.
        assert_eq!(counted, HOT as u64 - 1 + WATCH_AFTER as u64);
        assert_eq!(s.seen, polls, "a collapsed read is still an access seen");
        // Without the collapse, every read counts.
        let mut s = state(false);
        for _ in 0..polls {
            access(&mut s, flag, 3, false);
        }
        flush(&mut s);
        assert_eq!(per_line(&flushed())[&flag], polls);
    }

    /// A thread polling a flag yields at every `YIELD_EVERY`th collapsed read; one whose
    /// collapsed reads come between accesses that move on to new blocks (a loop bound
    /// reread as the loop streams through an array) does not yield.
    #[test]
    fn a_poll_yields_and_a_loop_moving_through_memory_does_not() {
        use super::super::tests::YIELDS;
        let yields = || YIELDS.with(|y| y.get());
        let _ = flushed();
        let mut s = state(true);
        let flag = HIGH + (7 << LINE_SHIFT);
        // Hot and watched: from here on every read of the flag collapses.
        let warm = HOT as u64 + WATCH_AFTER as u64;
        for _ in 0..warm {
            access(&mut s, flag, 3, false);
        }
        let before = yields();
        for _ in 0..3 * YIELD_EVERY as u64 {
            access(&mut s, flag, 3, false);
        }
        assert_eq!(
            yields() - before,
            3,
            "a spinning thread yields every YIELD_EVERY polls"
        );
        // The same reads, each after an access to a block the table has not held: no
        // yield, however many.
        let before = yields();
        let array = HIGH + (1 << 30);
        for i in 0..3 * YIELD_EVERY as u64 {
            access(&mut s, array + (i << 12), 3, true);
            access(&mut s, flag, 3, false);
        }
        assert_eq!(yields(), before, "reads between new blocks are no poll");
        flush(&mut s);
        let _ = flushed();
        assert_eq!(
            s.seen,
            warm + 3 * YIELD_EVERY as u64 + 6 * YIELD_EVERY as u64
        );
    }

    #[test]
    fn a_write_to_a_hot_polled_line_counts_and_ends_its_run_for_one_read() {
        let _ = flushed();
        let mut s = state(true);
        let flag = HIGH + (6 << LINE_SHIFT);
        let polls = HOT as u64 + 4 * WATCH_AFTER as u64;
        for _ in 0..polls {
            access(&mut s, flag, 3, false);
        }
        // The thread's own write (its barrier's release, say) ends the run: the write
        // counts, and so does the next read, whose record starts the watch again (the
        // line already had its WATCH_AFTER records in a row); the reads after collapse.
        access(&mut s, flag + 8, 3, true);
        for _ in 0..polls {
            access(&mut s, flag, 3, false);
        }
        flush(&mut s);
        let counted = per_line(&flushed())[&flag];
        assert_eq!(counted, HOT as u64 - 1 + WATCH_AFTER as u64 + 2);
        assert_eq!(s.seen, 2 * polls + 1);
    }

    #[test]
    fn a_count_at_its_limit_leaves_with_its_block_and_nothing_is_lost() {
        let _ = flushed();
        let mut s = state(false);
        let (line, other) = (HIGH + (9 << LINE_SHIFT), HIGH + (10 << LINE_SHIFT));
        let n = 3 * u16::MAX as u64 + 5;
        for _ in 0..n {
            access(&mut s, line, 3, false);
        }
        access(&mut s, other, 3, true);
        flush(&mut s);
        let got = flushed();
        assert!(
            got.len() >= 4,
            "the block left three times before the end: {got:?}"
        );
        let lines = per_line(&got);
        assert_eq!((lines[&line], lines[&other]), (n, 1));
        assert_eq!(s.seen, n + 1);
    }
}
