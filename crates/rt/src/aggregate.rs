//! Aggregation for `tdmap trace --model-only` (`tdmap_wire::raw::ENV_AGGREGATE`): each
//! thread counts its accesses per line in a small direct-mapped table and writes one
//! record and a count word per line and stretch, instead of one record per access.
//!
//! Why the model loses nothing: within one thread's batch no other thread changes a
//! sharer set, so m accesses of the thread to one line are one update that counts m
//! events, whatever their order among the batch's other accesses (trace paper §III-B;
//! `tdmap_sharing::SharingModel::accesses_counted`, which takes these counts). So the
//! table only has to be emptied where the batch or the thread's node changes: before a
//! chunk is written (`state::flush`, also at a window's pause and at the thread's end)
//! and before a first-touch record, whose CPU tells `--model-only` the thread's node.
//! Reads that the spin collapse dropped (`collapse.rs`) never reach the table: they
//! stay counted once, as in a trace.

use tdmap_wire::raw::pack_count;

/// Lines a thread counts at once: a power of two. Measured at 8 threads (records read
/// for the same accesses, 64 / 128 / 512 / 1024 entries): `fft 8 128` 10.8 / 9.0 / 3.2 /
/// 2.7 M, `cg 8 104` 12.3 / 11.2 / 10.1 / 9.8 M, `stencil3d 8 35` 9.0 / 7.5 / 6.7 / 6.7 M;
/// more entries cost a longer scan at each first touch and flush, and chunk room.
pub const ENTRIES: usize = 512;
/// Words one entry can take in a chunk: its record and its count word.
pub const WORDS_PER_ENTRY: usize = 2;

/// A thread's table of counted lines; all zeros (its mmap'd state) is empty.
#[repr(C)]
pub struct Lines {
    /// Line number + 1 of each entry, 0 when empty.
    tags: [u64; ENTRIES],
    /// The record of the entry's first access (its address stands for the line).
    words: [u64; ENTRIES],
    /// Accesses the entry stands for.
    counts: [u32; ENTRIES],
}

/// The words of a line taken from the table: its record, then a count word when it
/// stands for more than one access.
#[inline(always)]
pub fn line_words(word: u64, count: u32, mut emit: impl FnMut(u64)) {
    emit(word);
    if count > 1 {
        emit(pack_count(count));
    }
}

/// The entry of `line`: a multiplicative hash, so that arrays a whole number of pages
/// apart (large allocations are page-aligned) do not evict each other at every access.
#[inline(always)]
fn entry(line: u64) -> usize {
    (line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - ENTRIES.trailing_zeros())) as usize
}

impl Lines {
    /// Counts one more access to `line` if its entry holds it (the hot path); false
    /// when the caller must [`Lines::install`] it.
    #[inline(always)]
    pub fn hit(&mut self, line: u64) -> bool {
        let i = entry(line);
        // A count at its limit takes the miss path, which writes it out and starts anew.
        let hit = self.tags[i] == line + 1 && self.counts[i] != u32::MAX;
        if hit {
            self.counts[i] += 1;
        }
        hit
    }

    /// Puts `line`, first accessed with record `word`, into its entry; returns the
    /// entry's previous line as its record and count, for [`line_words`].
    #[inline(always)]
    pub fn install(&mut self, line: u64, word: u64) -> Option<(u64, u32)> {
        let i = entry(line);
        let old = self.take(i);
        self.tags[i] = line + 1;
        self.words[i] = word;
        self.counts[i] = 1;
        old
    }

    /// Empties entry `i` (below [`ENTRIES`]): its record and count, None if it was empty.
    #[inline(always)]
    pub fn take(&mut self, i: usize) -> Option<(u64, u32)> {
        (std::mem::take(&mut self.tags[i]) != 0).then(|| (self.words[i], self.counts[i]))
    }

    /// Forgets every entry without writing it (a forked child's copy of its parent's).
    pub fn clear(&mut self) {
        self.tags = [0; ENTRIES];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdmap_wire::raw::{pack, unpack_count};

    fn empty() -> Box<Lines> {
        Box::new(Lines {
            tags: [0; ENTRIES],
            words: [0; ENTRIES],
            counts: [0; ENTRIES],
        })
    }

    /// Two lines of one entry: `a` and another line that hashes to the same entry.
    fn colliding() -> (u64, u64) {
        let a = 0x7f00_0000u64;
        let b = (a + 1..).find(|&l| entry(l) == entry(a)).unwrap();
        (a, b)
    }

    /// Accesses to `line` as the runtime makes them: a hit, else an install.
    fn access(t: &mut Lines, line: u64, out: &mut Vec<u64>) {
        if !t.hit(line) {
            if let Some((w, n)) = t.install(line, pack(line << 6, 3, false, false)) {
                line_words(w, n, |w| out.push(w));
            }
        }
    }

    fn drain(t: &mut Lines, out: &mut Vec<u64>) {
        for i in 0..ENTRIES {
            if let Some((w, n)) = t.take(i) {
                line_words(w, n, |w| out.push(w));
            }
        }
    }

    #[test]
    fn an_evicted_line_leaves_as_its_first_record_and_its_count() {
        let (a, b) = colliding();
        let (mut t, mut out) = (empty(), Vec::new());
        for _ in 0..5 {
            access(&mut t, a, &mut out);
        }
        assert!(out.is_empty(), "hits write nothing");
        access(&mut t, b, &mut out);
        assert_eq!(out, [pack(a << 6, 3, false, false), pack_count(5)]);
        out.clear();
        // A line met once leaves as a record with no count word.
        access(&mut t, a, &mut out);
        assert_eq!(out, [pack(b << 6, 3, false, false)]);
    }

    #[test]
    fn a_drain_empties_every_line_once_with_its_count() {
        let (mut t, mut out) = (empty(), Vec::new());
        let lines: Vec<u64> = (0..40).map(|i| 0x1000 + 3 * i).collect();
        let mut want = std::collections::HashMap::new();
        for (k, &l) in lines.iter().enumerate() {
            for _ in 0..=k % 4 {
                access(&mut t, l, &mut out);
                *want.entry(l).or_insert(0u32) += 1;
            }
        }
        drain(&mut t, &mut out);
        // Sum each line's counts from the words (a record, then maybe its count word).
        let mut got = std::collections::HashMap::new();
        let mut i = 0;
        while i < out.len() {
            let line = tdmap_wire::raw::unpack(out[i]).addr >> 6;
            let n = out.get(i + 1).and_then(|&w| unpack_count(w));
            *got.entry(line).or_insert(0) += n.unwrap_or(1);
            i += 1 + n.is_some() as usize;
        }
        assert_eq!(got, want);
        out.clear();
        drain(&mut t, &mut out);
        assert!(out.is_empty(), "a drained table is empty");
    }

    #[test]
    fn a_count_at_its_limit_starts_a_new_record() {
        let (mut t, mut out) = (empty(), Vec::new());
        let a = 0x5000;
        access(&mut t, a, &mut out);
        t.counts[entry(a)] = u32::MAX;
        access(&mut t, a, &mut out);
        assert_eq!(
            out,
            [pack(a << 6, 3, false, false), pack_count(u32::MAX)],
            "no count wraps to 0"
        );
    }
}
