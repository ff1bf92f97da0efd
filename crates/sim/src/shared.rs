//! Shared replays: static policies that place the threads alike, replayed as one.
//!
//! A static policy (a thread mapping and a page-placement rule; no event hook, no move)
//! cannot change through its page homes what the caches, TLBs and directory hold: that
//! depends only on the stream and on the core of each thread. Homes only set what a read
//! from memory costs and which links a line crosses to or from memory, and the policy's
//! ticks do nothing. So the static policies of a run that place threads alike (each of
//! best-static's mappings with first-touch pages and with its best homes, `scatter` and
//! `scatter+homes`) share one replay of the caches, and each keeps its own clocks and
//! home-dependent counters: its report is the one a replay of its own gives, figure for
//! figure (`replay`'s tests check it). On the workload traces this replays 9-10 cache
//! models where there were 15-16.
//!
//! A quiet policy ([`Policy::quiet_mapping`]: `os`, `interleave`) replays as a static one
//! until its first tick that asks for something; the shared replay then splits
//! (`Simulator::split`), each policy going on with a copy of the state of its own.
//!
//! In a shared replay, the memory system knows a page's home by the page's row in a
//! table of homes (one node per policy) instead of by its node.

use crate::policy::{Actions, Policy, PolicyCtx};
use crate::stats::{MemStats, SimReport};

/// The home-dependent side of the memory system in a shared replay.
#[derive(Debug, Clone)]
pub(crate) struct Homes {
    /// Policies sharing the replay.
    n: usize,
    /// Row `r`, column `v`: the node of row `r`'s page under policy `v`.
    table: Vec<u16>,
    /// Each policy's memory latency in the access under way, for its clock.
    pending: Vec<u64>,
    /// Whether the access under way read memory (most do not: `pending` is all 0).
    read: bool,
    /// Each policy's home-dependent counters: reads from memory, local or remote, and
    /// the bytes they and write-backs to memory move.
    pub(crate) counts: Vec<MemStats>,
}

impl Homes {
    /// An empty table for `n` policies.
    pub(crate) fn new(n: usize) -> Homes {
        Homes {
            n,
            table: Vec::new(),
            pending: vec![0; n],
            read: false,
            counts: vec![MemStats::default(); n],
        }
    }

    /// Number of policies.
    #[inline]
    pub(crate) fn policies(&self) -> usize {
        self.n
    }

    /// Adds a page with its node under each policy; returns its row.
    pub(crate) fn push(&mut self, nodes: impl IntoIterator<Item = usize>) -> u32 {
        let row = self.table.len() / self.n;
        self.table.extend(nodes.into_iter().map(|n| n as u16));
        debug_assert_eq!(self.table.len(), (row + 1) * self.n);
        row as u32
    }

    /// Adds a memory read's latency `lat` for policy `v` to the access under way.
    #[inline]
    pub(crate) fn add_latency(&mut self, v: usize, lat: u64) {
        self.pending[v] += lat;
        self.read = true;
    }

    /// Ends the access under way: each policy's memory latency in it, if it read memory.
    #[inline]
    pub(crate) fn take_latencies(&mut self) -> Option<&mut [u64]> {
        std::mem::take(&mut self.read).then_some(&mut self.pending[..])
    }

    /// The node of row `row`'s page under policy `v`.
    #[inline]
    pub(crate) fn node(&self, row: usize, v: usize) -> usize {
        self.table[row * self.n + v] as usize
    }

    /// Policy `v`'s report from the one the replay's simulator gave for policy 0: the
    /// same cache figures, its own home-dependent counters added.
    pub(crate) fn mem_stats(&self, common: MemStats, v: usize) -> MemStats {
        let c = &self.counts[v];
        MemStats {
            mem_local: common.mem_local + c.mem_local,
            mem_remote: common.mem_remote + c.mem_remote,
            traffic_intra: common.traffic_intra + c.traffic_intra,
            traffic_inter: common.traffic_inter + c.traffic_inter,
            ..common
        }
    }
}

/// A policy that follows a shared replay: its own clocks, advanced by the replay's
/// latencies plus its own memory latencies, as the simulator advances its own.
pub(crate) struct Follower {
    pub(crate) policy: Box<dyn Policy>,
    pub(crate) clocks: Vec<u64>,
    pub(crate) start_sum: u64,
    pub(crate) now: u64,
    pub(crate) next_tick: u64,
    pub(crate) ticks: u64,
    /// A quiet policy, whose ticks are called; a static one does nothing at a tick.
    quiet: bool,
    /// What the policy asked for at the first tick that asked for something: the
    /// replay splits at the end of the access.
    pub(crate) acted: Option<Actions>,
}

/// Thread `t` spent `lat` cycles in each follower's replay, plus, when the access read
/// memory, the follower's own memory latency (`own`, one per follower, taken): advances
/// their clocks; true when a tick is due for any of them.
#[inline(always)]
pub(crate) fn advance_all(
    fs: &mut [Follower],
    own: Option<&mut [u64]>,
    t: usize,
    lat: u64,
) -> bool {
    let mut due = false;
    match own {
        None => {
            for f in fs {
                due |= f.advance(t, lat);
            }
        }
        Some(own) => {
            for (f, own) in fs.iter_mut().zip(own) {
                due |= f.advance(t, lat + std::mem::take(own));
            }
        }
    }
    due
}

/// A follower's time when it goes on as a simulator of its own (`fork`, `unlock`).
pub(crate) struct FollowerTime {
    pub(crate) clocks: Vec<u64>,
    pub(crate) start_sum: u64,
    pub(crate) now: u64,
    pub(crate) next_tick: u64,
    pub(crate) ticks: u64,
}

impl Follower {
    /// Its policy, its time and what it asked for, for a simulator of its own.
    pub(crate) fn into_parts(self) -> (Box<dyn Policy>, FollowerTime, Option<Actions>) {
        let time = FollowerTime {
            clocks: self.clocks,
            start_sum: self.start_sum,
            now: self.now,
            next_tick: self.next_tick,
            ticks: self.ticks,
        };
        (self.policy, time, self.acted)
    }

    /// A follower of `threads` threads ticking every `period` cycles; `quiet` for a
    /// quiet policy, false for a static one.
    pub(crate) fn new(
        policy: Box<dyn Policy>,
        threads: usize,
        period: u64,
        quiet: bool,
    ) -> Follower {
        Follower {
            policy,
            clocks: vec![0; threads],
            start_sum: 0,
            now: 0,
            next_tick: period,
            ticks: 0,
            quiet,
            acted: None,
        }
    }

    /// The policy, to place pages on their first touch.
    pub(crate) fn policy(&mut self) -> &mut dyn Policy {
        self.policy.as_mut()
    }

    /// Thread `t`'s first access (as `Simulator::start`).
    pub(crate) fn start(&mut self, t: usize) {
        self.clocks[t] = self.now;
        self.start_sum += self.now;
    }

    /// Thread `t` spent `lat` cycles; true when a tick is due ([`Follower::tick`]).
    #[inline]
    pub(crate) fn advance(&mut self, t: usize, lat: u64) -> bool {
        self.clocks[t] += lat;
        if self.clocks[t] <= self.now {
            return false;
        }
        self.now = self.clocks[t];
        self.now >= self.next_tick
    }

    /// The ticks due, as the simulator makes them: a quiet policy's called with `ctx`
    /// at this policy's time, a static policy's only counted. True when the policy asked
    /// for something (it then stops ticking: the replay must split).
    pub(crate) fn tick(&mut self, ctx: &PolicyCtx) -> bool {
        while self.acted.is_none() && self.now >= self.next_tick {
            self.next_tick += ctx.period;
            self.ticks += 1;
            if self.quiet {
                let mut out = Actions::default();
                let work = crate::sim::work_done(&self.clocks, self.start_sum);
                let ctx = PolicyCtx {
                    now: self.now,
                    work,
                    ..*ctx
                };
                self.policy.on_tick(&ctx, &mut out);
                self.acted = (!out.is_empty()).then_some(out);
            }
        }
        self.acted.is_some()
    }

    /// The report, from the replay's report for policy 0 and this policy's counters.
    pub(crate) fn finish(self, lead: &SimReport, mem: MemStats) -> SimReport {
        SimReport {
            policy: self.policy.name(),
            cycles_max: self.clocks.iter().copied().max().unwrap_or(0),
            cycles_total: crate::sim::work_done(&self.clocks, self.start_sum),
            thread_cycles: self.clocks,
            mem,
            ticks: self.ticks,
            ..lead.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::{
        pu_order, Fixed, OsPolicy, PagePlacement, Policy, StaticPolicy, TestPages, ThreadOrder,
    };
    use crate::sim::Simulator;
    use crate::{simulate, Machine, SimAccess, SimConfig, SimReport, SplitMix64};
    use tdmap_topo::Topology;

    /// The period of the tests' runs, in cycles.
    const PERIOD: u64 = 20_000;

    /// Threads reading and writing lines of each other's pages, thread 1 starting late,
    /// and some accesses crossing a page boundary (whose second line takes the home of
    /// the first page): every kind of eviction and write-back, to memory homes that the
    /// policies place differently.
    fn stream(threads: u32, seed: u64) -> Vec<SimAccess> {
        let mut rng = SplitMix64::new(seed);
        let mut out = Vec::new();
        for i in 0..60_000u64 {
            let t = match i {
                0..5_000 => 0,
                _ => rng.below(threads as usize) as u32,
            };
            let page = rng.below(64) as u64;
            let addr = match rng.below(50) {
                0 => (page << 12) + 4092,
                _ => (page << 12) + rng.below(64) as u64 * 64,
            };
            out.push(match rng.unit() < 0.3 {
                true => SimAccess::write(t, addr, 8),
                false => SimAccess::read(t, addr, 8),
            });
        }
        out
    }

    /// Static policies with scatter's thread mapping and four ways of placing pages.
    fn policies(topo: &Topology, threads: usize) -> Vec<Box<dyn Policy>> {
        let order = pu_order(topo, ThreadOrder::Scatter);
        let mapping: Vec<usize> = (0..threads).map(|t| order[t % order.len()]).collect();
        let nodes = topo.num_nodes();
        let homes = (0..64u64).map(|p| (p, (p as usize * 7 + 1) % nodes));
        let placed = |name, pages| StaticPolicy::new(name, ThreadOrder::Scatter, pages);
        vec![
            Box::new(placed("first-touch", PagePlacement::FirstTouch)),
            Box::new(placed("interleave", PagePlacement::Interleave)),
            Box::new(Fixed::new("homes", mapping).with_pages(homes)),
            Box::new(placed("random", PagePlacement::Random(9))),
        ]
    }

    /// The OS model, calm (its default rate: it moves no thread in these runs) or busy
    /// (a migration every few ticks, the first some ticks in), with a static policy of
    /// its thread mapping; the one that leads the shared replay first.
    fn quiet(topo: &Topology, threads: usize, busy_first: bool) -> Vec<Box<dyn Policy>> {
        let machine = Machine::new(topo, &SimConfig::default()).unwrap();
        let calm = OsPolicy::new("os-calm", 5, PagePlacement::FirstTouch);
        let mut busy = OsPolicy::new("os-busy", 5, PagePlacement::Interleave);
        busy.migrations_per_sec = 0.05 * machine.hz / PERIOD as f64;
        let pages = TestPages::default();
        let mapping = calm
            .clone()
            .initial_mapping(&pages.ctx(topo, &machine, threads, &[]));
        let nodes = topo.num_nodes();
        let homes = (0..64u64).map(|p| (p, (p as usize * 3) % nodes));
        let fixed = Box::new(Fixed::new("fixed", mapping).with_pages(homes));
        match busy_first {
            true => vec![Box::new(busy), Box::new(calm), fixed],
            false => vec![Box::new(calm), fixed, Box::new(busy)],
        }
    }

    fn shared_and_alone(
        topo: &Topology,
        threads: usize,
        policies: impl Fn() -> Vec<Box<dyn Policy>>,
    ) -> (Vec<SimReport>, Vec<SimReport>) {
        let cfg = SimConfig {
            tick_cycles: Some(PERIOD),
            ..SimConfig::default()
        };
        let t = stream(threads as u32, 4);
        let mut sim = Simulator::shared(topo, cfg.clone(), policies(), threads).unwrap();
        // In two chunks, so that a split replay goes on in the next one.
        let (a, b) = t.split_at(t.len() / 3);
        let mut sims = vec![sim];
        for chunk in [a, b] {
            let mut born = Vec::new();
            for s in &mut sims {
                s.run_chunk(chunk).unwrap();
                born.extend(s.take_forks());
            }
            sims.extend(born);
        }
        sim = sims.remove(0);
        let mut shared = sim.finish_all();
        shared.extend(sims.into_iter().map(Simulator::finish));
        let alone = policies()
            .into_iter()
            .map(|p| simulate(topo, cfg.clone(), p, threads, t.iter().copied()).unwrap())
            .collect();
        (shared, alone)
    }

    /// A quiet policy replays as a static one until it moves a thread; the shared replay
    /// then splits, whichever policy leads it, and every report is still its own
    /// replay's. The calm OS model never splits its replay from the static policy's.
    #[test]
    fn a_shared_replay_splits_when_a_quiet_policy_acts() {
        let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        for busy_first in [true, false] {
            let (shared, alone) = shared_and_alone(&topo, 8, || quiet(&topo, 8, busy_first));
            let name = |r: &SimReport| r.policy.clone();
            let mut by_name = shared.clone();
            by_name.sort_by_key(name);
            let mut want = alone.clone();
            want.sort_by_key(name);
            assert_eq!(by_name, want, "busy first: {busy_first}");
            let busy = alone.iter().find(|r| r.policy == "os-busy").unwrap();
            assert!(busy.thread_migrations > 1 && busy.ticks > 10, "{busy:?}");
            let calm = alone.iter().find(|r| r.policy == "os-calm").unwrap();
            assert_eq!(calm.thread_migrations, 0);
        }
    }

    /// Each policy's report from the shared replay is the one its own replay gives, on a
    /// machine with tiny shared caches (dirty shared-cache victims go home) and on one
    /// without a shared cache (dirty private victims go home); the homes do change the
    /// figures, so the test compares different reports.
    #[test]
    fn a_shared_replay_reports_each_policy_as_its_own_replay() {
        let tiny = tdmap_topo::from_synthetic(
            "pack:2 [numa(memory=1GiB)] l3:1(size=4KiB) l2:2(size=1KiB) l1d:1(size=512) core:1 pu:1",
        )
        .unwrap();
        let opteron = tdmap_topo::preset("opteron-8n").unwrap();
        for (topo, threads) in [(&tiny, 4), (&opteron, 8)] {
            let (shared, alone) = shared_and_alone(topo, threads, || policies(topo, threads));
            assert_eq!(shared.len(), alone.len());
            for (s, a) in shared.iter().zip(&alone) {
                assert_eq!(s, a, "{} on {}", a.policy, topo.name);
            }
            let differ = |f: fn(&SimReport) -> u64| alone.iter().any(|r| f(r) != f(&alone[0]));
            assert!(differ(|r| r.cycles_max), "times on {}", topo.name);
            assert!(differ(|r| r.mem.mem_remote), "remote on {}", topo.name);
            assert!(differ(|r| r.mem.traffic_inter), "links on {}", topo.name);
            assert!(alone[0].mem.writebacks > 0 && alone[0].ticks > 1);
        }
    }
}
