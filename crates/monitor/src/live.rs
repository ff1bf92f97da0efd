//! The loop's live side: the kernel as an [`Actuator`] through tdmap-sys's [`Sys`] trait
//! (so tests put a recording fake in its place), and a started program as a [`Program`].
//!
//! A program may be several processes: the actuator keys pages ([`Keyer`]) and moves
//! each page through a process that maps it (a shared page through the first live one),
//! one move_pages call per process, so that a process that exits during a batch fails
//! only its own pages, counted with their errno.

use crate::actuator::{ActError, Actuator};
use crate::error::MonitorError;
use crate::keys::{Keyer, KEYING};
use crate::online::Program;
use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;
use tdmap_sys::procs::{self, Family, ProcessInfo};
use tdmap_sys::{FsRoot, GatedChild, Sys, SysError};
use tdmap_topo::Topology;
use tdmap_wire::pagekey::is_shared;

/// Acts on process `pid` through `sys`, translating the topology's logical PUs and nodes
/// to the OS's numbers.
pub struct SysActuator<'t, S: Sys> {
    sys: S,
    pid: i32,
    topo: &'t Topology,
    keyer: Keyer,
    /// Where maps are read, when pages are keyed across processes.
    maps: Option<FsRoot>,
}

/// Pages of one call, by (pid, shared): (position in the call, address).
type ByPid = BTreeMap<(u32, bool), Vec<(usize, u64)>>;

impl<'t, S: Sys> SysActuator<'t, S> {
    /// An actuator for process `pid` on `topo`, whose pages are keyed by address.
    pub fn new(sys: S, pid: i32, topo: &'t Topology) -> Self {
        SysActuator {
            sys,
            pid,
            topo,
            keyer: Keyer::new(pid as u32),
            maps: None,
        }
    }

    /// Keys pages across processes from their maps read under `fs` ([`crate::keys`]).
    pub fn keyed_by_maps(mut self, fs: FsRoot) -> Self {
        self.maps = Some(fs);
        self
    }

    /// Whether task or process `id` (other than the started one, which the loop checks
    /// through [`Actuator::permitted`]) is the user's: tdmap acts on no one else's.
    fn ours(&self, id: u32) -> bool {
        id == self.pid as u32 || self.sys.process_owned(id as i32).unwrap_or(false)
    }

    /// The keyer (processes by index, shared objects).
    pub fn keyer(&self) -> &Keyer {
        &self.keyer
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

impl<S: Sys> SysActuator<'_, S> {
    /// move_pages on the pages of `keys` (to `nodes`, or a query), one call per process:
    /// each page's status, or a negative errno. A page whose process is gone (the call
    /// failed as a whole) is tried through the next process that maps it; when none is
    /// left it fails with that call's errno. Fails only when every call failed.
    fn call(&mut self, keys: &[u64], nodes: Option<&[i32]>) -> Result<Vec<i32>, ActError> {
        let places: Vec<Vec<(u32, u64)>> = keys.iter().map(|&k| self.keyer.places(k)).collect();
        let n = keys.len();
        let (mut st, mut next, mut fail) = (vec![None; n], vec![0; n], vec![ENOENT; n]);
        let (mut last_err, mut ok_calls) = (None, 0);
        loop {
            let mut by_pid = ByPid::new();
            for k in 0..n {
                if st[k].is_some() {
                    continue;
                }
                match places[k].get(next[k]) {
                    Some(&(pid, addr)) => by_pid
                        .entry((pid, is_shared(keys[k])))
                        .or_default()
                        .push((k, addr)),
                    None => st[k] = Some(-fail[k]),
                }
            }
            if by_pid.is_empty() {
                break;
            }
            for ((pid, shared), pages) in by_pid {
                if !self.ours(pid) {
                    for &(k, _) in &pages {
                        next[k] += 1;
                        fail[k] = EPERM;
                    }
                    continue;
                }
                let addrs: Vec<usize> = pages.iter().map(|p| p.1 as usize).collect();
                let want: Option<Vec<i32>> = nodes.map(|n| pages.iter().map(|p| n[p.0]).collect());
                // Pages of a shared object may be mapped by other processes too.
                let got = if shared && want.is_some() {
                    self.sys
                        .move_shared_pages(pid as i32, &addrs, want.as_deref())
                } else {
                    self.sys.move_pages(pid as i32, &addrs, want.as_deref())
                };
                match got {
                    Ok(got) => {
                        ok_calls += 1;
                        for (&(k, _), g) in pages.iter().zip(got) {
                            // Not present in this process's page tables: a shared page
                            // may be present in another's.
                            if g == -ENOENT {
                                next[k] += 1;
                            } else {
                                st[k] = Some(g);
                            }
                        }
                    }
                    Err(e) => {
                        self.keyer.exited(pid);
                        for &(k, _) in &pages {
                            next[k] += 1;
                            fail[k] = e.errno().unwrap_or(0);
                        }
                        last_err = Some(e);
                    }
                }
            }
        }
        match last_err {
            Some(e) if ok_calls == 0 => Err(act_error("move_pages", e)),
            _ => Ok(st.into_iter().map(|s| s.unwrap_or(-ENOENT)).collect()),
        }
    }
}

/// move_pages's status for a page that is not present (errno ENOENT).
const ENOENT: i32 = 2;
/// The errno of an action refused because the task is not the user's.
const EPERM: i32 = 1;

fn not_ours(call: &'static str) -> ActError {
    ActError {
        call,
        errno: Some(EPERM),
        what: "the task is not yours any more (a set-user-ID exec): left alone".into(),
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
        if !self.ours(tid) {
            return Err(not_ours("sched_setaffinity"));
        }
        let cpu = self.topo.pus[pu].os;
        self.sys
            .set_affinity(tid as i32, &[cpu])
            .map_err(|e| act_error("sched_setaffinity", e))
    }

    fn locate(&mut self, pages: &[u64]) -> Result<Vec<Option<usize>>, ActError> {
        let st = self.call(pages, None)?;
        Ok(st.iter().map(|&n| self.logical(n)).collect())
    }

    fn move_pages(&mut self, moves: &[(u64, usize)]) -> Result<Vec<Result<(), i32>>, ActError> {
        let keys: Vec<u64> = moves.iter().map(|m| m.0).collect();
        let nodes: Vec<i32> = moves
            .iter()
            .map(|m| self.topo.node_os_index(m.1) as i32)
            .collect();
        let st = self.call(&keys, Some(&nodes))?;
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

    fn key(&mut self, pid: u32, addr: u64) -> Option<u64> {
        let fs = self.maps.as_ref();
        self.keyer
            .key(pid, addr, &mut |p| procs::read_maps(fs?, p).ok())
    }

    fn learn(&mut self, t: &tdmap_sys::perf::Task) {
        self.keyer.learn(t);
    }

    fn keying(&self) -> &'static str {
        match self.maps {
            Some(_) => KEYING,
            None => "virtual addresses (one process)",
        }
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
    family: Family,
}

impl<'c> LiveProgram<'c> {
    /// Watches `child`; with `soft_dirty`, every period ends by write-protecting its
    /// pages through `/proc/PID/clear_refs` (kMAF §3.1.2's extra faults, from outside).
    pub fn new(child: &'c mut GatedChild, fs: FsRoot, soft_dirty: bool) -> Self {
        let family = Family::new(fs.clone(), child.pid() as u32);
        LiveProgram {
            child,
            fs,
            soft_dirty,
            family,
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

    fn follows(&mut self, pid: u32) -> bool {
        self.family.follows(pid)
    }

    fn learn(&mut self, t: &tdmap_sys::perf::Task) {
        self.family.forked(std::slice::from_ref(t));
    }

    fn describe(&mut self, pid: u32) -> (ProcessInfo, bool) {
        // Gone: its samples were taken while it ran as it was forked, the user's.
        let owned = tdmap_sys::owned_by_caller(&self.fs, pid as i32).unwrap_or(true);
        (procs::process_info(&self.fs, pid), owned)
    }

    fn all_tasks(&mut self) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = self
            .family
            .alive()
            .into_iter()
            .flat_map(|pid| {
                let tids = tdmap_sys::task_ids(&self.fs, pid as i32).unwrap_or_default();
                tids.into_iter().map(move |t| (pid, t))
            })
            .collect();
        out.sort_unstable_by_key(|x| x.1);
        out
    }

    fn after_period(&mut self) {
        if self.soft_dirty {
            // Every process followed: shared pages move by Eq. 6 from all their users.
            for pid in self.family.alive() {
                let _ = tdmap_sys::inject_soft_dirty_faults(&self.fs, pid as i32);
            }
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
