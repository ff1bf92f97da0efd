//! The modelled machine's geometry, derived once from a [`Topology`]: which cores and
//! packages the PUs belong to, which cache levels are private to a core and which one is
//! shared, the latencies of each level and of memory from each node to each node.

use crate::config::SimConfig;
use crate::error::SimError;
use tdmap_topo::{Latencies, ObjKind, Topology};

/// One cache level's shape and hit latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheGeom {
    /// 1, 2 or 3.
    pub level: u8,
    /// Bytes per instance.
    pub size: u64,
    /// Ways.
    pub ways: u32,
    /// Hit latency in cycles.
    pub latency: u64,
}

/// The shared cache level: its shape and which instance each core uses.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedGeom {
    /// Shape of each instance.
    pub geom: CacheGeom,
    /// Instance used by each core.
    pub domain_of_core: Vec<usize>,
    /// Number of instances.
    pub domains: usize,
}

/// The machine as the simulator sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Core of each PU.
    pub core_of_pu: Vec<usize>,
    /// NUMA node of each PU.
    pub node_of_pu: Vec<usize>,
    /// Package of each core.
    pub pkg_of_core: Vec<usize>,
    /// Package of each node (the package of its first PU), to tell on-chip memory
    /// traffic from inter-chip traffic.
    pub pkg_of_node: Vec<usize>,
    /// Number of packages.
    pub packages: usize,
    /// Line size in bytes.
    pub line: u64,
    /// Private levels, innermost first (one or two).
    pub private: Vec<CacheGeom>,
    /// The outermost shared level, if any.
    pub shared: Option<SharedGeom>,
    /// Memory latency in cycles, `[from_node * nodes + to_node]`.
    pub mem_latency: Vec<u64>,
    /// Extra cycles of a transfer between packages.
    pub interchip: u64,
    /// Cycles per second.
    pub hz: f64,
}

impl Machine {
    /// Derives the model from a topology and the configuration's defaults.
    pub fn new(topo: &Topology, cfg: &SimConfig) -> Result<Self, SimError> {
        let lat = topo.latencies.unwrap_or(cfg.fallback_latencies);
        let core_of_pu: Vec<usize> = topo.pus.iter().map(|p| p.core).collect();
        let cores = core_of_pu.iter().max().map_or(0, |m| m + 1);
        if cores > 64 {
            return Err(SimError::TooManyCores { cores });
        }
        let mut pkg_of_core = vec![0; cores];
        for p in &topo.pus {
            pkg_of_core[p.core] = p.package;
        }
        let nodes = topo.num_nodes().max(1);
        let pkg_of_node = (0..nodes)
            .map(|n| {
                let pus = topo.pus_of_node(n);
                pus.first().map_or(0, |&pu| topo.pus[pu].package)
            })
            .collect();
        let (mut private, mut shared, mut line) =
            caches(topo, cfg, &lat, &core_of_pu, &pkg_of_core);
        given_caches(
            cfg,
            &lat,
            &pkg_of_core,
            &mut private,
            &mut shared,
            &mut line,
        )?;
        Ok(Machine {
            node_of_pu: topo.pus.iter().map(|p| p.node).collect(),
            packages: pkg_of_core.iter().max().map_or(1, |m| m + 1),
            core_of_pu,
            pkg_of_core,
            pkg_of_node,
            line,
            private,
            shared,
            mem_latency: mem_latency(topo, &lat, nodes),
            interchip: lat.interchip.round() as u64,
            hz: lat.ghz * 1e9,
        })
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.pkg_of_core.len()
    }

    /// Number of PUs.
    pub fn pus(&self) -> usize {
        self.core_of_pu.len()
    }

    /// Number of NUMA nodes.
    pub fn nodes(&self) -> usize {
        self.pkg_of_node.len()
    }
}

/// Local latency scaled by the SLIT ratio: remote = local × d(i,j) / d(i,i).
fn mem_latency(topo: &Topology, lat: &Latencies, nodes: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(nodes * nodes);
    for i in 0..nodes {
        for j in 0..nodes {
            let (dij, dii) = if topo.distances.n == nodes {
                (
                    topo.distances.get(i, j) as f64,
                    topo.distances.get(i, i) as f64,
                )
            } else {
                (1.0, 1.0)
            };
            out.push((lat.mem_local * dij / dii.max(1.0)).round() as u64);
        }
    }
    out
}

fn level_latency(lat: &Latencies, level: u8) -> u64 {
    let v = match level {
        1 => lat.l1,
        2 => lat.l2,
        _ => lat.l3,
    };
    if v > 0.0 {
        v.round() as u64
    } else {
        // A preset without an L3 latency has no L3; keep a sane value if one appears.
        40
    }
}

/// Splits the topology's caches into private levels and one shared level. A topology
/// without any cache gets 32 KiB L1 and 256 KiB L2 per core and an 8 MiB L3 per package.
fn caches(
    topo: &Topology,
    cfg: &SimConfig,
    lat: &Latencies,
    core_of_pu: &[usize],
    pkg_of_core: &[usize],
) -> (Vec<CacheGeom>, Option<SharedGeom>, u64) {
    let ways_of = |level: u8| match level {
        1 => cfg.l1_ways,
        2 => cfg.l2_ways,
        _ => cfg.l3_ways,
    };
    let geom = |level: u8, size: u64, ways: u32| CacheGeom {
        level,
        size,
        ways: if ways > 0 { ways } else { ways_of(level) },
        latency: level_latency(lat, level),
    };
    let mut private = Vec::new();
    let mut shared = None;
    let mut line = 64;
    for level in 1..=3u8 {
        let objs: Vec<_> = topo
            .objects
            .iter()
            .filter(|o| o.kind != ObjKind::Pu && o.cache.is_some_and(|c| c.level == level))
            .collect();
        let Some(info) = objs.first().and_then(|o| o.cache) else {
            continue;
        };
        line = info.line.max(8) as u64;
        let mut domain_of_core = vec![usize::MAX; pkg_of_core.len()];
        let mut is_private = true;
        for (d, o) in objs.iter().enumerate() {
            let mut cores: Vec<usize> = o.pus.iter().map(|&p| core_of_pu[p]).collect();
            cores.sort_unstable();
            cores.dedup();
            is_private &= cores.len() <= 1;
            for c in cores {
                domain_of_core[c] = d;
            }
        }
        let g = geom(level, info.size, info.ways);
        if is_private {
            private.push(g);
        } else {
            shared = Some(SharedGeom {
                geom: g,
                domain_of_core: fill_unmapped(domain_of_core, pkg_of_core),
                domains: objs.len(),
            });
        }
    }
    if private.is_empty() && shared.is_none() {
        private = vec![geom(1, 32 << 10, 0), geom(2, 256 << 10, 0)];
        shared = Some(SharedGeom {
            geom: geom(3, 8 << 20, 0),
            domain_of_core: pkg_of_core.to_vec(),
            domains: pkg_of_core.iter().max().map_or(1, |m| m + 1),
        });
    }
    if private.is_empty() {
        private.push(geom(1, 32 << 10, 0));
    }
    private.truncate(2);
    (private, shared, line)
}

/// Replaces the topology's levels by the configuration's `l1` and `ll` (cachegrind's
/// `--D1` and `--LL`). The LL becomes the shared level, one per package: the shared level
/// is the model's non-inclusive one, as cachegrind's LL is; the private L2 is dropped, as
/// cachegrind has none.
fn given_caches(
    cfg: &SimConfig,
    lat: &Latencies,
    pkg_of_core: &[usize],
    private: &mut Vec<CacheGeom>,
    shared: &mut Option<SharedGeom>,
    line: &mut u64,
) -> Result<(), SimError> {
    if let (Some(a), Some(b)) = (cfg.l1, cfg.ll) {
        if a.line != b.line {
            return Err(SimError::BadConfig {
                why: format!(
                    "the L1 line ({} B) and the LL line ({} B) differ; the model has one line size",
                    a.line, b.line
                ),
            });
        }
    }
    if let Some(c) = cfg.l1 {
        private[0] = CacheGeom {
            level: 1,
            size: c.size,
            ways: c.ways,
            latency: level_latency(lat, 1),
        };
        *line = c.line;
    }
    if let Some(c) = cfg.ll {
        private.truncate(1);
        *shared = Some(SharedGeom {
            geom: CacheGeom {
                level: 3,
                size: c.size,
                ways: c.ways,
                latency: level_latency(lat, 3),
            },
            domain_of_core: pkg_of_core.to_vec(),
            domains: pkg_of_core.iter().max().map_or(1, |m| m + 1),
        });
        *line = c.line;
    }
    Ok(())
}

/// Cores that no shared cache covers (an uneven XML machine) use their package's index.
fn fill_unmapped(mut d: Vec<usize>, pkg_of_core: &[usize]) -> Vec<usize> {
    for (c, v) in d.iter_mut().enumerate() {
        if *v == usize::MAX {
            *v = pkg_of_core[c];
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xeon_x7550_has_private_l1_l2_and_a_shared_l3_per_package() {
        let t = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let m = Machine::new(&t, &SimConfig::default()).unwrap();
        assert_eq!((m.pus(), m.cores(), m.packages, m.nodes()), (64, 32, 4, 4));
        let levels: Vec<u8> = m.private.iter().map(|g| g.level).collect();
        assert_eq!(levels, vec![1, 2]);
        assert_eq!(m.private[1].size, 256 << 10);
        let s = m.shared.as_ref().unwrap();
        assert_eq!((s.geom.level, s.geom.size, s.domains), (3, 18 << 20, 4));
        assert_eq!(s.domain_of_core[9], 1);
        // SLIT 10/20: remote memory costs twice the local 200 cycles.
        assert_eq!((m.mem_latency[0], m.mem_latency[1]), (200, 400));
    }

    #[test]
    fn simics_has_a_shared_l2_and_no_l3() {
        let t = tdmap_topo::preset("simics-4x2").unwrap();
        let m = Machine::new(&t, &SimConfig::default()).unwrap();
        assert_eq!(m.private.len(), 1);
        let s = m.shared.as_ref().unwrap();
        assert_eq!((s.geom.level, s.geom.latency, s.domains), (2, 5, 4));
        assert_eq!(m.mem_latency[2], 280, "two ring hops: 200 x 14/10");
    }

    #[test]
    fn given_l1_and_ll_replace_the_hierarchy_as_cachegrind_has_it() {
        let t = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let cfg = SimConfig {
            l1: Some(crate::CacheSpec::parse("16384,4,32").unwrap()),
            ll: Some(crate::CacheSpec::parse("1048576,16,32").unwrap()),
            ..SimConfig::default()
        };
        let m = Machine::new(&t, &cfg).unwrap();
        assert_eq!(m.line, 32);
        assert_eq!(m.private.len(), 1, "no L2");
        assert_eq!((m.private[0].size, m.private[0].ways), (16384, 4));
        let s = m.shared.as_ref().unwrap();
        assert_eq!((s.geom.size, s.geom.ways, s.domains), (1 << 20, 16, 4));
        let bad = SimConfig {
            ll: Some(crate::CacheSpec::parse("1048576,16,64").unwrap()),
            ..cfg
        };
        assert!(Machine::new(&t, &bad).is_err(), "two line sizes");
    }

    #[test]
    fn opteron_has_no_shared_cache() {
        let t = tdmap_topo::preset("opteron-8n").unwrap();
        let m = Machine::new(&t, &SimConfig::default()).unwrap();
        assert_eq!(m.private.len(), 2);
        assert!(m.shared.is_none());
    }
}
