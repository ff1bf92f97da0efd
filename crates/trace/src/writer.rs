//! The trace writer: any number of threads append batches through `&self`; one background
//! thread compresses and writes them, so zstd stays off the traced threads' hot path.

use crate::chunk::{encode_accesses, encode_faults};
use crate::codec::{self, Kind};
use crate::error::{Result, TraceError};
use crate::types::{Access, Fault, Header, ThreadInfo, TraceStatus};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Batches queued before appenders wait for the background writer (back-pressure).
const QUEUE: usize = 64;
/// zstd level. Measured on delta-coded strided addresses, level 3 finds the long runs
/// that level 1 cuts into short matches: 44 instead of 264 bytes per 4096 accesses,
/// faster to compress and over 10× faster to decompress.
const LEVEL: i32 = 3;

enum Job {
    Frame {
        kind: Kind,
        thread: u32,
        count: u32,
        coded: (Vec<u8>, u8),
    },
    Threads(Vec<ThreadInfo>),
    Finish(TraceStatus),
}

/// Writes a trace file from many threads at once; see the crate docs for the format.
pub struct Writer {
    path: PathBuf,
    tx: Mutex<Option<SyncSender<Job>>>,
    worker: Mutex<Option<JoinHandle<Result<()>>>>,
    failed: Arc<Mutex<Option<String>>>,
}

impl Writer {
    /// Creates (or truncates) `path` and writes `header` with status Incomplete; the status
    /// and the thread count are patched in place as the run goes on and at [`Writer::finish`].
    pub fn create(path: impl AsRef<Path>, header: Header) -> Result<Writer> {
        let path = path.as_ref().to_path_buf();
        let io = |source| TraceError::Io {
            path: path.clone(),
            source,
        };
        let file = File::create(&path).map_err(io)?;
        let mut h = header;
        h.version = crate::VERSION;
        h.status = TraceStatus::Incomplete;
        let bytes = codec::encode_header(&h);
        (&file).write_all(&bytes).map_err(io)?;
        let (tx, rx) = sync_channel(QUEUE);
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
                    .run(rx)
                    .map_err(|source| TraceError::Io { path: p2, source });
                if let Err(e) = &r {
                    *lock(&fail) = Some(e.to_string());
                }
                r
            })
            .map_err(io)?;
        Ok(Writer {
            path,
            tx: Mutex::new(Some(tx)),
            worker: Mutex::new(Some(worker)),
            failed,
        })
    }

    /// Appends accesses made by `thread` (their own `thread` fields are ignored), in time order.
    pub fn append_accesses(&self, thread: u32, accesses: &[Access]) -> Result<()> {
        for part in accesses.chunks(codec::MAX_FRAME_EVENTS as usize) {
            self.send_frame(Kind::Accesses, thread, part.len(), encode_accesses(part))?;
        }
        Ok(())
    }

    /// Appends page-fault samples of `thread` (their own `thread` fields are ignored).
    pub fn append_faults(&self, thread: u32, faults: &[Fault]) -> Result<()> {
        for part in faults.chunks(codec::MAX_FRAME_EVENTS as usize) {
            self.send_frame(Kind::Faults, thread, part.len(), encode_faults(part))?;
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
        lock(&self.tx).take();
        let worker = lock(&self.worker).take().ok_or(TraceError::Finished)?;
        worker
            .join()
            .unwrap_or_else(|_| Err(TraceError::Invalid("trace writer thread panicked".into())))
    }

    fn send_frame(&self, kind: Kind, thread: u32, n: usize, coded: (Vec<u8>, u8)) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        if thread == u32::MAX {
            return Err(TraceError::Invalid("thread id u32::MAX is reserved".into()));
        }
        self.send(Job::Frame {
            kind,
            thread,
            count: n as u32,
            coded,
        })
    }

    fn send(&self, job: Job) -> Result<()> {
        let tx = lock(&self.tx).clone().ok_or(TraceError::Finished)?;
        tx.send(job).map_err(|_| {
            let why = lock(&self.failed)
                .clone()
                .unwrap_or_else(|| "writer stopped".into());
            TraceError::Io {
                path: self.path.clone(),
                source: std::io::Error::other(why),
            }
        })
    }
}

impl Drop for Writer {
    /// Flushes what was appended; an unfinished trace keeps status Incomplete.
    fn drop(&mut self) {
        lock(&self.tx).take();
        if let Some(w) = lock(&self.worker).take() {
            let _ = w.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
    fn run(&mut self, rx: Receiver<Job>) -> std::io::Result<()> {
        for job in rx {
            match job {
                Job::Frame {
                    kind,
                    thread,
                    count,
                    coded: (raw, flags),
                } => {
                    self.grow_threads(thread.saturating_add(1))?;
                    self.totals[(kind == Kind::Faults) as usize] += count as u64;
                    self.frame(kind, thread, count, flags, &raw)?;
                }
                Job::Threads(t) => self.threads = t,
                Job::Finish(status) => return self.finish(status),
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
        // Two zstd streams, the first one's length in front: see `Kind::first_stream`.
        let split = kind.first_stream(count);
        let first = self.comp.compress(&raw[..split])?;
        let mut payload = Vec::with_capacity(4 + first.len() + 64);
        payload.extend_from_slice(&(first.len() as u32).to_le_bytes());
        payload.extend_from_slice(&first);
        payload.extend_from_slice(&self.comp.compress(&raw[split..])?);
        let head = codec::encode_frame_head(kind, thread, count, flags, &payload);
        self.out.write_all(&head)?;
        self.out.write_all(&payload)?;
        self.pos += (head.len() + payload.len()) as u64;
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
