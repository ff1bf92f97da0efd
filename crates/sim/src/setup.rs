//! What every run starts from, checked once for a simulator of its own and for each
//! lane of a lockstep group: the configuration, the machine model, the policy's initial
//! thread mapping and the period.

use crate::config::SimConfig;
use crate::error::SimError;
use crate::machine::Machine;
use crate::policy::{Policy, PolicyCtx};
use tdmap_topo::Topology;

/// What a run of `policy` starts from: the machine model, the policy's initial thread
/// mapping (checked) and the period in cycles.
pub(crate) fn setup(
    topo: &Topology,
    cfg: &SimConfig,
    policy: &mut dyn Policy,
    threads: usize,
) -> Result<(Machine, Vec<usize>, u64), SimError> {
    if threads == 0 {
        return Err(SimError::NoThreads);
    }
    check(cfg)?;
    let machine = Machine::new(topo, cfg)?;
    let ctx = PolicyCtx::before_run(topo, &machine, threads);
    let thread_pu = policy.initial_mapping(&ctx);
    let bad = |why: String| SimError::BadPolicyOutput {
        policy: policy.name(),
        why,
    };
    if thread_pu.len() != threads {
        return Err(bad(format!(
            "{} PUs for {threads} threads",
            thread_pu.len()
        )));
    }
    if let Some(&pu) = thread_pu.iter().find(|&&p| p >= machine.pus()) {
        return Err(bad(format!(
            "PU {pu}, beyond the machine's {}",
            machine.pus()
        )));
    }
    let period = cfg
        .tick_cycles
        .unwrap_or((machine.hz * crate::PERIOD_S) as u64)
        .max(1);
    Ok((machine, thread_pu, period))
}

fn check(cfg: &SimConfig) -> Result<(), SimError> {
    let bad = |why: &str| Err(SimError::BadConfig { why: why.into() });
    if !cfg.page_size.is_power_of_two() || cfg.page_size < 64 {
        return bad("the page size must be a power of two of at least 64 bytes");
    }
    if cfg.tlb_entries == 0 || cfg.tlb_ways == 0 {
        return bad("the TLB needs at least one entry and one way");
    }
    if cfg.ac_max == 0 {
        return bad("the access counter maximum must be positive");
    }
    Ok(())
}
