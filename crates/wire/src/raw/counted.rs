//! Counted chunks (wire version 8, [`KIND_COUNTED`]): what an aggregating thread
//! (`tdmap trace --model-only`, [`ENV_AGGREGATE`]) writes instead of an access chunk.
//! After the chunk's [`TICKS`] clock words (only the first is read: when the chunk's
//! first entry was written), its `count` words are entries, each starting with a tag
//! word whose low bits say which:
//!
//! - a **block** (tag [`BLOCK`]): the tag word is the 4 KiB block's address with the
//!   tag, and [`WIDE`] when its counts take 32 bits; then a word whose bit k says that
//!   line k of the block was accessed; then the accesses to each of those lines, in
//!   line order, four 16-bit counts to a word (two 32-bit ones when [`WIDE`]), the
//!   first in the low bits;
//! - a **uniform block** (tag [`SAME`] in the low 12 bits): a block whose 64 lines were
//!   all accessed the same number of times, in one word: the block's address in bits 12
//!   to 47 and the count of each line (1 to 65,535) in bits 48 to 63 (a loop streaming
//!   through memory leaves such blocks behind it);
//! - a **line** (tag [`LINE`] in the low 6 bits): a block with one line accessed, in one
//!   word: the line's address in bits 6 to 47 and its count (1 to 65,535) in bits 48 to
//!   63 (a strided walk evicts such blocks at every access);
//! - a **first touch** (the word [`FIRST`]): the first-touch record ([`pack`]) and its
//!   CPU word ([`pack_cpu`]) follow, as in an access chunk.
//!
//! A block of 64 lines read 4 times each takes one word (18 when their counts differ),
//! where an access chunk took a record and a count word per line (128): the runtime packs them and `tdmap trace`
//! reads them at an eighth of the cost, and the model takes each block's lines as one
//! run on its page.

#[allow(unused_imports)] // named in the docs
use super::{pack, pack_cpu, ENV_AGGREGATE, KIND_COUNTED, TICKS};
use super::{unpack, unpack_cpu};
use crate::WireError;

/// log2 of a block's bytes: 4 KiB, 64 lines of 64 bytes.
pub const BLOCK_SHIFT: u32 = 12;
/// Lines per block.
pub const BLOCK_LINES: usize = 1 << (BLOCK_SHIFT - 6);
/// Tag of a block entry.
pub const BLOCK: u64 = 1;
/// Flag of a block entry whose counts take 32 bits each.
pub const WIDE: u64 = 2;
/// Tag of a line entry.
pub const LINE: u64 = 2;
/// A first-touch entry's tag word.
pub const FIRST: u64 = 4;
/// Tag of a uniform block entry (the low 12 bits of its word).
pub const SAME: u64 = 8;
/// The address bits of a line entry; its count is above them.
const LINE_ADDR: u64 = ((1 << 48) - 1) & !63;
/// Bits of a tag word that are tag and flags (a block's address has them clear).
const TAG_BITS: u64 = (1 << BLOCK_SHIFT) - 1;
/// The address bits of a uniform block entry; its count is above them.
const SAME_ADDR: u64 = ((1 << 48) - 1) & !TAG_BITS;
/// Most words one block entry takes: every line, wide.
pub const MAX_BLOCK_WORDS: usize = 2 + BLOCK_LINES / 2;
/// Words a first-touch entry takes.
pub const FIRST_WORDS: usize = 3;

/// Writes the entry of block number `block`, whose lines with their bit set in `lines`
/// had `counts[k]` accesses each (none 0), at the start of `out` (room for
/// [`MAX_BLOCK_WORDS`]); returns the words written, 0 when `lines` is empty.
#[inline]
pub fn pack_block<C: Copy + Into<u32>>(
    block: u64,
    lines: u64,
    counts: &[C; BLOCK_LINES],
    out: &mut [u64],
) -> usize {
    if lines == 0 {
        return 0;
    }
    // The counts of the lines accessed, gathered in line order, then packed; a loop per
    // line accessed, not per line of the block (a table evicts sparse blocks too).
    let mut got = [0u32; BLOCK_LINES];
    let (mut rest, mut m, mut any) = (lines, 0, 0);
    while rest != 0 {
        let c = counts[rest.trailing_zeros() as usize].into();
        got[m] = c;
        any |= c;
        rest &= rest - 1;
        m += 1;
    }
    let wide = any > u16::MAX as u32;
    let first = (block << BLOCK_SHIFT) + ((lines.trailing_zeros() as u64) << 6);
    if m == 1 && !wide && first & LINE_ADDR == first {
        out[0] = first | LINE | (got[0] as u64) << 48;
        return 1;
    }
    out[0] = (block << BLOCK_SHIFT) | BLOCK | if wide { WIDE } else { 0 };
    out[1] = lines;
    let per = if wide { 2 } else { 4 };
    let words = m.div_ceil(per);
    for (w, out) in out[2..2 + words].iter_mut().enumerate() {
        let g = &got[w * per..];
        *out = if wide {
            g[0] as u64 | (g[1] as u64) << 32
        } else {
            g[0] as u64 | (g[1] as u64) << 16 | (g[2] as u64) << 32 | (g[3] as u64) << 48
        };
    }
    2 + words
}

/// [`pack_block`] for a block whose 64 lines were all accessed, with 16-bit counts
/// (none 0), at the start of `out` (room for [`MAX_BLOCK_WORDS`]); returns the words
/// written. Lines all counted alike (a loop streaming through memory) take one word, a
/// uniform block entry. Otherwise the entry's count words are the counts as they lie in
/// memory, four to a word, the first in the low bits (18 words): either way with no loop
/// over the lines.
#[inline]
pub fn pack_full_block(block: u64, counts: &[u16; BLOCK_LINES], out: &mut [u64]) -> usize {
    const WORDS: usize = 2 + BLOCK_LINES / 4;
    let c = counts[0];
    // Folded, not searched, so that it compiles to vector compares.
    let differ = counts.iter().fold(0, |d, &k| d | (k ^ c));
    let base = block << BLOCK_SHIFT;
    if differ == 0 && base & SAME_ADDR == base {
        out[0] = base | SAME | (c as u64) << 48;
        return 1;
    }
    out[0] = base | BLOCK;
    out[1] = u64::MAX;
    for (o, q) in out[2..WORDS].iter_mut().zip(counts.chunks_exact(4)) {
        *o = q[0] as u64 | (q[1] as u64) << 16 | (q[2] as u64) << 32 | (q[3] as u64) << 48;
    }
    WORDS
}

/// The bit of each line with a nonzero count in `counts`: what [`pack_block`] takes.
pub fn lines_of<C: Copy + Into<u32>>(counts: &[C; BLOCK_LINES]) -> u64 {
    counts
        .iter()
        .enumerate()
        .fold(0, |b, (k, &c)| b | ((c.into() != 0) as u64) << k)
}

/// Writes a first-touch entry: the tag, the record and its CPU word.
#[inline]
pub fn pack_first(record: u64, cpu_word: u64) -> [u64; FIRST_WORDS] {
    [FIRST, record, cpu_word]
}

/// One entry of a counted chunk, as [`walk_counted`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// `count` accesses to the 64-byte line at `addr`.
    Line {
        /// The line's address.
        addr: u64,
        /// Accesses the thread made to it.
        count: u32,
    },
    /// The first touch of a page: its record, and the CPU the thread ran on (None when
    /// a crash cut the CPU word off).
    First {
        /// The first-touch record ([`pack`]).
        record: u64,
        /// Its CPU word's CPU.
        cpu: Option<u32>,
    },
}

fn damaged(why: &str) -> WireError {
    WireError::Malformed {
        what: "counted chunk",
        why: why.to_string(),
    }
}

/// One entry of a counted chunk with a block's lines left packed, as [`Entries`] gives it:
/// `tdmap trace --model-only` takes a block's lines as one run on its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry<'a> {
    /// A block entry.
    Block(Block<'a>),
    /// A line entry (a block with one line), or a first-touch entry.
    One(Counted),
}

/// A block entry: which lines of the 4 KiB block at `base` were accessed, and their
/// counts, packed as [`pack_block`] wrote them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block<'a> {
    /// The block's address.
    pub base: u64,
    /// Bit k: line k was accessed (never 0).
    pub lines: u64,
    wide: bool,
    counts: &'a [u64],
    /// Every line's count when the entry is a uniform block ([`SAME`]), else 0.
    same: u32,
}

impl Block<'_> {
    /// Gives `f` each accessed line's address and count, in line order. A count of 0
    /// (damaged words, which [`Block::check`] refuses) is given as it is.
    #[inline(always)]
    pub fn each(&self, mut f: impl FnMut(u64, u32)) {
        if self.same != 0 {
            for k in 0..BLOCK_LINES as u64 {
                f(self.base + (k << 6), self.same);
            }
            return;
        }
        let (per, width, mask) = if self.wide {
            (2, 32, u32::MAX as u64)
        } else {
            (4, 16, u16::MAX as u64)
        };
        let mut rest = self.lines;
        for &w in self.counts {
            let mut w = w;
            for _ in 0..per {
                if rest == 0 {
                    return;
                }
                f(
                    self.base + ((rest.trailing_zeros() as u64) << 6),
                    (w & mask) as u32,
                );
                rest &= rest - 1;
                w >>= width;
            }
        }
    }

    /// The accesses of all its lines: every lane of the count words summed at once (the
    /// lanes past the last line are 0, as [`pack_block`] writes them).
    #[inline(always)]
    pub fn total(&self) -> u64 {
        if self.same != 0 {
            return BLOCK_LINES as u64 * self.same as u64;
        }
        let (low, width) = if self.wide {
            (u32::MAX as u64, 32)
        } else {
            (0x0000_ffff_0000_ffff, 16)
        };
        // Each word's lanes added in pairs: two 32-bit sums (at most 2 * 65,535 each, or
        // a wide lane), 16 words at most, so that the sums never carry.
        let pairs: u64 = self
            .counts
            .iter()
            .map(|&w| (w & low) + ((w >> width) & low))
            .sum();
        if self.wide {
            pairs
        } else {
            (pairs & u32::MAX as u64) + (pairs >> 32)
        }
    }

    /// An error when some accessed line is counted 0 times: a word's counts are tested
    /// at once, not line by line (a reader checks every chunk before it is fed).
    #[inline]
    pub fn check(&self) -> Result<(), WireError> {
        if self.same != 0 {
            // Its one count is not 0: `Entries` refuses a uniform block counted 0 times.
            return Ok(());
        }
        let (per, low, high) = if self.wide {
            (2, 0x0000_0001_0000_0001u64, 0x8000_0000_8000_0000u64)
        } else {
            (4, 0x0001_0001_0001_0001, 0x8000_8000_8000_8000)
        };
        let width = 64 / per;
        let mut left = self.lines.count_ones() as usize;
        for &w in self.counts {
            // The lanes past the last line are not counts: set, so they test nonzero.
            let used = left.min(per);
            left -= used;
            let x = if used == per {
                w
            } else {
                w | (u64::MAX << (used * width))
            };
            if x.wrapping_sub(low) & !x & high != 0 {
                return Err(damaged("a line counted 0 times"));
            }
        }
        Ok(())
    }
}

/// The entries of a counted chunk's words (its ticks left out), in order: an error for
/// words whose entries do not parse (a block's counts are checked by [`Block::check`]),
/// after which it gives nothing. A first-touch entry cut off at the chunk's end (a
/// crash) keeps its record.
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    words: &'a [u64],
    at: usize,
}

impl<'a> Entries<'a> {
    /// The entries of `words`.
    pub fn new(words: &'a [u64]) -> Self {
        Entries { words, at: 0 }
    }

    /// The next entry of words a reader checked ([`check_counted`]): None at the end,
    /// and at an entry that does not parse. The hot loop's form of [`Iterator::next`],
    /// with no error to build or carry.
    #[inline(always)]
    pub fn next_checked(&mut self) -> Option<Entry<'a>> {
        self.decode().unwrap_or(None)
    }

    /// The next entry, None at the end; the reason when it does not parse, after which
    /// it gives nothing.
    #[inline(always)]
    fn decode(&mut self) -> Result<Option<Entry<'a>>, &'static str> {
        let (words, i) = (self.words, self.at);
        let Some(&tag) = words.get(i) else {
            return Ok(None);
        };
        // Where it fails, it stays failed: past the end.
        self.at = words.len();
        let entry = match tag & TAG_BITS {
            FIRST if tag == FIRST => {
                let Some(&record) = words.get(i + 1) else {
                    return Err("a first-touch entry without its record");
                };
                if !unpack(record).first_touch {
                    return Err("a first-touch entry whose record is no first touch");
                }
                let cpu = words.get(i + 2).and_then(|&w| unpack_cpu(w));
                self.at = (i + FIRST_WORDS).min(words.len());
                Entry::One(Counted::First { record, cpu })
            }
            _ if tag & 63 == LINE => {
                let count = (tag >> 48) as u32;
                if count == 0 {
                    return Err("a line counted 0 times");
                }
                self.at = i + 1;
                Entry::One(Counted::Line {
                    addr: tag & LINE_ADDR,
                    count,
                })
            }
            SAME => {
                let same = (tag >> 48) as u32;
                if same == 0 {
                    return Err("a line counted 0 times");
                }
                self.at = i + 1;
                Entry::Block(Block {
                    base: tag & SAME_ADDR,
                    lines: u64::MAX,
                    wide: false,
                    counts: &[],
                    same,
                })
            }
            t if t & !WIDE == BLOCK => {
                let wide = t & WIDE != 0;
                let Some(&lines) = words.get(i + 1).filter(|&&b| b != 0) else {
                    return Err("a block entry with no line");
                };
                let need = (lines.count_ones() as usize).div_ceil(if wide { 2 } else { 4 });
                let Some(counts) = words.get(i + 2..i + 2 + need) else {
                    return Err("a block entry cut short");
                };
                self.at = i + 2 + need;
                Entry::Block(Block {
                    base: tag & !TAG_BITS,
                    lines,
                    wide,
                    counts,
                    same: 0,
                })
            }
            _ => return Err("an unknown entry tag"),
        };
        Ok(Some(entry))
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.decode().map_err(damaged).transpose()
    }
}

/// Checks a counted chunk's words as [`walk_counted`] does, without giving its lines.
pub fn check_counted(words: &[u64]) -> Result<(), WireError> {
    let mut entries = Entries::new(words);
    while let Some(e) = entries.decode().map_err(damaged)? {
        if let Entry::Block(b) = e {
            b.check()?;
        }
    }
    Ok(())
}

/// Gives each entry of a counted chunk's words (its ticks left out) to `f`, lines in
/// order within a block; an error for damaged words (a reader takes the chunk as
/// torn). A first-touch entry cut off at the chunk's end (a crash) keeps its record.
#[inline(always)]
pub fn walk_counted(words: &[u64], mut f: impl FnMut(Counted)) -> Result<(), WireError> {
    for e in Entries::new(words) {
        match e? {
            Entry::Block(b) => {
                b.check()?;
                b.each(|addr, count| f(Counted::Line { addr, count }));
            }
            Entry::One(c) => f(c),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::{pack, pack_cpu};
    use proptest::strategy::Strategy;

    fn walk(words: &[u64]) -> Result<Vec<Counted>, WireError> {
        let mut out = Vec::new();
        walk_counted(words, |c| out.push(c))?;
        Ok(out)
    }

    #[test]
    fn a_block_gives_back_each_line_it_counted() {
        let mut counts = [0u32; BLOCK_LINES];
        for (k, c) in [(0, 4), (5, 1), (6, 65_535), (63, 9), (40, 2)] {
            counts[k] = c;
        }
        let mut out = [0u64; MAX_BLOCK_WORDS];
        let n = pack_block(0x12345, lines_of(&counts), &counts, &mut out);
        assert_eq!(n, 2 + 2, "five narrow counts take two words");
        let got = walk(&out[..n]).unwrap();
        let want: Vec<Counted> = (0..BLOCK_LINES)
            .filter(|&k| counts[k] != 0)
            .map(|k| Counted::Line {
                addr: (0x12345 << 12) + 64 * k as u64,
                count: counts[k],
            })
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_full_block_packs_as_pack_block_packs_it() {
        let mut counts = [0u16; BLOCK_LINES];
        for (k, c) in counts.iter_mut().enumerate() {
            *c = 1 + (k as u16 * 977) % 65_535;
        }
        let (mut full, mut any) = ([0u64; MAX_BLOCK_WORDS], [0u64; MAX_BLOCK_WORDS]);
        let n = pack_full_block(0x7f12, &counts, &mut full);
        assert_eq!(n, pack_block(0x7f12, u64::MAX, &counts, &mut any));
        assert_eq!(full[..n], any[..n]);
        let mut got = Vec::new();
        walk_counted(&full[..n], |c| got.push(c)).unwrap();
        assert_eq!(got.len(), BLOCK_LINES);
        assert_eq!(
            got[63],
            Counted::Line {
                addr: (0x7f12 << 12) + 63 * 64,
                count: counts[63] as u32
            }
        );
    }

    #[test]
    fn a_block_counted_alike_is_one_word_that_gives_each_line() {
        let counts = [24u16; BLOCK_LINES];
        let mut out = [0u64; MAX_BLOCK_WORDS];
        assert_eq!(pack_full_block(0x7f12, &counts, &mut out), 1);
        let want: Vec<Counted> = (0..BLOCK_LINES as u64)
            .map(|k| Counted::Line {
                addr: (0x7f12 << 12) + 64 * k,
                count: 24,
            })
            .collect();
        assert_eq!(walk(&out[..1]).unwrap(), want);
        match Entries::new(&out[..1]).next_checked() {
            Some(Entry::Block(b)) => {
                assert_eq!(
                    (b.base, b.lines, b.total()),
                    (0x7f12 << 12, u64::MAX, 64 * 24)
                );
                assert!(b.check().is_ok());
            }
            other => panic!("a block entry, not {other:?}"),
        }
        // One line counted otherwise (by one, at either end), or an address above 48
        // bits: the 18 words.
        for (k, c) in [(37, 25), (63, 23), (0, 1)] {
            let mut one_off = counts;
            one_off[k] = c;
            assert_eq!(pack_full_block(0x7f12, &one_off, &mut out), 18);
            let line = Counted::Line {
                addr: (0x7f12 << 12) + k as u64 * 64,
                count: c as u32,
            };
            assert_eq!(walk(&out[..18]).unwrap()[k], line);
        }
        let high = 1u64 << 36;
        assert_eq!(pack_full_block(high, &counts, &mut out), 18);
        assert_eq!(walk(&out[..18]).unwrap().len(), BLOCK_LINES);
        assert_eq!(pack_full_block(high - 1, &counts, &mut out), 1);
    }

    #[test]
    fn a_count_above_16_bits_makes_the_block_wide() {
        let mut counts = [3u32; BLOCK_LINES];
        counts[17] = 70_000;
        counts[63] = u32::MAX;
        let mut out = [0u64; MAX_BLOCK_WORDS];
        let n = pack_block(7, lines_of(&counts), &counts, &mut out);
        assert_eq!(n, MAX_BLOCK_WORDS);
        assert_ne!(out[0] & WIDE, 0);
        let got: Vec<u32> = walk(&out[..n])
            .unwrap()
            .into_iter()
            .map(|c| match c {
                Counted::Line { count, .. } => count,
                Counted::First { .. } => 0,
            })
            .collect();
        assert_eq!(got, counts.to_vec());
    }

    #[test]
    fn a_block_of_one_line_is_one_word() {
        let mut counts = [0u32; BLOCK_LINES];
        counts[9] = 65_535;
        let mut out = [0u64; MAX_BLOCK_WORDS];
        let block = (1u64 << 35) + 3;
        assert_eq!(pack_block(block, lines_of(&counts), &counts, &mut out), 1);
        let line = Counted::Line {
            addr: (block << 12) + 9 * 64,
            count: 65_535,
        };
        assert_eq!(walk(&out[..1]).unwrap(), [line]);
        // Above 16 bits, or above 48 address bits: a block entry.
        counts[9] = 65_536;
        assert_eq!(pack_block(block, lines_of(&counts), &counts, &mut out), 3);
        counts[9] = 1;
        let high = 1u64 << 40;
        assert_eq!(pack_block(high, lines_of(&counts), &counts, &mut out), 3);
        assert_eq!(
            walk(&out[..3]).unwrap(),
            [Counted::Line {
                addr: (high << 12) + 9 * 64,
                count: 1
            }]
        );
    }

    #[test]
    fn an_empty_block_writes_nothing() {
        let mut out = [0u64; MAX_BLOCK_WORDS];
        assert_eq!(pack_block(1, 0, &[0u32; BLOCK_LINES], &mut out), 0);
    }

    #[test]
    fn first_touches_and_blocks_come_in_order() {
        let rec = pack(0x5008, 3, true, true);
        let mut words = pack_first(rec, pack_cpu(3)).to_vec();
        let mut counts = [0u32; BLOCK_LINES];
        counts[1] = 2;
        counts[2] = 1;
        let mut out = [0u64; MAX_BLOCK_WORDS];
        let n = pack_block(5, lines_of(&counts), &counts, &mut out);
        words.extend_from_slice(&out[..n]);
        // A crash cut the last entry's CPU word off.
        words.extend_from_slice(&[FIRST, rec]);
        assert_eq!(
            walk(&words).unwrap(),
            [
                Counted::First {
                    record: rec,
                    cpu: Some(3)
                },
                Counted::Line {
                    addr: 0x5040,
                    count: 2
                },
                Counted::Line {
                    addr: 0x5080,
                    count: 1
                },
                Counted::First {
                    record: rec,
                    cpu: None
                },
            ]
        );
    }

    proptest::proptest! {
        /// A block's checker, which tests a word's counts at once, refuses exactly the
        /// blocks with an accessed line counted 0 times, and `each` gives back every
        /// accessed line with its count, narrow and wide.
        #[test]
        fn a_block_is_refused_exactly_when_a_line_counts_0(
            lines in proptest::prop_oneof![1u64.., (0u32..64).prop_map(|k| 1u64 << k)],
            counts in proptest::collection::vec(0u32..4, BLOCK_LINES),
            wide in proptest::bool::ANY,
        ) {
            let mut full = [0u32; BLOCK_LINES];
            for (k, c) in full.iter_mut().enumerate() {
                // Some lines counted 0 (damaged), most not; wide counts above 16 bits.
                *c = match counts[k] { 0 => 0, c if wide => c << 20, c => c };
            }
            let mut out = [0u64; MAX_BLOCK_WORDS];
            let mut accessed = full;
            (0..BLOCK_LINES).for_each(|k| accessed[k] |= (lines >> k & 1 == 1) as u32);
            // Packed from nonzero counts, then the damaged ones zeroed in the words.
            let n = pack_block(3, lines, &accessed, &mut out);
            let (per, width) = if wide && accessed.iter().any(|&c| c > 0xffff) { (2, 32) } else { (4, 16) };
            let mut want = Vec::new();
            let mut zero = false;
            let mut rest = lines;
            let mut k = 0;
            while rest != 0 {
                let line = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                // A line entry (one line) has no count word to damage.
                let c = if n > 1 && full[line] == 0 && line.is_multiple_of(3) {
                    let word = &mut out[2 + k / per];
                    *word &= !(((1u64 << width) - 1) << (k % per * width));
                    zero = true;
                    0
                } else {
                    accessed[line]
                };
                want.push(((3u64 << 12) + 64 * line as u64, c));
                k += 1;
            }
            let mut entries = Entries::new(&out[..n]);
            let got = entries.next().unwrap().unwrap();
            proptest::prop_assert!(entries.next().is_none());
            let mut lines_got = Vec::new();
            match got {
                Entry::Block(b) => {
                    proptest::prop_assert_eq!(b.check().is_err(), zero);
                    b.each(|a, c| lines_got.push((a, c)));
                }
                Entry::One(Counted::Line { addr, count }) => {
                    proptest::prop_assert!(!zero);
                    lines_got.push((addr, count));
                }
                Entry::One(Counted::First { .. }) => proptest::prop_assert!(false, "no first touch"),
            }
            proptest::prop_assert_eq!(lines_got, want);
            proptest::prop_assert_eq!(check_counted(&out[..n]).is_err(), zero);
        }
    }

    #[test]
    fn damaged_entries_are_refused() {
        let rec = pack(0x5008, 3, true, true);
        let mut counts = [0u32; BLOCK_LINES];
        counts[2] = 1;
        counts[3] = 1;
        counts[4] = 1;
        counts[5] = 1;
        counts[6] = 1;
        let mut block = [0u64; MAX_BLOCK_WORDS];
        let n = pack_block(9, lines_of(&counts), &counts, &mut block);
        for bad in [
            vec![0u64],                                // no tag
            vec![16],                                  // an unknown tag
            vec![SAME | (9 << 12)],                    // a uniform block counted 0 times
            vec![SAME | 64 | (9 << 12) | (1 << 48)],   // a uniform block with stray bits
            vec![FIRST],                               // no record
            vec![FIRST, pack(0x5008, 3, true, false)], // not a first touch
            vec![BLOCK | (9 << 12), 0],                // no line
            block[..n - 1].to_vec(),                   // counts cut off
            vec![BLOCK | (9 << 12), 1, 0],             // a line counted 0 times
            vec![LINE | (9 << 12)],                    // a line entry counted 0 times
            vec![FIRST | 8, rec, pack_cpu(0)],         // a tag with stray bits
        ] {
            assert!(walk(&bad).is_err(), "{bad:x?}");
        }
    }
}
