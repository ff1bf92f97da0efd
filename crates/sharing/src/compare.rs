//! How closely a detected sharing matrix follows a reference one, such as the exact
//! matrix of a `tdmap trace`: the check behind `tdmap run --reference`.

use crate::SharingMatrix;
use serde::{Deserialize, Serialize};

/// A reference whose pairs vary (standard deviation) by less than this share of its mean
/// cell, private data on the diagonal included, has every pair sharing alike or next to
/// nothing: no pair is preferred, and a correlation with it would follow noise. The
/// workloads' exact matrices measure at most 0.07 when flat (all-to-all at page blocks,
/// private arrays) and at least 0.45 when they have a pattern.
pub const FLAT_SPREAD: f64 = 0.2;

/// Which comparison a [`Similarity`] used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    /// Pearson correlation over the pairs i<j: the reference has a pattern.
    Pearson,
    /// The reference is flat. The detection must be flat too, 1 − the spread of its
    /// pairs (as for [`FLAT_SPREAD`]), and weigh shared against private data as the
    /// reference does, the Pearson correlation over all cells, the diagonal included
    /// (a detector that saw no sharing of an all-to-all pattern is flat but fails this);
    /// the value is the smaller of the two.
    Flat,
}

/// The similarity of a detected matrix to a reference, and the rule that gave it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Similarity {
    /// From −1 to 1; 1 is a perfect match.
    pub value: f64,
    /// The comparison used.
    pub rule: Rule,
}

/// Compares `detected` with `reference` over the reference's threads: threads the
/// detector never saw count as zero rows, threads beyond the reference's are left out.
/// None when the reference has fewer than two threads (no pairs to compare).
pub fn similarity(detected: &SharingMatrix, reference: &SharingMatrix) -> Option<Similarity> {
    let n = reference.n();
    if n < 2 {
        return None;
    }
    let d = detected.grown(n);
    let pairs = |m: &SharingMatrix| -> Vec<f64> {
        (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .map(|(i, j)| m.get(i, j) as f64)
            .collect()
    };
    let all = |m: &SharingMatrix| -> Vec<f64> {
        (0..n * n).map(|k| m.get(k / n, k % n) as f64).collect()
    };
    let (dp, rp) = (pairs(&d), pairs(reference));
    let (da, ra) = (all(&d), all(reference));
    if spread(&rp, &ra).is_some_and(|s| s >= FLAT_SPREAD) {
        return Some(Similarity {
            value: pearson(&dp, &rp),
            rule: Rule::Pearson,
        });
    }
    let flatness = spread(&dp, &da).map_or(0.0, |s| (1.0 - s).max(0.0));
    Some(Similarity {
        value: flatness.min(pearson(&da, &ra)),
        rule: Rule::Flat,
    })
}

/// The standard deviation of the pairs over the mean of all `cells`; None when they
/// are all zero.
fn spread(pairs: &[f64], cells: &[f64]) -> Option<f64> {
    let mean = mean_sd(cells).0;
    (mean > 0.0).then(|| mean_sd(pairs).1 / mean)
}

/// Mean and population standard deviation.
fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len().max(1) as f64;
    let m = x.iter().sum::<f64>() / n;
    (
        m,
        (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt(),
    )
}

/// Pearson correlation; 0 when either side is constant (it then follows nothing).
fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let ((mx, sx), (my, sy)) = (mean_sd(x), mean_sd(y));
    if sx == 0.0 || sy == 0.0 {
        return 0.0;
    }
    let cov = x
        .iter()
        .zip(y)
        .map(|(a, b)| (a - mx) * (b - my))
        .sum::<f64>()
        / x.len() as f64;
    cov / (sx * sy)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A symmetric matrix from a function of (i, j), diagonal included.
    fn matrix(n: usize, f: impl Fn(usize, usize) -> u64) -> SharingMatrix {
        let cells = (0..n * n)
            .map(|k| f(k / n, k % n).max(f(k % n, k / n)))
            .collect();
        SharingMatrix::from_rows(n, cells).unwrap()
    }

    fn band(i: usize, j: usize) -> u64 {
        if i.abs_diff(j) == 1 {
            100
        } else {
            0
        }
    }

    #[test]
    fn a_pattern_is_compared_by_correlation() {
        let r = matrix(8, band);
        let s = similarity(&matrix(8, |i, j| 3 * band(i, j) + 7), &r).unwrap();
        assert_eq!(s.rule, Rule::Pearson);
        assert!(
            (s.value - 1.0).abs() < 1e-9,
            "scale and offset do not matter"
        );
        let pairs = matrix(8, |i, j| if i + j == 7 { 100 } else { 0 });
        let s = similarity(&pairs, &r).unwrap();
        assert!(s.value < 0.3, "another pattern: {}", s.value);
        let flat = matrix(8, |i, j| if i == j { 0 } else { 50 });
        assert_eq!(similarity(&flat, &r).unwrap().value, 0.0);
    }

    #[test]
    fn a_flat_reference_asks_for_flat_detection() {
        let r = matrix(8, |i, j| if i == j { 10 } else { 1000 });
        let s = similarity(&matrix(8, |i, j| if i == j { 5 } else { 400 }), &r).unwrap();
        assert_eq!(s.rule, Rule::Flat);
        assert!((s.value - 1.0).abs() < 1e-9, "{}", s.value);
        let unseen = matrix(8, |i, j| if i == j { 100 } else { 0 });
        let s = similarity(&unseen, &r).unwrap();
        assert!(
            s.value < 0.0,
            "no sharing seen is flat, not all-to-all: {}",
            s.value
        );
        let s = similarity(&matrix(8, band), &r).unwrap();
        assert!(s.value < 0.1, "a band is not flat: {}", s.value);
        let nearly = matrix(8, |i, j| match (i, j) {
            _ if i == j => 5,
            _ if i + j == 7 => 440,
            _ => 400,
        });
        let s = similarity(&nearly, &r).unwrap();
        assert!(s.value > 0.9 && s.value < 1.0, "{}", s.value);
    }

    #[test]
    fn next_to_nothing_shared_beside_private_data_is_flat() {
        // ep at page granularity: private arrays, a few pages every thread touches, and
        // a page more for some pairs.
        let ep = |extra: u64| {
            move |i: usize, j: usize| match (i, j) {
                _ if i == j => 140,
                (0, _) | (_, 0) => 8 + extra,
                _ => 8,
            }
        };
        let s = similarity(&matrix(8, ep(12)), &matrix(8, ep(4))).unwrap();
        assert_eq!(s.rule, Rule::Flat);
        assert!(s.value > 0.8 && s.value < 1.0, "{}", s.value);
        let lopsided = matrix(8, |i, j| if i + j == 7 { 140 } else { 0 });
        assert!(similarity(&lopsided, &matrix(8, ep(4))).unwrap().value < 0.3);
    }

    #[test]
    fn missing_threads_are_zero_and_extra_ones_left_out() {
        let r = matrix(4, band);
        let short = matrix(3, band);
        let s = similarity(&short, &r).unwrap();
        assert!(s.value > 0.5 && s.value < 1.0, "{}", s.value);
        let long = matrix(6, band);
        assert!((similarity(&long, &r).unwrap().value - 1.0).abs() < 1e-9);
        assert!(similarity(&long, &matrix(1, |_, _| 5)).is_none());
        // The same with a flat reference: threads 4 and 5, with much private data, do
        // not change the detection's spread.
        let flat = matrix(4, |i, j| if i == j { 1 } else { 100 });
        let near = |i: usize, j: usize| match (i, j) {
            _ if i == j && i >= 4 => 100_000,
            _ if i == j => 1,
            (0, 1) | (1, 0) => 130,
            _ => 100,
        };
        let s4 = similarity(&matrix(4, near), &flat).unwrap();
        let s6 = similarity(&matrix(6, near), &flat).unwrap();
        assert_eq!(s4.rule, Rule::Flat);
        assert!(s4.value < 0.95, "{}", s4.value);
        assert_eq!(s4, s6);
    }
}
