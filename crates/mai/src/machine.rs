//! numarch (Minas §3.3) as libmai sees it: the live machine from crates/topo reduced to
//! what the policies need (OS node numbers, CPUs of each node, caches, NUMA factor),
//! discovered once per process.

use crate::error::{MaiError, Result};
use std::sync::OnceLock;

/// The machine facts libmai uses, with OS numbering for nodes and CPUs.
#[derive(Debug, Clone)]
pub struct Machine {
    /// OS index of each node, in logical order (the policies' node `l` is `nodes[l]`).
    pub nodes: Vec<usize>,
    /// OS CPUs of each node, by logical node.
    pub cpus_of_node: Vec<Vec<usize>>,
    /// OS CPUs in logical PU order (the compact thread placement).
    pub cpus: Vec<usize>,
    /// Data cache sizes in bytes by level (index 0 = L1), 0 where there is none.
    pub caches: Vec<u64>,
    /// The largest cache (MApp's eligible-array threshold, §3.2).
    pub llc: u64,
    /// Largest remote/local distance ratio.
    pub numa_factor: f64,
    /// Fraction of node pairs joined by one hop (the minimum remote distance): a proxy for
    /// "number of interconnections" (§3.2); 1 on a one-node machine.
    pub connectivity: f64,
}

static MACHINE: OnceLock<std::result::Result<Machine, String>> = OnceLock::new();

/// The live machine, discovered on first use.
pub fn machine() -> Result<&'static Machine> {
    MACHINE
        .get_or_init(|| {
            tdmap_topo::live()
                .map(|t| Machine::from_topology(&t))
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| MaiError::Topology(e.clone()))
}

impl Machine {
    /// Reduces a topology to libmai's view.
    pub fn from_topology(t: &tdmap_topo::Topology) -> Machine {
        let m = t.num_nodes().max(1);
        let nodes: Vec<usize> = (0..m).map(|n| t.node_os_index(n)).collect();
        let os = |pu: &usize| t.pus[*pu].os;
        let cpus_of_node = (0..m)
            .map(|n| t.pus_of_node(n).iter().map(os).collect())
            .collect();
        let caches = (1..=4u8)
            .map(|l| t.cache_of_pu(0, l).map_or(0, |c| c.size))
            .collect();
        Machine {
            nodes,
            cpus_of_node,
            cpus: t.pus.iter().map(|p| p.os).collect(),
            caches,
            llc: t.last_level_cache_size(),
            numa_factor: t.numa_factor(),
            connectivity: connectivity(&t.distances),
        }
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Logical index of OS node `os`.
    pub fn logical_node(&self, os: i64) -> Result<usize> {
        usize::try_from(os)
            .ok()
            .and_then(|o| self.nodes.iter().position(|&n| n == o))
            .ok_or(MaiError::NoNode(os))
    }

    /// OS node of OS CPU `cpu`.
    pub fn node_of_cpu(&self, cpu: i64) -> Result<usize> {
        let c = usize::try_from(cpu).map_err(|_| MaiError::NoCpu(cpu))?;
        self.cpus_of_node
            .iter()
            .position(|cs| cs.contains(&c))
            .map(|l| self.nodes[l])
            .ok_or(MaiError::NoCpu(cpu))
    }
}

/// Share of node pairs at the minimum remote distance (directly linked).
fn connectivity(d: &tdmap_topo::Distances) -> f64 {
    let pairs: Vec<u64> = (0..d.n)
        .flat_map(|i| (i + 1..d.n).map(move |j| (i, j)))
        .map(|(i, j)| d.get(i, j) as u64)
        .collect();
    match pairs.iter().min() {
        None => 1.0,
        Some(min) => pairs.iter().filter(|&&x| x == *min).count() as f64 / pairs.len() as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_reduce_to_os_numbers_and_a_connectivity() {
        let t = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let m = Machine::from_topology(&t);
        assert_eq!(m.num_nodes(), 4);
        assert_eq!(m.cpus.len(), 64);
        assert_eq!(m.cpus_of_node.iter().map(Vec::len).sum::<usize>(), 64);
        assert!(m.llc > 0);
        assert!(m.numa_factor > 1.0);
        assert!(m.connectivity > 0.0 && m.connectivity <= 1.0);
        let cpu = m.cpus_of_node[2][0] as i64;
        assert_eq!(m.node_of_cpu(cpu).unwrap(), m.nodes[2]);
        assert!(matches!(m.logical_node(99), Err(MaiError::NoNode(99))));
        assert!(matches!(m.node_of_cpu(-1), Err(MaiError::NoCpu(-1))));
    }

    #[test]
    fn connectivity_counts_one_hop_pairs() {
        let ring =
            tdmap_topo::Distances::parse("10,12,20,22;12,10,22,20;20,22,10,12;22,20,12,10", 4)
                .unwrap();
        assert!((connectivity(&ring) - 2.0 / 6.0).abs() < 1e-9);
        let full = tdmap_topo::Distances::parse("10:17", 2).unwrap();
        assert_eq!(connectivity(&full), 1.0);
    }
}
