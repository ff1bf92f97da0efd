//! One set-associative cache with true LRU replacement, holding line numbers and a
//! 2-bit coherence state per line.
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
    fn from_bits(b: u64) -> State {
        match b & 3 {
            1 => State::Shared,
            2 => State::Exclusive,
            _ => State::Modified,
        }
    }
}

/// An empty slot: no tag is 0, as a slot holds the line number plus one.
const EMPTY: u64 = 0;

/// Slots per 4 KiB host page.
const PAGE_WORDS: usize = 4096 / 8;

/// Host pages above which a cache's pages are written on first use, not at creation.
const LAZY_PAGES: usize = 64;

/// The word a slot holds for `line` in state `st`.
#[inline(always)]
fn slot(line: u64, st: State) -> u64 {
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
fn move_to_front(set: &mut [u64], v: u64) {
    for i in (1..set.len()).rev() {
        set[i] = set[i - 1];
    }
    set[0] = v;
}

/// A set-associative LRU cache of line numbers.
#[derive(Debug, Clone)]
pub struct Cache {
    sets: usize,
    ways: usize,
    mask: Option<usize>,
    slots: Vec<u64>,
    /// For a cache of more than [`LAZY_PAGES`] host pages, one bit per page of `slots`:
    /// whether it was written (see `new`). Empty for a smaller cache.
    written: Vec<u64>,
}

impl Cache {
    /// A cache of `size` bytes with `line`-byte lines and `ways` ways (capped to the
    /// line count, so tiny test caches stay valid).
    pub fn new(size: u64, line: u64, ways: u32) -> Self {
        let lines = (size / line.max(1)).max(1) as usize;
        let ways = (ways.max(1) as usize).min(lines);
        let sets = (lines / ways).max(1);
        let mask = sets.is_power_of_two().then_some(sets - 1);
        let mut c = Cache {
            sets,
            ways,
            mask,
            slots: vec![EMPTY; sets * ways],
            written: Vec::new(),
        };
        // A host page first read (a lookup) maps the shared zero page, and the insert
        // that follows faults again to copy it, flushing the TLBs of every CPU the
        // replay's threads run on: 8 % of the CPU time on the alltoall bench trace. A page
        // written first faults once, with no flush. So a small cache has each page
        // written now; a large one (a shared cache, mostly untouched on a small trace)
        // each page just before its first use. black_box keeps the compiler from
        // dropping a zero stored on zeroes.
        let pages = (c.slots.len() * 8).div_ceil(4096) + 1;
        if pages > LAZY_PAGES {
            c.written = vec![0; pages.div_ceil(64)];
        } else if let Some(last) = c.slots.len().checked_sub(1) {
            for i in (0..=last).step_by(PAGE_WORDS).chain([last]) {
                c.slots[i] = std::hint::black_box(EMPTY);
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
        let start = self.slots.as_ptr() as usize;
        for i in [base, base + self.ways - 1] {
            let page = (start + i * 8) / 4096 - start / 4096;
            let (w, bit) = (page / 64, 1u64 << (page % 64));
            if self.written[w] & bit == 0 {
                self.written[w] |= bit;
                // Nothing wrote the page yet: the slot is EMPTY.
                self.slots[i] = std::hint::black_box(EMPTY);
            }
        }
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
    fn base(&self, line: u64) -> usize {
        let set = match self.mask {
            Some(m) => line as usize & m,
            None => (line % self.sets as u64) as usize,
        };
        set * self.ways
    }

    #[inline(always)]
    fn find(&self, base: usize, line: u64) -> Option<usize> {
        // EMPTY >> 2 is 0, below any line number plus one, so empty slots never match
        // (addresses have at most 64 - 6 line bits, so the plus one cannot overflow).
        let tag = line + 1;
        self.slots[base..base + self.ways]
            .iter()
            .position(|&s| s >> 2 == tag)
    }

    /// Looks a line up; on a hit, makes it the most recent and returns its state.
    #[inline(always)]
    pub fn lookup(&mut self, line: u64) -> Option<State> {
        let base = self.base(line);
        self.touch(base);
        let first = self.slots[base];
        if first >> 2 == line + 1 {
            return Some(State::from_bits(first));
        }
        let k = self.find(base, line)?;
        let hit = self.slots[base + k];
        move_to_front(&mut self.slots[base..=base + k], hit);
        Some(State::from_bits(hit))
    }

    /// The state of a line without touching recency.
    pub fn peek(&self, line: u64) -> Option<State> {
        let base = self.base(line);
        self.find(base, line)
            .map(|k| State::from_bits(self.slots[base + k]))
    }

    /// Changes a present line's state; returns false when the line is absent.
    pub fn set_state(&mut self, line: u64, state: State) -> bool {
        let base = self.base(line);
        self.touch(base);
        match self.find(base, line) {
            Some(k) => {
                self.slots[base + k] = slot(line, state);
                true
            }
            None => false,
        }
    }

    /// Inserts an absent line as the most recent; returns the evicted line and its state.
    pub fn insert(&mut self, line: u64, state: State) -> Option<(u64, State)> {
        let base = self.base(line);
        self.touch(base);
        let last = self.slots[base + self.ways - 1];
        move_to_front(&mut self.slots[base..base + self.ways], slot(line, state));
        (last != EMPTY).then(|| (line_of(last), State::from_bits(last)))
    }

    /// Removes a line; returns its state if it was present.
    pub fn remove(&mut self, line: u64) -> Option<State> {
        let base = self.base(line);
        self.touch(base);
        let k = self.find(base, line)?;
        let state = State::from_bits(self.slots[base + k]);
        for i in base + k..base + self.ways - 1 {
            self.slots[i] = self.slots[i + 1];
        }
        self.slots[base + self.ways - 1] = EMPTY;
        Some(state)
    }

    /// Every line held and its state (for consistency checks).
    pub fn entries(&self) -> impl Iterator<Item = (u64, State)> + '_ {
        self.slots
            .iter()
            .filter(|&&s| s != EMPTY)
            .map(|&s| (line_of(s), State::from_bits(s)))
    }

    /// Removes every line.
    pub fn clear(&mut self) {
        self.slots.fill(EMPTY);
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
        assert_eq!(c.lookup(0), None);
        assert_eq!(c.insert(0, State::Exclusive), None);
        assert_eq!(c.insert(2, State::Shared), None);
        assert_eq!(
            c.insert(1, State::Shared),
            None,
            "line 1 is in the other set"
        );
        // Touch 0 so that 2 becomes the least recent.
        assert_eq!(c.lookup(0), Some(State::Exclusive));
        assert_eq!(c.insert(4, State::Modified), Some((2, State::Shared)));
        assert_eq!(c.peek(0), Some(State::Exclusive));
        assert_eq!(c.peek(2), None);
        assert_eq!(c.insert(6, State::Shared), Some((0, State::Exclusive)));
    }

    /// A shared cache's pages are written on first use: the same answers as a cache
    /// written whole, through every operation, on sets across many host pages.
    #[test]
    fn a_lazily_written_cache_behaves_as_one_written_whole() {
        let mut lazy = Cache::new(8 << 20, 64, 16);
        assert!(!lazy.written.is_empty(), "8 MiB is written lazily");
        let mut whole = lazy.clone();
        whole.written.clear();
        let mut rng = crate::SplitMix64::new(11);
        for step in 0..50_000 {
            let line = rng.below(400_000) as u64;
            let st = [State::Shared, State::Exclusive, State::Modified][rng.below(3)];
            match rng.below(4) {
                0 => assert_eq!(lazy.lookup(line), whole.lookup(line), "{step}"),
                1 => assert_eq!(lazy.insert(line, st), whole.insert(line, st), "{step}"),
                2 => assert_eq!(lazy.remove(line), whole.remove(line), "{step}"),
                _ => assert_eq!(lazy.set_state(line, st), whole.set_state(line, st)),
            }
        }
        assert_eq!(lazy.slots, whole.slots);
    }

    #[test]
    fn state_changes_and_removal() {
        let mut c = Cache::new(4 * 64, 64, 2);
        c.insert(8, State::Shared);
        assert!(c.set_state(8, State::Modified));
        assert_eq!(c.lookup(8), Some(State::Modified));
        assert!(!c.set_state(10, State::Shared));
        assert_eq!(c.remove(8), Some(State::Modified));
        assert_eq!(c.remove(8), None);
        assert_eq!(c.lookup(8), None);
    }
}
