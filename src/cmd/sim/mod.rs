//! `tdmap sim`: replays a trace on a modelled NUMA machine once per policy and prints,
//! normalised to the `os` policy, what the papers' Figures 7-9 show: execution time, L3
//! misses, inter-chip traffic, the remote-access ratio and migrations. Every figure is
//! SIMULATED (tdmap-sim's model), never a measurement, and says so.

mod plot;

use crate::cmd::MachineArgs;
use crate::exit::{input, OK};
use anyhow::Context;
use std::io::IsTerminal;
use std::io::Write;
use std::path::{Path, PathBuf};
use tdmap_sim::policy::best_static::{self, Knowledge, Plan};
use tdmap_sim::policy::ByName;
use tdmap_sim::{
    simulate_chunks, CacheSpec, Comparison, ComparisonSetup, EnergyModel, Machine, Normalised,
    Policy, Profile, RunError, SimConfig, SimReport,
};
use tdmap_topo::Topology;

/// The policies run when --policies is not given, baseline first.
const DEFAULT_POLICIES: &str =
    "os,compact,scatter,random,interleave,numa-balancing,sammu,kmaf,best-static";

/// Periods a short trace's run spans at least (see [`Profile::period`]).
const MIN_PERIODS: u64 = 20;

/// Arguments of `tdmap sim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trace to replay (from `tdmap trace`).
    pub trace: PathBuf,
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Policies to compare, comma-separated; `os`, the baseline, is always run. Known:
    /// os, compact, scatter, random, interleave, numa-balancing, sammu (threads mapped by
    /// Scotch's dual recursive bipartitioning, as the paper does), sammu-greedy (the same
    /// with greedy grouping), kmaf (tdmap run's loop and rules), kmaf-paper (the same loop with the paper's rules: drb, Eq. 6 at
    /// every fault, no margin), kmaf-threads and kmaf-data (kMAF Fig. 11's variants),
    /// worst (the trace-based paper's minimum-weight mapping), best-static (alias oracle:
    /// the fastest of every static policy and algorithm's mapping, each replayed).
    #[arg(long, value_name = "LIST", default_value = DEFAULT_POLICIES)]
    pub policies: String,
    /// Seed of every random choice (OS placement and migrations, random mapping).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The policy period in simulated milliseconds. Default: 100 ms (kMAF, SAMMU), cut so
    /// that a short trace spans at least 20 periods (the text output then notes that
    /// migrations weigh more against so short a period than in a longer run).
    #[arg(long, value_name = "MS")]
    pub period_ms: Option<f64>,
    /// Allow more threads than the machine has PUs (threads then share PUs; time-sharing
    /// is not modelled: each thread only pays for its own accesses).
    #[arg(long)]
    pub oversubscribe: bool,
    /// The L1 data cache of every core as cachegrind's --D1 gives it: SIZE,ASSOC,LINE in
    /// bytes (e.g. 32768,8,64), replacing the machine's.
    #[arg(long, value_name = "SIZE,ASSOC,LINE")]
    pub l1: Option<String>,
    /// The last-level cache as cachegrind's --LL gives it (e.g. 8388608,16,64): one per
    /// package, non-inclusive, and no L2 between it and the L1, as cachegrind models it
    /// (scripts/sim-vs-cachegrind.sh compares the two).
    #[arg(long, value_name = "SIZE,ASSOC,LINE")]
    pub ll: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also draw a grouped bar chart (PNG) of the normalised figures.
    #[arg(long, value_name = "PNG")]
    pub plot: Option<PathBuf>,
}

/// Runs `tdmap sim`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    crate::paths::Files::new()
        .reads("the trace", Some(&args.trace))
        .reads("--machine", args.machine.file().as_deref())
        .writes("--plot", args.plot.as_deref())
        .check()?;
    let names = policy_names(&args.policies)?;
    let topo = args.machine.load().map_err(input)?;
    let threads = trace_threads(&args.trace)?;
    if threads > topo.num_pus() && !args.oversubscribe {
        return Err(input(format!(
            "{}: {threads} threads but machine {} has {} PUs: pick a larger --machine, or pass --oversubscribe to let threads share PUs",
            args.trace.display(), topo.name, topo.num_pus()
        )));
    }
    let cache = |flag: &str, v: &Option<String>| {
        v.as_deref()
            .map(CacheSpec::parse)
            .transpose()
            .map_err(|e| input(format!("{flag} {e}")))
    };
    let mut cfg = SimConfig {
        seed: args.seed,
        l1: cache("--l1", &args.l1)?,
        ll: cache("--ll", &args.ll)?,
        ..SimConfig::default()
    };
    let machine = Machine::new(&topo, &cfg).map_err(input)?;
    let hz = machine.hz;
    // The first pass shows a spinner on a terminal once it has taken 2 s.
    let mut reading = super::from_trace::Progress::new();
    let knowledge = names
        .iter()
        .any(|n| n == best_static::NAMES[0] || n == best_static::WORST)
        .then(|| Knowledge::from_trace_with(&args.trace, |n| reading.add(n)))
        .transpose()
        .map_err(|e| bad_trace(&args.trace, e))?;
    let profile = match &knowledge {
        Some(k) => k.profile.clone(),
        None => tdmap_sim::first_pass(&args.trace, |c| {
            reading.add(c.addrs.len() as u64);
            Ok(())
        })
        .map_err(|e| bad_trace(&args.trace, e))?,
    };
    drop(reading);
    let period = match args.period_ms {
        Some(ms) if ms > 0.0 && ms.is_finite() => (hz * ms / 1e3).max(1.0) as u64,
        Some(ms) => return Err(input(format!("--period-ms {ms}: give a positive number"))),
        None => profile.period(hz, 5, MIN_PERIODS),
    };
    let complete = super::say_ending(&args.trace.display().to_string(), profile.ending);
    cfg.tick_cycles = Some(period);
    cfg.data_bytes = (profile.data_bytes > 0).then_some(profile.data_bytes);
    let mut policies = Vec::new();
    for n in names.iter().filter(|n| *n != best_static::NAMES[0]) {
        policies.push(match (n.as_str(), &knowledge) {
            (best_static::WORST, Some(k)) => k.worst(&topo).map_err(input)?,
            _ => ByName::build(n, args.seed).expect("names were checked"),
        });
    }
    let asked = policies.len();
    let plan = knowledge
        .as_ref()
        .filter(|_| names.iter().any(|n| n == best_static::NAMES[0]))
        .map(|k| Plan::new(k, &topo, &cfg, &mut policies));
    let mut reports = replay(&args.trace, &topo, &cfg, policies, &profile)?;
    let best = plan.zip(knowledge).map(|(p, k)| p.pick(k, &reports));
    reports.truncate(asked);
    if let Some(b) = &best {
        let at = names.iter().position(|n| n == best_static::NAMES[0]);
        reports.insert(at.expect("asked for"), b.report());
    }
    let setup = ComparisonSetup {
        trace: args.trace.display().to_string(),
        machine: topo.name.clone(),
        threads: profile.threads,
        accesses: profile.total(),
        complete,
        period_cycles: period,
        energy: EnergyModel::for_machine(&machine, cfg.page_size),
    };
    let out = Comparison::new(setup, &cfg, reports);
    if let Some(png) = &args.plot {
        let bytes = chart_png(&out)?;
        crate::paths::replace(png, &bytes).map_err(|e| {
            input(format!(
                "--plot {}: {e}: give a writable path",
                png.display()
            ))
        })?;
    }
    // Written, not printed: a reader that closed the pipe (`| head`) is no error.
    let mut stdout = std::io::stdout().lock();
    if args.json {
        writeln!(stdout, "{}", out.to_json())?;
    } else {
        if args.period_ms.is_none() && period < (hz * tdmap_sim::PERIOD_S) as u64 {
            eprintln!("{}", short_trace_note(period, hz));
        }
        write!(stdout, "{}", table(&out))?;
        if let Some(b) = &best {
            writeln!(
                stdout,
                "best-static = {}: the fastest of {} static candidates, each replayed (every static policy, every algorithm's mapping with first-touch pages and with majority homes{}).",
                b.winner().label(),
                b.tried.len(),
                if b.placements() { ", every placement up to symmetry" } else { "" }
            )?;
        }
    }
    Ok(OK)
}

/// The best static policy's modelled time against os's on one trace (SIMULATED), what
/// `tdmap analyze --sim` prints beside its verdict.
pub struct Gain {
    /// os's modelled time in cycles.
    pub os_cycles: u64,
    /// best-static's.
    pub best_cycles: u64,
    /// The winning candidate.
    pub winner: String,
}

impl Gain {
    /// 1 - best-static / os: the share of os's time that the best static mapping saves.
    pub fn gain(&self) -> f64 {
        1.0 - self.best_cycles as f64 / self.os_cycles.max(1) as f64
    }
}

/// Replays best-static's candidates (os among them) on `trace` with the period and seed
/// `tdmap sim` would use.
pub fn best_static_gain(trace: &Path, topo: &Topology, seed: u64) -> anyhow::Result<Gain> {
    let mut cfg = SimConfig {
        seed,
        ..SimConfig::default()
    };
    let hz = Machine::new(topo, &cfg).map_err(input)?.hz;
    let mut reading = super::from_trace::Progress::new();
    let k =
        Knowledge::from_trace_with(trace, |n| reading.add(n)).map_err(|e| bad_trace(trace, e))?;
    drop(reading);
    cfg.tick_cycles = Some(k.profile.period(hz, 5, MIN_PERIODS));
    cfg.data_bytes = (k.profile.data_bytes > 0).then_some(k.profile.data_bytes);
    let mut policies = Vec::new();
    let plan = Plan::new(&k, topo, &cfg, &mut policies);
    let reports = replay(trace, topo, &cfg, policies, &k.profile)?;
    let b = plan.pick(k, &reports);
    let os = b
        .tried
        .iter()
        .find(|(c, _)| c.label() == "os")
        .map(|(_, r)| r.cycles_max)
        .expect("os is always a candidate");
    Ok(Gain {
        os_cycles: os,
        best_cycles: b.report().cycles_max,
        winner: b.winner().label(),
    })
}

/// The requested policies, `os` first, `oracle` as `best-static`; unknown names are bad
/// input.
fn policy_names(list: &str) -> anyhow::Result<Vec<String>> {
    let mut names = vec!["os".to_string()];
    for n in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let n = if best_static::NAMES.contains(&n) {
            best_static::NAMES[0]
        } else {
            n
        };
        if n != best_static::NAMES[0] && n != best_static::WORST && !ByName::NAMES.contains(&n) {
            return Err(input(format!(
                "unknown policy {n:?}: pick from {}, worst, best-static (alias oracle)",
                ByName::NAMES.join(", ")
            )));
        }
        if !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    }
    Ok(names)
}

fn trace_threads(path: &Path) -> anyhow::Result<usize> {
    let reader = tdmap_trace::Reader::open(path).map_err(|e| bad_trace(path, e.into()))?;
    match reader.header().threads as usize {
        0 => Err(input(format!(
            "{}: the trace has no threads: trace a program that runs",
            path.display()
        ))),
        n => Ok(n),
    }
}

/// A trace that cannot be replayed is bad input; the message names the file once.
fn bad_trace(path: &Path, e: RunError) -> anyhow::Error {
    super::input_about(path, e)
}

/// One pass over the trace for every policy, with a progress bar on a terminal.
fn replay(
    path: &Path,
    topo: &Topology,
    cfg: &SimConfig,
    policies: Vec<Box<dyn Policy>>,
    profile: &Profile,
) -> anyhow::Result<Vec<SimReport>> {
    let mut stream = tdmap_sim::TraceInput::open(path).map_err(|e| bad_trace(path, e))?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(profile.total());
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "simulating {wide_bar} {human_pos}/{human_len} accesses, {eta} left",
            )
            .expect("valid template"),
        );
        bar
    });
    let next = |buf: &mut Vec<tdmap_sim::SimAccess>| {
        stream.fill(buf, tdmap_sim::CHUNK)?;
        if let Some(b) = &bar {
            b.inc(buf.len() as u64);
        }
        Ok(())
    };
    let reports = simulate_chunks(topo, cfg, policies, profile.threads, next)
        .map_err(|e: RunError| bad_trace(path, e))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(reports)
}

/// The chart of `out` as PNG bytes, titled SIMULATED with its trace and machine: what
/// `--plot` writes and `tdmap report` inlines.
pub(crate) fn chart_png(out: &Comparison) -> anyhow::Result<Vec<u8>> {
    let rows: Vec<(String, Normalised, f64)> = out
        .results
        .iter()
        .map(|r| (r.policy.clone(), r.normalised.clone(), r.remote_ratio))
        .collect();
    let trace = Path::new(&out.trace);
    let name = trace
        .file_name()
        .map_or_else(|| out.trace.clone(), |n| n.to_string_lossy().into_owned());
    let title = format!("SIMULATED: {name} on {}, normalised to os", out.machine);
    plot::chart(&rows, &title).context("encoding the chart")
}

/// What a period cut for a short trace means for the online policies' figures: their
/// migrations keep their real costs against a period thousands of times shorter.
fn short_trace_note(period: u64, hz: f64) -> String {
    format!(
        "tdmap: note: a short trace: online policies act every {:.1} µs instead of {} ms, so that the run spans {MIN_PERIODS} periods, while thread and page migrations keep their real costs; their figures weigh migrations more than a longer run would (--period-ms sets the period)",
        period as f64 / hz * 1e6,
        tdmap_sim::PERIOD_S * 1e3
    )
}

fn table(out: &Comparison) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "SIMULATED (tdmap-sim model, not a measurement): {} on {}, {} threads, {} accesses, period {} cycles, seed {}",
        out.trace, out.machine, out.threads, out.accesses, out.period_cycles, out.seed
    );
    let _ = writeln!(
        s,
        "{:<15} {:>8} {:>10} {:>17} {:>8} {:>10} {:>8} {:>17}",
        "policy", "time", "L3 misses", "inter-chip", "remote", "thr.migr", "pg.migr", "energy"
    );
    let most = out
        .results
        .iter()
        .map(|r| r.report.interchip_bytes())
        .max()
        .unwrap_or(0);
    let base = out
        .results
        .first()
        .map_or(0, |r| r.report.interchip_bytes());
    for r in &out.results {
        let n = &r.normalised;
        let _ = writeln!(
            s,
            "{:<15} {:>8.3} {:>10.3} {:>17} {:>7.1}% {:>10} {:>8} {:>17}",
            r.policy,
            n.time,
            n.l3_misses,
            interchip(r.report.interchip_bytes(), base, most),
            100.0 * r.remote_ratio,
            r.report.thread_migrations,
            r.report.page_migrations,
            energy(r.energy.total, n.energy)
        );
    }
    s.push_str("time and L3 misses relative to os (lower is better); inter-chip = bytes on the links, (×os) unless os moved under 1 % of the most any policy moved; remote = share of memory reads served by another node; energy = estimated joules (core power x time, caches, DRAM, links; constants in crates/sim/src/energy.rs) and their ratio to os.\n");
    s
}

/// Estimated energy and its ratio to os, one word (as [`interchip`]).
fn energy(joules: f64, ratio: f64) -> String {
    let amount = if joules >= 1.0 {
        format!("{joules:.3}J")
    } else {
        format!("{:.3}mJ", joules * 1e3)
    };
    format!("{amount}({ratio:.3}×)")
}

/// Inter-chip bytes, with the ratio to os only where os's figure (`base`) is not near
/// zero, under 1 % of the most any policy moved: a ratio over a few stray bytes (1465.953
/// was seen) says nothing.
fn interchip(bytes: u64, base: u64, most: u64) -> String {
    let amount = if bytes >= 1 << 20 {
        format!("{:.1}MiB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1}KiB", bytes as f64 / 1024.0)
    };
    // One word, so that the table keeps one field per column for scripts
    // (bench/sim_workloads.sh counts 8).
    if most == 0 {
        format!("{amount}(=os)")
    } else if base > 0 && base.saturating_mul(100) >= most {
        format!("{amount}({:.2}×)", bytes as f64 / base as f64)
    } else {
        format!("{amount}(os≈0)")
    }
}
