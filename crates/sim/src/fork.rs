//! The simulator's side of a shared replay (see `shared`): its followers' clocks, the
//! table of page homes, their reports, and the split: when one of its quiet policies first
//! asks for something at a tick, each policy goes on with a simulator of its own, a copy
//! of the state so far with its own clocks, counters and page homes.

use super::Simulator;
use crate::config::SimConfig;
use crate::error::SimError;
use crate::policy::{Actions, PageView, Policy, PolicyCtx};
use crate::shared::{advance_all, Follower, Homes};
use crate::stats::{MemStats, SimReport};
use tdmap_topo::Topology;

impl<'t> Simulator<'t> {
    /// One replay of several static or quiet policies that place threads alike (see
    /// `shared`): the first drives it, each with the same thread mapping
    /// ([`Policy::static_mapping`], [`Policy::quiet_mapping`]). [`Simulator::finish_all`]
    /// gives their reports.
    pub(crate) fn shared(
        topo: &'t Topology,
        cfg: SimConfig,
        policies: Vec<Box<dyn Policy>>,
        threads: usize,
    ) -> Result<Self, SimError> {
        let mut policies = policies.into_iter();
        let lead = policies.next().expect("a shared replay has a policy");
        let mut s = Simulator::new(topo, cfg, lead, threads)?;
        let period = s.period;
        let ctx = ctx!(s);
        s.followers = policies
            .map(|p| {
                let quiet = p.static_mapping(&ctx).is_none();
                Follower::new(p, threads, period, quiet)
            })
            .collect();
        if !s.followers.is_empty() {
            s.mem.outer.homes = Some(Homes::new(s.followers.len() + 1));
        }
        Ok(s)
    }

    /// The simulators of the followers of a shared replay that split (in the followers'
    /// order; this one goes on with its own policy alone).
    pub(crate) fn take_forks(&mut self) -> Vec<Simulator<'t>> {
        std::mem::take(&mut self.forks)
    }

    /// A shared replay's access: each policy's clock advances by the common latency
    /// plus its own memory latency. The followers tick before the simulator does, so
    /// that a split the simulator's own tick makes finds them at the end of the access.
    #[inline(always)]
    pub(super) fn follow(&mut self, t: usize, lat: u64) {
        let h = self
            .mem
            .outer
            .homes
            .as_mut()
            .expect("a shared replay has homes");
        // The lead's own memory latency is the first; the followers' come after it.
        let (own, rest) = match h.take_latencies().and_then(|p| p.split_first_mut()) {
            Some((lead, rest)) => (std::mem::take(lead), Some(rest)),
            None => (0, None),
        };
        let due = advance_all(&mut self.followers, rest, t, lat);
        let mut acted = false;
        if due {
            let ctx = ctx!(self);
            for f in &mut self.followers {
                acted |= f.tick(&ctx);
            }
        }
        self.advance(t, lat + own);
        if acted && !self.followers.is_empty() {
            self.split(t);
        }
    }

    /// A new page's home for the memory system: its node, `home`; in a shared replay,
    /// its row in [`Homes`], with the node each follower places it on.
    pub(super) fn home_key(&mut self, t: usize, page: u64, node: usize, home: usize) -> u32 {
        let Some(homes) = self.mem.outer.homes.as_mut() else {
            return home as u32;
        };
        let ctx = ctx!(self);
        let last = self.machine.nodes() - 1;
        let rest = self.followers.iter_mut().map(|f| {
            let n = f.policy().place_page(&ctx, t as u32, page, node);
            n.min(last)
        });
        homes.push(std::iter::once(home).chain(rest))
    }

    /// Ends the run and gives the report of each policy it replayed, in order.
    pub(crate) fn finish_all(mut self) -> Vec<SimReport> {
        let followers = std::mem::take(&mut self.followers);
        let homes = self.mem.outer.homes.take();
        let mut lead = self.report();
        let Some(homes) = homes else {
            return vec![lead];
        };
        let common = lead.mem;
        lead.mem = homes.mem_stats(common, 0);
        let rest: Vec<SimReport> = followers
            .into_iter()
            .enumerate()
            .map(|(i, f)| f.finish(&lead, homes.mem_stats(common, i + 1)))
            .collect();
        std::iter::once(lead).chain(rest).collect()
    }

    /// Splits a shared replay at the access under way, charged to thread `charge`: the
    /// followers become [`Simulator::take_forks`]'s simulators (one that asked for
    /// something gets it done, and the ticks still due), and this one goes on alone.
    pub(super) fn split(&mut self, charge: usize) {
        let homes = self
            .mem
            .outer
            .homes
            .take()
            .expect("a shared replay has homes");
        let common = self.mem.outer.stats;
        let followers = std::mem::take(&mut self.followers);
        for (i, f) in followers.into_iter().enumerate() {
            let (mut s, acted) = self.copy_for(f, &homes, common, i + 1);
            if let Some(out) = acted {
                s.act(out, charge);
            }
            self.forks.push(s);
        }
        self.mem.outer.stats = homes.mem_stats(common, 0);
        self.rehome(&homes, 0);
    }

    /// The state so far as follower `f` (policy `v` of `homes`) sees it, and what `f`
    /// asked for.
    fn copy_for(
        &self,
        f: Follower,
        homes: &Homes,
        common: MemStats,
        v: usize,
    ) -> (Simulator<'t>, Option<Actions>) {
        let (policy, time, acted) = f.into_parts();
        let mut mem = self.mem.clone();
        mem.outer.stats = homes.mem_stats(common, v);
        let mut sim = Simulator {
            topo: self.topo,
            machine: self.machine.clone(),
            cfg: self.cfg.clone(),
            tlb_events: policy.wants_tlb_events(),
            access_events: policy.wants_accesses(),
            policy,
            mem,
            tlbs: self.tlbs.clone(),
            pages: self.pages.clone(),
            node_of_core: self.node_of_core.clone(),
            thread_pu: self.thread_pu.clone(),
            at: self.at.clone(),
            clocks: time.clocks,
            start_sum: time.start_sum,
            now: time.now,
            period: self.period,
            next_tick: time.next_tick,
            page_shift: self.page_shift,
            data_bytes: self.data_bytes,
            line_shift: self.line_shift,
            actions: Actions::default(),
            accesses: self.accesses,
            tlb_misses: self.tlb_misses,
            faults: self.faults,
            overhead: self.overhead,
            thread_migrations: self.thread_migrations,
            page_migrations: self.page_migrations,
            ticks: time.ticks,
            followers: Vec::new(),
            forks: Vec::new(),
        };
        sim.rehome(homes, v);
        (sim, acted)
    }

    /// Page homes known by their rows in `homes` become policy `v`'s nodes.
    fn rehome(&mut self, homes: &Homes, v: usize) {
        let node = |row: u32| homes.node(row as usize, v) as u32;
        for p in self.pages.values_mut() {
            p.home = node(p.home);
            p.node = p.home as u16;
        }
        self.tlbs.rehome(node);
        self.mem.rehome(node);
    }

    /// What a follower asked for at its last tick, done as `tick` does it, then the
    /// ticks still due.
    pub(super) fn act(&mut self, mut out: Actions, charge: usize) {
        self.migrate_spread(&mut out.page_moves, charge);
        self.apply(&mut out, charge);
        self.tick(charge);
    }
}
