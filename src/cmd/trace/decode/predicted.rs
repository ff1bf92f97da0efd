//! Decoding a predicted chunk (wire version 7: the runtime's run words and missed
//! records) straight into trace format 6, whose accesses frames hold the same stride
//! predictor's symbols: a run word becomes a run, a record a literal, the runtime's
//! restart at every chunk a reset. Faults, collapsed reads and time blocks are found
//! from the chunk's words and positions, never from its accesses one by one, so a run
//! of foreseen accesses costs the same whatever its length. What it gives is what
//! expanding the chunk (`tdmap_wire::raw::expand`) then decoding it word by word
//! (`Decoder::side`, `Decoder::push`) gives: the tests check one against the other.

use super::super::raw::{self, wire, RawChunk};
use super::{first_touch, Decoder, Split};
use std::ops::Range;
use tdmap_trace::{Fault, Frame, TraceError};
use tdmap_wire::predict::{Predictor, Symbol};
use wire::{At, Word, TICK_EVERY};

impl Decoder {
    /// [`Decoder::side`] of a predicted chunk of `positions` version-6 words: its
    /// words (with where each falls) and clock blocks are kept for
    /// [`Decoder::push_predicted`].
    pub(super) fn side_predicted(
        &mut self,
        c: &RawChunk,
        positions: u64,
        faults: &mut Vec<Fault>,
        repeats: &mut Vec<(u32, u32)>,
    ) -> Split {
        faults.clear();
        repeats.clear();
        let items = &mut self.items;
        items.clear();
        // The reader checked the words (`RawReader`): a damaged chunk never gets here.
        let _ = wire::walk(&c.records, positions, |at, w| items.push((at, w)));
        self.blocks.clear();
        let n = positions as usize;
        self.blocks.extend(raw::blocks(&c.ticks, c.t1, n));
        let (mut first, mut sides): (Option<At>, usize) = (None, 0);
        for (i, &(at, w)) in items.iter().enumerate() {
            match w {
                Word::Run(_) => {}
                Word::Record(r) if wire::is_plain(r) => {}
                Word::Record(r) => {
                    // A crash can cut the CPU word off: then the CPU is unknown.
                    let cpu = match items.get(i + 1) {
                        Some(&(_, Word::Cpu(w))) => wire::unpack_cpu(w).unwrap_or(u32::MAX),
                        _ => u32::MAX,
                    };
                    first.get_or_insert(at);
                    faults.push(first_touch(
                        self.page_mask,
                        &self.cpu_node,
                        c.thread,
                        wire::unpack(r).addr,
                        cpu,
                    ));
                }
                Word::Cpu(_) => sides += 1,
                Word::Repeat(a, extra) => {
                    sides += 1;
                    if names_a_read(items, a as usize) {
                        repeats.push((a, extra));
                    }
                }
            }
        }
        if let Some(f) = first {
            let time = self.time_at(f.pos).step();
            faults.iter_mut().for_each(|x| x.time = time);
        }
        repeats.sort_unstable();
        repeats.dedup_by_key(|r| r.0);
        let total = n - sides;
        Split {
            accesses: first.map_or(total, |f| f.access + 1),
            words: first.map_or(n, |f| f.pos + 1),
            total,
        }
    }

    /// [`Decoder::push`] of the predicted chunk [`Decoder::side_predicted`] last read:
    /// the accesses among positions `words` into `f` as the runtime's symbols, and their
    /// times as blocks cut where a side word or a clock tick falls. `after_split`: the
    /// positions after the chunk's first fault, which go on from the predictor's state
    /// there, so `f` must be a new frame (the faults frame closed the one before), which
    /// then continues its thread's previous frame; else the chunk's predictor starts
    /// afresh (a reset unless `f` is empty).
    pub(in super::super) fn push_predicted(
        &self,
        words: Range<usize>,
        f: &mut Frame,
        after_split: bool,
    ) -> tdmap_trace::Result<()> {
        let lo = self.items.partition_point(|(at, _)| at.pos < words.start);
        let hi = self.items.partition_point(|(at, _)| at.pos < words.end);
        let items = &self.items[lo..hi];
        let mut syms: Vec<Symbol> = Vec::with_capacity(items.len());
        let mut accesses = 0;
        let mut stretch = Stretch::default();
        for &(at, w) in items {
            match w {
                Word::Run(n) => {
                    syms.push(Symbol::Run(n as u64));
                    stretch.accesses(at.pos, n as usize, f, self);
                    accesses += n as usize;
                }
                Word::Record(r) => {
                    syms.push(wire::literal(r));
                    stretch.accesses(at.pos, 1, f, self);
                    accesses += 1;
                }
                Word::Cpu(_) | Word::Repeat(..) => stretch.flush(f, self),
            }
        }
        stretch.flush(f, self);
        if after_split {
            if !f.is_empty() {
                return Err(TraceError::Invalid(
                    "the rest of a predicted chunk after its faults in an open frame".into(),
                ));
            }
            return f.symbols(None, &syms, accesses);
        }
        f.reset();
        f.symbols(Some(&Predictor::new()), &syms, accesses)
    }

    /// The clock state of position `pos` of the chunk last read: its block's start,
    /// stepped on to it.
    fn time_at(&self, pos: usize) -> tdmap_wire::times::BlockTime {
        let b = &self.blocks[pos / TICK_EVERY];
        b.start().skip((pos - b.first) as u64)
    }
}

/// True when access `a` of the chunk is a read, or a foreseen access (within a run: the
/// runtime collapses reads only, and its meta is the predictor's to tell).
fn names_a_read(items: &[(At, Word)], a: usize) -> bool {
    let k = items.partition_point(|(at, _)| at.access < a);
    for &(at, w) in &items[k..] {
        match w {
            _ if at.access != a => break,
            Word::Record(r) => return !wire::unpack(r).write,
            Word::Run(_) => return true,
            Word::Cpu(_) | Word::Repeat(..) => {}
        }
    }
    // Within a run that started before it.
    true
}

/// Accesses at consecutive positions not yet given times: one time block once a side
/// word or a clock tick ends them.
#[derive(Default)]
struct Stretch {
    start: usize,
    len: usize,
}

impl Stretch {
    /// `n` accesses at positions `pos..`: a block at every clock tick they cross.
    fn accesses(&mut self, mut pos: usize, mut n: usize, f: &mut Frame, d: &Decoder) {
        while n > 0 {
            let end = (pos / TICK_EVERY + 1) * TICK_EVERY;
            let take = n.min(end - pos);
            if self.len == 0 {
                self.start = pos;
            }
            self.len += take;
            (pos, n) = (pos + take, n - take);
            if pos == end {
                self.flush(f, d);
            }
        }
    }

    /// Gives the stretch's accesses their block.
    fn flush(&mut self, f: &mut Frame, d: &Decoder) {
        if self.len > 0 {
            f.times(self.len, d.time_at(self.start));
            self.len = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::convert::Conv;
    use super::super::super::raw::RawEvent;
    use super::*;
    use proptest::prelude::*;
    use tdmap_trace::{Chunk, Header, ProcessInfo, Reader, TraceStatus, Writer};
    use tdmap_wire::predict::Encoder;

    /// One access of a generated chunk: address, log2 size, write, first touch, extra
    /// reads collapsed into it.
    type Acc = (u64, u32, bool, bool, u32);

    /// The words a recording thread writes for `acc` (wire version 7, its predictor
    /// restarted), and the positions they stand for: a first touch always a record with
    /// its CPU word after it, a repeat word right after the read it names.
    fn predicted(acc: &[Acc]) -> (Vec<u64>, u64) {
        let (mut words, mut positions) = (Vec::new(), 0u64);
        let mut enc = Encoder::default();
        for (i, &(addr, size, write, first, extra)) in acc.iter().enumerate() {
            let m = wire::meta(size, write);
            enc.push(addr, m, first, |s| match s {
                Symbol::Run(n) => words.push(wire::pack_run(n as u32)),
                Symbol::Literal(a, _) => words.push(wire::pack(a, size, write, first)),
            });
            positions += 1;
            if first {
                words.push(wire::pack_cpu(i as u32 % 3));
                positions += 1;
            }
            if extra > 0 {
                enc.finish(|s| {
                    if let Symbol::Run(n) = s {
                        words.push(wire::pack_run(n as u32))
                    }
                });
                words.push(wire::pack_repeat(i as u32, extra));
                positions += 1;
            }
        }
        enc.finish(|s| {
            if let Symbol::Run(n) = s {
                words.push(wire::pack_run(n as u32))
            }
        });
        (words, positions)
    }

    /// Accesses: strided arrays in turn (a loop the predictor learns) with random ones
    /// among them, first touches and collapsed reads here and there.
    fn accesses() -> impl Strategy<Value = Vec<Acc>> {
        (
            1u64..6,
            prop::collection::vec(
                (any::<u16>(), 0u32..4, any::<bool>(), 0u8..40, 0u8..30),
                1..2500,
            ),
        )
            .prop_map(|(body, raw)| {
                raw.iter()
                    .enumerate()
                    .map(|(i, &(r, size, w, first, rep))| {
                        let i = i as u64;
                        let (addr, size, write) = if r % 11 == 0 {
                            (0x7000_0000 + r as u64 * 24, size, w)
                        } else {
                            (
                                (((i % body) + 1) << 32) | ((i / body) * 8),
                                3,
                                i.is_multiple_of(body),
                            )
                        };
                        let extra = if !write && rep == 0 {
                            i as u32 % 9 + 1
                        } else {
                            0
                        };
                        (addr, size, write, first == 0, extra)
                    })
                    .collect()
            })
    }

    /// Every event of a trace, per thread in its order: accesses as (0, addr, size,
    /// write, time, extra reads), faults as (1, addr, cpu, node, time, 0).
    type Ev = (u8, u64, u32, u32, u64, u32);

    fn events(p: &std::path::Path) -> Vec<Vec<Ev>> {
        let mut r = Reader::open(p).unwrap();
        let mut ev = vec![Vec::new(); 2];
        while let Some(c) = r.next_chunk().unwrap() {
            match c {
                Chunk::Accesses(a) => {
                    let mut reps = a.repeats.iter().peekable();
                    for i in 0..a.addrs.len() {
                        let extra = reps.next_if(|r| r.0 as usize == i).map_or(0, |r| r.1);
                        let (s, w) = (a.sizes[i] as u32, a.writes[i] as u32);
                        ev[a.thread as usize].push((0, a.addrs[i], s, w, a.times[i], extra));
                    }
                }
                Chunk::Faults(f) => {
                    for i in 0..f.addrs.len() {
                        let e = (1, f.addrs[i], f.cpus[i], f.nodes[i], f.times[i], 0);
                        ev[f.thread as usize].push(e);
                    }
                }
            }
        }
        assert!(r.ending().unwrap().complete());
        ev
    }

    /// Converts `chunks` (thread, accesses, time since its thread's last chunk, tick step) into a trace at `p`,
    /// each chunk predicted or expanded first; gives its events and whether it checks.
    fn convert(
        p: &std::path::Path,
        chunks: &[(u32, Vec<Acc>, u64, u64)],
        expand: bool,
    ) -> (Vec<Vec<Ev>>, Result<(), String>) {
        let mut h = Header::new(vec![], "m");
        h.threads = 2;
        let w = Writer::create(p, h).unwrap();
        let info = ProcessInfo {
            index: 0,
            pid: 1,
            parent: None,
            first_task: 0,
            tasks: 2,
            status: TraceStatus::Complete,
        };
        let mut conv = Conv::new(4096);
        for id in 0..2 {
            let ev = RawEvent::Thread {
                id,
                os_tid: id as u64,
                time: 0,
            };
            conv.event(ev, &info, None, &w).unwrap();
        }
        let mut last = [0u64; 2];
        for (thread, acc, gap, step) in chunks {
            let t0 = last[*thread as usize] + gap;
            let (records, positions) = predicted(acc);
            let ticks = (0..wire::TICKS as u64).map(|k| t0 + k * step).collect();
            let t1 = t0 + positions.div_ceil(TICK_EVERY as u64) * step + step / 3;
            last[*thread as usize] = t1;
            let mut c = RawChunk {
                thread: *thread,
                ticks,
                t1,
                records,
                predicted: Some(positions),
            };
            if expand {
                c.expand().unwrap();
            }
            conv.event(RawEvent::Accesses(c), &info, None, &w).unwrap();
        }
        conv.flush(&w).unwrap();
        w.finish(TraceStatus::Complete).unwrap();
        let report = tdmap_trace::check(p);
        (
            events(p),
            report
                .ok()
                .then_some(())
                .ok_or(format!("{:?}", report.problems)),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]

        /// Chunks of two threads, their runs taken as symbols, give the trace's events
        /// (accesses with times and collapsed reads, faults with their CPU and time, in
        /// each thread's order) that expanding them and decoding word by word gives:
        /// blocks cut at side words and clock ticks, the split at the first fault, the
        /// repeats by access index, frames of several chunks with a reset between.
        #[test]
        fn predicted_chunks_decode_as_their_expansion_does(
            chunks in prop::collection::vec(
                (0u32..2, accesses(), 0u64..1 << 30, 0u64..5000),
                1..6,
            ),
        ) {
            let dir = std::env::temp_dir();
            let pid = std::process::id();
            let (a, b) = (dir.join(format!("tdmap-pred-{pid}")), dir.join(format!("tdmap-exp-{pid}")));
            let (got, got_ok) = convert(&a, &chunks, false);
            let (want, want_ok) = convert(&b, &chunks, true);
            let _ = (std::fs::remove_file(&a), std::fs::remove_file(&b));
            prop_assert!(want.iter().map(Vec::len).sum::<usize>() > 0);
            prop_assert_eq!(got, want);
            prop_assert_eq!(got_ok, Ok(()));
            prop_assert_eq!(want_ok, Ok(()));
        }
    }
}
