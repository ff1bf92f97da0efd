//! The monitor loop of `tdmap run`: drain the sampler whenever it wakes (so rings do not
//! overflow between periods), feed the model, and every period plan and apply; stop when
//! the program has ended and its last samples are in.

use super::act::{self, Actions, Counts};
use super::sampler::{HandlerWatch, InjectReport, Sampler};
use super::Args;
use anyhow::Result;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tdmap_monitor::{Config, Fault, Monitor};
use tdmap_sharing::{
    data_metrics, thread_metrics, DataMetrics, Metric, SharingMatrix, ThreadMetrics,
};
use tdmap_sys::perf::{FaultSample, FaultSource};
use tdmap_sys::{FsRoot, GatedChild};
use tdmap_topo::Topology;

/// How long one wait for samples lasts at most when the kernel has no pidfds, so that
/// the end of the program is noticed within this delay.
const TICK: Duration = Duration::from_millis(20);

/// The run's options, checked before the program starts.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The decision period.
    pub period: Duration,
    /// What the monitor decides.
    pub cfg: Config,
    /// Apply nothing.
    pub dry_run: bool,
    /// A static mapping: OS CPU of thread k.
    pub static_map: Option<Vec<usize>>,
    /// Where samples come from.
    pub sampler: Sampler,
    /// libmai.so, preloaded with its automatic mode on (`--mai-auto`).
    pub mai: Option<PathBuf>,
    /// The matrix to compare the detection with (`--reference`).
    pub reference: Option<super::reference::Reference>,
}

impl Settings {
    /// Checks every option; bad ones are input errors (exit 2).
    pub fn from_args(args: &Args) -> Result<Settings> {
        let algorithm = super::parse_algorithm(args)?;
        if args.period == 0 {
            return Err(crate::exit::input("--period must be at least 1 ms"));
        }
        if !(0.0..1.0).contains(&args.margin) {
            return Err(crate::exit::input("--margin must be in [0, 1)"));
        }
        if !(args.sub_block.is_power_of_two() && (64..=4096).contains(&args.sub_block)) {
            return Err(crate::exit::input(
                "--sub-block must be a power of two from 64 to 4096",
            ));
        }
        if let Some(h) = &args.heatmap {
            crate::cmd::analyze::check_heatmap_path(h)?;
        }
        let static_map = args.mapping.as_deref().map(act::read_mapping).transpose()?;
        let sampler = Sampler::choose(args)?;
        let mai = args.mai_auto.then(super::preload::mai).transpose()?;
        let reference = args
            .reference
            .as_deref()
            .map(super::reference::read)
            .transpose()?;
        Ok(Settings {
            period: Duration::from_millis(args.period),
            cfg: Config {
                algorithm,
                margin: args.margin,
                threads: !args.data_only && static_map.is_none(),
                data: !args.threads_only,
                sub_block: args.sub_block,
                sharers: args.sharers,
                ..Config::default()
            },
            dry_run: args.dry_run,
            static_map,
            sampler,
            mai,
            reference,
        })
    }
}

/// Time spent in each part of the monitor.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct Times {
    /// Draining the rings and injecting soft-dirty faults.
    pub sampling: Duration,
    /// Feeding the sharing model.
    pub model: Duration,
    /// Computing thread mappings.
    pub mapping: Duration,
    /// Pinning threads, querying and moving pages.
    pub migration: Duration,
}

impl Times {
    /// All parts together.
    pub fn total(&self) -> Duration {
        self.sampling + self.model + self.mapping + self.migration
    }
}

/// What the run saw and did.
#[derive(Debug)]
pub struct Outcome {
    /// The program's exit code (128 + signal if killed).
    pub exit_code: i32,
    /// Wall time from release to exit.
    pub wall: Duration,
    /// Periods completed.
    pub periods: u64,
    /// Whether soft-dirty extra faults were injected.
    pub soft_dirty: bool,
    /// The inject sampler's settings and handler, when it ran.
    pub inject: Option<InjectReport>,
    /// Samples drained, lost by the kernel, of other processes, of threads beyond the cap.
    pub samples: u64,
    /// Samples of the program on pages sampled before (extra faults: with first-touch
    /// faults only there are almost none).
    pub repeat: u64,
    /// Samples of the program on transparent huge pages (their NUMA vector is the huge
    /// page's).
    pub huge: u64,
    /// Samples the kernel dropped (full rings).
    pub lost: u64,
    /// Samples of child processes (other address spaces), not used.
    pub other_process: u64,
    /// Samples of threads beyond the monitor's capacity.
    pub ignored_threads: u64,
    /// tid of each thread index, with its sample count.
    pub threads: Vec<(u32, u64)>,
    /// The un-aged sharing matrix of the whole run (accesses to shared sub-blocks).
    pub matrix: SharingMatrix,
    /// The same for the amount of shared memory (bytes of sub-blocks shared).
    pub amount: SharingMatrix,
    /// Heterogeneity and amount of sharing of `matrix`.
    pub metrics: ThreadMetrics,
    /// Exclusivity of the pages seen (4 KiB).
    pub data: Option<DataMetrics>,
    /// Counts of what was applied.
    pub actions: Counts,
    /// Time per part.
    pub times: Times,
}

/// Monitors `child` until it exits.
pub fn monitor(
    topo: &Topology,
    s: &Settings,
    child: &mut GatedChild,
    mut src: impl FaultSource,
) -> Result<Outcome> {
    let start = Instant::now();
    let fs = FsRoot::default();
    let pid = child.pid();
    let soft_dirty = s.sampler.soft_dirty();
    let mut watch = HandlerWatch::new(&s.sampler);
    let mut pages = HashSet::new();
    let (mut repeat, mut huge) = (0u64, 0u64);
    let mut mon = Monitor::new(topo, s.cfg)?;
    let mut act = Actions::new(topo, pid, s.dry_run);
    let mut times = Times::default();
    let (mut buf, mut faults) = (Vec::new(), Vec::new());
    let (mut samples, mut lost, mut other) = (0u64, 0u64, 0u64);
    let mut per_thread: Vec<u64> = Vec::new();
    let mut next = start + s.period;
    let mut periods = 0;
    let status = loop {
        if periods == 0 || Instant::now() >= next {
            // Before try_wait reaps the program, while its threads are still listed.
            watch.look(&fs, pid);
        }
        let ended = child.try_wait()?;
        // With a pidfd the program's end wakes the wait; without, poll every TICK.
        let until_next = next.saturating_duration_since(Instant::now());
        let exit_fd = child.exit_fd();
        let timeout = if exit_fd.is_some() {
            until_next
        } else {
            TICK.min(until_next)
        };
        src.wait(timeout, exit_fd)?;
        let t0 = Instant::now();
        buf.clear();
        let d = src.drain(&mut buf)?;
        // Rings are per CPU: merge them in fault order, so thread indexes follow the
        // order in which threads first faulted.
        buf.sort_by_key(|x| x.time);
        (samples, lost) = (samples + d.samples, lost + d.lost);
        other += d.foreign;
        watch.filter(&fs, pid, &mut buf);
        faults.clear();
        faults.extend(buf.iter().filter(|x| x.pid == pid as u32).map(fault));
        other += (buf.len() - faults.len()) as u64;
        repeat += faults
            .iter()
            .filter(|f| !pages.insert(f.addr >> 12))
            .count() as u64;
        huge += faults.iter().filter(|f| mon.on_huge_page(f)).count() as u64;
        if mon.has_new_threads(&faults) {
            // Threads created before this one but not seen faulting yet come first
            // (the inject handler is not one of the program's threads).
            if let Ok(mut tids) = tdmap_sys::task_ids(&fs, pid) {
                watch.look(&fs, pid);
                tids.retain(|&t| Some(t) != watch.tid());
                mon.register_threads(&tids);
            }
        }
        let t1 = Instant::now();
        mon.ingest(&faults)?;
        count_threads(&mon, &faults, &mut per_thread);
        times.sampling += t1 - t0;
        times.model += t1.elapsed();
        if let Some(st) = ended {
            break st;
        }
        if let Some(map) = &s.static_map {
            let t = Instant::now();
            act.pin_static(&mon, map);
            times.migration += t.elapsed();
        }
        if Instant::now() >= next {
            act.period(&mut mon, &mut times)?;
            if soft_dirty {
                // kMAF §3.1.2 extra faults, from outside: the next write to each page faults.
                let t = Instant::now();
                let _ = tdmap_sys::inject_soft_dirty_faults(&fs, pid);
                times.sampling += t.elapsed();
            }
            mon.end_period();
            periods += 1;
            next += s.period;
        }
    };
    let matrix = mon.total_matrix(Metric::Accesses);
    Ok(Outcome {
        exit_code: exit_code(status),
        wall: start.elapsed(),
        periods,
        soft_dirty,
        inject: watch.report(&s.sampler),
        samples,
        repeat,
        huge,
        lost,
        other_process: other,
        ignored_threads: mon.ignored(),
        threads: mon
            .threads()
            .tids()
            .iter()
            .copied()
            .zip(per_thread)
            .collect(),
        amount: mon.total_matrix(Metric::Amount),
        metrics: thread_metrics(&matrix),
        matrix,
        data: data_metrics(mon.table(), 4096).ok(),
        actions: act.into_counts(),
        times,
    })
}

fn fault(x: &FaultSample) -> Fault {
    Fault {
        tid: x.tid,
        addr: x.addr,
        cpu: x.cpu,
        page_size: x.page_size,
    }
}

fn count_threads(mon: &Monitor<'_>, faults: &[Fault], per: &mut Vec<u64>) {
    per.resize(mon.threads().len(), 0);
    let tids = mon.threads().tids();
    for f in faults {
        if let Some(k) = tids.iter().position(|&t| t == f.tid) {
            per[k] += 1;
        }
    }
}

/// The program's exit code, or 128 + the signal that ended it (as shells report it).
pub fn exit_code(st: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.code()
        .or_else(|| st.signal().map(|s| 128 + s))
        .unwrap_or(crate::exit::FAILED)
}
