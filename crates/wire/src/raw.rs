//! The raw wire format between the runtime (inside the traced program) and `tdmap trace`,
//! which converts it into the compressed trace format off the program's hot path.
//!
//! The data file is a sequence of chunks, each a [`ChunkHeader`] (40 bytes, native
//! endianness); an access chunk then holds [`TICKS`] clock readings, one per
//! [`TICK_EVERY`] records, and `count` packed `u64` records. A predicted chunk
//! ([`KIND_PREDICTED`], a recording thread's) holds the same ticks, then only the words
//! that the stride predictor (`crate::predict`) could not spare: run words
//! ([`pack_run`]) and the records it missed; [`expand`] turns it back into the records of
//! an access chunk. Chunks from different threads
//! interleave: each is appended with one `write` on an `O_APPEND` file, so none is split.
//! The control file is a sequence of 16-byte [`Msg`] records.
//!
//! Every traced process writes files of its own, so a child killed mid-write tears only
//! its own stream: the program started uses the paths in [`ENV_DATA`] and [`ENV_CTL`], a
//! forked child, or an instrumented program a traced process exec'd, the same paths with
//! `.PID` appended ([`child_suffix`]). Each process also
//! appends the `MAP_SHARED` lines of its `/proc/self/maps` to the data path with
//! [`MAPS_SUFFIX`] appended, one snapshot after another, each ended by an empty line.

use crate::WireError;

mod counted;
mod predicted;
pub use counted::{
    check_counted, lines_of, pack_block, pack_first, pack_full_block, walk_counted, Block, Counted,
    Entries, Entry, BLOCK_LINES, FIRST_WORDS, MAX_BLOCK_WORDS,
};
pub use predicted::{expand, literal, walk, At, Word};

/// Marks a chunk header ("TDRT").
pub const MAGIC: u32 = 0x5444_5254;
/// Version of this wire format. 1: first version. 2: clock ticks in access chunks.
/// 3: a CPU word after each first-touch record. 4: forked children and exec'd programs
/// record into files of their own ([`MSG_FORKED`], [`MSG_EXECED`], [`MSG_EXEC`]), with
/// maps snapshots beside them. 5: repeat words ([`pack_repeat`]): reads of a line
/// collapsed into an earlier read record of the same chunk. 6: count words
/// ([`pack_count`]): under [`ENV_AGGREGATE`] a record stands for a thread's accesses to its
/// line since the record before it. 7: a recording thread writes predicted chunks
/// ([`KIND_PREDICTED`]: run words for the accesses the predictor foresaw, repeat words
/// naming access indexes); aggregating threads still write access chunks. 8: aggregating
/// threads write counted chunks ([`KIND_COUNTED`]: per 4 KiB block, which lines were
/// accessed and how often). 9: uniform block entries in counted chunks (a block whose
/// lines were all accessed alike, in one word).
pub const VERSION: u32 = 9;
/// Records per access chunk: 64 KiB of records per flush.
pub const CHUNK_RECORDS: usize = 8192;
/// An access chunk reads the clock once per this many records (cheap, and it gives
/// accesses a time to within a few hundred accesses).
pub const TICK_EVERY: usize = 512;
/// Clock readings per access chunk.
pub const TICKS: usize = CHUNK_RECORDS / TICK_EVERY;
/// Size of a chunk header in bytes.
pub const HEADER_BYTES: usize = 40;

/// Environment variable naming the data file the runtime creates.
pub const ENV_DATA: &str = "TDMAP_RT_DATA";
/// Environment variable naming the control file the runtime creates (its handshake).
pub const ENV_CTL: &str = "TDMAP_RT_CTL";
/// Environment variable: "1" turns on the per-thread repeated-line filter.
pub const ENV_FILTER: &str = "TDMAP_RT_FILTER";
/// Environment variable: "0" turns off the collapse of a thread's repeated reads of a line
/// (spin-waiting) into one record with a count ([`pack_repeat`]); on by default.
pub const ENV_COLLAPSE: &str = "TDMAP_RT_COLLAPSE";
/// Environment variable: the most bytes of its data file the runtime may hold that `tdmap
/// trace` has not consumed yet (its allocated blocks: the reader punches holes behind
/// it); a thread about to write past it waits. Unset or 0: no limit.
pub const ENV_BUFFER: &str = "TDMAP_RT_BUFFER";
/// Mode bit (group execute, which the runtime never gives its data file) that `tdmap
/// trace` sets on a data file it stops reading while the program runs: a writer waiting
/// under [`ENV_BUFFER`] sees it in the `fstat` it makes anyway and stops waiting.
pub const MODE_UNFOLLOWED: u32 = 0o010;
/// Environment variable: "0" keeps forked children and exec'd programs from recording
/// (`--model-only` follows the program's own file only, so theirs would only fill the disk).
pub const ENV_CHILDREN: &str = "TDMAP_RT_CHILDREN";
/// Environment variable: "1" makes each thread count its accesses per line in a small
/// table and write one record with a count word ([`pack_count`]) per line and stretch
/// instead of one record per access: for `tdmap trace --model-only`, whose model needs no
/// order within a thread's chunk. Never for a trace.
pub const ENV_AGGREGATE: &str = "TDMAP_RT_AGGREGATE";
/// Environment variable: "0" makes a recording thread write a record for every access
/// (its predicted chunks then hold no run words, a word per access as version 6 wrote):
/// for comparisons, and for tests of the raw stream's bounds that need a large stream.
pub const ENV_PREDICT: &str = "TDMAP_RT_PREDICT";
/// Environment variable: "1" makes the callbacks only count (for the overhead benchmark).
pub const ENV_COUNT_ONLY: &str = "TDMAP_RT_COUNT_ONLY";

/// Bytes embedded in every instrumented program, so `tdmap trace` can tell one apart.
pub const MARKER: &[u8; 24] = b"tdmap-rt-instrumented-v1";

/// Chunk kind: `count` access records from one thread.
pub const KIND_ACCESS: u32 = 1;
/// Chunk kind: a thread was registered; `extra` is its OS tid, `t0` the time.
pub const KIND_THREAD: u32 = 2;
/// Chunk kind: a thread finished; `extra` is how many accesses the filter dropped.
pub const KIND_END: u32 = 3;
/// Chunk kind (version 7): `count` words of one thread, runs of predicted accesses and the
/// records the predictor missed, standing for `extra` words of an access chunk (the
/// records, CPU and repeat words that [`expand`] gives back).
pub const KIND_PREDICTED: u32 = 4;

/// Chunk kind (version 8): `count` words of one aggregating thread's entries, blocks of
/// counted lines and first touches ([`walk_counted`]), after the ticks.
pub const KIND_COUNTED: u32 = 5;

/// Control message: the runtime is up (`a` = process id, `b` = wire version).
pub const MSG_HELLO: u32 = 1;
/// Control message: writing the data file failed (`a` = errno); the trace is incomplete.
pub const MSG_WRITE_FAILED: u32 = 2;
/// Control message: the program got a fatal signal (`b` = signal number).
pub const MSG_CRASHED: u32 = 3;
/// Control message: the program exited normally (`a` = accesses seen, all threads).
pub const MSG_DONE: u32 = 4;
/// Control message: the page size the runtime used for first-touch records (`a`).
pub const MSG_PAGE_SIZE: u32 = 5;
/// Control message, first in a forked child's file: `b` = the parent's pid, `a` = the
/// monotonic time of the fork in ns (children are numbered in that order).
pub const MSG_FORKED: u32 = 6;
/// Control message, first in the files of an instrumented program that a traced process
/// exec'd (directly, or through an untraced one such as a shell): `b` = its parent's pid,
/// `a` = the monotonic time it started.
pub const MSG_EXECED: u32 = 8;
/// Control message: the process is about to `exec` another program; its threads were
/// flushed, so its part of the trace ends here whole.
pub const MSG_EXEC: u32 = 7;
/// Control message: a recording window opened (`tdmap trace --window`, `b` = its index
/// from 0, `a` = the monotonic time in ns); between windows accesses are only counted.
pub const MSG_WINDOW: u32 = 9;

/// Appended to a process's data path to name its maps snapshots.
pub const MAPS_SUFFIX: &str = ".maps";

/// Writes a process's suffix to both paths into `out` and returns its length: `.PID`,
/// or `.PID-N` for the N-th process (N ≥ 2) that found the name taken (a program exec'd
/// by a traced process, or a pid the system reused).
pub fn child_suffix(pid: u32, n: u32, out: &mut [u8; 24]) -> usize {
    let mut len = 0;
    out[len] = b'.';
    len += 1;
    len += decimal(pid, &mut out[len..]);
    if n >= 2 {
        out[len] = b'-';
        len += 1;
        len += decimal(n, &mut out[len..]);
    }
    len
}

/// Writes `v` in decimal at the start of `out` (room for 10 digits); returns its length.
fn decimal(mut v: u32, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 10];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in 0..n {
        out[i] = digits[n - 1 - i];
    }
    n
}

/// The pid and N of a suffix written by [`child_suffix`] (without its dot).
pub fn parse_child_suffix(s: &str) -> Option<(u32, u32)> {
    let digits = |t: &str| t.bytes().all(|c| c.is_ascii_digit()) && !t.is_empty();
    let (pid, n) = match s.split_once('-') {
        Some((p, n)) if digits(n) => (p, n.parse().ok().filter(|&n| n >= 2)?),
        Some(_) => return None,
        None => (s, 1),
    };
    digits(pid)
        .then(|| pid.parse().ok())
        .flatten()
        .map(|p| (p, n))
}

/// The address bits a record keeps: what the predictor sees on both sides.
pub const ADDR_MASK: u64 = (1 << 56) - 1;
const SIZE_SHIFT: u32 = 56;
const WRITE_BIT: u64 = 1 << 59;
const FIRST_TOUCH_BIT: u64 = 1 << 60;
const CPU_BIT: u64 = 1 << 61;
const REPEAT_BIT: u64 = 1 << 62;
const COUNT_BIT: u64 = 1 << 63;
/// A run word sets all three side bits, a combination no other word uses.
const RUN_TAG: u64 = CPU_BIT | REPEAT_BIT | COUNT_BIT;

/// Packs a run of `n` (1 or more) accesses that the predictor foresaw, in a predicted
/// chunk ([`KIND_PREDICTED`]): they stand where the word stands, before the words after it.
#[inline(always)]
pub const fn pack_run(n: u32) -> u64 {
    RUN_TAG | n as u64
}

/// The accesses in a word written by [`pack_run`], None for any other word.
#[inline]
pub fn unpack_run(word: u64) -> Option<u32> {
    (word & RUN_TAG == RUN_TAG).then_some(word as u32)
}

/// The predictor's meta of an access (`crate::predict`): its size and write flag.
#[inline(always)]
pub const fn meta(size_log2: u32, write: bool) -> u8 {
    (size_log2 << 1) as u8 | write as u8
}
/// Packs the number of accesses `n` (2 or more) that the record right before this word
/// stands for ([`ENV_AGGREGATE`]); a record with no count word stands for one.
#[inline(always)]
pub const fn pack_count(n: u32) -> u64 {
    COUNT_BIT | n as u64
}

/// The accesses in a word written by [`pack_count`], None for any other word.
#[inline]
pub fn unpack_count(word: u64) -> Option<u32> {
    (word & COUNT_BIT != 0).then_some(word as u32)
}

/// Packs `extra` reads collapsed into the read record at word position `at` of the same
/// chunk (the runtime's spin collapse, `tdmap-rt`'s `collapse.rs`); it comes after that
/// record, at most one per record. In a predicted chunk `at` is the read's access index
/// (predicted accesses have no word); [`expand`] makes it a word position again.
#[inline(always)]
pub const fn pack_repeat(at: u32, extra: u32) -> u64 {
    REPEAT_BIT | ((at as u64) << 32) | extra as u64
}

/// The record position and extra reads in a word written by [`pack_repeat`], None for
/// any other word.
#[inline]
pub fn unpack_repeat(word: u64) -> Option<(u32, u32)> {
    (word & REPEAT_BIT != 0).then_some((((word >> 32) as u32) & 0xffff, word as u32))
}

/// True for the words that are not access records (CPU, repeat and count words).
#[inline]
pub fn is_side_word(word: u64) -> bool {
    word & (CPU_BIT | REPEAT_BIT | COUNT_BIT) != 0
}

/// Packs the CPU a thread ran on; this word directly follows each first-touch record.
#[inline(always)]
pub const fn pack_cpu(cpu: u32) -> u64 {
    CPU_BIT | cpu as u64
}

/// True for an access record that is no first touch: a chunk of only such words decodes
/// to its accesses alone, with no fault, CPU, repeat or count to place (the common case).
#[inline]
pub fn is_plain(word: u64) -> bool {
    word & (FIRST_TOUCH_BIT | CPU_BIT | REPEAT_BIT | COUNT_BIT) == 0
}

/// The CPU in a word written by [`pack_cpu`], None for an access record.
#[inline]
pub fn unpack_cpu(word: u64) -> Option<u32> {
    (word & CPU_BIT != 0).then_some(word as u32)
}

/// One access record: address, size, read or write, and whether it first touched its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// The virtual address accessed.
    pub addr: u64,
    /// Access size in bytes: 1, 2, 4, 8 or 16.
    pub size: u8,
    /// True for a store.
    pub write: bool,
    /// True when this was the first access of any thread to the address's page.
    pub first_touch: bool,
}

/// Packs an access into a `u64`: 56 address bits, log2(size) in bits 56..59, then flags.
#[inline(always)]
pub const fn pack(addr: u64, size_log2: u32, write: bool, first_touch: bool) -> u64 {
    (addr & ADDR_MASK)
        | ((size_log2 as u64) << SIZE_SHIFT)
        | if write { WRITE_BIT } else { 0 }
        | if first_touch { FIRST_TOUCH_BIT } else { 0 }
}

/// Unpacks a record written by [`pack`].
#[inline]
pub fn unpack(word: u64) -> Record {
    Record {
        addr: word & ADDR_MASK,
        size: 1 << ((word >> SIZE_SHIFT) & 7),
        write: word & WRITE_BIT != 0,
        first_touch: word & FIRST_TOUCH_BIT != 0,
    }
}

/// The header in front of every chunk of the data file.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkHeader {
    /// Always [`MAGIC`].
    pub magic: u32,
    /// One of the `KIND_*` constants.
    pub kind: u32,
    /// The thread's id, in creation order from 0 (the main thread).
    pub thread: u32,
    /// How many `u64` records follow.
    pub count: u32,
    /// Monotonic time in ns when the chunk's first record was written.
    pub t0: u64,
    /// Monotonic time in ns when the chunk was flushed.
    pub t1: u64,
    /// Kind-specific value (OS tid, filtered count).
    pub extra: u64,
}

impl ChunkHeader {
    /// Decodes a header from the first [`HEADER_BYTES`] of `b`.
    pub fn decode(b: &[u8]) -> Result<ChunkHeader, WireError> {
        let Some(b) = b.get(..HEADER_BYTES) else {
            return Err(WireError::Truncated {
                what: "chunk header",
                need: HEADER_BYTES,
                got: b.len(),
            });
        };
        let magic = u32_at(b, 0);
        if magic != MAGIC {
            return Err(WireError::BadMagic {
                what: "chunk header",
                expected: MAGIC,
                found: magic,
            });
        }
        Ok(ChunkHeader {
            magic,
            kind: u32_at(b, 4),
            thread: u32_at(b, 8),
            count: u32_at(b, 12),
            t0: u64_at(b, 16),
            t1: u64_at(b, 24),
            extra: u64_at(b, 32),
        })
    }

    /// The header's bytes, as [`ChunkHeader::decode`] reads them.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        for (i, v) in [self.magic, self.kind, self.thread, self.count]
            .into_iter()
            .enumerate()
        {
            b[i * 4..i * 4 + 4].copy_from_slice(&v.to_ne_bytes());
        }
        for (i, v) in [self.t0, self.t1, self.extra].into_iter().enumerate() {
            b[16 + i * 8..24 + i * 8].copy_from_slice(&v.to_ne_bytes());
        }
        b
    }

    /// How many bytes follow the header: none for thread and end markers, the clock
    /// ticks and `count` words for an access or predicted chunk. An unknown kind or a
    /// count above [`CHUNK_RECORDS`] is an error (a damaged file).
    pub fn body_bytes(&self) -> Result<usize, WireError> {
        match self.kind {
            KIND_THREAD | KIND_END => Ok(0),
            KIND_ACCESS | KIND_PREDICTED | KIND_COUNTED if self.count as usize <= CHUNK_RECORDS => {
                Ok((TICKS + self.count as usize) * 8)
            }
            KIND_ACCESS | KIND_PREDICTED | KIND_COUNTED => Err(WireError::OutOfRange {
                field: "chunk record count",
                value: self.count.to_string(),
            }),
            kind => Err(WireError::UnknownKind {
                what: "chunk header",
                kind,
            }),
        }
    }
}

/// The native-endian `u32` at `i`; the caller checked the length.
fn u32_at(b: &[u8], i: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[i..i + 4]);
    u32::from_ne_bytes(w)
}

/// The native-endian `u64` at `i`; the caller checked the length.
fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_ne_bytes(w)
}

/// Size of a control message in bytes.
pub const MSG_BYTES: usize = 16;

/// A 16-byte control message.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Msg {
    /// One of the `MSG_*` constants.
    pub tag: u32,
    /// Small argument (signal number, version).
    pub b: u32,
    /// Large argument (pid, errno, count).
    pub a: u64,
}

impl Msg {
    /// Decodes one message from the first [`MSG_BYTES`] of `b`. Any tag is accepted:
    /// readers skip the tags they do not know, so that a newer runtime's messages do
    /// not break an older reader.
    pub fn decode(b: &[u8]) -> Result<Msg, WireError> {
        let Some(m) = b.get(..MSG_BYTES) else {
            return Err(WireError::Truncated {
                what: "control message",
                need: MSG_BYTES,
                got: b.len(),
            });
        };
        Ok(Msg {
            tag: u32_at(m, 0),
            b: u32_at(m, 4),
            a: u64_at(m, 8),
        })
    }

    /// The message's bytes, as [`Msg::decode`] reads them.
    pub fn encode(&self) -> [u8; MSG_BYTES] {
        let mut b = [0u8; MSG_BYTES];
        b[0..4].copy_from_slice(&self.tag.to_ne_bytes());
        b[4..8].copy_from_slice(&self.b.to_ne_bytes());
        b[8..16].copy_from_slice(&self.a.to_ne_bytes());
        b
    }

    /// Decodes the control file's contents; a torn last message is ignored.
    pub fn decode_all(b: &[u8]) -> Vec<Msg> {
        b.chunks_exact(MSG_BYTES)
            .filter_map(|m| Msg::decode(m).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Plain words are the access records a decoder can take without looking aside: not
    /// a first touch (its CPU word and fault), a CPU word or a repeat word. The OR of a
    /// chunk's words is plain only if every word is.
    #[test]
    fn plain_words_are_records_that_are_no_first_touch() {
        let top = ADDR_MASK;
        assert!(is_plain(pack(top, 4, true, false)));
        assert!(!is_plain(pack(0x1000, 3, false, true)));
        assert!(!is_plain(pack_cpu(u32::MAX)));
        assert!(!is_plain(pack_repeat(0xffff, u32::MAX)));
        assert!(!is_plain(pack_count(2)) && is_side_word(pack_count(u32::MAX)));
        assert_eq!(unpack_count(pack_count(u32::MAX)), Some(u32::MAX));
        assert_eq!(unpack_count(pack_repeat(3, 9)), None);
        assert_eq!(unpack_repeat(pack_count(9)), None);
        assert_eq!(unpack_cpu(pack_count(9)), None);
        // A run word is a side word that no other unpacker takes for its own.
        assert_eq!(unpack_run(pack_run(u32::MAX)), Some(u32::MAX));
        assert!(!is_plain(pack_run(1)) && is_side_word(pack_run(1)));
        for w in [
            pack_count(7),
            pack_repeat(0xffff, u32::MAX),
            pack_cpu(u32::MAX),
        ] {
            assert_eq!(unpack_run(w), None);
        }
        assert_eq!(unpack_run(pack(ADDR_MASK, 7, true, true)), None);
        let words = [
            pack(top, 4, true, false),
            pack(8, 0, false, false),
            pack_cpu(3),
        ];
        assert!(!is_plain(words.iter().fold(0, |a, w| a | w)));
        assert!(is_plain(words[..2].iter().fold(0, |a, w| a | w)));
    }

    #[test]
    fn pack_round_trips_every_size_and_flag() {
        for (log2, size) in [(0, 1), (1, 2), (2, 4), (3, 8), (4, 16)] {
            for write in [false, true] {
                for first_touch in [false, true] {
                    let addr = 0x7fff_1234_5678;
                    let r = unpack(pack(addr, log2, write, first_touch));
                    assert_eq!(
                        r,
                        Record {
                            addr,
                            size,
                            write,
                            first_touch
                        }
                    );
                }
            }
        }
    }

    #[test]
    fn child_suffixes_are_dot_pid_then_a_generation_and_parse_back() {
        let mut b = [0u8; 24];
        for pid in [0u32, 7, 4242, u32::MAX] {
            let n = child_suffix(pid, 1, &mut b);
            assert_eq!(&b[..n], format!(".{pid}").as_bytes());
            assert_eq!(parse_child_suffix(&format!("{pid}")), Some((pid, 1)));
            let n = child_suffix(pid, 12, &mut b);
            assert_eq!(&b[..n], format!(".{pid}-12").as_bytes());
            let s = std::str::from_utf8(&b[1..n]).unwrap();
            assert_eq!(parse_child_suffix(s), Some((pid, 12)));
        }
        for bad in ["", "-2", "12-", "12-1", "12-x", "x", "12.maps", "1-2-3"] {
            assert_eq!(parse_child_suffix(bad), None, "{bad}");
        }
    }

    #[test]
    fn cpu_words_are_told_apart_from_accesses() {
        assert_eq!(unpack_cpu(pack_cpu(37)), Some(37));
        assert_eq!(unpack_cpu(pack(0x7fff_0000_1000, 4, true, true)), None);
    }

    #[test]
    fn header_decode_rejects_bad_magic() {
        let mut b = [0u8; HEADER_BYTES];
        assert!(matches!(
            ChunkHeader::decode(&b),
            Err(WireError::BadMagic { found: 0, .. })
        ));
        b[0..4].copy_from_slice(&MAGIC.to_ne_bytes());
        b[12..16].copy_from_slice(&7u32.to_ne_bytes());
        assert_eq!(ChunkHeader::decode(&b).unwrap().count, 7);
    }

    #[test]
    fn body_bytes_follow_the_kind_and_refuse_oversized_counts() {
        let h = |kind, count| ChunkHeader {
            magic: MAGIC,
            kind,
            count,
            ..ChunkHeader::default()
        };
        assert_eq!(h(KIND_THREAD, 0).body_bytes(), Ok(0));
        assert_eq!(h(KIND_END, 0).body_bytes(), Ok(0));
        assert_eq!(h(KIND_ACCESS, 2).body_bytes(), Ok((TICKS + 2) * 8));
        assert_eq!(h(KIND_PREDICTED, 3).body_bytes(), Ok((TICKS + 3) * 8));
        assert_eq!(h(KIND_COUNTED, 4).body_bytes(), Ok((TICKS + 4) * 8));
        for kind in [KIND_ACCESS, KIND_PREDICTED, KIND_COUNTED] {
            assert!(h(kind, CHUNK_RECORDS as u32 + 1).body_bytes().is_err());
        }
        assert!(h(9, 0).body_bytes().is_err());
    }

    fn header() -> impl Strategy<Value = ChunkHeader> {
        (
            prop_oneof![
                Just(KIND_ACCESS),
                Just(KIND_THREAD),
                Just(KIND_END),
                Just(KIND_PREDICTED)
            ],
            any::<u32>(),
            0..=CHUNK_RECORDS as u32,
            any::<(u64, u64, u64)>(),
        )
            .prop_map(|(kind, thread, count, (t0, t1, extra))| ChunkHeader {
                magic: MAGIC,
                kind,
                thread,
                count,
                t0,
                t1,
                extra,
            })
    }

    proptest! {
        #[test]
        fn header_decode_takes_random_bytes_without_panicking(
            b in proptest::collection::vec(any::<u8>(), 0..2 * HEADER_BYTES)
        ) {
            match ChunkHeader::decode(&b) {
                Ok(h) => {
                    prop_assert!(b.len() >= HEADER_BYTES);
                    prop_assert_eq!(&h.encode()[..], &b[..HEADER_BYTES]);
                    let _ = h.body_bytes();
                }
                Err(WireError::Truncated { got, .. }) => prop_assert_eq!(got, b.len()),
                Err(WireError::BadMagic { found, .. }) => prop_assert_ne!(found, MAGIC),
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }

        #[test]
        fn a_truncated_header_is_an_error(h in header(), cut in 0..HEADER_BYTES) {
            let b = h.encode();
            prop_assert_eq!(
                ChunkHeader::decode(&b[..cut]),
                Err(WireError::Truncated { what: "chunk header", need: HEADER_BYTES, got: cut })
            );
        }

        #[test]
        fn a_header_round_trips_and_a_bit_flip_decodes_or_errs(
            h in header(),
            bit in 0..HEADER_BYTES * 8,
        ) {
            let mut b = h.encode();
            prop_assert_eq!(ChunkHeader::decode(&b), Ok(h));
            prop_assert!(h.body_bytes().is_ok());
            b[bit / 8] ^= 1 << (bit % 8);
            match ChunkHeader::decode(&b) {
                // A flip in the magic is always caught; elsewhere it changes one field.
                Err(WireError::BadMagic { .. }) => prop_assert!(bit < 32),
                Ok(d) => {
                    prop_assert!(bit >= 32);
                    prop_assert_ne!(d, h);
                    let _ = d.body_bytes();
                }
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }

        #[test]
        fn any_word_unpacks_and_records_round_trip(
            w in any::<u64>(),
            addr in 0..1u64 << 56,
            log2 in 0..5u32,
            write in any::<bool>(),
            first in any::<bool>(),
        ) {
            let r = unpack(w);
            prop_assert!(r.size.is_power_of_two() && r.addr < 1 << 56);
            let _ = unpack_cpu(w);
            let r = unpack(pack(addr, log2, write, first));
            prop_assert_eq!(r, Record { addr, size: 1 << log2, write, first_touch: first });
            prop_assert_eq!(unpack_cpu(pack(addr, log2, write, first)), None);
        }

        #[test]
        fn control_messages_decode_from_any_bytes(
            b in proptest::collection::vec(any::<u8>(), 0..100)
        ) {
            let all = Msg::decode_all(&b);
            prop_assert_eq!(all.len(), b.len() / MSG_BYTES);
            for (m, raw) in all.iter().zip(b.chunks_exact(MSG_BYTES)) {
                prop_assert_eq!(&m.encode()[..], raw);
            }
            match Msg::decode(&b) {
                Ok(m) => prop_assert_eq!(&m.encode()[..], &b[..MSG_BYTES]),
                Err(WireError::Truncated { got, .. }) => {
                    prop_assert!(got < MSG_BYTES && got == b.len())
                }
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }

        #[test]
        fn a_torn_last_control_message_is_dropped(
            tags in proptest::collection::vec((1..=MSG_PAGE_SIZE, any::<u32>(), any::<u64>()), 1..6),
            cut in 1..MSG_BYTES,
        ) {
            let msgs: Vec<Msg> = tags.iter().map(|&(tag, b, a)| Msg { tag, b, a }).collect();
            let bytes: Vec<u8> = msgs.iter().flat_map(|m| m.encode()).collect();
            prop_assert_eq!(Msg::decode_all(&bytes), msgs.clone());
            let torn = &bytes[..bytes.len() - cut];
            prop_assert_eq!(Msg::decode_all(torn), msgs[..msgs.len() - 1].to_vec());
        }
    }
}
