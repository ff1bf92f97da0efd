//! The sharing model: the affinity table plus the two sharing matrices of the trace
//! paper (§III-B), fed event by event or a whole trace chunk at a time.

use crate::error::SharingError;
use crate::matrix::SharingMatrix;
use crate::pages::{Pages, Slices};
use crate::table::{each_member, join, promote, AffinityTable, TableConfig, Touch, EMPTY, WHOLE};
use tdmap_trace::Chunk;

/// Which of the trace paper's two metrics a matrix holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Metric {
    /// Number of accesses to blocks shared with the other thread (kMAF's sharing events).
    Accesses,
    /// Bytes of memory shared with the other thread.
    Amount,
}

/// The affinity table and both sharing matrices, updated on every event.
#[derive(Debug, Clone)]
pub struct SharingModel {
    table: AffinityTable,
    accesses: SharingMatrix,
    amount: SharingMatrix,
    node_of: Vec<u16>,
    sub_block: u64,
    events: u64,
    /// Sharing of the thread of the current batch with each thread, not yet in the
    /// matrices: one increment per event instead of two symmetric ones (see `flush_row`).
    row_acc: Vec<u64>,
    row_amt: Vec<u64>,
}

impl SharingModel {
    /// A model for `threads` threads, where thread t runs on NUMA node `node_of[t]` for
    /// accesses (faults carry their own node). Threads missing from `node_of` use node 0.
    /// With `cfg.all_sharers` the sharer bitset is sized for `threads`.
    pub fn new(
        mut cfg: TableConfig,
        threads: usize,
        node_of: &[u32],
    ) -> Result<Self, SharingError> {
        if cfg.all_sharers {
            cfg.sharers = threads.max(1);
        }
        if threads >= EMPTY as usize {
            return Err(SharingError::Thread {
                thread: threads as u32,
                threads: EMPTY as usize - 1,
            });
        }
        let mut nodes = vec![0u16; threads];
        for (slot, &n) in nodes.iter_mut().zip(node_of) {
            if n as usize >= cfg.nodes {
                return Err(SharingError::Node {
                    node: n,
                    nodes: cfg.nodes,
                });
            }
            *slot = n as u16;
        }
        Ok(SharingModel {
            table: AffinityTable::new(cfg)?,
            accesses: SharingMatrix::new(threads),
            amount: SharingMatrix::new(threads),
            node_of: nodes,
            sub_block: cfg.sub_block,
            events: 0,
            row_acc: vec![0; threads],
            row_amt: vec![0; threads],
        })
    }

    /// Grows the model to `threads` threads (never shrinks), keeping everything counted so
    /// far, and sets the node of each thread named in `node_of` as [`SharingModel::new`]
    /// does: for a stream read while the program runs, whose threads appear one by one.
    pub fn grow(&mut self, threads: usize, node_of: &[u32]) -> Result<(), SharingError> {
        let threads = threads.max(self.node_of.len());
        let nodes = self.table.config().nodes;
        if threads >= EMPTY as usize {
            return Err(SharingError::Thread {
                thread: threads as u32,
                threads: EMPTY as usize - 1,
            });
        }
        if let Some(&bad) = node_of.iter().find(|&&n| n as usize >= nodes) {
            return Err(SharingError::Node { node: bad, nodes });
        }
        self.table.widen_sharers(threads);
        self.accesses = self.accesses.grown(threads);
        self.amount = self.amount.grown(threads);
        self.node_of.resize(threads, 0);
        self.row_acc.resize(threads, 0);
        self.row_amt.resize(threads, 0);
        for (slot, &n) in self.node_of.iter_mut().zip(node_of) {
            *slot = n as u16;
        }
        Ok(())
    }

    /// The affinity table.
    pub fn table(&self) -> &AffinityTable {
        &self.table
    }

    /// Mutable access to the table, e.g. to halve a NUMA vector after a migration.
    pub fn table_mut(&mut self) -> &mut AffinityTable {
        &mut self.table
    }

    /// One of the two sharing matrices.
    pub fn matrix(&self, metric: Metric) -> &SharingMatrix {
        match metric {
            Metric::Accesses => &self.accesses,
            Metric::Amount => &self.amount,
        }
    }

    /// Events consumed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// kMAF §3.4.2 aging of both matrices (×0.75), done after each mapping.
    pub fn age(&mut self) {
        self.accesses.age();
        self.amount.age();
    }

    /// One access by `thread` at `addr`, from the thread's node.
    pub fn access(&mut self, thread: u32, addr: u64) -> Result<(), SharingError> {
        self.accesses(thread, &[addr])
    }

    /// One page-fault sample of `thread` at `addr` on `node`.
    pub fn fault(&mut self, thread: u32, addr: u64, node: u32) -> Result<(), SharingError> {
        self.faults(thread, &[addr], &[node])
    }

    /// Many accesses of one thread, in order: the fast path.
    pub fn accesses(&mut self, thread: u32, addrs: &[u64]) -> Result<(), SharingError> {
        self.batch(thread, &mut Slices::new(addrs, |_| 1)).map(drop)
    }

    /// A batch of one thread's accesses given per address with a count: `counts[i]`
    /// accesses at `addrs[i]` (entries beyond the shorter slice are left out). The same
    /// as [`accesses`](Self::accesses) with each address repeated, in any order within
    /// the batch (see `run`): what `--model-only` feeds from the runtime's counted records.
    pub fn accesses_counted(
        &mut self,
        thread: u32,
        addrs: &[u64],
        counts: &[u32],
    ) -> Result<(), SharingError> {
        let k = addrs.len().min(counts.len());
        let mut pages = Slices::new(&addrs[..k], |i| counts[i] as u64);
        self.batch(thread, &mut pages).map(drop)
    }

    /// A batch of thread `thread` given page by page (see [`Pages`]): the same as
    /// [`accesses_counted`](Self::accesses_counted) with the pages' (address, count)
    /// pairs, for a caller whose accesses come grouped by page in an encoding of its own.
    /// Returns the accesses counted.
    pub fn accesses_paged(
        &mut self,
        thread: u32,
        pages: &mut impl Pages,
    ) -> Result<u64, SharingError> {
        self.batch(thread, pages)
    }

    /// One batch of thread `thread`.
    #[inline(always)]
    fn batch(&mut self, thread: u32, pages: &mut impl Pages) -> Result<u64, SharingError> {
        let t = self.check_thread(thread)?;
        let node = self.node_of[t as usize] as usize;
        let cfg = self.table.config();
        // One slot word a sub-block (up to 16 threads, every sharer kept): the common
        // case, compiled with its slot count known.
        let n = match (cfg.all_sharers, cfg.slots_per_sub_block() == 1) {
            (true, true) => self.run::<true, true>(t, node, pages),
            (true, false) => self.run::<true, false>(t, node, pages),
            (false, _) => self.run::<false, false>(t, node, pages),
        };
        self.flush_row(t as usize);
        self.events += n;
        Ok(n)
    }

    /// Moves the batch's pending row of sharing into both symmetric halves of the matrices.
    fn flush_row(&mut self, t: usize) {
        for (u, (a, m)) in self.row_acc.iter_mut().zip(&mut self.row_amt).enumerate() {
            if *a != 0 {
                self.accesses.add(t, u, std::mem::take(a));
            }
            if *m != 0 {
                self.amount.add(t, u, std::mem::take(m));
            }
        }
    }

    /// The same updates as one `event` per access: the page is looked up and its NUMA
    /// vector bumped once per run of accesses to it, and private events are counted in
    /// registers. `ALL` keeps every sharer (trace paper
    /// §III-B: each access counts with every other thread that touched the sub-block, and
    /// joining one adds its size to the newcomer's shared amount with each of them, so a
    /// line touched by n threads ends in all n·(n-1)/2 pairs); otherwise kMAF's last K.
    ///
    /// An access to the same sub-block as the access before it finds the thread already
    /// its (MRU) sharer and the other sharers unchanged, since only this thread runs in a
    /// batch: it repeats that access's sharing events exactly, with nothing newly joined.
    /// So a run of m accesses to one sub-block (strided streams make runs of 8) is one
    /// update that counts m events. For the same reason the accesses of a batch can come
    /// in any order and grouped: (address, n) from `pages` counts as n accesses in a row.
    /// Returns the accesses counted.
    #[inline(always)]
    fn run<const ALL: bool, const ONE: bool>(
        &mut self,
        t: u16,
        node: usize,
        pages: &mut impl Pages,
    ) -> u64 {
        let cfg = *self.table.config();
        let (shift, sbs) = (cfg.page_size.trailing_zeros(), self.sub_block);
        let (sb_shift, sb_mask) = (
            cfg.sub_block.trailing_zeros(),
            cfg.page_size / cfg.sub_block - 1,
        );
        let k = if ONE { 1 } else { cfg.slots_per_sub_block() };
        let w = self.table.sbv_words();
        // Sub-blocks of 64 bytes, one sharer word each, 64 to a page: `Pages::full`'s.
        let lines64 = ALL && ONE && cfg.sub_block == 64 && w == 64;
        let (row_acc, row_amt) = (&mut self.row_acc, &mut self.row_amt);
        let mut own = (0u64, 0u64);
        let mut pend = Pending::default();
        let mut total = 0u64;
        while let Some(page) = pages.next_page(shift) {
            let p = self.table.slot(page);
            if let Some((sbv, whole)) = self.table.whole(p) {
                if lines64 {
                    // A block whose every line was accessed (a loop streaming through
                    // memory): the page's lines at once when they share with the same
                    // threads.
                    if let Some(n) = pages.full() {
                        if let Some((others, joined)) = full_page(sbv, whole, t) {
                            pend.add(others, n, sbs * joined, &mut own, row_acc, row_amt);
                            self.table.bump_run(p, node, n as usize);
                            total += n;
                            continue;
                        }
                    }
                }
                // The lines one by one may change some of the page's words.
                *whole = 0;
            }
            let sbv = &mut self.table.sbv_mut()[p * w..(p + 1) * w];
            // Accesses to the page so far.
            let mut on_page = 0u64;
            // The sub-block of the current run of accesses (none yet) and their number.
            let (mut last, mut m) = (usize::MAX, 0u64);
            // Inlined: out of line, the closure kept the batch's registers in memory.
            pages.each(
                shift,
                #[inline(always)]
                |a, n| {
                    let at = ((a >> sb_shift) & sb_mask) as usize * k;
                    if at != last {
                        if last != usize::MAX {
                            let slots = &mut sbv[last..last + k];
                            events::<ALL>(slots, t, m, sbs, row_acc, row_amt, &mut own, &mut pend);
                        }
                        (last, m) = (at, 0);
                    }
                    m += n;
                    on_page += n;
                },
            );
            if last != usize::MAX {
                let slots = &mut sbv[last..last + k];
                events::<ALL>(slots, t, m, sbs, row_acc, row_amt, &mut own, &mut pend);
            }
            self.table.bump_run(p, node, on_page as usize);
            total += on_page;
        }
        pend.flush(row_acc, row_amt);
        row_acc[t as usize] += own.0;
        row_amt[t as usize] += own.1;
        total
    }

    /// Many page-fault samples of one thread, with the node of each.
    pub fn faults(
        &mut self,
        thread: u32,
        addrs: &[u64],
        nodes: &[u32],
    ) -> Result<(), SharingError> {
        self.faults_by(thread, addrs, nodes, |_| 0)
    }

    /// [`faults`](Self::faults) with the size of the page that mapped each address when
    /// it faulted (0 when unknown, as for a first touch): a sample on a page larger than
    /// the table's counts in the NUMA vector of that huge page's first page
    /// ([`AffinityTable::touch_huge`]), so that Eq. 6 weighs the huge page as a whole.
    pub fn faults_sized(
        &mut self,
        thread: u32,
        addrs: &[u64],
        nodes: &[u32],
        sizes: &[u64],
    ) -> Result<(), SharingError> {
        let k = addrs.len().min(sizes.len());
        let cfg = *self.table.config();
        self.faults_by(thread, &addrs[..k], nodes, |i| {
            cfg.huge_page(sizes[i]).unwrap_or(0)
        })
    }

    /// The samples `addrs[i]` of one thread on `nodes[i]`, each in a huge page of
    /// `huge(i)` bytes or 0.
    fn faults_by(
        &mut self,
        thread: u32,
        addrs: &[u64],
        nodes: &[u32],
        huge: impl Fn(usize) -> u64,
    ) -> Result<(), SharingError> {
        let t = self.check_thread(thread)?;
        let max = self.table.config().nodes;
        if let Some(&bad) = nodes.iter().find(|&&n| n as usize >= max) {
            return Err(SharingError::Node {
                node: bad,
                nodes: max,
            });
        }
        for (i, (&a, &n)) in addrs.iter().zip(nodes).enumerate() {
            self.event(t, n as usize, a, huge(i));
        }
        self.events += addrs.len().min(nodes.len()) as u64;
        Ok(())
    }

    /// Consumes one chunk straight from [`tdmap_trace::Reader::next_chunk`].
    pub fn feed(&mut self, chunk: &Chunk) -> Result<(), SharingError> {
        match chunk {
            Chunk::Accesses(c) => self.accesses(c.thread, &c.addrs),
            Chunk::Faults(c) => self.faults(c.thread, &c.addrs, &c.nodes),
        }
    }

    fn check_thread(&self, thread: u32) -> Result<u16, SharingError> {
        if thread as usize >= self.node_of.len() {
            return Err(SharingError::Thread {
                thread,
                threads: self.node_of.len(),
            });
        }
        Ok(thread as u16)
    }

    /// kMAF §3.2: the thread becomes MRU and a sharing event is recorded with every other
    /// sharer of the sub-block. The access metric counts it on every event; the amount
    /// metric only when the thread newly joins the sharers (the block is newly shared with
    /// them). With no other sharer the event is private and goes on the diagonal.
    /// `huge`: the size of the huge page holding `addr`, or 0.
    #[inline(always)]
    fn event(&mut self, t: u16, node: usize, addr: u64, huge: u64) {
        let Touch { sbv_at, was_sharer } = if huge == 0 {
            self.table.touch(t, node, addr)
        } else {
            self.table.touch_huge(t, node, addr, huge)
        };
        let slots = self.table.sharer_slots(sbv_at);
        let (acc, amount, sbs) = (&mut self.accesses, &mut self.amount, self.sub_block);
        let mut add = |u| {
            acc.add(t as usize, u, 1);
            if !was_sharer {
                amount.add(t as usize, u, sbs);
            }
        };
        let shared = if self.table.config().all_sharers {
            each_member(slots, t, &mut add)
        } else {
            record(&slots[1..], &mut add)
        };
        if !shared {
            add(t as usize);
        }
    }
}

/// `m` accesses in a row of thread `t` to the sub-block whose sharers are `slots`: the
/// thread joins them (or becomes MRU), each access counts a sharing event with every
/// other sharer (else a private one, kept in `own`), and a newcomer adds `sbs` bytes of
/// shared amount once (trace paper §III-B; kMAF §3.2).
#[allow(clippy::too_many_arguments)] // the batch's registers, passed down a hot loop
#[inline(always)]
fn events<const ALL: bool>(
    slots: &mut [u16],
    t: u16,
    m: u64,
    sbs: u64,
    row_acc: &mut [u64],
    row_amt: &mut [u64],
    own: &mut (u64, u64),
    pend: &mut Pending,
) {
    if ALL && slots.len() == 1 {
        // Up to 16 threads: the other sharers are one word, and lines with the same
        // ones (most of a batch) add to one pending sum rather than to each sharer's row.
        let joined = sbs * !join(slots, t) as u64;
        let others = slots[0] & !(1 << (t % 16));
        pend.add(others, m, joined, own, row_acc, row_amt);
        return;
    }
    let was_sharer = if ALL {
        join(slots, t)
    } else {
        promote(slots, t)
    };
    // Branch-free: whether the thread was a sharer is random on random sharing.
    let joined = sbs * !was_sharer as u64;
    let add = |u: usize| {
        row_acc[u] += m;
        row_amt[u] += joined;
    };
    let shared = if ALL {
        each_member(slots, t, add)
    } else {
        record(&slots[1..], add)
    };
    if !shared {
        own.0 += m;
        own.1 += joined;
    }
}

/// Sharing events of one batch not yet added to the rows: `m` accesses, `joined` bytes
/// newly shared, with each thread of `others` (a sharer bitset of up to 16 threads). The
/// sums are the same in any order, so lines with the same other sharers add here, and
/// each of their sharers' rows once per run of them.
#[derive(Default)]
struct Pending {
    others: u16,
    m: u64,
    joined: u64,
}

impl Pending {
    /// `m` accesses and `joined` bytes newly shared with the threads of `others` (a
    /// sharer bitset of up to 16 threads), or private ones (`own`) when it is empty.
    #[inline(always)]
    fn add(
        &mut self,
        others: u16,
        m: u64,
        joined: u64,
        own: &mut (u64, u64),
        row_acc: &mut [u64],
        row_amt: &mut [u64],
    ) {
        if others == 0 {
            own.0 += m;
            own.1 += joined;
        } else if others == self.others {
            self.m += m;
            self.joined += joined;
        } else {
            self.flush(row_acc, row_amt);
            *self = Pending { others, m, joined };
        }
    }

    /// Adds the pending events to each sharer's rows and empties them.
    #[inline(always)]
    fn flush(&mut self, row_acc: &mut [u64], row_amt: &mut [u64]) {
        let mut x = std::mem::take(&mut self.others);
        while x != 0 {
            let u = x.trailing_zeros() as usize;
            row_acc[u] += self.m;
            row_amt[u] += self.joined;
            x &= x - 1;
        }
    }
}

/// [`events`] for each of a page's 64 sub-blocks (one sharer word each) at once, when
/// thread `t` made one run of accesses on each and every sub-block has the same other
/// sharers: the thread joins each sub-block's sharers, and the page's accesses count
/// with those sharers as one run (`Pending`: the sums are the same in any grouping).
/// The other sharers and the sub-blocks newly joined; None, with nothing changed, when
/// the sub-blocks' other sharers differ (the caller then takes them one by one).
///
/// `whole` is the page's whole-page word (`AffinityTable::whole`): when it gives the
/// word all 64 hold, the words are not read, and not written when the thread is among
/// them (a loop's later sweeps); a scan that finds them alike sets it.
#[inline(always)]
fn full_page(slots: &mut [u16], whole: &mut u32, t: u16) -> Option<(u16, u64)> {
    let slots: &mut [u16; 64] = slots.try_into().ok()?;
    let bit = 1u16 << (t % 16);
    if *whole & WHOLE != 0 {
        let all = *whole as u16;
        if all & bit != 0 {
            return Some((all & !bit, 0));
        }
        slots.iter_mut().for_each(|s| *s |= bit);
        *whole = WHOLE | (all | bit) as u32;
        return Some((all, 64));
    }
    let others = slots[0] & !bit;
    // Vectorised: a sub-block's test is a lane's.
    let (mut differ, mut had) = (0u16, 0u32);
    for &s in slots.iter() {
        differ |= (s & !bit) ^ others;
        had += (s & bit != 0) as u32;
    }
    if differ != 0 {
        return None;
    }
    // A page the thread already shares whole (a loop's later sweeps) is left unwritten.
    if had != 64 {
        slots.iter_mut().for_each(|s| *s |= bit);
    }
    *whole = WHOLE | (others | bit) as u32;
    Some((others, 64 - had as u64))
}

/// Records one event of a thread whose sub-block's other sharers are `others`: a
/// sharing event with each (kMAF §3.2); `add(u)` counts one with thread u. Returns false
/// when there was no other sharer: the caller then puts the event on the diagonal as
/// private data (trace paper §III-B). Callers count the access matrix every time and the
/// amount matrix only when the thread newly joined the sharers. kMAF's text counts "all
/// pairs of threads in the SBV entry"; with its K = 2 that is this one pair, and for K > 2
/// pairs without the thread are left out: this event says nothing new about them.
#[inline(always)]
fn record(others: &[u16], mut add: impl FnMut(usize)) -> bool {
    let mut shared = false;
    for &u in others {
        if u == EMPTY {
            break;
        }
        shared = true;
        add(u as usize);
    }
    shared
}

#[cfg(test)]
mod counted_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The batched page-run path gives exactly what one event at a time gives.
        #[test]
        fn batched_accesses_equal_single_events(
            batches in prop::collection::vec((0u32..4, prop::collection::vec(0u64..(1 << 16), 1..64)), 1..20),
            narrow in any::<bool>(),
            all in any::<bool>(),
            // Addresses folded into 3 lines of 2 pages, so that runs of accesses to one
            // sub-block (counted once per run) and pages shared by threads are common.
            dense in any::<bool>(),
        ) {
            let fold = |a: u64| if dense { (a % 3) * 64 + (a >> 2) % 64 + (a >> 10) % 2 * 4096 } else { a };
            let batches: Vec<(u32, Vec<u64>)> = batches
                .iter()
                .map(|(t, v)| (*t, v.iter().map(|&a| fold(a)).collect()))
                .collect();
            let mut cfg = if all { TableConfig::all_sharers(2, 4) } else { TableConfig::exact(2) };
            cfg.wide_counters = !narrow;
            let nodes = [0, 1, 1, 0];
            let mut fast = SharingModel::new(cfg, 4, &nodes).unwrap();
            let mut slow = SharingModel::new(cfg, 4, &nodes).unwrap();
            for (t, addrs) in &batches {
                fast.accesses(*t, addrs).unwrap();
                for &a in addrs {
                    slow.fault(*t, a, nodes[*t as usize]).unwrap();
                }
            }
            prop_assert_eq!(fast.matrix(Metric::Accesses), slow.matrix(Metric::Accesses));
            prop_assert_eq!(fast.matrix(Metric::Amount), slow.matrix(Metric::Amount));
            let mut a: Vec<_> = fast.table().pages().collect();
            let mut b: Vec<_> = slow.table().pages().collect();
            a.sort();
            b.sort();
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn all_sharers_count_every_pair_of_a_line() {
        // Line 0 is touched by threads 0, 1, 2 (twice by 2); line 1 by 3 alone.
        let mut m = SharingModel::new(TableConfig::all_sharers(1, 20), 20, &[]).unwrap();
        for (t, a) in [(0, 0), (1, 8), (2, 16), (2, 24), (3, 64), (17, 0)] {
            m.access(t, a).unwrap();
        }
        let amt = m.matrix(Metric::Amount);
        for (i, j) in [(0, 1), (0, 2), (1, 2), (0, 17), (1, 17), (2, 17)] {
            assert_eq!(amt.get(i, j), 64, "pair {i},{j}");
        }
        assert_eq!(amt.get(3, 3), 64, "a private line is on the diagonal");
        assert_eq!(amt.get(0, 3), 0);
        // Accesses: 2's two accesses each see 0 and 1; 17's sees 0, 1, 2.
        let acc = m.matrix(Metric::Accesses);
        assert_eq!(acc.get(0, 2), 2);
        assert_eq!(acc.get(1, 2), 2);
        assert_eq!(acc.get(2, 17), 1);
        assert_eq!(m.table().sharers(0).unwrap(), vec![0, 1, 2, 17]);
        // 20 threads need two 16-bit words per line.
        assert_eq!(m.table().config().slots_per_sub_block(), 2);
    }

    proptest! {
        /// A model grown thread by thread as they appear ends exactly as one sized for
        /// all threads from the start, across the 16-thread steps of the sharer bitset.
        #[test]
        fn growing_as_threads_appear_equals_sizing_up_front(
            batches in prop::collection::vec((0u32..40, prop::collection::vec(0u64..(1 << 14), 1..32)), 1..30),
            all in any::<bool>(),
        ) {
            let t = 40;
            let cfg = if all { TableConfig::all_sharers(1, t) } else { TableConfig::exact(1) };
            let mut whole = SharingModel::new(cfg, t, &[]).unwrap();
            let mut grown = SharingModel::new(cfg, 1, &[]).unwrap();
            for (th, addrs) in &batches {
                whole.accesses(*th, addrs).unwrap();
                if *th as usize >= grown.matrix(Metric::Accesses).n() {
                    grown.grow(*th as usize + 1, &[]).unwrap();
                }
                grown.accesses(*th, addrs).unwrap();
            }
            grown.grow(t, &[]).unwrap();
            prop_assert_eq!(whole.matrix(Metric::Accesses), grown.matrix(Metric::Accesses));
            prop_assert_eq!(whole.matrix(Metric::Amount), grown.matrix(Metric::Amount));
            for a in (0..(1u64 << 14)).step_by(64) {
                prop_assert_eq!(whole.table().sharers(a), grown.table().sharers(a));
            }
        }
    }

    #[test]
    fn samples_on_a_huge_page_count_in_its_first_pages_vector() {
        const HUGE: u64 = 2 << 20;
        let base = 4 * HUGE;
        let mut m = SharingModel::new(TableConfig::page_faults(2), 2, &[]).unwrap();
        // Thread 1 on node 1 faults at four different 4 KiB pages of one huge page, and
        // thread 0 on node 0 once; then a base-page sample and a first touch (size 0).
        let addrs = [
            base + 4096,
            base + 9 * 4096,
            base + 300 * 4096,
            base + 511 * 4096,
        ];
        m.faults_sized(1, &addrs, &[1; 4], &[HUGE; 4]).unwrap();
        m.faults_sized(0, &[base + 9 * 4096 + 8], &[0], &[HUGE])
            .unwrap();
        m.faults_sized(0, &[base + HUGE, base + HUGE + 4096], &[0, 0], &[4096, 0])
            .unwrap();
        let t = m.table();
        assert_eq!(t.nv(base), Some(vec![1, 4]), "the huge page as a whole");
        assert_eq!(
            t.nv(base + 9 * 4096),
            Some(vec![0, 0]),
            "no count of its own"
        );
        assert!(
            crate::should_migrate(&t.nv(base).unwrap()),
            "4 > 2·1 + 1: Eq. 6 holds"
        );
        assert_eq!(
            t.nv(base + HUGE),
            Some(vec![1, 0]),
            "a base page counts for itself"
        );
        assert_eq!(t.nv(base + HUGE + 4096), Some(vec![1, 0]));
        // Sharing still follows the sub-block accessed: both threads in page 9's first.
        assert_eq!(m.matrix(Metric::Accesses).get(0, 1), 1);
        assert_eq!(m.events(), 7);
    }

    #[test]
    fn unknown_threads_and_nodes_are_errors() {
        let mut m = SharingModel::new(TableConfig::exact(2), 2, &[0, 1]).unwrap();
        assert_eq!(
            m.access(2, 0),
            Err(SharingError::Thread {
                thread: 2,
                threads: 2
            })
        );
        assert_eq!(
            m.fault(0, 0, 2),
            Err(SharingError::Node { node: 2, nodes: 2 })
        );
        assert!(SharingModel::new(TableConfig::exact(2), 2, &[0, 5]).is_err());
    }
}
