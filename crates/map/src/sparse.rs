//! Sparse communication matrices: an edge list (`i j w` per line) and Matrix Market
//! coordinate files (`.mtx`), kept in compressed sparse rows (CSR) so that memory and
//! time follow the number of non-zeros, not n². A 65,536-rank 3-D halo (6 neighbours)
//! is 393,216 entries, 4.7 MB, where the dense matrix would be 34 GB.
//!
//! The matrix held is always the symmetric part the mapping algorithms use, (M + Mᵀ)/2
//! with a zero diagonal, as [`crate::matrix`] does for dense input.

use crate::MapError;

/// A symmetric n × n matrix in CSR form, zero diagonal, non-zero entries only, each row's
/// columns sorted and distinct.
#[derive(Debug, Clone, PartialEq)]
pub struct Sparse {
    /// Rows and columns.
    pub n: usize,
    /// Row r's entries are `start[r]..start[r + 1]`.
    pub start: Vec<usize>,
    /// Column of each entry.
    pub col: Vec<u32>,
    /// Weight of each entry (finite, > 0).
    pub w: Vec<f64>,
}

/// The most ranks a sparse file may name: columns are stored as u32, and no machine
/// tdmap builds has more PUs ([`tdmap_topo::MAX_CLUSTER_PUS`] is far below).
pub const MAX_RANKS: usize = 1 << 24;

impl Sparse {
    /// Builds the symmetric part of the directed entries `(i, j, w)`: each entry adds
    /// w/2 to (i, j) and to (j, i); duplicates add up; the diagonal is dropped.
    pub fn from_directed(n: usize, entries: &[(u32, u32, f64)]) -> Sparse {
        // Summed once per unordered pair, then mirrored, so that both halves are equal
        // to the last bit.
        let mut half: Vec<(u32, u32, f64)> = entries
            .iter()
            .filter(|&&(i, j, w)| i != j && w != 0.0)
            .map(|&(i, j, w)| (i.min(j), i.max(j), w / 2.0))
            .collect();
        half.sort_unstable_by_key(|&(i, j, _)| (i, j));
        let mut summed: Vec<(u32, u32, f64)> = Vec::with_capacity(half.len());
        for (i, j, x) in half {
            match summed.last_mut() {
                Some(l) if (l.0, l.1) == (i, j) => l.2 += x,
                _ => summed.push((i, j, x)),
            }
        }
        let mut pairs: Vec<(u32, u32, f64)> = Vec::with_capacity(summed.len() * 2);
        for (i, j, x) in summed {
            pairs.push((i, j, x));
            pairs.push((j, i, x));
        }
        pairs.sort_unstable_by_key(|&(i, j, _)| (i, j));
        let mut start = vec![0usize; n + 1];
        let mut col = Vec::with_capacity(pairs.len());
        let mut w = Vec::with_capacity(pairs.len());
        let mut last: Option<(u32, u32)> = None;
        for (i, j, x) in pairs {
            if last == Some((i, j)) {
                *w.last_mut().expect("an entry was pushed") += x;
                continue;
            }
            last = Some((i, j));
            start[i as usize + 1] += 1;
            col.push(j);
            w.push(x);
        }
        for r in 0..n {
            start[r + 1] += start[r];
        }
        Sparse { n, start, col, w }
    }

    /// The entries of row `r`: (column, weight).
    pub fn row(&self, r: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let s = self.start[r]..self.start[r + 1];
        self.col[s.clone()]
            .iter()
            .zip(&self.w[s])
            .map(|(&c, &x)| (c as usize, x))
    }

    /// The same matrix with `total` ≥ n rows, the extra ones empty (padding units that
    /// share nothing).
    pub fn padded(&self, total: usize) -> Sparse {
        let mut s = self.clone();
        let end = *s.start.last().expect("start has n + 1 entries");
        s.start.resize(total.max(self.n) + 1, end);
        s.n = total.max(self.n);
        s
    }

    /// Number of stored entries (both directions of each pair).
    pub fn nnz(&self) -> usize {
        self.col.len()
    }

    /// The dense row-major matrix, for the algorithms that need one.
    pub fn to_dense(&self) -> Vec<f64> {
        let mut m = vec![0.0; self.n * self.n];
        for r in 0..self.n {
            for (c, x) in self.row(r) {
                m[r * self.n + c] = x;
            }
        }
        m
    }

    /// The sparse form of a dense matrix (symmetrised the same way).
    pub fn from_dense(m: &[f64], n: usize) -> Sparse {
        let mut e = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let x = m[i * n + j];
                if x != 0.0 {
                    e.push((i as u32, j as u32, x));
                }
            }
        }
        Sparse::from_directed(n, &e)
    }
}

fn parse_err(line: usize, cell: &str) -> MapError {
    MapError::Parse {
        line,
        cell: cell.to_string(),
    }
}

fn index(cell: &str, line: usize, base: usize, n: Option<usize>) -> Result<u32, MapError> {
    let v: usize = cell.parse().map_err(|_| parse_err(line, cell))?;
    let limit = n.unwrap_or(MAX_RANKS);
    if v < base || v - base >= limit {
        return Err(MapError::Sparse {
            line,
            why: format!(
                "index {v} is outside {base}..{}",
                limit.saturating_add(base).saturating_sub(1)
            ),
        });
    }
    Ok((v - base) as u32)
}

fn weight(cell: Option<&str>, line: usize) -> Result<f64, MapError> {
    let Some(cell) = cell else { return Ok(1.0) };
    let x: f64 = cell.parse().map_err(|_| parse_err(line, cell))?;
    if !x.is_finite() || x < 0.0 {
        return Err(MapError::Sparse {
            line,
            why: format!("weight {cell} is not finite and >= 0"),
        });
    }
    Ok(x)
}

/// Parses an edge list: one undirected edge `i j w` per line (0-based ranks, w ≥ 0,
/// 1 when absent), blanks or commas between cells, `#` comments and blank lines ignored.
/// M[i][j] and M[j][i] both get w; an edge given twice (in either direction) adds up.
/// n is the largest rank + 1.
pub fn parse_edges(text: &str) -> Result<Sparse, MapError> {
    let mut entries = Vec::new();
    let mut n = 0usize;
    for (ln, line) in text.lines().enumerate() {
        let line_no = ln + 1;
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let cells: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|c| !c.is_empty())
            .collect();
        if !(2..=3).contains(&cells.len()) {
            return Err(MapError::Sparse {
                line: line_no,
                why: format!("{} cells; an edge is \"i j w\"", cells.len()),
            });
        }
        let i = index(cells[0], line_no, 0, None)?;
        let j = index(cells[1], line_no, 0, None)?;
        let w = weight(cells.get(2).copied(), line_no)?;
        n = n.max(i as usize + 1).max(j as usize + 1);
        // Undirected: both directions carry w, so the symmetric part is w.
        entries.push((i, j, w));
        entries.push((j, i, w));
    }
    if n == 0 {
        return Err(MapError::Empty);
    }
    Ok(Sparse::from_directed(n, &entries))
}

/// Parses a Matrix Market coordinate file: `%%MatrixMarket matrix coordinate
/// real|integer|pattern general|symmetric`, `%` comments, `rows cols entries`, then
/// 1-based `i j [value]` lines. A symmetric file gives one triangle, mirrored; a general
/// one is symmetrised as (M + Mᵀ)/2.
pub fn parse_mtx(text: &str) -> Result<Sparse, MapError> {
    let mut lines = text.lines().enumerate();
    let bad = |line: usize, why: String| MapError::Sparse { line, why };
    let (_, header) = lines.next().ok_or(MapError::Empty)?;
    let words: Vec<String> = header
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let want = "%%MatrixMarket matrix coordinate real|integer|pattern general|symmetric";
    if words.len() != 5
        || words[0] != "%%matrixmarket"
        || words[1] != "matrix"
        || words[2] != "coordinate"
    {
        return Err(bad(1, format!("the header is not \"{want}\"")));
    }
    let pattern = match words[3].as_str() {
        "real" | "integer" => false,
        "pattern" => true,
        f => {
            return Err(bad(
                1,
                format!("field {f:?} is not real, integer or pattern"),
            ))
        }
    };
    let symmetric = match words[4].as_str() {
        "general" => false,
        "symmetric" => true,
        s => {
            return Err(bad(
                1,
                format!("symmetry {s:?} is not general or symmetric"),
            ))
        }
    };
    let mut size: Option<(usize, usize)> = None;
    let mut entries = Vec::new();
    for (ln, line) in lines {
        let line_no = ln + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('%') {
            continue;
        }
        let cells: Vec<&str> = line.split_whitespace().collect();
        let Some((n, nnz)) = size else {
            if cells.len() != 3 {
                return Err(bad(
                    line_no,
                    "the size line is not \"rows cols entries\"".into(),
                ));
            }
            let num = |c: &str| c.parse::<usize>().map_err(|_| parse_err(line_no, c));
            let (r, c, e) = (num(cells[0])?, num(cells[1])?, num(cells[2])?);
            if r != c {
                return Err(bad(
                    line_no,
                    format!("{r} rows and {c} columns; a communication matrix is square"),
                ));
            }
            if r == 0 || r > MAX_RANKS {
                return Err(bad(line_no, format!("{r} ranks; give 1 to {MAX_RANKS}")));
            }
            entries.reserve(e.min(1 << 24) * if symmetric { 2 } else { 1 });
            size = Some((r, e));
            continue;
        };
        let given = if pattern { 2 } else { 3 };
        if cells.len() != given {
            return Err(bad(
                line_no,
                format!("{} cells; an entry here is {given}", cells.len()),
            ));
        }
        let i = index(cells[0], line_no, 1, Some(n))?;
        let j = index(cells[1], line_no, 1, Some(n))?;
        let w = weight(cells.get(2).copied(), line_no)?;
        if entries.len() >= nnz * if symmetric { 2 } else { 1 } {
            return Err(bad(
                line_no,
                format!("more entries than the {nnz} the size line says"),
            ));
        }
        entries.push((i, j, w));
        if symmetric && i != j {
            entries.push((j, i, w));
        } else if symmetric {
            entries.push((i, i, 0.0));
        }
    }
    let (n, _) = size.ok_or(MapError::Empty)?;
    Ok(Sparse::from_directed(n, &entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edges_are_undirected_and_add_up() {
        let s = parse_edges("# ring\n0 1 5\n1,2\n2 0 3 # back\n0 1 1\n").unwrap();
        assert_eq!(s.n, 3);
        assert_eq!(
            s.to_dense(),
            vec![0.0, 6.0, 3.0, 6.0, 0.0, 1.0, 3.0, 1.0, 0.0]
        );
        assert_eq!(s.nnz(), 6);
    }

    #[test]
    fn matrix_market_general_is_symmetrised_and_symmetric_mirrored() {
        let g = "%%MatrixMarket matrix coordinate real general\n% c\n2 2 2\n1 2 4\n2 1 2\n";
        assert_eq!(parse_mtx(g).unwrap().to_dense(), vec![0.0, 3.0, 3.0, 0.0]);
        let s = "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n2 1 4\n3 3 9\n3 1 1\n";
        let d = parse_mtx(s).unwrap().to_dense();
        assert_eq!(d, vec![0.0, 4.0, 1.0, 4.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
        let p = "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 1\n2 1\n";
        assert_eq!(parse_mtx(p).unwrap().to_dense(), vec![0.0, 1.0, 1.0, 0.0]);
    }

    #[test]
    fn malformed_files_name_the_line() {
        for (text, needle) in [
            ("0 1 x\n", "line 1"),
            ("0 1 -2\n", "line 1"),
            ("0 1 2 3\n", "4 cells"),
            ("0 99999999999 1\n", "outside"),
            ("# nothing\n", "empty"),
        ] {
            let e = parse_edges(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
        let h = "%%MatrixMarket matrix coordinate real general\n";
        for (text, needle) in [
            (
                "%%MatrixMarket matrix array real general\n2 2\n".to_string(),
                "header",
            ),
            (format!("{h}2 3 1\n"), "square"),
            (format!("{h}2 2 1\n3 1 1\n"), "outside 1..2"),
            (format!("{h}2 2 1\n1 2 1\n2 1 1\n"), "more entries"),
            (format!("{h}2 2 1\n1 2\n"), "2 cells"),
        ] {
            let e = parse_mtx(&text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn dense_and_sparse_forms_agree() {
        let m = [0.0, 2.0, 0.0, 4.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        let s = Sparse::from_dense(&m, 3);
        assert_eq!(
            s.to_dense(),
            vec![0.0, 3.0, 0.0, 3.0, 0.0, 1.0, 0.0, 1.0, 0.0]
        );
    }

    proptest! {
        #[test]
        fn malformed_input_never_panics(text in "[0-9 .,%#\\-a-z\\n]{0,80}") {
            let _ = parse_edges(&text);
            let _ = parse_mtx(&text);
            let mtx = format!("%%MatrixMarket matrix coordinate real general\n{text}");
            let _ = parse_mtx(&mtx);
        }

        #[test]
        fn parsed_matrices_are_symmetric_and_valid(
            edges in proptest::collection::vec((0u32..20, 0u32..20, 0.0f64..100.0), 1..40)
        ) {
            let text: String = edges.iter().map(|(i, j, w)| format!("{i} {j} {w}\n")).collect();
            let s = parse_edges(&text).unwrap();
            let d = s.to_dense();
            for i in 0..s.n {
                prop_assert_eq!(d[i * s.n + i], 0.0);
                for j in 0..s.n {
                    prop_assert_eq!(d[i * s.n + j], d[j * s.n + i]);
                }
            }
            prop_assert!(crate::validate(&d, s.n).is_ok());
        }
    }
}
