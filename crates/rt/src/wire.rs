//! The raw wire format between the runtime (inside the traced program) and `tdmap trace`,
//! which converts it into the compressed trace format off the program's hot path.
//!
//! This file has no dependencies and no `unsafe`, so the `tdmap` binary includes it
//! with `#[path]` and both sides share one definition.
//!
//! The data file is a sequence of chunks, each a [`ChunkHeader`] (40 bytes, native
//! endianness); an access chunk then holds [`TICKS`] clock readings, one per
//! [`TICK_EVERY`] records, and `count` packed `u64` records. Chunks from different threads
//! interleave: each is appended with one `write` on an `O_APPEND` file, so none is split.
//! The control file is a sequence of 16-byte [`Msg`] records.

/// Marks a chunk header ("TDRT").
pub const MAGIC: u32 = 0x5444_5254;
/// Version of this wire format. 1: first version. 2: clock ticks in access chunks.
/// 3: a CPU word after each first-touch record.
pub const VERSION: u32 = 3;
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

const ADDR_MASK: u64 = (1 << 56) - 1;
const SIZE_SHIFT: u32 = 56;
const WRITE_BIT: u64 = 1 << 59;
const FIRST_TOUCH_BIT: u64 = 1 << 60;
const CPU_BIT: u64 = 1 << 61;

/// Packs the CPU a thread ran on; this word directly follows each first-touch record.
#[inline(always)]
pub const fn pack_cpu(cpu: u32) -> u64 {
    CPU_BIT | cpu as u64
}

/// The CPU in a word written by [`pack_cpu`], None for an access record.
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
    /// Decodes a header from the first [`HEADER_BYTES`] of `b`; None when the magic is wrong.
    pub fn decode(b: &[u8]) -> Option<ChunkHeader> {
        let u32_at = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_ne_bytes(b[i..i + 8].try_into().unwrap());
        if b.len() < HEADER_BYTES || u32_at(0) != MAGIC {
            return None;
        }
        Some(ChunkHeader {
            magic: MAGIC,
            kind: u32_at(4),
            thread: u32_at(8),
            count: u32_at(12),
            t0: u64_at(16),
            t1: u64_at(24),
            extra: u64_at(32),
        })
    }
}

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
    /// Decodes the control file's contents; a torn last message is ignored.
    pub fn decode_all(b: &[u8]) -> Vec<Msg> {
        b.chunks_exact(16)
            .map(|m| Msg {
                tag: u32::from_ne_bytes(m[0..4].try_into().unwrap()),
                b: u32::from_ne_bytes(m[4..8].try_into().unwrap()),
                a: u64::from_ne_bytes(m[8..16].try_into().unwrap()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn cpu_words_are_told_apart_from_accesses() {
        assert_eq!(unpack_cpu(pack_cpu(37)), Some(37));
        assert_eq!(unpack_cpu(pack(0x7fff_0000_1000, 4, true, true)), None);
    }

    #[test]
    fn header_decode_rejects_bad_magic() {
        let mut b = [0u8; HEADER_BYTES];
        assert_eq!(ChunkHeader::decode(&b), None);
        b[0..4].copy_from_slice(&MAGIC.to_ne_bytes());
        b[12..16].copy_from_slice(&7u32.to_ne_bytes());
        assert_eq!(ChunkHeader::decode(&b).unwrap().count, 7);
    }
}
