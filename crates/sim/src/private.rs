//! The private levels (L1, L2) as the rest of the memory system (`outer`) sees them: a
//! bank's state of a line, changed, dropped, or filled. [`Levels`] are a replay's own
//! caches; a lockstep group's lanes (`lanes`) share the tags and keep a state per replay.

use crate::cache::{Cache, State};

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

/// A replay's own private caches, a bank per core. The levels are inclusive: an L2
/// eviction removes the line from the L1.
#[derive(Debug, Clone)]
pub(crate) struct Levels {
    pub(crate) l1: Cache,
    /// Empty ([`Cache::none`]) on a machine with one private level.
    pub(crate) l2: Cache,
}

impl Levels {
    /// The outermost private level: the one the directory tracks.
    pub(crate) fn outer(&self) -> &Cache {
        if self.l2.is_empty() {
            &self.l1
        } else {
            &self.l2
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
        self.l1.remove(core, line);
        if !self.l2.is_empty() {
            self.l2.remove(core, line);
        }
    }

    fn fill(&mut self, core: usize, line: u64, st: State) -> Option<(u64, State)> {
        if self.l2.is_empty() {
            return self.l1.insert(core, line, st);
        }
        let victim = self.l2.insert(core, line, st);
        if let Some((v, _)) = victim {
            self.l1.remove(core, v);
        }
        self.l1.insert(core, line, st);
        victim
    }
}
