//! The machine as the hierarchical algorithms see it: a symmetric tree of arities
//! (outermost first, arity-1 levels dropped as kMAF §3.4.1 does) whose leaves, the
//! slots, are numbered in mixed radix so that a subtree is a contiguous slot range.
//! Uneven machines get the symmetric hull, with slots that hold no PU; oversubscription
//! adds a virtual innermost level of several slots per PU.

use tdmap_topo::Topology;

/// The leaves of the (hull of the) machine tree and the PU behind each.
#[derive(Debug, Clone)]
pub struct Slots {
    /// Children per level, outermost first.
    pub arities: Vec<usize>,
    /// The logical PU of each slot; `None` in the hull of an uneven machine.
    pub pu: Vec<Option<usize>>,
}

impl Slots {
    /// The logical PU of each thread placed on `slot_of`: the hierarchical algorithms
    /// repair their placements onto slots that hold a PU, so every slot given has one.
    pub fn onto_pus(&self, slot_of: Vec<usize>) -> Vec<usize> {
        slot_of
            .into_iter()
            .map(|s| self.pu[s].expect("slot repaired onto a PU"))
            .collect()
    }

    /// The slots of `topo`, with `per_pu` slots per PU (1 unless oversubscribing).
    pub fn new(topo: &Topology, per_pu: usize) -> Slots {
        let npu = topo.num_pus();
        let mut arities = Vec::new();
        let mut digits = vec![Vec::new(); npu];
        for w in topo.levels.windows(2) {
            let (up, down) = (&w[0], &w[1]);
            let mut index = vec![usize::MAX; down.groups];
            let mut count = vec![0usize; up.groups];
            for pu in 0..npu {
                let g = down.group_of_pu[pu];
                if index[g] == usize::MAX {
                    let p = up.group_of_pu[pu];
                    index[g] = count[p];
                    count[p] += 1;
                }
            }
            let arity = count.iter().copied().max().unwrap_or(1);
            if arity > 1 {
                arities.push(arity);
                for (pu, d) in digits.iter_mut().enumerate() {
                    d.push(index[down.group_of_pu[pu]]);
                }
            }
        }
        let hull: usize = arities.iter().product();
        let mut pu_of_leaf = vec![None; hull];
        for (pu, d) in digits.iter().enumerate() {
            let leaf = d.iter().zip(&arities).fold(0, |acc, (&x, &a)| acc * a + x);
            pu_of_leaf[leaf] = Some(pu);
        }
        let per_pu = per_pu.max(1);
        if per_pu > 1 {
            arities.push(per_pu);
        }
        let pu = (0..hull * per_pu).map(|s| pu_of_leaf[s / per_pu]).collect();
        Slots { arities, pu }
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.pu.len()
    }

    /// True when there is no slot (never for a real machine).
    pub fn is_empty(&self) -> bool {
        self.pu.is_empty()
    }

    /// The innermost arities whose product is the smallest subtree holding `n` threads:
    /// sharing-aware algorithms pack fewer threads than PUs into one subtree, the first.
    pub fn subtree_for(&self, n: usize) -> Vec<usize> {
        let mut size = 1;
        let mut k = self.arities.len();
        while size < n && k > 0 {
            k -= 1;
            size *= self.arities[k];
        }
        self.arities[k..].to_vec()
    }

    /// How many innermost digits two slots share (higher is closer in the tree).
    pub fn common_depth(&self, a: usize, b: usize) -> usize {
        let k = self.arities.len();
        let (mut a, mut b) = (a, b);
        if a == b {
            return k;
        }
        for (depth, &ar) in self.arities.iter().rev().enumerate() {
            a /= ar;
            b /= ar;
            if a == b {
                return k - depth - 1;
            }
        }
        0
    }
}

/// On an uneven machine, swaps sibling subtrees of the hull so that the subtrees holding
/// more threads land where there are more real PUs, keeping every group together
/// (e.g. a group of three goes to the package with three cores, not the one with two).
/// Symmetric machines are left alone.
pub fn fit_to_capacity(slots: &Slots, slot_of: &mut [usize]) {
    if slots.pu.iter().all(Option::is_some) {
        return;
    }
    let mut prefix = vec![0usize; slots.len() + 1];
    for (s, p) in slots.pu.iter().enumerate() {
        prefix[s + 1] = prefix[s] + usize::from(p.is_some());
    }
    let threads: Vec<usize> = (0..slot_of.len()).collect();
    fit_level(slots, &prefix, slot_of, 0, 0, &threads);
}

fn fit_level(
    slots: &Slots,
    prefix: &[usize],
    slot_of: &mut [usize],
    level: usize,
    base: usize,
    threads: &[usize],
) {
    let Some(&arity) = slots.arities.get(level) else {
        return;
    };
    let size: usize = slots.arities[level + 1..].iter().product();
    let mut members = vec![Vec::new(); arity];
    for &t in threads {
        members[(slot_of[t] - base) / size].push(t);
    }
    let cap = |c: usize| prefix[base + (c + 1) * size] - prefix[base + c * size];
    let mut by_load: Vec<usize> = (0..arity).collect();
    by_load.sort_by_key(|&c| std::cmp::Reverse(members[c].len()));
    let mut by_cap: Vec<usize> = (0..arity).collect();
    by_cap.sort_by_key(|&c| std::cmp::Reverse(cap(c)));
    for (&src, &dst) in by_load.iter().zip(&by_cap) {
        for &t in &members[src] {
            slot_of[t] = slot_of[t] + dst * size - src * size;
        }
        fit_level(
            slots,
            prefix,
            slot_of,
            level + 1,
            base + dst * size,
            &members[src],
        );
    }
}

/// Puts each thread on a distinct slot that has a PU: threads sharing a slot, or on a
/// slot without PU, move to the free slot closest in the tree (keeps Scotch's and the
/// hull's results valid). `slot_of[t]` is updated in place.
pub fn repair(slots: &Slots, slot_of: &mut [usize]) {
    let mut used = vec![false; slots.len()];
    let mut movers = Vec::new();
    for (t, &s) in slot_of.iter().enumerate() {
        if s < slots.len() && slots.pu[s].is_some() && !used[s] {
            used[s] = true;
        } else {
            movers.push(t);
        }
    }
    for t in movers {
        let from = slot_of[t].min(slots.len() - 1);
        let to = (0..slots.len())
            .filter(|&s| !used[s] && slots.pu[s].is_some())
            .max_by_key(|&s| (slots.common_depth(from, s), usize::MAX - s.abs_diff(from)))
            .expect("repair needs at least as many slots as threads");
        used[to] = true;
        slot_of[t] = to;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(spec: &str) -> Topology {
        tdmap_topo::from_synthetic(spec).unwrap()
    }

    #[test]
    fn slots_follow_the_tree() {
        let s = Slots::new(&topo("package:2 core:3 pu:2"), 1);
        assert_eq!(s.arities, vec![2, 3, 2]);
        assert_eq!(s.pu, (0..12).map(Some).collect::<Vec<_>>());
        assert_eq!(s.subtree_for(5), vec![3, 2]);
        assert_eq!(s.subtree_for(2), vec![2]);
        assert_eq!(s.subtree_for(7), vec![2, 3, 2]);
    }

    #[test]
    fn oversubscription_adds_a_level() {
        let s = Slots::new(&topo("package:2 core:2"), 3);
        assert_eq!(s.arities, vec![2, 2, 3]);
        assert_eq!(s.pu[5], Some(1));
    }

    #[test]
    fn repair_moves_duplicates_to_the_nearest_free_slot() {
        let s = Slots::new(&topo("package:2 core:2 pu:2"), 1);
        // Threads 0 and 1 collide on slot 4; slot 5 (same core) is free.
        let mut slot_of = vec![4, 4, 0, 1];
        repair(&s, &mut slot_of);
        assert_eq!(slot_of, vec![4, 5, 0, 1]);
        // Everything on slot 0: the others fill its core, then its package.
        let mut slot_of = vec![0, 0, 0, 0];
        repair(&s, &mut slot_of);
        assert_eq!(slot_of, vec![0, 1, 2, 3]);
    }
}
