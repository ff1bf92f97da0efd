//! The trace writer's background workers: each takes a batch of events (accesses already
//! encoded as V6 symbols and time blocks by the appending thread), compresses it with
//! zstd and hands the frame's bytes to the writing thread. The batches' buffers come back
//! to a pool, so the appenders encode into memory that is already mapped instead of a
//! fresh allocation per frame, and the accesses cross to another core as a few symbols,
//! not 24 bytes each.

use crate::chunk::{encode_faults, encode_repeats};
use crate::codec::{self, Kind};
use crate::symbols::Symbols;
use crate::types::{Access, Fault, ProcessInfo, ThreadInfo, TraceStatus};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Mutex;

/// zstd level, for every stream. Level 3 once paid: on delta-coded strided addresses
/// it found the long runs that level 1 cut into short matches, and a thread whose
/// addresses compressed poorly (random access, as `cginit` makes) went to level 1 between
/// probes at level 3. Since trace format 6 a regular stream is a few symbols per
/// thousand accesses: on the 11 programs of `make bench-trace` level 1 wrote 0-11 % more
/// bytes than level 3 (mg +11 %, cg +0.2 %, cginit +1 %; median 0.016 B/access either
/// way) and the whole `tdmap trace` took 3-7 % less CPU time (docs/bench-trace.md).
/// Level -1, zstd's first negative level, leaves literals as they are, so a frame builds
/// no Huffman table (`HUF_buildCTable_wksp` was 1.4-1.9 % of a trace's samples): against
/// level 1, 1.6-8 % more bytes (stencil3d +3.7 %, mg +1.6 %, cg +8 %) and 1.6-7.1 %
/// less CPU time for the whole `tdmap trace` (stencil3d -7.1 %, mg -4.8 %, cg -4.7 %,
/// ep -3.8 %, pipeline -2 %, alltoall -1.6 %; median of 5, in turn). A dense stream
/// takes [`DENSE_LEVEL`] instead ([`level_for`]).
pub(crate) const LEVEL: i32 = -1;
/// zstd level of a stream of at least [`DENSE_BYTES_PER_RECORD`] encoded bytes per
/// record: random addresses, whose literals Huffman coding shrinks. At level -1
/// throughout, cginit's trace was 26 % larger (1.689 B/access against 1.339) and its
/// `tdmap trace` 15-35 % slower, writing the extra bytes.
pub(crate) const DENSE_LEVEL: i32 = 1;
/// Encoded bytes per record from which a stream is dense: a strided stream's are a few
/// symbols per thousand accesses, a random one's several bytes each.
const DENSE_BYTES_PER_RECORD: usize = 1;

/// The zstd level for a stream of `raw` bytes that encodes `records` records.
fn level_for(raw: usize, records: u32) -> i32 {
    if raw >= DENSE_BYTES_PER_RECORD * records as usize {
        DENSE_LEVEL
    } else {
        LEVEL
    }
}

/// Events of one frame, still to be compressed by a worker.
pub(crate) enum Batch {
    /// Accesses, already encoded (and finished) by the appending thread, with the
    /// collapsed reads of a repeats frame to write just before, if any: both one job, so
    /// that no other thread's frame comes between them.
    Accesses(Box<Symbols>, Vec<(u32, u32)>),
    Faults(Vec<Fault>),
}

pub(crate) enum Job {
    Frame { thread: u32, batch: Batch },
    Threads(Vec<ThreadInfo>),
    Processes(Vec<ProcessInfo>),
    Finish(TraceStatus),
}

/// What the writing thread receives, in append order once sorted by sequence number.
pub(crate) enum Done {
    Frame {
        kind: Kind,
        thread: u32,
        count: u32,
        bytes: Vec<u8>,
    },
    Threads(Vec<ThreadInfo>),
    Processes(Vec<ProcessInfo>),
    Finish(TraceStatus),
}

/// What the appenders and the workers share besides the queue.
#[derive(Default)]
pub(crate) struct Pool {
    /// Spare frame buffers, returned by the workers once compressed and taken by the
    /// appenders, so that encoding writes into memory already mapped.
    spare: Mutex<Vec<Symbols>>,
}

/// Spare buffers kept: one per queued batch and worker, more only churn memory.
const POOL_MAX: usize = 64 + 8;

impl Pool {
    /// An empty batch, in buffers of the pool (or new ones).
    pub(crate) fn take(&self) -> Box<Symbols> {
        let spare = self.spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut c = Box::new(spare.unwrap_or_default());
        c.clear();
        c
    }

    /// `part` encoded as a V6 frame, in buffers of the pool (or new ones).
    pub(crate) fn encode(&self, part: &[Access]) -> Box<Symbols> {
        let mut c = self.take();
        for a in part {
            c.push(a.addr, a.size, a.write, a.time);
        }
        c
    }

    fn give(&self, c: Box<Symbols>) {
        let mut pool = self.spare.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < POOL_MAX {
            pool.push(*c);
        }
    }
}

/// A worker's reusable buffer: the compressed streams on their way into a frame.
#[derive(Default)]
struct Scratch {
    comp: Vec<u8>,
}

/// A worker: encodes and compresses frames until the appenders are gone or the writing
/// thread stops; other jobs pass through with their sequence number.
pub(crate) fn encode_jobs(
    rx: &Mutex<Receiver<(u64, Job)>>,
    done: &SyncSender<(u64, std::io::Result<Done>)>,
    mut comp: zstd::bulk::Compressor<'static>,
    pool: &Pool,
) {
    let mut buf = Scratch::default();
    loop {
        let Ok((seq, job)) = rx.lock().unwrap_or_else(|e| e.into_inner()).recv() else {
            return;
        };
        let out = match job {
            Job::Frame { thread, batch } => {
                let done = encode_frame(&mut comp, &mut buf, thread, &batch);
                if let Batch::Accesses(c, _) = batch {
                    pool.give(c);
                }
                done
            }
            Job::Threads(t) => Ok(Done::Threads(t)),
            Job::Processes(p) => Ok(Done::Processes(p)),
            Job::Finish(s) => Ok(Done::Finish(s)),
        };
        if done.send((seq, out)).is_err() {
            return;
        }
    }
}

/// The bytes of one batch's frames: a repeats frame first for collapsed reads, then the
/// accesses or faults frame.
fn encode_frame(
    comp: &mut Compressor,
    buf: &mut Scratch,
    thread: u32,
    batch: &Batch,
) -> std::io::Result<Done> {
    let mut bytes = Vec::new();
    let (kind, count) = match batch {
        Batch::Accesses(c, r) => {
            if !r.is_empty() {
                let raw = encode_repeats(r);
                let split = Kind::Repeats.first_stream(r.len() as u32);
                let (first, second) = raw.split_at(split);
                let f = (Kind::Repeats, thread, r.len() as u32, 0);
                frame_bytes(comp, &mut buf.comp, &mut bytes, f, first, second)?;
            }
            let count = c.len() as u32;
            let f = (Kind::Accesses, thread, count, c.flags());
            let (first, second) = c.streams();
            frame_bytes(comp, &mut buf.comp, &mut bytes, f, first, second)?;
            (Kind::Accesses, count)
        }
        Batch::Faults(faults) => {
            let (raw, flags) = encode_faults(faults);
            let count = faults.len() as u32;
            let (first, second) = raw.split_at(Kind::Faults.first_stream(count));
            let f = (Kind::Faults, thread, count, flags);
            frame_bytes(comp, &mut buf.comp, &mut bytes, f, first, second)?;
            (Kind::Faults, count)
        }
    };
    Ok(Done::Frame {
        kind,
        thread,
        count,
        bytes,
    })
}

/// Appends a whole frame, head and payload, to `out`: two zstd streams, the first one's
/// length in front (the address column of event frames, which a reader that wants
/// addresses only decompresses alone). `f` is (kind, thread, records, flags); `scratch`
/// holds the compressed streams on their way.
pub(crate) fn frame_bytes(
    comp: &mut Compressor,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
    f: (Kind, u32, u32, u8),
    first: &[u8],
    second: &[u8],
) -> std::io::Result<()> {
    let (kind, thread, count, flags) = f;
    let at = out.len();
    out.resize(at + codec::FRAME_HEADER + 4, 0);
    for (i, raw) in [first, second].into_iter().enumerate() {
        scratch.clear();
        scratch.reserve(zstd::zstd_safe::compress_bound(raw.len()));
        comp.set_compression_level(level_for(raw.len(), count))?;
        let n = comp.compress_to_buffer(raw, scratch)?;
        if i == 0 {
            let len_at = at + codec::FRAME_HEADER;
            out[len_at..len_at + 4].copy_from_slice(&(n as u32).to_le_bytes());
        }
        out.extend_from_slice(&scratch[..n]);
    }
    let raw_len = first.len() + second.len();
    let payload = &out[at + codec::FRAME_HEADER..];
    let head = codec::encode_frame_head(kind, thread, count, flags, raw_len, payload);
    out[at..at + codec::FRAME_HEADER].copy_from_slice(&head);
    Ok(())
}

/// A zstd compressor as the writer keeps them, one per worker.
pub(crate) type Compressor = zstd::bulk::Compressor<'static>;
