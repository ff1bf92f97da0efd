//! A reader that decompresses on a background thread while the caller consumes the
//! previous chunk, so reading overlaps with the model's work on another core.

use crate::chunk::Chunk;
use crate::error::Result;
use crate::reader::{Ending, Reader, Totals};
use crate::types::{Header, ThreadInfo};
use std::io::{Read, Seek};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Chunks decoded ahead of the consumer.
const AHEAD: usize = 4;

enum Msg {
    Chunk(Chunk),
    Error(crate::TraceError),
    End(Option<Totals>, Vec<ThreadInfo>, Option<Ending>),
}

/// A trace reader running one chunk ahead on its own thread; see [`Reader::prefetch`].
pub struct Prefetch {
    header: Header,
    threads: Vec<ThreadInfo>,
    totals: Option<Totals>,
    ending: Option<Ending>,
    rx: Option<Receiver<Msg>>,
    back: SyncSender<Chunk>,
    cur: Option<Chunk>,
    worker: Option<JoinHandle<()>>,
}

impl<R: Read + Seek + Send + 'static> Reader<R> {
    /// Moves the reader to a background thread that decodes chunks ahead of the caller.
    pub fn prefetch(self) -> Prefetch {
        let header = self.header().clone();
        let threads = self.threads().to_vec();
        let (tx, rx) = sync_channel(AHEAD);
        let (back, spares) = sync_channel(AHEAD + 2);
        let worker = std::thread::Builder::new()
            .name("tdmap-trace-reader".into())
            .spawn(move || produce(self, tx, spares))
            .ok();
        Prefetch {
            header,
            threads,
            totals: None,
            ending: None,
            rx: Some(rx),
            back,
            cur: None,
            worker,
        }
    }
}

fn produce<R: Read + Seek>(mut r: Reader<R>, tx: SyncSender<Msg>, spares: Receiver<Chunk>) {
    let mut pool: Vec<Chunk> = Vec::new();
    loop {
        pool.extend(spares.try_iter());
        let msg = match r.next_chunk() {
            Ok(Some(c)) => {
                let kind = std::mem::discriminant(c);
                let spare = pool
                    .iter()
                    .position(|s| std::mem::discriminant(s) == kind)
                    .map(|i| pool.swap_remove(i));
                Msg::Chunk(r.take_current(spare))
            }
            Ok(None) => Msg::End(r.totals(), r.threads().to_vec(), r.ending()),
            Err(e) => Msg::Error(e),
        };
        let last = !matches!(msg, Msg::Chunk(_));
        if tx.send(msg).is_err() || last {
            return;
        }
    }
}

impl Prefetch {
    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Per-thread metadata (complete once the end is reached).
    pub fn threads(&self) -> &[ThreadInfo] {
        &self.threads
    }

    /// Totals of the end frame, once reached.
    pub fn totals(&self) -> Option<Totals> {
        self.totals
    }

    /// How the trace ends, once reached (see [`Reader::ending`]).
    pub fn ending(&self) -> Option<Ending> {
        self.ending
    }

    /// The next chunk, or `None` at the end of the trace.
    pub fn next_chunk(&mut self) -> Result<Option<&Chunk>> {
        if let Some(c) = self.cur.take() {
            let _ = self.back.try_send(c);
        }
        let Some(rx) = &self.rx else { return Ok(None) };
        match rx.recv() {
            Ok(Msg::Chunk(c)) => Ok(Some(self.cur.insert(c))),
            Ok(Msg::Error(e)) => {
                self.rx = None;
                Err(e)
            }
            Ok(Msg::End(totals, threads, ending)) => {
                self.totals = totals;
                self.ending = ending;
                self.threads = threads;
                self.rx = None;
                Ok(None)
            }
            Err(_) => {
                self.rx = None;
                Err(crate::TraceError::Invalid(
                    "trace reader thread stopped".into(),
                ))
            }
        }
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.rx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}
