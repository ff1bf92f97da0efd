//! The memory system beyond the private levels, one per replay: the shared caches, the
//! MESI directory, memory on the NUMA nodes and the interconnect's counters (see
//! `memsys`). It sees the private levels through [`Private`], so that a replay of its own
//! (`MemSys`) and a lockstep group's replays (`lanes`), which share private levels' tags,
//! run the same coherence rules.
//!
//! Private caches are indexed by bank: a core in a replay of its own, a thread in a
//! lockstep group (where each thread has a core to itself); `pkg_of_core` and
//! `dom_of_core` give each bank's package and shared-cache domain.

use crate::cache::{Cache, State};
use crate::dir::{Dir, DirEntry};
use crate::machine::Machine;
use crate::private::Private;
use crate::shared::Homes;
use crate::stats::MemStats;

/// The shared caches, directory and counters of one replay.
#[derive(Debug, Clone)]
pub(crate) struct Outer {
    pub(crate) llc: Cache,
    pub(crate) dir: Dir,
    pkg_of_core: Vec<usize>,
    pub(crate) dom_of_core: Vec<usize>,
    pkg_of_dom: Vec<usize>,
    pkg_of_node: Vec<usize>,
    mem_latency: Vec<u64>,
    nodes: usize,
    pub(crate) lat_l1: u64,
    pub(crate) lat_l2: u64,
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

impl Outer {
    /// Empty shared caches for a machine whose private bank `b` sits on core
    /// `core_of_bank[b]`.
    pub(crate) fn new(m: &Machine, control_bytes: u64, core_of_bank: &[usize]) -> Self {
        let cores = m.cores();
        let outer_lat = m.private.last().map_or(1, |g| g.latency);
        let (llc, dom_of_core, lat_llc, domains) = match &m.shared {
            Some(s) => (
                Cache::banks(s.domains, s.geom.size, m.line, s.geom.ways),
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
        Outer {
            llc,
            dir: Dir::default(),
            pkg_of_core: core_of_bank.iter().map(|&c| m.pkg_of_core[c]).collect(),
            dom_of_core: core_of_bank.iter().map(|&c| dom_of_core[c]).collect(),
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

    /// This replay's state with private banks on cores, from one whose bank `b` sat on
    /// core `core_of_bank[b]` (a lockstep lane that leaves its group).
    pub(crate) fn on_cores(self, m: &Machine, control_bytes: u64, core_of_bank: &[usize]) -> Outer {
        let cores: Vec<usize> = (0..m.cores()).collect();
        let mut dir = self.dir;
        dir.each_mut(|e| {
            let (mut banks, mut on) = (e.cores, 0);
            while banks != 0 {
                on |= 1u64 << core_of_bank[banks.trailing_zeros() as usize];
                banks &= banks - 1;
            }
            e.cores = on;
        });
        Outer {
            llc: self.llc,
            dir,
            stats: self.stats,
            homes: self.homes,
            ..Outer::new(m, control_bytes, &cores)
        }
    }

    /// Package of a bank's core.
    pub(crate) fn pkg_of_core(&self, core: usize) -> usize {
        self.pkg_of_core[core]
    }

    /// A write hit needs ownership: E becomes M silently, S needs an upgrade.
    #[inline(never)]
    pub(crate) fn on_private_hit(
        &mut self,
        p: &mut impl Private,
        core: usize,
        line: u64,
        write: bool,
        st: State,
    ) -> u64 {
        if !write || st == State::Modified {
            return 0;
        }
        let extra = if st == State::Shared {
            self.stats.upgrades += 1;
            let mut lat = self.lat_llc;
            if let Some(mut e) = self.dir.get(line) {
                lat += self.invalidate_others(p, core, line, &mut e);
                self.dir.insert(line, e);
            }
            lat
        } else {
            0
        };
        p.set_state(core, line, State::Modified);
        extra
    }

    /// Serves a miss of all private levels: from a dirty owner, the own shared cache,
    /// another cache, or memory, in that order.
    pub(crate) fn private_miss(
        &mut self,
        p: &mut impl Private,
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
        let mut lat = if let Some(o) = self.sole_owner(p, others, line) {
            let l = self.transfer(self.pkg_of_core[o], pkg);
            if !write {
                // MESI: M -> S writes the line back.
                p.set_state(o, line, State::Shared);
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
            lat += self.invalidate_others(p, core, line, &mut e);
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
        if let Some((v, vs)) = p.fill(core, line, st) {
            self.private_evicted(core, v, vs);
        }
        lat
    }

    /// The other core that holds the line Modified, if any. A sole Exclusive holder
    /// is demoted to Shared here, so that its next write is seen by the directory.
    fn sole_owner(&mut self, p: &mut impl Private, others: u64, line: u64) -> Option<usize> {
        if others.count_ones() != 1 {
            return None;
        }
        let o = others.trailing_zeros() as usize;
        match p.state(o, line) {
            Some(State::Modified) => Some(o),
            Some(State::Exclusive) => {
                p.set_state(o, line, State::Shared);
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
    fn invalidate_others(
        &mut self,
        p: &mut impl Private,
        core: usize,
        line: u64,
        e: &mut DirEntry,
    ) -> u64 {
        let pkg = self.pkg_of_core[core];
        let mut remote = false;
        let mut cores = e.cores & !(1u64 << core);
        while cores != 0 {
            let c = cores.trailing_zeros() as usize;
            cores &= cores - 1;
            p.drop_line(c, line);
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

    /// Drops every cached copy of lines `first..first + n` (a page that moves to another
    /// frame leaves its old lines behind).
    pub(crate) fn flush_lines(&mut self, p: &mut impl Private, first: u64, n: u64) {
        for line in first..first + n {
            let Some(e) = self.dir.remove(line) else {
                continue;
            };
            let mut cores = e.cores;
            while cores != 0 {
                let c = cores.trailing_zeros() as usize;
                cores &= cores - 1;
                p.drop_line(c, line);
            }
            let mut doms = e.domains;
            while doms != 0 {
                let d = doms.trailing_zeros() as usize;
                doms &= doms - 1;
                self.llc.remove(d, line);
            }
        }
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
