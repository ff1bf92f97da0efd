//! Maximum-weight perfect matching on a complete graph: Edmonds' blossom algorithm with
//! dual variables, O(n³), in the formulation of Galil (1986) as made popular by Joris van
//! Rantwijk's `mwmatching`. The trace-based mapping paper (§III-C) pairs threads with it.
//!
//! Weights are integers so that dual updates stay exact: with `maxcardinality` on a
//! complete graph of even order the result is a maximum-weight perfect matching.

mod solver;

use solver::Blossom;

const NONE: usize = usize::MAX;

/// Returns `mate[v]` for every vertex of the complete graph whose edge weights are
/// `w[i * n + j]` (symmetric, diagonal ignored): a maximum-weight perfect matching when
/// `n` is even. With odd `n`, one vertex stays unmatched (`mate[v] == usize::MAX`).
///
/// Dense graphs are solved on a sparse candidate graph (each vertex's heaviest edges)
/// first; the result is exact because the duals are then checked on every edge of the
/// complete graph, and any edge they violate joins the candidates for another round (LP
/// duality: feasible duals plus complementary slackness certify the optimum).
pub fn max_weight_perfect_matching(w: &[i64], n: usize) -> Vec<usize> {
    if n < 2 {
        return vec![NONE; n];
    }
    if n <= 64 {
        return solve_on(w, n, |_, _| true).0;
    }
    let mut chosen = vec![false; n * n];
    for i in 0..n {
        for j in heaviest(w, n, i, 10) {
            chosen[i.min(j) * n + i.max(j)] = true;
        }
    }
    for _round in 0..30 {
        let (mate, violated) = solve_on(w, n, |i, j| chosen[i * n + j]);
        let single: Vec<usize> = (0..n).filter(|&v| mate[v] == NONE).collect();
        if single.len() > n % 2 {
            // The candidates admit no perfect matching: let the single vertices meet.
            for (a, &i) in single.iter().enumerate() {
                for &j in &single[a + 1..] {
                    chosen[i.min(j) * n + i.max(j)] = true;
                }
            }
            continue;
        }
        if violated.is_empty() {
            return mate;
        }
        for (i, j) in violated {
            chosen[i * n + j] = true;
        }
    }
    solve_on(w, n, |_, _| true).0
}

/// The `k` heaviest neighbours of `i`.
fn heaviest(w: &[i64], n: usize, i: usize, k: usize) -> Vec<usize> {
    let mut others: Vec<usize> = (0..n).filter(|&j| j != i).collect();
    let k = k.min(others.len());
    others.select_nth_unstable_by_key(k - 1, |&j| std::cmp::Reverse(w[i * n + j]));
    others.truncate(k);
    others
}

/// Solves on the edges `i < j` that `keep` accepts; returns the mates and the edges of the
/// complete graph whose slack under the final duals is negative.
fn solve_on(
    w: &[i64],
    n: usize,
    keep: impl Fn(usize, usize) -> bool,
) -> (Vec<usize>, Vec<(usize, usize)>) {
    let mut edges = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if keep(i, j) {
                edges.push((i, j, w[i * n + j]));
            }
        }
    }
    let mut b = Blossom::new(n, edges);
    b.run();
    let violated = b.violations(w);
    (b.mates(), violated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix;

    fn weight(w: &[i64], n: usize, mate: &[usize]) -> i64 {
        (0..n)
            .filter(|&v| mate[v] > v)
            .map(|v| w[v * n + mate[v]])
            .sum()
    }

    fn brute(w: &[i64], n: usize, free: &mut Vec<usize>) -> i64 {
        if free.is_empty() {
            return 0;
        }
        let a = free.remove(0);
        let mut best = i64::MIN;
        for idx in 0..free.len() {
            let b = free.remove(idx);
            best = best.max(w[a * n + b] + brute(w, n, free));
            free.insert(idx, b);
        }
        free.insert(0, a);
        best
    }

    #[test]
    fn matches_brute_force_on_random_graphs() {
        let mut rng = SplitMix::new(7);
        for trial in 0..300 {
            let n = 2 + 2 * (trial % 5);
            let mut w = vec![0i64; n * n];
            for i in 0..n {
                for j in i + 1..n {
                    let x = (rng.next_u64() % 20) as i64;
                    w[i * n + j] = x;
                    w[j * n + i] = x;
                }
            }
            let mate = max_weight_perfect_matching(&w, n);
            for v in 0..n {
                assert_eq!(mate[mate[v]], v, "not a perfect matching: {mate:?}");
            }
            let best = brute(&w, n, &mut (0..n).collect());
            assert_eq!(weight(&w, n, &mate), best, "trial {trial} n {n}");
        }
    }

    #[test]
    fn sparse_candidates_give_the_dense_optimum() {
        let mut rng = SplitMix::new(3);
        for (trial, n) in [66, 80, 100, 130].into_iter().enumerate() {
            let mut w = vec![0i64; n * n];
            for i in 0..n {
                for j in i + 1..n {
                    // Few distinct values and a hub structure: many ties and long paths.
                    let x = if trial % 2 == 0 {
                        (rng.next_u64() % 1000) as i64
                    } else {
                        ((i % 7 == 0) as i64) * 500 + (rng.next_u64() % 5) as i64
                    };
                    w[i * n + j] = x;
                    w[j * n + i] = x;
                }
            }
            let fast = max_weight_perfect_matching(&w, n);
            let dense = solve_on(&w, n, |_, _| true).0;
            for v in 0..n {
                assert_eq!(fast[fast[v]], v);
            }
            assert_eq!(weight(&w, n, &fast), weight(&w, n, &dense), "n {n}");
        }
    }

    #[test]
    fn prefers_two_medium_edges_over_one_heavy() {
        // Path 0-1-2-3: greedy takes 1-2 (10) and is forced into 0-3 (0); optimum 0-1 + 2-3.
        let n = 4;
        let mut w = vec![0i64; 16];
        let mut set = |a: usize, b: usize, x: i64| {
            w[a * n + b] = x;
            w[b * n + a] = x;
        };
        set(0, 1, 8);
        set(1, 2, 10);
        set(2, 3, 8);
        let mate = max_weight_perfect_matching(&w, n);
        assert_eq!(mate, vec![1, 0, 3, 2]);
    }
}
