//! The adapter from `tdmap trace` files to the simulator's input, and the first pass that
//! sizes a run.
//!
//! A trace stores each thread's events in frames of up to a million events, written as
//! each thread's buffer fills, so file order interleaves threads only coarsely. The
//! simulator wants them interleaved as they ran, so [`TraceInput`] keeps a bounded window
//! of decoded events (at most [`WINDOW`] plus one frame) and always emits the event with
//! the earliest time stamp in it: a k-way merge of the threads' queues. An event that a
//! late frame brings in with an older time than one already emitted is emitted at once
//! (the window makes that rare: it only happens when a thread's frame arrives more than
//! a window behind). Memory stays bounded however long the trace is.
//!
//! Page-fault samples in a trace are skipped: the simulator places every page on its
//! first simulated access (Linux's first touch), which for an exact trace is the first
//! access to the page that the traced program made.

use crate::access::SimAccess;
use crate::error::SimError;
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};
use std::path::Path;
use tdmap_trace::{Chunk, Reader, TraceError};

/// Events decoded ahead of the one emitted, at most (plus one frame): 1 Mi events, 24 MiB.
pub const WINDOW: usize = 1 << 20;

/// What can go wrong while replaying a trace file.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The trace cannot be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The simulator refused the run.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// A trace file as a stream of [`SimAccess`], threads merged by time stamp.
pub struct TraceInput {
    reader: Reader,
    queues: Vec<VecDeque<(u64, SimAccess)>>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    buffered: usize,
    eof: bool,
    cur: Option<u32>,
    bound: u64,
    threads: usize,
}

impl TraceInput {
    /// Opens a trace for replay.
    pub fn open(path: &Path) -> Result<TraceInput, RunError> {
        let reader = Reader::open(path)?;
        let threads = reader.header().threads as usize;
        Ok(TraceInput {
            reader,
            queues: vec![VecDeque::new(); threads],
            heap: BinaryHeap::new(),
            buffered: 0,
            eof: false,
            cur: None,
            bound: u64::MAX,
            threads,
        })
    }

    /// The trace's thread count (every event's thread is below it).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Decodes frames until the window is full or the trace ends.
    fn refill(&mut self) -> Result<(), RunError> {
        while !self.eof && self.buffered < WINDOW {
            let Some(chunk) = self.reader.next_chunk()? else {
                self.eof = true;
                break;
            };
            let Chunk::Accesses(c) = chunk else { continue };
            let t = c.thread as usize;
            if t >= self.queues.len() {
                return Err(SimError::ThreadOutOfRange {
                    thread: c.thread,
                    threads: self.queues.len(),
                }
                .into());
            }
            let q = &mut self.queues[t];
            let was_empty = q.is_empty();
            for i in 0..c.addrs.len() {
                let a = SimAccess {
                    thread: c.thread,
                    addr: c.addrs[i],
                    size: c.sizes[i],
                    write: c.writes[i],
                };
                q.push_back((c.times[i], a));
            }
            self.buffered += c.addrs.len();
            if was_empty && !q.is_empty() {
                self.heap.push(Reverse((q[0].0, c.thread)));
            }
        }
        Ok(())
    }

    /// Picks the thread with the earliest pending event, refilling the window first.
    fn switch(&mut self) -> Result<bool, RunError> {
        // The thread that ran goes back among the others (while it has events), then the
        // earliest of them all runs: at once when it is the one at the top of the heap,
        // which takes its place there (one sift instead of a push and a pop).
        let ran = self.cur.take().and_then(|t| {
            let q = &self.queues[t as usize];
            q.front().map(|&(time, _)| Reverse((time, t)))
        });
        if !self.eof && self.buffered < WINDOW / 2 || self.heap.is_empty() && ran.is_none() {
            self.refill()?;
        }
        let next = match (ran, self.heap.peek_mut()) {
            (Some(ran), Some(mut top)) if *top > ran => Some(std::mem::replace(&mut *top, ran)),
            (Some(ran), _) => Some(ran),
            (None, top) => top.map(PeekMut::pop),
        };
        let Some(Reverse((_, t))) = next else {
            return Ok(false);
        };
        self.cur = Some(t);
        self.bound = self.heap.peek().map_or(u64::MAX, |r| r.0 .0);
        Ok(true)
    }

    /// Appends the next `max` accesses to `buf` (fewer only at the end of the trace), in
    /// the order the iterator gives them, without its per-access calls: the replay of
    /// every policy waits on this loop.
    pub fn fill(&mut self, buf: &mut Vec<SimAccess>, max: usize) -> Result<(), RunError> {
        let goal = buf.len() + max;
        loop {
            if let Some(t) = self.cur {
                let q = &mut self.queues[t as usize];
                let before = buf.len();
                while buf.len() < goal {
                    match q.front() {
                        Some(&(time, a)) if time <= self.bound => {
                            q.pop_front();
                            buf.push(a);
                        }
                        _ => break,
                    }
                }
                self.buffered -= buf.len() - before;
            }
            if buf.len() >= goal || !self.switch()? {
                return Ok(());
            }
        }
    }

    fn next_access(&mut self) -> Result<Option<SimAccess>, RunError> {
        loop {
            if let Some(t) = self.cur {
                let q = &mut self.queues[t as usize];
                if let Some(&(time, a)) = q.front() {
                    if time <= self.bound {
                        q.pop_front();
                        self.buffered -= 1;
                        return Ok(Some(a));
                    }
                }
            }
            if !self.switch()? {
                return Ok(None);
            }
        }
    }
}

impl Iterator for TraceInput {
    type Item = Result<SimAccess, RunError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_access().transpose()
    }
}

/// The online policies' period in seconds: `tdmap run`'s ([`tdmap_monitor::PERIOD`]).
pub const PERIOD_S: f64 = tdmap_monitor::PERIOD.as_secs_f64();

/// What a first pass over a trace tells: its threads and how many accesses each made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The trace's thread count.
    pub threads: usize,
    /// Accesses per thread.
    pub accesses: Vec<u64>,
    /// How the trace ended: a replay of an Incomplete trace covers what was read.
    pub ending: Option<tdmap_trace::Ending>,
    /// The bytes of the pages the program first-touched over the trace (its faults),
    /// 0 when unknown: what it allocated, as far as a trace can tell
    /// (`SimConfig::data_bytes`).
    pub data_bytes: u64,
}

impl Profile {
    /// All accesses.
    pub fn total(&self) -> u64 {
        self.accesses.iter().sum()
    }

    /// The policy period for a run of this trace: [`PERIOD_S`] at `hz`, shortened for a short trace so that the run spans at least `periods`
    /// periods even if every access hit in L1 (`min_cycles` each). Without that, a trace of
    /// a few milliseconds would end before any online policy acted.
    pub fn period(&self, hz: f64, min_cycles: u64, periods: u64) -> u64 {
        let longest = self.accesses.iter().copied().max().unwrap_or(0);
        let floor = longest.saturating_mul(min_cycles) / periods.max(1);
        ((hz * PERIOD_S) as u64).min(floor).max(1)
    }
}

/// Reads a trace once (addresses only) and calls `each` on every chunk of accesses.
pub fn first_pass(
    path: &Path,
    mut each: impl FnMut(&tdmap_trace::AccessChunk) -> Result<(), RunError>,
) -> Result<Profile, RunError> {
    let mut reader = Reader::open(path)?;
    reader.set_addresses_only(true);
    let threads = reader.header().threads as usize;
    let mut accesses = vec![0u64; threads];
    let mut faults = 0u64;
    while let Some(chunk) = reader.next_chunk()? {
        if let Chunk::Faults(f) = chunk {
            faults += f.addrs.len() as u64;
            continue;
        }
        if let Chunk::Accesses(c) = chunk {
            let Some(n) = accesses.get_mut(c.thread as usize) else {
                return Err(SimError::ThreadOutOfRange {
                    thread: c.thread,
                    threads,
                }
                .into());
            };
            *n += c.addrs.len() as u64;
            each(c)?;
        }
    }
    Ok(Profile {
        threads,
        accesses,
        ending: reader.ending(),
        data_bytes: faults.saturating_mul(reader.header().page_size as u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdmap_trace::{Access, Header, TraceStatus, Writer};

    /// Three threads whose frames arrive out of time order, one of them late.
    fn trace(path: &Path) {
        let mut h = Header::new(vec!["test".into()], "test");
        h.threads = 3;
        let w = Writer::create(path, h).unwrap();
        let acc = |thread: u32, i: u64, step: u64| Access {
            thread,
            addr: ((thread as u64) << 20) | (i * 8),
            size: 8,
            write: i.is_multiple_of(3),
            time: i * step + thread as u64,
        };
        for (t, step, n) in [(2u32, 5u64, 900u64), (0, 3, 2000), (1, 7, 700), (0, 3, 300)] {
            let start = if t == 0 && n == 300 { 2000 } else { 0 };
            let frame: Vec<Access> = (start..start + n).map(|i| acc(t, i, step)).collect();
            w.append_accesses(t, &frame).unwrap();
        }
        w.finish(TraceStatus::Complete).unwrap();
    }

    /// Chunks of any size give the accesses in the iterator's order, one by one.
    #[test]
    fn fill_gives_the_iterators_order_in_any_chunk_size() {
        let dir = std::env::temp_dir().join(format!("tdmap-sim-fill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.trace");
        trace(&path);
        let one_by_one: Vec<SimAccess> = TraceInput::open(&path)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(one_by_one.len(), 3900);
        for max in [1, 7, 1000, 5000] {
            let mut input = TraceInput::open(&path).unwrap();
            let mut all = Vec::new();
            loop {
                let before = all.len();
                input.fill(&mut all, max).unwrap();
                let got = all.len() - before;
                assert!(got <= max);
                if got < max {
                    break;
                }
            }
            assert_eq!(all, one_by_one, "chunks of {max}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The first pass takes the program's data as the pages its faults first touched.
    #[test]
    fn the_first_pass_sizes_the_data_by_the_first_touches() {
        let dir = std::env::temp_dir().join(format!("tdmap-sim-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.trace");
        let mut h = Header::new(vec!["test".into()], "test");
        h.threads = 2;
        let w = Writer::create(&path, h).unwrap();
        for t in 0..2u32 {
            let faults: Vec<tdmap_trace::Fault> = (0..5 + t as u64)
                .map(|p| tdmap_trace::Fault {
                    thread: t,
                    addr: ((t as u64) << 30) | (p << 12),
                    cpu: 0,
                    node: 0,
                    time: p,
                })
                .collect();
            w.append_faults(t, &faults).unwrap();
        }
        w.finish(TraceStatus::Complete).unwrap();
        let profile = first_pass(&path, |_| Ok(())).unwrap();
        assert_eq!(profile.data_bytes, 11 * 4096);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
