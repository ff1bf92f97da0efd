//! The simulator's parameters that a topology does not carry: associativities, TLB shape,
//! the costs of faults and migrations, and the policy period. Every default is written
//! down here so that any result can be reproduced from the printed configuration.

use serde::{Deserialize, Serialize};
use tdmap_topo::Latencies;

/// Costs in cycles of the events that the topology's latencies do not cover.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Costs {
    /// Work of one access outside the memory system (the instruction that makes it).
    pub compute: u64,
    /// A page walk on a TLB miss.
    pub page_walk: u64,
    /// A first-touch page fault: about 1.5 µs at 2 GHz (FACTS: 1.5-3.2 µs).
    pub fault: u64,
    /// An injected fault on a present page (kMAF extra fault, NUMA hinting fault): no
    /// allocation, resolved at once by the handler (kMAF §3.1.2); about 0.5 µs.
    pub injected_fault: u64,
    /// A thread migration, kernel side only; the cold caches and TLB that follow are
    /// modelled by the caches themselves. About 5 µs at 2 GHz.
    pub thread_migration: u64,
    /// A page migration (unmap, copy, remap), on top of the copy's interconnect bytes.
    /// About 4 µs at 2 GHz.
    pub page_migration: u64,
    /// A control message on the interconnect (invalidation, upgrade), in bytes.
    pub control_bytes: u64,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            compute: 1,
            page_walk: 30,
            fault: 3_000,
            injected_fault: 1_000,
            thread_migration: 10_000,
            page_migration: 8_000,
            control_bytes: 8,
        }
    }
}

/// Latencies used when the topology gives none (a synthetic or live machine): the
/// Nehalem-EX figures of the presets.
pub const DEFAULT_LATENCIES: Latencies = tdmap_topo::NEHALEM_EX;

/// Everything the model needs besides the topology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    /// Page size in bytes, a power of two.
    pub page_size: u64,
    /// Ways of the L1 caches when the topology does not say (hwloc synthetic never does).
    /// 8, as in every x86 L1d since Nehalem.
    pub l1_ways: u32,
    /// Ways of the L2 caches when the topology does not say: 8 (Nehalem, SAMMU Table 1).
    pub l2_ways: u32,
    /// Ways of the L3 caches when the topology does not say: 16 (a power of two close
    /// to Nehalem-EX's 24 that keeps the set count exact for power-of-two sizes).
    pub l3_ways: u32,
    /// TLB entries per core (SAMMU Table 1: 64).
    pub tlb_entries: u32,
    /// TLB ways (SAMMU Table 1: 4).
    pub tlb_ways: u32,
    /// The value at which a TLB entry's access counter saturates (SAMMU: 32-bit AC).
    pub ac_max: u32,
    /// The policy period in cycles; `None` means 100 ms at the machine's clock
    /// (SAMMU §2.7.1, kMAF §3.4).
    pub tick_cycles: Option<u64>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Latencies when the topology has none.
    pub fallback_latencies: Latencies,
    /// Event costs.
    pub costs: Costs,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            page_size: 4096,
            l1_ways: 8,
            l2_ways: 8,
            l3_ways: 16,
            tlb_entries: 64,
            tlb_ways: 4,
            ac_max: u32::MAX,
            tick_cycles: None,
            seed: 1,
            fallback_latencies: DEFAULT_LATENCIES,
            costs: Costs::default(),
        }
    }
}
