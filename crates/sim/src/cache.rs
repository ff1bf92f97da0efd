//! Set-associative caches with true LRU replacement, holding line numbers and a 2-bit
//! coherence state per line: one [`Cache`] holds a bank per core (the private levels) or
//! per domain (the shared level), alike, in one array, so that an access finds its set
//! from the bank and the line alone, with no per-core structure to load on the way.
//!
//! Each set is kept in recency order (most recent first), so a hit on the most recent
//! line, the common case, costs one compare; tag and state share one word. An empty slot
//! is 0, so a new cache is zeroed memory that the OS maps lazily: a run that touches a
//! few sets of an 18 MiB cache does not write all of it, once for each of the dozen or
//! more policies that `tdmap sim` replays at once.

/// A line's coherence state in a private cache (MESI; invalid lines are simply absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// Clean, maybe held by other caches.
    Shared = 1,
    /// Clean and held by no other private cache.
    Exclusive = 2,
    /// Dirty and held by no other private cache.
    Modified = 3,
}

impl State {
    /// The state in a slot's two low bits (see `slot`).
    #[inline(always)]
    pub(crate) fn from_bits(b: u64) -> State {
        // A table, not a match: a hit's state is a load, with no branch on it.
        const OF_BITS: [State; 4] = [
            State::Modified,
            State::Shared,
            State::Exclusive,
            State::Modified,
        ];
        OF_BITS[(b & 3) as usize]
    }
}

/// What a slot of a [`Cache`] holds: a line's tag, 0 when empty, and what goes with it.
/// A plain cache holds one word, tag and MESI state together; a lockstep group's private
/// caches (`lanes`) hold the tag and a state per replay.
pub trait Word: Copy + PartialEq + std::fmt::Debug {
    /// An empty slot (a tag of 0).
    const EMPTY: Self;
    /// The line number plus one; 0 for an empty slot.
    fn tag(self) -> u64;
}

impl Word for u64 {
    const EMPTY: u64 = 0;
    #[inline(always)]
    fn tag(self) -> u64 {
        self >> 2
    }
}

/// Slots per 4 KiB host page.
const fn page_words<W>() -> usize {
    4096 / std::mem::size_of::<W>()
}

/// Host pages above which a cache's pages are written on first use, not at creation.
const LAZY_PAGES: usize = 64;

/// The word a slot holds for `line` in state `st`.
#[inline(always)]
pub(crate) fn slot(line: u64, st: State) -> u64 {
    (line + 1) << 2 | st as u64
}

/// The line a non-empty slot holds.
#[inline(always)]
fn line_of(s: u64) -> u64 {
    (s >> 2) - 1
}

/// Shifts a set's prefix down by one and puts `v` first. Sets are a few ways long, so a
/// plain loop beats `rotate_right`, which calls memmove.
#[inline]
fn move_to_front<W: Copy>(set: &mut [W], v: W) {
    for i in (1..set.len()).rev() {
        set[i] = set[i - 1];
    }
    set[0] = v;
}

/// Banks of set-associative LRU caches of line numbers, each bank a cache of its own.
#[derive(Debug)]
pub struct Cache<W = u64> {
    sets: usize,
    ways: usize,
    mask: Option<usize>,
    /// Slots per bank.
    bank_slots: usize,
    slots: Vec<W>,
    /// For banks of more than [`LAZY_PAGES`] host pages each, one bit per page of
    /// `slots`: whether it was written (see `new`). Empty for smaller banks.
    written: Vec<u64>,
}

/// A copy writes every slot, so it has no page left to write lazily; and its pages sit
/// elsewhere in the host's memory, so the original's record of written pages would not
/// fit them (a slot of a copied line, on a page the record said unwritten, was cleared
/// on its set's next use: a shared replay's forks lost lines, by the heap's layout).
impl<W: Clone> Clone for Cache<W> {
    fn clone(&self) -> Self {
        Cache {
            sets: self.sets,
            ways: self.ways,
            mask: self.mask,
            bank_slots: self.bank_slots,
            slots: self.slots.clone(),
            written: Vec::new(),
        }
    }
}

impl Cache {
    /// One cache of `size` bytes with `line`-byte lines and `ways` ways (capped to the
    /// line count, so tiny test caches stay valid).
    pub fn new(size: u64, line: u64, ways: u32) -> Self {
        Cache::banks(1, size, line, ways)
    }
}

impl<W: Word> Cache<W> {
    /// No cache at all (a level the machine lacks): zero banks.
    pub fn none() -> Self {
        Cache {
            sets: 1,
            ways: 1,
            mask: Some(0),
            bank_slots: 1,
            slots: Vec::new(),
            written: Vec::new(),
        }
    }

    /// Whether there is no bank ([`Cache::none`]).
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// `banks` caches, each as [`Cache::new`] makes one.
    pub fn banks(banks: usize, size: u64, line: u64, ways: u32) -> Self {
        let lines = (size / line.max(1)).max(1) as usize;
        let ways = (ways.max(1) as usize).min(lines);
        let sets = (lines / ways).max(1);
        let mask = sets.is_power_of_two().then_some(sets - 1);
        let mut c = Cache {
            sets,
            ways,
            mask,
            bank_slots: sets * ways,
            slots: vec![W::EMPTY; banks * sets * ways],
            written: Vec::new(),
        };
        // A host page first read (a lookup) maps the shared zero page, and the insert
        // that follows faults again to copy it, flushing the TLBs of every CPU the
        // replay's threads run on: 8 % of the CPU time on the alltoall bench trace. A page
        // written first faults once, with no flush. So a small cache has each page
        // written now; a large one (a shared cache, mostly untouched on a small trace)
        // each page just before its first use. black_box keeps the compiler from
        // dropping a zero stored on zeroes.
        let per_page = page_words::<W>();
        let pages = c.slots.len().div_ceil(per_page) + 1;
        if c.bank_slots.div_ceil(per_page) + 1 > LAZY_PAGES {
            c.written = vec![0; pages.div_ceil(64)];
        } else if let Some(last) = c.slots.len().checked_sub(1) {
            for i in (0..=last).step_by(per_page).chain([last]) {
                c.slots[i] = std::hint::black_box(W::EMPTY);
            }
        }
        c
    }

    /// Writes the host pages of the set at `base` if they never were (see `new`).
    #[inline(always)]
    fn touch(&mut self, base: usize) {
        if !self.written.is_empty() {
            self.touch_lazy(base);
        }
    }

    fn touch_lazy(&mut self, base: usize) {
        let size = std::mem::size_of::<W>();
        let start = self.slots.as_ptr() as usize;
        for i in [base, base + self.ways - 1] {
            let page = (start + i * size) / 4096 - start / 4096;
            let (w, bit) = (page / 64, 1u64 << (page % 64));
            if self.written[w] & bit == 0 {
                self.written[w] |= bit;
                // Nothing wrote the page yet: the slot is EMPTY.
                self.slots[i] = std::hint::black_box(W::EMPTY);
            }
        }
    }

    /// Number of banks.
    pub fn bank_count(&self) -> usize {
        self.slots.len() / self.bank_slots
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.sets
    }

    /// Number of ways.
    pub fn ways(&self) -> usize {
        self.ways
    }

    #[inline(always)]
    fn base(&self, bank: usize, line: u64) -> usize {
        let set = match self.mask {
            Some(m) => line as usize & m,
            None => (line % self.sets as u64) as usize,
        };
        bank * self.bank_slots + set * self.ways
    }

    #[inline(always)]
    fn find(&self, base: usize, line: u64) -> Option<usize> {
        // An empty slot's tag is 0, below any line number plus one, so empty slots never
        // match (addresses have at most 64 - 6 line bits, so the plus one cannot overflow).
        let tag = line + 1;
        self.slots[base..base + self.ways]
            .iter()
            .position(|&s| s.tag() == tag)
    }

    /// Looks a line up; on a hit, makes it the most recent and returns its slot.
    #[inline(always)]
    pub fn lookup_word(&mut self, bank: usize, line: u64) -> Option<W> {
        let base = self.base(bank, line);
        self.touch(base);
        let first = self.slots[base];
        if first.tag() == line + 1 {
            return Some(first);
        }
        // Two lines of a set used in turn (a loop reading one array and writing another
        // that maps to the same sets): the hit is second most recent, a swap.
        if self.ways > 1 && self.slots[base + 1].tag() == line + 1 {
            let hit = self.slots[base + 1];
            self.slots[base + 1] = first;
            self.slots[base] = hit;
            return Some(hit);
        }
        let k = self.find(base, line)?;
        let hit = self.slots[base + k];
        move_to_front(&mut self.slots[base..=base + k], hit);
        Some(hit)
    }

    /// A line's slot without touching recency.
    pub fn peek_word(&self, bank: usize, line: u64) -> Option<W> {
        let base = self.base(bank, line);
        self.find(base, line).map(|k| self.slots[base + k])
    }

    /// A present line's slot, to change what goes with its tag (not the tag itself).
    pub fn word_mut(&mut self, bank: usize, line: u64) -> Option<&mut W> {
        let base = self.base(bank, line);
        self.touch(base);
        let k = self.find(base, line)?;
        Some(&mut self.slots[base + k])
    }

    /// Inserts an absent line's slot `w` as the most recent; returns the evicted slot.
    pub fn insert_word(&mut self, bank: usize, line: u64, w: W) -> Option<W> {
        let base = self.base(bank, line);
        self.touch(base);
        let last = self.slots[base + self.ways - 1];
        move_to_front(&mut self.slots[base..base + self.ways], w);
        (last != W::EMPTY).then_some(last)
    }

    /// Removes a line; returns its slot if it was present.
    pub fn remove_word(&mut self, bank: usize, line: u64) -> Option<W> {
        let base = self.base(bank, line);
        self.touch(base);
        let k = self.find(base, line)?;
        let w = self.slots[base + k];
        for i in base + k..base + self.ways - 1 {
            self.slots[i] = self.slots[i + 1];
        }
        self.slots[base + self.ways - 1] = W::EMPTY;
        Some(w)
    }

    /// Every non-empty slot of a bank.
    pub fn words(&self, bank: usize) -> impl Iterator<Item = W> + '_ {
        self.slots[bank * self.bank_slots..(bank + 1) * self.bank_slots]
            .iter()
            .filter(|&&s| s != W::EMPTY)
            .copied()
    }

    /// Removes every line of every bank.
    pub fn clear(&mut self) {
        self.slots.fill(W::EMPTY);
    }

    /// Bank `to` becomes a copy of bank `bank` of `from` (of the same geometry), each
    /// slot through `f`, in the same places and LRU order.
    pub(crate) fn copy_bank<V: Word>(
        &mut self,
        to: usize,
        from: &Cache<V>,
        bank: usize,
        f: impl Fn(V) -> W,
    ) {
        debug_assert_eq!((self.sets, self.ways), (from.sets, from.ways));
        let n = self.bank_slots;
        let src = &from.slots[bank * n..(bank + 1) * n];
        for (d, &s) in self.slots[to * n..(to + 1) * n].iter_mut().zip(src) {
            *d = if s == V::EMPTY { W::EMPTY } else { f(s) };
        }
        // Every page of the bank was written: no lazy write may clear it later.
        self.written.clear();
    }

    /// Changes every non-empty slot through `f`, its tag unchanged.
    pub(crate) fn map_words(&mut self, f: impl Fn(W) -> W) {
        for s in self.slots.iter_mut().filter(|s| **s != W::EMPTY) {
            *s = f(*s);
        }
    }
}

/// A plain cache: each slot holds its line's MESI state.
impl Cache<u64> {
    /// Looks a line up; on a hit, makes it the most recent and returns its state.
    #[inline(always)]
    pub fn lookup(&mut self, bank: usize, line: u64) -> Option<State> {
        self.lookup_word(bank, line).map(State::from_bits)
    }

    /// The state of a line without touching recency.
    pub fn peek(&self, bank: usize, line: u64) -> Option<State> {
        self.peek_word(bank, line).map(State::from_bits)
    }

    /// Changes a present line's state; returns false when the line is absent.
    pub fn set_state(&mut self, bank: usize, line: u64, state: State) -> bool {
        match self.word_mut(bank, line) {
            Some(w) => {
                *w = slot(line, state);
                true
            }
            None => false,
        }
    }

    /// Inserts an absent line as the most recent; returns the evicted line and its state.
    pub fn insert(&mut self, bank: usize, line: u64, state: State) -> Option<(u64, State)> {
        let last = self.insert_word(bank, line, slot(line, state))?;
        Some((line_of(last), State::from_bits(last)))
    }

    /// Removes a line; returns its state if it was present.
    pub fn remove(&mut self, bank: usize, line: u64) -> Option<State> {
        self.remove_word(bank, line).map(State::from_bits)
    }

    /// Every line a bank holds and its state (for consistency checks).
    pub fn entries(&self, bank: usize) -> impl Iterator<Item = (u64, State)> + '_ {
        self.words(bank).map(|s| (line_of(s), State::from_bits(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_from_size_line_and_ways() {
        let c = Cache::new(32 * 1024, 64, 8);
        assert_eq!((c.sets(), c.ways()), (64, 8));
        // 18 MiB, 16 ways: 18432 sets, not a power of two, indexed by modulo.
        let c = Cache::new(18 << 20, 64, 16);
        assert_eq!(c.sets(), 18432);
        assert_eq!(Cache::new(128, 64, 8).ways(), 2);
    }

    #[test]
    fn lru_evicts_the_least_recent_line_of_the_set() {
        // 2 sets x 2 ways: even lines map to set 0.
        let mut c = Cache::new(4 * 64, 64, 2);
        assert_eq!(c.lookup(0, 0), None);
        assert_eq!(c.insert(0, 0, State::Exclusive), None);
        assert_eq!(c.insert(0, 2, State::Shared), None);
        assert_eq!(
            c.insert(0, 1, State::Shared),
            None,
            "line 1 is in the other set"
        );
        // Touch 0 so that 2 becomes the least recent.
        assert_eq!(c.lookup(0, 0), Some(State::Exclusive));
        assert_eq!(c.insert(0, 4, State::Modified), Some((2, State::Shared)));
        assert_eq!(c.peek(0, 0), Some(State::Exclusive));
        assert_eq!(c.peek(0, 2), None);
        assert_eq!(c.insert(0, 6, State::Shared), Some((0, State::Exclusive)));
    }

    /// A shared cache's pages are written on first use: the same answers as a cache
    /// written whole, through every operation, on sets across many host pages and banks.
    #[test]
    fn a_lazily_written_cache_behaves_as_one_written_whole() {
        let mut lazy = Cache::banks(3, 8 << 20, 64, 16);
        assert!(!lazy.written.is_empty(), "8 MiB is written lazily");
        let mut whole = lazy.clone();
        whole.written.clear();
        let mut rng = crate::SplitMix64::new(11);
        for step in 0..50_000 {
            let (b, line) = (rng.below(3), rng.below(400_000) as u64);
            let st = [State::Shared, State::Exclusive, State::Modified][rng.below(3)];
            match rng.below(4) {
                0 => assert_eq!(lazy.lookup(b, line), whole.lookup(b, line), "{step}"),
                1 => assert_eq!(
                    lazy.insert(b, line, st),
                    whole.insert(b, line, st),
                    "{step}"
                ),
                2 => assert_eq!(lazy.remove(b, line), whole.remove(b, line), "{step}"),
                _ => assert_eq!(lazy.set_state(b, line, st), whole.set_state(b, line, st)),
            }
        }
        assert_eq!(lazy.slots, whole.slots);
    }

    /// A copy of a lazily written cache keeps no record of unwritten pages: the copy's
    /// pages do not sit where the original's did, so the original's record would not fit
    /// them, and the copy wrote every slot anyway. Kept, it had a copied line cleared on
    /// its set's first use when the heap put the copy at another page offset (a shared
    /// replay's forks lost lines, now and then); which offset the heap gives cannot be
    /// forced here, so this checks the record, then that the copy answers alike.
    #[test]
    fn a_copy_of_a_lazily_written_cache_keeps_no_record_of_unwritten_pages() {
        let mut lazy = Cache::banks(2, 4 << 20, 64, 16);
        let lines: Vec<(usize, u64)> = (0..5_000u64).map(|i| ((i % 2) as usize, i * 997)).collect();
        for &(b, line) in &lines {
            lazy.insert(b, line, State::Exclusive);
        }
        let mut copy = lazy.clone();
        assert!(!lazy.written.is_empty() && copy.written.is_empty());
        for &(b, line) in &lines {
            assert_eq!(copy.lookup(b, line), lazy.lookup(b, line));
        }
        assert_eq!(copy.slots, lazy.slots);
    }

    /// Banks are caches of their own: the same operations on a line in bank 1 and on
    /// another in bank 0 of the same set give what two separate caches give.
    #[test]
    fn each_bank_is_a_cache_of_its_own() {
        let mut two = Cache::banks(2, 4 * 64, 64, 2);
        assert_eq!(two.bank_count(), 2);
        let (mut a, mut b) = (Cache::new(4 * 64, 64, 2), Cache::new(4 * 64, 64, 2));
        let mut rng = crate::SplitMix64::new(5);
        for step in 0..5_000 {
            let (bank, line) = (rng.below(2), rng.below(12) as u64);
            let one = if bank == 0 { &mut a } else { &mut b };
            let st = [State::Shared, State::Exclusive, State::Modified][rng.below(3)];
            match rng.below(3) {
                0 => assert_eq!(two.lookup(bank, line), one.lookup(0, line), "{step}"),
                1 if one.peek(0, line).is_none() => {
                    assert_eq!(
                        two.insert(bank, line, st),
                        one.insert(0, line, st),
                        "{step}"
                    )
                }
                _ => assert_eq!(two.remove(bank, line), one.remove(0, line), "{step}"),
            }
        }
        let held = |c: &Cache, bank| c.entries(bank).collect::<Vec<_>>();
        assert_eq!(held(&two, 0), held(&a, 0));
        assert_eq!(held(&two, 1), held(&b, 0));
        assert!(!held(&two, 1).is_empty());
    }

    #[test]
    fn state_changes_and_removal() {
        let mut c = Cache::new(4 * 64, 64, 2);
        c.insert(0, 8, State::Shared);
        assert!(c.set_state(0, 8, State::Modified));
        assert_eq!(c.lookup(0, 8), Some(State::Modified));
        assert!(!c.set_state(0, 10, State::Shared));
        assert_eq!(c.remove(0, 8), Some(State::Modified));
        assert_eq!(c.remove(0, 8), None);
        assert_eq!(c.lookup(0, 8), None);
    }
}
