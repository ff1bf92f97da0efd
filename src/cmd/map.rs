//! `tdmap map`: decide where each thread should run from a sharing matrix (a CSV file, or
//! built from a trace by the sharing model as `tdmap analyze` does), and print the mapping
//! ready to paste into the tool that applies it, with its cost next to compact's and
//! random's.

use crate::exit::{input, OK};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use tdmap_map::format::{render, Format};
use tdmap_map::{Algorithm, Distance, MapError, MappingFile, Options, Provenance};

/// Arguments of `tdmap map`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["matrix", "trace", "model"])))]
pub struct Args {
    /// The sharing matrix: CSV, one row per thread, cells separated by commas or blanks.
    #[arg(long, value_name = "M.csv")]
    matrix: Option<PathBuf>,
    /// A trace (`tdmap trace` format): its sharing matrix (accesses to shared blocks) is
    /// built first. Without --machine, the machine recorded in the trace is used.
    #[arg(long, value_name = "T")]
    trace: Option<PathBuf>,
    /// The JSON of `tdmap trace --model-only`: its matrix of accesses to shared lines.
    /// Without --machine, the machine it was recorded on is used.
    #[arg(long, value_name = "M.json")]
    model: Option<PathBuf>,
    #[command(flatten)]
    machine: super::MachineArgs,
    /// The algorithm: greedy, matching, drb, compact, scatter, random, identity or
    /// exhaustive (at most 10 threads).
    #[arg(long, short = 'a', default_value = "greedy")]
    algorithm: String,
    /// How to print the mapping: json, omp-places, rankfile, slurm, hwloc-bind, taskset.
    #[arg(long, short = 'f', default_value = "omp-places")]
    format: String,
    /// Same as --format json.
    #[arg(long)]
    json: bool,
    /// Allow more threads than PUs (several threads per PU).
    #[arg(long)]
    oversubscribe: bool,
    /// Seed of the random algorithm and of the random reference cost.
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
    let (m, n, topo) = match (&args.matrix, &args.trace, &args.model) {
        (Some(path), _, _) => {
            let (m, n) = read_matrix(path)?;
            (m, n, args.machine.load().map_err(input)?)
        }
        (None, Some(path), _) => from_trace(path, &args.machine)?,
        (None, None, Some(path)) => from_model(path, &args.machine)?,
        (None, None, None) => {
            return Err(input("give --matrix M.csv, --trace T or --model M.json"))
        }
    };
    let opts = Options {
        seed: args.seed,
        oversubscribe: args.oversubscribe,
    };
    let mapping = mapped(algo, &topo, &m, n, &opts)?;
    // The matrix, trace or model the costs come from: a cost that overflows names it.
    let source = [&args.matrix, &args.trace, &args.model]
        .into_iter()
        .find_map(Option::as_ref)
        .map_or_else(String::new, |p| format!("{}: ", p.display()));
    let cost = |map: &[usize]| {
        tdmap_map::cost(&topo, &m, n, map, distance).map_err(|e| input(format!("{source}{e}")))
    };
    let own = cost(&mapping)?;
    let compact = cost(&mapped(Algorithm::Compact, &topo, &m, n, &opts)?)?;
    let random = cost(&mapped(Algorithm::Random, &topo, &m, n, &opts)?)?;
    let mut out = std::io::stdout().lock();
    if format == Format::Json {
        let how = Provenance {
            algorithm: algo.name().to_string(),
            distance: args.distance.clone(),
            seed: args.seed,
            costs: [own, compact, random],
        };
        writeln!(out, "{}", MappingFile::new(&topo, &mapping, how).to_json())?;
    } else {
        writeln!(
            out,
            "# tdmap map: {} threads on {}, algorithm {}; cost ({}) {own} vs compact {compact}, random {random}",
            n, topo.name, algo.name(), args.distance
        )?;
        write!(out, "{}", render(format, &topo, &mapping))?;
    }
    Ok(OK)
}

/// Reads and checks a CSV sharing matrix.
fn read_matrix(path: &Path) -> Result<(Vec<f64>, usize)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| input(format!("cannot read matrix {}: {e}", path.display())))?;
    tdmap_map::parse_csv(&text).map_err(|e| input(format!("{}: {e}", path.display())))
}

/// The sharing matrix of a trace (accesses to shared blocks) and the machine to map on.
fn from_trace(
    path: &Path,
    machine: &super::MachineArgs,
) -> Result<(Vec<f64>, usize, tdmap_topo::Topology)> {
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
    Ok((m, t.header.threads as usize, t.topo))
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
    m: &[f64],
    n: usize,
    opts: &Options,
) -> Result<Vec<usize>> {
    match tdmap_map::map_threads(algo, topo, m, n, opts) {
        Ok(map) => Ok(map),
        Err(e @ MapError::Scotch(_)) => Err(e).context("drb"),
        Err(e) => Err(input(e)),
    }
}
