//! `matching`: hierarchical maximum-weight perfect matching (trace-based mapping paper,
//! §III-C). Pairs come from Edmonds' blossom algorithm on the complete sharing graph,
//! pairs of pairs from the same on the reduced matrix H, and so on up the arities. An odd
//! prime factor of an arity (3 of 6 cores per socket) cannot be matched pairwise; those
//! steps group with the greedy rule instead.

use crate::blossom::max_weight_perfect_matching;
use crate::hier::reduce;

/// Groups `k` units sharing `w` into groups of `size`: by perfect matching for pairs.
/// Also returns the sharing between the groups.
pub fn group(w: &[f64], k: usize, size: usize) -> (Vec<Vec<usize>>, Vec<f64>) {
    if size != 2 || !k.is_multiple_of(2) {
        return crate::greedy::group(w, k, size);
    }
    let mate = max_weight_perfect_matching(&integer_weights(w), k);
    let groups: Vec<Vec<usize>> = (0..k)
        .filter(|&u| mate[u] > u)
        .map(|u| vec![u, mate[u]])
        .collect();
    let reduced = reduce(w, k, &groups);
    (groups, reduced)
}

/// Scales the weights to integers up to 2^40 so that the blossom duals stay exact.
fn integer_weights(w: &[f64]) -> Vec<i64> {
    let max = w.iter().copied().fold(0.0, f64::max);
    if max <= 0.0 {
        return vec![0; w.len()];
    }
    let scale = (1u64 << 40) as f64 / max;
    w.iter().map(|&x| (x * scale).round() as i64).collect()
}
