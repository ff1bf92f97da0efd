//! What `tdmap exec` says once the program has ended: the pins the runtime reported
//! (tdmap-wire's `pin` records), each failure with its errno and what it means for the
//! thread, and the threads left beyond the mapping. Text on stderr, or `--json`.

use super::env::Plan;
use super::Args;
use anyhow::{Context, Result};
use serde::Serialize;
use tdmap_wire::pin::{failure_state, Outcome, Record};

/// One thread's pin.
#[derive(Debug, Serialize)]
pub struct Pin {
    /// Its number: main = 0, then creation order.
    pub thread: u32,
    /// Its tid.
    pub tid: u32,
    /// The CPU the mapping gives it.
    pub cpu: u32,
    /// `sched_setaffinity`'s errno, absent when the pin held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errno: Option<u32>,
    /// What the failure means ("CPU not allowed"), absent when the pin held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<&'static str>,
}

/// The summary of one run.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// The mapping's entries.
    pub entries: usize,
    /// `threads` (the runtime pinned them), `omp-only` (OpenMP places only) or
    /// `unpinned` (the runtime could not be preloaded, --best-effort).
    pub mode: &'static str,
    /// Whether the runtime loaded in the program (false: LD_PRELOAD was ignored).
    pub runtime_loaded: bool,
    /// The pins that held.
    pub pinned: Vec<Pin>,
    /// The pins that failed.
    pub failed: Vec<Pin>,
    /// Threads beyond the mapping, not pinned (no --cycle).
    pub beyond: Vec<u32>,
}

fn pin(r: &Record) -> Pin {
    Pin {
        thread: r.thread,
        tid: r.tid,
        cpu: r.cpu,
        errno: (r.errno != 0).then_some(r.errno),
        state: (r.errno != 0).then(|| failure_state(r.errno as i32)),
    }
}

/// What the runtime in process `pid` wrote, for a mapping of `entries` entries.
pub fn read(plan: &Plan, pid: u32, entries: usize, omp_only: bool) -> Result<Summary> {
    let Some(log) = &plan.log else {
        return Ok(Summary {
            entries,
            mode: if omp_only { "omp-only" } else { "unpinned" },
            runtime_loaded: false,
            pinned: Vec::new(),
            failed: Vec::new(),
            beyond: Vec::new(),
        });
    };
    let bytes =
        std::fs::read(&log.file).with_context(|| format!("cannot read {}", log.file.display()))?;
    // A record cut short (the program killed in the middle of a write) is dropped.
    let whole = bytes.len() - bytes.len() % tdmap_wire::pin::RECORD_BYTES;
    let records = Record::decode_all(&bytes[..whole])
        .map_err(|e| anyhow::anyhow!("{}: {e}", log.file.display()))?;
    let o = Outcome::of(&records, pid);
    Ok(Summary {
        entries,
        mode: "threads",
        runtime_loaded: o.loaded,
        pinned: o.pinned.iter().map(pin).collect(),
        failed: o.failed.iter().map(pin).collect(),
        beyond: o.beyond.iter().map(|r| r.thread).collect(),
    })
}

/// Prints the summary on stderr, as text or JSON.
pub fn emit(s: &Summary, args: &Args) -> Result<()> {
    if args.json {
        eprintln!("{}", serde_json::to_string_pretty(s)?);
        return Ok(());
    }
    for line in text(s, args) {
        eprintln!("tdmap: {line}");
    }
    Ok(())
}

/// The text summary, one line per item.
fn text(s: &Summary, args: &Args) -> Vec<String> {
    let name = args.mapping.display();
    let prog = args.command[0].to_string_lossy();
    match s.mode {
        "omp-only" => {
            return vec![format!(
                "exec: OpenMP places of {name} set for {prog} (--omp-only: nothing else pinned)"
            )]
        }
        "unpinned" => {
            return vec![format!(
                "exec: {prog} ran with only the OpenMP places of {name} (--best-effort)"
            )]
        }
        _ => {}
    }
    if !s.runtime_loaded {
        return vec![format!("exec: the tdmap runtime did not load in {prog} (LD_PRELOAD ignored?): only OpenMP places of {name} applied")];
    }
    let mut out = vec![format!(
        "exec: {} thread{} of {prog} pinned as {name} says ({} failed, {} beyond its {} entries)",
        s.pinned.len(),
        if s.pinned.len() == 1 { "" } else { "s" },
        s.failed.len(),
        s.beyond.len(),
        s.entries
    )];
    for f in &s.failed {
        let errno = f.errno.unwrap_or(0) as i32;
        out.push(format!(
            "thread {} (tid {}) not pinned to CPU {}: {} ({})",
            f.thread,
            f.tid,
            f.cpu,
            std::io::Error::from_raw_os_error(errno),
            failure_state(errno)
        ));
    }
    if !s.beyond.is_empty() {
        let threads: Vec<usize> = s.beyond.iter().map(|&t| t as usize).collect();
        out.push(format!(
            "threads {} ran unpinned (on the CPUs the program started with): the mapping has {} entries; map more threads, or pass --cycle",
            tdmap_topo::cpu_list(&threads),
            s.entries
        ));
    }
    out
}
