//! Lockstep groups: static or quiet replays of different thread mappings, each thread
//! alone on its core, replayed as one through shared private levels (see `lanes`).
//!
//! A shared replay (`shared`) joins the static policies of one thread mapping; a
//! lockstep group joins such replays of different mappings (each a lane, with its own
//! followers). What the TLBs and the private levels hold, and their LRU order, is then
//! the same in every lane, and so are the TLB misses, page faults and private hits and
//! misses: the group keeps one copy, a bank per thread. Each lane keeps what the
//! placement changes: the private lines' states, its shared caches, directory and page
//! homes (`outer`), its clocks and ticks. An access that hits the L1 (most do) is one
//! lookup for the group and a clock update per policy; only misses and write hits on
//! lines some lane does not own run the coherence rules, once per lane.
//!
//! A quiet lane (`os`, `interleave`: `Policy::quiet_mapping`) replays as a static one
//! until its policy asks for something at a tick; it then leaves the group, as a
//! simulator of its own (`unlock`).

use crate::access::SimAccess;
use crate::config::SimConfig;
use crate::error::SimError;
use crate::hash::FastMap;
use crate::lanes::{self, LaneCaches, Lanes};
use crate::machine::Machine;
use crate::memsys::MemSys;
use crate::outer::Outer;
use crate::policy::{PageView, Policy, PolicyCtx};
use crate::shared::{advance_all, Follower, Homes};
use crate::sim::{LaneState, Simulator};
use crate::stats::{MemStats, SimReport};
use crate::tlb::{Tlb, TlbEntry};
use crate::State;
use tdmap_topo::Topology;

pub(crate) use crate::lanes::MAX_LANES;

/// Whether a thread mapping can join a lockstep group: each thread on a core of its
/// own (threads sharing a core share its private levels, which then differ by
/// placement), and few enough threads for the directory's bank masks.
pub(crate) fn alone_on_cores(machine: &Machine, thread_pu: &[usize]) -> bool {
    let mut cores: Vec<usize> = thread_pu.iter().map(|&pu| machine.core_of_pu[pu]).collect();
    cores.sort_unstable();
    cores.dedup();
    cores.len() == thread_pu.len() && thread_pu.len() <= 64
}

/// One replay of a group: its memory system beyond the private levels and its policies.
struct Lane {
    outer: Outer,
    /// The core and the node each thread runs on.
    core: Vec<usize>,
    node: Vec<usize>,
    thread_pu: Vec<usize>,
    /// The lead policy first, then the policies sharing its replay.
    policies: Vec<Follower>,
}

/// The replays of several thread mappings in lockstep, each a lane.
pub(crate) struct Lockstep<'t> {
    topo: &'t Topology,
    machine: Machine,
    cfg: SimConfig,
    period: u64,
    page_shift: u32,
    line_shift: u32,
    caches: LaneCaches,
    /// A TLB per thread; an entry's home is the page's row in every lane's homes.
    tlbs: Tlb,
    /// Each touched page's row in the lanes' tables of homes.
    rows: FastMap<u64, u32>,
    started: Vec<bool>,
    /// The states word of a line every lane holds Modified: a write hit does nothing.
    owned: u64,
    /// The private levels' hits and misses, the same in every lane.
    private: MemStats,
    accesses: u64,
    tlb_misses: u64,
    faults: u64,
    lanes: Vec<Lane>,
    /// Each lane's cycles in the access under way beyond the group's.
    extra: Vec<u64>,
    /// The lanes whose quiet policies asked for something in the access under way.
    acting: Vec<usize>,
    /// The lanes that left the group (see [`Lockstep::take_left`]).
    left: Vec<Left<'t>>,
}

/// A lane that left its group: where its policies were in the group's list, its
/// simulator (the lead policy's) and the followers' that split from it, in order.
pub(crate) type Left<'t> = (usize, Simulator<'t>, Vec<Simulator<'t>>);

impl<'t> Lockstep<'t> {
    /// A group of `groups`, each the static or quiet policies of one thread mapping that
    /// [`alone_on_cores`] allows (the first leads); two to [`MAX_LANES`] of them.
    pub(crate) fn new(
        topo: &'t Topology,
        cfg: &SimConfig,
        groups: Vec<Vec<Box<dyn Policy>>>,
        threads: usize,
    ) -> Result<Self, SimError> {
        assert!((2..=MAX_LANES).contains(&groups.len()), "a group of lanes");
        let mut lanes = Vec::with_capacity(groups.len());
        let mut machine = None;
        let mut period = 1;
        for mut ps in groups {
            let (m, thread_pu, p) = crate::setup::setup(topo, cfg, ps[0].as_mut(), threads)?;
            period = p;
            assert!(
                alone_on_cores(&m, &thread_pu),
                "a lane has a core per thread"
            );
            let cores: Vec<usize> = thread_pu.iter().map(|&pu| m.core_of_pu[pu]).collect();
            let mut outer = Outer::new(&m, cfg.costs.control_bytes, &cores);
            outer.homes = Some(Homes::new(ps.len()));
            let ctx = PolicyCtx::before_run(topo, &m, threads);
            let follow = |p: Box<dyn Policy>| {
                let quiet = p.static_mapping(&ctx).is_none();
                Follower::new(p, threads, period, quiet)
            };
            let policies = ps.drain(..).map(follow).collect();
            lanes.push(Lane {
                outer,
                core: cores,
                node: thread_pu.iter().map(|&pu| m.node_of_pu[pu]).collect(),
                thread_pu,
                policies,
            });
            machine = Some(m);
        }
        let machine = machine.expect("at least two lanes");
        Ok(Lockstep {
            topo,
            caches: LaneCaches::new(&machine, threads),
            tlbs: Tlb::new(threads, cfg.tlb_entries, cfg.tlb_ways),
            cfg: cfg.clone(),
            period,
            page_shift: cfg.page_size.trailing_zeros(),
            line_shift: machine.line.trailing_zeros(),
            rows: FastMap::default(),
            started: vec![false; threads],
            owned: lanes::all(lanes.len(), State::Modified),
            private: MemStats::default(),
            accesses: 0,
            tlb_misses: 0,
            faults: 0,
            extra: vec![0; lanes.len()],
            acting: Vec::new(),
            left: Vec::new(),
            lanes,
            machine,
        })
    }

    /// Replays a chunk of the stream. A lane whose quiet policy asks for something
    /// leaves the group at the end of that access, and replays the rest of the chunk as
    /// a simulator of its own ([`Lockstep::take_left`]).
    pub(crate) fn run_chunk(&mut self, chunk: &[SimAccess]) -> Result<(), SimError> {
        for (i, a) in chunk.iter().enumerate() {
            self.step(a)?;
            if self.acting.is_empty() {
                continue;
            }
            let rest = &chunk[i + 1..];
            // From the last, so that the indexes of the others stay.
            for l in std::mem::take(&mut self.acting).into_iter().rev() {
                let at = self.lanes[..l].iter().map(|l| l.policies.len()).sum();
                let mut sim = self.unlock(l, a.thread as usize);
                let mut forks = sim.take_forks();
                sim.run_chunk(rest)?;
                for f in &mut forks {
                    f.run_chunk(rest)?;
                }
                self.left.push((at, sim, forks));
            }
            return self.run_chunk(rest);
        }
        Ok(())
    }

    /// The lanes that left the group since the last call, last lane first.
    pub(crate) fn take_left(&mut self) -> Vec<Left<'t>> {
        std::mem::take(&mut self.left)
    }

    /// Lane `l` leaves the group at the end of the access under way, charged to thread
    /// `charge`: its replay as a simulator of its own.
    fn unlock(&mut self, l: usize, charge: usize) -> Simulator<'t> {
        let lane = self.lanes.remove(l);
        self.extra.remove(l);
        let levels = self.caches.levels(l, &self.machine, &lane.core);
        self.caches.remove_lane(l);
        self.owned = lanes::all(self.lanes.len(), State::Modified);
        let mut outer = lane.outer;
        outer.stats = self.with_private(outer.stats);
        let outer = outer.on_cores(&self.machine, self.cfg.costs.control_bytes, &lane.core);
        let mut tlbs = Tlb::new(
            self.machine.cores(),
            self.cfg.tlb_entries,
            self.cfg.tlb_ways,
        );
        for (t, &core) in lane.core.iter().enumerate() {
            tlbs.copy_bank(core, &self.tlbs, t);
        }
        let state = LaneState {
            topo: self.topo,
            machine: self.machine.clone(),
            cfg: self.cfg.clone(),
            period: self.period,
            mem: MemSys::from_parts(levels, outer),
            tlbs,
            rows: self.rows.iter().map(|(&p, &r)| (p, r)).collect(),
            thread_pu: lane.thread_pu,
            started: self.started.clone(),
            accesses: self.accesses,
            tlb_misses: self.tlb_misses,
            faults: self.faults,
            policies: lane.policies,
        };
        Simulator::from_lane(state, charge)
    }

    /// A lane's counters with the private levels' hits and misses, which the group
    /// counts once for all.
    fn with_private(&self, stats: MemStats) -> MemStats {
        MemStats {
            l1_hits: self.private.l1_hits,
            l1_misses: self.private.l1_misses,
            l2_hits: self.private.l2_hits,
            l2_misses: self.private.l2_misses,
            ..stats
        }
    }

    /// One access, as `Simulator::serve` and `Simulator::follow` make it in each lane.
    fn step(&mut self, a: &SimAccess) -> Result<(), SimError> {
        let t = a.thread as usize;
        if t >= self.started.len() {
            return Err(SimError::ThreadOutOfRange {
                thread: a.thread,
                threads: self.started.len(),
            });
        }
        self.accesses += 1;
        if !self.started[t] {
            self.started[t] = true;
            for f in self.lanes.iter_mut().flat_map(|l| &mut l.policies) {
                f.start(t);
            }
        }
        let (row, mut lat) = self.translate(t, a.addr);
        let first = a.addr >> self.line_shift;
        let last = (a.addr + a.size.max(1) as u64 - 1) >> self.line_shift;
        lat += self.access(t, first, a.write, row);
        if last != first {
            lat += self.access(t, last, a.write, row);
        }
        lat += self.cfg.costs.compute;
        for (l, (lane, extra)) in self.lanes.iter_mut().zip(&mut self.extra).enumerate() {
            let lat = lat + std::mem::take(extra);
            let h = lane.outer.homes.as_mut().expect("a lane has homes");
            if advance_all(&mut lane.policies, h.take_latencies(), t, lat) {
                let ctx = ctx(self.topo, &self.machine, &lane.thread_pu, self.period);
                let mut acted = false;
                lane.policies.iter_mut().for_each(|f| acted |= f.tick(&ctx));
                if acted {
                    self.acting.push(l);
                }
            }
        }
        Ok(())
    }

    /// The TLB and page table: the page's row, and the cycles of a walk or a fault.
    #[inline]
    fn translate(&mut self, t: usize, addr: u64) -> (u32, u64) {
        let page = addr >> self.page_shift;
        if let Some(e) = self.tlbs.lookup(t, page, t as u32) {
            return (e.home, 0);
        }
        self.tlb_misses += 1;
        let (row, cost) = match self.rows.get(&page) {
            Some(&row) => (row, 0),
            None => (self.first_touch(t, page), self.cfg.costs.fault),
        };
        let e = TlbEntry {
            page,
            home: row,
            thread: t as u32,
            ac: 1,
        };
        self.tlbs.insert(t, e);
        (row, cost + self.cfg.costs.page_walk)
    }

    /// A page's first touch by thread `t`: every policy of every lane places it.
    fn first_touch(&mut self, t: usize, page: u64) -> u32 {
        self.faults += 1;
        let last = self.machine.nodes() - 1;
        let mut row = 0;
        for lane in &mut self.lanes {
            let ctx = ctx(self.topo, &self.machine, &lane.thread_pu, self.period);
            let node = lane.node[t];
            let homes = lane.policies.iter_mut().map(|f| {
                let home = f.policy().place_page(&ctx, t as u32, page, node);
                home.min(last)
            });
            let h = lane.outer.homes.as_mut().expect("a lane has homes");
            row = h.push(homes.collect::<Vec<_>>());
        }
        self.rows.insert(page, row);
        row
    }

    /// One line, as `MemSys::access` serves it in each lane; gives the group's latency
    /// and adds each lane's own to `extra`.
    #[inline(always)]
    fn access(&mut self, t: usize, line: u64, write: bool, row: u32) -> u64 {
        let c = &mut self.caches;
        let lat_l1 = self.lanes[0].outer.lat_l1;
        if let Some(w) = c.levels.l1.lookup_word(t, line) {
            self.private.l1_hits += 1;
            if write && w.states != self.owned {
                self.write_hit(t, line, w);
            }
            return lat_l1;
        }
        self.private.l1_misses += 1;
        if !c.levels.l2.is_empty() {
            if let Some(w) = c.levels.l2.lookup_word(t, line) {
                self.private.l2_hits += 1;
                // Inclusive: an L1 victim is still in the L2, so it leaves silently.
                c.levels.l1.insert_word(t, line, w);
                if write && w.states != self.owned {
                    self.write_hit(t, line, w);
                }
                return self.lanes[0].outer.lat_l2;
            }
            self.private.l2_misses += 1;
        }
        for (l, lane) in self.lanes.iter_mut().enumerate() {
            let node = lane.node[t];
            let p = &mut self.caches.lane(l);
            self.extra[l] += lane
                .outer
                .private_miss(p, t, line, write, row as usize, node);
        }
        0
    }

    /// A write hit on a line that some lane does not own: each such lane's upgrade.
    #[inline(never)]
    fn write_hit(&mut self, t: usize, line: u64, w: Lanes) {
        for (l, lane) in self.lanes.iter_mut().enumerate() {
            let st = w.state(l).expect("every lane holds a line the group holds");
            let p = &mut self.caches.lane(l);
            self.extra[l] += lane.outer.on_private_hit(p, t, line, true, st);
        }
    }

    /// Ends the run: each policy's report, lane by lane in order.
    pub(crate) fn finish_all(mut self) -> Vec<SimReport> {
        let base = SimReport {
            accesses: self.accesses,
            tlb_misses: self.tlb_misses,
            faults: self.faults,
            fault_cycles: self.faults * self.cfg.costs.fault,
            ..SimReport::default()
        };
        let mut out = Vec::new();
        for lane in std::mem::take(&mut self.lanes) {
            let homes = lane.outer.homes.expect("a lane has homes");
            let common = self.with_private(lane.outer.stats);
            for (v, f) in lane.policies.into_iter().enumerate() {
                out.push(f.finish(&base, homes.mem_stats(common, v)));
            }
        }
        out
    }
}

/// A policy's view in a lane, for page placement and ticks: a static policy reads no
/// time, work or page table there (`Policy::static_mapping`).
fn ctx<'a>(
    topo: &'a Topology,
    machine: &'a Machine,
    thread_pu: &'a [usize],
    period: u64,
) -> PolicyCtx<'a> {
    PolicyCtx {
        topo,
        machine,
        threads: thread_pu.len(),
        thread_pu,
        now: 0,
        period,
        work: 0,
        pages: PageView::default(),
    }
}

#[cfg(test)]
#[path = "lockstep_tests.rs"]
mod tests;
