//! `exhaustive`: the optimal mapping by branch and bound over all placements, for at most
//! ten threads; the ground truth of the tests and of the quality benchmark.

use crate::MapError;
use tdmap_topo::Topology;

/// Largest thread count accepted.
pub const MAX_THREADS: usize = 10;
const MAX_PLACEMENTS: f64 = 1e8;

/// The mapping of `n` threads sharing `m` (symmetric) with the least hop cost.
pub fn map(topo: &Topology, m: &[f64], n: usize) -> Result<Vec<usize>, MapError> {
    let p = topo.num_pus();
    let placements: f64 = (0..n).map(|i| (p - i.min(p)) as f64).product();
    if n > MAX_THREADS || n > p || placements > MAX_PLACEMENTS {
        return Err(MapError::TooBigForExhaustive {
            threads: n,
            pus: p,
            max: MAX_THREADS,
        });
    }
    let dist: Vec<f64> = (0..p * p)
        .map(|k| topo.pu_distance(k / p, k % p) as f64)
        .collect();
    let mut s = Search {
        m,
        n,
        p,
        dist,
        used: vec![false; p],
        cur: vec![0; n],
        best: (0..n).collect(),
        best_cost: f64::INFINITY,
    };
    s.dfs(0, 0.0);
    Ok(s.best)
}

struct Search<'a> {
    m: &'a [f64],
    n: usize,
    p: usize,
    dist: Vec<f64>,
    used: Vec<bool>,
    cur: Vec<usize>,
    best: Vec<usize>,
    best_cost: f64,
}

impl Search<'_> {
    fn dfs(&mut self, t: usize, partial: f64) {
        if t == self.n {
            if partial < self.best_cost {
                self.best_cost = partial;
                self.best.copy_from_slice(&self.cur);
            }
            return;
        }
        for pu in 0..self.p {
            if self.used[pu] {
                continue;
            }
            let add: f64 = (0..t)
                .map(|j| 2.0 * self.m[t * self.n + j] * self.dist[pu * self.p + self.cur[j]])
                .sum();
            if partial + add >= self.best_cost {
                continue;
            }
            self.used[pu] = true;
            self.cur[t] = pu;
            self.dfs(t + 1, partial + add);
            self.used[pu] = false;
        }
    }
}
