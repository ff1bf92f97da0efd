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
    /// The L1 data cache of every core, replacing the topology's (cachegrind's `--D1`).
    #[serde(default)]
    pub l1: Option<CacheSpec>,
    /// The last-level cache, replacing every level above the L1 (cachegrind's `--LL`):
    /// one per package, non-inclusive, as cachegrind's LL is (a D1 line stays when the
    /// LL evicts it).
    #[serde(default)]
    pub ll: Option<CacheSpec>,
    /// The bytes of data the program allocates, which the OS knows from its allocations
    /// before the pages are touched (`VmData`); None: only the resident set is known.
    /// `tdmap sim` gives the pages the whole trace touches (its first-touch faults), since
    /// a trace records no allocation.
    #[serde(default)]
    pub data_bytes: Option<u64>,
}

/// A cache level given by hand, in cachegrind's terms: total bytes, ways, line bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheSpec {
    /// Bytes per instance.
    pub size: u64,
    /// Ways.
    pub ways: u32,
    /// Line size in bytes.
    pub line: u64,
}

impl CacheSpec {
    /// Parses cachegrind's `SIZE,ASSOC,LINE` (bytes, e.g. `32768,8,64`). The set count
    /// must be a power of two and the line a power of two of at least 8 bytes, as
    /// cachegrind requires.
    pub fn parse(s: &str) -> Result<CacheSpec, String> {
        let f: Vec<&str> = s.split(',').map(str::trim).collect();
        let num = |x: &str| x.parse::<u64>().ok().filter(|&v| v > 0);
        let [Some(size), Some(ways), Some(line)] = [0, 1, 2].map(|i| f.get(i).and_then(|x| num(x)))
        else {
            return Err(format!(
                "{s:?}: give SIZE,ASSOC,LINE in bytes, e.g. 32768,8,64"
            ));
        };
        if f.len() != 3 || !line.is_power_of_two() || line < 8 || ways > 1024 {
            return Err(format!(
                "{s:?}: give SIZE,ASSOC,LINE with a power-of-two LINE of at least 8 bytes and at most 1024 ways"
            ));
        }
        let sets = size / (ways * line);
        if sets == 0 || sets * ways * line != size || !sets.is_power_of_two() {
            return Err(format!(
                "{s:?}: SIZE / (ASSOC x LINE) must be a whole power of two (the set count)"
            ));
        }
        Ok(CacheSpec {
            size,
            ways: ways as u32,
            line,
        })
    }
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
            l1: None,
            ll: None,
            data_bytes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_spec_is_cachegrinds_size_assoc_line() {
        let c = CacheSpec::parse("32768,8,64").unwrap();
        assert_eq!((c.size, c.ways, c.line), (32768, 8, 64));
        for bad in [
            "32768,8",
            "32768,8,48",
            "24576,8,64",
            "0,8,64",
            "a,b,c",
            "32768,8,64,1",
        ] {
            assert!(CacheSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
