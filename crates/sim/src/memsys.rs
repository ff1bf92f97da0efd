//! The memory system: private caches per core, one shared cache per domain (package),
//! a MESI directory that keeps them coherent, and memory on the NUMA nodes.
//!
//! The private levels are inclusive (an L2 eviction removes the line from the L1), so
//! the directory only tracks the outermost private level and the shared caches. A write
//! to a line that other caches hold invalidates their copies; a miss that another cache
//! can serve is a cache-to-cache transfer, counted within a package or between packages.
//! Every line moved counts its bytes on the on-chip or the inter-chip interconnect.

use crate::cache::{Cache, State};
use crate::dir::{Dir, DirEntry};
use crate::hash::FastMap;
use crate::machine::Machine;
use crate::shared::Homes;
use crate::stats::MemStats;

/// The cache hierarchy and directory of the whole machine.
#[derive(Debug, Clone)]
pub struct MemSys {
    l1: Cache,
    l2: Cache,
    llc: Cache,
    dir: Dir,
    pkg_of_core: Vec<usize>,
    dom_of_core: Vec<usize>,
    pkg_of_dom: Vec<usize>,
    pkg_of_node: Vec<usize>,
    mem_latency: Vec<u64>,
    nodes: usize,
    lat_l1: u64,
    lat_l2: u64,
    lat_llc: u64,
    interchip: u64,
    line_bytes: u64,
    control_bytes: u64,
    /// The counters (in a shared replay, those that do not depend on page homes).
    pub stats: MemStats,
    /// In a shared replay (`shared`), the homes of every policy: `home` arguments are
    /// then rows of its table, not nodes.
    pub(crate) homes: Option<Homes>,
}

impl MemSys {
    /// Empty caches for a machine.
    pub fn new(m: &Machine, control_bytes: u64) -> Self {
        let cores = m.cores();
        let mk = |g: &crate::machine::CacheGeom, n: usize| Cache::banks(n, g.size, m.line, g.ways);
        let l1 = mk(&m.private[0], cores);
        let l2 = m.private.get(1).map_or_else(Cache::none, |g| mk(g, cores));
        let outer_lat = m.private.last().map_or(1, |g| g.latency);
        let (llc, dom_of_core, lat_llc, domains) = match &m.shared {
            Some(s) => (
                mk(&s.geom, s.domains),
                s.domain_of_core.clone(),
                s.geom.latency,
                s.domains,
            ),
            None => (Cache::none(), vec![0; cores], outer_lat, 1),
        };
        let mut pkg_of_dom = vec![0; domains];
        for c in 0..cores {
            pkg_of_dom[dom_of_core[c]] = m.pkg_of_core[c];
        }
        MemSys {
            l1,
            l2,
            llc,
            dir: Dir::default(),
            pkg_of_core: m.pkg_of_core.clone(),
            dom_of_core,
            pkg_of_dom,
            pkg_of_node: m.pkg_of_node.clone(),
            mem_latency: m.mem_latency.clone(),
            nodes: m.nodes(),
            lat_l1: m.private[0].latency,
            lat_l2: m.private.get(1).map_or(0, |g| g.latency),
            lat_llc,
            interchip: m.interchip,
            line_bytes: m.line,
            control_bytes,
            stats: MemStats::default(),
            homes: None,
        }
    }

    /// One access to one line by a core of node `node`; `home` is the node of the line's
    /// page. Returns the latency in cycles (in a shared replay, less the memory latency,
    /// which goes to each policy's `Homes::pending`).
    #[inline(always)]
    pub fn access(&mut self, core: usize, line: u64, write: bool, home: usize, node: usize) -> u64 {
        if let Some(st) = self.l1.lookup(core, line) {
            self.stats.l1_hits += 1;
            // Reads and writes to owned lines, most hits, need no directory work: keep
            // that test inline and the write path out of line.
            if !write || st == State::Modified {
                return self.lat_l1;
            }
            return self.lat_l1 + self.on_private_hit(core, line, write, st);
        }
        self.stats.l1_misses += 1;
        if !self.l2.is_empty() {
            if let Some(st) = self.l2.lookup(core, line) {
                self.stats.l2_hits += 1;
                // Inclusive: an L1 victim is still in the L2, so it leaves silently.
                self.l1.insert(core, line, st);
                return self.lat_l2 + self.on_private_hit(core, line, write, st);
            }
            self.stats.l2_misses += 1;
        }
        self.private_miss(core, line, write, home, node)
    }

    /// A write hit needs ownership: E becomes M silently, S needs an upgrade.
    #[inline(never)]
    fn on_private_hit(&mut self, core: usize, line: u64, write: bool, st: State) -> u64 {
        if !write || st == State::Modified {
            return 0;
        }
        let extra = if st == State::Shared {
            self.stats.upgrades += 1;
            let mut lat = self.lat_llc;
            if let Some(mut e) = self.dir.get(line) {
                lat += self.invalidate_others(core, line, &mut e);
                self.dir.insert(line, e);
            }
            lat
        } else {
            0
        };
        self.set_private_state(core, line, State::Modified);
        extra
    }

    fn set_private_state(&mut self, core: usize, line: u64, st: State) {
        self.l1.set_state(core, line, st);
        if !self.l2.is_empty() {
            self.l2.set_state(core, line, st);
        }
    }

    /// Serves a miss of all private levels: from a dirty owner, the own shared cache,
    /// another cache, or memory, in that order.
    fn private_miss(
        &mut self,
        core: usize,
        line: u64,
        write: bool,
        home: usize,
        node: usize,
    ) -> u64 {
        let pkg = self.pkg_of_core[core];
        let dom = self.dom_of_core[core];
        let mut e = self.dir.get(line).unwrap_or(DirEntry {
            home: home as u32,
            ..DirEntry::default()
        });
        let me = 1u64 << core;
        let others = e.cores & !me;
        let llc_hit = !self.llc.is_empty() && self.llc.lookup(dom, line).is_some();
        // Without a shared level, the outermost private level is the last level.
        if llc_hit {
            self.stats.llc_hits += 1;
        } else {
            self.stats.llc_misses += 1;
        }
        let mut lat = if let Some(o) = self.sole_owner(others, line) {
            let l = self.transfer(self.pkg_of_core[o], pkg);
            if !write {
                // MESI: M -> S writes the line back.
                self.set_private_state(o, line, State::Shared);
                self.count_to_home(self.pkg_of_core[o], e.home as usize);
                self.stats.writebacks += 1;
            }
            l
        } else if llc_hit {
            self.count_bytes(pkg, pkg, self.line_bytes);
            self.lat_llc
        } else if let Some(src) = self.nearest_holder(&e, core) {
            self.transfer(src, pkg)
        } else {
            self.read_memory(e.home as usize, node, pkg)
        };
        if write {
            lat += self.invalidate_others(core, line, &mut e);
        }
        let holders_left = (e.cores & !me) != 0 || (e.domains & !(1u64 << dom)) != 0;
        let st = match (write, holders_left) {
            (true, _) => State::Modified,
            (false, true) => State::Shared,
            (false, false) => State::Exclusive,
        };
        e.cores |= me;
        if !self.llc.is_empty() {
            e.domains |= 1u64 << dom;
        }
        self.dir.insert(line, e);
        if !self.llc.is_empty() && !llc_hit {
            if let Some((v, vs)) = self.llc.insert(dom, line, State::Shared) {
                self.llc_evicted(dom, v, vs);
            }
        }
        self.fill_private(core, line, st);
        lat
    }

    /// The other core that holds the line Modified, if any. A sole Exclusive holder
    /// is demoted to Shared here, so that its next write is seen by the directory.
    fn sole_owner(&mut self, others: u64, line: u64) -> Option<usize> {
        if others.count_ones() != 1 {
            return None;
        }
        let o = others.trailing_zeros() as usize;
        match self.private_state(o, line) {
            Some(State::Modified) => Some(o),
            Some(State::Exclusive) => {
                self.set_private_state(o, line, State::Shared);
                None
            }
            _ => None,
        }
    }

    /// The package of the closest other holder: same package first.
    fn nearest_holder(&self, e: &DirEntry, core: usize) -> Option<usize> {
        let pkg = self.pkg_of_core[core];
        let mut best = None;
        let mut cores = e.cores & !(1u64 << core);
        while cores != 0 {
            let c = cores.trailing_zeros() as usize;
            cores &= cores - 1;
            if self.pkg_of_core[c] == pkg {
                return Some(pkg);
            }
            best = best.or(Some(self.pkg_of_core[c]));
        }
        let mut doms = e.domains & !(1u64 << self.dom_of_core[core]);
        while doms != 0 {
            let d = doms.trailing_zeros() as usize;
            doms &= doms - 1;
            if self.pkg_of_dom[d] == pkg {
                return Some(pkg);
            }
            best = best.or(Some(self.pkg_of_dom[d]));
        }
        best
    }

    /// A cache-to-cache transfer of one line from package `from` to package `to`.
    /// Between packages: a lookup in each package's shared cache and a link crossing
    /// each way (request, then data).
    fn transfer(&mut self, from: usize, to: usize) -> u64 {
        self.count_bytes(from, to, self.line_bytes);
        if from == to {
            self.stats.c2c_intra += 1;
            self.lat_llc
        } else {
            self.stats.c2c_inter += 1;
            2 * self.lat_llc + 2 * self.interchip
        }
    }

    fn read_memory(&mut self, home: usize, node: usize, pkg: usize) -> u64 {
        if let Some(h) = self.homes.as_mut() {
            for v in 0..h.policies() {
                let home = h.node(home, v);
                let c = &mut h.counts[v];
                if home == node {
                    c.mem_local += 1;
                } else {
                    c.mem_remote += 1;
                }
                add_bytes(c, self.pkg_of_node[home] == pkg, self.line_bytes);
                h.add_latency(v, self.mem_latency[node * self.nodes + home]);
            }
            return 0;
        }
        if home == node {
            self.stats.mem_local += 1;
        } else {
            self.stats.mem_remote += 1;
        }
        self.count_bytes(self.pkg_of_node[home], pkg, self.line_bytes);
        self.mem_latency[node * self.nodes + home]
    }

    /// Counts bytes on the on-chip interconnect, or on the inter-chip links.
    fn count_bytes(&mut self, from_pkg: usize, to_pkg: usize, bytes: u64) {
        add_bytes(&mut self.stats, from_pkg == to_pkg, bytes);
    }

    /// Counts a line written back from package `pkg` to the node of page home `home`.
    fn count_to_home(&mut self, pkg: usize, home: usize) {
        match self.homes.as_mut() {
            None => self.count_bytes(pkg, self.pkg_of_node[home], self.line_bytes),
            Some(h) => {
                for v in 0..h.policies() {
                    let to = self.pkg_of_node[h.node(home, v)];
                    add_bytes(&mut h.counts[v], pkg == to, self.line_bytes);
                }
            }
        }
    }

    /// Removes every other copy (private caches and other domains' shared caches) and
    /// returns the extra latency: an inter-chip round trip (invalidation, then its
    /// acknowledgement) when a copy sat on another package.
    fn invalidate_others(&mut self, core: usize, line: u64, e: &mut DirEntry) -> u64 {
        let pkg = self.pkg_of_core[core];
        let mut remote = false;
        let mut cores = e.cores & !(1u64 << core);
        while cores != 0 {
            let c = cores.trailing_zeros() as usize;
            cores &= cores - 1;
            self.drop_private(c, line);
            remote |= self.invalidation_sent(pkg, self.pkg_of_core[c]);
        }
        let own_dom = self.dom_of_core[core];
        let mut doms = e.domains & !(1u64 << own_dom);
        while doms != 0 {
            let d = doms.trailing_zeros() as usize;
            doms &= doms - 1;
            self.llc.remove(d, line);
            remote |= self.invalidation_sent(pkg, self.pkg_of_dom[d]);
        }
        e.cores &= 1u64 << core;
        e.domains &= 1u64 << own_dom;
        if remote {
            2 * self.interchip
        } else {
            0
        }
    }

    fn invalidation_sent(&mut self, from: usize, to: usize) -> bool {
        self.stats.invalidations += 1;
        self.count_bytes(from, to, self.control_bytes);
        from != to
    }

    /// Installs a line in the private levels; the outer level's victim leaves the core.
    fn fill_private(&mut self, core: usize, line: u64, st: State) {
        if self.l2.is_empty() {
            if let Some((v, vs)) = self.l1.insert(core, line, st) {
                self.private_evicted(core, v, vs);
            }
            return;
        }
        if let Some((v, vs)) = self.l2.insert(core, line, st) {
            self.l1.remove(core, v);
            self.private_evicted(core, v, vs);
        }
        self.l1.insert(core, line, st);
    }

    /// A line left a core's private levels: update the directory, write back if dirty
    /// (into the package's shared cache, or to the home node when there is none).
    fn private_evicted(&mut self, core: usize, line: u64, st: State) {
        let dom = self.dom_of_core[core];
        let has_llc = !self.llc.is_empty();
        let Some(e) = self.dir.get_mut(line) else {
            return;
        };
        e.cores &= !(1u64 << core);
        let home = e.home as usize;
        let dirty = st == State::Modified;
        let refill = dirty && has_llc && !self.llc.set_state(dom, line, State::Modified);
        if refill {
            e.domains |= 1u64 << dom;
        }
        if e.cores == 0 && e.domains == 0 {
            self.dir.remove(line);
        }
        if !dirty {
            return;
        }
        self.stats.writebacks += 1;
        let pkg = self.pkg_of_core[core];
        if has_llc {
            self.count_bytes(pkg, pkg, self.line_bytes);
        } else {
            self.count_to_home(pkg, home);
        }
        if refill {
            if let Some((v, vs)) = self.llc.insert(dom, line, State::Modified) {
                self.llc_evicted(dom, v, vs);
            }
        }
    }

    /// A line left a shared cache: a dirty one goes back to its home node.
    fn llc_evicted(&mut self, dom: usize, line: u64, st: State) {
        let Some(e) = self.dir.get_mut(line) else {
            return;
        };
        e.domains &= !(1u64 << dom);
        let home = e.home as usize;
        if e.cores == 0 && e.domains == 0 {
            self.dir.remove(line);
        }
        if st == State::Modified {
            self.stats.writebacks += 1;
            self.count_to_home(self.pkg_of_dom[dom], home);
        }
    }

    /// Maps the home of every line the directory tracks through `f` (a shared replay
    /// that splits: rows of its table of homes become nodes).
    pub(crate) fn rehome(&mut self, f: impl Fn(u32) -> u32) {
        self.dir.rehome(f);
    }

    /// Drops core `c`'s private copies of `line` (its L1 and, if any, its L2).
    #[inline(always)]
    fn drop_private(&mut self, c: usize, line: u64) {
        self.l1.remove(c, line);
        if !self.l2.is_empty() {
            self.l2.remove(c, line);
        }
    }

    /// Drops every cached copy of lines `first..first + n` (a page that moves to another
    /// frame leaves its old lines behind).
    pub fn flush_lines(&mut self, first: u64, n: u64) {
        for line in first..first + n {
            let Some(e) = self.dir.remove(line) else {
                continue;
            };
            let mut cores = e.cores;
            while cores != 0 {
                let c = cores.trailing_zeros() as usize;
                cores &= cores - 1;
                self.drop_private(c, line);
            }
            let mut doms = e.domains;
            while doms != 0 {
                let d = doms.trailing_zeros() as usize;
                doms &= doms - 1;
                self.llc.remove(d, line);
            }
        }
    }

    /// Checks that the directory matches the caches and that MESI holds: a Modified or
    /// Exclusive line has no other private copy; the L1 is inside the L2; L1 and L2
    /// agree on states. Returns the first violation.
    pub fn check(&self) -> Result<(), String> {
        let mut seen: FastMap<u64, DirEntry> = FastMap::default();
        for c in 0..self.l1.bank_count() {
            let outer = if self.l2.is_empty() {
                &self.l1
            } else {
                &self.l2
            };
            for (line, _) in outer.entries(c) {
                seen.entry(line).or_default().cores |= 1u64 << c;
            }
            if !self.l2.is_empty() {
                for (line, st) in self.l1.entries(c) {
                    if self.l2.peek(c, line) != Some(st) {
                        return Err(format!("core {c}: L1 line {line} {st:?} not in L2 alike"));
                    }
                }
            }
        }
        for d in 0..self.llc.bank_count() {
            for (line, _) in self.llc.entries(d) {
                seen.entry(line).or_default().domains |= 1u64 << d;
            }
        }
        if seen.len() != self.dir.len() {
            return Err(format!(
                "{} lines cached, {} in the directory",
                seen.len(),
                self.dir.len()
            ));
        }
        for (line, s) in &seen {
            let d = self
                .dir
                .get(*line)
                .ok_or(format!("line {line} not in the directory"))?;
            if (d.cores, d.domains) != (s.cores, s.domains) {
                return Err(format!("line {line}: directory {d:?}, caches {s:?}"));
            }
            let c = s.cores.trailing_zeros() as usize;
            let owned = s.cores != 0 && self.private_state(c, *line) != Some(State::Shared);
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
        self.dir.len()
    }

    /// Whether a core's private levels hold a line, and in which state (for tests).
    pub fn private_state(&self, core: usize, line: u64) -> Option<State> {
        let c = if self.l2.is_empty() {
            &self.l1
        } else {
            &self.l2
        };
        c.peek(core, line)
    }

    /// Whether a shared-cache domain holds a line (for tests).
    pub fn in_shared(&self, dom: usize, line: u64) -> bool {
        dom < self.llc.bank_count() && self.llc.peek(dom, line).is_some()
    }

    /// Package of a core.
    pub fn pkg_of_core(&self, core: usize) -> usize {
        self.pkg_of_core[core]
    }
}

/// Counts bytes on the on-chip interconnect (`same_pkg`), or on the inter-chip links.
#[inline]
fn add_bytes(stats: &mut MemStats, same_pkg: bool, bytes: u64) {
    if same_pkg {
        stats.traffic_intra += bytes;
    } else {
        stats.traffic_inter += bytes;
    }
}

#[cfg(test)]
#[path = "memsys_tests.rs"]
mod tests;
