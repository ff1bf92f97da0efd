//! The memory system: private caches per core, one shared cache per domain (package),
//! a MESI directory that keeps them coherent, and memory on the NUMA nodes.
//!
//! The private levels are inclusive (an L2 eviction removes the line from the L1), so
//! the directory only tracks the outermost private level and the shared caches. A write
//! to a line that other caches hold invalidates their copies; a miss that another cache
//! can serve is a cache-to-cache transfer, counted within a package or between packages.
//! Every line moved counts its bytes on the on-chip or the inter-chip interconnect.
//!
//! A replay's memory system is its private levels (`private`) and the rest (`outer`),
//! apart so that a lockstep group (`lockstep`) can share the private levels' tags.

use crate::cache::State;
use crate::dir::DirEntry;
use crate::hash::FastMap;
use crate::machine::Machine;
use crate::outer::Outer;
use crate::private::{Levels, Private};
use crate::stats::MemStats;

/// The cache hierarchy and directory of the whole machine.
#[derive(Debug, Clone)]
pub struct MemSys {
    levels: Levels,
    /// Everything beyond the private levels: shared caches, directory, counters.
    pub(crate) outer: Outer,
}

impl MemSys {
    /// Empty caches for a machine.
    pub fn new(m: &Machine, control_bytes: u64) -> Self {
        let cores = m.cores();
        let banks: Vec<usize> = (0..cores).collect();
        MemSys {
            levels: Levels::new(m, cores),
            outer: Outer::new(m, control_bytes, &banks),
        }
    }

    /// A memory system from its private levels and the rest.
    pub(crate) fn from_parts(levels: Levels, outer: Outer) -> Self {
        MemSys { levels, outer }
    }

    /// The counters (in a shared replay, those that do not depend on page homes).
    pub fn stats(&self) -> &MemStats {
        &self.outer.stats
    }

    /// One access to one line by a core of node `node`; `home` is the node of the line's
    /// page. Returns the latency in cycles (in a shared replay, less the memory latency,
    /// which goes to each policy's `Homes::pending`).
    #[inline(always)]
    pub fn access(&mut self, core: usize, line: u64, write: bool, home: usize, node: usize) -> u64 {
        let (p, o) = (&mut self.levels, &mut self.outer);
        if let Some(st) = p.l1.lookup(core, line) {
            o.stats.l1_hits += 1;
            // Reads and writes to owned lines, most hits, need no directory work: keep
            // that test inline and the write path out of line.
            if !write || st == State::Modified {
                return o.lat_l1;
            }
            return o.lat_l1 + o.on_private_hit(p, core, line, write, st);
        }
        o.stats.l1_misses += 1;
        if !p.l2.is_empty() {
            if let Some(st) = p.l2.lookup(core, line) {
                o.stats.l2_hits += 1;
                // Inclusive: an L1 victim is still in the L2, so it leaves silently.
                p.l1.insert(core, line, st);
                return o.lat_l2 + o.on_private_hit(p, core, line, write, st);
            }
            o.stats.l2_misses += 1;
        }
        o.private_miss(p, core, line, write, home, node)
    }

    /// Maps the home of every line the directory tracks through `f` (a shared replay
    /// that splits: rows of its table of homes become nodes).
    pub(crate) fn rehome(&mut self, f: impl Fn(u32) -> u32) {
        self.outer.rehome(f);
    }

    /// Drops every cached copy of lines `first..first + n` (a page that moves to another
    /// frame leaves its old lines behind).
    pub fn flush_lines(&mut self, first: u64, n: u64) {
        self.outer.flush_lines(&mut self.levels, first, n);
    }

    /// Checks that the directory matches the caches and that MESI holds: a Modified or
    /// Exclusive line has no other private copy; the L1 is inside the L2; L1 and L2
    /// agree on states. Returns the first violation.
    pub fn check(&self) -> Result<(), String> {
        let mut seen: FastMap<u64, DirEntry> = FastMap::default();
        for c in 0..self.levels.l1.bank_count() {
            for (line, _) in self.levels.outer().entries(c) {
                seen.entry(line).or_default().cores |= 1u64 << c;
            }
            if !self.levels.l2.is_empty() {
                for (line, st) in self.levels.l1.entries(c) {
                    if self.levels.l2.peek(c, line) != Some(st) {
                        return Err(format!("core {c}: L1 line {line} {st:?} not in L2 alike"));
                    }
                }
            }
        }
        for d in 0..self.outer.llc.bank_count() {
            for (line, _) in self.outer.llc.entries(d) {
                seen.entry(line).or_default().domains |= 1u64 << d;
            }
        }
        if seen.len() != self.outer.dir.len() {
            return Err(format!(
                "{} lines cached, {} in the directory",
                seen.len(),
                self.outer.dir.len()
            ));
        }
        for (line, s) in &seen {
            let d = self
                .outer
                .dir
                .get(*line)
                .ok_or(format!("line {line} not in the directory"))?;
            if (d.cores, d.domains) != (s.cores, s.domains) {
                return Err(format!("line {line}: directory {d:?}, caches {s:?}"));
            }
            let c = s.cores.trailing_zeros() as usize;
            let owned = s.cores != 0 && self.levels.state(c, *line) != Some(State::Shared);
            if owned && s.cores.count_ones() > 1 {
                return Err(format!(
                    "line {line}: owned by core {c} but shared by {:b}",
                    s.cores
                ));
            }
        }
        Ok(())
    }

    /// Number of directory entries (bounded by the total cache capacity).
    pub fn dir_len(&self) -> usize {
        self.outer.dir.len()
    }

    /// Whether a core's private levels hold a line, and in which state (for tests).
    pub fn private_state(&self, core: usize, line: u64) -> Option<State> {
        self.levels.state(core, line)
    }

    /// Whether a shared-cache domain holds a line (for tests).
    pub fn in_shared(&self, dom: usize, line: u64) -> bool {
        dom < self.outer.llc.bank_count() && self.outer.llc.peek(dom, line).is_some()
    }

    /// Package of a core.
    pub fn pkg_of_core(&self, core: usize) -> usize {
        self.outer.pkg_of_core(core)
    }
}

#[cfg(test)]
#[path = "memsys_tests.rs"]
mod tests;
