//! A simple model of Linux's automatic NUMA balancing (`kernel.numa_balancing=1`):
//! the kernel periodically unmaps the pages of a task so that the next access takes a
//! NUMA hinting fault, and a page migrates to the faulting node when two consecutive
//! hinting faults on it come from that node (the two-stage filter of
//! `should_numa_migrate_memory`, which keys on the page's last CPU/PID).
//!
//! Modelled: the scan (every `scan_secs` of simulated time, all pages), the two-stage filter, page
//! migration. Not modelled: task placement towards the preferred node, scan rate
//! adaptation, the scan size limit. Threads behave as under `os`.

use super::basic::{OsPolicy, PagePlacement};
use super::{Actions, FaultEvent, FaultKind, Policy, PolicyCtx};
use crate::hash::FastMap;

/// Linux NUMA balancing, page side only.
#[derive(Debug, Clone)]
pub struct NumaBalancing {
    /// Thread placement and load-balancer migrations, as under `os`.
    pub threads: OsPolicy,
    /// Seconds of simulated time between scans (Linux's minimum scan period: 1 s).
    pub scan_secs: f64,
    last_node: FastMap<u64, u16>,
    since_scan: f64,
}

impl NumaBalancing {
    /// The model with a seed for the thread side.
    pub fn new(seed: u64) -> Self {
        NumaBalancing {
            threads: OsPolicy::new("numa-balancing", seed, PagePlacement::FirstTouch),
            scan_secs: 1.0,
            last_node: FastMap::default(),
            since_scan: 0.0,
        }
    }
}

impl Policy for NumaBalancing {
    fn name(&self) -> String {
        "numa-balancing".into()
    }

    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize> {
        self.threads.initial_mapping(ctx)
    }

    fn on_fault(&mut self, _ctx: &PolicyCtx, ev: &FaultEvent, out: &mut Actions) {
        let last = self.last_node.insert(ev.page, ev.node as u16);
        if ev.kind == FaultKind::Injected && last == Some(ev.node as u16) && ev.node != ev.page_node
        {
            out.page_moves.push((ev.page, ev.node));
        }
    }

    fn on_tick(&mut self, ctx: &PolicyCtx, out: &mut Actions) {
        self.threads.on_tick(ctx, out);
        self.since_scan += ctx.period_secs();
        if self.since_scan >= self.scan_secs {
            self.since_scan = 0.0;
            out.inject_faults = true;
        }
    }
}
