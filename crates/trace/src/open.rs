//! Access frames kept open per thread, for a caller that hands over each thread's
//! accesses a batch at a time (`tdmap trace` converts the runtime's chunks of 8,192
//! records): a thread's consecutive batches go into one frame of up to
//! [`FRAME_ACCESSES`] accesses, encoded as they come, instead of one small frame each.
//! Why: zstd builds its tables, and the writer wakes a worker, once per frame; on
//! 8,192-access frames both were a sixth of the tracer's time. What a trace says does not
//! change: each thread's events, in its order, are the same whatever the frame sizes.

use crate::error::Result;
use crate::symbols::Symbols;
use crate::types::Fault;
use crate::workers::Batch;
use crate::writer::Writer;
use tdmap_wire::predict::{Predictor, Symbol};
use tdmap_wire::times::BlockTime;

/// Most accesses in one frame built here: 8 runtime chunks. Larger frames would save the
/// few literals a frame's predictor pays to restart, but a reader holds a frame's
/// accesses whole (18 bytes each in an `AccessChunk`): this bounds its memory.
pub const FRAME_ACCESSES: usize = 1 << 16;
/// Most frames open at once: opening one more sends the oldest, so that a program of
/// many threads holds at most this many frames (a few bytes per predicted access, 2 to 13
/// per literal) in memory.
const MAX_OPEN: usize = 32;

/// A thread's open frame: its columns and collapsed reads so far.
struct Open {
    thread: u32,
    cols: Box<Symbols>,
    repeats: Vec<(u32, u32)>,
}

/// The open frames of a trace being written, by thread, oldest first.
#[derive(Default)]
pub struct OpenFrames {
    open: Vec<Open>,
}

/// One thread's open frame, to push accesses into.
pub struct Frame<'a> {
    cols: &'a mut Symbols,
    repeats: &'a mut Vec<(u32, u32)>,
}

impl OpenFrames {
    /// The open frame of `thread`, to push up to `k` more accesses into; sends the one
    /// open before if `k` more would pass [`FRAME_ACCESSES`].
    pub fn frame(&mut self, w: &Writer, thread: u32, k: usize) -> Result<Frame<'_>> {
        let mut at = self.open.iter().position(|o| o.thread == thread);
        if let Some(i) = at.filter(|&i| self.open[i].cols.len() + k > FRAME_ACCESSES) {
            send(w, self.open.remove(i))?;
            at = None;
        }
        let i = match at {
            Some(i) => i,
            None => {
                if self.open.len() >= MAX_OPEN {
                    send(w, self.open.remove(0))?;
                }
                let cols = w.pool.take();
                let repeats = Vec::new();
                self.open.push(Open {
                    thread,
                    cols,
                    repeats,
                });
                self.open.len() - 1
            }
        };
        let o = &mut self.open[i];
        Ok(Frame {
            cols: &mut o.cols,
            repeats: &mut o.repeats,
        })
    }

    /// Sends `thread`'s open frame, if any: what it appends next goes after it.
    pub fn close(&mut self, w: &Writer, thread: u32) -> Result<()> {
        match self.open.iter().position(|o| o.thread == thread) {
            Some(i) => send(w, self.open.remove(i)),
            None => Ok(()),
        }
    }

    /// Sends `thread`'s open frame, then its page-fault samples `faults`.
    pub fn faults(&mut self, w: &Writer, thread: u32, faults: &[Fault]) -> Result<()> {
        self.close(w, thread)?;
        w.append_faults(thread, faults)
    }

    /// Sends every open frame, oldest first (before the trace is finished).
    pub fn close_all(&mut self, w: &Writer) -> Result<()> {
        self.open.drain(..).try_for_each(|o| send(w, o))
    }
}

/// Sends one frame, with its collapsed reads.
fn send(w: &Writer, o: Open) -> Result<()> {
    w.send_frame(o.thread, Batch::Accesses(o.cols, o.repeats))
}

impl Frame<'_> {
    /// Accesses in the frame so far.
    pub fn len(&self) -> usize {
        self.cols.len()
    }

    /// True when the frame holds no access yet.
    pub fn is_empty(&self) -> bool {
        self.cols.is_empty()
    }

    /// Appends one access of the frame's thread at `time`, in time order (accesses
    /// whose times step by one amount share a time block).
    pub fn push(&mut self, addr: u64, size: u8, write: bool, time: u64) {
        self.cols.push(addr, size, write, time);
    }

    /// Appends one access of the frame's thread, its time given by [`Frame::times`]:
    /// the conversion's hot path, one predictor step per access.
    #[inline(always)]
    pub fn access(&mut self, addr: u64, size: u8, write: bool) {
        self.cols.access(addr, size, write);
    }

    /// Gives the frame's next `n` accesses (appended by [`Frame::access`] before or
    /// after) the times stepping from `start`, as the runtime's clock ticks spread them
    /// (`tdmap_wire::times`). Every access must get a time before the frame is sent.
    pub fn times(&mut self, n: usize, start: BlockTime) {
        self.cols.times(n, start);
    }

    /// Appends symbols a predictor already made from the thread's accesses, standing for
    /// `accesses` of them, with no per-access work: the runtime's own symbols (issue 17
    /// item 2, stage 2). For a new frame, `start` is where the predictor starts:
    /// `Some(state)` before the first symbol (stored unless initial: the frame decodes
    /// alone), or `None` to go on from where the thread's previous accesses frame ended
    /// (a predictor that runs on across frames and the faults frames between them).
    /// Their times come from [`Frame::times`]. A frame takes either symbols or accesses.
    pub fn symbols(
        &mut self,
        start: Option<&Predictor>,
        syms: &[Symbol],
        accesses: usize,
    ) -> Result<()> {
        self.cols.symbols(start, syms, accesses)
    }

    /// Puts the reader's predictor back to its initial state before what comes next
    /// (a reset symbol, V6): for symbols of a predictor that restarted (the runtime's,
    /// at every chunk). Nothing on a frame still empty, which starts there.
    pub fn reset(&mut self) {
        self.cols.reset();
    }

    /// Marks access `i` of the frame, a read, as a run of reads of its line with `extra`
    /// more reads collapsed into it (V4 repeats frames). False, and nothing marked, when
    /// `i` does not follow the last marked access or `extra` is 0; whether access `i` is
    /// a read is the caller's to know (`tdmap trace-check` checks it in the trace).
    pub fn repeat(&mut self, i: u32, extra: u32) -> bool {
        let after = self.repeats.last().is_none_or(|r| r.0 < i);
        let ok = after && extra > 0 && (i as usize) < self.cols.len();
        if ok {
            self.repeats.push((i, extra));
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Access, Chunk, Header, Reader, TraceStatus};

    /// One event as read back: accesses as (0, addr, time, extra reads), faults as (1,
    /// addr, time, 0).
    type Ev = (u8, u64, u64, u32);

    /// Reads a trace back: each thread's events in its order; and the number of access
    /// frames.
    fn read_back(p: &std::path::Path) -> (Vec<Vec<Ev>>, usize) {
        let mut r = Reader::open(p).unwrap();
        let (mut ev, mut frames) = (vec![Vec::new(); 2], 0);
        while let Some(c) = r.next_chunk().unwrap() {
            match c {
                Chunk::Accesses(c) => {
                    frames += 1;
                    for i in 0..c.addrs.len() {
                        let extra = c.repeats.iter().find(|r| r.0 as usize == i);
                        let extra = extra.map_or(0, |r| r.1);
                        ev[c.thread as usize].push((0, c.addrs[i], c.times[i], extra));
                    }
                }
                Chunk::Faults(f) => {
                    let t = f.thread as usize;
                    let at = f.addrs.iter().zip(&f.times);
                    ev[t].extend(at.map(|(&a, &time)| (1, a, time, 0)));
                }
            }
        }
        assert!(r.ending().unwrap().complete());
        (ev, frames)
    }

    /// A thread's batches share frames of up to FRAME_ACCESSES accesses; its faults end
    /// the frame before them, so that they stay between the accesses they came between;
    /// collapsed reads keep their accesses, by index in whichever frame they land.
    #[test]
    fn batches_share_frames_and_faults_stay_in_place() {
        let p = std::env::temp_dir().join(format!("tdmap-open-{}", std::process::id()));
        let w = Writer::create(&p, Header::new(vec!["t".into()], "m")).unwrap();
        let mut frames = OpenFrames::default();
        let mut want = vec![Vec::new(); 2];
        let batch = 8000u64;
        // Thread 0: 20 batches, a fault after the 10th; thread 1: 3 batches between them.
        for b in 0..20u64 {
            for t in [0u32, 1] {
                if t == 1 && b % 7 != 0 {
                    continue;
                }
                let mine = &mut want[t as usize];
                let mut f = frames.frame(&w, t, batch as usize).unwrap();
                let at = f.len() as u32;
                for i in 0..batch {
                    let n = b * batch + i;
                    f.push(0x1000 + n * 8 + t as u64, 8, false, n);
                    mine.push((0, 0x1000 + n * 8 + t as u64, n, 0));
                }
                // The 5th access of every batch stands for 3 more reads.
                assert!(f.repeat(at + 5, 3));
                let len = mine.len();
                mine[len - batch as usize + 5].3 = 3;
                if t == 0 && b == 9 {
                    let time = b * batch + batch - 1;
                    let (addr, cpu, node) = (0x5000, 1, 0);
                    let fault = Fault {
                        thread: 0,
                        addr,
                        cpu,
                        node,
                        time,
                    };
                    frames.faults(&w, 0, &[fault]).unwrap();
                    mine.push((1, addr, time, 0));
                }
            }
        }
        frames.close_all(&w).unwrap();
        w.finish(TraceStatus::Complete).unwrap();
        let (ev, n) = read_back(&p);
        let _ = std::fs::remove_file(&p);
        assert_eq!(ev, want);
        // Thread 0: 10 batches (80,000 accesses) before the fault make 2 frames, 10 after
        // make 2; thread 1's 3 batches one frame. One frame per batch would be 23.
        assert_eq!(n, 5);
    }

    #[test]
    fn a_collapsed_read_must_follow_the_last_and_name_an_access() {
        let p = std::env::temp_dir().join(format!("tdmap-open-rep-{}", std::process::id()));
        let w = Writer::create(&p, Header::new(vec![], "m")).unwrap();
        let mut frames = OpenFrames::default();
        let mut f = frames.frame(&w, 0, 4).unwrap();
        let a = Access {
            thread: 0,
            addr: 64,
            size: 8,
            write: false,
            time: 1,
        };
        (0..4).for_each(|_| f.push(a.addr, a.size, a.write, a.time));
        assert!(f.repeat(1, 2));
        assert!(!f.repeat(1, 2), "not after the last");
        assert!(!f.repeat(2, 0), "no extra read");
        assert!(!f.repeat(4, 1), "past the accesses");
        assert!(f.repeat(3, 1));
        drop(w);
        let _ = std::fs::remove_file(&p);
    }
}
