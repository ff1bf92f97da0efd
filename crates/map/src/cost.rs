//! The cost of a mapping: Σ M[i][j] × distance(pu(i), pu(j)) over ordered thread pairs,
//! with tree hops or access latencies as the distance; and the remote-access ratio that
//! a page placement gives, estimated from the pages' NUMA vectors.

use crate::MapError;
use tdmap_topo::{ObjKind, Topology};

/// How far apart two PUs are for the cost of a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distance {
    /// Tree hops up to the lowest common level ([`Topology::pu_distance`]).
    Hops,
    /// Cycles to reach data the other thread holds: the cache level both share, or local
    /// or remote memory by the node distances, plus the interchip cost across packages.
    Latency,
}

/// Machines up to this many PUs get a PU × PU table of hop distances (at most 1 MiB).
const HOP_TABLE_MAX_PUS: usize = 1024;

/// The distance between PUs of `topo`, precomputed for fast evaluation.
pub struct PuDistance<'t> {
    topo: &'t Topology,
    kind: Distance,
    l2: Vec<Option<usize>>,
    l3: Vec<Option<usize>>,
    /// Hop distances of every PU pair, row-major, when asked for
    /// ([`PuDistance::with_hop_table`]).
    hops: Option<Vec<u8>>,
    /// The machine's PU count, the table's row length.
    pus: usize,
}

impl<'t> PuDistance<'t> {
    /// Prepares `kind` distances on `topo`; latencies must be known for [`Distance::Latency`].
    pub fn new(topo: &'t Topology, kind: Distance) -> Result<PuDistance<'t>, MapError> {
        if kind == Distance::Latency && topo.latencies.is_none() {
            return Err(MapError::NoLatencies(topo.name.clone()));
        }
        // Cache owners serve latencies only: hop distances skip building them.
        let owner = |level: u8| -> Vec<Option<usize>> {
            if kind != Distance::Latency {
                return Vec::new();
            }
            let mut v = vec![None; topo.num_pus()];
            for (id, o) in topo.objects.iter().enumerate() {
                if o.cache.is_some_and(|c| c.level == level) {
                    for &pu in &o.pus {
                        v[pu] = Some(id);
                    }
                }
            }
            v
        };
        Ok(PuDistance {
            topo,
            kind,
            l2: owner(2),
            l3: owner(3),
            hops: None,
            pus: topo.num_pus(),
        })
    }

    /// [`PuDistance::new`], with hop distances looked up in a PU × PU table on machines up
    /// to 1024 PUs. Building it walks the levels once per PU pair, so it pays when the
    /// mappings evaluated cover about as many pairs as the machine has: walking the levels
    /// for each pair was most of the CPU a 64-thread `tdmap map` spent in its three cost
    /// evaluations (issue 22 item 9), while a few threads on a large machine (the
    /// monitor's periods, the simulator's remaps) would spend more building it than using it.
    pub fn with_hop_table(topo: &'t Topology, kind: Distance) -> Result<PuDistance<'t>, MapError> {
        let mut d = PuDistance::new(topo, kind)?;
        if kind == Distance::Hops {
            d.hops = hop_table(topo);
        }
        Ok(d)
    }

    /// The distance between logical PUs `a` and `b`. Inlined into the cost loops, where
    /// a call per pair cost as much as the table lookup saved.
    #[inline]
    pub fn get(&self, a: usize, b: usize) -> f64 {
        match self.kind {
            Distance::Hops => match &self.hops {
                Some(table) => f64::from(table[a * self.pus + b]),
                None => self.topo.pu_distance(a, b) as f64,
            },
            Distance::Latency => self.latency(a, b),
        }
    }

    fn latency(&self, a: usize, b: usize) -> f64 {
        let t = self.topo;
        let lat = t.latencies.expect("checked in new");
        let shared = |v: &[Option<usize>]| v[a].is_some() && v[a] == v[b];
        let (pa, pb) = (&t.pus[a], &t.pus[b]);
        if pa.core == pb.core {
            return lat.l1;
        }
        if shared(&self.l2) {
            return lat.l2;
        }
        if shared(&self.l3) {
            return lat.l3;
        }
        let (na, nb) = (pa.node, pb.node);
        let local = f64::from(t.distances.get(na, na).max(1));
        let mem = lat.mem_local * f64::from(t.distances.get(na, nb)) / local;
        let packages = t.count(ObjKind::Package) > 1 && pa.package != pb.package;
        mem + if packages { lat.interchip } else { 0.0 }
    }
}

/// [`Topology::pu_distance`] of every PU pair, row-major, or None on a machine too large
/// (or too deep) for a table of bytes. Symmetric, so each pair is computed once.
fn hop_table(topo: &Topology) -> Option<Vec<u8>> {
    let n = topo.num_pus();
    if n > HOP_TABLE_MAX_PUS || u8::try_from(topo.max_pu_distance()).is_err() {
        return None;
    }
    let mut table = vec![0u8; n * n];
    for a in 0..n {
        for b in 0..a {
            let d = topo.pu_distance(a, b) as u8;
            table[a * n + b] = d;
            table[b * n + a] = d;
        }
    }
    Some(table)
}

/// Σ over ordered pairs i ≠ j of `matrix[i][j]` × distance(mapping[i], mapping[j]).
/// A sum that overflows (finite cells near f64::MAX) is [`MapError::CostOverflow`]: this
/// is the cost that `tdmap map` prints and writes, where JSON would turn it into `null`.
pub fn cost(
    topo: &Topology,
    matrix: &[f64],
    n: usize,
    mapping: &[usize],
    kind: Distance,
) -> Result<f64, MapError> {
    let d = PuDistance::new(topo, kind)?;
    finite(cost_with(&d, matrix, n, mapping))
}

/// `cost` itself when finite, else [`MapError::CostOverflow`]: the one check every cost
/// tdmap prints goes through (dense, sparse).
pub fn finite(cost: f64) -> Result<f64, MapError> {
    if cost.is_finite() {
        Ok(cost)
    } else {
        Err(MapError::CostOverflow { cost })
    }
}

/// [`cost`] with a prepared distance, for evaluating many mappings.
pub fn cost_with(d: &PuDistance<'_>, matrix: &[f64], n: usize, mapping: &[usize]) -> f64 {
    let mut total = 0.0;
    for i in 0..n {
        for j in 0..n {
            let w = matrix[i * n + j];
            if i != j && w != 0.0 {
                total += w * d.get(mapping[i], mapping[j]);
            }
        }
    }
    total
}

/// [`cost_with`] on a sparse matrix: time and memory follow its non-zeros.
pub fn cost_sparse(d: &PuDistance<'_>, m: &crate::Sparse, mapping: &[usize]) -> f64 {
    let mut total = 0.0;
    for i in 0..m.n {
        for (j, w) in m.row(i) {
            total += w * d.get(mapping[i], mapping[j]);
        }
    }
    total
}

/// The fraction of accesses that are remote when page `p` lives on `home(p)`, with
/// `vectors[p][node]` the accesses to page p from each node (its NUMA vector).
pub fn remote_access_ratio(vectors: &[Vec<u32>], home: impl Fn(usize) -> usize) -> f64 {
    let (mut remote, mut total) = (0u64, 0u64);
    for (p, nv) in vectors.iter().enumerate() {
        let h = home(p);
        for (node, &c) in nv.iter().enumerate() {
            total += u64::from(c);
            if node != h {
                remote += u64::from(c);
            }
        }
    }
    if total == 0 {
        0.0
    } else {
        remote as f64 / total as f64
    }
}

/// NUMA vectors per page from per-thread access counts and a thread → node placement:
/// `accesses[p][t]` accesses of thread t to page p land on node `thread_node[t]`.
pub fn node_vectors(accesses: &[Vec<u32>], thread_node: &[usize], nodes: usize) -> Vec<Vec<u32>> {
    accesses
        .iter()
        .map(|per_thread| {
            let mut nv = vec![0u32; nodes];
            for (t, &c) in per_thread.iter().enumerate() {
                nv[thread_node[t]] = nv[thread_node[t]].saturating_add(c);
            }
            nv
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_cost_counts_each_ordered_pair() {
        let topo = tdmap_topo::from_synthetic("package:2 core:2").unwrap();
        // Threads 0 and 1 share 5 (both directions).
        let m = [0.0, 5.0, 5.0, 0.0];
        assert_eq!(cost(&topo, &m, 2, &[0, 1], Distance::Hops).unwrap(), 10.0);
        assert_eq!(cost(&topo, &m, 2, &[0, 2], Distance::Hops).unwrap(), 20.0);
    }

    /// Cells of 1e308 are finite, but their sum was infinite and `tdmap map --json`
    /// printed `"cost": null`.
    #[test]
    fn a_cost_that_overflows_is_an_error_not_infinity() {
        let topo = tdmap_topo::from_synthetic("package:2 core:2").unwrap();
        let m = [0.0, 1e308, 1e308, 0.0];
        let err = cost(&topo, &m, 2, &[0, 2], Distance::Hops).unwrap_err();
        assert!(matches!(err, MapError::CostOverflow { cost } if cost.is_infinite()));
        assert!(err.to_string().contains("finite cells small enough to sum"));
    }

    #[test]
    fn sparse_and_dense_costs_agree() {
        let topo = tdmap_topo::from_synthetic("package:2 core:2 pu:2").unwrap();
        let m = [
            0.0, 4.0, 0.0, 1.0, 2.0, 0.0, 3.0, 0.0, 0.0, 3.0, 0.0, 0.0, 1.0, 0.0, 5.0, 0.0,
        ];
        let s = crate::Sparse::from_dense(&m, 4);
        let d = PuDistance::new(&topo, Distance::Hops).unwrap();
        for map in [[0, 1, 2, 3], [7, 0, 3, 4], [1, 6, 2, 5]] {
            assert_eq!(cost_with(&d, &m, 4, &map), cost_sparse(&d, &s, &map));
        }
    }

    /// The table must give exactly the tree walk's hops, both triangles and the diagonal.
    #[test]
    fn hop_table_matches_the_tree_walk() {
        let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let d = PuDistance::with_hop_table(&topo, Distance::Hops).unwrap();
        assert!(d.hops.is_some(), "64 PUs get a table");
        for a in 0..topo.num_pus() {
            for b in 0..topo.num_pus() {
                assert_eq!(d.get(a, b), topo.pu_distance(a, b) as f64, "{a} {b}");
            }
        }
    }

    #[test]
    fn large_machines_walk_the_tree_without_a_table() {
        let topo = tdmap_topo::from_synthetic("package:2 core:513").unwrap();
        let d = PuDistance::with_hop_table(&topo, Distance::Hops).unwrap();
        assert!(d.hops.is_none(), "{} PUs", topo.num_pus());
        assert_eq!(d.get(0, 1), topo.pu_distance(0, 1) as f64);
        assert_eq!(d.get(0, 1025), topo.pu_distance(0, 1025) as f64);
    }

    #[test]
    fn latency_cost_grows_across_packages() {
        let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let d = PuDistance::new(&topo, Distance::Latency).unwrap();
        let smt = d.get(0, 1);
        let same_pkg = d.get(0, 2);
        let other_pkg = d.get(0, 16);
        assert!(
            smt < same_pkg && same_pkg < other_pkg,
            "{smt} {same_pkg} {other_pkg}"
        );
    }

    #[test]
    fn latency_needs_a_latency_table() {
        let topo = tdmap_topo::from_synthetic("core:2").unwrap();
        assert!(matches!(
            cost(&topo, &[0.0; 4], 2, &[0, 1], Distance::Latency),
            Err(MapError::NoLatencies(_))
        ));
    }

    #[test]
    fn remote_ratio_from_numa_vectors() {
        let nv = vec![vec![3, 1], vec![0, 4]];
        assert_eq!(remote_access_ratio(&nv, |_| 0), 5.0 / 8.0);
        assert_eq!(remote_access_ratio(&nv, |p| p), 1.0 / 8.0);
        let per_thread = vec![vec![1, 2, 3]];
        assert_eq!(node_vectors(&per_thread, &[0, 1, 1], 2), vec![vec![1, 5]]);
    }
}
