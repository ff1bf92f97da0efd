//! `tdmap map`: decide where each thread should run from a sharing matrix, and print the
//! mapping ready to paste into the tool that applies it, with its cost next to compact's
//! and random's.

use crate::exit::{input, OK};
use anyhow::{Context, Result};
use std::io::Write;
use tdmap_map::format::{render, Format};
use tdmap_map::{Algorithm, Distance, MapError, Options};

/// Arguments of `tdmap map`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The sharing matrix: CSV, one row per thread, cells separated by commas or blanks.
    #[arg(long, value_name = "M.csv")]
    matrix: std::path::PathBuf,
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
    let path = &args.matrix;
    let text = std::fs::read_to_string(path)
        .map_err(|e| input(format!("cannot read matrix {}: {e}", path.display())))?;
    let (m, n) =
        tdmap_map::parse_csv(&text).map_err(|e| input(format!("{}: {e}", path.display())))?;
    let topo = args.machine.load().map_err(input)?;
    let opts = Options {
        seed: args.seed,
        oversubscribe: args.oversubscribe,
    };
    let mapping = mapped(algo, &topo, &m, n, &opts)?;
    let cost = |map: &[usize]| tdmap_map::cost(&topo, &m, n, map, distance).map_err(input);
    let own = cost(&mapping)?;
    let compact = cost(&mapped(Algorithm::Compact, &topo, &m, n, &opts)?)?;
    let random = cost(&mapped(Algorithm::Random, &topo, &m, n, &opts)?)?;
    let mut out = std::io::stdout().lock();
    if format == Format::Json {
        let json = serde_json::json!({
            "machine": topo.name,
            "algorithm": algo.name(),
            "threads": n,
            "distance": args.distance,
            "seed": args.seed,
            "cost": own,
            "compact_cost": compact,
            "random_cost": random,
            "mapping": mapping.iter().enumerate().map(|(t, &pu)| serde_json::json!({
                "thread": t,
                "pu": pu,
                "os": topo.pus[pu].os,
                "core": topo.pus[pu].core,
                "package": topo.pus[pu].package,
                "node": topo.pus[pu].node,
            })).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
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
