//! The energy estimate of one policy's replay (issue 18 item 6), SIMULATED: core power
//! over the modelled time, plus a per-operation energy for each cache access, each line
//! read from DRAM and each byte on the inter-chip links, counted from the run's counters.
//! The constants are the only place the model's energies are written, each with its
//! public source; they are orders of magnitude for a 45 nm server of the Nehalem-EX
//! generation (the kMAF paper's machine), not a measurement of any one machine.

use crate::machine::Machine;
use crate::stats::SimReport;
use serde::{Deserialize, Serialize};

/// Power of one busy core: the Xeon X7550's thermal design power, 130 W for 8 cores
/// (Intel ARK, "Intel Xeon Processor X7550"), 16.25 W per core. It stands for the core's
/// static power and the dynamic power of everything the model does not count apart.
pub const CORE_WATTS: f64 = 130.0 / 8.0;

/// Energy of one access to an SRAM array, by size: 10 pJ for 8 KiB, 20 pJ for 32 KiB,
/// 100 pJ for 1 MiB, at 45 nm (M. Horowitz, "Computing's energy problem (and what we can
/// do about it)", ISSCC 2014, Fig. 1.1.9: a 64-bit read). Between and beyond those
/// points, log-linear: x5 per 32x in size, the slope from 32 KiB to 1 MiB.
pub fn sram_access_joules(bytes: u64) -> f64 {
    let kib = (bytes as f64 / 1024.0).max(1.0);
    let pj = if kib <= 32.0 {
        10.0 * (kib / 8.0).powf((2.0f64).ln() / 4.0f64.ln())
    } else {
        20.0 * (kib / 32.0).powf(5.0f64.ln() / 32.0f64.ln())
    };
    // Rounded to the femtojoule: a short decimal reads back from JSON exactly.
    (pj * 1e3).round() / 1e15
}

/// Energy of one 64-bit DRAM access: Horowitz's 1.3-2.6 nJ at 45 nm (ISSCC 2014, as
/// above), the upper figure, as a line read opens a row. A line is this per 8 bytes.
pub const DRAM_JOULES_PER_8_BYTES: f64 = 2.6e-9;

/// Energy per bit on an inter-chip link: 500 pJ to move 256 bits over an efficient
/// off-chip link, about 2 pJ per bit (S. W. Keckler et al., "GPUs and the future of
/// parallel computing", IEEE Micro 31(5), 2011, Fig. 3, 40 nm).
pub const LINK_JOULES_PER_BIT: f64 = 500e-12 / 256.0;

/// The per-operation energies for one machine, in joules; written into the sim report so
/// that every figure can be recomputed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EnergyModel {
    /// Watts per core ([`CORE_WATTS`]).
    pub core_watts: f64,
    /// Cores of the machine: all of them draw power while the run lasts.
    pub cores: usize,
    /// Clock in Hz, to turn modelled cycles into seconds.
    pub hz: f64,
    /// Joules per L1 access (hit or miss).
    pub l1: f64,
    /// Joules per private-L2 access.
    pub l2: f64,
    /// Joules per shared-cache access.
    pub llc: f64,
    /// Joules per line read from or written to DRAM.
    pub dram_line: f64,
    /// Joules per byte on the inter-chip links.
    pub link_byte: f64,
    /// Lines per page: a page migration reads and writes that many lines of DRAM.
    pub lines_per_page: u64,
}

impl EnergyModel {
    /// The energies of a machine's caches and line size.
    pub fn for_machine(m: &Machine, page_size: u64) -> EnergyModel {
        let size_of = |i: usize| m.private.get(i).map_or(0, |g| g.size);
        EnergyModel {
            core_watts: CORE_WATTS,
            cores: m.cores(),
            hz: m.hz,
            l1: sram_access_joules(size_of(0)),
            l2: sram_access_joules(size_of(1)),
            llc: m
                .shared
                .as_ref()
                .map_or(0.0, |s| sram_access_joules(s.geom.size)),
            dram_line: DRAM_JOULES_PER_8_BYTES * (m.line as f64 / 8.0),
            link_byte: LINK_JOULES_PER_BIT * 8.0,
            lines_per_page: page_size / m.line.max(1),
        }
    }
}

/// One replay's estimated energy in joules, by part (SIMULATED).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Energy {
    /// Core power × modelled time × the machine's cores: the machine is on until the last
    /// thread ends, so a faster run saves this part; SMT siblings share their core's.
    pub cores: f64,
    /// Every cache lookup, at the energy of its level.
    pub caches: f64,
    /// Lines read from the requester's own node.
    pub dram_local: f64,
    /// Lines read from another node (the link crossing is in `interchip`).
    pub dram_remote: f64,
    /// Page migrations: each page's lines read on one node and written on another.
    pub dram_migrations: f64,
    /// Bytes on the inter-chip links: remote lines, cache-to-cache transfers, control
    /// messages and page copies.
    pub interchip: f64,
    /// The sum.
    pub total: f64,
}

impl Energy {
    /// The estimate for one replay.
    pub fn of(r: &SimReport, m: &EnergyModel) -> Energy {
        let s = &r.mem;
        let seconds = r.cycles_max as f64 / m.hz;
        let cores = m.core_watts * seconds * m.cores as f64;
        let caches = (s.l1_hits + s.l1_misses) as f64 * m.l1
            + (s.l2_hits + s.l2_misses) as f64 * m.l2
            + (s.llc_hits + s.llc_misses) as f64 * m.llc;
        let dram_local = s.mem_local as f64 * m.dram_line;
        let dram_remote = s.mem_remote as f64 * m.dram_line;
        let dram_migrations = (r.page_migrations * 2 * m.lines_per_page) as f64 * m.dram_line;
        let interchip = s.traffic_inter as f64 * m.link_byte;
        Energy {
            cores,
            caches,
            dram_local,
            dram_remote,
            dram_migrations,
            interchip,
            total: cores + caches + dram_local + dram_remote + dram_migrations + interchip,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemStats, SimConfig};

    #[test]
    fn sram_energy_goes_through_horowitzs_points() {
        for (bytes, pj) in [(8 << 10, 10.0), (32 << 10, 20.0), (1 << 20, 100.0)] {
            let got = sram_access_joules(bytes) * 1e12;
            assert!((got - pj).abs() < 1e-6, "{bytes}: {got} pJ");
        }
        assert!(sram_access_joules(18 << 20) > sram_access_joules(1 << 20));
    }

    #[test]
    fn each_counter_costs_its_own_energy() {
        let t = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let m = Machine::new(&t, &SimConfig::default()).unwrap();
        let model = EnergyModel::for_machine(&m, 4096);
        assert_eq!(model.lines_per_page, 64);
        assert!((model.dram_line - 8.0 * 2.6e-9).abs() < 1e-15);
        let mut r = SimReport {
            policy: "os".into(),
            cycles_max: m.hz as u64, // one second
            thread_cycles: vec![0; 4],
            mem: MemStats::default(),
            ..SimReport::default()
        };
        let idle = Energy::of(&r, &model);
        assert!(
            (idle.cores - 32.0 * CORE_WATTS).abs() < 1e-9,
            "32 cores, 1 s"
        );
        assert_eq!(idle.total, idle.cores);
        r.mem.mem_remote = 1000;
        r.mem.traffic_inter = 64_000;
        r.page_migrations = 1;
        let e = Energy::of(&r, &model);
        assert!((e.dram_remote - 1000.0 * model.dram_line).abs() < 1e-12);
        assert!((e.interchip - 64_000.0 * 8.0 * LINK_JOULES_PER_BIT).abs() < 1e-12);
        assert!((e.dram_migrations - 128.0 * model.dram_line).abs() < 1e-12);
        let parts = e.cores + e.caches + e.dram_local + e.dram_remote + e.dram_migrations;
        assert!((e.total - parts - e.interchip).abs() < 1e-9);
    }
}
