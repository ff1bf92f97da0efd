//! Spin collapse (issue 17 item 6): a thread reading a line again, with no write to that
//! line in between, adds to the count of its earlier record instead of writing a new one,
//! so a spin-wait loop costs a few records however long it polls. This is the one place
//! that decides it; `docs/formats.md` "Collapsed reads" states the rule for users.
//!
//! Why it is exact for the amount metric: a thread's read of a line it already read
//! changes no sharer set, and the amount metric only grows when a thread joins a line's
//! sharers (trace paper §III-B, `tdmap_sharing::SharingModel`). The count keeps the
//! number of reads, but the collapsed reads take their run's first time and the sharers
//! their line had then.
//!
//! How "no write in between" is known without shared state on every access: a table of
//! [`SLOTS`] watch words, one per hash of a line. A word is odd while some thread watches
//! a line of that slot; a write to any line of an odd slot makes it even again (the next
//! generation). A thread starts watching a line at its [`WATCH_AFTER`]th record of it in
//! a row (so that ordinary loops cost no shared store) and keeps the generation it saw;
//! a later read of the line while the word still holds that generation is collapsed.
//! Collisions only end runs early. The check and the access are not one atomic step, so
//! a read racing with the write that ends its run may still join the run.
//!
//! Which reads the rule sees: not a read that the stride predictor foresees with a
//! nonzero step ([`moves_on`]), which moves on through memory and so cannot be a poll.
//! Most of a loop's reads are such: they pay no search of the ways, and take no way, so
//! a line the loop rereads on every iteration keeps its way. A new line takes the oldest
//! way that watches nothing ([`Runs::read`]), so the other reads coming and going do not
//! end a watched line's run: before both, a loop bound reloaded through a pointer (OpenMP
//! passes shared variables by reference) was watched, evicted and watched again every few
//! dozen iterations in alltoall, and each change of the reads the predictor saw cost
//! records (docs/bench-trace.md).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Lines each thread remembers for collapsing: enough for a spin loop that also reads a
/// thread-local sense flag or a loop bound, few enough to check on every read.
pub const WAYS: usize = 4;
/// Records a line gets in a row (while it stays among the thread's [`WAYS`] lines) before
/// its reads collapse. A loop that reads a line a few dozen times (a stencil's row, 8
/// elements per line, each read 3 times) keeps every read: collapsing those would break
/// the regular address deltas that the trace compresses to almost nothing, and save
/// little. A spin-wait polls thousands of times, so it pays this many records per wait.
pub const WATCH_AFTER: u32 = 32;
/// Watch words, a power of two: 128 KiB, so that the lines of unrelated threads seldom
/// share a word (which would only end their runs early).
const SLOTS: usize = 1 << 14;
const _: () = assert!(WAYS.is_power_of_two());
const _: () = assert!(SLOTS <= 1 << 16);

static WATCH: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

#[inline(always)]
fn slot(line: u64) -> &'static AtomicU64 {
    &WATCH[slot_index(line)]
}

/// The index of `line`'s watch word in [`WATCH`].
#[inline(always)]
fn slot_index(line: u64) -> usize {
    ((line ^ (line >> 14) ^ (line >> 28)) as usize) & (SLOTS - 1)
}

/// A thread's recent read lines; all zeros (its mmap'd state) is empty.
#[derive(Debug, Default, Clone, Copy)]
#[repr(C)]
pub struct Runs {
    /// Line number + 1 of each way, 0 when empty.
    tags: [u64; WAYS],
    /// Watch generation each way collapses against, 0 when not watching.
    gens: [u64; WAYS],
    /// Access index of each way's record in the thread's current chunk (what its repeat
    /// word names: `tdmap_wire::raw::pack_repeat`).
    at: [u32; WAYS],
    /// Reads collapsed into each way's record so far.
    extra: [u32; WAYS],
    /// Records of each way's line so far, up to [`WATCH_AFTER`].
    records: [u32; WAYS],
    /// The watch word of each watched way's line, found when the watch started, so that
    /// a read the way collapses (a poll's, a reread loop bound's) hashes nothing; only
    /// read while the way watches (its `gens` nonzero), which its line keeps.
    slots: [u16; WAYS],
    /// New lines taken (wrapping): the next replaces way `next % WAYS` (a power of two,
    /// so the order goes on across the wrap), with no wrap to compute on each.
    next: u32,
}

/// What [`Runs::read_fast`] did with a read.
#[derive(Debug, PartialEq, Eq)]
pub enum Fast {
    /// A plain record: the runs changed as `read`, `end` and `begin` would change them.
    Plain,
    /// Counted in an earlier record, as `read` counts it.
    Collapsed,
    /// Neither: nothing changed.
    Other,
}

/// What to do with a read.
pub enum Read {
    /// Counted in an earlier record: write nothing.
    Collapsed,
    /// Write a record; `way` is where [`Runs::recorded`] puts it (its old run ends).
    Record { way: usize, watch: bool },
}

impl Runs {
    /// Decides a read of `line` (address >> 6).
    #[inline(always)]
    pub fn read(&mut self, line: u64) -> Read {
        let tag = line + 1;
        let Some(way) = self.tags.iter().position(|&t| t == tag) else {
            // The oldest way that watches no line, so that a polled line keeps its
            // watch while the loop's other reads come and go; every way when all watch.
            let skip = (0..WAYS as u32)
                .find(|&i| self.gens[(self.next.wrapping_add(i)) as usize % WAYS] == 0)
                .unwrap_or(0);
            let way = self.next.wrapping_add(skip) as usize % WAYS;
            self.next = self.next.wrapping_add(skip + 1);
            self.records[way] = 1;
            return Read::Record { way, watch: false };
        };
        if self.collapses(way, line) {
            return Read::Collapsed;
        }
        let n = &mut self.records[way];
        *n = (*n + 1).min(WATCH_AFTER);
        Read::Record {
            way,
            watch: *n == WATCH_AFTER,
        }
    }

    /// [`Runs::read`] for the callbacks' fast path, in the two common cases, changing
    /// nothing otherwise ([`Fast::Other`]: the caller takes the general path). A read
    /// that `read` collapses: the same step ([`Fast::Collapsed`]). A read that is a plain
    /// record ([`Fast::Plain`]): it collapses nothing, ends no run that collapsed reads
    /// (so writes no repeat word) and starts no watch; then `read`, [`Runs::end`] and
    /// [`Runs::begin`] in one step, but for `at`. `at` is read only by [`Runs::end`] of
    /// a run that collapsed reads, which only a watch starts, and the record that starts
    /// a watch (the line's [`WATCH_AFTER`]th) takes the general path, whose `begin` sets
    /// it: so an unwatched way's `at` is left as it was.
    #[inline(always)]
    pub fn read_fast(&mut self, line: u64) -> Fast {
        let tag = line + 1;
        match self.tags.iter().position(|&t| t == tag) {
            Some(way) => {
                // Below WATCH_AFTER - 1 records, this one starts no watch, and the way is
                // unwatched (gens 0: only the WATCH_AFTERth record starts a watch, and
                // `records` stays at WATCH_AFTER until the way takes a new line, whose
                // `begin` clears `gens`), so it has collapsed nothing since `begin` or
                // `end_all` took its count, and `read` would not collapse.
                if self.records[way] < WATCH_AFTER - 1 {
                    debug_assert_eq!((self.gens[way], self.extra[way]), (0, 0));
                    self.records[way] += 1;
                    return Fast::Plain;
                }
                // `read`'s collapse; the way's other reads (the watch starting, or its
                // run ended by a write) take the general path.
                if self.collapses(way, line) {
                    return Fast::Collapsed;
                }
                return Fast::Other;
            }
            // A new line replaces way `next`, whose run must have collapsed nothing: an
            // unwatched way (gens 0, which `begin` leaves after `end` took the count,
            // and only a watch changes), which also needs no `gens` cleared. A watched
            // way (seldom: a spin-wait's) takes the general path.
            None => {
                let way = self.next as usize % WAYS;
                if self.gens[way] != 0 {
                    return Fast::Other;
                }
                debug_assert_eq!(self.extra[way], 0);
                self.next = self.next.wrapping_add(1);
                self.records[way] = 1;
                self.tags[way] = tag;
            }
        }
        Fast::Plain
    }

    /// [`Runs::read`]'s collapse alone: true, the read counted in its way's record, when
    /// `read` would say [`Read::Collapsed`]; false with nothing changed otherwise (then
    /// `read` says [`Read::Record`]: a watch word only moves on, so a generation that
    /// did not match never will). For a hot path whose reads mostly join their run.
    #[inline(always)]
    pub fn collapse_again(&mut self, line: u64) -> bool {
        let tag = line + 1;
        self.tags
            .iter()
            .position(|&t| t == tag)
            .is_some_and(|way| self.collapses(way, line))
    }

    /// Whether a read of `line`, held in `way`, collapses: the way watches the line and
    /// no write ended its generation since. If so, it is counted in the way's record.
    #[inline(always)]
    fn collapses(&mut self, way: usize, line: u64) -> bool {
        let g = self.gens[way];
        // A way watches only the line that `watch` found the word of: a new line in the
        // way (`begin`, or `read_fast`'s, which takes only unwatched ways) clears `gens`.
        debug_assert!(g == 0 || self.slots[way] as usize == slot_index(line));
        // Masked, which the compiler knows to be in bounds (a u16 may pass SLOTS).
        let word = &WATCH[self.slots[way] as usize & (SLOTS - 1)];
        let yes = g != 0 && word.load(Relaxed) == g && self.extra[way] < u32::MAX;
        if yes {
            self.extra[way] += 1;
        }
        yes
    }

    /// Starts a run in `way` (after [`Runs::end`] wrote out the old one) for `line`,
    /// whose record is access `at` of the chunk; the caller then calls [`Runs::watch`]
    /// when `read` said so, last (a call, kept off its hot path).
    #[inline(always)]
    pub fn begin(&mut self, way: usize, line: u64, at: u32) {
        self.tags[way] = line + 1;
        self.at[way] = at;
        self.gens[way] = 0;
    }

    /// Starts watching the line of a run that [`Runs::begin`] started in `way`, as a
    /// [`Read::Record`] with `watch` asks. A watched way holds its [`WATCH_AFTER`]
    /// records, which [`Runs::read_fast`] relies on: the chunk that the watching record
    /// filled may have left (`state::flush` empties the runs) between the decision and
    /// this call, and the way then came back with no records counted.
    #[inline(always)]
    pub fn watch(&mut self, way: usize, line: u64) {
        self.records[way] = WATCH_AFTER;
        start_watch(line, &mut self.gens[way], &mut self.slots[way]);
    }

    /// Ends every run (the chunk holding their records is being flushed); calls `emit`
    /// with each repeat word.
    pub fn end_all(&mut self, mut emit: impl FnMut(u64)) {
        for way in 0..WAYS {
            if let Some(w) = self.end(way) {
                emit(w);
            }
            self.tags[way] = 0;
        }
    }

    /// Ends the run held in `way`: its repeat word, if it collapsed any read.
    #[inline(always)]
    pub fn end(&mut self, way: usize) -> Option<u64> {
        let n = std::mem::take(&mut self.extra[way]);
        (n != 0).then(|| tdmap_wire::raw::pack_repeat(self.at[way], n))
    }
}

/// Whether a read that the stride predictor foresaw, at address `guess` stepping from
/// the address `prev` of the access it steps from, escapes the collapse: a nonzero step
/// moves on through memory, which a poll never does.
#[inline(always)]
pub fn moves_on(guess: u64, prev: u64) -> bool {
    guess != prev
}

/// Clears `line`'s watch word, as if no thread had watched a line of its slot: for
/// tests that record the same accesses twice and compare, since the watch words are
/// shared and a first recording's watches would change the second's.
#[cfg(test)]
pub fn forget(line: u64) {
    slot(line).store(0, Relaxed);
}

/// Whether some thread watches `line`'s watch word, so that [`wrote`] would end runs: a
/// write to a line of an unwatched word changes nothing.
#[inline(always)]
pub fn watched(line: u64) -> bool {
    slot(line).load(Relaxed) & 1 == 1
}

/// A write to `line` by any thread ends every run on its watch word.
#[inline(always)]
pub fn wrote(line: u64) {
    let w = slot(line);
    let v = w.load(Relaxed);
    if v & 1 == 1 {
        let _ = w.compare_exchange(v, v + 1, Relaxed, Relaxed);
    }
}

/// Starts watching `line`: sets `gen` to the generation that a later read must still
/// see, and `at` to the index of its watch word, which those reads load. Once per run
/// of [`WATCH_AFTER`] records, so kept off the hot path.
/// `extern "C"` (which cannot unwind): the callbacks reach it by a tail call.
#[cold]
#[inline(never)]
extern "C" fn start_watch(line: u64, gen: &mut u64, at: &mut u16) {
    let i = slot_index(line);
    *at = i as u16;
    let w = &WATCH[i];
    let mut v = w.load(Relaxed);
    *gen = loop {
        if v & 1 == 1 {
            break v;
        }
        match w.compare_exchange_weak(v, v + 1, Relaxed, Relaxed) {
            Ok(_) => break v + 1,
            Err(now) => v = now,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_collapsed(r: Read) -> bool {
        matches!(r, Read::Collapsed)
    }

    /// Reads `line` as the runtime does: a record goes at position `*len`.
    fn read(r: &mut Runs, line: u64, len: &mut u32, words: &mut Vec<u64>) -> bool {
        match r.read(line) {
            Read::Collapsed => true,
            Read::Record { way, watch } => {
                if let Some(w) = r.end(way) {
                    words.push(w);
                    *len += 1;
                }
                r.begin(way, line, *len);
                if watch {
                    r.watch(way, line);
                }
                *len += 1;
                false
            }
        }
    }

    #[test]
    fn a_polled_line_collapses_from_its_third_read_until_a_write() {
        let (mut r, mut len, mut words) = (Runs::default(), 0, Vec::new());
        let (flag, local) = (0x1000_0001, 0x2000_0003);
        // flag, local, ...: WATCH_AFTER records each (the last starts the watch).
        for _ in 0..WATCH_AFTER {
            for line in [flag, local] {
                assert!(!read(&mut r, line, &mut len, &mut words));
            }
        }
        let w = 2 * WATCH_AFTER;
        for _ in 0..10 {
            assert!(read(&mut r, flag, &mut len, &mut words));
            assert!(read(&mut r, local, &mut len, &mut words));
        }
        assert!(words.is_empty());
        wrote(flag);
        // The write ends the flag's run (its word says 10 more reads of its last record).
        assert!(!read(&mut r, flag, &mut len, &mut words));
        assert_eq!(words, [tdmap_wire::raw::pack_repeat(w - 2, 10)]);
        // The repeat word went at position w, the flag's new record (watched again at
        // once: the line stayed this thread's) at w + 1.
        assert!(read(&mut r, local, &mut len, &mut words));
        assert!(is_collapsed(r.read(flag)));
        let mut ended = Vec::new();
        r.end_all(|w| ended.push(w));
        assert_eq!(
            ended,
            [
                tdmap_wire::raw::pack_repeat(w + 1, 1),
                tdmap_wire::raw::pack_repeat(w - 1, 11)
            ]
        );
    }

    #[test]
    fn a_watched_line_keeps_its_way_while_other_lines_come_and_go() {
        let (mut r, mut len, mut words) = (Runs::default(), 0, Vec::new());
        let flag = 0x4000_0001;
        for _ in 0..WATCH_AFTER {
            assert!(!read(&mut r, flag, &mut len, &mut words));
        }
        // Many more new lines than ways, a flag read between each two.
        for i in 0..40 {
            assert!(
                !read(&mut r, 0x5000_0000 + i * 3, &mut len, &mut words),
                "{i}"
            );
            assert!(
                read(&mut r, flag, &mut len, &mut words),
                "flag after line {i}"
            );
        }
        assert!(words.is_empty());
        forget(flag);
    }

    #[test]
    fn more_lines_than_ways_record_every_read() {
        let (mut r, mut len, mut words) = (Runs::default(), 0, Vec::new());
        for i in 0..50 {
            let line = 0x3000_0000 + (i % (WAYS as u64 + 1)) * 7;
            assert!(!read(&mut r, line, &mut len, &mut words), "read {i}");
        }
        assert!(words.is_empty());
    }
}
