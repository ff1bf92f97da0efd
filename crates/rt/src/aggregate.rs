//! Aggregation for `tdmap trace --model-only` (`tdmap_wire::raw::ENV_AGGREGATE`): each
//! thread counts its accesses per line in a small table of 4 KiB blocks and, where its
//! batch ends, writes each block as one entry of a counted chunk (which lines, how many
//! accesses each: `tdmap_wire::raw::walk_counted`) instead of one record per access.
//!
//! Why the model loses nothing: within one thread's batch no other thread changes a
//! sharer set, so m accesses of the thread to one line are one update that counts m
//! events, whatever their order among the batch's other accesses (trace paper §III-B;
//! `tdmap_sharing::SharingModel::accesses_counted`, which takes these counts). A line
//! may leave the table before its batch ends (its block evicted, a count near its
//! limit): its later accesses then make a record of their own, which the model adds.
//!
//! Where a batch ends (the table drained into the chunk and the chunk written): when
//! the thread has run [`BATCH_CPU_NS`] of CPU time since the last one ended (the
//! runtime's batch clock, `crate::batch`, a helper thread that flips the thread's mode
//! word, which the hot path reads anyway, so the hot path counts nothing for it); where
//! the blocks its table evicted fill its chunk; when a window closes
//! (`state::resolve_pause`); at the thread's end; and before the thread's first
//! first-touch record, whose CPU tells `--model-only` the thread's node.
//!
//! Why blocks of lines: a block's 64 counts are reached from one tag, so a thread that
//! streams through memory misses once per 4 KiB instead of once per line, and the table
//! holds [`BLOCKS`] × 64 lines (4 MiB of data) for the cost of [`BLOCKS`] tags.

pub use tdmap_wire::raw::MAX_BLOCK_WORDS;
use tdmap_wire::raw::{pack_block, pack_full_block, BLOCK_LINES as LINES};

/// Blocks a thread counts at once: a power of two. 136 KiB a thread (16-bit counts).
/// Measured (lines written per access, 8 threads, 128 / 512 / 1,024 / 2,048 blocks):
/// `stencil3d 8 35` 0.063 / 0.042 / 0.041 / 0.041, `cg 8 104` 0.121 / 0.098 / 0.096 /
/// 0.091, `fft 8 128` 0.040 / 0.035 / 0.031 / 0.029; streaming loops (pairs 0.25,
/// pipeline 0.125) touch each line once whatever the size.
pub const BLOCKS: usize = 1024;
/// log2 of a block's bytes: the wire's blocks (`tdmap_wire::raw::walk_counted`).
const BLOCK_SHIFT: u32 = 12;
const _: () = assert!(1 << (BLOCK_SHIFT - 6) == LINES);
/// A thread's CPU time in a batch (`crate::batch`): long enough that a line a loop
/// reuses makes one entry per batch rather than one per reuse, short enough that the
/// model sees the threads' accesses interleaved about as finely as a trace's chunks do
/// (`tests/trace/model_only.rs` checks the matrices against a trace's). CPU time, not
/// the wall clock: a thread that the machine's load keeps waiting must not make larger
/// batches than one that runs.
pub const BATCH_CPU_NS: u64 = 4_000_000;
/// A line's count from which its accesses leave the hot path (`state::lines::hot`):
/// there the spin collapse's rule runs, and a count near `u16::MAX` is written out.
/// Few lines of ordinary loops get this many accesses in one batch; a polled flag gets
/// them at once.
pub const HOT: u32 = 256;
/// Where a line's count lies in a [`Blocks`]: its index among the counts as one array,
/// which the hot path adds to the table's address in the load itself.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct CountAt(usize);

impl CountAt {
    /// The count of `addr`'s line in entry `i`.
    #[inline(always)]
    fn of(i: usize, addr: u64) -> CountAt {
        debug_assert!(i < BLOCKS);
        CountAt(i * LINES + (addr >> 6) as usize % LINES)
    }

    /// The entry this count belongs to.
    #[inline(always)]
    pub fn entry(self) -> usize {
        self.0 / LINES
    }
}

/// The tag of an empty entry: no block's number (blocks are addresses >> 12).
const EMPTY: u64 = u64::MAX;

/// A thread's table of counted lines; [`Blocks::clear`] makes it empty (its tags are
/// [`EMPTY`]: a block's number itself is the tag, so that the hot path compares it with
/// no arithmetic).
#[repr(C)]
pub struct Blocks {
    /// Each entry's block number, [`EMPTY`] when empty.
    tags: [u64; BLOCKS],
    /// Accesses counted to each line of each entry's block.
    /// 16 bits each: a block's counts take two cache lines, which a leaving block's scan
    /// reads; a count near the limit leaves with its block (`state::lines::hot`).
    counts: [[u16; LINES]; BLOCKS],
}

/// The bit of each line with a nonzero count (`tdmap_wire::raw::lines_of`), 16 counts
/// to a compare: a table evicts blocks of one line as often as full ones.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lines_of(counts: &[u16; LINES]) -> u64 {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi16, _mm_loadu_si128, _mm_movemask_epi8};
    use std::arch::x86_64::{_mm_packs_epi16, _mm_setzero_si128};
    let mut zero = 0u64;
    for (q, sixteen) in counts.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of x86_64; `sixteen` is 16 u16s, 32 readable bytes, and
        // the loads take any alignment.
        let mask = unsafe {
            let p = sixteen.as_ptr().cast::<__m128i>();
            let (lo, hi) = (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)));
            let z = _mm_setzero_si128();
            // Each count's compare (0 or -1 in 16 bits) packed to a byte, in order.
            _mm_movemask_epi8(_mm_packs_epi16(
                _mm_cmpeq_epi16(lo, z),
                _mm_cmpeq_epi16(hi, z),
            ))
        };
        zero |= (mask as u16 as u64) << (16 * q);
    }
    !zero
}

/// The bit of each line with a nonzero count.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn lines_of(counts: &[u16; LINES]) -> u64 {
    tdmap_wire::raw::lines_of(counts)
}

/// The entry of `block`: a multiplicative hash, so that arrays a whole number of tables
/// apart (large allocations are page-aligned) do not evict each other at every access.
/// On the block number's low 32 bits (16 TiB of address space), whose 32-bit multiply
/// with a 32-bit constant is 9 bytes of code shorter than the 64-bit one on the hot path.
#[inline(always)]
fn entry(block: u64) -> usize {
    ((block as u32).wrapping_mul(0x9E37_79B1) >> (32 - BLOCKS.trailing_zeros())) as usize
}

impl Blocks {
    /// Counts one more access to `addr` if its entry holds its block (the hot path):
    /// the line's new count and where it lies, or None when the caller must
    /// [`Blocks::install`] the block. The new count is computed in 32 bits from the
    /// loaded one, and stored narrowed: a count never passes `u16::MAX - 1`
    /// (`state::lines::hot` writes its block out there), so the two are the same, and
    /// the compare needs no second widening. A line counted [`HOT`] times goes on to
    /// `state::lines::hot`, which finds its count at the place given, with no second hash.
    #[inline(always)]
    pub fn hit_at(&mut self, addr: u64) -> Option<(u32, CountAt)> {
        let block = addr >> BLOCK_SHIFT;
        let i = entry(block);
        if self.tags[i] != block {
            return None;
        }
        let at = CountAt::of(i, addr);
        let c = self.count_in(at);
        let n = *c as u32 + 1;
        *c = n as u16;
        Some((n, at))
    }

    /// [`Blocks::hit_at`]'s count alone.
    #[cfg(test)]
    pub fn hit(&mut self, addr: u64) -> Option<u32> {
        self.hit_at(addr).map(|(n, _)| n)
    }

    /// The count at `at`, which [`Blocks::hit_at`] gave since the table last changed.
    #[inline(always)]
    pub fn count_in(&mut self, at: CountAt) -> &mut u16 {
        // SAFETY: a CountAt is only made by `CountAt::of`, from an entry below BLOCKS
        // and a line below LINES: it is below BLOCKS * LINES, the counts' length.
        unsafe { self.counts.as_flattened_mut().get_unchecked_mut(at.0) }
    }

    /// The count of `addr`'s line, whose block the table holds.
    #[inline(always)]
    pub fn count_mut(&mut self, addr: u64) -> &mut u16 {
        self.count_in(CountAt::of(entry(addr >> BLOCK_SHIFT), addr))
    }

    /// Counts the first access to `addr`'s line, whose block was just installed.
    #[inline(always)]
    pub fn first(&mut self, addr: u64) {
        *self.count_mut(addr) = 1;
    }

    /// Puts `addr`'s block into its entry with no access counted; the block it evicts
    /// is written at the start of `out` (room for [`MAX_BLOCK_WORDS`]) as a counted
    /// chunk's entry: returns its words and the accesses its lines stood for.
    #[inline(always)]
    pub fn install(&mut self, addr: u64, out: &mut [u64]) -> (usize, u64) {
        let block = addr >> BLOCK_SHIFT;
        let i = entry(block);
        let taken = self.take(i, out);
        self.tags[i] = block;
        taken
    }

    /// Empties entry `i` (below [`BLOCKS`]) into `out` as [`Blocks::install`] does.
    #[inline(always)]
    pub fn take(&mut self, i: usize, out: &mut [u64]) -> (usize, u64) {
        let block = std::mem::replace(&mut self.tags[i], EMPTY);
        if block == EMPTY {
            return (0, 0);
        }
        let counts = &mut self.counts[i];
        let lines = lines_of(counts);
        if lines == u64::MAX {
            // A streaming loop's block: its counts packed and summed with no line loop.
            let n = pack_full_block(block, counts, out);
            let accesses = counts.iter().map(|&c| c as u64).sum();
            *counts = [0; LINES];
            return (n, accesses);
        }
        let n = pack_block(block, lines, counts, out);
        let (mut rest, mut accesses) = (lines, 0);
        while rest != 0 {
            accesses += std::mem::take(&mut counts[rest.trailing_zeros() as usize]) as u64;
            rest &= rest - 1;
        }
        (n, accesses)
    }

    /// Fetches into the cache the counts of the entry that `addr`'s next block would
    /// take: a loop streaming through memory misses there next, and that miss first
    /// scans the counts of the block it evicts, which left the cache long ago (two
    /// thirds of `lines::miss`'s samples on phase and pairs were those loads). Only a
    /// hint: nothing changes, whatever the next access.
    #[inline(always)]
    pub fn prefetch_next(&self, addr: u64) {
        let counts = &self.counts[entry((addr >> BLOCK_SHIFT) + 1)];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p = counts.as_ptr().cast::<i8>();
            // SAFETY: SSE is part of x86_64, and a prefetch never faults; both addresses
            // are within `counts` (128 bytes, two cache lines).
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p);
                _mm_prefetch::<_MM_HINT_T0>(p.add(64));
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = counts;
    }

    /// The entry holding `addr`'s block, if any.
    #[cfg(test)]
    pub fn holding(&self, addr: u64) -> Option<usize> {
        let block = addr >> BLOCK_SHIFT;
        let i = entry(block);
        (self.tags[i] == block).then_some(i)
    }

    /// Forgets every entry without writing it (a forked child's copy of its parent's).
    pub fn clear(&mut self) {
        self.empty_tags();
        self.counts = [[0; LINES]; BLOCKS];
    }

    /// Makes a new thread's table, all zeros as its state is mapped, empty: only the
    /// tags need it. Volatile stores, which the compiler cannot make a `memset` call: the
    /// thread is registering (`state::register_current`), and the interceptor of a
    /// `memset` called from there registered it a second time, as another thread.
    pub fn empty_tags(&mut self) {
        for t in self.tags.iter_mut() {
            // SAFETY: `t` is a valid, aligned, exclusive reference.
            unsafe { std::ptr::write_volatile(t, EMPTY) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdmap_wire::raw::{walk_counted, Counted};

    fn empty() -> Box<Blocks> {
        // SAFETY: all zeros is a valid table (integers only), which `clear` empties, as
        // the runtime does with its mmap'd state.
        let mut t = unsafe { Box::<Blocks>::new_zeroed().assume_init() };
        t.clear();
        t
    }

    /// Two blocks of one entry: `a` and another block that hashes to the same entry.
    fn colliding() -> (u64, u64) {
        let a = 0x7f00_0000u64 >> BLOCK_SHIFT;
        let b = (a + 1..).find(|&l| entry(l) == entry(a)).unwrap();
        (a << BLOCK_SHIFT, b << BLOCK_SHIFT)
    }

    /// An access as the runtime makes it: a hit, else an install and its first count.
    fn access(t: &mut Blocks, addr: u64, out: &mut Vec<u64>) {
        if t.hit(addr).is_none() {
            let mut words = [0; MAX_BLOCK_WORDS];
            let (n, _) = t.install(addr, &mut words);
            out.extend_from_slice(&words[..n]);
            t.first(addr);
        }
    }

    fn drain(t: &mut Blocks, out: &mut Vec<u64>) -> u64 {
        let mut total = 0;
        for i in 0..BLOCKS {
            let mut words = [0; MAX_BLOCK_WORDS];
            let (n, accesses) = t.take(i, &mut words);
            out.extend_from_slice(&words[..n]);
            total += accesses;
        }
        total
    }

    /// (line address, accesses) of each line in `words`.
    fn lines_in(words: &[u64]) -> Vec<(u64, u32)> {
        let mut got = Vec::new();
        walk_counted(words, |c| {
            if let Counted::Line { addr, count } = c {
                got.push((addr, count));
            }
        })
        .unwrap();
        got
    }

    #[test]
    fn an_evicted_block_leaves_as_one_entry_with_each_lines_count() {
        let (a, b) = colliding();
        let (mut t, mut out) = (empty(), Vec::new());
        for _ in 0..5 {
            access(&mut t, a + 8, &mut out);
        }
        access(&mut t, a + 64 * 3, &mut out);
        assert!(out.is_empty(), "hits write nothing");
        access(&mut t, b, &mut out);
        assert_eq!(lines_in(&out), [(a, 5), (a + 192, 1)]);
        assert_eq!(t.hit(b), Some(2), "the new block counts on");
        assert_eq!(t.hit(a), None, "the old block is gone");
        assert_eq!(t.holding(b), Some(entry(b >> BLOCK_SHIFT)));
    }

    #[test]
    fn an_empty_table_holds_no_block_not_even_the_first() {
        // A block's number is its tag, so an empty entry must hold none: block 0 too.
        let mut t = empty();
        assert_eq!(t.hit(0x40), None);
        assert_eq!(t.holding(0x40), None);
        let mut words = [0; MAX_BLOCK_WORDS];
        assert_eq!(t.take(entry(0), &mut words), (0, 0));
    }

    #[test]
    fn a_full_block_leaves_with_every_lines_count_and_its_sum() {
        let (a, b) = colliding();
        let (mut t, mut out) = (empty(), Vec::new());
        let mut want = Vec::new();
        for line in 0..LINES as u64 {
            for _ in 0..=line % 5 {
                access(&mut t, a + line * 64 + 8, &mut out);
            }
            want.push((a + line * 64, 1 + (line % 5) as u32));
        }
        let mut words = [0; MAX_BLOCK_WORDS];
        let (n, accesses) = t.install(b, &mut words);
        assert_eq!(lines_in(&words[..n]), want);
        assert_eq!(accesses, want.iter().map(|w| w.1 as u64).sum::<u64>());
        t.first(b);
        assert_eq!(t.take(entry(b >> BLOCK_SHIFT), &mut words).1, 1, "emptied");
    }

    #[test]
    fn a_block_streamed_through_alike_leaves_as_one_word() {
        let (a, b) = colliding();
        let (mut t, mut out) = (empty(), Vec::new());
        for line in 0..LINES as u64 {
            for byte in [0, 16, 32, 48] {
                access(&mut t, a + line * 64 + byte, &mut out);
            }
        }
        let mut words = [0; MAX_BLOCK_WORDS];
        let (n, accesses) = t.install(b, &mut words);
        assert_eq!((n, accesses), (1, 4 * LINES as u64));
        let want: Vec<_> = (0..LINES as u64).map(|k| (a + k * 64, 4)).collect();
        assert_eq!(lines_in(&words[..n]), want);
    }

    #[test]
    fn lines_of_finds_each_nonzero_count() {
        let mut counts = [0u16; LINES];
        for (k, c) in [
            (0, 1),
            (5, 7),
            (15, 1 << 15),
            (16, 3),
            (31, u16::MAX),
            (32, 2),
            (63, 1 << 8),
        ] {
            counts[k] = c;
        }
        assert_eq!(lines_of(&counts), tdmap_wire::raw::lines_of(&counts));
        assert_eq!(
            lines_of(&counts),
            1 | 1 << 5 | 1 << 15 | 1 << 16 | 1 << 31 | 1 << 32 | 1 << 63
        );
        assert_eq!(lines_of(&[0; LINES]), 0);
    }

    #[test]
    fn a_drain_empties_every_line_once_with_its_count() {
        let (mut t, mut out) = (empty(), Vec::new());
        let mut want = std::collections::HashMap::new();
        for k in 0..300u64 {
            // Lines of 40 blocks, some in the same block, some colliding.
            let addr = 0x1000_0000 + (k % 40) * 0x3000 + (k % 7) * 64;
            for _ in 0..=k % 4 {
                access(&mut t, addr, &mut out);
                *want.entry(addr).or_insert(0u32) += 1;
            }
        }
        let total: u64 = want.values().map(|&n| n as u64).sum();
        let drained = drain(&mut t, &mut out);
        let mut got = std::collections::HashMap::new();
        for (line, n) in lines_in(&out) {
            *got.entry(line).or_insert(0) += n;
        }
        assert_eq!(got, want);
        assert!(drained > 0 && drained <= total);
        out.clear();
        assert_eq!(drain(&mut t, &mut out), 0);
        assert!(out.is_empty(), "a drained table is empty");
    }
}
