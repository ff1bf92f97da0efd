//! Decoding the runtime's raw chunks (`tdmap_wire::raw`) into trace events: accesses,
//! first-touch faults with the node of the CPU they ran on, and collapsed reads.
//!
//! In two passes, so that no array of accesses is built: [`Decoder::side`] finds a
//! chunk's faults and collapsed reads (the rare words; a chunk of plain records only is
//! told by one OR over its words), then [`Decoder::push`] encodes its accesses into the
//! trace's frame as it decodes them ([`Decoder::counted`] hands them to the model, with the
//! count words of a chunk the runtime aggregated). A predicted chunk (wire version 7)
//! takes its own path (`decode/predicted.rs`), its runs handed to the trace as they are.

mod predicted;

use super::raw::{self, wire, RawChunk};
use std::ops::Range;
use tdmap_trace::{Fault, Frame};
use tdmap_wire::times::Block;
use wire::{At, Word};

/// Turns raw chunks into trace events.
pub(super) struct Decoder {
    page_mask: u64,
    /// NUMA node (logical index) of each OS CPU number, from this machine's topology.
    cpu_node: Vec<u32>,
    /// Word positions of the chunk's CPU and repeat words (scratch of `side`).
    sides: Vec<u32>,
    /// The words of the predicted chunk `side` last read, with where each falls.
    items: Vec<(At, Word)>,
    /// That chunk's clock blocks.
    blocks: Vec<Block>,
}

/// Where a chunk's faults go: after its first first-touch access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Split {
    /// Accesses before the faults (all of them when there is none).
    pub(super) accesses: usize,
    /// Words that hold those accesses (with the side words among them).
    pub(super) words: usize,
    /// Accesses in the chunk.
    pub(super) total: usize,
}

impl Decoder {
    /// The same decoder with `cpu_node[c]` the node of CPU c: another machine's.
    #[cfg(test)]
    pub(super) fn with_cpu_nodes(self, cpu_node: Vec<u32>) -> Decoder {
        Decoder { cpu_node, ..self }
    }

    pub(super) fn new(page_size: u64) -> Decoder {
        let cpu_node = match tdmap_topo::MachineSpec::parse("").load(None) {
            Ok(topo) => {
                let n = topo.pus.iter().map(|p| p.os + 1).max().unwrap_or(0);
                let mut map = vec![0; n];
                topo.pus.iter().for_each(|p| map[p.os] = p.node as u32);
                map
            }
            Err(e) => {
                eprintln!("tdmap: cannot read this machine's topology ({e}); first touches are put on node 0");
                Vec::new()
            }
        };
        Decoder {
            page_mask: !(page_size.max(1) - 1),
            cpu_node,
            sides: Vec::new(),
            items: Vec::new(),
            blocks: Vec::new(),
        }
    }

    /// True when `c` holds access records only, none a first touch (`wire::is_plain`):
    /// then it has no fault or collapsed read, and [`Decoder::side`] returns at once.
    pub(super) fn is_plain(c: &RawChunk) -> bool {
        // One OR over the words (vectorised), not a test per word.
        wire::is_plain(c.records.iter().fold(0, |a, &w| a | w))
    }

    /// Pushes the accesses among words `words` of a chunk into `f`, in order, each
    /// address through `key`: every record but the CPU and repeat words, each at its
    /// word's time (the clock ticks spread over the words, `raw::blocks`). The frame
    /// predicts each access (one step, no encoding: trace V6) and takes the times as
    /// the blocks themselves, a block cut where a side word takes a time of its own.
    pub(super) fn push(
        c: &RawChunk,
        words: Range<usize>,
        f: &mut Frame,
        key: impl Fn(u64) -> u64 + Copy,
    ) {
        for b in raw::blocks(&c.ticks, c.t1, c.records.len()) {
            let (lo, hi) = (b.first.max(words.start), (b.first + b.len).min(words.end));
            if lo >= hi {
                continue;
            }
            let mut time = b.start();
            (b.first..lo).for_each(|_| {
                time.step();
            });
            // The accesses since the last side word, and the time of the first of them.
            let (mut start, mut run) = (time, 0);
            for &w in &c.records[lo..hi] {
                if wire::is_side_word(w) {
                    f.times(run, start);
                    time = start;
                    (0..=run).for_each(|_| {
                        time.step();
                    });
                    (start, run) = (time, 0);
                    continue;
                }
                let r = wire::unpack(w);
                f.access(key(r.addr), r.size, r.write);
                run += 1;
            }
            f.times(run, start);
        }
    }

    /// The addresses of a chunk's accesses and how many accesses each record stands for
    /// (its count word, else 1), in order: all the sharing model needs of a chunk the
    /// runtime aggregated (`tdmap_wire::raw::ENV_AGGREGATE`), one entry per record, so
    /// [`Split::accesses`] still cuts them at the first first touch.
    pub(super) fn counted(c: &RawChunk, addrs: &mut Vec<u64>, counts: &mut Vec<u32>) {
        addrs.clear();
        counts.clear();
        let mut after_record = false;
        for &w in &c.records {
            if let Some(n) = wire::unpack_count(w) {
                // A count word counts the record right before it only.
                if let (true, Some(last)) = (after_record, counts.last_mut()) {
                    *last = n;
                }
                after_record = false;
            } else {
                after_record = !wire::is_side_word(w);
                if after_record {
                    addrs.push(wire::unpack(w).addr);
                    counts.push(1);
                }
            }
        }
    }

    /// The fault of a first-touch record of `thread` at `addr` on OS CPU `cpu`
    /// (`u32::MAX` when unknown), at time 0: a counted chunk's first touch.
    pub(super) fn fault(&self, thread: u32, addr: u64, cpu: u32) -> Fault {
        first_touch(self.page_mask, &self.cpu_node, thread, addr, cpu)
    }

    /// Finds a chunk's first-touch faults and collapsed reads; returns how many of its
    /// accesses go before the faults, how many words hold them, and how many accesses
    /// it has. Every fault takes the
    /// time of the chunk's first first-touch access and is written right after it, so
    /// each thread's timeline stays ordered and a trace starts with accesses. That time
    /// is still before any other thread's access to the page, since an earlier one would
    /// have made that thread the first. A fault's CPU is where the thread ran at the
    /// first touch, its node that CPU's: where first-touch placement puts the page.
    /// `repeats` gets, for each record that collapsed repeated reads, its access index
    /// and the extra reads. Words are positions (version-6 words) in a predicted chunk.
    pub(super) fn side(
        &mut self,
        c: &RawChunk,
        faults: &mut Vec<Fault>,
        repeats: &mut Vec<(u32, u32)>,
    ) -> Split {
        if let Some(positions) = c.predicted {
            return self.side_predicted(c, positions, faults, repeats);
        }
        faults.clear();
        repeats.clear();
        let words = &c.records;
        let n = words.len();
        if Decoder::is_plain(c) {
            return Split {
                accesses: n,
                words: n,
                total: n,
            };
        }
        let sides = &mut self.sides;
        sides.clear();
        // The access index of word `q`: its position less the side words before it.
        let index = |sides: &[u32], q: usize| q - sides.partition_point(|&s| (s as usize) < q);
        let mut first = None;
        for (i, &w) in words.iter().enumerate() {
            if wire::is_plain(w) {
                continue;
            }
            if wire::is_side_word(w) {
                // A repeat word names an earlier read record of the chunk by position.
                if let Some((at, n)) = wire::unpack_repeat(w) {
                    let at = at as usize;
                    let read = at < i
                        && words
                            .get(at)
                            .is_some_and(|&r| !wire::is_side_word(r) && !wire::unpack(r).write);
                    if read {
                        repeats.push((index(sides, at) as u32, n));
                    }
                }
                sides.push(i as u32);
                continue;
            }
            let r = wire::unpack(w);
            // A crash can cut the CPU word off: then the CPU is unknown (u32::MAX).
            let cpu = words
                .get(i + 1)
                .and_then(|&n| wire::unpack_cpu(n))
                .unwrap_or(u32::MAX);
            first.get_or_insert(i);
            faults.push(first_touch(
                self.page_mask,
                &self.cpu_node,
                c.thread,
                r.addr,
                cpu,
            ));
        }
        if let Some(first) = first {
            let time = raw::times(&c.ticks, c.t1, words.len())
                .nth(first)
                .unwrap_or(0);
            faults.iter_mut().for_each(|f| f.time = time);
        }
        repeats.sort_unstable();
        repeats.dedup_by_key(|r| r.0);
        let total = n - sides.len();
        Split {
            accesses: first.map_or(total, |i| index(sides, i) + 1),
            words: first.map_or(n, |i| i + 1),
            total,
        }
    }
}

/// The fault of a first-touch record of `thread` at `addr`, on OS CPU `cpu` (`u32::MAX`
/// when a crash cut its CPU word off), at time 0: the caller gives every fault of a chunk
/// its first fault's time. Pages by `page_mask`, nodes by `cpu_node` (the [`Decoder`]'s,
/// passed as fields so that its scratch vectors can stay borrowed).
fn first_touch(page_mask: u64, cpu_node: &[u32], thread: u32, addr: u64, cpu: u32) -> Fault {
    Fault {
        thread,
        addr: addr & page_mask,
        cpu,
        node: cpu_node.get(cpu as usize).copied().unwrap_or(0),
        time: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdmap_trace::{Chunk, Header, OpenFrames, Reader, TraceStatus, Writer};

    /// A chunk of 1,300 words over three clock ticks: reads and writes, a first touch
    /// (with its CPU word) at word 700 and another at 1,100, a repeat word at 900 naming
    /// the read at word 801, and one naming a write (ignored).
    fn chunk() -> RawChunk {
        let mut records: Vec<u64> = (0..1300u64)
            .map(|i| wire::pack(0x10_0000 + 8 * i, 3, i % 5 == 0, false))
            .collect();
        records[700] = wire::pack(0x20_0010, 2, false, true);
        records[701] = wire::pack_cpu(1);
        records[900] = wire::pack_repeat(801, 40);
        records[950] = wire::pack_repeat(600, 7);
        records[1100] = wire::pack(0x30_0000, 3, true, true);
        records[1101] = wire::pack_cpu(0);
        let mut ticks = vec![0; wire::TICKS];
        ticks[..3].copy_from_slice(&[1_000, 5_000, 5_100]);
        RawChunk {
            thread: 0,
            ticks,
            t1: 9_000,
            records,
            predicted: None,
        }
    }

    /// What a chunk says, word by word (the reference): accesses (addr, size, write,
    /// time) by word position, side words left out.
    fn reference(c: &RawChunk) -> Vec<(usize, (u64, u8, bool, u64))> {
        let n = c.records.len();
        (0..n)
            .filter(|&i| !wire::is_side_word(c.records[i]))
            .map(|i| {
                let r = wire::unpack(c.records[i]);
                (
                    i,
                    (r.addr, r.size, r.write, raw::time_of(&c.ticks, c.t1, i, n)),
                )
            })
            .collect()
    }

    /// The faults go after the first first-touch access, at its time; the repeat word
    /// names its read by access index (side words before it not counted); the accesses
    /// pushed in two word ranges around the faults are the chunk's, at their times.
    #[test]
    fn a_chunk_with_first_touches_and_repeats_decodes_in_two_passes() {
        let c = chunk();
        let want = reference(&c);
        let mut dec = Decoder::new(4096);
        let (mut faults, mut repeats) = (Vec::new(), Vec::new());
        let split = dec.side(&c, &mut faults, &mut repeats);
        let first = want.iter().position(|a| a.0 == 700).unwrap();
        assert_eq!(
            split,
            Split {
                accesses: first + 1,
                words: 701,
                total: 1300 - 4,
            }
        );
        let t700 = want[first].1 .3;
        let got: Vec<_> = faults.iter().map(|f| (f.addr, f.cpu, f.time)).collect();
        assert_eq!(got, [(0x20_0000, 1, t700), (0x30_0000, 0, t700)]);
        // Word 801 is access 800 (after the CPU word at 701); word 600 is a write.
        assert!(wire::unpack(c.records[600]).write);
        assert_eq!(repeats, [(800, 40)]);

        let p = std::env::temp_dir().join(format!("tdmap-decode-{}", std::process::id()));
        let w = Writer::create(&p, Header::new(vec![], "m")).unwrap();
        let mut frames = OpenFrames::default();
        for words in [0..split.words, split.words..c.records.len()] {
            let mut f = frames.frame(&w, 0, words.len()).unwrap();
            Decoder::push(&c, words, &mut f, |a| a);
            frames.close(&w, 0).unwrap();
        }
        w.finish(TraceStatus::Complete).unwrap();
        let mut r = Reader::open(&p).unwrap();
        let mut got = Vec::new();
        while let Some(Chunk::Accesses(a)) = r.next_chunk().unwrap() {
            got.push(a.addrs.len());
            for i in 0..a.addrs.len() {
                let k = got.iter().sum::<usize>() - a.addrs.len() + i;
                assert_eq!((a.addrs[i], a.sizes[i], a.writes[i], a.times[i]), want[k].1);
            }
        }
        let _ = std::fs::remove_file(&p);
        assert_eq!(got, [split.accesses, split.total - split.accesses]);
    }

    /// A count word weighs the record right before it; a first touch's CPU word and a
    /// stray count word (after a CPU word) leave the counts alone, and the split at the
    /// first first touch cuts the counted records where it cuts the accesses.
    #[test]
    fn counted_records_take_their_count_words() {
        let rec = |a: u64, first: bool| wire::pack(a, 3, false, first);
        let records = vec![
            rec(0x1000, false),
            wire::pack_count(7),
            rec(0x2040, false),
            rec(0x3000, true),
            wire::pack_cpu(1),
            wire::pack_count(9),
            rec(0x3040, false),
            wire::pack_count(2),
        ];
        let c = RawChunk {
            thread: 0,
            ticks: vec![0; wire::TICKS],
            t1: 0,
            records,
            predicted: None,
        };
        let (mut addrs, mut counts) = (Vec::new(), Vec::new());
        Decoder::counted(&c, &mut addrs, &mut counts);
        assert_eq!(addrs, [0x1000, 0x2040, 0x3000, 0x3040]);
        assert_eq!(counts, [7, 1, 1, 2]);
        let split = Decoder::new(4096).side(&c, &mut Vec::new(), &mut Vec::new());
        assert_eq!((split.accesses, split.total), (3, 4));
    }

    #[test]
    fn a_chunk_of_plain_records_has_nothing_aside() {
        let mut c = chunk();
        c.records.truncate(600);
        assert!(Decoder::is_plain(&c));
        let (mut faults, mut repeats) = (Vec::new(), Vec::new());
        let split = Decoder::new(4096).side(&c, &mut faults, &mut repeats);
        assert_eq!((split.accesses, split.words, split.total), (600, 600, 600));
        assert!(faults.is_empty() && repeats.is_empty());
        c.records[599] = wire::pack_repeat(3, 1);
        assert!(!Decoder::is_plain(&c));
    }
}
