//! kMAF's affinity table (§3.2): per page a NUMA vector of access counters and, per
//! sub-block, the last K threads that touched it in MRU-to-LRU order.
//!
//! Pages are stored in groups of 64 consecutive pages found through one hash lookup, and
//! the last group is cached, so a thread streaming through memory costs no lookup per
//! event. Entries live in flat arrays (no per-page allocation) to keep the table near the
//! size of Eq. 7.

use crate::error::SharingError;
use crate::hash::FastMap;

/// Marks an empty sharer slot.
pub const EMPTY: u16 = u16::MAX;
/// Pages per storage group.
const GROUP_PAGES: u64 = 64;
/// The flag of a page's whole-page word ([`AffinityTable::whole`]) that says all its
/// sub-blocks hold the word in the low 16 bits.
pub(crate) const WHOLE: u32 = 1 << 16;
/// Entries of the direct-mapped cache of recently used groups (a power of two): a thread
/// moving between a few distant arrays finds their groups without hashing.
const RECENT: usize = 256;

/// The shape of an affinity table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableConfig {
    /// Page size in bytes (a power of two).
    pub page_size: u64,
    /// Sub-block size in bytes (a power of two, at most the page size).
    pub sub_block: u64,
    /// Sharers kept per sub-block (K, at least 1).
    pub sharers: usize,
    /// NUMA nodes (length of the NUMA vector).
    pub nodes: usize,
    /// 4-byte NUMA-vector counters instead of kMAF's 2-byte ones.
    pub wide_counters: bool,
    /// Keep every thread that touched a sub-block, as a bitset of `sharers` bits, instead
    /// of kMAF's last `sharers` threads: the trace paper's exact count (§III-B), where a
    /// block shared by n threads counts for all n·(n-1)/2 pairs.
    pub all_sharers: bool,
}

/// How many sharers of a sub-block the affinity table keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharers {
    /// kMAF's last K threads, MRU first (§3.2; K is configurable there, 2 in §3.5.1).
    Last(usize),
    /// Every thread that touched the block (trace paper §III-B).
    All,
}

impl std::fmt::Display for Sharers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sharers::Last(k) => write!(f, "{k}"),
            Sharers::All => f.write_str("all"),
        }
    }
}

impl std::str::FromStr for Sharers {
    type Err = SharingError;

    /// `all`, or K from 1 to 64 (the command line's `--sharers N|all`).
    fn from_str(s: &str) -> Result<Sharers, SharingError> {
        if s.eq_ignore_ascii_case("all") {
            return Ok(Sharers::All);
        }
        match s.parse::<usize>() {
            Ok(k) if (1..=64).contains(&k) => Ok(Sharers::Last(k)),
            _ => Err(SharingError::Sharers(s.to_string())),
        }
    }
}

impl TableConfig {
    /// kMAF's configuration for page-fault samples (§3.5.1): 4 KiB pages, 1 KiB
    /// sub-blocks, 2 sharers, 2-byte counters.
    pub fn page_faults(nodes: usize) -> TableConfig {
        TableConfig {
            page_size: 4096,
            sub_block: 1024,
            sharers: 2,
            nodes,
            wide_counters: false,
            all_sharers: false,
        }
    }

    /// For exact traces: sharing per 64-byte cache line (kMAF §2.2.1), 4-byte counters so
    /// that busy pages keep their weight in Eq. 4.
    pub fn exact(nodes: usize) -> TableConfig {
        TableConfig {
            page_size: 4096,
            sub_block: 64,
            sharers: 2,
            nodes,
            wide_counters: true,
            all_sharers: false,
        }
    }

    /// For exact traces, counted as the trace paper does (§III-B): per 64-byte line, every
    /// one of `threads` threads that touched it is a sharer.
    pub fn all_sharers(nodes: usize, threads: usize) -> TableConfig {
        TableConfig {
            sharers: threads.max(1),
            all_sharers: true,
            ..TableConfig::exact(nodes)
        }
    }

    /// This configuration, keeping `s` sharers per sub-block (the model sizes an `All`
    /// bitset for its thread count).
    pub fn keeping(self, s: Sharers) -> TableConfig {
        match s {
            Sharers::Last(k) => TableConfig {
                sharers: k,
                all_sharers: false,
                ..self
            },
            Sharers::All => TableConfig {
                all_sharers: true,
                ..self
            },
        }
    }

    /// `Some(size)` when a sample on a page of `size` bytes (as perf reports it, 0 when
    /// unknown) is on a huge page: its NUMA vector is then the huge page's, kept on its
    /// first page ([`AffinityTable::touch_huge`]).
    pub fn huge_page(&self, size: u64) -> Option<u64> {
        (size > self.page_size && size.is_power_of_two()).then_some(size)
    }

    /// 2-byte slots per sub-block: K thread ids, or a bitset of `sharers` bits.
    pub fn slots_per_sub_block(&self) -> usize {
        if self.all_sharers {
            self.sharers.div_ceil(16)
        } else {
            self.sharers
        }
    }

    /// Bytes of one entry by kMAF Eq. 7 (2-byte thread ids).
    pub fn entry_bytes(&self) -> usize {
        let counter = if self.wide_counters { 4 } else { 2 };
        counter * self.nodes
            + (self.page_size / self.sub_block) as usize * 2 * self.slots_per_sub_block()
    }

    fn validate(&self) -> Result<(), SharingError> {
        let bad = |why: &str| Err(SharingError::Config(why.to_string()));
        if !self.page_size.is_power_of_two() || !self.sub_block.is_power_of_two() {
            return bad("page and sub-block sizes must be powers of two");
        }
        if self.sub_block > self.page_size {
            return bad("the sub-block must not exceed the page");
        }
        if self.sharers == 0 || self.nodes == 0 || self.nodes > 1024 {
            return bad("need at least 1 sharer and 1..=1024 nodes");
        }
        Ok(())
    }
}

/// NUMA-vector storage, narrow (kMAF) or wide.
#[derive(Debug, Clone)]
enum Nv {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

/// Where one event landed, for the caller to record sharing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    /// Index of the sub-block's sharer list (see [`AffinityTable::sharer_slots`]).
    pub sbv_at: usize,
    /// True when the thread was already among the sub-block's sharers.
    pub was_sharer: bool,
}

/// The affinity table of kMAF §3.2.
#[derive(Debug, Clone)]
pub struct AffinityTable {
    cfg: TableConfig,
    page_shift: u32,
    sb_shift: u32,
    sb_mask: u64,
    sbv_words: usize,
    slots: usize,
    index: FastMap<u64, u32>,
    keys: Vec<u64>,
    touched: Vec<u64>,
    nv: Nv,
    sbv: Vec<u16>,
    /// Per page, with one sharer word per sub-block ([`Self::whole`]): [`WHOLE`] and the
    /// word every sub-block of the page holds, or 0 when they may differ. The model's
    /// whole-page update reads it instead of the page's 64 words, which miss the cache on
    /// most pages of a large run (`SharingModel::run`).
    whole: Vec<u32>,
    last_key: u64,
    last_group: usize,
    /// (group key, group) by key modulo [`RECENT`]; key u64::MAX marks an empty entry.
    recent: Box<[(u64, u32)]>,
    last_page: u64,
    last_p: usize,
}

impl AffinityTable {
    /// An empty table.
    pub fn new(cfg: TableConfig) -> Result<AffinityTable, SharingError> {
        cfg.validate()?;
        let spp = cfg.page_size / cfg.sub_block;
        Ok(AffinityTable {
            cfg,
            page_shift: cfg.page_size.trailing_zeros(),
            sb_shift: cfg.sub_block.trailing_zeros(),
            sb_mask: spp - 1,
            sbv_words: spp as usize * cfg.slots_per_sub_block(),
            slots: cfg.slots_per_sub_block(),
            index: FastMap::default(),
            keys: Vec::new(),
            touched: Vec::new(),
            nv: if cfg.wide_counters {
                Nv::Wide(Vec::new())
            } else {
                Nv::Narrow(Vec::new())
            },
            sbv: Vec::new(),
            whole: Vec::new(),
            last_key: u64::MAX,
            last_group: 0,
            recent: vec![(u64::MAX, 0); RECENT].into_boxed_slice(),
            last_page: u64::MAX,
            last_p: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &TableConfig {
        &self.cfg
    }

    /// Records that `thread`, running on `node`, accessed `addr`: NV[node] += 1 and the
    /// thread becomes the MRU sharer of the sub-block (kMAF §3.2, Figure 5), or joins its
    /// sharer set with `all_sharers`.
    #[inline(always)]
    pub fn touch(&mut self, thread: u16, node: usize, addr: u64) -> Touch {
        let page = addr >> self.page_shift;
        if page != self.last_page {
            self.enter(page);
        }
        let p = self.last_p;
        self.bump(p, node);
        self.join_sub_block(p, thread, addr)
    }

    /// [`touch`](Self::touch) for an access inside a huge page of `huge` bytes (a power
    /// of two above the page size): NV[node] += 1 on the huge page's first page, which
    /// stands for all of it since the kernel places and moves a huge page as one, while
    /// the thread joins the sharers of the sub-block it accessed, as for any access.
    pub fn touch_huge(&mut self, thread: u16, node: usize, addr: u64, huge: u64) -> Touch {
        let head = self.slot((addr & !(huge - 1)) >> self.page_shift);
        self.bump(head, node);
        let p = self.slot(addr >> self.page_shift);
        self.join_sub_block(p, thread, addr)
    }

    /// The thread becomes MRU sharer of (or joins) the sub-block of `addr` in the page at
    /// storage index `p`.
    #[inline(always)]
    fn join_sub_block(&mut self, p: usize, thread: u16, addr: u64) -> Touch {
        let sb = ((addr >> self.sb_shift) & self.sb_mask) as usize;
        let at = p * self.sbv_words + sb * self.slots;
        let slots = &mut self.sbv[at..at + self.slots];
        let was_sharer = if self.cfg.all_sharers {
            join(slots, thread)
        } else {
            promote(slots, thread)
        };
        if !was_sharer && self.keeps_whole() {
            self.whole[p] = 0;
        }
        Touch {
            sbv_at: at,
            was_sharer,
        }
    }

    /// The storage index of `page`, created if new and marked touched.
    #[inline(always)]
    pub(crate) fn slot(&mut self, page: u64) -> usize {
        if page != self.last_page {
            self.enter(page);
        }
        self.last_p
    }

    /// NV[node] += n for the page at storage index `p`, as `n` single increments would
    /// (halving on overflow included).
    #[inline(always)]
    pub(crate) fn bump_run(&mut self, p: usize, node: usize, n: usize) {
        let base = p * self.cfg.nodes + node;
        let fast = match &mut self.nv {
            Nv::Narrow(v) => {
                (v[base] as usize + n <= u16::MAX as usize).then(|| v[base] += n as u16)
            }
            Nv::Wide(v) => {
                (v[base] as u64 + n as u64 <= u32::MAX as u64).then(|| v[base] += n as u32)
            }
        };
        if fast.is_none() {
            (0..n).for_each(|_| self.bump(p, node));
        }
    }

    /// 2-byte slots per page in the sharer storage.
    #[inline(always)]
    pub(crate) fn sbv_words(&self) -> usize {
        self.sbv_words
    }

    /// The sharer storage: page p's sub-blocks from `p * sbv_words()`.
    #[inline(always)]
    pub(crate) fn sbv_mut(&mut self) -> &mut [u16] {
        &mut self.sbv
    }

    /// Whether pages keep their [`Self::whole`] word: every sharer kept, one word per
    /// sub-block (up to 16 threads).
    #[inline(always)]
    fn keeps_whole(&self) -> bool {
        self.cfg.all_sharers && self.slots == 1
    }

    /// Page p's sharer words and its whole-page word ([`WHOLE`] and the word all its
    /// sub-blocks hold, or 0), when the table keeps one ([`Self::keeps_whole`]). The
    /// caller keeps the two in step: a change to some of the words clears the whole-page
    /// word.
    #[inline(always)]
    pub(crate) fn whole(&mut self, p: usize) -> Option<(&mut [u16], &mut u32)> {
        if !self.keeps_whole() {
            return None;
        }
        let w = self.sbv_words;
        Some((&mut self.sbv[p * w..(p + 1) * w], &mut self.whole[p]))
    }

    /// Moves the one-page cache to `page`, finding its group in the recent-group cache, or
    /// else (kept out of line so the per-event path stays small) in the index.
    #[inline(always)]
    fn enter(&mut self, page: u64) {
        let key = page / GROUP_PAGES;
        if key != self.last_key {
            let (k, g) = self.recent[key as usize % RECENT];
            self.last_group = if k == key { g as usize } else { self.miss(key) };
            self.last_key = key;
        }
        let slot = (page % GROUP_PAGES) as usize;
        // Stored only when new: a store on every page change would chain the events
        // through memory.
        let touched = &mut self.touched[self.last_group];
        if *touched >> slot & 1 == 0 {
            *touched |= 1 << slot;
        }
        self.last_page = page;
        self.last_p = self.last_group * GROUP_PAGES as usize + slot;
    }

    #[inline(never)]
    fn miss(&mut self, key: u64) -> usize {
        let g = self.group(key);
        self.recent[key as usize % RECENT] = (key, g as u32);
        g
    }

    /// The sharer list (MRU first, [`EMPTY`] for unused slots) at a [`Touch::sbv_at`], or
    /// with `all_sharers` the sharer bitset (bit t%16 of word t/16).
    #[inline]
    pub fn sharer_slots(&self, at: usize) -> &[u16] {
        &self.sbv[at..at + self.slots]
    }

    #[inline(always)]
    fn bump(&mut self, p: usize, node: usize) {
        let n = self.cfg.nodes;
        let base = p * n;
        match &mut self.nv {
            Nv::Narrow(v) => {
                if v[base + node] == u16::MAX {
                    v[base..base + n].iter_mut().for_each(|c| *c >>= 1);
                }
                v[base + node] += 1;
            }
            Nv::Wide(v) => {
                if v[base + node] == u32::MAX {
                    v[base..base + n].iter_mut().for_each(|c| *c >>= 1);
                }
                v[base + node] += 1;
            }
        }
    }

    fn group(&mut self, key: u64) -> usize {
        if let Some(&g) = self.index.get(&key) {
            return g as usize;
        }
        let g = self.keys.len();
        self.index.insert(key, g as u32);
        self.keys.push(key);
        self.touched.push(0);
        let pages = GROUP_PAGES as usize;
        let n = pages * self.cfg.nodes;
        match &mut self.nv {
            Nv::Narrow(v) => v.resize(v.len() + n, 0),
            Nv::Wide(v) => v.resize(v.len() + n, 0),
        }
        let empty = if self.cfg.all_sharers { 0 } else { EMPTY };
        self.sbv
            .resize(self.sbv.len() + pages * self.sbv_words, empty);
        // A new page's sub-blocks all hold no sharer.
        self.whole.resize(self.whole.len() + pages, WHOLE);
        g
    }

    fn locate(&self, addr: u64) -> Option<usize> {
        let page = addr >> self.page_shift;
        let g = *self.index.get(&(page / GROUP_PAGES))? as usize;
        let slot = page % GROUP_PAGES;
        (self.touched[g] >> slot & 1 == 1).then_some(g * GROUP_PAGES as usize + slot as usize)
    }

    fn nv_of(&self, p: usize) -> Vec<u32> {
        let n = self.cfg.nodes;
        match &self.nv {
            Nv::Narrow(v) => v[p * n..(p + 1) * n].iter().map(|&c| c as u32).collect(),
            Nv::Wide(v) => v[p * n..(p + 1) * n].to_vec(),
        }
    }

    /// With `all_sharers`, widens every sub-block's sharer bitset to hold `threads`
    /// threads (existing sharers kept); does nothing in last-K mode or when it is wide
    /// enough. For streams whose thread count is only known as threads appear.
    pub fn widen_sharers(&mut self, threads: usize) {
        if !self.cfg.all_sharers || threads <= self.cfg.sharers {
            return;
        }
        let old = self.slots;
        self.cfg.sharers = threads;
        let new = self.cfg.slots_per_sub_block();
        if new > old {
            let mut sbv = Vec::with_capacity(self.sbv.len() / old * new);
            for sb in self.sbv.chunks_exact(old) {
                sbv.extend_from_slice(sb);
                sbv.resize(sbv.len() + new - old, 0);
            }
            self.sbv = sbv;
            self.sbv_words = self.sbv_words / old * new;
            self.slots = new;
            // Several words to a sub-block now: no page keeps a whole-page word.
            self.whole.iter_mut().for_each(|w| *w = 0);
        }
    }

    /// The NUMA vector of the page holding `addr`, if it was touched.
    pub fn nv(&self, addr: u64) -> Option<Vec<u32>> {
        self.locate(addr).map(|p| self.nv_of(p))
    }

    /// The sharers of the sub-block holding `addr`, MRU first, without empty slots (in
    /// thread order with `all_sharers`).
    pub fn sharers(&self, addr: u64) -> Option<Vec<u16>> {
        let p = self.locate(addr)?;
        let sb = ((addr >> self.sb_shift) & self.sb_mask) as usize;
        let slots = self.sharer_slots(p * self.sbv_words + sb * self.slots);
        if self.cfg.all_sharers {
            let mut v = Vec::new();
            each_member(slots, u16::MAX, |u| v.push(u as u16));
            return Some(v);
        }
        Some(slots.iter().copied().filter(|&t| t != EMPTY).collect())
    }

    /// kMAF §3.3: after migrating the page holding `addr`, halve its NUMA vector.
    pub fn halve_nv(&mut self, addr: u64) {
        let Some(p) = self.locate(addr) else { return };
        let n = self.cfg.nodes;
        match &mut self.nv {
            Nv::Narrow(v) => v[p * n..(p + 1) * n].iter_mut().for_each(|c| *c >>= 1),
            Nv::Wide(v) => v[p * n..(p + 1) * n].iter_mut().for_each(|c| *c >>= 1),
        }
    }

    /// Zeroes every NUMA vector, keeping the pages and their sharers: for a monitor
    /// whose counts so far came from threads that ran anywhere, once they are placed.
    pub fn clear_nvs(&mut self) {
        match &mut self.nv {
            Nv::Narrow(v) => v.iter_mut().for_each(|c| *c = 0),
            Nv::Wide(v) => v.iter_mut().for_each(|c| *c = 0),
        }
    }

    /// Every touched page as (page number, NUMA vector), in no particular order.
    pub fn pages(&self) -> impl Iterator<Item = (u64, Vec<u32>)> + '_ {
        let mut all = Vec::with_capacity(self.tracked_pages() as usize);
        self.for_each_page(|p, nv| all.push((p, nv.to_vec())));
        all.into_iter()
    }

    /// Calls `f` with every touched page's number and NUMA vector, in [`Self::pages`]'
    /// order, with no vector allocated per page: for the end-of-run metrics and model
    /// file, which visit every page of a run (27 k for `stencil1d 8 1680`).
    pub fn for_each_page(&self, mut f: impl FnMut(u64, &[u32])) {
        let n = self.cfg.nodes;
        let mut nv = vec![0u32; n];
        for (g, &key) in self.keys.iter().enumerate() {
            let mut bits = self.touched[g];
            while bits != 0 {
                let s = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let p = (g * GROUP_PAGES as usize + s) * n;
                let v: &[u32] = match &self.nv {
                    Nv::Narrow(v) => {
                        nv.iter_mut()
                            .zip(&v[p..p + n])
                            .for_each(|(d, &c)| *d = c as u32);
                        &nv
                    }
                    Nv::Wide(v) => &v[p..p + n],
                };
                f(key * GROUP_PAGES + s as u64, v);
            }
        }
    }

    /// Pages touched at least once.
    pub fn tracked_pages(&self) -> u64 {
        self.touched.iter().map(|b| b.count_ones() as u64).sum()
    }

    /// Heap bytes the table holds (capacity, not length, and the hash index).
    pub fn memory_bytes(&self) -> usize {
        let nv = match &self.nv {
            Nv::Narrow(v) => v.capacity() * 2,
            Nv::Wide(v) => v.capacity() * 4,
        };
        // hashbrown: key + value per bucket plus one control byte.
        let index = self.index.capacity() * (8 + 4 + 1) + RECENT * 16;
        nv + self.sbv.capacity() * 2
            + self.whole.capacity() * 4
            + index
            + (self.keys.capacity() + self.touched.capacity()) * 8
    }
}

/// Moves `thread` to the MRU slot, shifting the others towards LRU and dropping the LRU
/// one if `thread` was not present (kMAF §3.2). Returns whether it was present.
#[inline(always)]
pub(crate) fn promote(slots: &mut [u16], thread: u16) -> bool {
    if let [s0, s1] = slots {
        // kMAF's K = 2 without branches: on random sharing they would be mispredicted.
        let (a, b) = (*s0, *s1);
        *s1 = if a == thread { b } else { a };
        *s0 = thread;
        return a == thread || b == thread;
    }
    // Carry each sharer one slot towards LRU until the thread's old slot (or the end).
    if slots[0] == thread {
        return true;
    }
    let mut carry = thread;
    for s in slots.iter_mut() {
        let old = std::mem::replace(s, carry);
        if old == thread {
            return true;
        }
        carry = old;
    }
    false
}

/// Adds `thread` to a sharer bitset. Returns whether it was already there.
#[inline(always)]
pub(crate) fn join(bits: &mut [u16], thread: u16) -> bool {
    let (w, b) = (thread as usize / 16, 1u16 << (thread % 16));
    let was = bits[w] & b != 0;
    bits[w] |= b;
    was
}

/// Calls `f(u)` for each thread u in a sharer bitset except `skip`; returns whether there
/// was any.
#[inline(always)]
pub(crate) fn each_member(bits: &[u16], skip: u16, mut f: impl FnMut(usize)) -> bool {
    let mut any = false;
    for (w, &word) in bits.iter().enumerate() {
        let mut x = word;
        if w == skip as usize / 16 {
            x &= !(1u16 << (skip % 16));
        }
        while x != 0 {
            any = true;
            f(w * 16 + x.trailing_zeros() as usize);
            x &= x - 1;
        }
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharer_counts_parse() {
        assert_eq!("all".parse(), Ok(Sharers::All));
        assert_eq!("ALL".parse(), Ok(Sharers::All));
        assert_eq!("2".parse(), Ok(Sharers::Last(2)));
        assert_eq!("64".parse(), Ok(Sharers::Last(64)));
        assert!("0".parse::<Sharers>().is_err());
        assert!("65".parse::<Sharers>().is_err());
        let err = "two".parse::<Sharers>().unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid sharer count \"two\": give a number from 1 to 64, or all"
        );
    }

    #[test]
    fn promote_keeps_mru_to_lru_order() {
        let mut s = [EMPTY; 3];
        assert!(!promote(&mut s, 4));
        assert!(!promote(&mut s, 5));
        assert_eq!(s, [5, 4, EMPTY]);
        assert!(!promote(&mut s, 6));
        assert!(promote(&mut s, 4));
        assert_eq!(s, [4, 6, 5]);
        assert!(!promote(&mut s, 7));
        assert_eq!(s, [7, 4, 6], "the LRU thread 5 was dropped");
    }

    #[test]
    fn eq7_entry_size_of_the_paper_configuration() {
        // 2-byte counters × 4 nodes + 4 sub-blocks × 2 bytes × 2 sharers = 24 bytes.
        assert_eq!(TableConfig::page_faults(4).entry_bytes(), 24);
    }

    #[test]
    fn narrow_counters_halve_instead_of_overflowing() {
        let mut t = AffinityTable::new(TableConfig::page_faults(2)).unwrap();
        for _ in 0..u16::MAX {
            t.touch(0, 0, 0x1000);
        }
        t.touch(0, 1, 0x1000);
        t.touch(0, 0, 0x1000);
        // [65535, 1] halves to [32767, 0] before the increment.
        assert_eq!(t.nv(0x1000).unwrap(), vec![32768, 0]);
    }

    #[test]
    fn pages_in_distant_groups_are_kept_apart() {
        let mut t = AffinityTable::new(TableConfig::exact(2)).unwrap();
        t.touch(1, 1, 0x7fff_0000_0040);
        t.touch(2, 0, 0x40);
        assert_eq!(t.nv(0x7fff_0000_0000).unwrap(), vec![0, 1]);
        assert_eq!(t.sharers(0x7fff_0000_0044).unwrap(), vec![1]);
        assert_eq!(t.sharers(0x44).unwrap(), vec![2]);
        assert_eq!(t.nv(0x2000), None);
        assert_eq!(t.tracked_pages(), 2);
        let mut pages: Vec<u64> = t.pages().map(|p| p.0).collect();
        pages.sort();
        assert_eq!(pages, vec![0, 0x7fff_0000_0000 >> 12]);
    }
}
