//! The report of `tdmap run` at exit, printed: the typed report (tdmap-monitor's
//! `RunReport`, format `tdmap-run-report`) as JSON, or as text. The lost-samples warning
//! comes first when the kernel dropped more than 1 % of the samples.
//!
//! The overhead estimate is the monitor's busy time (all parts) as a share of the
//! program's wall time: the CPU time tdmap took that the program could have used. It is
//! an upper bound of the slowdown when tdmap competes for the program's CPUs, and
//! overstates it when a CPU is idle; `make bench-run` measures the real slowdown.

use super::reference::Comparison;
use super::sampler::Sampler;
use super::settings::Settings;
use super::Args;
use anyhow::{Context, Result};
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Write as _;
use tdmap_monitor::report::{RunReport, RunSetup};
use tdmap_monitor::{Outcome, Preset};
use tdmap_sharing::Metric;
use tdmap_sys::perf::Scope;
use tdmap_topo::Topology;

/// Lost samples above this share of those taken are flagged in the report's first lines.
const LOST_WARN: f64 = 0.01;

/// The report of one run.
pub fn build(topo: &Topology, s: &Settings, prog: &OsStr, o: &Outcome, events: Scope) -> RunReport {
    let setup = RunSetup {
        program: prog.to_string_lossy().into_owned(),
        sampler: s.sampler.name().into(),
        events: events.name().into(),
        soft_dirty: s.sampler.soft_dirty(),
        inject: match &s.sampler {
            Sampler::Inject(i) => Some((i.fraction, i.pages)),
            Sampler::Kernel { .. } => None,
        },
        mai_auto: s.mai.is_some(),
        dry_run: s.dry_run,
        fixed_mapping: s.fixed.is_some(),
        rules: match s.rules {
            Preset::Run => "run",
            Preset::Paper => "paper",
        }
        .into(),
        cfg: s.cfg,
        period_ms: s.period.as_millis() as u64,
        ring_pages: s.ring_pages,
        reference: s.reference.as_ref().map(|r| {
            let detected = match r.metric {
                Metric::Accesses => &o.matrix,
                Metric::Amount => &o.amount,
            };
            Comparison::of(r, detected, s.cfg.sub_block)
        }),
    };
    RunReport::new(topo, setup, o)
}

/// Writes the report (text or JSON, to stderr or `--report FILE`) and the heatmap.
pub fn emit(r: &RunReport, args: &Args, o: &Outcome, topo: &Topology) -> Result<()> {
    if let Some(path) = &args.heatmap {
        use crate::cmd::heatmap::{write_matrix_heatmap, Counted, Places};
        let places = Places::from_pus(topo, &o.actions.planned);
        let counted = Counted::FaultSamples;
        write_matrix_heatmap(path, &o.matrix, counted, &r.program, Some(&places))?;
    }
    let text = if args.json {
        if args.report.is_some() {
            if let Some(w) = lost_warning(r) {
                eprintln!("tdmap: {w}");
            }
        }
        tdmap_format::to_string(r) + "\n"
    } else {
        text(r)
    };
    match &args.report {
        Some(p) => crate::paths::replace(p, text.as_bytes())
            .with_context(|| format!("cannot write the report to {}", p.display())),
        None => Ok(std::io::stderr().write_all(text.as_bytes())?),
    }
}

/// The lost-samples warning, when more than [`LOST_WARN`] of the samples were lost.
fn lost_warning(r: &RunReport) -> Option<String> {
    let share = r.lost_share();
    (share > LOST_WARN).then(|| {
        format!(
            "warning: the kernel lost {} samples, {:.1}% of those taken: the perf rings filled up between two drains (a loaded machine, or a burst of faults), so the matrix is thinner than the run; raise --ring-pages (now {}) or give tdmap a CPU the program does not use",
            r.samples.lost,
            100.0 * share,
            r.ring_pages
        )
    })
}

fn text(r: &RunReport) -> String {
    let mut s = String::new();
    let _ = write_text(r, &mut s);
    s
}

fn write_text(r: &RunReport, s: &mut String) -> std::fmt::Result {
    writeln!(
        s,
        "== tdmap run: {} exited with {} after {:.2} s",
        r.program, r.exit_code, r.wall_s
    )?;
    if let Some(w) = lost_warning(r) {
        writeln!(s, "{w}")?;
    }
    writeln!(s, "{}", super::energy::line(r.energy.as_ref()))?;
    writeln!(
        s,
        "mode {}, kMAF rules {}, sampler {}{}, {} perf events, algorithm {}, period {} ms, {} periods, {}-byte sub-blocks with {} sharers",
        r.mode,
        r.rules,
        r.sampler,
        sampler_detail(r),
        r.events,
        r.algorithm,
        r.period_ms,
        r.periods,
        r.sub_block,
        r.sharers
    )?;
    writeln!(s, "{}", mai_line(r))?;
    let sm = &r.samples;
    writeln!(
        s,
        "samples: {} taken ({} on pages sampled before, {} on huge pages), {} lost, {} of other processes, {} of untracked threads",
        sm.taken, sm.repeat, sm.huge_page, sm.lost, sm.other_process, sm.ignored_threads
    )?;
    write_processes(r, s)?;
    writeln!(s, "threads seen: {}", r.threads.len())?;
    for t in &r.threads {
        let node = t.node.map(|n| format!(" (node {n})")).unwrap_or_default();
        let pin = match (t.pinned_cpu, t.planned_cpu) {
            (Some(c), _) => format!("pinned to CPU {c}{node}"),
            (None, Some(c)) if r.dry_run => format!("would pin to CPU {c}{node}"),
            (None, Some(c)) => match (t.pin_errno, &t.pin_state) {
                (Some(e), Some(state)) => format!(
                    "not pinned (pin to CPU {c} failed: {}, {state})",
                    std::io::Error::from_raw_os_error(e)
                ),
                _ => format!("not pinned (pin to CPU {c} failed)"),
            },
            (None, None) => "not pinned".into(),
        };
        writeln!(
            s,
            "  thread {} tid {}{} samples {} {}",
            t.thread,
            t.tid,
            match (r.processes.len() > 1, t.process) {
                (true, Some(p)) => format!(" (process {p})"),
                _ => String::new(),
            },
            t.samples,
            pin
        )?;
    }
    if !r.untracked.is_empty() {
        let names: Vec<String> = r
            .untracked
            .iter()
            .map(|t| format!("{}/{}", t.pid, t.tid))
            .collect();
        writeln!(
            s,
            "untracked tasks (pid/tid, beyond the task limit of {}; their samples were not used): {}",
            r.threads.len(),
            names.join(" ")
        )?;
    }
    writeln!(
        s,
        "sharing (kMAF Eq. 1-2, normalised): heterogeneity {:.4}, amount {:.4}",
        r.metrics.heterogeneity, r.metrics.amount
    )?;
    for (i, j, w) in r.matrix.top_pairs(5) {
        writeln!(s, "  threads {i}-{j}: {w} sharing events")?;
    }
    if let Some(c) = &r.reference {
        writeln!(s, "{}", Comparison::line(c, r.sub_block))?;
    }
    if let Some(d) = &r.data {
        writeln!(
            s,
            "data (kMAF Eq. 4): {} pages, average exclusivity {:.1}%",
            d.pages,
            100.0 * d.avg_exclusivity
        )?;
    }
    let m = &r.migrations;
    if r.dry_run {
        writeln!(
            s,
            "thread mappings {}, would pin {} threads (dry run: none pinned)",
            m.mappings, m.pins_planned
        )?;
        writeln!(
            s,
            "pages passing Eq. 6 {}, would move {} (dry run: none moved)",
            m.page_candidates, m.moves_planned
        )?;
    } else {
        writeln!(
            s,
            "thread mappings {}, threads pinned {} ({} failed{})",
            m.mappings,
            m.threads_pinned,
            m.pin_failures.total(),
            errnos(&m.pin_failures)
        )?;
        writeln!(
            s,
            "pages passing Eq. 6 {}, moved {} in {} batches ({} failed{})",
            m.page_candidates,
            m.pages_moved,
            m.move_batches,
            m.move_failures.total(),
            errnos(&m.move_failures)
        )?;
    }
    let t = &r.time_ms;
    writeln!(s, "time: sampling {:.1} ms, model {:.1} ms, mapping {:.1} ms, migration {:.1} ms; total {:.1} ms = {:.2}% of the wall time (overhead estimate)",
        t.sampling, t.model, t.mapping, t.migration, t.total, r.overhead_pct)
}

/// The processes (one line each) when the program was more than one, and the keying.
fn write_processes(r: &RunReport, s: &mut String) -> std::fmt::Result {
    if r.processes.len() <= 1 {
        return Ok(());
    }
    let followed = r.processes.iter().filter(|p| !p.left_alone).count();
    writeln!(
        s,
        "processes: {followed} followed; pages keyed by {}",
        r.page_keys
    )?;
    if let Some(i) = &r.inject {
        writeln!(s, "inject sampler: {}", i.children)?;
    }
    for p in &r.processes {
        let rank = match (p.rank, p.local_rank) {
            (Some(w), Some(l)) => format!(" rank {w} (local {l})"),
            (Some(w), None) => format!(" rank {w}"),
            _ => String::new(),
        };
        match p.index.filter(|_| !p.left_alone) {
            Some(i) => writeln!(
                s,
                "  process {i} pid {}{rank}: {} threads {:?}: {}",
                p.pid,
                p.threads.len(),
                p.threads,
                p.command
            )?,
            None => writeln!(
                s,
                "  left alone: pid {}{rank} is not yours (a set-user-ID program?), {} threads {:?}, {} samples dropped: {}",
                p.pid, p.threads.len(), p.threads, p.dropped_samples, p.command
            )?,
        }
    }
    Ok(())
}

/// `: ESRCH 2, EINVAL 1` (the errno names), empty without failures.
fn errnos(f: &tdmap_monitor::Failures) -> String {
    let names: Vec<String> = f
        .by_errno
        .iter()
        .map(|&(e, n)| format!("{} {n}", errno_name(e)))
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(": {}", names.join(", "))
    }
}

fn errno_name(e: i32) -> String {
    match e {
        0 => "moved elsewhere".into(),
        3 => format!("ESRCH ({})", tdmap_wire::pin::failure_state(e)),
        22 => format!("EINVAL ({})", tdmap_wire::pin::failure_state(e)),
        1 => "EPERM".into(),
        13 => "EACCES".into(),
        12 => "ENOMEM".into(),
        14 => "EFAULT".into(),
        16 => "EBUSY".into(),
        2 => "ENOENT (page not present)".into(),
        e => format!("errno {e}"),
    }
}

/// Where the extra faults came from, for the text report.
fn sampler_detail(r: &RunReport) -> String {
    match &r.inject {
        Some(i) => format!(
            " (userfaultfd write-protect extra faults, {} of the memory and at most {} pages per period; {})",
            i.fraction,
            i.pages_per_period,
            match i.handler_tid {
                Some(t) => format!("handler thread {t}"),
                None => "no handler thread announced: a static program, or one that ended at once?".into(),
            }
        ),
        None if r.soft_dirty_extra_faults => " + soft-dirty extra faults".into(),
        None => " (first-touch faults only)".into(),
    }
}

/// Whether libmai chose the first placement, for the text report.
fn mai_line(r: &RunReport) -> &'static str {
    if r.mai_auto {
        "mai-auto: on (libmai's automatic policies on static arrays and at allocation, MApp §3.2; its choices are on the program's stderr or in MAI_AUTO_LOG)"
    } else {
        "mai-auto: off"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdmap_monitor::{Config, Outcome, SampleCounts};
    use tdmap_sharing::SharingMatrix;

    fn report(taken: u64, lost: u64) -> RunReport {
        let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let m = SharingMatrix::new(1);
        let o = Outcome {
            exit_code: 0,
            wall: std::time::Duration::from_secs(1),
            periods: 10,
            samples: SampleCounts {
                taken,
                lost,
                ..SampleCounts::default()
            },
            threads: vec![(10, taken)],
            thread_pids: vec![10],
            processes: Vec::new(),
            untracked: Vec::new(),
            keying: "virtual addresses".into(),
            metrics: tdmap_sharing::thread_metrics(&m),
            matrix: m.clone(),
            amount: m,
            data: None,
            actions: Default::default(),
            handler: Default::default(),
            times: Default::default(),
            timeline: Vec::new(),
        };
        let setup = RunSetup {
            program: "p".into(),
            sampler: "kernel".into(),
            events: "system-wide".into(),
            soft_dirty: false,
            inject: None,
            mai_auto: false,
            dry_run: false,
            fixed_mapping: false,
            rules: "run".into(),
            cfg: Config::default(),
            period_ms: 100,
            ring_pages: 128,
            reference: None,
        };
        RunReport::new(&topo, setup, &o)
    }

    /// Issue 21: 397,640 samples were lost on a loaded 8-thread run and the report looked
    /// normal. Above 1 % lost, its second line says so, with the cause and what to change.
    #[test]
    fn lost_samples_above_one_percent_are_said_first() {
        let t = text(&report(100_000, 2_000));
        let second = t.lines().nth(1).unwrap();
        assert!(
            second.starts_with("warning: the kernel lost 2000 samples, 2.0%"),
            "{t}"
        );
        assert!(second.contains("--ring-pages"), "{second}");
        let t = text(&report(100_000, 500));
        assert!(!t.contains("warning"), "0.5 % is not flagged: {t}");
    }
}
