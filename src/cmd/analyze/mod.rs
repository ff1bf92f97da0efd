//! `tdmap analyze`: read a trace, build the sharing model, and report kMAF §2.2's
//! metrics, the top sharing pairs, a heatmap of the matrix and a verdict in §2.3's terms.

mod heatmap;
pub(super) mod report;

use crate::exit::{input, OK};
use anyhow::{Context, Result};
use report::Report;
use std::io::Write;
use std::path::{Path, PathBuf};
use tdmap_sharing::{Metric, Sharers, SharingMatrix, SharingModel, TableConfig};
use tdmap_trace::{Chunk, Prefetch, Reader};

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
    #[arg(long, value_name = "N|all", value_parser = parse_sharers)]
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

pub(super) fn parse_sharers(s: &str) -> Result<Sharers, String> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(Sharers::All);
    }
    match s.parse::<usize>() {
        Ok(k) if (1..=64).contains(&k) => Ok(Sharers::Last(k)),
        _ => Err(format!(
            "invalid sharer count {s:?}: give a number from 1 to 64, or all"
        )),
    }
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
    let name = args.trace.display().to_string();
    let mut reader = Reader::open(&args.trace).map_err(|e| input(format!("{name}: {e}")))?;
    reader.set_addresses_only(true);
    let topo = load_machine(&args.machine, reader.header().machine.as_str())?;
    let sizes = args.page_size.map_or(vec![4096, 2 << 20], |p| vec![p]);
    let threads = reader.header().threads as usize;
    let nodes = thread_nodes(&reader, &topo, threads);
    let header = reader.header().clone();
    let mut reader = reader.prefetch();
    let grain = Grain {
        page: sizes[0].min(4096),
        block: args.block,
        sharers: args.sharers,
    };
    let model = build_model(&mut reader, &topo, &nodes, grain)
        .map_err(|e| input(format!("{name}: {e:#}")))?;
    let complete = super::say_ending(&name, reader.ending());
    let header = tdmap_trace::Header {
        status: reader.ending().map_or(header.status, |e| e.status),
        ..header
    };
    let metric = match args.metric {
        MetricArg::Accesses => Metric::Accesses,
        MetricArg::Amount => Metric::Amount,
    };
    let mut rep = Report::new(&name, &header, &model, &topo, &sizes, metric, args.top)?;
    rep.set_thread_nodes(nodes);
    rep.set_complete(complete);
    if let Some(path) = &args.heatmap {
        write_heatmap(path, &args.trace, &model, metric)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rep)?)?;
    } else {
        write!(out, "{}", rep.text())?;
    }
    Ok(OK)
}

/// The machine named by `--machine`, else the one recorded in the trace if tdmap knows
/// it, else this machine.
pub(super) fn load_machine(
    args: &super::MachineArgs,
    recorded: &str,
) -> Result<tdmap_topo::Topology> {
    if args.machine.is_some() {
        return args.load().map_err(input);
    }
    let spec = tdmap_topo::MachineSpec::parse(recorded);
    match spec.load(args.distances.as_deref()) {
        Ok(t) if !recorded.is_empty() => Ok(t),
        _ => args.load().map_err(input),
    }
}

/// Places thread t on the node of the CPU it ran on, if recorded and on this machine;
/// else spreads threads over the nodes in blocks (t·N/T), as a compact mapping would.
pub(super) fn thread_nodes(
    reader: &Reader,
    topo: &tdmap_topo::Topology,
    threads: usize,
) -> Vec<u32> {
    let nodes = topo.num_nodes().max(1);
    (0..threads)
        .map(|t| {
            let cpu = reader
                .threads()
                .iter()
                .find(|i| i.id as usize == t)
                .and_then(|i| i.cpu);
            cpu.and_then(|c| topo.pu_by_os(c as usize))
                .map_or(t * nodes / threads.max(1), |pu| topo.node_of_pu(pu)) as u32
        })
        .collect()
}

/// The granularity a trace is analysed at: page size, and overrides of the sharing
/// block and the sharers kept per block.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grain {
    /// Page size of the NUMA vectors.
    pub page: u64,
    /// Bytes per sharing block, instead of the trace's own.
    pub block: Option<u64>,
    /// Sharers kept per block, instead of the trace's default.
    pub sharers: Option<Sharers>,
}

/// Feeds the whole trace to a model. Exact traces share per cache line and by default
/// keep every sharer (trace paper §III-B); a trace of page-fault samples uses kMAF's
/// 1 KiB sub-blocks and 2 sharers (chosen from the first chunk). `grain` overrides
/// the block and the sharers kept.
pub(super) fn build_model(
    reader: &mut Prefetch,
    topo: &tdmap_topo::Topology,
    nodes: &[u32],
    grain: Grain,
) -> Result<SharingModel> {
    let Grain {
        page,
        block,
        sharers,
    } = grain;
    let threads = reader.header().threads as usize;
    let line = (reader.header().line_size as u64).clamp(1, page);
    let mut model: Option<SharingModel> = None;
    let mut progress = Progress::new();
    while let Some(chunk) = reader.next_chunk()? {
        progress.add(chunk.len() as u64);
        let m = match &mut model {
            Some(m) => m,
            None => {
                let n = topo.num_nodes().max(1);
                let mut cfg = match chunk {
                    Chunk::Accesses(_) => TableConfig {
                        sub_block: line,
                        ..TableConfig::all_sharers(n, threads)
                    },
                    Chunk::Faults(_) => TableConfig::page_faults(n),
                };
                if let Some(s) = sharers {
                    cfg = cfg.keeping(s);
                }
                cfg.page_size = page;
                cfg.sub_block = block.unwrap_or(cfg.sub_block).min(page);
                model.insert(SharingModel::new(cfg, threads, nodes)?)
            }
        };
        m.feed(chunk)
            .context("the trace does not fit the machine; pass --machine")?;
    }
    match model {
        Some(m) => Ok(m),
        None => Ok(SharingModel::new(
            TableConfig::exact(topo.num_nodes().max(1)),
            threads,
            nodes,
        )?),
    }
}

/// A spinner counting events on stderr, shown only once reading has taken 2 s (indicatif
/// draws nothing when stderr is not a terminal).
struct Progress {
    start: std::time::Instant,
    events: u64,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            start: std::time::Instant::now(),
            events: 0,
            bar: None,
        }
    }

    fn add(&mut self, n: u64) {
        self.events += n;
        if self.bar.is_none() && self.start.elapsed().as_secs() >= 2 {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg}").expect("valid template"),
            );
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{} M events read", self.events / 1_000_000));
            bar.tick();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

fn write_heatmap(
    path: &PathBuf,
    trace: &PathBuf,
    model: &SharingModel,
    metric: Metric,
) -> Result<()> {
    if path == trace {
        return Err(input(format!(
            "--heatmap {} would overwrite the trace; name another file",
            path.display()
        )));
    }
    write_matrix_heatmap(path, model.matrix(metric), metric)
}

/// Checks that `path` names a heatmap format tdmap writes (.png or .svg), before any work.
pub(crate) fn check_heatmap_path(path: &Path) -> Result<()> {
    match heatmap_ext(path).as_str() {
        "png" | "svg" => Ok(()),
        _ => Err(input(format!(
            "--heatmap {}: name a .png or .svg file",
            path.display()
        ))),
    }
}

fn heatmap_ext(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Writes sharing matrix `m` of `metric` as a heatmap at `path` (.png or .svg); shared
/// with `tdmap run`, which draws the matrix it detected online.
pub(crate) fn write_matrix_heatmap(path: &Path, m: &SharingMatrix, metric: Metric) -> Result<()> {
    check_heatmap_path(path)?;
    let cells = m.to_f64_rows();
    let (title, unit) = match metric {
        Metric::Accesses => ("Sharing: accesses to shared blocks", "accesses"),
        Metric::Amount => ("Sharing: shared memory", "bytes"),
    };
    let h = heatmap::Heatmap {
        n: m.n(),
        cells: &cells,
        title,
        unit,
    };
    let bytes = if heatmap_ext(path) == "png" {
        h.png()?
    } else {
        h.svg().into_bytes()
    };
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::{parse_sharers, parse_size};
    use tdmap_sharing::Sharers;

    #[test]
    fn sharer_counts_parse() {
        assert_eq!(parse_sharers("all"), Ok(Sharers::All));
        assert_eq!(parse_sharers("2"), Ok(Sharers::Last(2)));
        assert!(parse_sharers("0").is_err());
        assert!(parse_sharers("two").is_err());
    }

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
