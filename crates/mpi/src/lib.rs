//! MPI communication matrices, for mapping the ranks of an MPI job as threads are mapped.
//!
//! The pipeline: `libtdmap_mpi` (`c/tdmap_mpi.c`, a PMPI interposer built once per MPI by
//! this crate's build script) counts each rank's bytes and messages per destination and
//! writes one row file per rank at `MPI_Finalize` ([`row`]); `tdmap comm` picks the
//! library that matches the program's MPI ([`launch`]), runs the job, and assembles the
//! rows ([`row::assemble`]) into a [`CommFile`] (`tdmap-comm`), which `tdmap map --comm`
//! reads. Everything here is pure: no MPI, no process, no file but those named.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod launch;
pub mod row;

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;
use tdmap_format::{FormatError, Versioned};

pub use row::{assemble, Row, RowError};

/// The collective model, in one line, recorded in every file (the long form is the
/// library's header comment and docs/formats.md).
pub const MODEL: &str = "point-to-point exact at the sender; collectives as point-to-point: \
    bcast/reduce binomial tree, allreduce recursive doubling, alltoall(v) pairwise, \
    allgather(v) ring, gather(v)/scatter(v) linear; barrier, scans, reduce-scatter not charged";

/// One (sender, receiver) pair that communicated, in world ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pair {
    /// The sending world rank.
    pub src: usize,
    /// The receiving world rank.
    pub dst: usize,
    /// Bytes of point-to-point sends (count × type size).
    pub p2p_bytes: u64,
    /// Point-to-point messages.
    pub p2p_messages: u64,
    /// Bytes charged to the pair by the collective model.
    pub coll_bytes: u64,
    /// Messages charged to the pair by the collective model.
    pub coll_messages: u64,
}

impl Pair {
    /// Bytes of both kinds.
    pub fn bytes(&self) -> u64 {
        self.p2p_bytes + self.coll_bytes
    }
}

/// What each rank reported about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankCost {
    /// The world rank.
    pub rank: usize,
    /// MPI calls the library counted.
    pub calls: u64,
    /// Nanoseconds spent in the library's own code during those calls.
    pub lib_ns: u64,
    /// Nanoseconds spent writing the row at `MPI_Finalize`.
    pub finalize_ns: u64,
}

/// The communication matrix of one MPI run (`tdmap-comm`): what `tdmap comm` writes and
/// `tdmap map --comm` reads. Sparse: only pairs that communicated are listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommFile {
    /// `"tdmap-comm"`.
    pub format: String,
    /// 1.
    pub version: u32,
    /// The run's id, the same in every row it was assembled from.
    pub run: String,
    /// The MPI the library was built for: `openmpi` or `mpich`.
    pub mpi: String,
    /// The job's command line, empty when assembled from a folder of rows alone.
    #[serde(default)]
    pub program: Vec<String>,
    /// The world size.
    pub ranks: usize,
    /// How collectives were charged ([`MODEL`]).
    pub model: String,
    /// The job's wall time, when `tdmap comm` ran it.
    #[serde(default)]
    pub wall_seconds: Option<f64>,
    /// Every pair with traffic, sorted by (src, dst).
    pub pairs: Vec<Pair>,
    /// Each rank's calls and time in the library, by rank.
    pub costs: Vec<RankCost>,
}

impl Versioned for CommFile {
    const FORMAT: &'static str = "tdmap-comm";
    const VERSION: u32 = 1;
    const WRITER: &'static str = "tdmap comm -o FILE -- mpirun -np N PROGRAM";

    fn check(&self) -> Result<(), String> {
        if self.ranks == 0 {
            return Err("no ranks".into());
        }
        if let Some(p) = self
            .pairs
            .iter()
            .find(|p| p.src >= self.ranks || p.dst >= self.ranks)
        {
            return Err(format!(
                "pair {} -> {} is outside ranks 0..{}",
                p.src, p.dst, self.ranks
            ));
        }
        if self.costs.len() != self.ranks || self.costs.iter().enumerate().any(|(i, c)| c.rank != i)
        {
            return Err(format!(
                "costs: expected one entry per rank 0..{}, in order",
                self.ranks
            ));
        }
        Ok(())
    }
}

impl CommFile {
    /// Reads and checks a `tdmap-comm` file.
    pub fn read(path: &Path) -> Result<CommFile, FormatError> {
        tdmap_format::read(path)
    }

    /// The file as pretty JSON, header first.
    pub fn to_json(&self) -> String {
        tdmap_format::to_string(self)
    }

    /// Total bytes sent by every rank, point-to-point and collective.
    pub fn total_bytes(&self) -> (u64, u64) {
        self.pairs
            .iter()
            .fold((0, 0), |(p, c), x| (p + x.p2p_bytes, c + x.coll_bytes))
    }

    /// The matrix for mapping: n×n row-major, cell (i, j) = bytes i sent j plus bytes j
    /// sent i (mapping needs a symmetric affinity), zero diagonal.
    pub fn symmetric_bytes(&self) -> Vec<f64> {
        let n = self.ranks;
        let mut m = vec![0.0; n * n];
        for p in self.pairs.iter().filter(|p| p.src != p.dst) {
            let b = p.bytes() as f64;
            m[p.src * n + p.dst] += b;
            m[p.dst * n + p.src] += b;
        }
        m
    }

    /// The directed byte matrix as Matrix Market (`coordinate integer general`, 1-based;
    /// row = sender, column = receiver, point-to-point plus collective bytes).
    pub fn to_mtx(&self) -> String {
        let nz: Vec<&Pair> = self.pairs.iter().filter(|p| p.bytes() > 0).collect();
        let mut s = String::from("%%MatrixMarket matrix coordinate integer general\n");
        let _ = writeln!(
            s,
            "% tdmap-comm run {}: bytes sent, row = sender, column = receiver (world ranks + 1)",
            self.run
        );
        let _ = writeln!(s, "{} {} {}", self.ranks, self.ranks, nz.len());
        for p in nz {
            let _ = writeln!(s, "{} {} {}", p.src + 1, p.dst + 1, p.bytes());
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> CommFile {
        let (format, version) = tdmap_format::header::<CommFile>();
        let pair = |src, dst, p2p_bytes, coll_bytes| Pair {
            src,
            dst,
            p2p_bytes,
            p2p_messages: 1,
            coll_bytes,
            coll_messages: 0,
        };
        CommFile {
            format,
            version,
            run: "r1".into(),
            mpi: "mpich".into(),
            program: vec!["./ring".into()],
            ranks: 3,
            model: MODEL.into(),
            wall_seconds: Some(0.5),
            pairs: vec![pair(0, 1, 8, 0), pair(1, 0, 4, 2), pair(2, 2, 16, 0)],
            costs: (0..3)
                .map(|rank| RankCost {
                    rank,
                    calls: 2,
                    lib_ns: 100,
                    finalize_ns: 10,
                })
                .collect(),
        }
    }

    #[test]
    fn a_file_round_trips_and_is_checked() {
        let f = file();
        let back: CommFile = tdmap_format::from_str(&f.to_json(), Path::new("c.json")).unwrap();
        assert_eq!(back, f);
        let mut bad = file();
        bad.pairs[0].dst = 3;
        let err = tdmap_format::from_str::<CommFile>(&bad.to_json(), Path::new("c.json"));
        assert!(err
            .unwrap_err()
            .to_string()
            .contains("pair 0 -> 3 is outside ranks 0..3"));
    }

    #[test]
    fn the_mapping_matrix_is_symmetric_without_self_traffic() {
        assert_eq!(
            file().symmetric_bytes(),
            vec![0.0, 14.0, 0.0, 14.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        );
    }

    #[test]
    fn matrix_market_is_one_based_and_directed() {
        let mtx = file().to_mtx();
        let lines: Vec<&str> = mtx.lines().collect();
        assert_eq!(lines[0], "%%MatrixMarket matrix coordinate integer general");
        assert_eq!(&lines[2..], ["3 3 3", "1 2 8", "2 1 6", "3 3 16"]);
    }
}
