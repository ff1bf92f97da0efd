//! Frames of events as columns (struct of arrays): the unit the writer compresses and the
//! fast path the sharing model consumes without building one `Event` per access.

use crate::types::{Access, Event, Fault};

/// The accesses of one frame: one thread, columns of equal length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessChunk {
    /// The thread that made every access of the chunk.
    pub thread: u32,
    /// Virtual addresses.
    pub addrs: Vec<u64>,
    /// Times (empty when the reader reads addresses only).
    pub times: Vec<u64>,
    /// Sizes in bytes (empty when the reader reads addresses only).
    pub sizes: Vec<u8>,
    /// True for stores (empty when the reader reads addresses only).
    pub writes: Vec<bool>,
    /// Collapsed reads (V4), by increasing index: the read at `index` stands for itself
    /// and `extra` more reads of its line by the thread, in a row.
    pub repeats: Vec<(u32, u32)>,
}

/// The faults of one frame: one thread, columns of equal length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultChunk {
    /// The thread that faulted.
    pub thread: u32,
    /// Faulting addresses.
    pub addrs: Vec<u64>,
    /// Times.
    pub times: Vec<u64>,
    /// CPUs.
    pub cpus: Vec<u32>,
    /// NUMA nodes.
    pub nodes: Vec<u32>,
}

/// One decoded frame of events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// Memory accesses.
    Accesses(AccessChunk),
    /// Page-fault samples.
    Faults(FaultChunk),
}

impl Chunk {
    /// Number of events in the chunk.
    pub fn len(&self) -> usize {
        match self {
            Chunk::Accesses(c) => c.addrs.len(),
            Chunk::Faults(c) => c.addrs.len(),
        }
    }

    /// True when the chunk holds no event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The thread of every event in the chunk.
    pub fn thread(&self) -> u32 {
        match self {
            Chunk::Accesses(c) => c.thread,
            Chunk::Faults(c) => c.thread,
        }
    }

    /// The `i`-th event as an [`Event`].
    pub fn event(&self, i: usize) -> Event {
        match self {
            // Columns other than addresses are empty when the reader skipped them.
            Chunk::Accesses(c) => Event::Access(Access {
                thread: c.thread,
                addr: c.addrs[i],
                size: c.sizes.get(i).copied().unwrap_or(0),
                write: c.writes.get(i).copied().unwrap_or(false),
                time: c.times.get(i).copied().unwrap_or(0),
            }),
            Chunk::Faults(c) => Event::Fault(Fault {
                thread: c.thread,
                addr: c.addrs[i],
                cpu: c.cpus[i],
                node: c.nodes[i],
                time: c.times[i],
            }),
        }
    }
}

/// Frame flag: the address column is byte-shuffled (V2).
pub const SHUFFLED_ADDRS: u8 = 1;
/// Frame flag: the time column is byte-shuffled (V2).
pub const SHUFFLED_TIMES: u8 = 2;

/// How a u64 column is coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// V1: little-endian wrapping deltas.
    Raw,
    /// V2: little-endian zigzag deltas.
    Zigzag,
    /// V2: zigzag deltas, byte-shuffled (all lowest bytes, then all next bytes...).
    Shuffled,
}

impl Coding {
    /// The coding of the column flagged by `bit` in a frame of a version-`version` file.
    pub fn of(version: u32, flags: u8, bit: u8) -> Coding {
        match (version, flags & bit != 0) {
            (1, _) => Coding::Raw,
            (_, true) => Coding::Shuffled,
            (_, false) => Coding::Zigzag,
        }
    }
}

/// Writes a u64 column as zigzag deltas from the previous value (the first from 0), and
/// returns whether it byte-shuffled them. Regular columns (strides, clock ticks) stay
/// unshuffled: zstd turns their equal deltas into long runs that decompress at memory
/// speed. Irregular ones (random addresses) are shuffled, so their zero high bytes form
/// runs instead of literals: about 4× faster to decompress.
fn put_column(out: &mut Vec<u8>, vals: impl Iterator<Item = u64>) -> bool {
    let mut prev = 0u64;
    let zz: Vec<u64> = vals
        .map(|v| {
            let d = v.wrapping_sub(prev) as i64;
            prev = v;
            ((d << 1) ^ (d >> 63)) as u64
        })
        .collect();
    let repeats = zz.windows(2).filter(|w| w[0] == w[1]).count();
    let shuffle = repeats * 4 < zz.len() * 3;
    if shuffle {
        for b in 0..8 {
            out.extend(zz.iter().map(|v| (v >> (8 * b)) as u8));
        }
    } else {
        zz.iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    }
    shuffle
}

fn put_u32s(out: &mut Vec<u8>, it: impl Iterator<Item = u32>) {
    for v in it {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn column_flags(addrs: bool, times: bool) -> u8 {
    (addrs as u8 * SHUFFLED_ADDRS) | (times as u8 * SHUFFLED_TIMES)
}

/// Encodes faults as columns (addresses, times, cpus, nodes) and the frame flags.
pub fn encode_faults(f: &[Fault]) -> (Vec<u8>, u8) {
    let mut out = Vec::with_capacity(f.len() * crate::codec::FAULT_BYTES);
    let flags = column_flags(
        put_column(&mut out, f.iter().map(|x| x.addr)),
        put_column(&mut out, f.iter().map(|x| x.time)),
    );
    put_u32s(&mut out, f.iter().map(|x| x.cpu));
    put_u32s(&mut out, f.iter().map(|x| x.node));
    (out, flags)
}

/// Reads a u64 column written with `coding`.
fn get_column(dst: &mut Vec<u64>, raw: &[u8], coding: Coding) {
    dst.clear();
    let mut acc = 0u64;
    let le = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8-byte chunk"));
    let unzig = |z: u64| (z >> 1) ^ (z & 1).wrapping_neg();
    match coding {
        Coding::Raw => dst.extend(raw.chunks_exact(8).map(|b| {
            acc = acc.wrapping_add(le(b));
            acc
        })),
        Coding::Zigzag => dst.extend(raw.chunks_exact(8).map(|b| {
            acc = acc.wrapping_add(unzig(le(b)));
            acc
        })),
        Coding::Shuffled => {
            unshuffle(dst, raw);
            for d in dst.iter_mut() {
                acc = acc.wrapping_add(unzig(*d));
                *d = acc;
            }
        }
    }
}

/// Gathers the 8 byte planes of a shuffled column back into u64s.
fn unshuffle(dst: &mut Vec<u64>, raw: &[u8]) {
    let n = raw.len() / 8;
    let mut planes = raw.chunks_exact(n.max(1));
    dst.extend(planes.next().unwrap_or(&[]).iter().map(|&x| x as u64));
    for (b, plane) in planes.enumerate().take(7) {
        // High bytes of deltas are mostly zero: skipping zero planes is most of the speed.
        if plane.iter().any(|&x| x != 0) {
            for (d, &x) in dst.iter_mut().zip(plane) {
                *d |= (x as u64) << (8 * (b + 1));
            }
        }
    }
}

fn get_u32s(dst: &mut Vec<u32>, raw: &[u8]) {
    dst.clear();
    dst.extend(
        raw.chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4-byte chunk"))),
    );
}

/// Encodes repeat pairs (index, extra reads) for a repeats frame.
pub fn encode_repeats(r: &[(u32, u32)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(r.len() * crate::codec::REPEAT_BYTES);
    for &(i, n) in r {
        out.extend_from_slice(&i.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
    }
    out
}

/// Decodes a repeats frame's pairs into `dst`.
pub fn decode_repeats(dst: &mut Vec<(u32, u32)>, raw: &[u8]) {
    dst.clear();
    let u = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes"));
    dst.extend(raw.chunks_exact(8).map(|b| (u(&b[..4]), u(&b[4..]))));
}

/// Decodes V1-V4 accesses into `c`, reusing its buffers: `addrs` holds the address column
/// (8n bytes) and `rest`, unless skipped, the times, sizes and write flags (10n bytes).
/// Returns false when a write flag is neither 0 nor 1.
pub fn decode_accesses(
    c: &mut AccessChunk,
    thread: u32,
    addrs: &[u8],
    rest: Option<&[u8]>,
    coding: [Coding; 2],
) -> bool {
    c.thread = thread;
    get_column(&mut c.addrs, addrs, coding[0]);
    let n = c.addrs.len();
    c.times.clear();
    c.sizes.clear();
    c.writes.clear();
    let Some(rest) = rest else { return true };
    get_column(&mut c.times, &rest[..8 * n], coding[1]);
    c.sizes.extend_from_slice(&rest[8 * n..9 * n]);
    let flags = &rest[9 * n..10 * n];
    c.writes.extend(flags.iter().map(|&b| b == 1));
    flags.iter().all(|&b| b <= 1)
}

/// Decodes faults into `c`, reusing its buffers: `addrs` holds the address column
/// and `rest` the times, cpus and nodes (16n bytes).
pub fn decode_faults(
    c: &mut FaultChunk,
    thread: u32,
    addrs: &[u8],
    rest: &[u8],
    coding: [Coding; 2],
) {
    c.thread = thread;
    get_column(&mut c.addrs, addrs, coding[0]);
    let n = c.addrs.len();
    get_column(&mut c.times, &rest[..8 * n], coding[1]);
    get_u32s(&mut c.cpus, &rest[8 * n..12 * n]);
    get_u32s(&mut c.nodes, &rest[12 * n..16 * n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(vals: &[u64]) -> bool {
        let mut raw = Vec::new();
        let shuffled = put_column(&mut raw, vals.iter().copied());
        let coding = if shuffled {
            Coding::Shuffled
        } else {
            Coding::Zigzag
        };
        let mut back = Vec::new();
        get_column(&mut back, &raw, coding);
        assert_eq!(back, vals);
        shuffled
    }

    #[test]
    fn strided_columns_stay_plain_and_irregular_ones_are_shuffled() {
        let stride: Vec<u64> = (0..1000).map(|i| 0x7f00_0000_0000 + i * 8).collect();
        assert!(!round_trip(&stride));
        let mut x = 12345u64;
        let random: Vec<u64> = (0..1000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                x >> 3
            })
            .collect();
        assert!(round_trip(&random));
        assert!(!round_trip(&[]));
        assert!(round_trip(&[u64::MAX, 0, 1 << 63, 7]));
    }
}
