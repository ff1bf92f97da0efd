//! The report of `tdmap run` (format `tdmap-run-report`): written by `tdmap run --json`,
//! read by tools that follow (`tdmap report`), one typed definition for both.
//!
//! Versions: 1, first typed version (`migrations` holds applied and planned counts apart;
//! per thread `pinned_cpu` is set only for a pin that was applied, `planned_cpu` for every
//! decided one, so a `--dry-run` report has no pinned thread); 2, programs of several
//! processes (issue 19): a `processes` list (command, MPI ranks, threads, left alone),
//! per thread its `pid` and `process`, the `page_keys` used, the `untracked` tasks beyond
//! the task limit, `samples.unkeyed`, and for the inject sampler what its `children` use.

use crate::actuator::Counts;
use crate::config::Config;
use crate::outcome::{Outcome, Period, SampleCounts};
use serde::{Deserialize, Serialize};
use tdmap_sharing::{DataMetrics, Metric, SharingMatrix, Similarity, ThreadMetrics};
use tdmap_topo::Topology;

impl tdmap_format::Versioned for RunReport {
    const FORMAT: &'static str = "tdmap-run-report";
    /// 1: the first typed run report (applied and planned actions apart).
    /// 2: several processes (processes, per-thread pid and process, page keys, untracked).
    const VERSION: u32 = 2;
    const WRITER: &'static str = "tdmap run --json --report FILE";

    fn check(&self) -> Result<(), String> {
        let (n, m) = (self.threads.len(), self.matrix.n());
        if n != m || self.matrix_amount.n() != m {
            return Err(format!("{n} threads but {m}-thread matrices"));
        }
        let procs = self.processes.iter().filter(|p| p.index.is_some()).count();
        if let Some(t) = self
            .threads
            .iter()
            .find(|t| t.process.is_some_and(|p| p as usize >= procs))
        {
            return Err(format!(
                "thread {} names process {:?} of {procs}",
                t.thread, t.process
            ));
        }
        Ok(())
    }
}

/// One thread as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRow {
    /// Its index (creation order).
    pub thread: usize,
    /// Its OS tid.
    pub tid: u32,
    /// Its process's pid.
    pub pid: u32,
    /// Its process's index in `processes` (None if the process was not seen sampling).
    pub process: Option<u32>,
    /// Its samples.
    pub samples: u64,
    /// OS CPU tdmap pinned it to last; None if no pin was applied (always with --dry-run).
    pub pinned_cpu: Option<usize>,
    /// OS CPU the loop last decided for it, applied or not.
    pub planned_cpu: Option<usize>,
    /// NUMA node (logical) of the planned CPU.
    pub node: Option<usize>,
    /// The errno of its last pin, when that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_errno: Option<i32>,
    /// What that errno means for the thread: "thread had exited" (ESRCH), "CPU not
    /// allowed" (EINVAL), ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_state: Option<String>,
}

/// One process of the program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessRow {
    /// Its index among the processes followed (0: the one started); None when it was
    /// left alone from its first sample.
    pub index: Option<u32>,
    /// Whether it was left alone: not the user's (a set-user-ID program), when first seen
    /// or after an exec; its samples from then on were dropped.
    pub left_alone: bool,
    /// Its pid.
    pub pid: u32,
    /// Its command line when first seen.
    pub command: String,
    /// Its MPI world rank (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID).
    pub rank: Option<u32>,
    /// Its node-local MPI rank (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID).
    pub local_rank: Option<u32>,
    /// Its threads, by thread index.
    pub threads: Vec<usize>,
    /// Samples dropped because it was left alone.
    pub dropped_samples: u64,
}

/// A task beyond the task limit: its samples were not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRef {
    /// Its process.
    pub pid: u32,
    /// Its thread.
    pub tid: u32,
}

/// What the inject runtime does in the program's other processes.
pub const INJECT_CHILDREN: &str = "the started process injects; its children (forked, or \
    started by a shell or mpirun) have no handler thread and give the kernel sampler's \
    faults only";

/// The inject sampler's settings and handler, when it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InjectInfo {
    /// Share of the anonymous memory protected per period.
    pub fraction: f64,
    /// At most this many pages protected per period.
    pub pages_per_period: u64,
    /// The runtime's handler thread, as it announced itself.
    pub handler_tid: Option<u32>,
    /// Samples of the handler thread itself (left out of the model).
    pub handler_samples: u64,
    /// Which processes inject ([`INJECT_CHILDREN`]).
    pub children: String,
}

/// The detection against `--reference`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceComparison {
    /// The reference file.
    pub file: String,
    /// Its metric.
    pub metric: Metric,
    /// Its block size in bytes.
    pub block: u64,
    /// Whether its block size is the run's sub-block size.
    pub like_for_like: bool,
    /// Its threads.
    pub threads: usize,
    /// The similarity, None with fewer than two threads.
    pub similarity: Option<Similarity>,
}

/// Time per part, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimesMs {
    /// Draining the rings and injecting extra faults.
    pub sampling: f64,
    /// Feeding the sharing model.
    pub model: f64,
    /// Computing thread mappings.
    pub mapping: f64,
    /// Pinning threads, querying and moving pages.
    pub migration: f64,
    /// All parts.
    pub total: f64,
}

/// How the run was set up, as the binary knows it.
#[derive(Debug, Clone)]
pub struct RunSetup {
    /// The program.
    pub program: String,
    /// The sampler's name.
    pub sampler: String,
    /// Whose faults the perf events counted.
    pub events: String,
    /// Whether soft-dirty extra faults were injected.
    pub soft_dirty: bool,
    /// The inject sampler's fraction and pages per period, when it ran.
    pub inject: Option<(f64, u64)>,
    /// libmai's automatic mode was preloaded.
    pub mai_auto: bool,
    /// Nothing applied.
    pub dry_run: bool,
    /// A static mapping was applied.
    pub fixed_mapping: bool,
    /// Which rules (`run` or `paper`).
    pub rules: String,
    /// The loop's configuration.
    pub cfg: Config,
    /// The period in ms.
    pub period_ms: u64,
    /// Data pages of each per-CPU perf ring.
    pub ring_pages: usize,
    /// The comparison with `--reference`.
    pub reference: Option<ReferenceComparison>,
}

/// Package and DRAM energy over the run, measured through RAPL (`/sys/class/powercap`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeasuredEnergy {
    /// Every package zone, in joules (null when none was readable).
    pub package_j: Option<f64>,
    /// Every DRAM zone, in joules (null when the machine exposes none).
    pub dram_j: Option<f64>,
}

/// Everything `tdmap run` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Always `tdmap-run-report`.
    pub format: String,
    /// This build's version, when written by it.
    pub version: u32,
    /// The program.
    pub program: String,
    /// Its exit code (128 + signal number).
    pub exit_code: i32,
    /// Wall time in seconds.
    pub wall_s: f64,
    /// The sampler: kernel or inject.
    pub sampler: String,
    /// Whose faults the perf events counted: "system-wide" (filtered to the program) or
    /// "per-process" (inherited by its threads).
    pub events: String,
    /// Whether soft-dirty extra faults were injected.
    pub soft_dirty_extra_faults: bool,
    /// The inject sampler, when it ran.
    pub inject: Option<InjectInfo>,
    /// libmai's automatic mode was preloaded (`--mai-auto`).
    pub mai_auto: bool,
    /// full, threads-only, data-only, static mapping or dry-run.
    pub mode: String,
    /// Whether nothing was applied.
    pub dry_run: bool,
    /// The kMAF rules: run (tdmap run's) or paper.
    pub rules: String,
    /// The thread-mapping algorithm.
    pub algorithm: String,
    /// The period.
    pub period_ms: u64,
    /// Periods completed.
    pub periods: u64,
    /// Data pages of each per-CPU perf ring (`--ring-pages`).
    pub ring_pages: usize,
    /// Bytes per sub-block.
    pub sub_block: u32,
    /// Sharers kept per sub-block.
    pub sharers: String,
    /// Samples by fate.
    pub samples: SampleCounts,
    /// How pages were keyed: by address, or across processes by backing object.
    pub page_keys: String,
    /// The processes, followed or left alone, in the order first seen.
    pub processes: Vec<ProcessRow>,
    /// The threads (tasks: process, thread), numbered by tid across processes.
    pub threads: Vec<ThreadRow>,
    /// Tasks beyond the task limit (the monitor's capacity, 256): their samples were not used.
    pub untracked: Vec<TaskRef>,
    /// The un-aged sharing matrix (accesses to shared sub-blocks).
    pub matrix: SharingMatrix,
    /// The amount of shared memory per pair (bytes).
    pub matrix_amount: SharingMatrix,
    /// Heterogeneity and amount of sharing.
    pub metrics: ThreadMetrics,
    /// The detection against `--reference`.
    pub reference: Option<ReferenceComparison>,
    /// Exclusivity of the pages seen.
    pub data: Option<DataMetrics>,
    /// What was decided and applied.
    pub migrations: Counts,
    /// Time per part.
    pub time_ms: TimesMs,
    /// The loop's busy time as a share of the wall time.
    pub overhead_pct: f64,
    /// Each period: samples, thread migrations and page moves (`tdmap report`'s
    /// timeline). Added in version 1 as an optional field: empty in older files.
    #[serde(default)]
    pub timeline: Vec<Period>,
    /// Energy measured through RAPL from the program's start to its end; null when RAPL
    /// is unreadable. Absent in older reports.
    #[serde(default)]
    pub energy: Option<MeasuredEnergy>,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl RunReport {
    /// The report of one run on `topo`.
    pub fn new(topo: &Topology, s: RunSetup, o: &Outcome) -> RunReport {
        let os = |pu: Option<usize>| pu.map(|p| topo.pus[p].os);
        let at = |v: &[Option<usize>], k: usize| v.get(k).copied().flatten();
        let a = &o.actions;
        let threads = o
            .threads
            .iter()
            .enumerate()
            .map(|(k, &(tid, samples))| ThreadRow {
                thread: k,
                tid,
                pid: o.thread_pids.get(k).copied().unwrap_or(0),
                process: o
                    .processes
                    .iter()
                    .find(|p| Some(&p.pid) == o.thread_pids.get(k))
                    .and_then(|p| p.index),
                samples,
                pinned_cpu: os(at(&a.pinned, k)),
                planned_cpu: os(at(&a.planned, k)),
                node: at(&a.planned, k).map(|pu| topo.node_of_pu(pu)),
                pin_errno: a.pin_errno.get(k).copied().flatten(),
                pin_state: a
                    .pin_errno
                    .get(k)
                    .copied()
                    .flatten()
                    .map(|e| tdmap_wire::pin::failure_state(e).to_string()),
            })
            .collect();
        let t = &o.times;
        let c = &s.cfg;
        let (format, version) = tdmap_format::header::<RunReport>();
        RunReport {
            format,
            version,
            program: s.program,
            exit_code: o.exit_code,
            wall_s: o.wall.as_secs_f64(),
            sampler: s.sampler,
            events: s.events,
            soft_dirty_extra_faults: s.soft_dirty,
            inject: s.inject.map(|(fraction, pages)| InjectInfo {
                fraction,
                pages_per_period: pages,
                handler_tid: o.handler.tid,
                handler_samples: o.handler.samples,
                children: INJECT_CHILDREN.into(),
            }),
            mai_auto: s.mai_auto,
            mode: mode(&s.cfg, s.dry_run, s.fixed_mapping).into(),
            dry_run: s.dry_run,
            rules: s.rules,
            algorithm: c.algorithm.name().into(),
            period_ms: s.period_ms,
            periods: o.periods,
            ring_pages: s.ring_pages,
            sub_block: c.sub_block,
            sharers: c.sharers.to_string(),
            samples: o.samples,
            page_keys: o.keying.clone(),
            processes: o
                .processes
                .iter()
                .map(|p| ProcessRow {
                    index: p.index,
                    pid: p.pid,
                    command: p.command.clone(),
                    rank: p.rank,
                    local_rank: p.local_rank,
                    threads: (0..o.thread_pids.len())
                        .filter(|&k| o.thread_pids[k] == p.pid)
                        .collect(),
                    dropped_samples: p.dropped_samples,
                    left_alone: p.left_alone,
                })
                .collect(),
            threads,
            untracked: o
                .untracked
                .iter()
                .map(|&(pid, tid)| TaskRef { pid, tid })
                .collect(),
            matrix: o.matrix.clone(),
            matrix_amount: o.amount.clone(),
            metrics: o.metrics,
            reference: s.reference,
            data: o.data.clone(),
            migrations: a.clone(),
            time_ms: TimesMs {
                sampling: ms(t.sampling),
                model: ms(t.model),
                mapping: ms(t.mapping),
                migration: ms(t.migration),
                total: ms(t.total()),
            },
            overhead_pct: 100.0 * t.total().as_secs_f64() / o.wall.as_secs_f64().max(1e-9),
            timeline: o.timeline.clone(),
            energy: None,
        }
    }

    /// Reads a report written by `tdmap run --json --report FILE`.
    pub fn read(path: &std::path::Path) -> Result<RunReport, tdmap_format::FormatError> {
        tdmap_format::read(path)
    }

    /// Samples the kernel lost, as a share of those taken.
    pub fn lost_share(&self) -> f64 {
        let s = &self.samples;
        s.lost as f64 / s.taken.max(1) as f64
    }
}

fn mode(c: &Config, dry_run: bool, fixed: bool) -> &'static str {
    match (dry_run, fixed, c.threads, c.data) {
        (true, ..) => "dry-run",
        (_, true, ..) => "static mapping",
        (_, _, true, true) => "full",
        (_, _, true, false) => "threads-only",
        _ => "data-only",
    }
}
