//! Errors of the mapping library; each names what was wrong and how to fix it.

/// Why a mapping could not be computed or an input was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MapError {
    /// The matrix does not have n × n entries.
    #[error("the sharing matrix is not square: {rows} rows, row {row} has {cols} columns")]
    NotSquare {
        /// Number of rows.
        rows: usize,
        /// The first offending row (0-based).
        row: usize,
        /// Its number of columns.
        cols: usize,
    },
    /// A matrix entry is negative, NaN or infinite.
    #[error("sharing matrix entry ({row},{col}) is {value}; entries must be finite and >= 0")]
    BadEntry {
        /// Row (0-based).
        row: usize,
        /// Column (0-based).
        col: usize,
        /// The value.
        value: f64,
    },
    /// A matrix cell is not a number.
    #[error("sharing matrix line {line}: cannot parse {cell:?} as a number")]
    Parse {
        /// Line number (1-based).
        line: usize,
        /// The cell text.
        cell: String,
    },
    /// A sparse matrix file (edge list or Matrix Market) is malformed at a line.
    #[error("sharing matrix line {line}: {why}")]
    Sparse {
        /// Line number (1-based).
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A mapping's cost overflowed: the matrix's cells are finite but their weighted sum
    /// is not (e.g. cells of 1e308).
    #[error("the mapping's cost is {cost}: the sharing matrix's cells are too large to sum; give a matrix with finite cells small enough to sum (scale it down)")]
    CostOverflow {
        /// The cost that came out (infinite or NaN).
        cost: f64,
    },
    /// The matrix is empty.
    #[error("the sharing matrix is empty; give at least one thread")]
    Empty,
    /// More threads than PUs without oversubscription allowed.
    #[error(
        "{threads} threads but only {pus} PUs; pass --oversubscribe to put several threads on a PU"
    )]
    TooManyThreads {
        /// Threads.
        threads: usize,
        /// PUs.
        pus: usize,
    },
    /// An algorithm name that does not exist.
    #[error("unknown algorithm {0:?}; choose one of drb, matching, greedy, compact, scatter, random, identity, exhaustive")]
    UnknownAlgorithm(String),
    /// Exhaustive search asked for too big an instance.
    #[error("exhaustive search is limited to {max} threads and 10^8 placements; got {threads} threads on {pus} PUs")]
    TooBigForExhaustive {
        /// Threads.
        threads: usize,
        /// PUs.
        pus: usize,
        /// The thread limit.
        max: usize,
    },
    /// A sparse matrix too large for an algorithm that needs it dense.
    #[error("{algorithm} needs the dense matrix, limited to {max} threads; got {threads}: use -a greedy, whose sparse path has no such limit")]
    TooBigForDense {
        /// The algorithm.
        algorithm: &'static str,
        /// Threads.
        threads: usize,
        /// The limit.
        max: usize,
    },
    /// The latency distance needs latencies the topology does not have.
    #[error("machine {0:?} has no latency table; use hop distances or a preset with latencies")]
    NoLatencies(String),
    /// libscotch failed.
    #[error("Scotch mapping failed: {0}")]
    Scotch(String),
    /// libscotch could not be opened (the message names it and how to install it).
    #[error("{0}")]
    ScotchMissing(String),
    /// An output format that does not exist.
    #[error("unknown format {0:?}; choose one of json, omp-places, rankfile, hostfile, slurm, hwloc-bind, taskset, numactl")]
    UnknownFormat(String),
    /// A data-policy name or parameter that does not exist.
    #[error("unknown data policy {0:?}")]
    UnknownPolicy(String),
}
