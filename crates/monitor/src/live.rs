//! The loop's live side: the kernel as an [`Actuator`] through tdmap-sys's [`Sys`] trait
//! (so tests put a recording fake in its place), and a started program as a [`Program`].

use crate::actuator::{ActError, Actuator};
use crate::error::MonitorError;
use crate::online::Program;
use std::os::fd::BorrowedFd;
use tdmap_sys::{FsRoot, GatedChild, Sys, SysError};
use tdmap_topo::Topology;

/// Acts on process `pid` through `sys`, translating the topology's logical PUs and nodes
/// to the OS's numbers.
pub struct SysActuator<'t, S: Sys> {
    sys: S,
    pid: i32,
    topo: &'t Topology,
}

impl<'t, S: Sys> SysActuator<'t, S> {
    /// An actuator for process `pid` on `topo`.
    pub fn new(sys: S, pid: i32, topo: &'t Topology) -> Self {
        SysActuator { sys, pid, topo }
    }

    /// The kernel behind it.
    pub fn sys(&self) -> &S {
        &self.sys
    }

    /// The logical node of OS node `os`, None for a move_pages error status.
    fn logical(&self, os: i32) -> Option<usize> {
        let os = usize::try_from(os).ok()?;
        (0..self.topo.num_nodes()).find(|&n| self.topo.node_os_index(n) == os)
    }
}

fn act_error(call: &'static str, e: SysError) -> ActError {
    ActError {
        call,
        errno: e.errno(),
        what: e.to_string(),
    }
}

impl<S: Sys> Actuator for SysActuator<'_, S> {
    fn pin(&mut self, _thread: usize, tid: u32, pu: usize) -> Result<(), ActError> {
        let cpu = self.topo.pus[pu].os;
        self.sys
            .set_affinity(tid as i32, &[cpu])
            .map_err(|e| act_error("sched_setaffinity", e))
    }

    fn locate(&mut self, pages: &[u64]) -> Result<Vec<Option<usize>>, ActError> {
        let addrs: Vec<usize> = pages.iter().map(|&p| p as usize).collect();
        let now = self
            .sys
            .move_pages(self.pid, &addrs, None)
            .map_err(|e| act_error("move_pages", e))?;
        Ok(now.iter().map(|&n| self.logical(n)).collect())
    }

    fn move_pages(&mut self, moves: &[(u64, usize)]) -> Result<Vec<Result<(), i32>>, ActError> {
        let addrs: Vec<usize> = moves.iter().map(|m| m.0 as usize).collect();
        let nodes: Vec<i32> = moves
            .iter()
            .map(|m| self.topo.node_os_index(m.1) as i32)
            .collect();
        let st = self
            .sys
            .move_pages(self.pid, &addrs, Some(&nodes))
            .map_err(|e| act_error("move_pages", e))?;
        // A page that ended elsewhere without an error status was moved by someone else
        // meanwhile: counted as failed, with errno 0.
        Ok(st
            .iter()
            .zip(&nodes)
            .map(|(&got, &want)| match got {
                g if g == want => Ok(()),
                g if g < 0 => Err(-g),
                _ => Err(0),
            })
            .collect())
    }

    fn permitted(&mut self) -> bool {
        self.sys.process_owned(self.pid).unwrap_or(false)
    }
}

/// A program `tdmap run` started (held at its gate, then released).
pub struct LiveProgram<'c> {
    child: &'c mut GatedChild,
    fs: FsRoot,
    soft_dirty: bool,
}

impl<'c> LiveProgram<'c> {
    /// Watches `child`; with `soft_dirty`, every period ends by write-protecting its
    /// pages through `/proc/PID/clear_refs` (kMAF §3.1.2's extra faults, from outside).
    pub fn new(child: &'c mut GatedChild, fs: FsRoot, soft_dirty: bool) -> Self {
        LiveProgram {
            child,
            fs,
            soft_dirty,
        }
    }
}

impl Program for LiveProgram<'_> {
    fn pid(&self) -> i32 {
        self.child.pid()
    }

    fn try_wait(&mut self) -> Result<Option<i32>, MonitorError> {
        Ok(self.child.try_wait()?.map(exit_code))
    }

    fn exit_fd(&self) -> Option<BorrowedFd<'_>> {
        self.child.exit_fd()
    }

    fn tasks(&mut self) -> Vec<u32> {
        tdmap_sys::task_ids(&self.fs, self.child.pid()).unwrap_or_default()
    }

    fn after_period(&mut self) {
        if self.soft_dirty {
            let _ = tdmap_sys::inject_soft_dirty_faults(&self.fs, self.child.pid());
        }
    }
}

/// The program's exit code, or 128 + the signal that ended it (as shells report it).
pub fn exit_code(st: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.code()
        .or_else(|| st.signal().map(|s| 128 + s))
        .unwrap_or(1)
}
