//! `tdmap analyze`: read a trace, build the sharing model, and report kMAF §2.2's
//! metrics, the top sharing pairs, a heatmap of the matrix and a verdict in §2.3's terms.

use crate::exit::OK;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;
use tdmap_sharing::{AnalyzeReport, Grain, Metric, ReportSetup, Sharers};

use super::heatmap::{write_matrix_heatmap, Counted, Places};

/// Arguments of `tdmap analyze`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trace file to analyse.
    trace: PathBuf,
    /// Page size for exclusivity: 4K, 2M or a number of bytes (power of two).
    /// Default: both 4K and 2M.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    page_size: Option<u64>,
    /// Which sharing matrix the pairs and heatmap show: accesses to shared blocks, or
    /// amount of shared memory (the trace paper's two metrics).
    #[arg(long, value_enum, default_value = "accesses")]
    metric: MetricArg,
    /// Sharers kept per block: a number K (kMAF's last K threads), or `all` (every
    /// thread that touched the block, the trace paper's exact count). Default: all for
    /// access traces, kMAF's 2 for page-fault samples.
    #[arg(long, value_name = "N|all")]
    sharers: Option<Sharers>,
    /// Bytes per sharing block: two threads share when they touch the same block.
    /// Default: the trace's line size for access traces (64), kMAF's 1 KiB sub-block
    /// for page-fault samples. Give `tdmap run`'s --sub-block (1024) to compare a trace
    /// with what the online detector could see at its granularity.
    #[arg(long, value_name = "BYTES", value_parser = parse_block)]
    block: Option<u64>,
    /// Sharing pairs to list.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Write the matrix as a heatmap image (.png or .svg).
    #[arg(long, value_name = "FILE")]
    heatmap: Option<PathBuf>,
    /// Also replay the trace in the simulator on --machine (os and every static
    /// candidate of best-static) and print best-static's SIMULATED gain over os beside
    /// the verdict: high potential from a 5 % gain, low under 2 %. Takes about as long
    /// as `tdmap sim --policies os,oracle`.
    #[arg(long)]
    sim: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    machine: super::MachineArgs,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum MetricArg {
    Accesses,
    Amount,
}

/// Parses a sharing block size: 1K, 4K or a plain number of bytes, a power of two
/// from 64 to 4K.
fn parse_block(s: &str) -> Result<u64, String> {
    parse_size(s)
        .ok()
        .filter(|b| *b <= 4096)
        .ok_or_else(|| format!("invalid block size {s:?}: give a power of two from 64 to 4K"))
}

/// Parses 4K, 2M, 1G or a plain number of bytes.
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_uppercase();
    let (num, mul) = match t.strip_suffix(['K', 'M', 'G']) {
        Some(n) => (
            n,
            1u64 << (10 * (1 + "KMG".find(t.chars().last().unwrap_or('K')).unwrap_or(0))),
        ),
        None => (t.as_str(), 1),
    };
    num.parse::<u64>()
        .ok()
        .map(|n| n * mul)
        .filter(|v| v.is_power_of_two() && *v >= 64)
        .ok_or_else(|| {
            format!("invalid page size {s:?}: give 4K, 2M or a power of two of at least 64")
        })
}

/// Runs `tdmap analyze`.
pub fn run(args: Args) -> Result<i32> {
    crate::paths::Files::new()
        .reads("the trace", Some(&args.trace))
        .reads("--machine", args.machine.file().as_deref())
        .writes("--heatmap", args.heatmap.as_deref())
        .check()?;
    let name = args.trace.display().to_string();
    let sizes = args.page_size.map_or(vec![4096, 2 << 20], |p| vec![p]);
    let grain = Grain {
        page: sizes[0].min(4096),
        block: args.block,
        sharers: args.sharers,
    };
    let t = super::from_trace::model(&args.trace, &args.machine, grain)?;
    let metric = match args.metric {
        MetricArg::Accesses => Metric::Accesses,
        MetricArg::Amount => Metric::Amount,
    };
    let setup = setup(&name, &t.topo, &sizes, metric, args.top);
    let mut rep = AnalyzeReport::new(&setup, &t.header, &t.model)?;
    rep.set_thread_nodes(t.nodes.clone());
    let pus_per_node = t.topo.num_pus() / t.topo.num_nodes().max(1);
    rep.set_nodes_needed(rep.threads.div_ceil(pus_per_node.max(1)));
    rep.set_complete(t.complete);
    if let Some(path) = &args.heatmap {
        let places = Places::from_nodes(&t.topo, &t.nodes);
        let (m, program) = (t.model.matrix(metric), t.header.program.join(" "));
        write_matrix_heatmap(path, m, Counted::Trace(metric), &program, Some(&places))?;
    }
    let sim = args
        .sim
        .then(|| super::sim::best_static_gain(&args.trace, &t.topo, 1))
        .transpose()?;
    let mut out = std::io::stdout().lock();
    match (args.json, &sim) {
        (true, None) => writeln!(out, "{}", rep.to_json())?,
        (true, Some(g)) => writeln!(out, "{}", with_sim_json(&rep.to_json(), g, &t.topo.name)?)?,
        (false, _) => {
            write!(out, "{}", rep.text())?;
            if let Some(g) = &sim {
                writeln!(out, "{}", sim_line(g, &t.topo.name))?;
            }
        }
    }
    Ok(OK)
}

/// A simulated gain of best-static over os from which the potential is high
/// (`scripts/calibrate-verdict.sh`, docs/sim-checks.md).
const HIGH_GAIN: f64 = 0.05;
/// The gain under which it is low; between the two, moderate.
const LOW_GAIN: f64 = 0.02;

/// The potential a simulated gain stands for.
fn potential(gain: f64) -> &'static str {
    if gain >= HIGH_GAIN {
        "high potential"
    } else if gain < LOW_GAIN {
        "low potential"
    } else {
        "moderate potential"
    }
}

fn sim_line(g: &super::sim::Gain, machine: &str) -> String {
    format!(
        "simulated:      {} (SIMULATED on {machine}: best-static = {} takes {:.3} of os's time, a gain of {:.1} %; high from {:.0} %, low under {:.0} %)",
        potential(g.gain()),
        g.winner,
        1.0 - g.gain(),
        100.0 * g.gain(),
        100.0 * HIGH_GAIN,
        100.0 * LOW_GAIN
    )
}

/// The analyze report's JSON with a `simulated` object added last (an optional field, so
/// the format's version stays; the header stays first).
fn with_sim_json(report: &str, g: &super::sim::Gain, machine: &str) -> Result<String> {
    let sim = serde_json::json!({
        "machine": machine,
        "os_cycles": g.os_cycles,
        "best_static_cycles": g.best_cycles,
        "winner": g.winner,
        "gain": g.gain(),
        "potential": potential(g.gain()),
    });
    let body = report
        .trim_end()
        .strip_suffix('}')
        .context("an analyze report is an object")?;
    let sim = serde_json::to_string_pretty(&sim)?.replace('\n', "\n  ");
    Ok(format!("{},\n  \"simulated\": {sim}\n}}", body.trim_end()))
}

/// What an analyze report of trace `name` on `topo` is computed for.
pub(super) fn setup<'a>(
    name: &'a str,
    topo: &'a tdmap_topo::Topology,
    page_sizes: &'a [u64],
    metric: Metric,
    top: usize,
) -> ReportSetup<'a> {
    ReportSetup {
        trace: name,
        machine: &topo.name,
        cache_bytes: total_cache(topo),
        page_sizes,
        metric,
        top,
    }
}

/// Sum of the sizes of the machine's last-level caches.
fn total_cache(topo: &tdmap_topo::Topology) -> u64 {
    let caches = || topo.objects.iter().filter_map(|o| o.cache);
    let top = caches().map(|c| c.level).max().unwrap_or(0);
    caches().filter(|c| c.level == top).map(|c| c.size).sum()
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn page_sizes_parse() {
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("2m"), Ok(2 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert!(parse_size("3K").is_err());
        assert!(parse_size("x").is_err());
    }
}
