//! The thread sharing matrix: dense, symmetric, u64 cells, with kMAF's aging.

use serde::{Deserialize, Serialize};

/// Whether `pair_events` sharing events (each pair of threads counted once) are evidence
/// enough to map `threads` threads by: at least `per_thread` per thread (1 in `tdmap
/// run`). Fewer (a pointer array each thread reads once, a barrier at the end of a run)
/// make any mapping look far better than one chosen without sharing, and moving threads
/// for them is needless.
pub fn enough_sharing(pair_events: f64, threads: usize, per_thread: f64) -> bool {
    pair_events >= per_thread * threads as f64
}

/// kMAF §3.4.2's aging factor, applied after each mapping (SAMMU §2.7.1 uses the same).
pub const AGING: f64 = 0.75;

/// kMAF §3.4.2 aging of real-valued counters (SAMMU's matrix, the loop's data homes):
/// every value ×[`AGING`]. Integer matrices use the shift form of [`SharingMatrix::age`].
pub fn age_weights(values: &mut [f64]) {
    for v in values {
        *v *= AGING;
    }
}

/// A dense symmetric T×T matrix of sharing between threads; cell (i,i) holds private data
/// (trace paper §III-B), cell (i,j) the sharing between threads i and j.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Cells")]
pub struct SharingMatrix {
    n: usize,
    cells: Vec<u64>,
}

/// A matrix as a file holds it, checked by [`SharingMatrix::from_rows`] when read.
#[derive(Deserialize)]
struct Cells {
    n: usize,
    cells: Vec<u64>,
}

impl TryFrom<Cells> for SharingMatrix {
    type Error = String;
    fn try_from(c: Cells) -> Result<SharingMatrix, String> {
        let (n, len) = (c.n, c.cells.len());
        SharingMatrix::from_rows(n, c.cells)
            .ok_or_else(|| format!("not a symmetric {n}×{n} matrix ({len} cells)"))
    }
}

impl SharingMatrix {
    /// A zero matrix for `n` threads.
    pub fn new(n: usize) -> SharingMatrix {
        SharingMatrix {
            n,
            cells: vec![0; n * n],
        }
    }

    /// Builds a matrix from row-major cells; `None` unless there are n×n of them and they
    /// are symmetric.
    pub fn from_rows(n: usize, cells: Vec<u64>) -> Option<SharingMatrix> {
        let ok = n.checked_mul(n) == Some(cells.len())
            && (0..n).all(|i| (0..i).all(|j| cells[i * n + j] == cells[j * n + i]));
        ok.then_some(SharingMatrix { n, cells })
    }

    /// The same matrix padded with zero rows and columns to `n` threads (never shrinks):
    /// for models whose threads appear while they run.
    pub fn grown(&self, n: usize) -> SharingMatrix {
        let mut m = SharingMatrix::new(n.max(self.n));
        for (i, row) in self.cells.chunks_exact(self.n.max(1)).enumerate() {
            m.cells[i * m.n..i * m.n + self.n].copy_from_slice(row);
        }
        m
    }

    /// Number of threads.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Sharing between threads `i` and `j`.
    pub fn get(&self, i: usize, j: usize) -> u64 {
        self.cells[i * self.n + j]
    }

    /// Adds `w` to the sharing of `i` and `j` (both cells, once on the diagonal).
    #[inline]
    pub fn add(&mut self, i: usize, j: usize, w: u64) {
        let n = self.n;
        self.cells[i * n + j] += w;
        if i != j {
            self.cells[j * n + i] += w;
        }
    }

    /// kMAF §3.4.2 aging: every cell ×[`AGING`] in the paper's shift form `M - (M >> 2)`.
    pub fn age(&mut self) {
        for c in &mut self.cells {
            *c -= *c >> 2;
        }
    }

    /// The cells, row-major.
    pub fn as_slice(&self) -> &[u64] {
        &self.cells
    }

    /// The cells as row-major f64, the form the mapping algorithms take.
    pub fn to_f64_rows(&self) -> Vec<f64> {
        self.cells.iter().map(|&c| c as f64).collect()
    }

    /// Sum of the cells off the diagonal (each pair counted twice).
    pub fn off_diagonal_sum(&self) -> u64 {
        self.cells.iter().sum::<u64>() - (0..self.n).map(|i| self.get(i, i)).sum::<u64>()
    }

    /// The `k` pairs i<j that share most, largest first (ties by lower ids).
    pub fn top_pairs(&self, k: usize) -> Vec<(usize, usize, u64)> {
        let mut v: Vec<(usize, usize, u64)> = (0..self.n)
            .flat_map(|i| (i + 1..self.n).map(move |j| (i, j)))
            .map(|(i, j)| (i, j, self.get(i, j)))
            .filter(|p| p.2 > 0)
            .collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
        v.truncate(k);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_is_symmetric_and_diagonal_counts_once() {
        let mut m = SharingMatrix::new(3);
        m.add(0, 2, 5);
        m.add(1, 1, 7);
        assert_eq!((m.get(0, 2), m.get(2, 0), m.get(1, 1)), (5, 5, 7));
        assert_eq!(m.off_diagonal_sum(), 10);
        assert_eq!(m.to_f64_rows()[2], 5.0);
    }

    #[test]
    fn aging_is_subtract_and_shift() {
        let mut m = SharingMatrix::new(2);
        m.add(0, 1, 100);
        m.add(0, 0, 3);
        m.age();
        assert_eq!(m.get(0, 1), 75);
        assert_eq!(
            m.get(0, 0),
            3,
            "3 - (3 >> 2) = 3: small counts decay by the shift"
        );
        m.age();
        assert_eq!(m.get(1, 0), 57);
    }

    #[test]
    fn top_pairs_sorted_and_from_rows_checks_symmetry() {
        let m = SharingMatrix::from_rows(3, vec![0, 1, 4, 1, 0, 9, 4, 9, 0]).unwrap();
        assert_eq!(m.top_pairs(2), vec![(1, 2, 9), (0, 2, 4)]);
        assert!(SharingMatrix::from_rows(2, vec![0, 1, 2, 0]).is_none());
    }
}
