//! The row files libtdmap_mpi writes, one per rank at `MPI_Finalize`
//! (`$TDMAP_MPI_DIR/rank-<world rank>.row`), and their assembly into a [`CommFile`].
//!
//! A row is text, one item per line: `tdmap-mpi-row 1`, then `run ID`, `mpi NAME`,
//! `rank R`, `size N`, `calls C`, `lib_ns T`, then `p2p DST BYTES MESSAGES` and
//! `coll DST BYTES MESSAGES` lines (destinations with traffic only), `finalize_ns T`, and
//! `end` last, so that a row cut short is refused rather than read as one with less
//! traffic.

use crate::{CommFile, Pair, RankCost, MODEL};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The first line of a row file this build reads.
pub const MAGIC: &str = "tdmap-mpi-row 1";

/// One rank's row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Row {
    /// The run's id.
    pub run: String,
    /// The MPI the library was built for.
    pub mpi: String,
    /// The world rank that wrote it.
    pub rank: usize,
    /// The world size it saw.
    pub size: usize,
    /// Calls counted, and nanoseconds in the library's code.
    pub calls: u64,
    /// Nanoseconds in the library's code.
    pub lib_ns: u64,
    /// Nanoseconds to write the row.
    pub finalize_ns: u64,
    /// Point-to-point (destination, bytes, messages).
    pub p2p: Vec<(usize, u64, u64)>,
    /// Collective (destination, bytes, messages), by the model.
    pub coll: Vec<(usize, u64, u64)>,
}

/// Why a folder of rows could not be assembled: each message is one line naming the
/// folder and the ranks.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    /// A row file could not be read.
    #[error("cannot read {}: {err}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
    /// A row file is malformed or cut short.
    #[error("{}: line {line}: {why}; it is not a whole libtdmap_mpi row", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// The folder holds no rows.
    #[error("{}: no rank-*.row files; did the job run with libtdmap_mpi preloaded and reach MPI_Finalize?", dir.display())]
    Empty {
        /// The folder.
        dir: PathBuf,
    },
    /// Rows of more than one run, or with different world sizes.
    #[error("{}: rows of different runs: {}; assemble one run's rows only (a fresh folder per run)", dir.display(), groups.iter().map(|(run, ranks)| format!("rank{} {} of {run}", if ranks.len() == 1 { "" } else { "s" }, ranges(ranks))).collect::<Vec<_>>().join(", "))]
    Mixed {
        /// The folder.
        dir: PathBuf,
        /// (run id and world size, its ranks).
        groups: Vec<(String, Vec<usize>)>,
    },
    /// Some ranks wrote no row.
    #[error("{}: no row for rank{} {} of {size} (run {run}); they did not reach MPI_Finalize or could not write", dir.display(), if missing.len() == 1 { "" } else { "s" }, ranges(missing))]
    Missing {
        /// The folder.
        dir: PathBuf,
        /// The run.
        run: String,
        /// The world size.
        size: usize,
        /// The ranks without a row.
        missing: Vec<usize>,
    },
}

/// Ranks as compact ranges: `0-3, 5, 7-8`.
pub fn ranges(ranks: &[usize]) -> String {
    tdmap_format::range_list(ranks, ", ")
}

impl Row {
    /// Parses a row's text; `Err` is (1-based line, why).
    pub fn parse(text: &str) -> Result<Row, (usize, String)> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        match lines.next() {
            Some((_, MAGIC)) => {}
            Some((n, other)) => return Err((n, format!("starts {other:?}, expected {MAGIC:?}"))),
            None => return Err((1, "empty".into())),
        }
        let mut row = Row::default();
        let mut seen = 0u8;
        let mut ended = 0;
        for (n, line) in lines {
            if ended > 0 {
                return Err((n, "text after \"end\"".into()));
            }
            let mut words = line.split(' ');
            let key = words.next().unwrap_or("");
            let rest: Vec<&str> = words.collect();
            let num = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| (n, format!("{key}: {s:?} is not a number")))
            };
            let one = || match rest.as_slice() {
                [v] => Ok(*v),
                _ => Err((n, format!("{key}: expected one value"))),
            };
            match key {
                "run" => (row.run, seen) = (one()?.to_string(), seen | 1),
                "mpi" => row.mpi = one()?.to_string(),
                "rank" => (row.rank, seen) = (num(one()?)? as usize, seen | 2),
                "size" => (row.size, seen) = (num(one()?)? as usize, seen | 4),
                "calls" => row.calls = num(one()?)?,
                "lib_ns" => row.lib_ns = num(one()?)?,
                "finalize_ns" => row.finalize_ns = num(one()?)?,
                "p2p" | "coll" => {
                    let [d, b, m] = rest.as_slice() else {
                        return Err((n, format!("{key}: expected DST BYTES MESSAGES")));
                    };
                    let cell = (num(d)? as usize, num(b)?, num(m)?);
                    if key == "p2p" {
                        &mut row.p2p
                    } else {
                        &mut row.coll
                    }
                    .push(cell);
                }
                "end" => ended = n,
                _ => return Err((n, format!("unknown item {key:?}"))),
            }
        }
        if ended == 0 {
            return Err((text.lines().count(), "no \"end\" line: cut short".into()));
        }
        if seen != 7 {
            return Err((ended, "missing run, rank or size".into()));
        }
        if row.size == 0 || row.rank >= row.size {
            return Err((
                ended,
                format!("rank {} outside size {}", row.rank, row.size),
            ));
        }
        if let Some(d) = row.p2p.iter().chain(&row.coll).find(|c| c.0 >= row.size) {
            return Err((
                ended,
                format!("destination {} outside size {}", d.0, row.size),
            ));
        }
        Ok(row)
    }

    /// Reads `path`.
    pub fn read(path: &Path) -> Result<Row, RowError> {
        let text = std::fs::read_to_string(path).map_err(|err| RowError::Read {
            path: path.to_path_buf(),
            err,
        })?;
        Row::parse(&text).map_err(|(line, why)| RowError::Malformed {
            path: path.to_path_buf(),
            line,
            why,
        })
    }
}

/// Reads every `rank-*.row` in `dir` and assembles them: one run, one world size, one row
/// per rank, or an error naming the ranks.
pub fn read_dir(dir: &Path) -> Result<Vec<Row>, RowError> {
    let read_err = |err| RowError::Read {
        path: dir.to_path_buf(),
        err,
    };
    let mut rows = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let path = entry.map_err(read_err)?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("rank-") && name.ends_with(".row") {
            rows.push(Row::read(&path)?);
        }
    }
    Ok(rows)
}

/// Assembles the rows of `dir` (named in errors) into a [`CommFile`].
pub fn assemble(dir: &Path, rows: Vec<Row>) -> Result<CommFile, RowError> {
    let dir = dir.to_path_buf();
    if rows.is_empty() {
        return Err(RowError::Empty { dir });
    }
    let mut groups: BTreeMap<(String, usize), Vec<usize>> = BTreeMap::new();
    for r in &rows {
        groups
            .entry((r.run.clone(), r.size))
            .or_default()
            .push(r.rank);
    }
    if groups.len() > 1 {
        let named = |(run, size): &(String, usize)| {
            let sizes: Vec<usize> = groups.keys().filter(|k| &k.0 == run).map(|k| k.1).collect();
            if sizes.len() > 1 {
                format!("run {run} (size {size})")
            } else {
                format!("run {run}")
            }
        };
        let mut g: Vec<(String, Vec<usize>)> = groups
            .iter()
            .map(|(k, ranks)| {
                let mut ranks = ranks.clone();
                ranks.sort_unstable();
                (named(k), ranks)
            })
            .collect();
        g.sort_by_key(|(_, r)| r[0]);
        return Err(RowError::Mixed { dir, groups: g });
    }
    let (run, size) = (rows[0].run.clone(), rows[0].size);
    let mut by_rank: Vec<Option<Row>> = vec![None; size];
    for r in rows {
        let rank = r.rank;
        by_rank[rank] = Some(r);
    }
    let missing: Vec<usize> = (0..size).filter(|&i| by_rank[i].is_none()).collect();
    if !missing.is_empty() {
        return Err(RowError::Missing {
            dir,
            run,
            size,
            missing,
        });
    }
    let rows: Vec<Row> = by_rank.into_iter().flatten().collect();
    let mut pairs: BTreeMap<(usize, usize), Pair> = BTreeMap::new();
    for r in &rows {
        for (cells, p2p) in [(&r.p2p, true), (&r.coll, false)] {
            for &(dst, bytes, msgs) in cells {
                let e = pairs.entry((r.rank, dst)).or_insert(Pair {
                    src: r.rank,
                    dst,
                    p2p_bytes: 0,
                    p2p_messages: 0,
                    coll_bytes: 0,
                    coll_messages: 0,
                });
                if p2p {
                    e.p2p_bytes += bytes;
                    e.p2p_messages += msgs;
                } else {
                    e.coll_bytes += bytes;
                    e.coll_messages += msgs;
                }
            }
        }
    }
    let (format, version) = tdmap_format::header::<CommFile>();
    Ok(CommFile {
        format,
        version,
        run,
        mpi: rows[0].mpi.clone(),
        program: Vec::new(),
        ranks: size,
        model: MODEL.into(),
        wall_seconds: None,
        pairs: pairs.into_values().collect(),
        costs: rows
            .iter()
            .map(|r| RankCost {
                rank: r.rank,
                calls: r.calls,
                lib_ns: r.lib_ns,
                finalize_ns: r.finalize_ns,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(run: &str, rank: usize, size: usize, p2p: &[(usize, u64, u64)]) -> String {
        let mut s = format!(
            "{MAGIC}\nrun {run}\nmpi openmpi\nrank {rank}\nsize {size}\ncalls 3\nlib_ns 900\n"
        );
        for (d, b, m) in p2p {
            s += &format!("p2p {d} {b} {m}\n");
        }
        s + "coll 0 4 1\nfinalize_ns 50\nend\n"
    }

    fn row(run: &str, rank: usize, size: usize) -> Row {
        Row::parse(&text(run, rank, size, &[((rank + 1) % size, 80, 10)])).unwrap()
    }

    fn dir() -> &'static Path {
        Path::new("rows")
    }

    #[test]
    fn a_row_parses() {
        let r = Row::parse(&text("x", 1, 4, &[(2, 80, 10)])).unwrap();
        assert_eq!((r.run.as_str(), r.rank, r.size, r.lib_ns), ("x", 1, 4, 900));
        assert_eq!(r.p2p, vec![(2, 80, 10)]);
        assert_eq!(r.coll, vec![(0, 4, 1)]);
    }

    #[test]
    fn a_row_cut_short_or_out_of_range_is_refused() {
        let whole = text("x", 1, 4, &[(2, 80, 10)]);
        let cut = &whole[..whole.len() - 4];
        assert!(Row::parse(cut).unwrap_err().1.contains("cut short"));
        assert!(Row::parse(&text("x", 1, 4, &[(4, 1, 1)]))
            .unwrap_err()
            .1
            .contains("destination 4"));
        assert!(Row::parse(&text("x", 4, 4, &[]))
            .unwrap_err()
            .1
            .contains("rank 4 outside"));
        assert!(Row::parse("tdmap-mpi-row 2\n")
            .unwrap_err()
            .1
            .contains("expected"));
    }

    #[test]
    fn rows_assemble_into_pairs() {
        let f = assemble(dir(), (0..4).map(|r| row("x", r, 4)).collect()).unwrap();
        assert_eq!(f.ranks, 4);
        assert_eq!(
            f.pairs.len(),
            4 + 3,
            "a ring plus collective bytes to rank 0 (3 -> 0 is both)"
        );
        assert_eq!(f.total_bytes(), (320, 16));
        assert!(f.pairs.iter().all(|p| p.src < 4 && p.dst < 4));
        assert_eq!(f.costs.iter().map(|c| c.lib_ns).sum::<u64>(), 3600);
    }

    #[test]
    fn a_missing_rank_is_named() {
        let rows = [0, 1, 3, 5, 6].iter().map(|&r| row("x", r, 8)).collect();
        let e = assemble(dir(), rows).unwrap_err().to_string();
        assert_eq!(
            e,
            "rows: no rows for ranks 2, 4, 7 of 8 (run x); they did not reach MPI_Finalize or could not write"
                .replace("no rows for", "no row for")
        );
    }

    #[test]
    fn two_runs_are_refused_naming_the_ranks_of_each() {
        let mut rows: Vec<Row> = (0..3).map(|r| row("new", r, 4)).collect();
        rows.push(row("old", 3, 4));
        let e = assemble(dir(), rows).unwrap_err().to_string();
        assert_eq!(
            e,
            "rows: rows of different runs: ranks 0-2 of run new, rank 3 of run old; assemble one run's rows only (a fresh folder per run)"
        );
        assert!(!e.contains('\n'));
        let sizes = vec![row("x", 0, 2), row("x", 1, 3)];
        let e = assemble(dir(), sizes).unwrap_err().to_string();
        assert!(
            e.contains("rank 0 of run x (size 2), rank 1 of run x (size 3)"),
            "{e}"
        );
    }

    #[test]
    fn ranges_are_compact() {
        assert_eq!(ranges(&[0, 1, 2, 4, 6, 7]), "0-2, 4, 6-7");
        assert_eq!(ranges(&[]), "");
    }
}
