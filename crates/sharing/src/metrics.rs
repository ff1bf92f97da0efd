//! kMAF §2.2's metrics: heterogeneity and amount of sharing (Eq. 1–2) for thread
//! affinity, page and average exclusivity (Eq. 3–4) and the exclusivity histogram
//! (Figure 2) for data affinity, at any page size the table can aggregate to.

use crate::error::SharingError;
use crate::hash::FastMap;
use crate::matrix::SharingMatrix;
use crate::table::AffinityTable;
use serde::{Deserialize, Serialize};

/// kMAF Eq. 1 exactly as printed, over a row-major T×T matrix (diagonal included).
pub fn heterogeneity_eq1(m: &[f64], t: usize) -> f64 {
    let mut sum = 0.0;
    for i in 0..t {
        let row = &m[i * t..(i + 1) * t];
        let mean = row.iter().sum::<f64>() / t as f64;
        sum += row.iter().map(|&x| (mean - x).powi(2)).sum::<f64>();
    }
    sum / (t * t) as f64
}

/// kMAF Eq. 2 exactly as printed: the mean cell of a row-major T×T matrix.
pub fn sharing_amount_eq2(m: &[f64], t: usize) -> f64 {
    m.iter().sum::<f64>() / (t * t) as f64
}

/// The thread-affinity metrics of a matrix.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThreadMetrics {
    /// Eq. 1 on the normalised off-diagonal matrix: 0 when all pairs share alike.
    pub heterogeneity: f64,
    /// Eq. 2 on the normalised off-diagonal matrix: 1 when every pair shares the most.
    pub amount: f64,
}

/// Eq. 1–2 as tdmap reports them. The diagonal holds private data (trace paper §III-B),
/// not sharing, and kMAF's own matrix has none, so the sums run over the T(T−1) cells
/// i≠j and divide by T(T−1), with row means over T−1 cells; kept in, the zero diagonal
/// alone would make an all-to-all pattern look as heterogeneous as a pairs pattern.
/// Cells are first divided by the largest one so traces of any length compare (kMAF
/// Figure 3 compares benchmarks on one scale).
pub fn thread_metrics(m: &SharingMatrix) -> ThreadMetrics {
    let t = m.n();
    let max = (0..t)
        .flat_map(|i| (0..t).filter(move |&j| j != i).map(move |j| (i, j)))
        .map(|(i, j)| m.get(i, j))
        .max()
        .unwrap_or(0);
    if t < 2 || max == 0 {
        return ThreadMetrics {
            heterogeneity: 0.0,
            amount: 0.0,
        };
    }
    let cell = |i: usize, j: usize| m.get(i, j) as f64 / max as f64;
    let (mut het, mut total) = (0.0, 0.0);
    for i in 0..t {
        let others = || (0..t).filter(move |&j| j != i);
        let mean = others().map(|j| cell(i, j)).sum::<f64>() / (t - 1) as f64;
        het += others().map(|j| (mean - cell(i, j)).powi(2)).sum::<f64>();
        total += others().map(|j| cell(i, j)).sum::<f64>();
    }
    let pairs = (t * (t - 1)) as f64;
    ThreadMetrics {
        heterogeneity: het / pairs,
        amount: total / pairs,
    }
}

/// kMAF Eq. 3: the share of a page's accesses that come from its busiest node; `None`
/// for a page without accesses.
pub fn page_exclusivity(na: &[u32]) -> Option<f64> {
    let sum: u64 = na.iter().map(|&c| c as u64).sum();
    let max = na.iter().copied().max()? as u64;
    (sum > 0).then(|| max as f64 / sum as f64)
}

/// The data-affinity metrics at one page size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataMetrics {
    /// Page size in bytes.
    pub page_size: u64,
    /// Pages with at least one access.
    pub pages: u64,
    /// Accesses counted in the NUMA vectors.
    pub accesses: u64,
    /// kMAF Eq. 4: page exclusivity weighted by accesses.
    pub avg_exclusivity: f64,
    /// Pages per exclusivity rounded to the nearest 10% (kMAF Figure 2): bin k is k×10%.
    pub histogram: [u64; 11],
}

/// Data metrics of `table` at `page_size`, a power-of-two multiple of the table's page
/// size: NUMA vectors of the small pages that make up a large page are summed.
pub fn data_metrics(table: &AffinityTable, page_size: u64) -> Result<DataMetrics, SharingError> {
    let small = table.config().page_size;
    if !page_size.is_power_of_two() || page_size < small {
        return Err(SharingError::PageSize {
            asked: page_size,
            table: small,
        });
    }
    let shift = (page_size / small).trailing_zeros();
    let mut m = DataMetrics {
        page_size,
        pages: 0,
        accesses: 0,
        avg_exclusivity: 0.0,
        histogram: [0; 11],
    };
    let mut weighted = 0.0;
    let mut add = |nv: &[u32]| {
        let Some(ex) = page_exclusivity(nv) else {
            return;
        };
        let n: u64 = nv.iter().map(|&c| c as u64).sum();
        m.pages += 1;
        m.accesses += n;
        weighted += ex * n as f64; // kMAF Eq. 4 numerator
        m.histogram[(ex * 10.0).round() as usize] += 1;
    };
    if shift == 0 {
        // Each page is its own large page: no sums to gather.
        table.for_each_page(|_, nv| add(nv));
    } else {
        let nodes = table.config().nodes;
        let mut row: FastMap<u64, usize> = FastMap::default();
        let mut sums: Vec<u32> = Vec::new();
        table.for_each_page(|page, nv| {
            let next = row.len();
            let r = *row.entry(page >> shift).or_insert(next);
            if r == next {
                sums.resize(sums.len() + nodes, 0);
            }
            sums[r * nodes..(r + 1) * nodes]
                .iter_mut()
                .zip(nv)
                .for_each(|(a, &c)| *a = a.saturating_add(c));
        });
        sums.chunks_exact(nodes.max(1)).for_each(&mut add);
    }
    if m.accesses > 0 {
        m.avg_exclusivity = weighted / m.accesses as f64;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::TableConfig;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// A two-node table in which thread 0 touched each (node, address) the given times.
    fn touched(touches: &[(usize, u64, u32)]) -> AffinityTable {
        let mut t = AffinityTable::new(TableConfig::exact(2)).unwrap();
        for &(node, addr, n) in touches {
            for _ in 0..n {
                t.touch(0, node, addr);
            }
        }
        t
    }

    #[test]
    fn eq1_and_eq2_by_hand() {
        // M = [[0,2],[2,0]]: row means 1, every cell deviates by 1: Eq.1 = 4/4 = 1.
        assert!(close(heterogeneity_eq1(&[0.0, 2.0, 2.0, 0.0], 2), 1.0));
        assert!(close(sharing_amount_eq2(&[0.0, 2.0, 2.0, 0.0], 2), 1.0));
        // M = [[1,3],[3,1]]: means 2, deviations ±1: Eq.1 = 4/4 = 1; Eq.2 = 8/4 = 2.
        assert!(close(heterogeneity_eq1(&[1.0, 3.0, 3.0, 1.0], 2), 1.0));
        assert!(close(sharing_amount_eq2(&[1.0, 3.0, 3.0, 1.0], 2), 2.0));
        // A constant matrix has no heterogeneity.
        assert!(close(heterogeneity_eq1(&[5.0; 9], 3), 0.0));
    }

    #[test]
    fn normalised_off_diagonal_metrics_by_hand() {
        // 3 threads, M(0,1)=4, M(0,2)=2, M(1,2)=0; diagonal ignored; scaled by 4:
        // rows (off-diagonal): [1, .5], [1, 0], [.5, 0]; means .75, .5, .25;
        // squared deviations: 2×.0625 + 2×.25 + 2×.0625 = .75; / 6 = .125.
        // amount: (1.5 + 1 + .5) / 6 = .5.
        let m = SharingMatrix::from_rows(3, vec![9, 4, 2, 4, 9, 0, 2, 0, 9]).unwrap();
        let tm = thread_metrics(&m);
        assert!(close(tm.heterogeneity, 0.125), "{tm:?}");
        assert!(close(tm.amount, 0.5), "{tm:?}");
        let uniform = SharingMatrix::from_rows(3, vec![0, 7, 7, 7, 0, 7, 7, 7, 0]).unwrap();
        assert_eq!(
            thread_metrics(&uniform),
            ThreadMetrics {
                heterogeneity: 0.0,
                amount: 1.0
            }
        );
        assert_eq!(thread_metrics(&SharingMatrix::new(4)).amount, 0.0);
    }

    #[test]
    fn eq3_by_hand() {
        assert_eq!(page_exclusivity(&[3, 1, 0, 0]), Some(0.75));
        assert_eq!(
            page_exclusivity(&[2, 2, 2, 2]),
            Some(0.25),
            "minimum is 1/N"
        );
        assert_eq!(page_exclusivity(&[0, 0]), None);
    }

    #[test]
    fn eq4_weights_pages_by_accesses_and_aggregates_to_2m() {
        // page A (0x0000): 3 from node 0, 1 from node 1 -> 0.75, 4 accesses.
        // page B (0x1000): 6 from node 1 -> 1.0, 6 accesses.
        let t = touched(&[(0, 0x0, 3), (1, 0x0, 1), (1, 0x1000, 6)]);
        let d = data_metrics(&t, 4096).unwrap();
        // Eq. 4: (0.75*4 + 1.0*6) / 10 = 0.9
        assert!(close(d.avg_exclusivity, 0.9), "{d:?}");
        assert_eq!((d.pages, d.accesses), (2, 10));
        assert_eq!(d.histogram[8], 1, "0.75 rounds to 80%");
        assert_eq!(d.histogram[10], 1);
        // One 2 MiB page holds both: NV = [3, 7] -> 0.7.
        let d2 = data_metrics(&t, 2 << 20).unwrap();
        assert_eq!(d2.pages, 1);
        assert!(close(d2.avg_exclusivity, 0.7), "{d2:?}");
        assert_eq!(d2.histogram[7], 1);
        assert!(data_metrics(&t, 1024).is_err());
    }

    #[test]
    fn a_large_page_sums_small_pages_the_table_keeps_in_different_groups() {
        // 0x0 and 0x40000 (256 KiB: the table's next group of 64 pages) in one 2 MiB
        // page, and 0x200000 in the next: NVs [2, 0] + [0, 2] and [0, 5].
        let t = touched(&[(0, 0x0, 2), (1, 0x40000, 2), (1, 0x200000, 5)]);
        let d = data_metrics(&t, 2 << 20).unwrap();
        assert_eq!((d.pages, d.accesses), (2, 9), "{d:?}");
        // (0.5 * 4 + 1.0 * 5) / 9
        assert!(close(d.avg_exclusivity, 7.0 / 9.0), "{d:?}");
        assert_eq!((d.histogram[5], d.histogram[10]), (1, 1), "{d:?}");
        assert_eq!(data_metrics(&t, 4096).unwrap().pages, 3);
    }
}
