//! What one watched run saw and did: the loop's result, from which `tdmap run` builds its
//! report.

use crate::actuator::Counts;
use crate::engine::Times;
use crate::procs::Process;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tdmap_sharing::{DataMetrics, SharingMatrix, ThreadMetrics};

/// Samples by what became of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleCounts {
    /// Samples drained from the source.
    pub taken: u64,
    /// Samples on pages sampled before: the extra faults (with first-touch faults only
    /// there are almost none).
    pub repeat: u64,
    /// Samples on transparent huge pages (their NUMA vector is the huge page's).
    pub huge_page: u64,
    /// Samples the kernel dropped (full rings).
    pub lost: u64,
    /// Samples of processes the program does not follow (system-wide events), not used.
    pub other_process: u64,
    /// Samples whose page has no key (more processes or a larger shared object than
    /// keys hold), not used.
    #[serde(default)]
    pub unkeyed: u64,
    /// Samples of threads beyond the monitor's capacity.
    pub ignored_threads: u64,
}

/// The inject runtime's handler thread, as the run knew it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerReport {
    /// Its tid, as the runtime announced it.
    pub tid: Option<u32>,
    /// Its samples, left out of the model.
    pub samples: u64,
}

/// One period of the run, for a timeline: what came in and what was done during it.
/// Counts are of this period only; with --dry-run the planned counts say what would have
/// been done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Period {
    /// When the period ended, in ms since the program was released.
    pub end_ms: u64,
    /// Samples drained during it.
    pub samples: u64,
    /// Threads pinned to a new PU (thread migrations).
    pub pins: u64,
    /// Pins decided, applied or not.
    pub pins_planned: u64,
    /// Pages moved to another node.
    pub pages_moved: u64,
    /// Page moves decided, applied or not.
    pub moves_planned: u64,
}

impl Period {
    /// The period that ended at `end_ms`: `now` less `before`, two snapshots of the
    /// run's running totals (samples taken, actions).
    pub fn between(end_ms: u64, before: (u64, &Counts), now: (u64, &Counts)) -> Period {
        let (b, n) = (before.1, now.1);
        Period {
            end_ms,
            samples: now.0 - before.0,
            pins: n.threads_pinned - b.threads_pinned,
            pins_planned: n.pins_planned - b.pins_planned,
            pages_moved: n.pages_moved - b.pages_moved,
            moves_planned: n.moves_planned - b.moves_planned,
        }
    }
}

/// What the run saw and did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The program's exit code (128 + signal if killed).
    pub exit_code: i32,
    /// Wall time from release to exit.
    pub wall: Duration,
    /// Periods completed.
    pub periods: u64,
    /// Samples by fate.
    pub samples: SampleCounts,
    /// tid of each thread index, with its sample count.
    pub threads: Vec<(u32, u64)>,
    /// pid of each thread index.
    pub thread_pids: Vec<u32>,
    /// The processes seen, followed or left alone, in the order first seen.
    pub processes: Vec<Process>,
    /// Tasks (pid, tid) beyond the monitor's capacity: their samples were not used.
    pub untracked: Vec<(u32, u32)>,
    /// How pages were keyed.
    pub keying: String,
    /// The un-aged sharing matrix of the whole run (accesses to shared sub-blocks).
    pub matrix: SharingMatrix,
    /// The same for the amount of shared memory (bytes of sub-blocks shared).
    pub amount: SharingMatrix,
    /// Heterogeneity and amount of sharing of `matrix`.
    pub metrics: ThreadMetrics,
    /// Exclusivity of the pages seen (4 KiB).
    pub data: Option<DataMetrics>,
    /// What was decided and applied.
    pub actions: Counts,
    /// The inject handler, when the runtime was preloaded.
    pub handler: HandlerReport,
    /// Time per part.
    pub times: Times,
    /// Each period in order, the last one cut short by the program's end.
    pub timeline: Vec<Period>,
}
