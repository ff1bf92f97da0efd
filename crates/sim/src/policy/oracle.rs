//! The static oracle of the papers: a first pass over the whole trace gives the sharing
//! matrix (exact 64-byte lines, `tdmap-sharing`) and each page's accesses per thread; the
//! threads get the best mapping `tdmap-map` finds for that matrix, and each page starts
//! on the node whose threads access it most. Nothing moves afterwards.

use super::basic::Fixed;
use crate::input::{first_pass, Profile, RunError};
use std::path::Path;
use tdmap_map::{Algorithm, Distance, Mapping};
use tdmap_sharing::{Metric, SharingModel, TableConfig};
use tdmap_topo::Topology;

/// What the oracle knows after its pass over the trace.
pub struct Oracle {
    /// The trace's profile (threads, accesses per thread).
    pub profile: Profile,
    /// The thread mapping.
    pub mapping: Mapping,
    /// The algorithm that gave it.
    pub algorithm: Algorithm,
    /// The home node of each page touched (page number at the trace's 4 KiB pages).
    pub pages: Vec<(u64, usize)>,
}

impl Oracle {
    /// Reads the trace at `path` once and decides the mapping for `topo`.
    pub fn from_trace(path: &Path, topo: &Topology) -> Result<Oracle, RunError> {
        let threads = tdmap_trace::Reader::open(path)?.header().threads as usize;
        // One NUMA-vector slot per thread: NV[t] counts thread t's accesses to the page.
        let ids: Vec<u32> = (0..threads as u32).collect();
        let cfg = TableConfig::exact(threads.max(1));
        let mut model = SharingModel::new(cfg, threads, &ids).map_err(too_many)?;
        let profile = first_pass(path, |c| {
            model.accesses(c.thread, &c.addrs).map_err(too_many)?;
            Ok(())
        })?;
        let m = model.matrix(Metric::Accesses).to_f64_rows();
        let (algorithm, mapping) = best_mapping(topo, &m, threads)?;
        let node_of: Vec<usize> = mapping.iter().map(|&pu| topo.pus[pu].node).collect();
        let nodes = topo.num_nodes().max(1);
        let pages = model
            .table()
            .pages()
            .filter_map(|(page, per_thread)| {
                let mut nv = vec![0u32; nodes];
                for (t, c) in per_thread.iter().enumerate() {
                    nv[node_of[t]] = nv[node_of[t]].saturating_add(*c);
                }
                tdmap_map::data::majority(&nv).map(|n| (page, n))
            })
            .collect();
        Ok(Oracle {
            profile,
            mapping,
            algorithm,
            pages,
        })
    }

    /// The oracle as a simulator policy, for pages of `page_size` bytes.
    pub fn policy(&self, page_size: u64) -> Fixed {
        let shift = page_size.trailing_zeros() as i32 - 12;
        let pages = self.pages.iter().map(move |&(p, n)| {
            let p = if shift >= 0 { p >> shift } else { p << -shift };
            (p, n)
        });
        Fixed::new("oracle", self.mapping.clone()).with_pages(pages)
    }
}

/// The lower-cost mapping of hierarchical matching and greedy grouping.
fn best_mapping(topo: &Topology, m: &[f64], n: usize) -> Result<(Algorithm, Mapping), RunError> {
    let opts = tdmap_map::Options {
        seed: 1,
        oversubscribe: n > topo.num_pus(),
    };
    let kind = if topo.latencies.is_some() {
        Distance::Latency
    } else {
        Distance::Hops
    };
    let mut best: Option<(f64, Algorithm, Mapping)> = None;
    for algo in [Algorithm::Matching, Algorithm::Greedy] {
        let map = tdmap_map::map_threads(algo, topo, m, n, &opts).map_err(bad_map)?;
        let c = tdmap_map::cost(topo, m, n, &map, kind).map_err(bad_map)?;
        if best.as_ref().is_none_or(|b| c < b.0) {
            best = Some((c, algo, map));
        }
    }
    let (_, algo, map) = best.expect("two candidates");
    Ok((algo, map))
}

fn too_many(e: tdmap_sharing::SharingError) -> RunError {
    crate::SimError::BadConfig {
        why: format!("oracle: {e}"),
    }
    .into()
}

fn bad_map(e: tdmap_map::MapError) -> RunError {
    crate::SimError::BadConfig {
        why: format!("oracle mapping: {e}"),
    }
    .into()
}
