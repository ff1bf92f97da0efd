//! The coherence directory's table: for each cached line, which private caches and
//! shared-cache domains hold it, and the node of its page (see `memsys`).
//!
//! Every private miss looks a line up here, so the table is built for that: open
//! addressing with linear probing, the key beside its entry in one 32-byte slot (one
//! cache miss per lookup where a general hash map takes two, control bytes then bucket),
//! a Fibonacci hash of the line number, and deletion by backward shift, so that no
//! tombstones lengthen the probes. It grows by doubling past half full.
//!
//! The hash keeps neighbours together: four consecutive lines hash alike and start their
//! probes in the four slots of one 128-byte-aligned group, which the host's adjacent-line
//! prefetch brings in together, so a program walking through memory finds the next
//! line's entry already in the host's cache (on the alltoall bench trace, a lookup here
//! was most of a miss's time).

/// Where a line is held, and where its memory lives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DirEntry {
    /// Cores whose outermost private cache holds the line.
    pub(crate) cores: u64,
    /// Shared-cache domains that hold the line.
    pub(crate) domains: u64,
    /// The NUMA node of the line's page (in a shared replay, its row in `Homes`).
    pub(crate) home: u32,
}

/// One slot: the line number plus one (0 when empty) and its entry.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    key: u64,
    entry: DirEntry,
}

/// Lines hashing alike, aligned as the host's prefetcher pairs cache lines.
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(128))]
struct Group([Slot; GROUP]);

/// Slots per [`Group`]: 4 x 32 bytes.
const GROUP: usize = 4;

/// Lines to their [`DirEntry`].
#[derive(Debug, Clone)]
pub(crate) struct Dir {
    groups: Vec<Group>,
    /// log2 of the slot count (at least 2, a group).
    bits: u32,
    len: usize,
}

impl Default for Dir {
    fn default() -> Self {
        Dir::with_bits(10)
    }
}

impl Dir {
    fn with_bits(bits: u32) -> Dir {
        Dir {
            groups: vec![Group::default(); (1 << bits) / GROUP],
            bits,
            len: 0,
        }
    }

    /// Number of slots.
    #[inline(always)]
    fn slots(&self) -> usize {
        self.groups.len() * GROUP
    }

    #[inline(always)]
    fn slot(&self, i: usize) -> &Slot {
        &self.groups[i / GROUP].0[i % GROUP]
    }

    #[inline(always)]
    fn slot_mut(&mut self, i: usize) -> &mut Slot {
        &mut self.groups[i / GROUP].0[i % GROUP]
    }

    /// The slot where a probe for `key` starts: its line's place in the group of its
    /// four-line block.
    #[inline(always)]
    fn home_slot(&self, key: u64) -> usize {
        let line = key - 1;
        // Fibonacci hashing: the top bits of the product spread consecutive blocks.
        let block = ((line / GROUP as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.bits))
            as usize;
        (block & !(GROUP - 1)) | (line % GROUP as u64) as usize
    }

    /// The slot holding `line`, or the empty slot where it would go.
    #[inline(always)]
    fn probe(&self, line: u64) -> (usize, bool) {
        let key = line + 1;
        let mask = self.slots() - 1;
        let mut i = self.home_slot(key);
        loop {
            let k = self.slot(i).key;
            if k == key {
                return (i, true);
            }
            if k == 0 {
                return (i, false);
            }
            i = (i + 1) & mask;
        }
    }

    /// Number of lines held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The entry of a line.
    #[inline]
    pub(crate) fn get(&self, line: u64) -> Option<DirEntry> {
        let (i, found) = self.probe(line);
        found.then(|| self.slot(i).entry)
    }

    /// The entry of a line, to change in place.
    #[inline]
    pub(crate) fn get_mut(&mut self, line: u64) -> Option<&mut DirEntry> {
        let (i, found) = self.probe(line);
        found.then(|| &mut self.slot_mut(i).entry)
    }

    /// Sets the entry of a line.
    #[inline]
    pub(crate) fn insert(&mut self, line: u64, entry: DirEntry) {
        let (i, found) = self.probe(line);
        if found {
            self.slot_mut(i).entry = entry;
            return;
        }
        *self.slot_mut(i) = Slot {
            key: line + 1,
            entry,
        };
        self.len += 1;
        if self.len * 2 > self.slots() {
            self.grow();
        }
    }

    /// Removes a line's entry and returns it.
    pub(crate) fn remove(&mut self, line: u64) -> Option<DirEntry> {
        let (mut hole, found) = self.probe(line);
        if !found {
            return None;
        }
        let gone = self.slot(hole).entry;
        self.len -= 1;
        // Backward shift: pull later slots of the run into the hole while their probe
        // started at or before it, so that every key stays reachable from its home.
        let mask = self.slots() - 1;
        let mut i = hole;
        loop {
            i = (i + 1) & mask;
            let k = self.slot(i).key;
            if k == 0 {
                break;
            }
            let home = self.home_slot(k);
            // Distance from home to i and to the hole, around the ring.
            if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(hole) & mask) {
                *self.slot_mut(hole) = *self.slot(i);
                hole = i;
            }
        }
        *self.slot_mut(hole) = Slot::default();
        Some(gone)
    }

    /// Maps every entry's home through `f` (a shared replay that splits).
    pub(crate) fn rehome(&mut self, f: impl Fn(u32) -> u32) {
        self.each_mut(|e| e.home = f(e.home));
    }

    /// Changes every entry through `f`, keys unchanged.
    pub(crate) fn each_mut(&mut self, mut f: impl FnMut(&mut DirEntry)) {
        for s in self.groups.iter_mut().flat_map(|g| g.0.iter_mut()) {
            if s.key != 0 {
                f(&mut s.entry);
            }
        }
    }

    /// Every line and its entry, in no particular order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, DirEntry)> + '_ {
        self.groups
            .iter()
            .flat_map(|g| g.0.iter())
            .filter(|s| s.key != 0)
            .map(|s| (s.key - 1, s.entry))
    }

    fn grow(&mut self) {
        let mut bigger = Dir::with_bits(self.bits + 1);
        for s in self.groups.iter().flat_map(|g| g.0.iter()) {
            if s.key != 0 {
                let (i, _) = bigger.probe(s.key - 1);
                *bigger.slot_mut(i) = *s;
            }
        }
        bigger.len = self.len;
        *self = bigger;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitMix64;
    use std::collections::HashMap;

    fn entry(v: u64) -> DirEntry {
        DirEntry {
            cores: v,
            domains: v >> 3,
            home: v as u32,
        }
    }

    /// Random inserts, updates and removals on a small key range (long probe runs and
    /// many backward shifts, across growths) agree with a HashMap at every step.
    #[test]
    fn agrees_with_a_hash_map_under_random_operations() {
        let mut rng = SplitMix64::new(7);
        let mut dir = Dir::default();
        let mut model: HashMap<u64, DirEntry> = HashMap::new();
        for step in 0..200_000u64 {
            // Keys clustered in runs, as cache lines are, plus a few far ones.
            let line = match rng.next_u64() % 8 {
                0 => rng.next_u64() >> 8,
                _ => rng.next_u64() % 5000,
            };
            match rng.next_u64() % 3 {
                0 => assert_eq!(dir.remove(line), model.remove(&line), "step {step}"),
                _ => {
                    dir.insert(line, entry(step));
                    model.insert(line, entry(step));
                }
            }
            assert_eq!(dir.get(line), model.get(&line).copied(), "step {step}");
        }
        assert_eq!(dir.len(), model.len());
        let mut all: Vec<(u64, DirEntry)> = dir.iter().collect();
        all.sort_by_key(|&(l, _)| l);
        let mut want: Vec<(u64, DirEntry)> = model.into_iter().collect();
        want.sort_by_key(|&(l, _)| l);
        assert_eq!(all, want);
    }
}
