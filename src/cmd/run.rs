//! `tdmap run -- PROG ARGS`: kMAF (§3) in user space. The program starts held at a gate,
//! the kernel page-fault sampler attaches to it, then it runs unmodified while tdmap,
//! every period, feeds the samples to the sharing model, maps the threads, moves pages by
//! Eq. 6 and ages the matrix (decisions in tdmap-monitor, syscalls in tdmap-sys).
//! With the inject sampler (run/sampler.rs) the program also gets the tdmap runtime
//! preloaded, which makes the extra faults the kernel sampler then sees. With
//! `--mai-auto` it also gets libmai preloaded in automatic mode (run/preload.rs).
//!
//! Output: the program keeps its stdout and stderr (inherited, untouched). The report
//! goes to stderr after the program ends, as text or with `--json` as one JSON document,
//! or to `--report FILE`; stdout is never written, so the program's stdout is the same
//! with and without tdmap. tdmap exits with the program's exit code (128 + signal number
//! if a signal ended it), or 2 when the program cannot be started.
//!
//! Every process the program starts is followed (docs/processes.md): its threads are
//! tasks mapped with the others, its shared pages are keyed by their backing object.

mod energy;
pub(crate) mod preload;
mod reference;
mod report;
mod sampler;
mod settings;

use crate::exit::input;
use anyhow::{Context, Result};
use std::ffi::OsString;
use std::path::PathBuf;
use tdmap_monitor::live::{LiveProgram, SysActuator};
use tdmap_monitor::online::{self, LoopSettings, SystemClock};
use tdmap_monitor::Engine;
use tdmap_sys::perf::{PerfSampler, SamplerConfig};
use tdmap_sys::{FsRoot, LinuxSys};

/// Arguments of `tdmap run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Decision period in milliseconds (kMAF: 100).
    #[arg(long, value_name = "MS", default_value_t = tdmap_monitor::PERIOD.as_millis() as u64)]
    period: u64,
    /// Which kMAF rules: `run` (tdmap run's: a 10% margin, a wait of 3 periods for the
    /// first mapping, NUMA vectors restarted there, Eq. 6 once per period, a gate of one
    /// sharing event per thread, greedy) or `paper` (kMAF §3.3-3.4: Scotch's dual
    /// recursive bipartitioning, Eq. 6 at every fault, no margin, no wait, no gate).
    /// --algorithm and --margin override either.
    #[arg(long, value_name = "run|paper", default_value = "run")]
    kmaf: tdmap_monitor::Preset,
    /// Thread-mapping algorithm: greedy, drb, matching, ... (as `tdmap map`); default:
    /// the rules' (greedy for run, drb for paper).
    #[arg(long)]
    algorithm: Option<String>,
    /// Where samples come from: kernel (perf page faults, plus soft-dirty extra faults
    /// where the kernel has them), inject (perf page faults, plus extra write faults the
    /// preloaded libtdmap_rt.so injects with userfaultfd), or auto (kernel where
    /// soft-dirty works, else inject where it works, else kernel).
    #[arg(long, default_value = "auto")]
    sampler: String,
    /// inject sampler: share of the program's anonymous memory write-protected per
    /// period.
    #[arg(long, default_value_t = 0.01, value_name = "FRACTION")]
    inject_fraction: f64,
    /// inject sampler: at most this many pages write-protected per period. Each write to
    /// one stalls the writer for a round trip through the handler thread, about 50 µs
    /// when the handler sleeps (`make bench-run-inject`): 20 per 100 ms is 1% of one
    /// thread's time. Scale it with --period.
    #[arg(long, default_value_t = 20, value_name = "PAGES")]
    inject_pages: u64,
    /// A new thread mapping is applied only if it lowers the cost by more than this
    /// fraction of the current one (default: the rules', 0.10 for run, 0 for paper).
    #[arg(long, value_name = "FRACTION")]
    margin: Option<f64>,
    /// Bytes per sub-block of the per-page sharer vectors: two threads share when they
    /// fault in the same sub-block (kMAF §3.5.1: 1024). A power of two from 64 to 4096.
    #[arg(long, value_name = "BYTES", default_value_t = 1024)]
    sub_block: u32,
    /// Sharers kept per sub-block: a number K (kMAF's last K threads; a fault shares
    /// with the K-1 others), or `all` (every thread that faulted there). kMAF keeps 2;
    /// more also see readers of one producer's data sharing with each other.
    #[arg(long, value_name = "N|all", default_value = "2")]
    sharers: tdmap_sharing::Sharers,
    /// Detect and decide, but move no thread and no page: the report says what would
    /// have been pinned and moved.
    #[arg(long)]
    dry_run: bool,
    /// Map threads only, move no page (kMAF Figure 11).
    #[arg(long, conflicts_with = "data_only")]
    threads_only: bool,
    /// Move pages only, do not map threads (kMAF Figure 11).
    #[arg(long)]
    data_only: bool,
    /// Apply this static mapping (`tdmap map --format json`) as threads appear: thread k
    /// is the k-th thread seen faulting (see tdmap-monitor), or, when every entry names a
    /// task (`task`: process rank or index, thread in it; docs/formats.md), each task
    /// of a program of several processes. Pages follow Eq. 6 unless --threads-only.
    /// Checked first as `tdmap exec` checks it: a mapping made for another machine (see
    /// --force), or naming CPUs outside this process's binding, is refused.
    #[arg(long, value_name = "FILE")]
    mapping: Option<PathBuf>,
    /// Preload libmai in automatic mode: it picks cyclic or bind_block for each large array.
    ///
    /// The program gets libmai.so preloaded with MAI_AUTO=1: libmai's automatic mode
    /// (MApp §3.2) gives each array at least as large as the last-level cache
    /// (MAI_AUTO_THRESHOLD overrides) the memory policy the heuristic picks for this
    /// machine: the program's static arrays (.data, .bss) before main, the others when
    /// they are allocated. It logs each choice on the program's stderr, or to MAI_AUTO_LOG. tdmap still detects sharing, maps threads and moves pages as usual:
    /// libmai sets the first placement, kMAF's Eq. 6 moves correct it at run time
    /// (--threads-only or --dry-run keep libmai's placement). Combines with --mapping and
    /// with --sampler inject. libmai.so is $TDMAP_MAI_SO, else beside tdmap (`cargo build
    /// -p tdmap-mai`).
    #[arg(long)]
    mai_auto: bool,
    /// Data pages of each per-CPU perf ring (a power of two; 128 = 512 KiB, about 13 000
    /// samples per CPU between two drains). Raise it when the report says samples were lost.
    #[arg(long, value_name = "PAGES", default_value_t = 128)]
    ring_pages: usize,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Write the report to FILE instead of stderr.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Compare the detected sharing matrix with this one, from `tdmap analyze --json`
    /// on an exact trace of the program: the report gives their similarity (Pearson
    /// correlation over the pairs; for a flat reference, how flat the detection is).
    /// Like for like needs `tdmap analyze --block` equal to --sub-block and, for the
    /// amount metric, --sharers all here.
    #[arg(long, value_name = "FILE")]
    reference: Option<PathBuf>,
    /// Write the detected sharing matrix as a heatmap (.png or .svg).
    #[arg(long, value_name = "FILE")]
    heatmap: Option<PathBuf>,
    /// Pin threads on every PU of this machine, not only the CPUs tdmap may use (its CPU
    /// binding from taskset, cgroups or a Slurm step, which the program inherits).
    #[arg(long)]
    whole_machine: bool,
    /// Apply --mapping even when it was made for another machine (its fingerprint
    /// differs); CPUs this machine lacks are still refused.
    #[arg(long, requires = "mapping")]
    force: bool,
    /// The program and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

/// Runs the program under the monitor and returns the program's exit code.
pub fn run(args: Args) -> Result<i32> {
    crate::paths::Files::new()
        .runs(&args.command[0])
        .reads("--mapping", args.mapping.as_deref())
        .reads("--reference", args.reference.as_deref())
        .writes("--report", args.report.as_deref())
        .writes("--heatmap", args.heatmap.as_deref())
        .check()?;
    let allowed = super::allowed_cpus(!args.whole_machine)?;
    let topo = tdmap_topo::MachineSpec::parse("")
        .load_within(None, allowed.as_deref())
        .context("cannot read this machine's topology")?;
    super::say_restricted(&topo);
    let settings = settings::Settings::from_args(&args, &topo, allowed.as_deref())?;
    let (prog, rest) = args
        .command
        .split_first()
        .expect("clap requires the program");
    let mut announce = settings.sampler.announcer()?;
    let env = preload::env(&settings, args.period, announce.as_ref());
    let mut child = tdmap_sys::spawn_gated_env(prog, rest, &env)
        .map_err(|e| input(format!("cannot run {}: {e}", prog.to_string_lossy())))?;
    let _fwd = tdmap_sys::forward_signals(child.pid())?;
    if let Some(a) = announce.as_mut() {
        a.child_started(child.pid());
    }
    let fs = FsRoot::default();
    let perf = SamplerConfig {
        ring_pages: args.ring_pages,
        ..SamplerConfig::default()
    };
    let mut sampler = PerfSampler::open(&fs, child.pid(), &perf)
        .map_err(|e| input(format!("cannot sample page faults: {e}")))?;
    let events = sampler.scope();
    let rapl = energy::reading();
    child
        .release()
        .map_err(|e| input(format!("cannot run {}: {e}", prog.to_string_lossy())))?;
    let mut engine = Engine::new(&topo, settings.cfg, settings.dry_run)?;
    engine = match &settings.fixed {
        Some(crate::cmd::mapping::Fixed::Threads(pus)) => engine.with_fixed_mapping(pus.clone()),
        Some(crate::cmd::mapping::Fixed::Tasks(t)) => engine.with_fixed_tasks(
            t.iter()
                .map(|&(n, pu)| ((n.process, n.thread), pu))
                .collect(),
        ),
        None => engine,
    };
    let mut act = SysActuator::new(LinuxSys, child.pid(), &topo).keyed_by_maps(fs.clone());
    let soft_dirty = settings.sampler.soft_dirty();
    let mut program = LiveProgram::new(&mut child, fs, soft_dirty);
    let outcome = online::run(
        &mut engine,
        &mut sampler,
        &mut act,
        &mut program,
        &SystemClock::start(),
        LoopSettings {
            period: settings.period,
            announcer: announce.as_mut().map(|a| a as &mut dyn online::Announcer),
        },
    )?;
    let mut report = report::build(&topo, &settings, prog, &outcome, events);
    report.energy = energy::since(rapl);
    report::emit(&report, &args, &outcome, &topo)?;
    Ok(outcome.exit_code)
}
