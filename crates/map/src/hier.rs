//! Bottom-up hierarchical grouping shared by `greedy` and `matching`: threads are grouped
//! by the innermost arity, each group becomes one unit whose sharing with another unit
//! is the sum over their members (the trace-based paper's H((x,y),(z,k)) = M(x,z) +
//! M(x,k) + M(y,z) + M(y,k), §III-C, generalised to any group size), and so on up the
//! tree. The final tree of groups is laid onto the slots top-down.

use crate::slots::{fit_to_capacity, repair, Slots};
use std::borrow::Cow;

/// Splits `k` units (sharing `w`, k × k) into groups of exactly `size` units, and gives
/// the groups' sharing matrix ([`reduce`]).
pub type GroupFn = fn(w: &[f64], k: usize, size: usize) -> (Vec<Vec<usize>>, Vec<f64>);

/// Maps `n` threads sharing `m` (symmetric, n × n) onto `slots` with `group`; with
/// `split`, each arity is grouped in prime-factor steps (2s first), as pairwise matching
/// needs. Returns the slot of each thread, all distinct and on real PUs.
pub fn map(slots: &Slots, m: &[f64], n: usize, group: GroupFn, split: bool) -> Vec<usize> {
    let arities = slots.subtree_for(n);
    let total: usize = arities.iter().product();
    let mut w: Cow<'_, [f64]> = if total == n {
        Cow::Borrowed(m)
    } else {
        Cow::Owned(pad(m, n, total))
    };
    let mut k = total;
    let mut rounds: Vec<Vec<Vec<usize>>> = Vec::new();
    for &a in arities.iter().rev() {
        let steps = if split { prime_factors(a) } else { vec![a] };
        for f in steps {
            let (groups, reduced) = group(&w, k, f);
            debug_assert!(groups.iter().all(|g| g.len() == f));
            w = Cow::Owned(reduced);
            k = groups.len();
            rounds.push(groups);
        }
    }
    let mut slot_of = layout(&rounds, total);
    slot_of.truncate(n);
    fit_to_capacity(slots, &mut slot_of);
    repair(slots, &mut slot_of);
    slot_of
}

/// Above this many units a level of the sparse path stays sparse; at or below it, the
/// groups' matrix is made dense (4096² × 8 bytes = 128 MiB at most) and the dense rule
/// takes over, as it is faster there.
pub const DENSE_AT: usize = 4096;

/// [`map`] with `greedy` on a sparse matrix: sparse levels while more than
/// [`DENSE_AT`] units are left, then dense ones.
pub fn map_sparse(slots: &Slots, m: &crate::Sparse, n: usize) -> Vec<usize> {
    let arities = slots.subtree_for(n);
    let total: usize = arities.iter().product();
    let mut sparse = Some(m.padded(total));
    let mut dense: Vec<f64> = Vec::new();
    let mut k = total;
    let mut rounds: Vec<Vec<Vec<usize>>> = Vec::new();
    for &a in arities.iter().rev() {
        if let Some(s) = sparse.take_if(|_| k <= DENSE_AT) {
            dense = s.to_dense();
        }
        let groups = match sparse.take() {
            Some(s) => {
                let (groups, reduced) = crate::greedy_sparse::group(&s, a);
                sparse = Some(reduced);
                groups
            }
            None => {
                let (groups, reduced) = crate::greedy::group(&dense, k, a);
                dense = reduced;
                groups
            }
        };
        k = groups.len();
        rounds.push(groups);
    }
    let mut slot_of = layout(&rounds, total);
    slot_of.truncate(n);
    fit_to_capacity(slots, &mut slot_of);
    repair(slots, &mut slot_of);
    slot_of
}

/// `m` (n × n) inside a `total` × `total` matrix of zeros: the padding threads share nothing.
fn pad(m: &[f64], n: usize, total: usize) -> Vec<f64> {
    let mut out = vec![0.0; total * total];
    for i in 0..n {
        out[i * total..i * total + n].copy_from_slice(&m[i * n..(i + 1) * n]);
    }
    out
}

/// The sharing between groups: the sum over their members, zero on the diagonal. Member
/// rows are summed with contiguous adds, then gathered per group in member order.
pub fn reduce(w: &[f64], k: usize, groups: &[Vec<usize>]) -> Vec<f64> {
    let g = groups.len();
    let order: Vec<usize> = groups.iter().flatten().copied().collect();
    let mut out = vec![0.0; g * g];
    let mut acc = vec![0.0; k];
    for (gi, members) in groups.iter().enumerate() {
        acc.copy_from_slice(&w[members[0] * k..(members[0] + 1) * k]);
        for &u in &members[1..] {
            for (a, &x) in acc.iter_mut().zip(&w[u * k..(u + 1) * k]) {
                *a += x;
            }
        }
        let row = &mut out[gi * g..(gi + 1) * g];
        let mut c = 0;
        for (h, cell) in row.iter_mut().enumerate() {
            let len = groups[h].len();
            *cell = order[c..c + len].iter().map(|&v| acc[v]).sum();
            c += len;
        }
        row[gi] = 0.0;
    }
    out
}

/// Slots of the original units: the root covers all slots, each group's members get
/// consecutive equal sub-ranges of their group's range.
fn layout(rounds: &[Vec<Vec<usize>>], total: usize) -> Vec<usize> {
    let mut start = vec![0usize];
    let mut units = 1;
    for groups in rounds.iter().rev() {
        let count: usize = groups.iter().map(Vec::len).sum();
        let child = total / count;
        let mut next = vec![0; count];
        for (gi, members) in groups.iter().enumerate() {
            for (c, &u) in members.iter().enumerate() {
                next[u] = start[gi] + c * child;
            }
        }
        debug_assert_eq!(groups.len(), units);
        start = next;
        units = count;
    }
    start
}

/// Prime factors of `a`, 2s first, then the odd ones in increasing order.
pub fn prime_factors(mut a: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut p = 2;
    while a > 1 {
        while a.is_multiple_of(p) {
            out.push(p);
            a /= p;
        }
        p += 1;
        if p * p > a && a > 1 {
            out.push(a);
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_put_twos_first() {
        assert_eq!(prime_factors(6), vec![2, 3]);
        assert_eq!(prime_factors(8), vec![2, 2, 2]);
        assert_eq!(prime_factors(9), vec![3, 3]);
        assert_eq!(prime_factors(7), vec![7]);
        assert_eq!(prime_factors(12), vec![2, 2, 3]);
    }

    #[test]
    fn reduce_sums_pairs_of_pairs() {
        // H((0,1),(2,3)) = M(0,2)+M(0,3)+M(1,2)+M(1,3) = 1+2+3+4.
        let mut m = vec![0.0; 16];
        for (a, b, x) in [
            (0, 2, 1.0),
            (0, 3, 2.0),
            (1, 2, 3.0),
            (1, 3, 4.0),
            (0, 1, 9.0),
        ] {
            m[a * 4 + b] = x;
            m[b * 4 + a] = x;
        }
        let r = reduce(&m, 4, &[vec![0, 1], vec![2, 3]]);
        assert_eq!(r, vec![0.0, 10.0, 10.0, 0.0]);
    }

    #[test]
    fn layout_nests_groups_in_slot_ranges() {
        // Threads paired (3,0) and (1,2), then the pairs grouped (pair1, pair0).
        let rounds = vec![vec![vec![3, 0], vec![1, 2]], vec![vec![1, 0]]];
        assert_eq!(layout(&rounds, 4), vec![3, 0, 1, 2]);
    }
}
