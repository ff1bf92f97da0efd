//! What the loop acts through: pin a thread, ask where pages are, move pages. The live
//! kernel ([`crate::live::SysActuator`], over tdmap-sys's `Sys` trait), its recording fake
//! in tests, and the simulated machine (tdmap-sim's kmaf policy) implement it.

use serde::{Deserialize, Serialize};

/// Why an action failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed{}: {what}", errno.map(|e| format!(" (errno {e})")).unwrap_or_default())]
pub struct ActError {
    /// The call that failed (`sched_setaffinity`, `move_pages`).
    pub call: &'static str,
    /// Its errno, when the kernel gave one.
    pub errno: Option<i32>,
    /// What went wrong, in words.
    pub what: String,
}

/// Pins threads and moves pages of the program under watch.
pub trait Actuator {
    /// Pins thread index `thread` (OS tid `tid`) to the topology's logical PU `pu`.
    fn pin(&mut self, thread: usize, tid: u32, pu: usize) -> Result<(), ActError>;
    /// The logical node each page (address of its first byte) is on now; None for a
    /// page not present or unknown, which is left alone.
    fn locate(&mut self, pages: &[u64]) -> Result<Vec<Option<usize>>, ActError>;
    /// Moves each page to its logical node; per page, Ok or the errno it failed with.
    fn move_pages(&mut self, moves: &[(u64, usize)]) -> Result<Vec<Result<(), i32>>, ActError>;
    /// Whether the program may be acted on now (tdmap acts only on the user's own
    /// processes: a program that became another user's, by a setuid exec, is left alone).
    fn permitted(&mut self) -> bool {
        true
    }
    /// The page key of `addr` in process `pid` ([`crate::keys`]), the unit the model and
    /// the moves work on; None if it has none. By default the address: one process.
    fn key(&mut self, pid: u32, addr: u64) -> Option<u64> {
        let _ = pid;
        Some(addr)
    }
    /// Learns a fork or an mmap of the program's processes, which [`Actuator::key`] may
    /// need once the process has gone.
    fn learn(&mut self, t: &tdmap_sys::perf::Task) {
        let _ = t;
    }
    /// How [`Actuator::key`] keys pages, in words for the report.
    fn keying(&self) -> &'static str {
        "virtual addresses (one process)"
    }
}

/// Failures of one kind of action, by errno.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failures {
    /// (errno, count), by errno; errno 0 when the kernel gave none.
    pub by_errno: Vec<(i32, u64)>,
}

impl Failures {
    /// Counts `n` failures with `errno`.
    pub fn add(&mut self, errno: Option<i32>, n: u64) {
        let e = errno.unwrap_or(0);
        match self.by_errno.binary_search_by_key(&e, |x| x.0) {
            Ok(i) => self.by_errno[i].1 += n,
            Err(i) => self.by_errno.insert(i, (e, n)),
        }
    }

    /// All failures.
    pub fn total(&self) -> u64 {
        self.by_errno.iter().map(|x| x.1).sum()
    }
}

/// Counts of what the loop decided and applied. With `--dry-run` nothing is applied:
/// the `*_planned` counts say what would have been.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Thread mappings decided (the first one included).
    pub mappings: u64,
    /// Threads pinned (0 with --dry-run).
    pub threads_pinned: u64,
    /// Pins decided: what was pinned, or would have been with --dry-run.
    pub pins_planned: u64,
    /// Pins that failed, by errno (ESRCH: the thread had exited; EINVAL: CPU not allowed).
    pub pin_failures: Failures,
    /// Pages whose NUMA vector passed Eq. 6.
    pub page_candidates: u64,
    /// Pages moved (0 with --dry-run).
    pub pages_moved: u64,
    /// Page moves decided: what was moved, or would have been with --dry-run.
    pub moves_planned: u64,
    /// Page moves that failed, by errno.
    pub move_failures: Failures,
    /// move_pages calls that moved pages.
    pub move_batches: u64,
    /// Rounds skipped because the process was not the user's.
    pub foreign_skips: u64,
    /// The logical PU each thread index was last pinned to (None with --dry-run).
    #[serde(skip)]
    pub pinned: Vec<Option<usize>>,
    /// The logical PU each thread index was last planned on (pinned or not).
    #[serde(skip)]
    pub planned: Vec<Option<usize>>,
    /// The errno of each thread index's last pin, if it failed (None once one held).
    #[serde(skip)]
    pub pin_errno: Vec<Option<i32>>,
}
