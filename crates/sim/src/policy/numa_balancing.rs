//! A model of Linux's automatic NUMA balancing (`kernel.numa_balancing=1`,
//! `kernel/sched/fair.c`: `task_numa_work`, `task_numa_fault`, `should_numa_migrate_memory`,
//! `task_numa_placement`, `task_numa_migrate`; sources in `crates/sim/README.md`).
//!
//! - **Scans.** After a delay, the kernel unmaps the process's pages at every scan
//!   period, so that the next access to each takes a NUMA hinting fault. Linux's delay
//!   and minimum period are 1000 ms (`numa_balancing_scan_delay_ms`,
//!   `scan_period_min_ms`): 10 policy periods of 100 ms. They are counted in periods so
//!   that they shrink with the period `tdmap sim` cuts for a short trace, as kmaf's and
//!   sammu's do; otherwise a trace of a few milliseconds would never be scanned. The
//!   period doubles (up to 60 s) after a pass whose faults were at least 70 % local and
//!   halves (down to the minimum) otherwise (`update_task_scan_period`,
//!   `NUMA_PERIOD_THRESHOLD` 7 of 10). The scan size limit (256 MB) is not modelled.
//! - **Pages.** A hinting fault on a page of another node migrates it to the faulting
//!   node if the previous hinting fault on it came from the same node (the two-stage
//!   filter on the page's last cpupid), or, early in the task's life (its first 4 scans),
//!   if it is the page's first hinting fault or the same thread's again.
//! - **Tasks.** Each thread counts its hinting faults by the node of the page (after any
//!   migration), halved at each scan; its preferred node is the one with most. At each
//!   scan a thread away from its preferred node moves there: to an idle PU if the node
//!   then holds at most 2 threads more than the thread's current node
//!   (`NUMA_IMBALANCE_MIN`), else by swapping with a thread of that node that would not
//!   be further from its own preferred node (`task_numa_compare`, simplified).
//!
//! Between scans, threads behave as under `os` (placement and load-balancer moves).

use super::basic::{OsPolicy, PagePlacement};
use super::{Actions, FaultEvent, FaultKind, Policy, PolicyCtx};
use crate::hash::FastMap;

/// Linux NUMA balancing: scans, page migration and task placement.
#[derive(Debug, Clone)]
pub struct NumaBalancing {
    /// Thread placement and load-balancer migrations, as under `os`.
    pub threads: OsPolicy,
    /// Periods before the first scan (Linux: 1000 ms = 10 periods of 100 ms).
    pub scan_delay: u64,
    /// Shortest periods between scans (Linux: 1000 ms).
    pub scan_min: u64,
    /// Longest (Linux: 60 s).
    pub scan_max: u64,
    scan_every: u64,
    ticks: u64,
    next_scan: u64,
    scans: u64,
    /// Per page: the node and thread of its last hinting fault.
    last: FastMap<u64, (u16, u32)>,
    /// Per thread, hinting faults per node (halved each scan).
    faults: Vec<Vec<u64>>,
    local: u64,
    remote: u64,
}

/// Scans during which a first fault on a page migrates it at once (`numa_scan_seq <= 4`).
const EARLY_SCANS: u64 = 4;
/// Threads a preferred node may hold beyond the source node's (`NUMA_IMBALANCE_MIN`).
const IMBALANCE_MIN: usize = 2;

impl NumaBalancing {
    /// The model with a seed for the thread side.
    pub fn new(seed: u64) -> Self {
        NumaBalancing {
            threads: OsPolicy::new("numa-balancing", seed, PagePlacement::FirstTouch),
            scan_delay: 10,
            scan_min: 10,
            scan_max: 600,
            scan_every: 10,
            ticks: 0,
            next_scan: 10,
            scans: 0,
            last: FastMap::default(),
            faults: Vec::new(),
            local: 0,
            remote: 0,
        }
    }

    fn migrate_page(&self, ev: &FaultEvent, last: Option<(u16, u32)>) -> bool {
        if ev.node == ev.page_node {
            return false;
        }
        let early = self.scans <= EARLY_SCANS;
        match last {
            None => early,
            Some((_, t)) if t == ev.thread && early => true,
            Some((n, _)) => n as usize == ev.node,
        }
    }

    /// Moves threads towards their preferred nodes (one scan's `task_numa_placement`).
    fn place_tasks(&mut self, ctx: &PolicyCtx, out: &mut Actions) {
        let node_of = |pu: usize| ctx.machine.node_of_pu[pu];
        let mut pus = ctx.thread_pu.to_vec();
        for &(t, q) in &out.thread_moves {
            pus[t as usize] = q; // the load balancer's moves of this tick come first
        }
        let preferred: Vec<Option<usize>> = self
            .faults
            .iter()
            .map(|f| {
                let (n, &max) = f
                    .iter()
                    .enumerate()
                    .max_by_key(|&(i, c)| (*c, usize::MAX - i))?;
                (max > 0).then_some(n)
            })
            .collect();
        for t in 0..pus.len().min(preferred.len()) {
            let Some(want) = preferred[t] else { continue };
            let here = node_of(pus[t]);
            if want == here {
                continue;
            }
            let on = |pus: &[usize], n: usize| pus.iter().filter(|&&q| node_of(q) == n).count();
            let idle = (0..ctx.machine.pus())
                .filter(|&q| node_of(q) == want && !pus.contains(&q))
                .min_by_key(|&q| {
                    // An idle core first: no thread on a sibling PU.
                    let core = ctx.machine.core_of_pu[q];
                    pus.iter().any(|&o| ctx.machine.core_of_pu[o] == core)
                });
            if let Some(q) = idle {
                if on(&pus, want) < on(&pus, here) + IMBALANCE_MIN {
                    pus[t] = q;
                    out.thread_moves.push((t as u32, q));
                    continue;
                }
            }
            let swap = (0..pus.len()).find(|&o| {
                o != t && node_of(pus[o]) == want && preferred.get(o) != Some(&Some(want))
            });
            if let Some(o) = swap {
                pus.swap(t, o);
                out.thread_moves.push((t as u32, pus[t]));
                out.thread_moves.push((o as u32, pus[o]));
            }
        }
    }
}

impl Policy for NumaBalancing {
    fn name(&self) -> String {
        "numa-balancing".into()
    }

    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize> {
        self.faults = vec![vec![0; ctx.machine.nodes()]; ctx.threads];
        self.next_scan = self.scan_delay;
        self.scan_every = self.scan_min;
        self.threads.initial_mapping(ctx)
    }

    fn on_fault(&mut self, _ctx: &PolicyCtx, ev: &FaultEvent, out: &mut Actions) {
        if ev.kind != FaultKind::Injected {
            return;
        }
        let last = self.last.insert(ev.page, (ev.node as u16, ev.thread));
        let mem = if self.migrate_page(ev, last) {
            out.page_moves.push((ev.page, ev.node));
            ev.node
        } else {
            ev.page_node
        };
        if mem == ev.node {
            self.local += 1;
        } else {
            self.remote += 1;
        }
        if let Some(f) = self.faults.get_mut(ev.thread as usize) {
            f[mem] += 1;
        }
    }

    fn on_tick(&mut self, ctx: &PolicyCtx, out: &mut Actions) {
        self.threads.on_tick(ctx, out);
        self.ticks += 1;
        if self.ticks < self.next_scan {
            return;
        }
        if self.scans > 0 {
            self.place_tasks(ctx, out);
            // update_task_scan_period: slow down when 7 in 10 faults were local.
            let all = self.local + self.remote;
            self.scan_every = if all > 0 && self.local * 10 >= all * 7 {
                (self.scan_every * 2).min(self.scan_max)
            } else {
                (self.scan_every / 2).max(self.scan_min)
            };
            for f in &mut self.faults {
                f.iter_mut().for_each(|c| *c /= 2);
            }
        }
        self.local = 0;
        self.remote = 0;
        self.scans += 1;
        self.next_scan = self.ticks + self.scan_every;
        out.inject_faults = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::TestPages;
    use crate::{Machine, SimAccess, SimConfig, Simulator};

    /// cginit's pathology: thread 0 first-touches everything, thread 1 (on the other
    /// package) uses it; after the first scan the hinting faults bring the pages over.
    #[test]
    fn pages_a_master_initialised_move_to_the_node_that_uses_them() {
        let topo = tdmap_topo::from_synthetic("package:2 numa:1 core:2 pu:1").unwrap();
        let cfg = SimConfig {
            tick_cycles: Some(5_000),
            ..SimConfig::default()
        };
        let mut sim = Simulator::new(&topo, cfg, Box::new(NumaBalancing::new(1)), 2).unwrap();
        let pu = sim.thread_pu().to_vec();
        let node = |t: usize| topo.pus[pu[t]].node;
        assert_ne!(node(0), node(1), "os spreads two threads over the packages");
        let base = 1u64 << 30;
        let init: Vec<SimAccess> = (0..32)
            .map(|p| SimAccess::write(0, base + p * 4096, 8))
            .collect();
        sim.run_chunk(&init).unwrap();
        let work: Vec<SimAccess> = (0..40_000u64)
            .map(|i| SimAccess::read(1, base + (i % 32) * 4096 + (i / 32 % 64) * 64, 8))
            .collect();
        sim.run_chunk(&work).unwrap();
        let moved = (0..32)
            .filter(|p| sim.page_node((base >> 12) + p) == Some(node(1)))
            .count();
        let rep = sim.finish();
        assert!(rep.injected_faults > 0, "no scan");
        assert_eq!(moved, 32, "{} migrations", rep.page_migrations);
    }

    /// A thread whose hinting faults say its memory is on node 1 moves there, to an idle
    /// PU, while its node-0 neighbour with no preference stays.
    #[test]
    fn a_thread_moves_towards_its_memory() {
        let topo = tdmap_topo::from_synthetic("package:2 numa:1 core:2 pu:1").unwrap();
        let machine = Machine::new(&topo, &SimConfig::default()).unwrap();
        let pages = TestPages::default();
        let on = |n: usize| (0..4).find(|&q| machine.node_of_pu[q] == n).unwrap();
        let pus = vec![on(0), on(0) + 1];
        let ctx = pages.ctx(&topo, &machine, 2, &pus);
        let mut nb = NumaBalancing::new(1);
        nb.faults = vec![vec![1, 9], vec![0, 0]];
        let mut out = Actions::default();
        nb.place_tasks(&ctx, &mut out);
        assert_eq!(out.thread_moves.len(), 1, "{:?}", out.thread_moves);
        let (t, q) = out.thread_moves[0];
        assert_eq!((t, machine.node_of_pu[q]), (0, 1));
    }
}
