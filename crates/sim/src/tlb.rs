//! The cores' TLBs: set-associative, LRU, and with SAMMU's access counter (AC) and thread
//! ID beside each entry (the "TLB access table" of SAMMU §2.2 and §2.6.1).
//!
//! Each entry also caches the home of its page, so a TLB hit needs no page-table lookup.
//! Entries are tagged by thread: SMT siblings sharing a core's TLB hold separate entries
//! for a page they both use, each with its own counter, as SAMMU's per-entry thread ID
//! requires (the sibling's first access walks the page table instead of hitting).

/// One TLB entry with its SAMMU fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlbEntry {
    /// Virtual page number.
    pub page: u64,
    /// The page's home as the memory system knows it: the node it lives on (in a shared
    /// replay of several static policies, its row in their table of homes).
    pub home: u32,
    /// The thread whose accesses the AC counts.
    pub thread: u32,
    /// SAMMU's access counter: accesses to the page through this entry.
    pub ac: u32,
}

const EMPTY: u64 = u64::MAX;

/// Moves a set's last entry first, shifting the others down by one. Sets are a few ways
/// long, so a plain loop beats `rotate_right`, which calls memmove (seen in profiles).
#[inline]
fn move_to_front(set: &mut [TlbEntry]) {
    let Some(&last) = set.last() else { return };
    for i in (1..set.len()).rev() {
        set[i] = set[i - 1];
    }
    set[0] = last;
}

/// The set-associative LRU TLBs of every core, in one array: core `c`'s sets follow
/// core `c - 1`'s, so a lookup finds its set from the core and the page alone, with no
/// per-core structure to load on the way (every access looks up a TLB).
#[derive(Debug, Clone)]
pub struct Tlb {
    ways: usize,
    mask: usize,
    /// log2 of the sets per core.
    set_bits: u32,
    slots: Vec<TlbEntry>,
}

impl Tlb {
    /// The TLBs of `cores` cores, each of `entries` entries and `ways` ways; the set count
    /// is rounded down to a power of two.
    pub fn new(cores: usize, entries: u32, ways: u32) -> Self {
        let ways = ways.clamp(1, entries.max(1)) as usize;
        let sets = ((entries.max(1) as usize) / ways).max(1);
        let set_bits = usize::BITS - 1 - sets.leading_zeros();
        let empty = TlbEntry {
            page: EMPTY,
            home: 0,
            thread: 0,
            ac: 0,
        };
        Tlb {
            ways,
            mask: (1 << set_bits) - 1,
            set_bits,
            slots: vec![empty; (cores << set_bits) * ways],
        }
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        (self.slots.len() / self.ways) >> self.set_bits
    }

    #[inline(always)]
    fn base(&self, core: usize, page: u64) -> usize {
        ((core << self.set_bits) | (page as usize & self.mask)) * self.ways
    }

    /// Looks up a thread's entry for a page in a core's TLB; on a hit, makes it the most
    /// recent.
    #[inline(always)]
    pub fn lookup(&mut self, core: usize, page: u64, thread: u32) -> Option<&mut TlbEntry> {
        let base = self.base(core, page);
        let first = &self.slots[base];
        if first.page == page && first.thread == thread {
            return Some(&mut self.slots[base]);
        }
        let k = self.slots[base..base + self.ways]
            .iter()
            .position(|e| e.page == page && e.thread == thread)?;
        move_to_front(&mut self.slots[base..=base + k]);
        Some(&mut self.slots[base])
    }

    /// Inserts an absent page in a core's TLB as the most recent; returns the evicted
    /// entry.
    pub fn insert(&mut self, core: usize, e: TlbEntry) -> Option<TlbEntry> {
        let base = self.base(core, e.page);
        let last = self.slots[base + self.ways - 1];
        move_to_front(&mut self.slots[base..base + self.ways]);
        self.slots[base] = e;
        (last.page != EMPTY).then_some(last)
    }

    /// Removes one entry of a page from a core's TLB; returns it if there was one.
    pub fn remove(&mut self, core: usize, page: u64) -> Option<TlbEntry> {
        let base = self.base(core, page);
        let k = self.slots[base..base + self.ways]
            .iter()
            .position(|e| e.page == page)?;
        let e = self.slots[base + k];
        self.slots[base + k..base + self.ways].rotate_left(1);
        self.slots[base + self.ways - 1].page = EMPTY;
        Some(e)
    }

    /// A shootdown: removes every entry of a page, of every thread, from every core.
    pub fn shoot_down(&mut self, page: u64) {
        for core in 0..self.cores() {
            while self.remove(core, page).is_some() {}
        }
    }

    /// Core `to`'s TLB becomes a copy of core `core`'s in `from` (of the same geometry).
    pub(crate) fn copy_bank(&mut self, to: usize, from: &Tlb, core: usize) {
        let per_core = self.ways << self.set_bits;
        let src = &from.slots[core * per_core..(core + 1) * per_core];
        self.slots[to * per_core..(to + 1) * per_core].copy_from_slice(src);
    }

    /// Maps every entry's home through `f` (a shared replay that splits).
    pub(crate) fn rehome(&mut self, f: impl Fn(u32) -> u32) {
        for e in self.slots.iter_mut().filter(|e| e.page != EMPTY) {
            e.home = f(e.home);
        }
    }

    /// Empties a core's TLB, returning the entries it held.
    pub fn flush(&mut self, core: usize) -> Vec<TlbEntry> {
        let per_core = self.ways << self.set_bits;
        let mine = &mut self.slots[core * per_core..(core + 1) * per_core];
        let out = mine.iter().filter(|e| e.page != EMPTY).copied().collect();
        for e in mine {
            e.page = EMPTY;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(page: u64) -> TlbEntry {
        TlbEntry {
            page,
            home: 0,
            thread: 0,
            ac: 0,
        }
    }

    #[test]
    fn sixty_four_entries_four_ways_is_sixteen_sets_with_lru() {
        let mut t = Tlb::new(2, 64, 4);
        // Pages 0, 16, 32, 48 fill set 0 of core 1; 64 evicts the least recent.
        for p in [0, 16, 32, 48] {
            assert_eq!(t.insert(1, entry(p)), None);
        }
        t.lookup(1, 0, 0).unwrap().ac += 5;
        assert_eq!(t.insert(1, entry(64)).map(|e| e.page), Some(16));
        assert_eq!(t.lookup(1, 0, 0).map(|e| e.ac), Some(5));
        assert!(
            t.lookup(1, 0, 1).is_none(),
            "another thread has its own entry"
        );
        assert!(t.lookup(0, 0, 0).is_none(), "core 0 has a TLB of its own");
        assert!(t.lookup(1, 16, 0).is_none());
        assert_eq!(t.remove(1, 32).map(|e| e.page), Some(32));
        assert_eq!(t.insert(0, entry(32)), None);
        assert_eq!(t.flush(1).len(), 3);
        assert!(t.lookup(1, 0, 0).is_none());
        assert_eq!(t.cores(), 2);
        t.shoot_down(32);
        assert_eq!(t.flush(0).len(), 0, "the shootdown reached core 0");
    }
}
