//! Which sampler `tdmap run` uses. Both read the program's page faults from the kernel
//! (perf, tdmap-sys `PerfSampler`); they differ in where the extra faults of kMAF §3.1.2
//! come from:
//! - `kernel`: soft-dirty write-protection from outside (`/proc/PID/clear_refs`) where
//!   the kernel has it, else first-touch faults only;
//! - `inject`: the tdmap runtime, preloaded into the program (crates/rt, `inject`),
//!   write-protects a sample of its anonymous memory each period with userfaultfd; the
//!   next write to each of those pages faults, and perf records that fault like any other.
//!
//! `auto` takes kernel + soft-dirty where it works, else inject where userfaultfd
//! write-protection works and the runtime library is found, else kernel (first touch).
//! The runtime's handler thread is recognised by its name and left out of the threads.

use tdmap_wire::inject as inject_env;

use super::Args;
use crate::exit::input;
use anyhow::Result;
use serde::Serialize;
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use tdmap_sys::perf::FaultSample;
use tdmap_sys::FsRoot;

/// The sampler chosen for a run.
#[derive(Debug, Clone)]
pub enum Sampler {
    /// perf page faults, plus soft-dirty extra faults when `soft_dirty`.
    Kernel {
        /// Whether `/proc/PID/clear_refs` injects write faults on this kernel.
        soft_dirty: bool,
    },
    /// perf page faults, plus the extra faults the preloaded runtime injects.
    Inject(Inject),
}

/// The inject sampler's settings.
#[derive(Debug, Clone)]
pub struct Inject {
    /// libtdmap_rt.so.
    pub so: PathBuf,
    /// Share of the anonymous memory protected per period.
    pub fraction: f64,
    /// At most this many pages protected per period.
    pub pages: u64,
}

impl Sampler {
    /// Chooses the sampler `--sampler` asks for; errors name the fix.
    pub fn choose(args: &Args) -> Result<Sampler> {
        if !(args.inject_fraction > 0.0 && args.inject_fraction <= 1.0) {
            return Err(input("--inject-fraction must be in (0, 1]"));
        }
        if args.inject_pages == 0 {
            return Err(input("--inject-pages must be at least 1"));
        }
        let soft_dirty = || tdmap_sys::soft_dirty_available(&FsRoot::default()).unwrap_or(false);
        let inject = |so| {
            Sampler::Inject(Inject {
                so,
                fraction: args.inject_fraction,
                pages: args.inject_pages,
            })
        };
        match args.sampler.as_str() {
            "kernel" => Ok(Sampler::Kernel {
                soft_dirty: soft_dirty(),
            }),
            "inject" => {
                tdmap_sys::uffd::wp_probe().map_err(|e| {
                    input(format!(
                        "--sampler inject needs userfaultfd write-protection: {e}"
                    ))
                })?;
                Ok(inject(runtime_so()?))
            }
            "auto" if soft_dirty() => Ok(Sampler::Kernel { soft_dirty: true }),
            "auto" => Ok(match (tdmap_sys::uffd::wp_probe(), runtime_so()) {
                (Ok(()), Ok(so)) => inject(so),
                _ => Sampler::Kernel { soft_dirty: false },
            }),
            s => Err(input(format!(
                "unknown --sampler '{s}'; use auto, kernel or inject"
            ))),
        }
    }

    /// Its name in the report.
    pub fn name(&self) -> &'static str {
        match self {
            Sampler::Kernel { .. } => "kernel",
            Sampler::Inject(_) => "inject",
        }
    }

    /// Whether the monitor injects soft-dirty faults each period.
    pub fn soft_dirty(&self) -> bool {
        matches!(self, Sampler::Kernel { soft_dirty: true })
    }

    /// The library to preload: for inject, the runtime.
    pub fn preload(&self) -> Option<&Path> {
        match self {
            Sampler::Inject(i) => Some(&i.so),
            Sampler::Kernel { .. } => None,
        }
    }

    /// Variables to set in the program's environment besides `LD_PRELOAD` (run/preload.rs):
    /// for inject, the runtime's settings.
    pub fn env(&self, period_ms: u64) -> Vec<(OsString, OsString)> {
        let Sampler::Inject(i) = self else {
            return Vec::new();
        };
        let settings = inject_env::Settings {
            period_ms,
            fraction: i.fraction,
            pages: i.pages,
            monitor: std::process::id() as i32,
            announce_fd: None,
        };
        vec![(inject_env::ENV.into(), settings.encode().into())]
    }
}

/// libtdmap_rt.so: `$TDMAP_RT_SO`, else beside the tdmap binary.
fn runtime_so() -> Result<PathBuf> {
    super::preload::library("TDMAP_RT_SO", "libtdmap_rt.so", "tdmap-rt")
}

/// What the report says about the inject sampler.
#[derive(Debug, Clone, Serialize)]
pub struct InjectReport {
    /// Share of the anonymous memory protected per period.
    pub fraction: f64,
    /// At most this many pages protected per period.
    pub pages_per_period: u64,
    /// The runtime's handler thread, if it was seen running in the program.
    pub handler_tid: Option<u32>,
    /// Samples of the handler thread itself (left out of the model).
    pub handler_samples: u64,
}

/// Finds the inject runtime's handler thread in the program and drops its samples.
#[derive(Debug, Default)]
pub struct HandlerWatch {
    active: bool,
    tid: Option<u32>,
    checked: HashSet<u32>,
    samples: u64,
}

impl HandlerWatch {
    /// A watch that looks for the handler only when the sampler is inject.
    pub fn new(sampler: &Sampler) -> HandlerWatch {
        HandlerWatch {
            active: matches!(sampler, Sampler::Inject(_)),
            ..HandlerWatch::default()
        }
    }

    fn is_handler(fs: &FsRoot, pid: i32, tid: u32) -> bool {
        fs.read(format!("/proc/{pid}/task/{tid}/comm"))
            .is_ok_and(|c| c.trim_end() == inject_env::THREAD_NAME)
    }

    /// Removes the handler's samples from `buf`. The handler announces itself with a
    /// fault on the beacon page; failing that, each new thread's name is checked.
    pub fn filter(&mut self, fs: &FsRoot, pid: i32, buf: &mut Vec<FaultSample>) {
        if !self.active {
            return;
        }
        for s in buf.iter().filter(|s| s.pid == pid as u32) {
            if self.tid.is_some() {
                break;
            }
            if s.addr >> 12 == inject_env::BEACON >> 12
                || (self.checked.insert(s.tid) && Self::is_handler(fs, pid, s.tid))
            {
                self.tid = Some(s.tid);
            }
        }
        if let Some(t) = self.tid {
            let before = buf.len();
            buf.retain(|s| s.tid != t);
            self.samples += (before - buf.len()) as u64;
        }
    }

    /// Looks for the handler among the program's threads until it is found (it may
    /// never fault, and then [`HandlerWatch::filter`] never meets it).
    pub fn look(&mut self, fs: &FsRoot, pid: i32) {
        if !self.active || self.tid.is_some() {
            return;
        }
        let tasks = tdmap_sys::task_ids(fs, pid).unwrap_or_default();
        self.tid = tasks.into_iter().find(|&t| Self::is_handler(fs, pid, t));
    }

    /// The handler's tid, once found.
    pub fn tid(&self) -> Option<u32> {
        self.tid
    }

    /// The report's part, for the inject sampler.
    pub fn report(&self, sampler: &Sampler) -> Option<InjectReport> {
        let Sampler::Inject(i) = sampler else {
            return None;
        };
        Some(InjectReport {
            fraction: i.fraction,
            pages_per_period: i.pages,
            handler_tid: self.tid,
            handler_samples: self.samples,
        })
    }
}
