//! The simulator: replays a stream of accesses, each on the core its thread runs on,
//! through the TLB, the page table and the memory system, and gives the policy its
//! events. Threads keep their own clocks, each starting at the simulated time of its
//! first access; simulated time is the clock of the thread furthest ahead, and the policy
//! ticks every period of it.
//!
//! Threads are interleaved in the order of the input stream. More threads than PUs
//! share PUs without modelling time-sharing: each thread only pays its own accesses.

use crate::access::SimAccess;
use crate::config::SimConfig;
use crate::error::SimError;
use crate::hash::FastMap;
use crate::machine::Machine;
use crate::memsys::MemSys;
use crate::policy::{
    Actions, FaultEvent, FaultKind, PageView, Policy, PolicyCtx, TlbEvent, TlbEventKind,
};
use crate::setup::setup;
use crate::shared::Follower;
use crate::stats::SimReport;
use crate::tlb::{Tlb, TlbEntry};
use tdmap_topo::Topology;

/// The policy's view of a simulator, borrowing only the fields it needs so that the
/// policy itself can be borrowed mutably beside it.
macro_rules! ctx {
    ($s:expr) => {
        PolicyCtx {
            topo: $s.topo,
            machine: &$s.machine,
            threads: $s.clocks.len(),
            thread_pu: &$s.thread_pu,
            now: $s.now,
            period: $s.period,
            work: $crate::sim::work_done(&$s.clocks, $s.start_sum),
            pages: PageView::new(&$s.pages, $s.page_shift, $s.data_bytes),
        }
    };
}

/// The cycles every thread has run so far, added up ([`PolicyCtx::work`], the report's
/// `cycles_total`): each clock less the time its thread started at (`start_sum`).
pub(crate) fn work_done(clocks: &[u64], start_sum: u64) -> u64 {
    clocks.iter().sum::<u64>() - start_sum
}

/// The cycles the mechanisms cost the threads, by kind, for the report.
#[derive(Debug, Clone, Copy, Default)]
struct Overhead {
    injected_faults: u64,
    fault_cycles: u64,
    thread_migration_cycles: u64,
    page_migration_cycles: u64,
}

/// Where a thread runs, and whether it made its first access.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ThreadAt {
    core: u32,
    node: u32,
    started: bool,
}

/// A page table entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pte {
    /// The node the page lives on.
    pub(crate) node: u16,
    /// Cleared by a policy's extra-fault injection.
    pub(crate) present: bool,
    /// The page's home as the memory system knows it: `node`, or in a shared replay the
    /// page's row in [`Homes`].
    pub(crate) home: u32,
}

/// One simulation run of one policy.
pub struct Simulator<'t> {
    topo: &'t Topology,
    machine: Machine,
    cfg: SimConfig,
    policy: Box<dyn Policy>,
    tlb_events: bool,
    access_events: bool,
    mem: MemSys,
    tlbs: Tlb,
    pages: FastMap<u64, Pte>,
    node_of_core: Vec<usize>,
    thread_pu: Vec<usize>,
    /// Where each thread runs and whether it started: read together on every access,
    /// so one entry per thread.
    at: Vec<ThreadAt>,
    clocks: Vec<u64>,
    /// The start times of the threads, added up (their clocks less the work they did).
    start_sum: u64,
    now: u64,
    period: u64,
    next_tick: u64,
    page_shift: u32,
    /// `SimConfig::data_bytes`.
    data_bytes: Option<u64>,
    line_shift: u32,
    actions: Actions,
    accesses: u64,
    tlb_misses: u64,
    faults: u64,
    overhead: Overhead,
    thread_migrations: u64,
    page_migrations: u64,
    ticks: u64,
    /// The other policies of a shared replay (`shared`), none in a replay of its own.
    followers: Vec<Follower>,
    /// The followers' own simulators once a shared replay split, for the caller to take
    /// ([`Simulator::take_forks`]), in the followers' order.
    forks: Vec<Simulator<'t>>,
}

#[path = "fork.rs"]
mod fork;
#[path = "unlock.rs"]
mod unlock;
pub(crate) use unlock::LaneState;

impl<'t> Simulator<'t> {
    /// A run of `policy` with `threads` threads on `topo`.
    pub fn new(
        topo: &'t Topology,
        cfg: SimConfig,
        mut policy: Box<dyn Policy>,
        threads: usize,
    ) -> Result<Self, SimError> {
        let (machine, thread_pu, period) = setup(topo, &cfg, policy.as_mut(), threads)?;
        let mut s = Simulator {
            topo,
            tlb_events: policy.wants_tlb_events(),
            access_events: policy.wants_accesses(),
            policy,
            mem: MemSys::new(&machine, cfg.costs.control_bytes),
            tlbs: Tlb::new(machine.cores(), cfg.tlb_entries, cfg.tlb_ways),
            pages: FastMap::default(),
            node_of_core: node_of_core(&machine),
            at: vec![ThreadAt::default(); threads],
            thread_pu,
            clocks: vec![0; threads],
            start_sum: 0,
            now: 0,
            period,
            next_tick: period,
            page_shift: cfg.page_size.trailing_zeros(),
            data_bytes: cfg.data_bytes,
            line_shift: machine.line.trailing_zeros(),
            actions: Actions::default(),
            accesses: 0,
            tlb_misses: 0,
            faults: 0,
            overhead: Overhead::default(),
            thread_migrations: 0,
            page_migrations: 0,
            ticks: 0,
            followers: Vec::new(),
            forks: Vec::new(),
            machine,
            cfg,
        };
        for t in 0..threads {
            s.place_thread(t, s.thread_pu[t]);
        }
        Ok(s)
    }

    fn place_thread(&mut self, t: usize, pu: usize) {
        self.thread_pu[t] = pu;
        self.at[t].core = self.machine.core_of_pu[pu] as u32;
        self.at[t].node = self.machine.node_of_pu[pu] as u32;
    }

    /// Replays a chunk of the stream (a shared replay that splits on the way replays the
    /// rest of the chunk in each of its forks too).
    pub fn run_chunk(&mut self, chunk: &[SimAccess]) -> Result<(), SimError> {
        let shared = !self.followers.is_empty();
        for (i, a) in chunk.iter().enumerate() {
            self.step(a)?;
            if shared && self.followers.is_empty() {
                let rest = &chunk[i + 1..];
                for f in &mut self.forks {
                    f.run_chunk(rest)?;
                }
                return self.run_chunk(rest);
            }
        }
        Ok(())
    }

    /// One access.
    #[inline]
    pub fn step(&mut self, a: &SimAccess) -> Result<(), SimError> {
        let (t, lat) = self.serve(a)?;
        if !self.followers.is_empty() {
            self.follow(t, lat);
            return Ok(());
        }
        self.advance(t, lat);
        Ok(())
    }

    /// Serves an access; returns its thread and the cycles it took.
    #[inline(always)]
    fn serve(&mut self, a: &SimAccess) -> Result<(usize, u64), SimError> {
        let t = a.thread as usize;
        let Some(&at) = self.at.get(t) else {
            return Err(SimError::ThreadOutOfRange {
                thread: a.thread,
                threads: self.clocks.len(),
            });
        };
        self.accesses += 1;
        if !at.started {
            self.start(t);
        }
        let (core, node) = (at.core as usize, at.node as usize);
        let (home, mut lat) = self.translate(t, core, a.addr);
        let first = a.addr >> self.line_shift;
        let last = (a.addr + a.size.max(1) as u64 - 1) >> self.line_shift;
        lat += self.mem.access(core, first, a.write, home, node);
        if last != first {
            lat += self.mem.access(core, last, a.write, home, node);
        }
        if self.access_events {
            self.report_access(a, home, t);
        }
        Ok((t, lat + self.cfg.costs.compute))
    }

    /// Thread `t` spent `lat` cycles: time moves on, and the policy ticks.
    #[inline(always)]
    fn advance(&mut self, t: usize, lat: u64) {
        self.clocks[t] += lat;
        if self.clocks[t] > self.now {
            self.now = self.clocks[t];
            if self.now >= self.next_tick {
                self.tick(t);
            }
        }
    }

    /// A thread's first access: it starts at the simulated time of that point of the
    /// stream, not at 0. A thread created after a serial phase (cginit's master
    /// initialisation) cannot have run during it, and the run ends when the last thread
    /// does: the slowest thread's clock is then the makespan.
    #[cold]
    fn start(&mut self, t: usize) {
        self.at[t].started = true;
        self.clocks[t] = self.now;
        self.start_sum += self.now;
        for f in &mut self.followers {
            f.start(t);
        }
    }

    /// The TLB and page table: the page's node, and the cycles of a walk or a fault.
    #[inline]
    fn translate(&mut self, t: usize, core: usize, addr: u64) -> (usize, u64) {
        let page = addr >> self.page_shift;
        let ac_max = self.cfg.ac_max;
        if let Some(e) = self.tlbs.lookup(core, page, t as u32) {
            // Only a policy that sees TLB events reads the counter: no store for others.
            if !self.tlb_events {
                return (e.home as usize, 0);
            }
            e.ac = e.ac.saturating_add(1);
            if e.ac < ac_max {
                return (e.home as usize, 0);
            }
            let ev = *e;
            e.ac = 0;
            self.report_tlb(ev, core, TlbEventKind::Saturated, t);
            return (ev.home as usize, 0);
        }
        self.tlb_misses += 1;
        let (node, cost) = self.walk(t, addr, page);
        let victim = self.tlbs.insert(
            core,
            TlbEntry {
                page,
                home: node as u32,
                thread: t as u32,
                ac: 1,
            },
        );
        if let (Some(v), true) = (victim, self.tlb_events) {
            self.report_tlb(v, core, TlbEventKind::Evicted, t);
        }
        (node, cost + self.cfg.costs.page_walk)
    }

    /// A page walk; faults place or re-validate the page. Gives the page's home as the
    /// memory system knows it ([`Pte::home`]).
    fn walk(&mut self, t: usize, addr: u64, page: u64) -> (usize, u64) {
        let kind = match self.pages.get_mut(&page) {
            Some(p) if p.present => return (p.home as usize, 0),
            Some(p) => {
                p.present = true;
                FaultKind::Injected
            }
            None => {
                let node = self.at[t].node as usize;
                let ctx = ctx!(self);
                let home = self.policy.place_page(&ctx, t as u32, page, node);
                let home = home.min(self.machine.nodes() - 1);
                let key = self.home_key(t, page, node, home);
                self.pages.insert(
                    page,
                    Pte {
                        node: home as u16,
                        present: true,
                        home: key,
                    },
                );
                FaultKind::FirstTouch
            }
        };
        self.faults += 1;
        let page_node = self.pages[&page].node as usize;
        let ev = FaultEvent {
            thread: t as u32,
            node: self.at[t].node as usize,
            addr,
            page,
            page_node,
            kind,
        };
        let mut out = std::mem::take(&mut self.actions);
        let ctx = ctx!(self);
        self.policy.on_fault(&ctx, &ev, &mut out);
        self.apply(&mut out, t);
        self.actions = out;
        let home = self.pages[&page].home as usize;
        let cost = match kind {
            FaultKind::FirstTouch => self.cfg.costs.fault,
            FaultKind::Injected => {
                self.overhead.injected_faults += 1;
                self.cfg.costs.injected_fault
            }
        };
        self.overhead.fault_cycles += cost;
        (home, cost)
    }

    #[cold]
    fn report_access(&mut self, a: &SimAccess, page_node: usize, t: usize) {
        let mut out = std::mem::take(&mut self.actions);
        let ctx = ctx!(self);
        self.policy.on_access(&ctx, a, page_node, &mut out);
        self.apply(&mut out, t);
        self.actions = out;
    }

    fn report_tlb(&mut self, e: TlbEntry, core: usize, kind: TlbEventKind, charge: usize) {
        let page_node = self
            .pages
            .get(&e.page)
            .map_or(e.home as usize, |p| p.node as usize);
        let ev = TlbEvent {
            thread: e.thread,
            node: self.node_of_core[core],
            page: e.page,
            page_node,
            ac: e.ac,
            kind,
        };
        let mut out = std::mem::take(&mut self.actions);
        let ctx = ctx!(self);
        self.policy.on_tlb_event(&ctx, &ev, &mut out);
        self.apply(&mut out, charge);
        self.actions = out;
    }

    fn tick(&mut self, charge: usize) {
        while self.now >= self.next_tick {
            self.next_tick += self.period;
            self.ticks += 1;
            let mut out = std::mem::take(&mut self.actions);
            let ctx = ctx!(self);
            self.policy.on_tick(&ctx, &mut out);
            if !out.is_empty() && !self.followers.is_empty() {
                self.split(charge);
            }
            self.migrate_spread(&mut out.page_moves, charge);
            self.apply(&mut out, charge);
            self.actions = out;
        }
    }

    /// Page migrations asked for at a tick: the OS's periodic work (SAMMU §2.6.2 drains
    /// its list once per period), not the fault of the access that ended the period, so
    /// each is charged to the threads that have started, in turn. Charged to one thread,
    /// a batch of 128 made that thread the critical path (1.44 of os on an alltoall trace
    /// where the same moves spread cost 1.05).
    fn migrate_spread(&mut self, moves: &mut Vec<(u64, usize)>, fallback: usize) {
        let started: Vec<usize> = (0..self.clocks.len())
            .filter(|&t| self.at[t].started)
            .collect();
        for (k, &(page, node)) in moves.iter().enumerate() {
            let t = match started.len() {
                0 => fallback,
                n => started[(self.ticks as usize + k) % n],
            };
            self.migrate_page(page, node, t);
        }
        moves.clear();
    }

    /// Carries out a policy's requests; page migrations are charged to thread `charge`,
    /// whose access triggered them.
    fn apply(&mut self, out: &mut Actions, charge: usize) {
        if out.is_empty() {
            return;
        }
        for &(t, pu) in &out.thread_moves {
            let t = t as usize;
            if t < self.clocks.len() && pu < self.machine.pus() && self.thread_pu[t] != pu {
                self.place_thread(t, pu);
                self.clocks[t] += self.cfg.costs.thread_migration;
                self.overhead.thread_migration_cycles += self.cfg.costs.thread_migration;
                self.thread_migrations += 1;
            }
        }
        for &(page, node) in &out.page_moves {
            self.migrate_page(page, node, charge);
        }
        if out.inject_faults {
            for p in self.pages.values_mut() {
                p.present = false;
            }
            self.flush_tlbs(charge);
        }
        for &page in &out.inject_pages {
            if let Some(p) = self.pages.get_mut(&page) {
                p.present = false;
                self.tlbs.shoot_down(page);
            }
        }
        out.clear();
    }

    fn migrate_page(&mut self, page: u64, node: usize, charge: usize) {
        if node >= self.machine.nodes() {
            return;
        }
        let Some(p) = self.pages.get_mut(&page) else {
            return;
        };
        let from = p.node as usize;
        if from == node {
            return;
        }
        debug_assert!(
            self.mem.outer.homes.is_none(),
            "static policies move no page"
        );
        p.node = node as u16;
        p.home = node as u32;
        let lines = self.cfg.page_size >> self.line_shift;
        self.mem.flush_lines(page * lines, lines);
        self.tlbs.shoot_down(page);
        let (a, b) = (
            self.machine.pkg_of_node[from],
            self.machine.pkg_of_node[node],
        );
        if a == b {
            self.mem.outer.stats.traffic_intra += self.cfg.page_size;
        } else {
            self.mem.outer.stats.traffic_inter += self.cfg.page_size;
        }
        self.clocks[charge] += self.cfg.costs.page_migration;
        self.overhead.page_migration_cycles += self.cfg.costs.page_migration;
        self.page_migrations += 1;
    }

    /// Shootdown of every TLB: the entries' counters are reported as evictions. Page
    /// migrations they cause are charged to thread `charge`, whose access set it off.
    fn flush_tlbs(&mut self, charge: usize) {
        for core in 0..self.tlbs.cores() {
            for e in self.tlbs.flush(core) {
                if self.tlb_events {
                    let page_node = self.pages.get(&e.page).map_or(0, |p| p.node as usize);
                    let ev = TlbEvent {
                        thread: e.thread,
                        node: self.node_of_core[core],
                        page: e.page,
                        page_node,
                        ac: e.ac,
                        kind: TlbEventKind::Evicted,
                    };
                    let mut out = Actions::default();
                    let ctx = ctx!(self);
                    self.policy.on_tlb_event(&ctx, &ev, &mut out);
                    for &(page, node) in &out.page_moves {
                        self.migrate_page(page, node, charge);
                    }
                }
            }
        }
    }

    /// The machine model in use.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The PU each thread runs on now.
    pub fn thread_pu(&self) -> &[usize] {
        &self.thread_pu
    }

    /// The node a page lives on, if it was touched.
    pub fn page_node(&self, page: u64) -> Option<usize> {
        self.pages.get(&page).map(|p| p.node as usize)
    }

    /// The memory system (for inspection).
    pub fn mem(&self) -> &MemSys {
        &self.mem
    }

    /// Ends the run and gives its report (of the first policy, in a shared replay).
    pub fn finish(self) -> SimReport {
        self.finish_all().swap_remove(0)
    }

    fn report(self) -> SimReport {
        SimReport {
            policy: self.policy.name(),
            accesses: self.accesses,
            cycles_max: self.clocks.iter().copied().max().unwrap_or(0),
            cycles_total: work_done(&self.clocks, self.start_sum),
            thread_cycles: self.clocks,
            mem: self.mem.outer.stats,
            tlb_misses: self.tlb_misses,
            faults: self.faults,
            injected_faults: self.overhead.injected_faults,
            fault_cycles: self.overhead.fault_cycles,
            thread_migration_cycles: self.overhead.thread_migration_cycles,
            page_migration_cycles: self.overhead.page_migration_cycles,
            thread_migrations: self.thread_migrations,
            page_migrations: self.page_migrations,
            ticks: self.ticks,
        }
    }
}

/// The node of each core: the node of its first PU.
fn node_of_core(m: &Machine) -> Vec<usize> {
    let mut out = vec![0; m.cores()];
    for pu in (0..m.pus()).rev() {
        out[m.core_of_pu[pu]] = m.node_of_pu[pu];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Fixed;
    use crate::simulate;

    /// A thread that first runs after a serial phase starts at the end of it: the
    /// makespan counts the serial phase once, and the total counts only work done.
    #[test]
    fn a_thread_starts_at_the_time_of_its_first_access() {
        let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let policy = Box::new(Fixed::new("pinned", vec![0, 2]));
        let serial = (0..1000u64).map(|i| SimAccess::write(0, i * 64, 8));
        let worker = (0..10u64).map(|i| SimAccess::read(1, (1 << 30) + i * 64, 8));
        let stream: Vec<SimAccess> = serial.chain(worker).collect();
        let r = simulate(&topo, SimConfig::default(), policy, 2, stream).unwrap();
        let (main, late) = (r.thread_cycles[0], r.thread_cycles[1]);
        assert!(
            late > main,
            "thread 1 ends after the serial phase: {late} vs {main}"
        );
        assert_eq!(r.cycles_max, late);
        let worked = late - main;
        assert_eq!(
            r.cycles_total,
            main + worked,
            "start time not counted as work"
        );
        assert!(
            worked < main / 10,
            "10 accesses cost less than 1000: {worked}"
        );
    }
}
