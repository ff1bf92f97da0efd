//! The report of `tdmap run` at exit: threads and samples, the sharing matrix and kMAF's
//! metrics, the migrations, and the time spent per part with an overhead estimate.
//!
//! The overhead estimate is the monitor's busy time (all parts) as a share of the
//! program's wall time: the CPU time tdmap took that the program could have used. It is
//! an upper bound of the slowdown when tdmap competes for the program's CPUs, and
//! overstates it when a CPU is idle; `make bench-run` measures the real slowdown.

use super::act::Counts;
use super::looper::{Outcome, Settings};
use super::reference::Comparison;
use super::sampler::InjectReport;
use super::Args;
use anyhow::{Context, Result};
use serde::Serialize;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Write as _;
use tdmap_sharing::{DataMetrics, Metric, SharingMatrix, ThreadMetrics};
use tdmap_sys::perf::Scope;
use tdmap_topo::Topology;

/// One thread as the report shows it.
#[derive(Debug, Serialize)]
struct ThreadRow {
    thread: usize,
    tid: u32,
    samples: u64,
    /// OS CPU tdmap pinned it to last (decided only, with --dry-run).
    pinned_cpu: Option<usize>,
    /// NUMA node (logical) of that CPU.
    node: Option<usize>,
}

#[derive(Debug, Serialize)]
struct Samples {
    taken: u64,
    /// Samples on pages sampled before: the extra faults.
    repeat: u64,
    /// Samples on transparent huge pages, counted per huge page.
    huge_page: u64,
    lost: u64,
    other_process: u64,
    ignored_threads: u64,
}

#[derive(Debug, Serialize)]
struct TimesMs {
    sampling: f64,
    model: f64,
    mapping: f64,
    migration: f64,
    total: f64,
}

/// Everything `tdmap run` reports.
#[derive(Debug, Serialize)]
pub struct Report<'o> {
    program: String,
    exit_code: i32,
    wall_s: f64,
    sampler: &'static str,
    /// Whose faults the perf events counted: "system-wide" (filtered to the program) or
    /// "per-process" (inherited by its threads; switched with them at every context switch).
    events: &'static str,
    soft_dirty_extra_faults: bool,
    inject: Option<&'o InjectReport>,
    /// libmai's automatic mode was preloaded (`--mai-auto`).
    mai_auto: bool,
    mode: &'static str,
    algorithm: &'static str,
    period_ms: u128,
    periods: u64,
    /// Sharing granularity: bytes per sub-block, and sharers kept per sub-block.
    sub_block: u32,
    sharers: String,
    samples: Samples,
    threads: Vec<ThreadRow>,
    matrix: &'o SharingMatrix,
    /// The amount of shared memory per pair (bytes), the trace paper's second metric.
    matrix_amount: &'o SharingMatrix,
    metrics: &'o ThreadMetrics,
    /// The detection against `--reference`.
    reference: Option<Comparison>,
    data: Option<&'o DataMetrics>,
    migrations: &'o Counts,
    time_ms: TimesMs,
    overhead_pct: f64,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl<'o> Report<'o> {
    /// The report of one run.
    pub fn new(
        topo: &Topology,
        s: &Settings,
        prog: &OsStr,
        o: &'o Outcome,
        events: Scope,
    ) -> Report<'o> {
        let pinned = |k: usize| o.actions.pinned.get(k).copied().flatten();
        let threads = o
            .threads
            .iter()
            .enumerate()
            .map(|(k, &(tid, samples))| ThreadRow {
                thread: k,
                tid,
                samples,
                pinned_cpu: pinned(k),
                node: pinned(k)
                    .and_then(|c| topo.pu_by_os(c))
                    .map(|pu| topo.node_of_pu(pu)),
            })
            .collect();
        let t = &o.times;
        Report {
            program: prog.to_string_lossy().into_owned(),
            exit_code: o.exit_code,
            wall_s: o.wall.as_secs_f64(),
            sampler: s.sampler.name(),
            events: events.name(),
            soft_dirty_extra_faults: o.soft_dirty,
            inject: o.inject.as_ref(),
            mai_auto: s.mai.is_some(),
            mode: mode(s),
            algorithm: s.cfg.algorithm.name(),
            period_ms: s.period.as_millis(),
            periods: o.periods,
            sub_block: s.cfg.sub_block,
            sharers: s.cfg.sharers.to_string(),
            samples: Samples {
                taken: o.samples,
                repeat: o.repeat,
                huge_page: o.huge,
                lost: o.lost,
                other_process: o.other_process,
                ignored_threads: o.ignored_threads,
            },
            threads,
            matrix: &o.matrix,
            matrix_amount: &o.amount,
            metrics: &o.metrics,
            reference: s.reference.as_ref().map(|r| {
                let detected = match r.metric {
                    Metric::Accesses => &o.matrix,
                    Metric::Amount => &o.amount,
                };
                Comparison::new(r, detected, s.cfg.sub_block)
            }),
            data: o.data.as_ref(),
            migrations: &o.actions,
            time_ms: TimesMs {
                sampling: ms(t.sampling),
                model: ms(t.model),
                mapping: ms(t.mapping),
                migration: ms(t.migration),
                total: ms(t.total()),
            },
            overhead_pct: 100.0 * t.total().as_secs_f64() / o.wall.as_secs_f64().max(1e-9),
        }
    }

    /// Writes the report (text or JSON, to stderr or `--report FILE`) and the heatmap.
    pub fn emit(&self, args: &Args, o: &Outcome) -> Result<()> {
        if let Some(path) = &args.heatmap {
            crate::cmd::analyze::write_matrix_heatmap(path, &o.matrix, Metric::Accesses)?;
        }
        let text = if args.json {
            serde_json::to_string_pretty(self)? + "\n"
        } else {
            self.text()
        };
        match &args.report {
            Some(p) => crate::paths::replace(p, text.as_bytes())
                .with_context(|| format!("cannot write the report to {}", p.display())),
            None => Ok(std::io::stderr().write_all(text.as_bytes())?),
        }
    }

    fn text(&self) -> String {
        let mut s = String::new();
        let _ = self.write_text(&mut s);
        s
    }

    fn write_text(&self, s: &mut String) -> std::fmt::Result {
        writeln!(
            s,
            "== tdmap run: {} exited with {} after {:.2} s",
            self.program, self.exit_code, self.wall_s
        )?;
        writeln!(
            s,
            "mode {}, sampler {}{}, {} perf events, algorithm {}, period {} ms, {} periods, {}-byte sub-blocks with {} sharers",
            self.mode,
            self.sampler,
            self.sampler_detail(),
            self.events,
            self.algorithm,
            self.period_ms,
            self.periods,
            self.sub_block,
            self.sharers
        )?;
        writeln!(s, "{}", self.mai_line())?;
        let sm = &self.samples;
        writeln!(
            s,
            "samples: {} taken ({} on pages sampled before, {} on huge pages), {} lost, {} of other processes, {} of untracked threads",
            sm.taken, sm.repeat, sm.huge_page, sm.lost, sm.other_process, sm.ignored_threads
        )?;
        writeln!(s, "threads seen: {}", self.threads.len())?;
        for t in &self.threads {
            let pin = match (t.pinned_cpu, t.node) {
                (Some(c), Some(n)) => format!("pinned to CPU {c} (node {n})"),
                _ => "not pinned".into(),
            };
            writeln!(
                s,
                "  thread {} tid {} samples {} {}",
                t.thread, t.tid, t.samples, pin
            )?;
        }
        writeln!(
            s,
            "sharing (kMAF Eq. 1-2, normalised): heterogeneity {:.4}, amount {:.4}",
            self.metrics.heterogeneity, self.metrics.amount
        )?;
        for (i, j, w) in self.matrix.top_pairs(5) {
            writeln!(s, "  threads {i}-{j}: {w} sharing events")?;
        }
        if let Some(r) = &self.reference {
            writeln!(s, "{}", r.line(self.sub_block))?;
        }
        if let Some(d) = self.data {
            writeln!(
                s,
                "data (kMAF Eq. 4): {} pages, average exclusivity {:.1}%",
                d.pages,
                100.0 * d.avg_exclusivity
            )?;
        }
        let m = self.migrations;
        writeln!(
            s,
            "thread mappings {}, threads pinned {} ({} failed)",
            m.mappings, m.thread_moves, m.thread_move_failures
        )?;
        writeln!(
            s,
            "pages passing Eq. 6 {}, moved {} in {} batches ({} failed)",
            m.page_candidates, m.page_moves, m.move_batches, m.page_move_failures
        )?;
        let t = &self.time_ms;
        writeln!(s, "time: sampling {:.1} ms, model {:.1} ms, mapping {:.1} ms, migration {:.1} ms; total {:.1} ms = {:.2}% of the wall time (overhead estimate)",
            t.sampling, t.model, t.mapping, t.migration, t.total, self.overhead_pct)
    }
}

impl Report<'_> {
    /// Where the extra faults came from, for the text report.
    fn sampler_detail(&self) -> String {
        match self.inject {
            Some(i) => format!(
                " (userfaultfd write-protect extra faults, {} of the memory and at most {} pages per period; {})",
                i.fraction,
                i.pages_per_period,
                match i.handler_tid {
                    Some(t) => format!("handler thread {t}"),
                    None => "handler thread not seen: a static program, or one that ended at once?".into(),
                }
            ),
            None if self.soft_dirty_extra_faults => " + soft-dirty extra faults".into(),
            None => " (first-touch faults only)".into(),
        }
    }

    /// Whether libmai chose the first placement, for the text report.
    fn mai_line(&self) -> &'static str {
        if self.mai_auto {
            "mai-auto: on (libmai's automatic policies at allocation, MApp §3.2; its choices are on the program's stderr or in MAI_AUTO_LOG)"
        } else {
            "mai-auto: off"
        }
    }
}

fn mode(s: &Settings) -> &'static str {
    match (s.dry_run, s.static_map.is_some(), s.cfg.threads, s.cfg.data) {
        (true, ..) => "dry-run",
        (_, true, ..) => "static mapping",
        (_, _, true, true) => "full",
        (_, _, true, false) => "threads-only",
        _ => "data-only",
    }
}
