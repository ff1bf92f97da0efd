//! Mappings that ignore sharing, as references: compact (fill cores, then packages, as
//! KMP_AFFINITY=compact), scatter (round-robin over packages first), seeded random, and
//! identity (thread i on OS CPU i).

use crate::rng::SplitMix;
use crate::slots::Slots;
use tdmap_topo::Topology;

/// Thread i on the i-th slot in tree order: SMT siblings, then cores, then packages.
pub fn compact(slots: &Slots, n: usize) -> Vec<usize> {
    slots.pu.iter().flatten().copied().take(n).collect()
}

/// Thread i on the i-th slot with the outermost level varying fastest.
pub fn scatter(slots: &Slots, n: usize) -> Vec<usize> {
    let order = (0..slots.len()).map(|i| {
        let mut rest = i;
        let mut digits = Vec::with_capacity(slots.arities.len());
        for &a in &slots.arities {
            digits.push(rest % a);
            rest /= a;
        }
        digits
            .iter()
            .zip(&slots.arities)
            .fold(0, |acc, (&d, &a)| acc * a + d)
    });
    order.filter_map(|s| slots.pu[s]).take(n).collect()
}

/// A uniformly random placement of the threads on distinct slots, fixed by `seed`.
pub fn random(slots: &Slots, n: usize, seed: u64) -> Vec<usize> {
    let mut pus: Vec<usize> = slots.pu.iter().flatten().copied().collect();
    SplitMix::new(seed).shuffle(&mut pus);
    pus.truncate(n);
    pus
}

/// Thread i on the PU whose OS index is the i-th smallest (wrapping around).
pub fn identity(topo: &Topology, n: usize) -> Vec<usize> {
    let mut by_os: Vec<usize> = (0..topo.num_pus()).collect();
    by_os.sort_by_key(|&p| topo.pus[p].os);
    (0..n).map(|i| by_os[i % by_os.len()]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_fills_cores_then_packages_and_scatter_spreads() {
        let topo = tdmap_topo::from_synthetic("package:2 core:2 pu:2").unwrap();
        let s = Slots::new(&topo, 1);
        assert_eq!(compact(&s, 3), vec![0, 1, 2]);
        // Package first, then core, then SMT sibling.
        assert_eq!(scatter(&s, 8), vec![0, 4, 2, 6, 1, 5, 3, 7]);
    }

    #[test]
    fn random_is_seeded_and_injective() {
        let topo = tdmap_topo::from_synthetic("package:2 core:4").unwrap();
        let s = Slots::new(&topo, 1);
        let a = random(&s, 8, 3);
        assert_eq!(a, random(&s, 8, 3));
        assert_ne!(a, random(&s, 8, 4));
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn oversubscribed_compact_doubles_up_on_each_pu() {
        let topo = tdmap_topo::from_synthetic("core:2").unwrap();
        let s = Slots::new(&topo, 2);
        assert_eq!(compact(&s, 4), vec![0, 0, 1, 1]);
        assert_eq!(identity(&topo, 3), vec![0, 1, 0]);
    }
}
