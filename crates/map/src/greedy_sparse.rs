//! `greedy` on a sparse matrix: the same rule as [`crate::greedy`] (seed the unit with
//! the most sharing left, add the unit sharing most with the group), with adjacency
//! lists and lazy max-heaps instead of scans, so that a level costs O(nnz log nnz)
//! rather than O(k²). A group whose candidates share nothing with it is filled with the
//! lowest-numbered units left, as the dense rule's ties do.

use crate::Sparse;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A heap entry: larger score first, then lower unit.
#[derive(PartialEq)]
struct Entry(f64, Reverse<usize>);

impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

/// Groups the `s.n` units of `s` into groups of `size`; also returns the groups'
/// sharing (sum over members, zero diagonal), sparse.
pub fn group(s: &Sparse, size: usize) -> (Vec<Vec<usize>>, Sparse) {
    let k = s.n;
    let size = size.max(1);
    let mut alive = vec![true; k];
    let mut rowsum: Vec<f64> = (0..k).map(|u| s.row(u).map(|(_, x)| x).sum()).collect();
    let mut seeds: BinaryHeap<Entry> = (0..k).map(|u| Entry(rowsum[u], Reverse(u))).collect();
    let mut gain = vec![0.0f64; k];
    let mut touched: Vec<usize> = Vec::new();
    let mut lowest = 0usize;
    let mut group_of = vec![usize::MAX; k];
    let mut groups: Vec<Vec<usize>> = Vec::with_capacity(k / size);
    let mut left = k;
    while left > 0 {
        let seed = loop {
            let Entry(x, Reverse(u)) = seeds.pop().expect("a unit is left");
            if alive[u] && x == rowsum[u] {
                break u;
            }
        };
        let mut members = Vec::with_capacity(size);
        let mut cands: BinaryHeap<Entry> = BinaryHeap::new();
        let gi = groups.len();
        // Moves unit u into the group: its row raises its neighbours' gains and lowers
        // what they have left to share.
        macro_rules! take {
            ($u:expr) => {{
                let u = $u;
                alive[u] = false;
                group_of[u] = gi;
                members.push(u);
                for (v, x) in s.row(u) {
                    if alive[v] {
                        if gain[v] == 0.0 {
                            touched.push(v);
                        }
                        gain[v] += x;
                        cands.push(Entry(gain[v], Reverse(v)));
                        rowsum[v] -= x;
                        seeds.push(Entry(rowsum[v], Reverse(v)));
                    }
                }
            }};
        }
        take!(seed);
        while members.len() < size && members.len() < left {
            let next = loop {
                match cands.pop() {
                    Some(Entry(g, Reverse(v))) if alive[v] && g == gain[v] => break Some(v),
                    Some(_) => continue,
                    None => break None,
                }
            };
            let u = next.unwrap_or_else(|| {
                while !alive[lowest] {
                    lowest += 1;
                }
                lowest
            });
            take!(u);
        }
        for v in touched.drain(..) {
            gain[v] = 0.0;
        }
        left -= members.len();
        groups.push(members);
    }
    let mut entries = Vec::with_capacity(s.nnz());
    for u in 0..k {
        for (v, x) in s.row(u) {
            let (a, b) = (group_of[u], group_of[v]);
            if a != b {
                entries.push((a as u32, b as u32, x));
            }
        }
    }
    let reduced = Sparse::from_directed(groups.len(), &entries);
    (groups, reduced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_the_heavy_sharers_together_like_the_dense_rule() {
        let k = 6;
        let mut w = vec![1.0; k * k];
        for u in 0..k {
            w[u * k + u] = 0.0;
            for v in 0..k {
                if u != v && u % 2 == v % 2 {
                    w[u * k + v] = 50.0;
                }
            }
        }
        let (mut g, r) = group(&Sparse::from_dense(&w, k), 3);
        assert_eq!(r.to_dense(), crate::hier::reduce(&w, k, &g));
        for x in &mut g {
            x.sort();
        }
        g.sort();
        assert_eq!(g, vec![vec![0, 2, 4], vec![1, 3, 5]]);
    }

    /// A 3-D halo of `x·y·z` ranks, 6 neighbours each (fewer on the faces).
    fn halo3d(x: usize, y: usize, z: usize) -> Sparse {
        let mut e = Vec::new();
        for a in 0..x {
            for b in 0..y {
                for c in 0..z {
                    let i = ((a * y + b) * z + c) as u32;
                    let mut link = |j: usize| e.push((i, j as u32, 1.0));
                    if c + 1 < z {
                        link(i as usize + 1);
                    }
                    if b + 1 < y {
                        link(i as usize + z);
                    }
                    if a + 1 < x {
                        link(i as usize + y * z);
                    }
                }
            }
        }
        // Undirected edges, both directions as the edge-list reader gives them.
        let both: Vec<_> = e
            .iter()
            .flat_map(|&(i, j, w)| [(i, j, w), (j, i, w)])
            .collect();
        Sparse::from_directed(x * y * z, &both)
    }

    /// 8192 ranks on 128 hosts: past DENSE_AT, so the first level is grouped sparse; the
    /// mapping is one rank per PU and beats compact.
    #[test]
    fn the_sparse_path_maps_a_large_halo_below_compact() {
        let host = tdmap_topo::from_synthetic("core:64").unwrap();
        let topo = tdmap_topo::cluster(&host, 128, 100, "c").unwrap();
        let s = halo3d(32, 16, 16);
        assert!(s.n > crate::hier::DENSE_AT);
        let opts = crate::Options::default();
        let m = crate::map_threads_sparse(crate::Algorithm::Greedy, &topo, &s, &opts).unwrap();
        let mut seen = m.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), s.n);
        let d = crate::PuDistance::new(&topo, crate::Distance::Hops).unwrap();
        let c = crate::map_threads_sparse(crate::Algorithm::Compact, &topo, &s, &opts).unwrap();
        let (ours, compact) = (
            crate::cost_sparse(&d, &s, &m),
            crate::cost_sparse(&d, &s, &c),
        );
        assert!(ours < compact, "greedy {ours} vs compact {compact}");
    }

    #[test]
    fn isolated_units_fill_groups_in_order() {
        let s = Sparse::from_directed(5, &[(3, 4, 2.0)]);
        let (g, r) = group(&s, 2);
        assert_eq!(g, vec![vec![3, 4], vec![0, 1], vec![2]]);
        assert_eq!(r.nnz(), 0);
    }
}
