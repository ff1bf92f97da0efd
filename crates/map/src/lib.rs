//! Thread-mapping algorithms, data-mapping rules and the cost of a mapping. Pure: no I/O.
//!
//! This is the decision step of the pipeline: given a sharing matrix (from tdmap-sharing)
//! and a machine (tdmap-topo), [`map_threads`] says on which PU each thread should run,
//! [`cost()`] scores any mapping, [`data`] decides where a page should live from its NUMA
//! vector (majority; kMAF Eq. 6 lives in tdmap-sharing) and [`policy`] gives the static
//! page → node policies (first-touch, interleave, bind and the MAi policies of Minas). The `tdmap map` command
//! and the runtime apply the results.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod baseline;
pub mod blossom;
pub mod cost;
pub mod data;
pub mod drb;
mod error;
pub mod exhaustive;
mod file;
mod fit;
pub mod format;
pub mod greedy;
pub mod greedy_sparse;
pub mod hier;
pub mod launch;
pub mod matching;
pub mod matrix;
pub mod policy;
pub mod rank;
pub mod rng;
pub mod slots;
pub mod sparse;
pub mod worst;

pub use cost::{cost, cost_sparse, remote_access_ratio, Distance, PuDistance};
pub use error::MapError;
pub use file::{membind, MappingFile, Placement, Provenance, TaskName, Unit};
pub use fit::{check as check_fit, FitError, Fitted, Leniency};
pub use matrix::{parse_csv, validate};
pub use slots::Slots;
pub use sparse::{parse_edges, parse_mtx, Sparse};
pub use tdmap_format::FormatError;

use tdmap_topo::Topology;

/// A thread mapping: `mapping[i]` is the logical PU of thread i.
pub type Mapping = Vec<usize>;

/// A thread-mapping algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Dual recursive bipartitioning with libscotch (kMAF §3.4.1).
    Drb,
    /// Hierarchical maximum-weight perfect matching (trace-based paper §III-C).
    Matching,
    /// Hierarchical greedy grouping (EagerMap-like); the default for online use.
    Greedy,
    /// Fill SMT siblings, then cores, then packages (KMP_AFFINITY=compact).
    Compact,
    /// Round-robin over packages first (KMP_AFFINITY=scatter).
    Scatter,
    /// Uniformly random, seeded.
    Random,
    /// Thread i on OS CPU i.
    Identity,
    /// Optimal by exhaustive search, at most 10 threads.
    Exhaustive,
}

impl Algorithm {
    /// All algorithms, sharing-aware ones first.
    pub const ALL: [Algorithm; 8] = [
        Algorithm::Drb,
        Algorithm::Matching,
        Algorithm::Greedy,
        Algorithm::Compact,
        Algorithm::Scatter,
        Algorithm::Random,
        Algorithm::Identity,
        Algorithm::Exhaustive,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Drb => "drb",
            Algorithm::Matching => "matching",
            Algorithm::Greedy => "greedy",
            Algorithm::Compact => "compact",
            Algorithm::Scatter => "scatter",
            Algorithm::Random => "random",
            Algorithm::Identity => "identity",
            Algorithm::Exhaustive => "exhaustive",
        }
    }

    /// True for the algorithms that read the sharing matrix.
    pub fn sharing_aware(self) -> bool {
        matches!(
            self,
            Algorithm::Drb | Algorithm::Matching | Algorithm::Greedy | Algorithm::Exhaustive
        )
    }
}

impl std::str::FromStr for Algorithm {
    type Err = MapError;
    fn from_str(s: &str) -> Result<Algorithm, MapError> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| MapError::UnknownAlgorithm(s.to_string()))
    }
}

/// Knobs of [`map_threads`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Seed of `random` and of Scotch's generator (`drb`).
    pub seed: u64,
    /// Allow more threads than PUs (several threads per PU).
    pub oversubscribe: bool,
}

/// The largest n for which a sparse matrix is made dense for the algorithms that have
/// no sparse path (matching, drb, exhaustive): 8192² × 8 bytes = 512 MiB.
pub const DENSE_LIMIT: usize = 8192;

/// [`map_threads`] on a sparse matrix: `greedy` and the baselines work in time and
/// memory that follow the non-zeros; matching, drb and exhaustive get the dense matrix,
/// up to [`DENSE_LIMIT`] threads.
pub fn map_threads_sparse(
    algo: Algorithm,
    topo: &Topology,
    matrix: &Sparse,
    opts: &Options,
) -> Result<Mapping, MapError> {
    let n = matrix.n;
    if n == 0 {
        return Err(MapError::Empty);
    }
    let slots = slots_for(topo, n, opts)?;
    let on_slots = |slot_of| slots.onto_pus(slot_of);
    Ok(match algo {
        Algorithm::Greedy => on_slots(hier::map_sparse(&slots, matrix, n)),
        Algorithm::Compact => baseline::compact(&slots, n),
        Algorithm::Scatter => baseline::scatter(&slots, n),
        Algorithm::Random => baseline::random(&slots, n, opts.seed),
        Algorithm::Identity => baseline::identity(topo, n),
        _ if n > DENSE_LIMIT => {
            return Err(MapError::TooBigForDense {
                algorithm: algo.name(),
                threads: n,
                max: DENSE_LIMIT,
            })
        }
        _ => map_threads(algo, topo, &matrix.to_dense(), n, opts)?,
    })
}

/// The slots `n` threads take on `topo`: one per PU, or ⌈n / PUs⌉ per PU when there are
/// more threads than PUs, which needs `opts.oversubscribe`.
fn slots_for(topo: &Topology, n: usize, opts: &Options) -> Result<Slots, MapError> {
    let pus = topo.num_pus();
    if n > pus && !opts.oversubscribe {
        return Err(MapError::TooManyThreads { threads: n, pus });
    }
    Ok(Slots::new(topo, n.div_ceil(pus)))
}

/// Maps `n` threads sharing `matrix` (row-major n × n, finite, ≥ 0) onto `topo` with
/// `algo`. Each PU gets at most one thread unless there are more threads than PUs, which
/// needs `opts.oversubscribe`; then each PU gets at most ⌈n / PUs⌉.
pub fn map_threads(
    algo: Algorithm,
    topo: &Topology,
    matrix: &[f64],
    n: usize,
    opts: &Options,
) -> Result<Mapping, MapError> {
    validate(matrix, n)?;
    let slots = slots_for(topo, n, opts)?;
    let m = matrix::symmetric(matrix, n);
    let on_slots = |slot_of| slots.onto_pus(slot_of);
    Ok(match algo {
        Algorithm::Drb => on_slots(drb::map(&slots, &m, n, opts.seed)?),
        Algorithm::Matching => on_slots(hier::map(&slots, &m, n, matching::group, true)),
        Algorithm::Greedy => on_slots(hier::map(&slots, &m, n, greedy::group, false)),
        Algorithm::Compact => baseline::compact(&slots, n),
        Algorithm::Scatter => baseline::scatter(&slots, n),
        Algorithm::Random => baseline::random(&slots, n, opts.seed),
        Algorithm::Identity => baseline::identity(topo, n),
        Algorithm::Exhaustive => exhaustive::map(topo, &m, n)?,
    })
}
