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

/// Writes a column as differences from the previous value (the first from 0): strides
/// and clock ticks become long runs of equal bytes, which zstd compresses and, above all,
/// decompresses much faster than literal addresses.
fn put_deltas(out: &mut Vec<u8>, it: impl Iterator<Item = u64>) {
    let mut prev = 0u64;
    for v in it {
        out.extend_from_slice(&v.wrapping_sub(prev).to_le_bytes());
        prev = v;
    }
}

fn put_u32s(out: &mut Vec<u8>, it: impl Iterator<Item = u32>) {
    for v in it {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Encodes accesses as columns: addresses, times, sizes, write flags.
pub fn encode_accesses(a: &[Access]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len() * crate::codec::ACCESS_BYTES);
    put_deltas(&mut out, a.iter().map(|x| x.addr));
    put_deltas(&mut out, a.iter().map(|x| x.time));
    out.extend(a.iter().map(|x| x.size));
    out.extend(a.iter().map(|x| x.write as u8));
    out
}

/// Encodes faults as columns: addresses, times, cpus, nodes.
pub fn encode_faults(f: &[Fault]) -> Vec<u8> {
    let mut out = Vec::with_capacity(f.len() * crate::codec::FAULT_BYTES);
    put_deltas(&mut out, f.iter().map(|x| x.addr));
    put_deltas(&mut out, f.iter().map(|x| x.time));
    put_u32s(&mut out, f.iter().map(|x| x.cpu));
    put_u32s(&mut out, f.iter().map(|x| x.node));
    out
}

/// Reads a column written by `put_deltas`.
fn get_deltas(dst: &mut Vec<u64>, raw: &[u8]) {
    dst.clear();
    let mut acc = 0u64;
    dst.extend(raw.chunks_exact(8).map(|b| {
        acc = acc.wrapping_add(u64::from_le_bytes(b.try_into().expect("8-byte chunk")));
        acc
    }));
}

fn get_u32s(dst: &mut Vec<u32>, raw: &[u8]) {
    dst.clear();
    dst.extend(
        raw.chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4-byte chunk"))),
    );
}

/// Decodes `n` accesses into `c`, reusing its buffers: `addrs` holds the address column
/// (8n bytes) and `rest`, unless skipped, the times, sizes and write flags (10n bytes).
/// Returns false when a write flag is neither 0 nor 1.
pub fn decode_accesses(
    c: &mut AccessChunk,
    thread: u32,
    addrs: &[u8],
    rest: Option<&[u8]>,
) -> bool {
    c.thread = thread;
    get_deltas(&mut c.addrs, addrs);
    let n = c.addrs.len();
    c.times.clear();
    c.sizes.clear();
    c.writes.clear();
    let Some(rest) = rest else { return true };
    get_deltas(&mut c.times, &rest[..8 * n]);
    c.sizes.extend_from_slice(&rest[8 * n..9 * n]);
    let flags = &rest[9 * n..10 * n];
    c.writes.extend(flags.iter().map(|&b| b == 1));
    flags.iter().all(|&b| b <= 1)
}

/// Decodes `n` faults into `c`, reusing its buffers: `addrs` holds the address column
/// and `rest` the times, cpus and nodes (16n bytes).
pub fn decode_faults(c: &mut FaultChunk, thread: u32, addrs: &[u8], rest: &[u8]) {
    c.thread = thread;
    get_deltas(&mut c.addrs, addrs);
    let n = c.addrs.len();
    get_deltas(&mut c.times, &rest[..8 * n]);
    get_u32s(&mut c.cpus, &rest[8 * n..12 * n]);
    get_u32s(&mut c.nodes, &rest[12 * n..16 * n]);
}
