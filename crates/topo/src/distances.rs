//! The node distance matrix (ACPI SLIT values) and the NUMA factor derived from it.

use crate::TopoError;
use serde::Serialize;

/// Where a distance matrix came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DistancesSource {
    /// hwloc reported it (the firmware's SLIT, or the XML file's).
    Hwloc,
    /// A preset or the user gave it.
    Given,
    /// Nothing gave one: local 10, remote 20, the SLIT convention for one hop.
    Assumed,
}

/// A square matrix of node distances, local distance on the diagonal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distances {
    /// Number of nodes.
    pub n: usize,
    /// Row-major values.
    pub values: Vec<u32>,
    /// Where they came from.
    pub source: DistancesSource,
}

impl Distances {
    /// A checked matrix from rows.
    pub fn from_rows(rows: Vec<Vec<i64>>, source: DistancesSource) -> Result<Self, TopoError> {
        let n = rows.len();
        let bad = |why: String| TopoError::Distances { why, nodes: n };
        if n == 0 {
            return Err(bad("it is empty".into()));
        }
        let mut values = Vec::with_capacity(n * n);
        for (i, row) in rows.iter().enumerate() {
            if row.len() != n {
                return Err(bad(format!(
                    "it is not square: row {i} has {} values for {n} rows",
                    row.len()
                )));
            }
            for (j, &v) in row.iter().enumerate() {
                if v <= 0 {
                    return Err(bad(format!(
                        "entry ({i},{j}) is {v}; distances must be positive"
                    )));
                }
                values.push(
                    u32::try_from(v).map_err(|_| bad(format!("entry ({i},{j}) is too large")))?,
                );
            }
        }
        let d = Distances { n, values, source };
        d.check_diagonal()?;
        Ok(d)
    }

    /// A matrix with `local` on the diagonal and `remote` elsewhere.
    pub fn uniform(
        n: usize,
        local: u32,
        remote: u32,
        source: DistancesSource,
    ) -> Result<Self, TopoError> {
        let rows = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| if i == j { local } else { remote } as i64)
                    .collect()
            })
            .collect();
        Distances::from_rows(rows, source)
    }

    /// Parses `local:remote` for `n` nodes, or a full matrix `a,b;c,d` (rows by `;` or
    /// newlines, values by `,` or spaces).
    pub fn parse(text: &str, n: usize) -> Result<Self, TopoError> {
        let bad = |why: String| TopoError::Distances { why, nodes: n };
        let num = |s: &str| -> Result<i64, TopoError> {
            s.trim()
                .parse::<i64>()
                .map_err(|_| bad(format!("{:?} is not a whole number", s.trim())))
        };
        if let Some((l, r)) = text.split_once(':') {
            let (l, r) = (num(l)?, num(r)?);
            if l <= 0 || r <= 0 {
                return Err(bad(format!("{l}:{r} has a value that is not positive")));
            }
            let rows = (0..n)
                .map(|i| (0..n).map(|j| if i == j { l } else { r }).collect())
                .collect();
            return Distances::from_rows(rows, DistancesSource::Given);
        }
        let rows: Vec<Vec<i64>> = text
            .split([';', '\n'])
            .filter(|r| !r.trim().is_empty())
            .map(|r| {
                r.split([',', ' ', '\t'])
                    .filter(|v| !v.is_empty())
                    .map(num)
                    .collect()
            })
            .collect::<Result<_, _>>()?;
        if rows.len() != n {
            return Err(bad(format!(
                "it has {} rows but the machine has {n} NUMA nodes",
                rows.len()
            )));
        }
        Distances::from_rows(rows, DistancesSource::Given)
    }

    /// What to pass for a machine of `n` nodes, quoted for a shell: the matrix form's
    /// `;` would otherwise end the command (`--distances 10,20;20,10` runs `20,10`).
    pub fn suggestion(n: usize) -> String {
        let pair = "--distances 10:20 (10 local, 20 between any two nodes)";
        if n == 0 || n > 8 {
            return format!("give {pair}");
        }
        let rows: Vec<String> = (0..n)
            .map(|i| {
                let row: Vec<&str> = (0..n).map(|j| if i == j { "10" } else { "20" }).collect();
                row.join(",")
            })
            .collect();
        format!(
            "the machine has {n} NUMA node{}: give {pair}, or a quoted {n}x{n} matrix with \
             rows separated by ';', e.g. --distances \"{}\"",
            if n == 1 { "" } else { "s" },
            rows.join(";")
        )
    }

    fn check_diagonal(&self) -> Result<(), TopoError> {
        for i in 0..self.n {
            let local = self.get(i, i);
            if let Some(j) = (0..self.n).find(|&j| j != i && self.get(i, j) < local) {
                return Err(TopoError::Distances {
                    nodes: self.n,
                    why: format!(
                        "row {i} has {} at column {j}, below its diagonal {local}; the local distance must be the minimum",
                        self.get(i, j)
                    ),
                });
            }
        }
        Ok(())
    }

    /// The distance from node `i` to node `j`.
    pub fn get(&self, i: usize, j: usize) -> u32 {
        self.values[i * self.n + j]
    }

    /// The rows, for printing.
    pub fn rows(&self) -> Vec<Vec<u32>> {
        self.values.chunks(self.n).map(|r| r.to_vec()).collect()
    }

    /// Remote over local latency for the pair `i`, `j`.
    pub fn factor(&self, i: usize, j: usize) -> f64 {
        f64::from(self.get(i, j)) / f64::from(self.get(i, i))
    }

    /// The largest remote/local ratio (1 on a one-node machine): Minas's NUMA factor.
    pub fn numa_factor(&self) -> f64 {
        self.factors().fold(1.0, f64::max)
    }

    /// The smallest remote/local ratio between distinct nodes (1 on a one-node machine).
    pub fn numa_factor_min(&self) -> f64 {
        self.factors().reduce(f64::min).unwrap_or(1.0)
    }

    fn factors(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.n).flat_map(move |i| {
            (0..self.n)
                .filter(move |&j| j != i)
                .map(move |j| self.factor(i, j))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_form_builds_uniform_matrix() {
        let d = Distances::parse("10:21", 2).unwrap();
        assert_eq!(d.rows(), vec![vec![10, 21], vec![21, 10]]);
        assert!((d.numa_factor() - 2.1).abs() < 1e-9);
    }

    #[test]
    fn matrix_form_and_factor_range() {
        let d = Distances::parse("10,12,36;12,10,12;36,12,10", 3).unwrap();
        assert!((d.numa_factor() - 3.6).abs() < 1e-9);
        assert!((d.numa_factor_min() - 1.2).abs() < 1e-9);
    }

    #[test]
    fn rejects_inconsistent_matrices() {
        for (text, n, needle) in [
            ("10,20;20", 2, "not square"),
            ("10,-20;20,10", 2, "positive"),
            ("10,5;20,10", 2, "minimum"),
            ("10,20;20,10", 3, "rows"),
            ("10:x", 2, "whole number"),
        ] {
            let err = Distances::parse(text, n).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(!err.contains('\n'));
        }
    }

    /// Regression: the suggestion said "rows separated by ';'" without quotes or size, and
    /// `--distances 10,20;20,10` typed that way is cut by the shell at the ';'. The
    /// suggested values, unquoted, must be accepted for the machine's node count.
    #[test]
    fn the_suggested_distances_are_accepted() {
        for (given, n) in [("10,20", 2), ("10:5", 3), ("10,20;20,10", 1), ("x", 12)] {
            let err = Distances::parse(given, n).unwrap_err().to_string();
            assert!(err.contains("--distances 10:20 "), "{err}");
            Distances::parse("10:20", n).unwrap();
            if let Some((_, quoted)) = err.split_once("e.g. --distances \"") {
                let matrix = quoted.trim_end_matches('"');
                assert_eq!(Distances::parse(matrix, n).unwrap().n, n, "{err}");
            } else {
                assert!(n > 8, "{err}");
            }
        }
    }

    #[test]
    fn one_node_has_factor_one() {
        let d = Distances::uniform(1, 10, 10, DistancesSource::Assumed).unwrap();
        assert_eq!(d.numa_factor(), 1.0);
        assert_eq!(d.numa_factor_min(), 1.0);
    }
}
