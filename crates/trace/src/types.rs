//! The records a trace holds: its header, per-thread metadata and the two kinds of event.

use serde::Serialize;

/// Versions of the on-disk format, oldest first, as drcachesim's `trace_version_t`.
/// Readers accept every listed version; writers write [`crate::VERSION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[repr(u32)]
pub enum TraceVersion {
    /// First format: fixed little-endian header with program and machine strings,
    /// zstd frames of struct-of-arrays accesses or faults (one thread per frame, each with
    /// a CRC-32), a threads frame, an end frame with totals, and a trailer locating the
    /// threads frame. Address and time columns hold plain deltas.
    V1 = 1,
    /// Address and time columns hold zigzag deltas, byte-shuffled (byte k of every value
    /// stored together) when the frame head's flags byte (byte 1, padding in V1) says so:
    /// the writer shuffles irregular columns, whose zero high bytes then compress to
    /// nothing, so a random-access trace decompresses about 4× faster than in V1.
    V2 = 2,
    /// A processes frame (kind 5) may follow the threads frame: the table of the traced
    /// processes, each with its pid, parent and range of task ids (tasks are numbered by
    /// process, in fork order, then by thread), and how its part of the trace ends.
    /// Addresses of a multi-process trace are page keys (`tdmap_wire::pagekey`).
    V3 = 3,
    /// A repeats frame (kind 6) may precede an accesses frame of the same thread: pairs
    /// (index in that frame, extra reads) for reads that stand for a run of reads of
    /// their line by that thread (spin-waiting collapsed by the runtime; the rule is in
    /// docs/formats.md "Collapsed reads"). Readers attach them to the frame's
    /// `AccessChunk::repeats`; event counts and totals count each such read once.
    V4 = 4,
    /// Accesses frames hold varint columns (`columns.rs`): a base tag per access then
    /// zigzag deltas of addresses from the tagged one of 8 bases (one per interleaved
    /// stream), then zigzag deltas of times, then `size << 1 | write`, each as LEB128,
    /// never shuffled (flags 0); their raw length in the frame head is the columns' actual
    /// length. 4 bytes per strided access before zstd instead of 18, so the writer builds
    /// and compresses less, and gathers compress 4× better. Other frames are as in V4.
    V5 = 5,
    /// Accesses frames hold the stride predictor's symbols (`tdmap_wire::predict`: runs
    /// of predicted accesses as counts, other accesses as literals) and the times as
    /// blocks that step evenly (`tdmap_wire::times`), not one entry per access
    /// (`symbols.rs`); readers replay the predictor, from the initial state at each
    /// frame (frames stay independent) or from a state the frame stores (flag 1).
    /// A strided loop's frame of 65,536 accesses is a few dozen bytes before zstd
    /// instead of 4 per access. Other frames are as in V5.
    V6 = 6,
}

impl TraceVersion {
    /// The version numbered `v`, if this reader knows it.
    pub fn from_u32(v: u32) -> Option<TraceVersion> {
        match v {
            1 => Some(TraceVersion::V1),
            2 => Some(TraceVersion::V2),
            3 => Some(TraceVersion::V3),
            4 => Some(TraceVersion::V4),
            5 => Some(TraceVersion::V5),
            6 => Some(TraceVersion::V6),
            _ => None,
        }
    }
}

/// How the traced run ended, as recorded when the writer finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TraceStatus {
    /// The program ran to its end and the writer finished normally.
    Complete,
    /// The writer never finished (the tracer was killed or the file is still being written).
    Incomplete,
    /// The traced program crashed; the events up to the crash are present.
    Crashed,
}

impl TraceStatus {
    /// The byte stored in the header for this status.
    pub fn to_byte(self) -> u8 {
        match self {
            TraceStatus::Complete => 0,
            TraceStatus::Incomplete => 1,
            TraceStatus::Crashed => 2,
        }
    }

    /// The status a header byte stands for.
    pub fn from_byte(b: u8) -> Option<TraceStatus> {
        match b {
            0 => Some(TraceStatus::Complete),
            1 => Some(TraceStatus::Incomplete),
            2 => Some(TraceStatus::Crashed),
            _ => None,
        }
    }
}

/// What a trace says about the run as a whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Header {
    /// Format version of the file ([`crate::VERSION`] when written by this crate).
    pub version: u32,
    /// Page size of the traced run, in bytes.
    pub page_size: u32,
    /// Cache-line size of the traced machine, in bytes.
    pub line_size: u32,
    /// Number of threads: every event's thread id is below it.
    pub threads: u32,
    /// The program that ran, then its arguments.
    pub program: Vec<String>,
    /// The machine it ran on: a `--machine` spec or a name.
    pub machine: String,
    /// How the run ended.
    pub status: TraceStatus,
}

impl Header {
    /// A header for a new trace of `program` on `machine`, with 4 KiB pages and 64 B lines.
    pub fn new(program: Vec<String>, machine: impl Into<String>) -> Header {
        Header {
            version: crate::VERSION,
            page_size: 4096,
            line_size: 64,
            threads: 0,
            program,
            machine: machine.into(),
            status: TraceStatus::Incomplete,
        }
    }
}

/// Per-thread metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ThreadInfo {
    /// Stable thread id, in creation order from 0; events name threads by it.
    pub id: u32,
    /// The kernel's tid.
    pub os_tid: i32,
    /// The CPU the thread ran on, when known.
    pub cpu: Option<u32>,
}

/// One traced process (V3): its tasks are the threads `first_task..first_task + tasks`,
/// in creation order, so a task names (process, thread) as `(index, task - first_task)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProcessInfo {
    /// 0 for the program started, then its descendants in the order they were forked.
    pub index: u32,
    /// The kernel's process id.
    pub pid: i32,
    /// The index of the process it was forked from; None for process 0.
    pub parent: Option<u32>,
    /// Its first task (thread id of the trace).
    pub first_task: u32,
    /// How many tasks (threads) it had.
    pub tasks: u32,
    /// How its part of the trace ends: Incomplete when the process was killed, failed
    /// to write, or left the instrumented program before its end marker.
    pub status: TraceStatus,
}

impl ProcessInfo {
    /// The (process index, thread in the process) of `task`, if the task is this process's.
    pub fn thread_of(&self, task: u32) -> Option<(u32, u32)> {
        let t = task.checked_sub(self.first_task)?;
        (t < self.tasks).then_some((self.index, t))
    }
}

/// One memory access of an exact trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Access {
    /// Thread id.
    pub thread: u32,
    /// Virtual address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u8,
    /// True for a store.
    pub write: bool,
    /// Order in time: a per-run clock, non-decreasing per thread.
    pub time: u64,
}

/// One page-fault sample of an online detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Fault {
    /// Thread id.
    pub thread: u32,
    /// Faulting virtual address.
    pub addr: u64,
    /// CPU the thread ran on.
    pub cpu: u32,
    /// NUMA node of that CPU.
    pub node: u32,
    /// Order in time, non-decreasing per thread.
    pub time: u64,
}

/// Any event of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Event {
    /// A memory access.
    Access(Access),
    /// A page-fault sample.
    Fault(Fault),
}
