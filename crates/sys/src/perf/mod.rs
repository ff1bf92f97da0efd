//! The `kernel` sampler of `tdmap run`: the program's page faults, read from the kernel
//! through perf software events, as a stream of [`FaultSample`]s (kMAF §3.1.1: the
//! faulting address and thread of every page fault, here without a kernel patch).
//!
//! One `PERF_COUNT_SW_PAGE_FAULTS` event is opened per online CPU, in one of two
//! [`Scope`]s. Per process: the event belongs to the target task, with `inherit` so that
//! the threads and processes it creates later are counted too (an inherited per-task
//! event with cpu = -1 cannot be mmapped; inheritance follows fork and clone). System-wide:
//! the event counts every task on its CPU and the sampler keeps the samples of the target
//! and of every process descending from it ([`crate::procs::Family`]: its children,
//! their children, what a shell or `mpirun` starts). The second is what `tdmap run` prefers:
//! a per-task event is switched out and in with its thread at every context switch, which
//! cost programs that sleep in barriers thousands of times a second 4-7% more CPU time on
//! the development VM, while a CPU-wide event costs nothing until a fault. It needs root,
//! CAP_PERFMON or perf_event_paranoid <= 0; [`Scope::Auto`] falls back to per process.
//! Each CPU's ring buffer is drained by the pure parser in `record`. The monitor sees
//! only the [`FaultSource`] trait, so its tests can replay samples with [`ReplaySource`].
//!
//! Faults the kernel takes on user addresses inside syscalls (e.g. `read` into a fresh
//! buffer) are not sampled: `exclude_kernel` filters them, as it must at
//! perf_event_paranoid 2. When a ring is full the kernel drops samples and reports how
//! many (`PERF_RECORD_LOST`) only with its next record, once the ring has room again;
//! a loss in the last moments of a program may therefore go unreported. Size the rings
//! (`SamplerConfig::ring_pages`) for the drain period.

mod attr;
mod record;
mod ring;

pub use record::{Drained, Task};

use crate::procs::Family;
use crate::{parse_list, FsRoot, SysError};
use ring::Ring;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

/// One sampled page fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FaultSample {
    /// The process (thread-group) id.
    pub pid: u32,
    /// The faulting thread.
    pub tid: u32,
    /// The faulting virtual address.
    pub addr: u64,
    /// The CPU the thread ran on when it faulted.
    pub cpu: u32,
    /// The kernel's perf clock at the fault, in nanoseconds.
    pub time: u64,
    /// Bytes of the page that mapped `addr` at the fault: 2 MiB for a transparent huge
    /// page, 4 KiB for a base page, 0 when nothing mapped it yet (a first touch) or the
    /// kernel cannot tell (before Linux 5.11).
    pub page_size: u64,
}

/// A stream of page-fault samples: the perf sampler, or a fake in tests.
pub trait FaultSource {
    /// Appends every sample available now to `out`, without blocking.
    fn drain(&mut self, out: &mut Vec<FaultSample>) -> Result<Drained, SysError>;
    /// Blocks until samples may be available, `also` is readable (e.g. the program's
    /// pidfd, so that its end is noticed at once) or `timeout` passes.
    fn wait(&mut self, timeout: Duration, also: Option<BorrowedFd<'_>>) -> Result<(), SysError>;
    /// Moves the program's process events (forks, mmaps) drained so far to `out`, in
    /// ring order; sources that report none leave it as is.
    fn take_tasks(&mut self, out: &mut Vec<Task>) {
        let _ = out;
    }
}

/// poll(2)'s timeout for `timeout`, rounded up to whole milliseconds: rounded down, the
/// last millisecond before a deadline is a poll of 0 ms, again and again, a busy wait
/// that took about 1 % of a CPU at one deadline per 100 ms period.
fn poll_ms(timeout: Duration) -> i32 {
    timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
}

/// Whose faults the perf events count (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// System-wide when this process may open CPU-wide events, else per process.
    Auto,
    /// Events owned by the target and inherited by the threads it creates.
    Process,
    /// CPU-wide events, filtered to the target's samples.
    System,
}

impl Scope {
    /// The scope's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Auto => "auto",
            Scope::Process => "per-process",
            Scope::System => "system-wide",
        }
    }
}

/// How the perf sampler samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplerConfig {
    /// One sample every `period` faults (1: every fault).
    pub period: u64,
    /// Data pages of each per-CPU ring, a power of two.
    pub ring_pages: usize,
    /// Whose faults the events count.
    pub scope: Scope,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        // 128 pages (512 KiB) hold about 13 000 samples per CPU between drains.
        SamplerConfig {
            period: 1,
            ring_pages: 128,
            scope: Scope::Auto,
        }
    }
}

/// The perf page-fault sampler attached to one process and the threads it creates.
#[derive(Debug)]
pub struct PerfSampler {
    rings: Vec<Ring>,
    scope: Scope,
    family: Family,
    /// Process events of the program drained and not taken yet.
    tasks: Vec<Task>,
    scratch: Vec<Task>,
}

impl PerfSampler {
    /// Attaches to `pid` on every CPU online under `fs`. Threads `pid` already has are
    /// not followed per process, only `pid` itself and what it creates from now on:
    /// attach before the program starts its threads.
    pub fn open(fs: &FsRoot, pid: i32, cfg: &SamplerConfig) -> Result<PerfSampler, SysError> {
        let online = "/sys/devices/system/cpu/online";
        let text = fs.read(online)?;
        let cpus = parse_list(&text).ok_or_else(|| SysError::Parse {
            path: fs.path(online),
            what: format!("not a CPU list: {:?}", text.trim()),
        })?;
        // Wake a poller when a quarter of the ring is full.
        let wakeup = (cfg.ring_pages * crate::page_size() / 4).min(u32::MAX as usize) as u32;
        let open_all = |inherit: bool, target: i32| -> Result<Vec<Ring>, SysError> {
            let attr = attr::Attr::page_faults(cfg.period, wakeup, false, inherit);
            let open = |attr: &attr::Attr| -> Result<Vec<Ring>, SysError> {
                cpus.iter()
                    .map(|&cpu| Ring::open(attr, target, cpu, cfg.ring_pages))
                    .collect()
            };
            match open(&attr) {
                // Kernels before 5.11 refuse the data page size: samples then say 0.
                Err(e) if e.errno() == Some(libc::EINVAL) => open(&attr.without_page_size()),
                r => r,
            }
        };
        let me = |rings, scope| PerfSampler {
            rings,
            scope,
            family: Family::new(fs.clone(), pid as u32),
            tasks: Vec::new(),
            scratch: Vec::new(),
        };
        if cfg.scope != Scope::Process {
            // CPU-wide events name no process: check the target as a per-task event
            // would (it exists, and this process may watch it) before watching everyone.
            attr::probe(pid)?;
            let e = match open_all(false, -1) {
                Ok(rings) => return Ok(me(rings, Scope::System)),
                Err(e) => e,
            };
            match (cfg.scope, e.errno()) {
                (Scope::Auto, Some(libc::EACCES | libc::EPERM)) => {}
                (Scope::System, Some(errno @ (libc::EACCES | libc::EPERM))) => {
                    return Err(SysError::Refused {
                        call: "perf_event_open",
                        err: std::io::Error::from_raw_os_error(errno),
                        fix: "system-wide events need root, CAP_PERFMON or \
                              perf_event_paranoid <= 0; per-process events need none of these",
                    });
                }
                _ => return Err(e),
            }
        }
        Ok(me(open_all(true, pid)?, Scope::Process))
    }

    /// The CPUs with a ring.
    pub fn cpus(&self) -> Vec<usize> {
        self.rings.iter().map(Ring::cpu).collect()
    }

    /// The scope the events were opened in: never [`Scope::Auto`].
    pub fn scope(&self) -> Scope {
        self.scope
    }
}

impl FaultSource for PerfSampler {
    fn take_tasks(&mut self, out: &mut Vec<Task>) {
        out.append(&mut self.tasks);
    }

    fn drain(&mut self, out: &mut Vec<FaultSample>) -> Result<Drained, SysError> {
        let mut total = Drained::default();
        let from = out.len();
        self.scratch.clear();
        for r in &mut self.rings {
            total.add(r.drain(out, &mut self.scratch)?);
        }
        if self.scope == Scope::System {
            // Forks first: a child's samples may be drained after it has exited, when
            // its parents can no longer be read from /proc.
            self.scratch.sort_by_key(Task::time);
            self.family.forked(&self.scratch);
            let family = &mut self.family;
            self.tasks.extend(self.scratch.iter().filter(|t| match t {
                Task::Fork { ppid, .. } => family.follows(*ppid),
                Task::Mmap { pid, .. } | Task::Exec { pid, .. } | Task::Exit { pid, .. } => {
                    family.follows(*pid)
                }
            }));
            let before = out.len();
            let family = &mut self.family;
            let mut k = 0;
            out.retain(|x| {
                k += 1;
                k <= from || family.follows(x.pid)
            });
            let dropped = (before - out.len()) as u64;
            total.samples -= dropped;
            total.foreign += dropped;
        }
        Ok(total)
    }

    fn wait(&mut self, timeout: Duration, also: Option<BorrowedFd<'_>>) -> Result<(), SysError> {
        let mut fds: Vec<libc::pollfd> = self
            .rings
            .iter()
            .map(Ring::fd)
            .chain(also.map(|f| f.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = poll_ms(timeout);
        // SAFETY: `fds` is a live array of fds.len() pollfd entries the kernel may write.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if rc < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(SysError::last_os("poll"));
        }
        Ok(())
    }
}

/// A [`FaultSource`] that hands out prepared batches, one per drain, for tests of the
/// monitor.
#[derive(Debug, Default, Clone)]
pub struct ReplaySource {
    batches: VecDeque<(Vec<FaultSample>, u64)>,
}

impl ReplaySource {
    /// A source that yields `batches` in order, each with the given count of lost samples.
    pub fn new(batches: impl IntoIterator<Item = (Vec<FaultSample>, u64)>) -> Self {
        ReplaySource {
            batches: batches.into_iter().collect(),
        }
    }

    /// Whether every batch has been drained.
    pub fn is_done(&self) -> bool {
        self.batches.is_empty()
    }
}

impl FaultSource for ReplaySource {
    fn drain(&mut self, out: &mut Vec<FaultSample>) -> Result<Drained, SysError> {
        let Some((batch, lost)) = self.batches.pop_front() else {
            return Ok(Drained::default());
        };
        out.extend_from_slice(&batch);
        Ok(Drained {
            samples: batch.len() as u64,
            lost,
            ..Drained::default()
        })
    }

    fn wait(&mut self, _timeout: Duration, _also: Option<BorrowedFd<'_>>) -> Result<(), SysError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(tid: u32) -> FaultSample {
        FaultSample {
            pid: 1,
            tid,
            addr: 0x1000 * u64::from(tid),
            cpu: 0,
            time: 0,
            page_size: 0,
        }
    }

    #[test]
    fn replay_yields_batches_in_order_then_nothing() {
        let mut r = ReplaySource::new([(vec![s(1), s(2)], 0), (vec![s(3)], 5)]);
        let mut out = Vec::new();
        assert_eq!(r.drain(&mut out).unwrap().samples, 2);
        let d = r.drain(&mut out).unwrap();
        assert_eq!((d.samples, d.lost), (1, 5));
        assert!(r.is_done());
        assert_eq!(r.drain(&mut out).unwrap(), Drained::default());
        assert_eq!(out, vec![s(1), s(2), s(3)]);
    }

    #[test]
    fn a_bad_cpu_list_is_named() {
        let dir = std::env::temp_dir().join(format!("tdmap-perf-cpus-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sys/devices/system/cpu")).unwrap();
        std::fs::write(dir.join("sys/devices/system/cpu/online"), "zero\n").unwrap();
        let err = PerfSampler::open(&FsRoot::new(&dir), 1, &SamplerConfig::default()).unwrap_err();
        assert!(err.to_string().contains("cpu/online"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_ring_size_that_is_not_a_power_of_two_is_refused() {
        let cfg = SamplerConfig {
            ring_pages: 3,
            ..SamplerConfig::default()
        };
        let err = PerfSampler::open(&FsRoot::default(), 0, &cfg).unwrap_err();
        assert!(err.to_string().contains("power of two"), "{err}");
    }

    #[test]
    fn a_wait_of_less_than_a_millisecond_still_sleeps() {
        assert_eq!(poll_ms(Duration::ZERO), 0);
        assert_eq!(poll_ms(Duration::from_micros(1)), 1);
        assert_eq!(poll_ms(Duration::from_micros(999)), 1);
        assert_eq!(poll_ms(Duration::from_millis(99)), 99);
        assert_eq!(poll_ms(Duration::from_micros(99_001)), 100);
        assert_eq!(poll_ms(Duration::from_secs(1 << 40)), i32::MAX);
    }
}
