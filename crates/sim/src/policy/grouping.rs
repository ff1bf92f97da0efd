//! A simple, self-contained sharing-aware thread mapping: greedy hierarchical grouping.
//!
//! The policies call a mapping algorithm through [`MapFn`]; the default is
//! [`map_greedy`], `tdmap-map`'s greedy hierarchical grouping (the one `tdmap run` uses
//! online). [`greedy_map`] is the simulator's own small version, kept as the fallback for
//! matrices `tdmap-map` refuses. At each level of the machine tree, from the packages
//! down, it fills each child group with the thread that shares most with the threads
//! already in it.

use tdmap_topo::Topology;

/// A thread-mapping algorithm: affinity matrix (row-major, `n × n`) to a PU per thread.
pub type MapFn = fn(&[f64], usize, &Topology) -> Vec<usize>;

/// `tdmap-map`'s greedy mapping of `n` threads (several per PU when there are more
/// threads than PUs); [`greedy_map`] if it refuses the matrix (not finite, negative).
pub fn map_greedy(affinity: &[f64], n: usize, topo: &Topology) -> Vec<usize> {
    let opts = tdmap_map::Options {
        seed: 0,
        oversubscribe: n > topo.num_pus(),
    };
    tdmap_map::map_threads(tdmap_map::Algorithm::Greedy, topo, affinity, n, &opts)
        .unwrap_or_else(|_| greedy_map(affinity, n, topo))
}

/// `tdmap-map`'s `drb`: dual recursive bipartitioning by Scotch (SAMMU §2.7.1 maps with
/// Scotch), seeded so that the same matrix gives the same mapping; [`map_greedy`] if it
/// fails (a matrix it refuses, more threads than PUs).
pub fn map_drb(affinity: &[f64], n: usize, topo: &Topology) -> Vec<usize> {
    let opts = tdmap_map::Options {
        seed: 1,
        oversubscribe: n > topo.num_pus(),
    };
    tdmap_map::map_threads(tdmap_map::Algorithm::Drb, topo, affinity, n, &opts)
        .unwrap_or_else(|_| map_greedy(affinity, n, topo))
}

/// Greedy hierarchical grouping of `n` threads given a symmetric affinity matrix.
pub fn greedy_map(affinity: &[f64], n: usize, topo: &Topology) -> Vec<usize> {
    let mut out = vec![0; n];
    let threads: Vec<usize> = (0..n).collect();
    let pus: Vec<usize> = (0..topo.num_pus()).collect();
    assign(affinity, n, topo, &threads, &pus, 0, &mut out);
    out
}

/// The communication cost of a mapping: affinity weighted by tree distance.
pub fn mapping_cost(affinity: &[f64], n: usize, mapping: &[usize], topo: &Topology) -> f64 {
    let mut cost = 0.0;
    for i in 0..n {
        for j in i + 1..n {
            let a = affinity[i * n + j] + affinity[j * n + i];
            if a > 0.0 {
                cost += a * topo.pu_distance(mapping[i], mapping[j]) as f64;
            }
        }
    }
    cost
}

fn assign(
    a: &[f64],
    n: usize,
    topo: &Topology,
    threads: &[usize],
    pus: &[usize],
    level: usize,
    out: &mut [usize],
) {
    if threads.is_empty() {
        return;
    }
    if pus.len() <= 1 || level + 1 >= topo.levels.len() {
        for (k, &t) in threads.iter().enumerate() {
            out[t] = pus[k % pus.len()];
        }
        return;
    }
    let children = split(&topo.levels[level + 1].group_of_pu, pus);
    if children.len() == 1 {
        return assign(a, n, topo, threads, pus, level + 1, out);
    }
    let mut left: Vec<usize> = threads.to_vec();
    for child in &children {
        if left.is_empty() {
            break;
        }
        // With more threads than PUs, each child takes its share of the surplus.
        let cap = (threads.len() * child.len()).div_ceil(pus.len()).max(1);
        let group = grow(a, n, &mut left, cap);
        assign(a, n, topo, &group, child, level + 1, out);
    }
}

/// The PUs of a set split by their group at a level, in order of first appearance.
fn split(group_of_pu: &[usize], pus: &[usize]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = Vec::new();
    let mut parts: Vec<Vec<usize>> = Vec::new();
    for &p in pus {
        let g = group_of_pu[p];
        match order.iter().position(|&x| x == g) {
            Some(k) => parts[k].push(p),
            None => {
                order.push(g);
                parts.push(vec![p]);
            }
        }
    }
    parts
}

/// Takes up to `cap` threads out of `left`: the one with most affinity to the rest,
/// then repeatedly the one with most affinity to the group.
fn grow(a: &[f64], n: usize, left: &mut Vec<usize>, cap: usize) -> Vec<usize> {
    let pair = |i: usize, j: usize| a[i * n + j] + a[j * n + i];
    let seed_pos = argmax(left, |t| left.iter().map(|&u| pair(t, u)).sum());
    let mut group = vec![left.remove(seed_pos)];
    while group.len() < cap && !left.is_empty() {
        let k = argmax(left, |t| group.iter().map(|&g| pair(t, g)).sum());
        group.push(left.remove(k));
    }
    group
}

/// Position of the best candidate; ties go to the earliest, for determinism.
fn argmax(cands: &[usize], score: impl Fn(usize) -> f64) -> usize {
    let mut best = (0, f64::NEG_INFINITY);
    for (k, &t) in cands.iter().enumerate() {
        let s = score(t);
        if s > best.1 {
            best = (k, s);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_that_share_end_up_on_the_same_core() {
        // 2 packages x 2 cores x 2 PUs; threads (0,5), (1,4), (2,7), (3,6) share.
        let topo = tdmap_topo::from_synthetic("package:2 core:2 pu:2").unwrap();
        let n = 8;
        let mut a = vec![0.0; n * n];
        for (x, y) in [(0, 5), (1, 4), (2, 7), (3, 6)] {
            a[x * n + y] = 10.0;
            a[y * n + x] = 10.0;
        }
        let m = greedy_map(&a, n, &topo);
        let core = |t: usize| topo.pus[m[t]].core;
        for (x, y) in [(0, 5), (1, 4), (2, 7), (3, 6)] {
            assert_eq!(core(x), core(y), "threads {x} and {y}: mapping {m:?}");
        }
        let mut used = m.clone();
        used.sort();
        used.dedup();
        assert_eq!(used.len(), 8, "one thread per PU");
        let scattered: Vec<usize> = (0..8).collect();
        assert!(mapping_cost(&a, n, &m, &topo) < mapping_cost(&a, n, &scattered, &topo));
    }
}
