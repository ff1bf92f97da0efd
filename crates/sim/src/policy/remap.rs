//! The rule SAMMU remaps threads by: a new mapping must lower the cost of the sharing
//! seen plus the cost of the data the moved threads leave behind (tdmap-monitor's
//! [`DataHome`], which kMAF's loop weighs the same way with `Config::data_cost`), priced
//! here by the simulated machine's memory latencies.

use super::PolicyCtx;
use tdmap_map::Distance;
use tdmap_monitor::DataHome;

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
            .map(|c| c + data_cost(ctx, home, map))
    };
    match (cost(ctx.thread_pu), cost(new)) {
        (Some(old), Some(new)) => new < old * (1.0 - gain),
        _ => false,
    }
}

/// The extra memory latency `mapping` gives the events of `home`: cycles over a local
/// access, by the machine's latency matrix.
fn data_cost(ctx: &PolicyCtx, home: &DataHome, mapping: &[usize]) -> f64 {
    let (m, nodes) = (ctx.machine, ctx.machine.nodes());
    home.cost(
        mapping,
        |pu| m.node_of_pu[pu],
        |a, n| m.mem_latency[a * nodes + n].saturating_sub(m.mem_latency[n * nodes + n]) as f64,
    )
}
