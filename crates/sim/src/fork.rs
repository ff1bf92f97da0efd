//! The end of a shared replay (see `shared`): when one of its quiet policies first asks
//! for something at a tick, each policy goes on with a simulator of its own, a copy of
//! the state so far with its own clocks, counters and page homes.

use super::Simulator;
use crate::policy::Actions;
use crate::shared::{Follower, Homes};
use crate::stats::MemStats;

impl<'t> Simulator<'t> {
    /// Splits a shared replay at the access under way, charged to thread `charge`: the
    /// followers become [`Simulator::take_forks`]'s simulators (one that asked for
    /// something gets it done, and the ticks still due), and this one goes on alone.
    pub(super) fn split(&mut self, charge: usize) {
        let homes = self.mem.homes.take().expect("a shared replay has homes");
        let common = self.mem.stats;
        let followers = std::mem::take(&mut self.followers);
        for (i, f) in followers.into_iter().enumerate() {
            let (mut s, acted) = self.copy_for(f, &homes, common, i + 1);
            if let Some(out) = acted {
                s.act(out, charge);
            }
            self.forks.push(s);
        }
        self.mem.stats = homes.mem_stats(common, 0);
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
        let Follower {
            policy,
            clocks,
            start_sum,
            now,
            next_tick,
            ticks,
            acted,
            ..
        } = f;
        let mut mem = self.mem.clone();
        mem.stats = homes.mem_stats(common, v);
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
            thread_core: self.thread_core.clone(),
            thread_node: self.thread_node.clone(),
            clocks,
            started: self.started.clone(),
            start_sum,
            now,
            period: self.period,
            next_tick,
            page_shift: self.page_shift,
            line_shift: self.line_shift,
            actions: Actions::default(),
            accesses: self.accesses,
            tlb_misses: self.tlb_misses,
            faults: self.faults,
            overhead: self.overhead,
            thread_migrations: self.thread_migrations,
            page_migrations: self.page_migrations,
            ticks,
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
        for tlb in &mut self.tlbs {
            tlb.rehome(node);
        }
        self.mem.rehome(node);
    }

    /// What a follower asked for at its last tick, done as `tick` does it, then the
    /// ticks still due.
    fn act(&mut self, mut out: Actions, charge: usize) {
        self.migrate_spread(&mut out.page_moves, charge);
        self.apply(&mut out, charge);
        self.tick(charge);
    }
}
