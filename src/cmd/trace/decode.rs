//! Decoding the runtime's raw chunks (`tdmap_wire::raw`) into trace events: accesses,
//! first-touch faults with the node of the CPU they ran on, and collapsed reads.

use super::raw::{self, wire, RawChunk};
use tdmap_trace::{Access, Fault, Frame};

/// Turns raw chunks into trace events.
pub(super) struct Decoder {
    page_mask: u64,
    /// NUMA node (logical index) of each OS CPU number, from this machine's topology.
    cpu_node: Vec<u32>,
}

impl Decoder {
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
        }
    }

    /// True when `c` holds access records only, none a first touch (`wire::is_plain`):
    /// then [`Decoder::plain`] gives the same accesses as [`Decoder::chunk`], and nothing
    /// else.
    pub(super) fn is_plain(c: &RawChunk) -> bool {
        // One OR over the words (vectorised), not a test per word.
        wire::is_plain(c.records.iter().fold(0, |a, &w| a | w))
    }

    /// Pushes the accesses of a chunk that [`Decoder::is_plain`] accepts into `f`, with
    /// the times [`Decoder::chunk`] gives them, and no array of them in between.
    pub(super) fn plain(c: &RawChunk, f: &mut Frame) {
        for b in raw::blocks(&c.ticks, c.t1, c.records.len()) {
            let mut time = b.start();
            let words = c.records[b.first..b.first + b.len].iter();
            f.extend_from(
                b.len,
                words.map(|&w| {
                    let r = wire::unpack(w);
                    (r.addr, r.size, r.write, time.step())
                }),
            );
        }
    }

    /// The addresses of a chunk that [`Decoder::is_plain`] accepts, into `addrs` (cleared
    /// first): all the sharing model needs of it.
    pub(super) fn plain_addrs(c: &RawChunk, addrs: &mut Vec<u64>) {
        addrs.clear();
        addrs.extend(c.records.iter().map(|&w| wire::unpack(w).addr));
    }

    /// Unpacks one chunk into accesses and first-touch faults; returns how many accesses
    /// go before the faults. Every fault takes the time of the chunk's first first-touch
    /// access and is written right after it, so each thread's timeline stays ordered and
    /// a trace starts with accesses. That time is still before any other thread's access
    /// to the page, since an earlier one would have made that thread the first. A fault's
    /// CPU is where the thread ran at the first touch, its node that CPU's: where
    /// first-touch placement puts the page. `repeats` gets, for each record that
    /// collapsed repeated reads, its index in `acc` and the extra reads.
    pub(super) fn chunk(
        &self,
        c: &RawChunk,
        acc: &mut Vec<Access>,
        faults: &mut Vec<Fault>,
        repeats: &mut Vec<(u32, u32)>,
    ) -> usize {
        acc.clear();
        faults.clear();
        repeats.clear();
        let mut split = None;
        let thread = c.thread;
        let times = raw::times(&c.ticks, c.t1, c.records.len());
        // The access each word position holds, for the repeat words.
        let mut acc_at = Vec::with_capacity(c.records.len());
        for (i, (&w, time)) in c.records.iter().zip(times).enumerate() {
            if wire::is_side_word(w) {
                // A repeat word names an earlier read record of the chunk by position.
                if let Some((at, n)) = wire::unpack_repeat(w) {
                    let a = acc_at.get(at as usize).copied().unwrap_or(u32::MAX);
                    if acc.get(a as usize).is_some_and(|x| !x.write) {
                        repeats.push((a, n));
                    }
                }
                acc_at.push(u32::MAX);
                continue;
            }
            acc_at.push(acc.len() as u32);
            let r = wire::unpack(w);
            acc.push(Access {
                thread,
                addr: r.addr,
                size: r.size,
                write: r.write,
                time,
            });
            if r.first_touch {
                // A crash can cut the CPU word off: then the CPU is unknown (u32::MAX).
                let cpu = c
                    .records
                    .get(i + 1)
                    .and_then(|&n| wire::unpack_cpu(n))
                    .unwrap_or(u32::MAX);
                let node = self.cpu_node.get(cpu as usize).copied().unwrap_or(0);
                let addr = r.addr & self.page_mask;
                let time = acc[*split.get_or_insert(acc.len() - 1)].time;
                faults.push(Fault {
                    thread,
                    addr,
                    cpu,
                    node,
                    time,
                });
            }
        }
        repeats.sort_unstable();
        repeats.dedup_by_key(|r| r.0);
        split.map_or(acc.len(), |i| i + 1)
    }
}
