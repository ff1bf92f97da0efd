//! The trace writer: any number of threads append batches through `&self`, each encoding
//! its accesses into the stride predictor's symbols and time blocks (V6) while they are
//! still in its cache; a few background
//! workers compress them in parallel and one thread writes the frames in the order they
//! were appended, so zstd stays off the appenders' path and the file is byte for byte
//! what a single worker would write.
//!
//! Each frame is written whole with one `write_all`, straight to the file. When a write
//! fails (a full disk), the file is cut back to the end of the last whole frame, so it
//! stays a readable Incomplete trace, and every later call reports that one error.

use crate::codec::{self, Kind};
use crate::error::{Result, TraceError};
use crate::types::{Access, Fault, Header, ProcessInfo, ThreadInfo, TraceStatus};
use crate::workers::{encode_jobs, frame_bytes, Batch, Done, Job, Pool, LEVEL};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Batches queued before appenders wait for the background workers (back-pressure).
const QUEUE: usize = 64;
/// Most encoding and compressing workers: past the machine's cores they only contend.
const MAX_WORKERS: usize = 4;
/// The appending side: the job channel and the next job's sequence number.
struct Queue {
    tx: SyncSender<(u64, Job)>,
    seq: u64,
}

/// Where a trace's bytes go: its file, or in tests a file that fills up.
pub(crate) trait Out: Send + 'static {
    /// Appends `bytes` at the end.
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()>;
    /// Overwrites `bytes` at `at` (inside what was already appended).
    fn patch(&mut self, bytes: &[u8], at: u64) -> std::io::Result<()>;
    /// Cuts the file to `len` bytes.
    fn cut(&mut self, len: u64) -> std::io::Result<()>;
    /// Flushes the file to the disk.
    fn sync(&mut self) -> std::io::Result<()>;
}

impl Out for File {
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.write_all(bytes)
    }
    fn patch(&mut self, bytes: &[u8], at: u64) -> std::io::Result<()> {
        self.write_all_at(bytes, at)
    }
    fn cut(&mut self, len: u64) -> std::io::Result<()> {
        use std::io::Seek;
        self.set_len(len)?;
        self.seek(std::io::SeekFrom::Start(len)).map(|_| ())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        self.sync_all()
    }
}

/// The first write error, kept to be reported by every later call without its text
/// growing: the OS error itself, not a message that already names the file.
#[derive(Debug, Clone, Copy)]
struct Failure {
    kind: std::io::ErrorKind,
    errno: Option<i32>,
}

impl Failure {
    fn of(e: &std::io::Error) -> Failure {
        Failure {
            kind: e.kind(),
            errno: e.raw_os_error(),
        }
    }

    fn error(self) -> std::io::Error {
        match self.errno {
            Some(n) => std::io::Error::from_raw_os_error(n),
            None => std::io::Error::from(self.kind),
        }
    }
}

/// Writes a trace file from many threads at once; see the crate docs for the format.
pub struct Writer {
    path: PathBuf,
    queue: Mutex<Option<Queue>>,
    worker: Mutex<Option<JoinHandle<Result<()>>>>,
    failed: Arc<Mutex<Option<Failure>>>,
    pub(crate) pool: Arc<Pool>,
}

impl Writer {
    /// Creates (or truncates) `path` and writes `header` with status Incomplete; the status
    /// and the thread count are patched in place as the run goes on and at [`Writer::finish`].
    pub fn create(path: impl AsRef<Path>, header: Header) -> Result<Writer> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path).map_err(|err| TraceError::Io {
            path: path.clone(),
            err,
        })?;
        Writer::on(path, Box::new(file), header)
    }

    /// [`Writer::create`] on a file already opened for writing (by a caller that opens
    /// outputs its own way, e.g. without following symlinks); `path` names it in errors.
    pub fn from_file(file: File, path: impl AsRef<Path>, header: Header) -> Result<Writer> {
        Writer::on(path.as_ref().to_path_buf(), Box::new(file), header)
    }

    /// [`Writer::create`] on any output; `path` only names it in errors.
    pub(crate) fn on(path: PathBuf, mut out: Box<dyn Out>, header: Header) -> Result<Writer> {
        let io = |err| TraceError::Io {
            path: path.clone(),
            err,
        };
        let mut h = header;
        h.version = crate::VERSION;
        h.status = TraceStatus::Incomplete;
        let bytes = codec::encode_header(&h);
        if let Err(e) = out.append(&bytes) {
            let _ = out.cut(0);
            return Err(io(e));
        }
        let (tx, rx) = sync_channel(QUEUE);
        let (done_tx, done_rx) = sync_channel(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_WORKERS));
        let pool = Arc::new(Pool::default());
        for i in 0..workers {
            let (rx, done, pool) = (Arc::clone(&rx), done_tx.clone(), Arc::clone(&pool));
            let comp = zstd::bulk::Compressor::new(LEVEL).map_err(io)?;
            std::thread::Builder::new()
                .name(format!("tdmap-trace-zstd{i}"))
                .spawn(move || encode_jobs(&rx, &done, comp, &pool))
                .map_err(io)?;
        }
        drop(done_tx);
        let failed = Arc::new(Mutex::new(None));
        let mut bg = Background {
            out,
            pos: bytes.len() as u64,
            thread_count: h.threads,
            threads: Vec::new(),
            processes: Vec::new(),
            totals: [0, 0],
            comp: zstd::bulk::Compressor::new(LEVEL).map_err(io)?,
        };
        let fail = Arc::clone(&failed);
        let p2 = path.clone();
        let worker = std::thread::Builder::new()
            .name("tdmap-trace-writer".into())
            .spawn(move || {
                let r = bg.run(done_rx);
                if let Err(e) = &r {
                    *lock(&fail) = Some(Failure::of(e));
                    // Keep every whole frame: a failed write may have left part of one.
                    let _ = bg.out.cut(bg.pos);
                }
                r.map_err(|err| TraceError::Io { path: p2, err })
            })
            .map_err(io)?;
        Ok(Writer {
            path,
            queue: Mutex::new(Some(Queue { tx, seq: 0 })),
            worker: Mutex::new(Some(worker)),
            failed,
            pool,
        })
    }

    /// Appends accesses made by `thread` (their own `thread` fields are ignored), in time
    /// order. They are encoded on the calling thread (a predictor step each, their times
    /// into blocks); compression is not.
    pub fn append_accesses(&self, thread: u32, accesses: &[Access]) -> Result<()> {
        for part in accesses.chunks(codec::MAX_FRAME_EVENTS as usize) {
            self.send_frame(thread, Batch::Accesses(self.pool.encode(part), Vec::new()))?;
        }
        Ok(())
    }

    /// Appends accesses of `thread` as [`Writer::append_accesses`] does, with collapsed
    /// reads: `repeats` holds, by increasing index into `accesses`, each read that stands
    /// for a run of reads of its line and how many more reads the run had (V4 repeats
    /// frames, each written just before the accesses frame it describes).
    pub fn append_collapsed(
        &self,
        thread: u32,
        accesses: &[Access],
        repeats: &[(u32, u32)],
    ) -> Result<()> {
        let ordered = repeats.windows(2).all(|w| w[0].0 < w[1].0);
        let reads = repeats
            .iter()
            .all(|&(i, n)| n > 0 && accesses.get(i as usize).is_some_and(|a| !a.write));
        if !ordered || !reads {
            return Err(TraceError::bad_repeats());
        }
        let max = codec::MAX_FRAME_EVENTS as usize;
        let mut rest = repeats;
        for (k, part) in accesses.chunks(max).enumerate() {
            let end = ((k + 1) * max) as u32;
            let n = rest.iter().take_while(|r| r.0 < end).count();
            let (mine, later) = rest.split_at(n);
            rest = later;
            let base = (k * max) as u32;
            let rebased: Vec<(u32, u32)> = mine.iter().map(|&(i, e)| (i - base, e)).collect();
            let batch = Batch::Accesses(self.pool.encode(part), rebased);
            self.send_frame(thread, batch)?;
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

    /// Sets the process table of a multi-process trace, written after the threads at
    /// [`Writer::finish`]; the last call wins. Task ids must be numbered by process.
    pub fn set_processes(&self, processes: Vec<ProcessInfo>) -> Result<()> {
        self.send(Job::Processes(processes))
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

    pub(crate) fn send_frame(&self, thread: u32, mut batch: Batch) -> Result<()> {
        let n = match &mut batch {
            Batch::Accesses(c, _) => {
                c.finish()?;
                c.len()
            }
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
        q.tx.send((q.seq, job)).map_err(|_| TraceError::Io {
            path: self.path.clone(),
            err: lock(&self.failed).map_or_else(
                || std::io::Error::other("the trace writer stopped"),
                Failure::error,
            ),
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

struct Background {
    out: Box<dyn Out>,
    pos: u64,
    thread_count: u32,
    threads: Vec<ThreadInfo>,
    processes: Vec<ProcessInfo>,
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
                        self.out.append(&bytes)?;
                        self.pos += bytes.len() as u64;
                    }
                    Done::Threads(t) => self.threads = t,
                    Done::Processes(p) => self.processes = p,
                    Done::Finish(status) => return self.finish(status),
                }
            }
        }
        Ok(())
    }

    fn grow_threads(&mut self, n: u32) -> std::io::Result<()> {
        if n > self.thread_count {
            self.thread_count = n;
            // The count sits outside the header CRC so it can be patched here; a reader
            // of an interrupted trace then still sees every thread id counted.
            self.out.patch(&n.to_le_bytes(), codec::THREADS_AT)?;
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
        let (first, second) = raw.split_at(kind.first_stream(count));
        let mut bytes = Vec::new();
        let mut scratch = Vec::new();
        let f = (kind, thread, count, flags);
        frame_bytes(&mut self.comp, &mut scratch, &mut bytes, f, first, second)?;
        self.out.append(&bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn finish(&mut self, status: TraceStatus) -> std::io::Result<()> {
        let threads = std::mem::take(&mut self.threads);
        let procs = std::mem::take(&mut self.processes);
        let top = threads
            .iter()
            .map(|t| t.id.saturating_add(1))
            .chain(procs.iter().map(|p| p.first_task.saturating_add(p.tasks)))
            .max()
            .unwrap_or(0);
        self.grow_threads(top.max(threads.len() as u32))?;
        let threads_at = self.pos;
        let raw = codec::encode_threads(&threads);
        self.frame(Kind::Threads, 0, threads.len() as u32, 0, &raw)?;
        if !procs.is_empty() {
            let raw = codec::encode_processes(&procs);
            self.frame(Kind::Processes, 0, procs.len() as u32, 0, &raw)?;
        }
        let mut end = Vec::with_capacity(codec::END_BYTES);
        end.extend_from_slice(&self.totals[0].to_le_bytes());
        end.extend_from_slice(&self.totals[1].to_le_bytes());
        self.frame(Kind::End, 0, 1, 0, &end)?;
        let mut trailer = threads_at.to_le_bytes().to_vec();
        trailer.extend_from_slice(codec::TRAILER_MAGIC);
        self.out.append(&trailer)?;
        self.pos += trailer.len() as u64;
        self.out.patch(&[status.to_byte()], codec::STATUS_AT)?;
        self.out.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Access, Reader};

    /// A file that takes `room` bytes, then fails as a full disk does: a write that does
    /// not fit puts what fits, then ENOSPC.
    struct FullDisk {
        file: File,
        room: u64,
    }

    impl Out for FullDisk {
        fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
            let fits = bytes.len().min(self.room as usize);
            self.file.write_all(&bytes[..fits])?;
            self.room -= fits as u64;
            if fits < bytes.len() {
                return Err(std::io::Error::from_raw_os_error(ENOSPC));
            }
            Ok(())
        }
        fn patch(&mut self, bytes: &[u8], at: u64) -> std::io::Result<()> {
            self.file.patch(bytes, at)
        }
        fn cut(&mut self, len: u64) -> std::io::Result<()> {
            self.file.cut(len)
        }
        fn sync(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Linux's ENOSPC.
    const ENOSPC: i32 = 28;

    fn frame_of(thread: u32, n: u64) -> Vec<Access> {
        (0..n)
            .map(|i| Access {
                thread,
                addr: 0x1000 + i * 4096 * 7 % 1_000_003,
                size: 8,
                write: i % 3 == 0,
                time: i,
            })
            .collect()
    }

    /// Writes 8 frames into a file with room for `room` bytes; returns the file and what
    /// `finish` said.
    fn write_into(room: u64, name: &str) -> (PathBuf, Result<()>) {
        let p = std::env::temp_dir().join(format!("tdmap-full-{}-{name}", std::process::id()));
        let out = FullDisk {
            file: File::create(&p).unwrap(),
            room,
        };
        let mut h = Header::new(vec!["prog".into()], "m");
        h.threads = 2;
        let w = Writer::on(p.clone(), Box::new(out), h).unwrap();
        for i in 0..8 {
            // Appends may still be queued when the disk fills: only `finish` must fail.
            let _ = w.append_accesses(i % 2, &frame_of(i % 2, 5000));
        }
        let r = w.finish(TraceStatus::Complete);
        (p, r)
    }

    /// Issue 21 item 5: a full disk left a 0-byte trace and an error printed twice.
    #[test]
    fn a_full_disk_keeps_every_whole_frame_and_reports_one_error() {
        let (whole, r) = write_into(u64::MAX, "whole");
        r.unwrap();
        let room = std::fs::metadata(&whole).unwrap().len() / 2;
        let _ = std::fs::remove_file(&whole);
        // Room for the header and some frames, then a cut mid-frame.
        let (p, r) = write_into(room, "cut");
        let msg = r.unwrap_err().to_string();
        assert_eq!(msg.matches("No space left on device").count(), 1, "{msg}");
        assert!(msg.starts_with(&p.display().to_string()), "{msg}");
        let len = std::fs::metadata(&p).unwrap().len();
        assert!(len > 0 && len <= room, "{len} of {room}");
        let mut r = Reader::open(&p).unwrap();
        let mut frames = 0;
        while r.next_chunk().unwrap().is_some() {
            frames += 1;
        }
        let e = r.ending().unwrap();
        assert!(frames > 0 && frames < 8, "{frames} frames");
        assert_eq!(e.status, TraceStatus::Incomplete);
        assert!(!e.cut_frame, "the partial frame was cut off");
        assert_eq!(e.ends_at, len);
        assert_eq!(r.header().status, TraceStatus::Incomplete);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn a_disk_full_before_the_header_leaves_an_empty_file_and_one_error() {
        let p = std::env::temp_dir().join(format!("tdmap-full-{}-hdr", std::process::id()));
        let out = FullDisk {
            file: File::create(&p).unwrap(),
            room: 10,
        };
        let err = Writer::on(p.clone(), Box::new(out), Header::new(vec![], "m"))
            .err()
            .unwrap();
        let msg = err.to_string();
        assert_eq!(msg.matches("No space left on device").count(), 1, "{msg}");
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 0);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn later_appends_report_the_same_error_once() {
        let p = std::env::temp_dir().join(format!("tdmap-full-{}-later", std::process::id()));
        let out = FullDisk {
            file: File::create(&p).unwrap(),
            room: 200,
        };
        let w = Writer::on(p.clone(), Box::new(out), Header::new(vec![], "m")).unwrap();
        let err = (0..1000)
            .find_map(|_| w.append_accesses(0, &frame_of(0, 5000)).err())
            .expect("the writer stops taking frames");
        let msg = err.to_string();
        assert_eq!(msg.matches("No space left on device").count(), 1, "{msg}");
        let _ = std::fs::remove_file(&p);
    }
}
