//! The aggregating thread's side of the hot path (`--model-only`, `crate::aggregate`):
//! where its accesses go into the line table and where the table's lines go into the
//! chunk. A child of `state`, whose thread state it fills.

use super::{collapse_step, flush, page_first, push, push_cpu, ThreadState, LINE_SHIFT};
use crate::aggregate::{self, ENTRIES, WORDS_PER_ENTRY};
use tdmap_wire::raw::{self as wire, CHUNK_RECORDS};

/// One access of an aggregating thread, its whole hot path: the spin collapse's rule
/// (`collapse.rs`), then its line's entry counts it. A hit checks nothing else: a line
/// gets into the table only on a miss, which saw its page's first touch, so a line in
/// the table is on a touched page and its access is no first touch. A collapse run
/// needs no repeat word here (`aggregate.rs`), so it starts at once, with its watch (a
/// call) last.
#[inline(always)]
pub(super) fn access(s: &mut ThreadState, addr: u64, size_log2: u32, write: bool) {
    let line = addr >> LINE_SHIFT;
    // A collapsed read is counted by the collapse (`state::collapsed`).
    let Some(run) = collapse_step(s, line, write) else {
        return;
    };
    s.seen += 1;
    let mut watch = None;
    if let Some((way, w)) = run {
        s.runs.end(way);
        s.runs.begin(way, line, 0);
        watch = w.then_some(way);
    }
    if !s.lines.hit(line) {
        return miss(s, addr, size_log2, write, watch.unwrap_or(usize::MAX));
    }
    if let Some(way) = watch {
        s.runs.watch(way, line);
    }
}

/// An aggregating thread's access to a line not in its table: the page's first touch is
/// decided here, then the entry takes the line; last, the watch that [`access`] left.
/// `extern "C"` (which cannot unwind), so that the callbacks, into which [`access`] is
/// inlined, reach it by a tail call and keep no frame (`state::record_fast`); `watch`
/// is a way, or `usize::MAX` for none.
#[cold]
#[inline(never)]
extern "C" fn miss(s: &mut ThreadState, addr: u64, size_log2: u32, write: bool, watch: usize) {
    let first = page_first(s, addr);
    aggregate_miss(s, wire::pack(addr, size_log2, write, first), first);
    if watch != usize::MAX {
        s.runs.watch(watch, addr >> LINE_SHIFT);
    }
}

/// Room a chunk keeps for its table's lines: they leave before it does.
const TABLE_ROOM: usize = ENTRIES * WORDS_PER_ENTRY;

/// An aggregating thread's access that writes words: a line that is not in the table
/// (record `word` goes in, the entry's old line out) or a first touch (every line out,
/// then the record and its CPU word). Flushes first when the chunk could not take the
/// words and still the whole table.
#[inline(always)]
fn aggregate_miss(s: &mut ThreadState, word: u64, first: bool) {
    if s.len + 2 + TABLE_ROOM > CHUNK_RECORDS {
        flush(s);
    }
    if first {
        drain_lines(s);
        push::<true>(s, word);
        push_cpu(s);
        return;
    }
    let line = wire::unpack(word).addr >> LINE_SHIFT;
    if let Some((w, n)) = s.lines.install(line, word) {
        aggregate::line_words(w, n, |w| push::<true>(s, w));
    }
}

/// Writes every line of an aggregating thread's table into its chunk.
pub(super) fn drain_lines(s: &mut ThreadState) {
    for i in 0..ENTRIES {
        if let Some((w, n)) = s.lines.take(i) {
            aggregate::line_words(w, n, |w| push::<true>(s, w));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{fresh_state, test_bitmap};
    use super::*;
    use std::sync::atomic::Ordering;

    /// A fresh aggregating thread state with no collapse (no shared watch words).
    fn state() -> Box<ThreadState> {
        fresh_state(true, false)
    }

    /// The (line, accesses) pairs of a chunk's words, in order; first touches marked.
    fn lines_of(words: &[u64]) -> Vec<(u64, u32, bool)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let r = wire::unpack(words[i]);
            let n = words.get(i + 1).and_then(|&w| wire::unpack_count(w));
            let cpu = words.get(i + 1).and_then(|&w| wire::unpack_cpu(w));
            out.push((r.addr >> LINE_SHIFT, n.unwrap_or(1), r.first_touch));
            i += 1 + (n.is_some() || cpu.is_some()) as usize;
        }
        out
    }

    /// Far above the first-touch bitmap of `the_table_is_written_before_a_first_touch`.
    const HIGH: u64 = 1 << 40;

    #[test]
    fn a_flush_writes_each_lines_accesses_as_one_record_and_count() {
        let mut s = state();
        for (line, n) in [(1u64, 5), (2, 1), (1, 2), (3, 4)] {
            for _ in 0..n {
                access(&mut s, HIGH + (line << LINE_SHIFT) + 8, 3, false);
            }
        }
        assert_eq!(
            s.len, 0,
            "hits and installs into empty entries write nothing"
        );
        flush(&mut s);
        let mut got = lines_of(&s.recs[..s.hdr.count as usize]);
        got.sort();
        let l = |k: u64| (HIGH >> LINE_SHIFT) + k;
        assert_eq!(got, [(l(1), 7, false), (l(2), 1, false), (l(3), 4, false)]);
        assert_eq!(s.seen, 12);
    }

    #[test]
    fn the_table_is_written_before_a_first_touch() {
        let bitmap = test_bitmap();
        let mut s = state();
        let (old, new) = (0x5000u64, 0x9040u64);
        bitmap[0].fetch_or(1 << (old >> 12), Ordering::Relaxed);
        for a in [old, old + 8, old + 16, new, new + 8, new + 16] {
            access(&mut s, a, 3, false);
        }
        let chunk = s.recs[..s.len].to_vec();
        assert_eq!(
            lines_of(&chunk),
            [(old >> 6, 3, false), (new >> 6, 1, true)],
            "the old page's line, then the first touch with its CPU word"
        );
        assert!(wire::unpack_cpu(chunk[3]).is_some());
        flush(&mut s);
        let got = lines_of(&s.recs[..s.hdr.count as usize]);
        assert_eq!(
            got[2..],
            [(new >> 6, 2, false)],
            "the page's later accesses"
        );
    }

    #[test]
    fn a_full_chunk_takes_the_whole_table_with_it() {
        let mut s = state();
        let mut line = HIGH >> LINE_SHIFT;
        // Two accesses per line, until a chunk leaves.
        while s.hdr.count == 0 {
            for _ in 0..2 {
                access(&mut s, line << LINE_SHIFT, 3, true);
            }
            line += 1;
        }
        let got = lines_of(&s.recs[..s.hdr.count as usize]);
        assert!(s.hdr.count as usize <= CHUNK_RECORDS);
        // The chunk left at the last line's first access: every line before it is in
        // the chunk, with both its accesses, and that line is all the table holds.
        assert_eq!(s.len, 0);
        let counted: u64 = got.iter().map(|g| g.1 as u64).sum();
        assert_eq!(counted, s.seen - 2, "every earlier access is in the chunk");
        assert_eq!(got.len() as u64, line - (HIGH >> LINE_SHIFT) - 1);
        assert!(got.iter().all(|g| g.1 == 2));
        flush(&mut s);
        let last = lines_of(&s.recs[..s.hdr.count as usize]);
        assert_eq!(last, [(line - 1, 2, false)]);
    }
}
