//! The sharing matrix as the algorithms see it: n × n, row-major, finite and non-negative.
//! Also parses the CSV form that `tdmap map --matrix` reads.

use crate::MapError;
use std::borrow::Cow;

/// Checks that `m` is an n × n matrix of finite non-negative numbers.
pub fn validate(m: &[f64], n: usize) -> Result<(), MapError> {
    if n == 0 {
        return Err(MapError::Empty);
    }
    if m.len() != n * n {
        return Err(MapError::NotSquare {
            rows: n,
            row: 0,
            cols: m.len() / n,
        });
    }
    let bad = |v: f64| !(0.0..=f64::MAX).contains(&v);
    // Branch-free per chunk so that it vectorises: this runs on every mapping request.
    let clean = m
        .chunks(1024)
        .all(|c| c.iter().fold(0u32, |a, &v| a | u32::from(bad(v))) == 0);
    if clean {
        return Ok(());
    }
    let k = m.iter().position(|&v| bad(v)).unwrap_or(0);
    Err(MapError::BadEntry {
        row: k / n,
        col: k % n,
        value: m[k],
    })
}

/// The symmetric part (M + Mᵀ)/2 with a zero diagonal, borrowed when `m` already is one.
pub(crate) fn symmetric(m: &[f64], n: usize) -> Cow<'_, [f64]> {
    if is_symmetric(m, n) {
        return Cow::Borrowed(m);
    }
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            if i != j {
                out[i * n + j] = (m[i * n + j] + m[j * n + i]) / 2.0;
            }
        }
    }
    Cow::Owned(out)
}

/// True when `m` equals its transpose and has a zero diagonal; compares 64 × 64 tiles
/// so that the column reads stay in cache on large matrices.
fn is_symmetric(m: &[f64], n: usize) -> bool {
    const T: usize = 64;
    if (0..n).any(|i| m[i * n + i] != 0.0) {
        return false;
    }
    let mut diff = false;
    for bi in (0..n).step_by(T) {
        for bj in (0..=bi).step_by(T) {
            for i in bi..(bi + T).min(n) {
                let hi = (bj + T).min(i);
                for j in bj..hi {
                    diff |= m[i * n + j] != m[j * n + i];
                }
            }
        }
        if diff {
            return false;
        }
    }
    true
}

/// Parses a matrix from CSV text: one row per line, cells separated by commas or blanks,
/// `#` comment lines and blank lines ignored. Returns the entries and n.
pub fn parse_csv(text: &str) -> Result<(Vec<f64>, usize), MapError> {
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cells = line
            .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
            .filter(|c| !c.is_empty());
        let row = cells
            .map(|c| {
                c.parse::<f64>().map_err(|_| MapError::Parse {
                    line: ln + 1,
                    cell: c.to_string(),
                })
            })
            .collect::<Result<Vec<f64>, MapError>>()?;
        rows.push(row);
    }
    let n = rows.len();
    if n == 0 {
        return Err(MapError::Empty);
    }
    if let Some((row, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != n) {
        return Err(MapError::NotSquare {
            rows: n,
            row,
            cols: r.len(),
        });
    }
    let m: Vec<f64> = rows.into_iter().flatten().collect();
    validate(&m, n)?;
    Ok((m, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commas_blanks_and_comments() {
        let (m, n) = parse_csv("# two threads\n0, 5\n5 0\n").unwrap();
        assert_eq!((m, n), (vec![0.0, 5.0, 5.0, 0.0], 2));
    }

    #[test]
    fn rejects_non_square_negative_and_nan() {
        assert!(matches!(
            parse_csv("0,1,2\n1,0,2\n"),
            Err(MapError::NotSquare {
                rows: 2,
                row: 0,
                cols: 3
            })
        ));
        assert!(matches!(
            parse_csv("0,-1\n1,0\n"),
            Err(MapError::BadEntry { row: 0, col: 1, .. })
        ));
        assert!(matches!(
            parse_csv("0,NaN\n1,0\n"),
            Err(MapError::BadEntry { row: 0, col: 1, .. })
        ));
        assert!(matches!(
            parse_csv("0,x\n1,0\n"),
            Err(MapError::Parse { line: 1, .. })
        ));
        assert_eq!(parse_csv("# nothing\n"), Err(MapError::Empty));
    }

    #[test]
    fn symmetrises_only_when_needed() {
        let m = [0.0, 2.0, 4.0, 0.0];
        assert_eq!(&*symmetric(&m, 2), &[0.0, 3.0, 3.0, 0.0]);
        let s = [0.0, 3.0, 3.0, 0.0];
        assert!(matches!(symmetric(&s, 2), Cow::Borrowed(_)));
    }
}
