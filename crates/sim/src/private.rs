//! The private levels (L1, L2) as the rest of the memory system (`outer`) sees them: a
//! bank's state of a line, changed, dropped, or filled. [`Levels`] are a replay's own
//! caches; a lockstep group's lanes (`lanes`) share the tags and keep a state per replay.

use crate::cache::{slot, Cache, State, Word};
use crate::machine::{CacheGeom, Machine};

/// What the coherence rules (`outer`) do to the private levels of bank `core`.
pub(crate) trait Private {
    /// The state of a line in the bank's outermost private level, if it holds it.
    fn state(&self, core: usize, line: u64) -> Option<State>;
    /// Changes a held line's state in every private level of the bank.
    fn set_state(&mut self, core: usize, line: u64, st: State);
    /// Drops the bank's copies of a line (its L1 and, if any, its L2).
    fn drop_line(&mut self, core: usize, line: u64);
    /// Installs an absent line in every private level; gives the outer level's victim,
    /// which leaves the bank (the L1's victim is still in the L2, so it leaves silently).
    fn fill(&mut self, core: usize, line: u64, st: State) -> Option<(u64, State)>;
}

/// The private caches of a replay, a bank per core, or of a lockstep group, a bank per
/// thread (`lanes`, whose slots hold a state per replay). The levels are inclusive: an L2
/// eviction removes the line from the L1.
#[derive(Debug, Clone)]
pub(crate) struct Levels<W = u64> {
    pub(crate) l1: Cache<W>,
    /// Empty ([`Cache::none`]) on a machine with one private level.
    pub(crate) l2: Cache<W>,
}

impl<W: Word> Levels<W> {
    /// Empty levels of `banks` banks with the geometry of the machine's private caches.
    pub(crate) fn new(m: &Machine, banks: usize) -> Self {
        let mk = |g: &CacheGeom| Cache::banks(banks, g.size, m.line, g.ways);
        Levels {
            l1: mk(&m.private[0]),
            l2: m.private.get(1).map_or_else(Cache::none, mk),
        }
    }

    /// The outermost private level: the one the directory tracks.
    pub(crate) fn outer(&self) -> &Cache<W> {
        if self.l2.is_empty() {
            &self.l1
        } else {
            &self.l2
        }
    }

    /// Installs an absent line's slot `w` in every level of bank `core`; gives the outer
    /// level's victim, which leaves the bank (the L1's victim is still in the L2, so it
    /// leaves silently).
    #[inline]
    pub(crate) fn fill_word(&mut self, core: usize, line: u64, w: W) -> Option<W> {
        if self.l2.is_empty() {
            return self.l1.insert_word(core, line, w);
        }
        let victim = self.l2.insert_word(core, line, w);
        if let Some(v) = victim {
            self.l1.remove_word(core, v.tag() - 1);
        }
        self.l1.insert_word(core, line, w);
        victim
    }

    /// Removes a line from every level of bank `core`.
    #[inline(always)]
    pub(crate) fn remove_word(&mut self, core: usize, line: u64) {
        self.l1.remove_word(core, line);
        if !self.l2.is_empty() {
            self.l2.remove_word(core, line);
        }
    }
}

impl Private for Levels {
    fn state(&self, core: usize, line: u64) -> Option<State> {
        self.outer().peek(core, line)
    }

    fn set_state(&mut self, core: usize, line: u64, st: State) {
        self.l1.set_state(core, line, st);
        if !self.l2.is_empty() {
            self.l2.set_state(core, line, st);
        }
    }

    #[inline(always)]
    fn drop_line(&mut self, core: usize, line: u64) {
        self.remove_word(core, line);
    }

    fn fill(&mut self, core: usize, line: u64, st: State) -> Option<(u64, State)> {
        let v = self.fill_word(core, line, slot(line, st))?;
        Some((v.tag() - 1, State::from_bits(v)))
    }
}
