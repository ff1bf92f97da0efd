//! The rule SAMMU remaps threads by: a new mapping must lower the cost of the sharing
//! seen plus the cost of the data the moved threads leave behind (tdmap-monitor's
//! [`DataHome`], which kMAF's loop weighs the same way with `Config::data_cost`), priced
//! here by the simulated machine's memory latencies; and threads are gathered only into
//! last-level caches that hold the program's data ([`fits_caches`]).

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
        (Some(old), Some(new_cost)) => {
            new_cost < old * (1.0 - gain) && !gathers_past_caches(ctx, new)
        }
        _ => false,
    }
}

/// The last-level cache instances (one per package on the presets) the threads of
/// `mapping` run under; 1 on a machine with no shared level.
pub fn caches_used(ctx: &PolicyCtx, mapping: &[usize]) -> usize {
    let Some(llc) = &ctx.machine.shared else {
        return 1;
    };
    let mut used: Vec<usize> = mapping
        .iter()
        .map(|&pu| llc.domain_of_core[ctx.machine.core_of_pu[pu]])
        .collect();
    used.sort_unstable();
    used.dedup();
    used.len()
}

/// Whether the program's data fits in `caches` last-level caches.
///
/// Neither cost of [`worth_remapping`] sees capacity. Gathering the 8 threads of an
/// FFT-like transpose of 32 MiB from 4 packages onto one, whose L3 holds 18 MiB, saves
/// inter-chip transfers but turns L3 hits into misses: SIMULATED on xeon-x7550-4s,
/// `fft 8 128 4` gave sammu 1.244 of os with L3 misses 2.1× (compact 1.135), and
/// 1.019-1.032 with this rule on the resident set, 1.002 on the data the program
/// allocates (`make bench-sim-fft`). The paper's runs had one thread per PU (§3.3), where
/// no mapping gathers; this is tdmap's rule for fewer threads than PUs. The data is what
/// the OS knows of it ([`PageView::data_bytes`](super::PageView::data_bytes)): the
/// allocations (`VmData`) when given, which FFT's matrices reach before their first
/// touch, else the resident set; SAMMU's tables do not see the pages that stay in the
/// TLBs.
pub fn fits_caches(ctx: &PolicyCtx, caches: usize) -> bool {
    ctx.machine
        .shared
        .as_ref()
        .is_none_or(|llc| ctx.pages.data_bytes() <= caches as u64 * llc.geom.size)
}

/// Whether `new` puts the threads under fewer last-level caches than they run under
/// now, with the resident pages too large for those.
fn gathers_past_caches(ctx: &PolicyCtx, new: &[usize]) -> bool {
    let fewer = caches_used(ctx, new);
    fewer < caches_used(ctx, ctx.thread_pu) && !fits_caches(ctx, fewer)
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
