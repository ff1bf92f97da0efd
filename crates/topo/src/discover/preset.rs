//! Named presets of the papers' machines, built through hwloc's synthetic backend with
//! the distances and latencies that hwloc synthetic strings cannot carry.
//!
//! Values the papers give are used as given; the others are documented where chosen.

use crate::model::Latencies;
use crate::{Distances, DistancesSource, TopoError, Topology};

/// A paper's machine.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// The name users type.
    pub name: &'static str,
    /// One line about the machine and the paper it comes from.
    pub about: &'static str,
    /// The hwloc synthetic description.
    pub synthetic: &'static str,
    /// The node distance matrix, rows separated by ';'.
    pub distances: &'static str,
    /// Latencies in cycles.
    pub latencies: Latencies,
}

/// Nehalem-EX latencies (cycles): L1 4, L2 10 and L3 ~40 are the microarchitecture's
/// published figures; the papers give none. Memory ~200 cycles local at 2 GHz.
pub const NEHALEM_EX: Latencies = Latencies {
    l1: 4.0,
    l2: 10.0,
    l3: 40.0,
    mem_local: 200.0,
    interchip: 40.0,
    ghz: 2.0,
};

/// The papers' machines. Distances not given by a paper are chosen and commented.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "xeon-x7550-4s",
        about: "4 x Xeon X7550, 8 cores, 2-SMT, 18 MB L3 per package, 4 NUMA nodes (kMAF Table 2, SAMMU Xeon64)",
        synthetic: "pack:4 [numa(memory=32GiB)] l3:1(size=18MiB) l2:8(size=256KiB) l1d:1(size=32KiB) core:1 pu:2",
        // Four fully connected QPI sockets: one hop everywhere; the SLIT convention is 10/20.
        distances: "10,20,20,20;20,10,20,20;20,20,10,20;20,20,20,10",
        latencies: NEHALEM_EX,
    },
    Preset {
        name: "xeon-e5-2650-2s",
        about: "2 x Xeon E5-2650, 8 cores, 2-SMT, 20 MB L3 per package, 2 NUMA nodes (SAMMU Xeon32)",
        synthetic: "pack:2 [numa(memory=16GiB)] l3:1(size=20MiB) l2:8(size=256KiB) l1d:1(size=32KiB) core:1 pu:2",
        // Sandy Bridge-EP firmware reports 10/21 on two sockets.
        distances: "10,21;21,10",
        latencies: Latencies {
            l1: 4.0,
            l2: 12.0,
            l3: 30.0,
            mem_local: 180.0,
            interchip: 40.0,
            ghz: 2.0,
        },
    },
    Preset {
        name: "opteron-8n",
        about: "8 NUMA nodes x 2 cores, private 1 MB L2, no shared cache, NUMA factor 1.2-1.5 (trace-mapping paper, Table II)",
        synthetic: "pack:8 [numa(memory=4GiB)] l2:2(size=1MiB) l1d:1(size=64KiB) core:1 pu:1",
        // The paper gives the range 1.2-1.5 only. Nodes sit on a 2x4 ladder of
        // HyperTransport links: 1 hop = 12, 2 hops = 14, 3 or more = 15.
        distances: "10,12,12,14,14,15,15,15;12,10,14,12,15,14,15,15;12,14,10,12,12,14,14,15;14,12,12,10,14,12,15,14;14,15,12,14,10,12,12,14;15,14,14,12,12,10,14,12;15,15,14,15,12,14,10,12;15,15,15,14,14,12,12,10",
        latencies: Latencies {
            l1: 3.0,
            l2: 12.0,
            l3: 0.0,
            mem_local: 150.0,
            interchip: 60.0,
            ghz: 2.2,
        },
    },
    Preset {
        name: "xeon-x7560-4n",
        about: "4 nodes x 8 cores, 24 MB shared L3, NUMA factor 1.2-3.6 (trace-mapping paper, Table II)",
        synthetic: "pack:4 [numa(memory=32GiB)] l3:1(size=24MiB) l2:8(size=256KiB) l1d:1(size=32KiB) core:1 pu:1",
        // The paper gives the range 1.2-3.6 only. Chosen: a ring where neighbours are at
        // 12 and the opposite node, two hops through a node controller, at 36.
        distances: "10,12,36,12;12,10,12,36;36,12,10,12;12,36,12,10",
        latencies: NEHALEM_EX,
    },
    Preset {
        name: "simics-4x2",
        about: "4 processors x 2 cores at 2 GHz, 16 KB L1, shared 1 MB L2 per processor, 64-entry TLBs (SAMMU Table 1, Simics)",
        synthetic: "pack:4 [numa(memory=2GiB)] l2:1(size=1MiB) l1d:2(size=16KiB) core:1 pu:1",
        // SAMMU Table 1: interchip links are a bidirectional ring with 40-cycle hops;
        // with ~200-cycle local memory, one hop is 1.2 and two hops 1.4.
        distances: "10,12,14,12;12,10,12,14;14,12,10,12;12,14,12,10",
        latencies: Latencies {
            l1: 2.0,
            l2: 5.0,
            l3: 0.0,
            mem_local: 200.0,
            interchip: 40.0,
            ghz: 2.0,
        },
    },
];

/// The preset names, in order.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// Builds a preset by name.
pub fn preset(name: &str) -> Result<Topology, TopoError> {
    let p = PRESETS
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| TopoError::UnknownMachine {
            name: name.to_string(),
            presets: preset_names().join(", "),
        })?;
    let mut t = super::from_synthetic(p.synthetic)?;
    t.name = p.name.to_string();
    t.distances = Distances::parse(p.distances, t.num_nodes())?;
    t.distances.source = DistancesSource::Given;
    t.latencies = Some(p.latencies);
    Ok(t)
}
