//! `greedy` on a sparse matrix: the same rule as [`crate::greedy`] (seed the unit with
//! the most sharing left, add the unit sharing most with the group, in
//! [`Key`]'s order), with adjacency lists and lazy max-heaps instead of scans, so that a
//! level costs O(nnz log nnz) rather than O(k²). A unit that shares nothing with the
//! group is never a candidate; a group left with no candidates takes the lowest-numbered
//! units left, which is where [`Key`] puts them.

use crate::greedy::Key;
use crate::Sparse;
use std::collections::BinaryHeap;

/// Groups the `s.n` units of `s` into groups of `size`; also returns the groups'
/// sharing (sum over members, zero diagonal), sparse.
pub fn group(s: &Sparse, size: usize) -> (Vec<Vec<usize>>, Sparse) {
    let k = s.n;
    let size = size.max(1);
    let mut alive = vec![true; k];
    let mut rowsum: Vec<f64> = (0..k).map(|u| s.row(u).map(|(_, x)| x).sum()).collect();
    let seed_key = |score: f64, unit: usize| Key {
        score,
        first: 0,
        unit,
    };
    let mut seeds: BinaryHeap<Key> = (0..k).map(|u| seed_key(rowsum[u], u)).collect();
    let mut gain = vec![0.0f64; k];
    let mut first = vec![usize::MAX; k];
    let mut touched: Vec<usize> = Vec::new();
    let mut lowest = 0usize;
    let mut group_of = vec![usize::MAX; k];
    let mut groups: Vec<Vec<usize>> = Vec::with_capacity(k / size);
    let mut left = k;
    while left > 0 {
        let seed = loop {
            let Key { score, unit: u, .. } = seeds.pop().expect("a unit is left");
            if alive[u] && score == rowsum[u] {
                break u;
            }
        };
        let mut members = Vec::with_capacity(size);
        let mut cands: BinaryHeap<Key> = BinaryHeap::new();
        let gi = groups.len();
        // Moves unit u into the group: its row raises its neighbours' gains and lowers
        // what they have left to share.
        macro_rules! take {
            ($u:expr) => {{
                let u = $u;
                let at = members.len();
                alive[u] = false;
                group_of[u] = gi;
                members.push(u);
                for (v, x) in s.row(u) {
                    // A zero entry shares nothing: the dense rule does not count it.
                    if alive[v] && x > 0.0 {
                        if first[v] == usize::MAX {
                            first[v] = at;
                            touched.push(v);
                        }
                        gain[v] += x;
                        cands.push(Key {
                            score: gain[v],
                            first: first[v],
                            unit: v,
                        });
                        rowsum[v] -= x;
                        seeds.push(seed_key(rowsum[v], v));
                    }
                }
            }};
        }
        take!(seed);
        while members.len() < size && members.len() < left {
            let next = loop {
                match cands.pop() {
                    Some(Key { score, unit: v, .. }) if alive[v] && score == gain[v] => {
                        break Some(v)
                    }
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
            first[v] = usize::MAX;
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

    proptest::proptest! {
        /// One rule in two implementations: on any sparse matrix, the heap-based level
        /// gives the dense scan's groups, member order included (which lays them out).
        /// Small integer weights make ties, where the order of [`Key`] decides.
        #[test]
        fn the_sparse_level_groups_as_the_dense_rule(
            count in 1usize..8,
            size in 1usize..9,
            edges in proptest::collection::vec((0u32..56, 0u32..56, 0u8..4), 0..160),
        ) {
            // hier groups k units into k / size groups of size exactly.
            let k = count * size;
            let both: Vec<_> = edges
                .iter()
                .filter(|&&(i, j, _)| i != j && (i as usize) < k && (j as usize) < k)
                .flat_map(|&(i, j, w)| [(i, j, f64::from(w)), (j, i, f64::from(w))])
                .collect();
            let s = Sparse::from_directed(k, &both);
            let (sparse, reduced) = group(&s, size);
            let (dense, dense_reduced) = crate::greedy::group(&s.to_dense(), k, size);
            proptest::prop_assert_eq!(sparse, dense);
            proptest::prop_assert_eq!(reduced.to_dense(), dense_reduced);
        }
    }

    /// Regression: by index alone, ties grew a group of a 16 × 16 halo along the rows,
    /// so 4 groups of 64 were 4 × 16 strips (48 cut edges); breadth-first ties give
    /// 8 × 8 quadrants (32), as Scotch's and matching's mappings do.
    #[test]
    fn a_grid_is_cut_in_quadrants_not_strips() {
        let e: Vec<_> = (0..256u32)
            .flat_map(|i| {
                let right = (i % 16 < 15).then_some((i, i + 1, 1.0));
                let down = (i < 240).then_some((i, i + 16, 1.0));
                right.into_iter().chain(down)
            })
            .flat_map(|(i, j, w)| [(i, j, w), (j, i, w)])
            .collect();
        let s = Sparse::from_directed(256, &e);
        let (groups, _) = group(&s, 64);
        let cut = e
            .iter()
            .filter(|&&(i, j, _)| {
                let g = |u: u32| groups.iter().position(|m| m.contains(&(u as usize)));
                g(i) != g(j)
            })
            .count()
            / 2;
        assert_eq!(cut, 32, "{groups:?}");
    }

    #[test]
    fn isolated_units_fill_groups_in_order() {
        let s = Sparse::from_directed(5, &[(3, 4, 2.0)]);
        let (g, r) = group(&s, 2);
        assert_eq!(g, vec![vec![3, 4], vec![0, 1], vec![2]]);
        assert_eq!(r.nnz(), 0);
    }
}
