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
//! The runtime's handler thread announces its tid through a pipe before the program's
//! main starts ([`Announce`]), so the loop never numbers it as a program thread.

use tdmap_wire::inject as inject_env;

use super::Args;
use crate::exit::input;
use anyhow::Result;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
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
                Ok(inject(super::preload::runtime()?))
            }
            "auto" if soft_dirty() => Ok(Sampler::Kernel { soft_dirty: true }),
            "auto" => Ok(
                match (tdmap_sys::uffd::wp_probe(), super::preload::runtime()) {
                    (Ok(()), Ok(so)) => inject(so),
                    _ => Sampler::Kernel { soft_dirty: false },
                },
            ),
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
    pub fn env(&self, period_ms: u64, announce_fd: Option<i32>) -> Vec<(OsString, OsString)> {
        let Sampler::Inject(i) = self else {
            return Vec::new();
        };
        let settings = inject_env::Settings {
            period_ms,
            fraction: i.fraction,
            pages: i.pages,
            monitor: std::process::id() as i32,
            announce_fd,
        };
        vec![(inject_env::ENV.into(), settings.encode().into())]
    }
}

/// The inject runtime's announcement channel (tdmap-wire's `announce`): the runtime
/// writes its handler thread's tid into this pipe before the program's main starts.
pub struct Announce {
    pipe: tdmap_sys::InheritedPipe,
    reader: tdmap_wire::announce::AnnouncementReader,
    pid: Option<u32>,
}

impl Announce {
    /// The descriptor number the program inherits.
    pub fn fd(&self) -> i32 {
        self.pipe.write_fd()
    }

    /// tdmap's copy of the write end is closed once the program (`pid`) holds its own.
    pub fn child_started(&mut self, pid: i32) {
        self.pipe.close_write();
        self.pid = Some(pid as u32);
    }
}

impl tdmap_monitor::online::Announcer for Announce {
    fn poll(&mut self) -> tdmap_monitor::online::Announce {
        use tdmap_monitor::online::Announce as A;
        use tdmap_wire::announce::Announcement;
        let mut bytes = Vec::new();
        let ended = self.pipe.read_available(&mut bytes).unwrap_or(true);
        let got = match self.reader.feed(&bytes) {
            Some(r) => r,
            None if ended => self.reader.finish(),
            None => return A::Pending,
        };
        match got {
            Ok(Announcement::Handler { pid, tid }) if Some(pid) == self.pid => A::Handler(tid),
            // Another pid's, no handler, a damaged message or none at all: nothing to
            // leave out.
            _ => A::NoHandler,
        }
    }
}

impl Sampler {
    /// The announcement channel, for the inject sampler.
    pub fn announcer(&self) -> Result<Option<Announce>> {
        if !matches!(self, Sampler::Inject(_)) {
            return Ok(None);
        }
        let pipe = tdmap_sys::InheritedPipe::new()?;
        Ok(Some(Announce {
            pipe,
            reader: Default::default(),
            pid: None,
        }))
    }
}
