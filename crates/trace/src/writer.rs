//! The trace writer: any number of threads append batches through `&self`; a few
//! background workers encode and compress them in parallel and one thread writes the
//! frames in the order they were appended, so zstd stays off the traced threads' hot path
//! and the file is byte for byte what a single worker would write.

use crate::chunk::{encode_accesses, encode_faults};
use crate::codec::{self, Kind};
use crate::error::{Result, TraceError};
use crate::types::{Access, Fault, Header, ThreadInfo, TraceStatus};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Batches queued before appenders wait for the background workers (back-pressure).
const QUEUE: usize = 64;
/// Most encoding and compressing workers: past the machine's cores they only contend.
const MAX_WORKERS: usize = 4;
/// zstd level. Measured on delta-coded strided addresses, level 3 finds the long runs
/// that level 1 cuts into short matches: 44 instead of 264 bytes per 4096 accesses,
/// faster to compress and over 10× faster to decompress.
const LEVEL: i32 = 3;

/// Events of one frame, still to be encoded by a worker.
enum Batch {
    Accesses(Vec<Access>),
    Faults(Vec<Fault>),
}

enum Job {
    Frame { thread: u32, batch: Batch },
    Threads(Vec<ThreadInfo>),
    Finish(TraceStatus),
}

/// What the writing thread receives, in append order once sorted by sequence number.
enum Done {
    Frame {
        kind: Kind,
        thread: u32,
        count: u32,
        bytes: Vec<u8>,
    },
    Threads(Vec<ThreadInfo>),
    Finish(TraceStatus),
}

/// The appending side: the job channel and the next job's sequence number.
struct Queue {
    tx: SyncSender<(u64, Job)>,
    seq: u64,
}

/// Writes a trace file from many threads at once; see the crate docs for the format.
pub struct Writer {
    path: PathBuf,
    queue: Mutex<Option<Queue>>,
    worker: Mutex<Option<JoinHandle<Result<()>>>>,
    failed: Arc<Mutex<Option<String>>>,
}

impl Writer {
    /// Creates (or truncates) `path` and writes `header` with status Incomplete; the status
    /// and the thread count are patched in place as the run goes on and at [`Writer::finish`].
    pub fn create(path: impl AsRef<Path>, header: Header) -> Result<Writer> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|err| TraceError::Io {
            path: path.to_path_buf(),
            err,
        })?;
        Writer::from_file(file, path, header)
    }

    /// [`Writer::create`] on a `file` the caller opened for writing (`tdmap trace` opens
    /// its output without following symlinks); `path` names it in errors.
    pub fn from_file(file: File, path: impl AsRef<Path>, header: Header) -> Result<Writer> {
        let path = path.as_ref().to_path_buf();
        let io = |err| TraceError::Io {
            path: path.clone(),
            err,
        };
        let mut h = header;
        h.version = crate::VERSION;
        h.status = TraceStatus::Incomplete;
        let bytes = codec::encode_header(&h);
        (&file).write_all(&bytes).map_err(io)?;
        let (tx, rx) = sync_channel(QUEUE);
        let (done_tx, done_rx) = sync_channel(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_WORKERS));
        for i in 0..workers {
            let (rx, done) = (Arc::clone(&rx), done_tx.clone());
            let comp = zstd::bulk::Compressor::new(LEVEL).map_err(io)?;
            std::thread::Builder::new()
                .name(format!("tdmap-trace-zstd{i}"))
                .spawn(move || encode_jobs(&rx, &done, comp))
                .map_err(io)?;
        }
        drop(done_tx);
        let failed = Arc::new(Mutex::new(None));
        let mut bg = Background {
            out: BufWriter::with_capacity(1 << 20, file),
            pos: bytes.len() as u64,
            thread_count: h.threads,
            threads: Vec::new(),
            totals: [0, 0],
            comp: zstd::bulk::Compressor::new(LEVEL).map_err(io)?,
        };
        let fail = Arc::clone(&failed);
        let p2 = path.clone();
        let worker = std::thread::Builder::new()
            .name("tdmap-trace-writer".into())
            .spawn(move || {
                let r = bg
                    .run(done_rx)
                    .map_err(|err| TraceError::Io { path: p2, err });
                if let Err(e) = &r {
                    *lock(&fail) = Some(e.to_string());
                }
                r
            })
            .map_err(io)?;
        Ok(Writer {
            path,
            queue: Mutex::new(Some(Queue { tx, seq: 0 })),
            worker: Mutex::new(Some(worker)),
            failed,
        })
    }

    /// Appends accesses made by `thread` (their own `thread` fields are ignored), in time order.
    pub fn append_accesses(&self, thread: u32, accesses: &[Access]) -> Result<()> {
        for part in accesses.chunks(codec::MAX_FRAME_EVENTS as usize) {
            self.send_frame(thread, Batch::Accesses(part.to_vec()))?;
        }
        Ok(())
    }

    /// Appends page-fault samples of `thread` (their own `thread` fields are ignored).
    pub fn append_faults(&self, thread: u32, faults: &[Fault]) -> Result<()> {
        for part in faults.chunks(codec::MAX_FRAME_EVENTS as usize) {
            self.send_frame(thread, Batch::Faults(part.to_vec()))?;
        }
        Ok(())
    }

    /// Sets the per-thread metadata written at [`Writer::finish`]; the last call wins.
    pub fn set_threads(&self, threads: Vec<ThreadInfo>) -> Result<()> {
        self.send(Job::Threads(threads))
    }

    /// Writes the threads, totals and trailer, records `status` in the header and closes
    /// the file. Later calls to any method fail with [`TraceError::Finished`].
    pub fn finish(&self, status: TraceStatus) -> Result<()> {
        self.send(Job::Finish(status))?;
        lock(&self.queue).take();
        let worker = lock(&self.worker).take().ok_or(TraceError::Finished)?;
        worker
            .join()
            .unwrap_or_else(|_| Err(TraceError::Invalid("trace writer thread panicked".into())))
    }

    fn send_frame(&self, thread: u32, batch: Batch) -> Result<()> {
        let n = match &batch {
            Batch::Accesses(a) => a.len(),
            Batch::Faults(f) => f.len(),
        };
        if n == 0 {
            return Ok(());
        }
        if thread == u32::MAX {
            return Err(TraceError::Invalid("thread id u32::MAX is reserved".into()));
        }
        self.send(Job::Frame { thread, batch })
    }

    fn send(&self, job: Job) -> Result<()> {
        // The lock is held while sending so that sequence numbers follow the channel order.
        let mut queue = lock(&self.queue);
        let q = queue.as_mut().ok_or(TraceError::Finished)?;
        q.tx.send((q.seq, job)).map_err(|_| {
            let why = lock(&self.failed)
                .clone()
                .unwrap_or_else(|| "writer stopped".into());
            TraceError::Io {
                path: self.path.clone(),
                err: std::io::Error::other(why),
            }
        })?;
        q.seq += 1;
        Ok(())
    }
}

impl Drop for Writer {
    /// Flushes what was appended; an unfinished trace keeps status Incomplete.
    fn drop(&mut self) {
        lock(&self.queue).take();
        if let Some(w) = lock(&self.worker).take() {
            let _ = w.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A worker: encodes and compresses frames until the appenders are gone or the writing
/// thread stops; other jobs pass through with their sequence number.
fn encode_jobs(
    rx: &Mutex<Receiver<(u64, Job)>>,
    done: &SyncSender<(u64, std::io::Result<Done>)>,
    mut comp: zstd::bulk::Compressor<'static>,
) {
    loop {
        let Ok((seq, job)) = lock(rx).recv() else {
            return;
        };
        let out = match job {
            Job::Frame { thread, batch } => {
                let (kind, count, (raw, flags)) = match &batch {
                    Batch::Accesses(a) => (Kind::Accesses, a.len(), encode_accesses(a)),
                    Batch::Faults(f) => (Kind::Faults, f.len(), encode_faults(f)),
                };
                drop(batch);
                frame_bytes(&mut comp, kind, thread, count as u32, flags, &raw).map(|bytes| {
                    Done::Frame {
                        kind,
                        thread,
                        count: count as u32,
                        bytes,
                    }
                })
            }
            Job::Threads(t) => Ok(Done::Threads(t)),
            Job::Finish(s) => Ok(Done::Finish(s)),
        };
        if done.send((seq, out)).is_err() {
            return;
        }
    }
}

/// A whole frame, head and payload: two zstd streams, the first one's length in front
/// (see `Kind::first_stream`).
fn frame_bytes(
    comp: &mut zstd::bulk::Compressor<'static>,
    kind: Kind,
    thread: u32,
    count: u32,
    flags: u8,
    raw: &[u8],
) -> std::io::Result<Vec<u8>> {
    let split = kind.first_stream(count);
    let first = comp.compress(&raw[..split])?;
    let mut payload = Vec::with_capacity(4 + first.len() + 64);
    payload.extend_from_slice(&(first.len() as u32).to_le_bytes());
    payload.extend_from_slice(&first);
    payload.extend_from_slice(&comp.compress(&raw[split..])?);
    let head = codec::encode_frame_head(kind, thread, count, flags, &payload);
    let mut bytes = Vec::with_capacity(head.len() + payload.len());
    bytes.extend_from_slice(&head);
    bytes.extend_from_slice(&payload);
    Ok(bytes)
}

struct Background {
    out: BufWriter<File>,
    pos: u64,
    thread_count: u32,
    threads: Vec<ThreadInfo>,
    totals: [u64; 2],
    comp: zstd::bulk::Compressor<'static>,
}

impl Background {
    /// Writes finished jobs in sequence order, holding back those that overtook others.
    fn run(&mut self, rx: Receiver<(u64, std::io::Result<Done>)>) -> std::io::Result<()> {
        let mut held = BTreeMap::new();
        let mut next = 0u64;
        for (seq, done) in rx {
            held.insert(seq, done);
            while let Some(done) = held.remove(&next) {
                next += 1;
                match done? {
                    Done::Frame {
                        kind,
                        thread,
                        count,
                        bytes,
                    } => {
                        self.grow_threads(thread.saturating_add(1))?;
                        self.totals[(kind == Kind::Faults) as usize] += count as u64;
                        self.out.write_all(&bytes)?;
                        self.pos += bytes.len() as u64;
                    }
                    Done::Threads(t) => self.threads = t,
                    Done::Finish(status) => return self.finish(status),
                }
            }
        }
        self.out.flush()
    }

    fn grow_threads(&mut self, n: u32) -> std::io::Result<()> {
        if n > self.thread_count {
            self.thread_count = n;
            // The count sits outside the header CRC so it can be patched here; a reader
            // of an interrupted trace then still sees every thread id counted.
            self.out
                .get_ref()
                .write_all_at(&n.to_le_bytes(), codec::THREADS_AT)?;
        }
        Ok(())
    }

    fn frame(
        &mut self,
        kind: Kind,
        thread: u32,
        count: u32,
        flags: u8,
        raw: &[u8],
    ) -> std::io::Result<()> {
        let bytes = frame_bytes(&mut self.comp, kind, thread, count, flags, raw)?;
        self.out.write_all(&bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn finish(&mut self, status: TraceStatus) -> std::io::Result<()> {
        let threads = std::mem::take(&mut self.threads);
        let top = threads
            .iter()
            .map(|t| t.id.saturating_add(1))
            .max()
            .unwrap_or(0);
        self.grow_threads(top.max(threads.len() as u32))?;
        let threads_at = self.pos;
        let raw = codec::encode_threads(&threads);
        self.frame(Kind::Threads, 0, threads.len() as u32, 0, &raw)?;
        let mut end = Vec::with_capacity(codec::END_BYTES);
        end.extend_from_slice(&self.totals[0].to_le_bytes());
        end.extend_from_slice(&self.totals[1].to_le_bytes());
        self.frame(Kind::End, 0, 1, 0, &end)?;
        self.out.write_all(&threads_at.to_le_bytes())?;
        self.out.write_all(codec::TRAILER_MAGIC)?;
        self.out.flush()?;
        let file = self.out.get_ref();
        file.write_all_at(&[status.to_byte()], codec::STATUS_AT)?;
        file.sync_all()
    }
}
