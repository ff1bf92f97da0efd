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
use std::collections::HashMap;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Mutex;

/// zstd level. Measured on delta-coded strided addresses, level 3 finds the long runs
/// that level 1 cuts into short matches: 44 instead of 264 bytes per 4096 accesses,
/// faster to compress and over 10× faster to decompress. Still so with V5's varints: a
/// stencil3d trace rewritten at level 1 (`examples/recode.rs`) was 2.3× larger and
/// took no less CPU time.
pub(crate) const LEVEL: i32 = 3;
/// zstd level for the address stream of a thread whose addresses compress poorly (random
/// access, as `cginit` makes): there level 3's longer search finds little and was a third
/// of the tracer's CPU time; level 1 took 40 % less time for 8 % more bytes. Streams that
/// compress well keep level 3, which pays on them (`cg` at level 1: twice the bytes for
/// the same time).
const FAST_LEVEL: i32 = 1;
/// An address stream that level 3 leaves above this fraction of its raw size (1/POOR)
/// compresses poorly: its thread's next ones go at [`FAST_LEVEL`].
const POOR: usize = 4;
/// Address streams of a poorly compressing thread at [`FAST_LEVEL`] between two at
/// [`LEVEL`], which tell whether its addresses became regular again.
const PROBE_EVERY: u32 = 8;

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
    /// The threads whose addresses compress poorly, with how many more of their address
    /// streams go at [`FAST_LEVEL`] before the next at [`LEVEL`].
    poor: Mutex<HashMap<u32, u32>>,
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

    /// Whether `thread`'s next address stream goes at [`FAST_LEVEL`].
    fn fast(&self, thread: u32) -> bool {
        let mut poor = self.poor.lock().unwrap_or_else(|e| e.into_inner());
        match poor.get_mut(&thread) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    /// Notes how `thread`'s address stream of `raw` bytes compressed at [`LEVEL`].
    fn compressed(&self, thread: u32, raw: usize, bytes: usize) {
        let mut poor = self.poor.lock().unwrap_or_else(|e| e.into_inner());
        if bytes * POOR > raw {
            poor.insert(thread, PROBE_EVERY);
        } else {
            poor.remove(&thread);
        }
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
    // Without it, every stream goes at LEVEL.
    let mut fast = zstd::bulk::Compressor::new(FAST_LEVEL).ok();
    loop {
        let Ok((seq, job)) = rx.lock().unwrap_or_else(|e| e.into_inner()).recv() else {
            return;
        };
        let out = match job {
            Job::Frame { thread, batch } => {
                let comps = (&mut comp, fast.as_mut());
                let done = encode_frame(comps, &mut buf, thread, &batch, pool);
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
    (comp, fast): (&mut Compressor, Option<&mut Compressor>),
    buf: &mut Scratch,
    thread: u32,
    batch: &Batch,
    pool: &Pool,
) -> std::io::Result<Done> {
    let mut bytes = Vec::new();
    let (kind, count) = match batch {
        Batch::Accesses(c, r) => {
            if !r.is_empty() {
                let raw = encode_repeats(r);
                let split = Kind::Repeats.first_stream(r.len() as u32);
                let (first, second) = raw.split_at(split);
                let f = (Kind::Repeats, thread, r.len() as u32, 0);
                frame_bytes((comp, None), &mut buf.comp, &mut bytes, f, first, second)?;
            }
            let count = c.len() as u32;
            let f = (Kind::Accesses, thread, count, c.flags());
            let fast = fast.filter(|_| pool.fast(thread));
            let probed = fast.is_none();
            let (first, second) = c.streams();
            let n = frame_bytes((comp, fast), &mut buf.comp, &mut bytes, f, first, second)?;
            if probed {
                pool.compressed(thread, first.len(), n);
            }
            (Kind::Accesses, count)
        }
        Batch::Faults(faults) => {
            let (raw, flags) = encode_faults(faults);
            let count = faults.len() as u32;
            let (first, second) = raw.split_at(Kind::Faults.first_stream(count));
            let f = (Kind::Faults, thread, count, flags);
            frame_bytes((comp, None), &mut buf.comp, &mut bytes, f, first, second)?;
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
/// holds the compressed streams on their way. The first stream goes through `fast` if
/// given, the rest through `comp`. Returns the first stream's compressed length.
pub(crate) fn frame_bytes(
    (comp, mut fast): (&mut Compressor, Option<&mut Compressor>),
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
    f: (Kind, u32, u32, u8),
    first: &[u8],
    second: &[u8],
) -> std::io::Result<usize> {
    let (kind, thread, count, flags) = f;
    let at = out.len();
    out.resize(at + codec::FRAME_HEADER + 4, 0);
    let mut first_len = 0;
    for (i, raw) in [first, second].into_iter().enumerate() {
        scratch.clear();
        scratch.reserve(zstd::zstd_safe::compress_bound(raw.len()));
        let c = match fast.as_deref_mut() {
            Some(f) if i == 0 => f,
            _ => &mut *comp,
        };
        let n = c.compress_to_buffer(raw, scratch)?;
        if i == 0 {
            let len_at = at + codec::FRAME_HEADER;
            out[len_at..len_at + 4].copy_from_slice(&(n as u32).to_le_bytes());
            first_len = n;
        }
        out.extend_from_slice(&scratch[..n]);
    }
    let raw_len = first.len() + second.len();
    let payload = &out[at + codec::FRAME_HEADER..];
    let head = codec::encode_frame_head(kind, thread, count, flags, raw_len, payload);
    out[at..at + codec::FRAME_HEADER].copy_from_slice(&head);
    Ok(first_len)
}

/// A zstd compressor as the writer keeps them, one per worker and level.
pub(crate) type Compressor = zstd::bulk::Compressor<'static>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread whose addresses compress poorly gets the fast level for its next
    /// PROBE_EVERY address streams, then one at LEVEL again to look; other threads keep
    /// LEVEL.
    #[test]
    fn poorly_compressing_threads_go_fast_between_probes() {
        let pool = Pool::default();
        assert!(!pool.fast(3));
        pool.compressed(3, 1000, 300);
        for _ in 0..PROBE_EVERY {
            assert!(!pool.fast(4));
            assert!(pool.fast(3));
        }
        assert!(!pool.fast(3), "a probe at LEVEL");
        pool.compressed(3, 1000, 300);
        assert!(pool.fast(3), "still poor");
        pool.compressed(3, 1000, 10);
        assert!(!pool.fast(3), "regular again");
    }
}
