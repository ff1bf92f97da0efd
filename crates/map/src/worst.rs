//! `worst`: the minimum-weight mapping of the trace-based mapping paper (§IV: "The worst
//! mapping was also calculated using the Edmonds matching, but with the minimum cost
//! perfect matching instead of the maximum cost perfect matching"), the floor the papers'
//! gains are measured against. Hierarchical matching maximises; on `C - w` (C the largest
//! weight) it picks the same perfect matchings as a minimum on `w`, level by level.
//!
//! With fewer threads than PUs, the threads are padded to the whole machine with threads
//! that share nothing, and the minimum pairs each real thread with a padding one first:
//! the threads spread over the machine, and the heaviest sharers end up furthest apart.

use crate::hier;
use crate::matching;
use crate::slots::Slots;
use crate::{MapError, Mapping};
use tdmap_topo::Topology;

/// The minimum-weight mapping of `n` threads sharing `m` (n × n) on `topo`.
pub fn map(topo: &Topology, m: &[f64], n: usize, oversubscribe: bool) -> Result<Mapping, MapError> {
    crate::validate(m, n)?;
    let pus = topo.num_pus();
    if n > pus && !oversubscribe {
        return Err(MapError::TooManyThreads { threads: n, pus });
    }
    let slots = Slots::new(topo, n.div_ceil(pus.max(1)));
    let m = crate::matrix::symmetric(m, n);
    // An uneven machine's hull has slots without PUs, which padding threads cannot fill:
    // there, only the real threads are complemented (hier pads with zeros of its own).
    let total = if slots.pu.iter().all(Option::is_some) {
        slots.len().max(n)
    } else {
        n
    };
    let c = m.iter().copied().fold(0.0, f64::max);
    let mut w = vec![0.0; total * total];
    for i in 0..total {
        for j in 0..total {
            if i != j {
                let x = if i < n && j < n { m[i * n + j] } else { 0.0 };
                w[i * total + j] = c - x;
            }
        }
    }
    let mut slot_of = hier::map(&slots, &w, total, matching::group, true);
    slot_of.truncate(n);
    Ok(slots.onto_pus(slot_of))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs (0,1), (2,3), ... share heavily: worst puts every pair on two packages,
    /// where greedy puts each pair on one core.
    #[test]
    fn heavy_sharers_land_on_different_packages() {
        let topo = tdmap_topo::from_synthetic("package:4 core:8 pu:2").unwrap();
        let n = 8;
        let mut m = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    m[i * n + j] = if i / 2 == j / 2 { 100.0 } else { 1.0 };
                }
            }
        }
        let w = map(&topo, &m, n, false).unwrap();
        let pkg = |t: usize| topo.pus[w[t]].package;
        for k in 0..4 {
            assert_ne!(pkg(2 * k), pkg(2 * k + 1), "{w:?}");
        }
        let mut pus = w.clone();
        pus.sort();
        pus.dedup();
        assert_eq!(pus.len(), n);
        let hops = crate::Distance::Hops;
        let worst = crate::cost(&topo, &m, n, &w, hops).unwrap();
        let opts = crate::Options::default();
        for algo in [crate::Algorithm::Greedy, crate::Algorithm::Scatter] {
            let other = crate::map_threads(algo, &topo, &m, n, &opts).unwrap();
            assert!(worst >= crate::cost(&topo, &m, n, &other, hops).unwrap());
        }
    }
}
