//! The invariant checker behind `tdmap trace-check`, in the spirit of drcachesim's
//! invariant_checker: it reads the whole file, counts, and lists every problem it finds
//! instead of stopping at the first one it can step over. It never panics.

use crate::chunk::Chunk;
use crate::reader::{Ending, Reader, Totals};
use crate::types::{Header, ProcessInfo, ThreadInfo, TraceStatus};
use serde::Serialize;
use std::collections::HashMap;
use std::io::{Read, Seek};
use std::path::Path;

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Byte offset of the record at fault, when there is one.
    pub offset: Option<u64>,
    /// What is wrong.
    pub message: String,
}

/// What the checker found in one file.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckReport {
    /// The header, if it could be read.
    pub header: Option<Header>,
    /// The thread table.
    pub threads: Vec<ThreadInfo>,
    /// The process table (empty for a trace of one process).
    pub processes: Vec<ProcessInfo>,
    /// Event frames read.
    pub frames: u64,
    /// Accesses read.
    pub accesses: u64,
    /// Of which stores.
    pub writes: u64,
    /// Reads collapsed into access records (V4 repeats), beyond `accesses`; the reader
    /// has checked that each names a read of the frame after its repeats frame.
    pub collapsed_reads: u64,
    /// Faults read.
    pub faults: u64,
    /// Events per thread id.
    pub per_thread: Vec<u64>,
    /// Distinct NUMA nodes named by faults.
    pub fault_nodes: Vec<u32>,
    /// Totals of the end frame, absent for an unfinished trace.
    pub totals: Option<Totals>,
    /// How the trace ends (see [`Ending`]), absent when reading stopped at an error.
    pub ending: Option<Ending>,
    /// True only when the trace is whole and its run ended normally ([`Ending::complete`]).
    pub complete: bool,
    /// Every broken invariant, in file order.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// True when no invariant is broken.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, offset: Option<u64>, message: String) {
        if self.problems.len() < 100 {
            self.problems.push(Problem { offset, message });
        }
    }
}

/// Checks the trace file at `path`.
pub fn check(path: impl AsRef<Path>) -> CheckReport {
    match Reader::open(path) {
        Ok(r) => check_reader(r),
        Err(e) => failed_open(e),
    }
}

/// Checks a trace held in memory (used by the fuzz tests).
pub fn check_bytes(bytes: Vec<u8>) -> CheckReport {
    match Reader::with_source(std::io::Cursor::new(bytes), "<memory>".into()) {
        Ok(r) => check_reader(r),
        Err(e) => failed_open(e),
    }
}

fn failed_open(e: crate::TraceError) -> CheckReport {
    let mut rep = CheckReport::default();
    rep.problem(e.offset(), e.to_string());
    rep
}

#[derive(Default)]
struct Scan {
    last_time: HashMap<u32, u64>,
    cpu_node: HashMap<u32, u32>,
}

fn check_reader<R: Read + Seek>(mut r: Reader<R>) -> CheckReport {
    let mut rep = CheckReport {
        header: Some(r.header().clone()),
        ..Default::default()
    };
    check_header(r.header(), &mut rep);
    rep.per_thread = vec![0; r.header().threads.min(1 << 16) as usize];
    let mut scan = Scan::default();
    loop {
        let at = r.offset();
        match r.next_chunk() {
            Ok(Some(c)) => check_chunk(c, at, &mut scan, &mut rep),
            Ok(None) => break,
            Err(e) => {
                rep.problem(e.offset(), e.to_string());
                break;
            }
        }
    }
    rep.threads = r.threads().to_vec();
    rep.processes = r.processes().to_vec();
    rep.totals = r.totals();
    rep.ending = r.ending();
    if let Some(e) = rep.ending.filter(|e| e.cut_frame) {
        let err = crate::TraceError::Truncated {
            offset: e.ends_at,
            what: "the last frame",
        };
        rep.problem(err.offset(), err.to_string());
    }
    rep.complete = rep.ending.is_some_and(|e| e.complete());
    if rep.totals.is_some() && !r.has_trailer() {
        rep.problem(None, "end frame present but the trailer is missing".into());
    }
    check_end(r.header().status, &mut rep);
    let threads = r.header().threads;
    check_processes(threads, &mut rep);
    rep.fault_nodes = scan.cpu_node.values().copied().collect();
    rep.fault_nodes.sort_unstable();
    rep.fault_nodes.dedup();
    rep
}

fn check_header(h: &Header, rep: &mut CheckReport) {
    for (name, v) in [("page size", h.page_size), ("line size", h.line_size)] {
        if !v.is_power_of_two() {
            rep.problem(Some(20), format!("{name} {v} is not a power of two"));
        }
    }
    if h.line_size > h.page_size {
        rep.problem(Some(24), "line size exceeds page size".into());
    }
}

fn check_chunk(c: &Chunk, at: u64, scan: &mut Scan, rep: &mut CheckReport) {
    rep.frames += 1;
    let t = c.thread();
    if let Some(n) = rep.per_thread.get_mut(t as usize) {
        *n += c.len() as u64;
    }
    let times = match c {
        Chunk::Accesses(a) => {
            rep.accesses += a.addrs.len() as u64;
            rep.writes += a.writes.iter().filter(|&&w| w).count() as u64;
            rep.collapsed_reads += a.repeats.iter().map(|r| r.1 as u64).sum::<u64>();
            if a.sizes.contains(&0) {
                rep.problem(Some(at), format!("thread {t}: an access of size 0"));
            }
            &a.times
        }
        Chunk::Faults(f) => {
            rep.faults += f.addrs.len() as u64;
            for (&cpu, &node) in f.cpus.iter().zip(&f.nodes) {
                if *scan.cpu_node.entry(cpu).or_insert(node) != node {
                    rep.problem(Some(at), format!("cpu {cpu} reported on two NUMA nodes"));
                }
            }
            &f.times
        }
    };
    let last = scan.last_time.entry(t).or_insert(0);
    for &time in times {
        if time < *last {
            rep.problem(
                Some(at),
                format!("thread {t}: time goes back from {} to {time}", *last),
            );
            break;
        }
        *last = time;
    }
}

fn check_end(status: TraceStatus, rep: &mut CheckReport) {
    let mut ids: Vec<u32> = rep.threads.iter().map(|t| t.id).collect();
    ids.sort_unstable();
    if ids.windows(2).any(|w| w[0] == w[1]) {
        rep.problem(None, "thread table names a thread id twice".into());
    }
    // Incomplete with an end frame is no broken invariant: a whole file may record a run
    // that was cut short (a failed write, a program stopped by a signal).
    if status == TraceStatus::Complete && rep.totals.is_none() {
        rep.problem(
            None,
            "status is Complete but the end frame is missing".into(),
        );
    }
}

/// A process table numbers tasks by process: indexes 0, 1, ... in order, each process's
/// tasks right after the previous one's, all of them together every task of the header;
/// a parent before its child; the trace no more complete than its least complete part.
/// A pid may repeat: an exec'd program is a process of its own, and pids are reused.
fn check_processes(threads: u32, rep: &mut CheckReport) {
    let procs = std::mem::take(&mut rep.processes);
    let mut next_task = 0u32;
    for (i, p) in procs.iter().enumerate() {
        let i = i as u32;
        if p.index != i {
            rep.problem(None, format!("process {} listed at position {i}", p.index));
        }
        if p.first_task != next_task {
            rep.problem(
                None,
                format!(
                    "process {i}: tasks start at {}, expected {next_task} (tasks are numbered by process)",
                    p.first_task
                ),
            );
        }
        next_task = p.first_task.saturating_add(p.tasks);
        match p.parent {
            None if i > 0 => rep.problem(None, format!("process {i} has no parent")),
            Some(q) if q >= i => rep.problem(
                None,
                format!("process {i}: parent {q} is not an earlier process"),
            ),
            _ => {}
        }
    }
    if !procs.is_empty() && next_task != threads {
        rep.problem(
            None,
            format!("the processes hold {next_task} tasks, the header {threads}"),
        );
    }
    let status = rep.header.as_ref().map(|h| h.status);
    if status == Some(TraceStatus::Complete)
        && procs.iter().any(|p| p.status != TraceStatus::Complete)
    {
        rep.problem(
            None,
            "status is Complete but a process's part of the trace is not".into(),
        );
    }
    rep.processes = procs;
}
