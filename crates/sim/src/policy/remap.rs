//! The rule both online policies (kMAF, SAMMU) remap threads by: a new mapping must lower
//! the cost of the sharing seen plus the cost of the data the moved threads leave behind.
//!
//! Neither paper weighs the data: both move pages after threads (kMAF §3.3, SAMMU §2.6),
//! and on their long runs the pages soon follow. On a run of a few periods, or when the
//! matrix holds only the few sharing events of a reduction, a barrier or a pointer array
//! every thread reads once, a remap that only shortens sharing distances moves threads
//! away from their pages for longer than it wins anything (stencils, private-only ep).

use super::PolicyCtx;
use crate::Machine;
use tdmap_map::Distance;

/// Where each thread's recent accesses found their pages: events per (thread, node),
/// aged with the sharing matrix.
#[derive(Debug, Clone, Default)]
pub struct DataHome {
    nodes: usize,
    counts: Vec<f64>,
}

impl DataHome {
    /// No events yet, for `threads` threads on `nodes` nodes.
    pub fn new(threads: usize, nodes: usize) -> Self {
        DataHome {
            nodes,
            counts: vec![0.0; threads * nodes],
        }
    }

    /// `events` access events of `thread` to pages on `page_node`.
    pub fn add(&mut self, thread: u32, page_node: usize, events: f64) {
        if page_node >= self.nodes {
            return;
        }
        if let Some(c) = self
            .counts
            .get_mut(thread as usize * self.nodes + page_node)
        {
            *c += events;
        }
    }

    /// Multiplies every count by `factor` (the matrix's aging).
    pub fn age(&mut self, factor: f64) {
        for c in &mut self.counts {
            *c *= factor;
        }
    }

    /// The extra memory latency `mapping` gives the recorded events: each thread's events
    /// on pages of a node other than the one it would run on, weighted by how much
    /// slower that node is than a local one.
    pub fn cost(&self, machine: &Machine, mapping: &[usize]) -> f64 {
        let (nodes, lat) = (self.nodes, &machine.mem_latency);
        let mut total = 0.0;
        for (t, &pu) in mapping.iter().enumerate() {
            let a = machine.node_of_pu[pu];
            let Some(row) = self.counts.get(t * nodes..(t + 1) * nodes) else {
                break;
            };
            for (n, &f) in row.iter().enumerate() {
                total += f * lat[a * nodes + n].saturating_sub(lat[n * nodes + n]) as f64;
            }
        }
        total
    }
}

/// Whether `new` costs less than the mapping in force by more than `gain` (a fraction):
/// the sharing matrix `m` (row-major, threads × threads) weighted by the distance
/// between the threads' PUs, plus the data cost of [`DataHome::cost`].
pub fn worth_remapping(
    ctx: &PolicyCtx,
    m: &[f64],
    new: &[usize],
    home: &DataHome,
    gain: f64,
) -> bool {
    let n = ctx.threads;
    let kind = if ctx.topo.latencies.is_some() {
        Distance::Latency
    } else {
        Distance::Hops
    };
    let cost = |map: &[usize]| {
        tdmap_map::cost(ctx.topo, m, n, map, kind)
            .ok()
            .map(|c| c + home.cost(ctx.machine, map))
    };
    match (cost(ctx.thread_pu), cost(new)) {
        (Some(old), Some(new)) => new < old * (1.0 - gain),
        _ => false,
    }
}
