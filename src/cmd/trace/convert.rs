//! Converting the runtime's raw chunks into the trace after the program ended: each
//! process's file decoded chunk by chunk, the files merged in time order, the scratch
//! files' blocks freed behind the readers, stopped early by a write error (the trace
//! keeps its whole frames) or by a signal meant for tdmap.
//!
//! Threads become tasks numbered by process, then by thread; with several processes,
//! addresses become page keys ([`Keys`]) so that pages shared between processes are one
//! key, as kMAF's physical addresses are (kMAF §3.1).

use super::early::Early;
use super::keys::Keys;
use super::procs::{settle, Proc};
use super::raw::RawChunk;
use super::raw::{RawEvent, RawReader};
use super::spill::{Source, Spilled};
use super::Decoder;
use anyhow::{Context, Result};
use std::collections::HashSet;
use std::io::BufReader;
use std::ops::Range;
use std::process::ExitStatus;
use tdmap_trace::{Fault, OpenFrames, ProcessInfo, ThreadInfo, TraceError, TraceStatus, Writer};
use tdmap_wire::pagekey::is_shared;

/// Counts gathered while converting.
#[derive(Debug, Default)]
pub(super) struct Stats {
    pub(super) threads: u32,
    pub(super) accesses: u64,
    pub(super) faults: u64,
    pub(super) filtered: u64,
    /// Reads collapsed into the record before them (spin-waiting), beyond `accesses`.
    pub(super) collapsed: u64,
}

/// What converting the raw chunks did.
pub(super) struct Converted {
    /// How the trace ends (the program's status, Incomplete if a child's part is).
    pub(super) status: TraceStatus,
    pub(super) stats: Stats,
    /// The trace's write error that stopped it (the trace keeps its whole frames).
    pub(super) write_err: Option<tdmap_trace::TraceError>,
    /// The signal that stopped it.
    pub(super) stopped: Option<i32>,
}

/// One process's raw stream being read (its spill, then its raw file: `spill.rs`).
struct Stream {
    rd: RawReader<BufReader<Source>>,
    /// Events read from before where `rd` starts, handed out first.
    pending: std::vec::IntoIter<RawEvent>,
    next: Option<RawEvent>,
}

impl Stream {
    /// Opens `p`'s stream at byte `from` of its raw file (what was read while the program
    /// ran), after the `pending` events read before it, with a read buffer of `buf`
    /// bytes; its blocks are freed behind the reader.
    fn open(
        p: &Proc,
        spilled: &Spilled,
        buf: usize,
        from: u64,
        pending: Vec<RawEvent>,
    ) -> Result<Stream> {
        let src = spilled.source(&p.data, from)?;
        let mut s = Stream {
            rd: RawReader::new(BufReader::with_capacity(buf, src)),
            pending: pending.into_iter(),
            next: None,
        };
        s.next = s.advance()?;
        Ok(s)
    }

    /// The event after `next`.
    fn advance(&mut self) -> Result<Option<RawEvent>> {
        match self.pending.next() {
            Some(ev) => Ok(Some(ev)),
            None => self.rd.next_event().context("reading the raw trace"),
        }
    }
}

/// The stream whose next event is the earliest.
fn earliest(streams: &[Option<Stream>]) -> Option<usize> {
    streams
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((s.as_ref()?.next.as_ref()?.time(), i)))
        .min()
        .map(|(_, i)| i)
}

/// The conversion's state: what was counted and the buffers, kept from the part
/// converted while the program ran (`early.rs`) to the rest.
pub(super) struct Conv {
    pub(super) stats: Stats,
    threads: Vec<ThreadInfo>,
    dec: Decoder,
    base: Option<u64>,
    faults: Vec<Fault>,
    repeats: Vec<(u32, u32)>,
    first_touched: HashSet<u64>,
    /// Each thread's access frame being filled: a frame spans several chunks.
    frames: OpenFrames,
}

impl Conv {
    /// A conversion of a run whose pages are `page_size` bytes.
    pub(super) fn new(page_size: u64) -> Conv {
        Conv {
            stats: Stats::default(),
            threads: Vec::new(),
            dec: Decoder::new(page_size),
            base: None,
            faults: Vec::new(),
            repeats: Vec::new(),
            first_touched: HashSet::new(),
            frames: OpenFrames::default(),
        }
    }

    /// Converts one raw event of process `p` (its tasks `first_task..+tasks`; a thread
    /// past them registered after they were counted and is left out).
    pub(super) fn event(
        &mut self,
        ev: RawEvent,
        p: &ProcessInfo,
        keys: Option<&Keys>,
        writer: &Writer,
    ) -> tdmap_trace::Result<()> {
        let task = |t: u32| (t < p.tasks).then(|| p.first_task + t);
        let stats = &mut self.stats;
        match ev {
            RawEvent::Thread { id, os_tid, time } => {
                self.base.get_or_insert(time);
                let Some(id) = task(id) else { return Ok(()) };
                self.threads.push(ThreadInfo {
                    id,
                    os_tid: os_tid as i32,
                    cpu: None,
                });
                stats.threads = stats.threads.max(id + 1);
            }
            RawEvent::End {
                thread, filtered, ..
            } => {
                stats.filtered += filtered;
                // A thread that ended sends its open frame now: left open, it went out
                // after the frames of threads that ran later, and readers, which take
                // frames in file order, saw its last accesses after theirs.
                if let Some(t) = task(thread) {
                    self.frames.close(writer, t)?;
                }
            }
            // Only `--model-only`'s aggregating threads write these, never a trace's.
            RawEvent::Counted { .. } => {
                return Err(TraceError::Invalid(
                    "a counted chunk (an aggregating thread's) in a trace's raw stream".into(),
                ))
            }
            RawEvent::Accesses(mut c) => {
                c.rebase(*self.base.get_or_insert(c.ticks[0]));
                // Recorded after its thread count was taken (a child still running).
                let Some(t) = task(c.thread) else {
                    return Ok(());
                };
                // Page keys are per address: a predicted chunk's runs are expanded.
                if keys.is_some() {
                    c.expand().map_err(|e| TraceError::Invalid(e.to_string()))?;
                }
                stats.threads = stats.threads.max(t + 1);
                let (faults, repeats) = (&mut self.faults, &mut self.repeats);
                let split = self.dec.side(&c, faults, repeats);
                if let Some(k) = keys {
                    faults
                        .iter_mut()
                        .for_each(|f| f.addr = k.key(p.index, f.addr));
                    // Each process judges first touches in its own address space: a
                    // shared page keeps the earliest.
                    let seen = &mut self.first_touched;
                    faults.retain(|f| !is_shared(f.addr) || seen.insert(f.addr));
                }
                stats.accesses += split.total as u64;
                stats.faults += faults.len() as u64;
                stats.collapsed += repeats.iter().map(|r| r.1 as u64).sum::<u64>();
                let key = |a| keys.map_or(a, |k| k.key(p.index, a));
                let cut = repeats.partition_point(|r| (r.0 as usize) < split.accesses);
                let (before, after) = repeats.split_at(cut);
                let (frames, dec) = (&mut self.frames, &self.dec);
                let words = (0..split.words, split.accesses, 0);
                push(frames, writer, (t, &c, dec), words, before, key)?;
                if !faults.is_empty() {
                    frames.faults(writer, t, faults)?;
                }
                let rest = split.total - split.accesses;
                let end = c.predicted.map_or(c.records.len(), |n| n as usize);
                let words = (split.words..end, rest, split.accesses);
                push(frames, writer, (t, &c, dec), words, after, key)?;
            }
        }
        Ok(())
    }

    /// Sends every thread's open frame to `writer`, before the trace is finished.
    pub(super) fn flush(&mut self, writer: &Writer) -> tdmap_trace::Result<()> {
        self.frames.close_all(writer)
    }
}

/// Converts every process's raw chunks into the trace, process 0's going on from what
/// `early` converted while the program ran, until the end or until `stop` names a
/// signal; then settles each process's status and finishes the trace. Reads each stream
/// through its spill when it has one (`spilled`), and frees the spills' and raw files'
/// disk blocks behind the readers as it goes, so the trace can grow on a disk they filled.
pub(super) fn convert(
    procs: &mut [Proc],
    spilled: &Spilled,
    keys: Option<&Keys>,
    writer: &Writer,
    status: &ExitStatus,
    early: Early,
    stop: impl Fn() -> Option<i32>,
) -> Result<Converted> {
    let mut streams = Vec::with_capacity(procs.len());
    // 1 MiB of read buffers in all, at least one chunk's worth each.
    let buf = ((1 << 20) / procs.len()).max(64 << 10);
    let (mut conv, from0, mut pending0) = (early.conv, early.from, early.pending);
    for (i, p) in procs.iter().enumerate() {
        let (from, pending) = match i {
            0 => (from0, std::mem::take(&mut pending0)),
            _ => (0, Vec::new()),
        };
        match Stream::open(p, spilled, buf, from, pending) {
            Ok(s) => streams.push(Some(s)),
            Err(e) if i == 0 => return Err(e),
            // A child that could not write its file has an empty part (Incomplete).
            Err(_) => streams.push(None),
        }
    }
    // Cut short by a write error or a signal: the writer keeps its whole frames.
    let cut = |mut conv: Conv, write_err, stopped| {
        let _ = conv.flush(writer);
        let _ = writer.finish(TraceStatus::Incomplete);
        let stats = conv.stats;
        Ok(Converted {
            status: TraceStatus::Incomplete,
            stats,
            write_err,
            stopped,
        })
    };
    while let Some(i) = earliest(&streams) {
        let s = streams[i].as_mut().expect("earliest names an open stream");
        let ev = s
            .next
            .take()
            .expect("earliest names a stream with an event");
        s.next = s.advance()?;
        if let Some(sig) = stop() {
            return cut(conv, None, Some(sig));
        }
        if let Err(e) = conv.event(ev, &procs[i].info, keys, writer) {
            return cut(conv, Some(e), None);
        }
    }
    let flushed = conv.flush(writer);
    let (stats, mut threads) = (conv.stats, conv.threads);
    threads.sort_by_key(|t| t.id);
    let torn: Vec<bool> = streams
        .iter()
        .map(|s| s.as_ref().is_none_or(|s| s.rd.torn))
        .collect();
    let whole = settle(procs, &torn, status);
    let mut end = flushed.and_then(|_| writer.set_threads(threads));
    if procs.len() > 1 {
        end = end.and_then(|_| writer.set_processes(procs.iter().map(|p| p.info).collect()));
    }
    let end = end.and_then(|_| writer.finish(whole));
    Ok(Converted {
        status: whole,
        stats,
        write_err: end.err(),
        stopped: None,
    })
}

/// Pushes the accesses of chunk `c` among words `words.0` (`words.1` of them, the first
/// access `words.2` of the chunk) into thread `t`'s open frame, each address through
/// `key` (a predicted chunk's symbols as they are: it has no key, `event` expanded it
/// otherwise), with the collapsed reads `repeats` naming them by index in the chunk.
fn push(
    frames: &mut OpenFrames,
    writer: &Writer,
    (t, c, dec): (u32, &RawChunk, &Decoder),
    (words, k, from): (Range<usize>, usize, usize),
    repeats: &[(u32, u32)],
    key: impl Fn(u64) -> u64 + Copy,
) -> tdmap_trace::Result<()> {
    if k == 0 {
        return Ok(());
    }
    let mut f = frames.frame(writer, t, k)?;
    let at = f.len() as u32;
    if c.predicted.is_some() {
        dec.push_predicted(words, &mut f, from > 0)?;
    } else {
        Decoder::push(c, words, &mut f, key);
    }
    for &(i, extra) in repeats {
        if !f.repeat(at + i - from as u32, extra) {
            return Err(tdmap_trace::TraceError::bad_repeats());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::procs::Control;
    use super::super::raw::wire::{self, ChunkHeader};
    use super::*;

    /// A thread-start chunk of thread `id`: a header only.
    fn thread_chunk(id: u32) -> [u8; wire::HEADER_BYTES] {
        ChunkHeader {
            magic: wire::MAGIC,
            kind: wire::KIND_THREAD,
            thread: id,
            t0: id as u64,
            ..ChunkHeader::default()
        }
        .encode()
    }

    /// The conversion after the exit starts with the events the early conversion read
    /// but did not convert, then reads the file from where it stopped: the front of the
    /// file may already be freed, so those events exist only in memory.
    #[test]
    fn the_rest_starts_with_the_events_read_but_not_converted() {
        let dir = std::env::temp_dir().join(format!("tdmap-handover-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("raw");
        let bytes: Vec<u8> = (0..4).flat_map(thread_chunk).collect();
        std::fs::write(&data, &bytes).unwrap();
        let p = Proc {
            ctl: Control::default(),
            data: data.clone(),
            maps: dir.join("maps"),
            info: ProcessInfo {
                index: 0,
                pid: 0,
                parent: None,
                first_task: 0,
                tasks: 4,
                status: TraceStatus::Incomplete,
            },
        };
        // Events 0 and 1 were read early (their bytes then freed), 2 and 3 were not.
        let mut rd = RawReader::new(&bytes[..]);
        let pending = vec![
            rd.next_event().unwrap().unwrap(),
            rd.next_event().unwrap().unwrap(),
        ];
        let from = 2 * wire::HEADER_BYTES as u64;
        let mut s = Stream::open(&p, &Spilled::default(), 1 << 16, from, pending).unwrap();
        let mut ids = Vec::new();
        while let Some(ev) = s.next.take() {
            if let RawEvent::Thread { id, .. } = ev {
                ids.push(id);
            }
            s.next = s.advance().unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(ids, [0, 1, 2, 3]);
    }
}
