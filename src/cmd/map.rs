//! `tdmap map`: decide where each thread or rank should run from a sharing matrix (a
//! dense CSV file, a sparse edge list or Matrix Market file, or built from a trace by the
//! sharing model as `tdmap analyze` does), and print the mapping ready to paste into the
//! tool that applies it (OpenMP, Open MPI, MPICH, Slurm), with its cost next to
//! compact's and random's.

use crate::exit::{input, OK};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use tdmap_map::format::{render, Format};
use tdmap_map::{Algorithm, Distance, MapError, MappingFile, Options, Provenance, Sparse};

/// Up to this many threads, the compact and random reference costs are computed without
/// --baselines (dense input costs n² per evaluation).
const CHEAP_BASELINES: usize = 4096;

/// A sharing matrix as read: dense (CSV, trace, model) or sparse (edge list, .mtx).
enum Matrix {
    Dense(Vec<f64>, usize),
    Sparse(Sparse),
}

impl Matrix {
    fn n(&self) -> usize {
        match self {
            Matrix::Dense(_, n) => *n,
            Matrix::Sparse(s) => s.n,
        }
    }
}

/// Arguments of `tdmap map`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["matrix", "trace", "model", "comm"])))]
pub struct Args {
    /// The sharing or communication matrix: dense CSV (one row per thread, cells separated
    /// by commas or blanks), a sparse edge list (`i j w` per line, 0-based, undirected;
    /// name ending in .edges or .el), or Matrix Market coordinate (.mtx). See
    /// --matrix-format.
    #[arg(long, value_name = "M.csv")]
    matrix: Option<PathBuf>,
    /// How to read --matrix: csv, edges or mtx. Default: mtx for a .mtx name or a
    /// %%MatrixMarket first line, edges for .edges or .el, else csv.
    #[arg(long, value_name = "KIND")]
    matrix_format: Option<String>,
    /// Compute the compact and random reference costs even above 4096 threads (they
    /// are always computed below, and always written in --format json).
    #[arg(long)]
    baselines: bool,
    /// A trace (`tdmap trace` format): its sharing matrix (accesses to shared blocks) is
    /// built first. Without --machine, the machine recorded in the trace is used.
    #[arg(long, value_name = "T")]
    trace: Option<PathBuf>,
    /// The JSON of `tdmap trace --model-only`: its matrix of accesses to shared lines.
    /// Without --machine, the machine it was recorded on is used.
    #[arg(long, value_name = "M.json")]
    model: Option<PathBuf>,
    /// The communication matrix of an MPI job (`tdmap comm`): ranks are mapped as
    /// threads, by the bytes each pair exchanged in both directions.
    #[arg(long, value_name = "C.json")]
    comm: Option<PathBuf>,
    #[command(flatten)]
    machine: super::MachineArgs,
    /// The algorithm: greedy, matching, drb, compact, scatter, random, identity or
    /// exhaustive (at most 10 threads).
    #[arg(long, short = 'a', default_value = "greedy")]
    algorithm: String,
    /// How to print the mapping: json (the file `tdmap exec --mapping` applies),
    /// omp-places, rankfile (Open MPI), hostfile (MPICH), slurm, hwloc-bind, taskset,
    /// numactl (the CPUs as one set and their nodes for memory). The launch formats start
    /// with the command to run.
    #[arg(long, short = 'f', default_value = "omp-places")]
    format: String,
    /// Same as --format json.
    #[arg(long)]
    json: bool,
    /// Allow more threads than PUs (several threads per PU).
    #[arg(long)]
    oversubscribe: bool,
    /// Seed of the random algorithm, of Scotch's generator (drb) and of the random
    /// reference cost.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Distance for the cost: hops (tree distance) or latency (needs a preset with latencies).
    #[arg(long, default_value = "hops")]
    distance: String,
}

/// Runs `tdmap map`.
pub fn run(args: Args) -> Result<i32> {
    let algo: Algorithm = args.algorithm.parse().map_err(input)?;
    let format: Format = if args.json {
        "json"
    } else {
        args.format.as_str()
    }
    .parse()
    .map_err(input)?;
    let distance = match args.distance.as_str() {
        "hops" => Distance::Hops,
        "latency" => Distance::Latency,
        other => {
            return Err(input(format!(
                "unknown distance {other:?}; choose hops or latency"
            )))
        }
    };
    // Whether the trace was Complete; None for a matrix or a model.
    let mut complete = None;
    let (m, topo) = match (&args.matrix, &args.trace, &args.model) {
        (Some(path), _, _) => {
            let m = read_matrix(path, args.matrix_format.as_deref())?;
            (m, args.machine.load()?)
        }
        (None, Some(path), _) => {
            let (m, n, topo, whole) = from_trace(path, &args.machine)?;
            complete = Some(whole);
            (Matrix::Dense(m, n), topo)
        }
        (None, None, Some(path)) => {
            let (m, n, topo) = from_model(path, &args.machine)?;
            (Matrix::Dense(m, n), topo)
        }
        (None, None, None) => match &args.comm {
            Some(path) => {
                let file = tdmap_mpi::CommFile::read(path).map_err(input)?;
                let m = Matrix::Dense(file.symmetric_bytes(), file.ranks);
                (m, args.machine.load()?)
            }
            None => {
                return Err(input(
                    "give --matrix M.csv, --trace T, --model M.json or --comm C.json",
                ))
            }
        },
    };
    let n = m.n();
    let opts = Options {
        seed: args.seed,
        oversubscribe: args.oversubscribe,
    };
    let mapping = mapped(algo, &topo, &m, &opts)?;
    // Three full mappings are costed: a hop table pays for itself (issue 22 item 9).
    let dist = tdmap_map::PuDistance::with_hop_table(&topo, distance).map_err(input)?;
    // The matrix, trace or model the costs come from: a cost that overflows names it.
    let source = [&args.matrix, &args.trace, &args.model, &args.comm]
        .into_iter()
        .find_map(Option::as_ref)
        .map_or_else(String::new, |p| format!("{}: ", p.display()));
    let cost = |map: &[usize]| {
        let c = match &m {
            Matrix::Dense(d, n) => tdmap_map::cost::cost_with(&dist, d, *n, map),
            Matrix::Sparse(s) => tdmap_map::cost_sparse(&dist, s, map),
        };
        tdmap_map::cost::finite(c).map_err(|e| input(format!("{source}{e}")))
    };
    let own = cost(&mapping)?;
    let baselines = args.baselines || n <= CHEAP_BASELINES || format == Format::Json;
    let refs = if baselines {
        let compact = cost(&mapped(Algorithm::Compact, &topo, &m, &opts)?)?;
        let random = cost(&mapped(Algorithm::Random, &topo, &m, &opts)?)?;
        Some((compact, random))
    } else {
        None
    };
    let mut out = std::io::stdout().lock();
    if format == Format::Json {
        let (compact, random) = refs.expect("computed for json");
        let how = Provenance {
            algorithm: algo.name().to_string(),
            distance: args.distance.clone(),
            seed: args.seed,
            costs: [own, compact, random],
        };
        let mut file = MappingFile::new(&topo, &mapping, how);
        file.complete = complete;
        if args.comm.is_some() {
            file.unit = Some(tdmap_map::Unit::Rank);
        }
        writeln!(out, "{}", file.to_json())?;
    } else {
        let vs = match refs {
            Some((compact, random)) => format!("vs compact {compact}, random {random}"),
            None => format!(
                "(compact and random not computed above {CHEAP_BASELINES} threads: --baselines)"
            ),
        };
        writeln!(
            out,
            "# tdmap map: {} threads on {}, algorithm {}; cost ({}) {own} {vs}",
            n,
            topo.name,
            algo.name(),
            args.distance
        )?;
        if let Some(r) = &topo.restricted {
            writeln!(
                out,
                "# restricted to OS CPUs {} of {} (this process's CPU binding; --whole-machine uses all)",
                super::cpu_list(&r.allowed),
                r.of
            )?;
        }
        write!(out, "{}", render(format, &topo, &mapping))?;
    }
    Ok(OK)
}

/// Reads and checks a sharing matrix: CSV, edge list or Matrix Market.
fn read_matrix(path: &Path, kind: Option<&str>) -> Result<Matrix> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| input(format!("cannot read matrix {}: {e}", path.display())))?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let kind = kind.unwrap_or(if ext == "mtx" || text.starts_with("%%MatrixMarket") {
        "mtx"
    } else if ext == "edges" || ext == "el" {
        "edges"
    } else {
        "csv"
    });
    let bad = |e: MapError| input(format!("{}: {e}", path.display()));
    Ok(match kind {
        "csv" => {
            let (m, n) = tdmap_map::parse_csv(&text).map_err(bad)?;
            Matrix::Dense(m, n)
        }
        "edges" => Matrix::Sparse(tdmap_map::parse_edges(&text).map_err(bad)?),
        "mtx" => Matrix::Sparse(tdmap_map::parse_mtx(&text).map_err(bad)?),
        other => {
            return Err(input(format!(
                "unknown --matrix-format {other:?}; choose csv, edges or mtx"
            )))
        }
    })
}

/// The sharing matrix of a trace (accesses to shared blocks), the machine to map on, and
/// whether the trace was Complete (said on stderr when not).
fn from_trace(
    path: &Path,
    machine: &super::MachineArgs,
) -> Result<(Vec<f64>, usize, tdmap_topo::Topology, bool)> {
    let grain = tdmap_sharing::Grain {
        page: 4096,
        block: None,
        sharers: None,
    };
    let t = super::from_trace::model(path, machine, grain)?;
    let m = t
        .model
        .matrix(tdmap_sharing::Metric::Accesses)
        .to_f64_rows();
    Ok((m, t.header.threads as usize, t.topo, t.complete))
}

/// The matrix of accesses to shared lines in a `tdmap trace --model-only` file, and the
/// machine to map on.
fn from_model(
    path: &Path,
    machine: &super::MachineArgs,
) -> Result<(Vec<f64>, usize, tdmap_topo::Topology)> {
    let file = tdmap_sharing::ModelFile::read(path).map_err(input)?;
    let topo = machine.load_or_recorded(&file.machine, path)?;
    Ok((file.accesses_f64(), file.n(), topo))
}

/// Runs one algorithm; wrong input is exit 2, a Scotch failure exit 1.
fn mapped(
    algo: Algorithm,
    topo: &tdmap_topo::Topology,
    m: &Matrix,
    opts: &Options,
) -> Result<Vec<usize>> {
    let result = match m {
        Matrix::Dense(d, n) => tdmap_map::map_threads(algo, topo, d, *n, opts),
        Matrix::Sparse(s) => tdmap_map::map_threads_sparse(algo, topo, s, opts),
    };
    match result {
        Ok(map) => Ok(map),
        Err(e @ MapError::Scotch(_)) => Err(e).context("drb"),
        Err(e) => Err(input(e)),
    }
}
