//! The counters a run produces and the report derived from them: modelled time, cache
//! misses, interconnect traffic, remote accesses and migrations.

use serde::{Deserialize, Serialize};

/// Counters of the memory system.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemStats {
    /// L1 hits.
    pub l1_hits: u64,
    /// L1 misses.
    pub l1_misses: u64,
    /// Private L2 hits (0 when the L2 is shared or absent).
    pub l2_hits: u64,
    /// Private L2 misses.
    pub l2_misses: u64,
    /// Hits in the shared last-level cache.
    pub llc_hits: u64,
    /// Misses in the last-level cache: the "L3 misses" of the papers (the shared L2 on
    /// `simics-4x2`, the private L2 on machines without a shared cache).
    pub llc_misses: u64,
    /// Cache-to-cache transfers within a package.
    pub c2c_intra: u64,
    /// Cache-to-cache transfers between packages.
    pub c2c_inter: u64,
    /// Copies invalidated by writes.
    pub invalidations: u64,
    /// Write hits on Shared lines that had to gain ownership.
    pub upgrades: u64,
    /// Dirty lines written back.
    pub writebacks: u64,
    /// Lines read from the requester's own node.
    pub mem_local: u64,
    /// Lines read from another node.
    pub mem_remote: u64,
    /// Bytes on on-chip interconnects.
    pub traffic_intra: u64,
    /// Bytes on inter-chip links.
    pub traffic_inter: u64,
}

/// Everything one run reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SimReport {
    /// The policy's name.
    pub policy: String,
    /// Accesses replayed.
    pub accesses: u64,
    /// Modelled execution time: the clock of the thread that ends last (each thread's
    /// clock starts at the simulated time of its first access).
    pub cycles_max: u64,
    /// The cycles all threads ran, added up (start times not included).
    pub cycles_total: u64,
    /// The clock of each thread at its end (its start time plus the cycles it ran).
    pub thread_cycles: Vec<u64>,
    /// Memory-system counters.
    pub mem: MemStats,
    /// TLB misses.
    pub tlb_misses: u64,
    /// Page faults (first touch and injected).
    pub faults: u64,
    /// Of those, the injected ones (kMAF extra faults, NUMA hinting faults).
    pub injected_faults: u64,
    /// Cycles the threads spent in page faults of both kinds.
    pub fault_cycles: u64,
    /// Cycles the threads spent in thread migrations (kernel side; cold caches not
    /// included).
    pub thread_migration_cycles: u64,
    /// Cycles the threads spent in page migrations.
    pub page_migration_cycles: u64,
    /// Thread migrations performed.
    pub thread_migrations: u64,
    /// Page migrations performed.
    pub page_migrations: u64,
    /// Policy periods elapsed.
    pub ticks: u64,
}

impl SimReport {
    /// Share of memory reads served by a remote node.
    pub fn remote_ratio(&self) -> f64 {
        let all = self.mem.mem_local + self.mem.mem_remote;
        if all == 0 {
            0.0
        } else {
            self.mem.mem_remote as f64 / all as f64
        }
    }

    /// The papers' "L3 misses".
    pub fn l3_misses(&self) -> u64 {
        self.mem.llc_misses
    }

    /// Bytes on inter-chip links, page copies included.
    pub fn interchip_bytes(&self) -> u64 {
        self.mem.traffic_inter
    }
}
