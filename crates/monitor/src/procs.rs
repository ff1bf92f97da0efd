//! The processes of the program as the loop learns them from its samples: each one's
//! index (the order of its first sample, the started process being 0, as in
//! [`crate::keys::Keyer`]), what it runs and its MPI ranks, and whether it is followed.
//! A process that is not the user's (a set-user-ID program a child executed) is left
//! alone: its samples are dropped from then on, nothing is pinned or moved through it
//! (the live actuator checks the owner before acting), and the report names it. A
//! process can become another user's at an exec, so the loop checks again every period.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tdmap_sys::procs::ProcessInfo;

/// One process of the program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    /// Its index among the processes followed (None if left alone).
    pub index: Option<u32>,
    /// Its pid.
    pub pid: u32,
    /// Its command line when first seen.
    pub command: String,
    /// Its MPI world rank, when its environment names one.
    pub rank: Option<u32>,
    /// Its node-local MPI rank, when its environment names one.
    pub local_rank: Option<u32>,
    /// Samples of it dropped because it is not the user's (0 for a followed process).
    pub dropped_samples: u64,
    /// Whether it was left alone (not the user's, when first seen or after an exec).
    pub left_alone: bool,
}

/// The processes seen so far, by pid.
#[derive(Debug, Default, Clone)]
pub struct ProcessTable {
    /// Program names of processes that executed one before their first sample.
    execs: HashMap<u32, String>,
    by_pid: HashMap<u32, usize>,
    list: Vec<Process>,
    followed: u32,
}

impl ProcessTable {
    /// Process `pid` executed program `name` (the kernel's short name): what it runs
    /// from now on, when its command line cannot be read any more.
    pub fn executed(&mut self, mut info: ProcessInfo, name: &str) {
        if info.command.is_empty() {
            info.command = name.to_string();
        }
        match self.by_pid.get(&info.pid) {
            Some(&i) => self.list[i].command = info.command,
            None => {
                self.execs.insert(info.pid, info.command);
            }
        }
    }

    /// Process `pid` was forked by `ppid`: until it executes a program it runs its
    /// parent's, the command to name it by when it ends before its own is read.
    pub fn forked(&mut self, pid: u32, ppid: u32) {
        if let Some(&i) = self.by_pid.get(&ppid) {
            let c = self.list[i].command.clone();
            self.execs.entry(pid).or_insert(c);
        }
    }

    /// Adds a process first seen now, described by `info`, followed if `owned`.
    pub fn add(&mut self, mut info: ProcessInfo, owned: bool) {
        if self.by_pid.contains_key(&info.pid) {
            return;
        }
        if let (true, Some(c)) = (info.command.is_empty(), self.execs.remove(&info.pid)) {
            info.command = c;
        }
        let index = owned.then(|| {
            self.followed += 1;
            self.followed - 1
        });
        self.by_pid.insert(info.pid, self.list.len());
        self.list.push(Process {
            index,
            pid: info.pid,
            command: if info.command.is_empty() {
                info.name
            } else {
                info.command
            },
            rank: info.rank,
            local_rank: info.local_rank,
            dropped_samples: 0,
            left_alone: !owned,
        });
    }

    /// Leaves a followed process alone from now on (it became another user's), with what
    /// it runs now.
    pub fn leave_alone(&mut self, info: ProcessInfo) {
        if let Some(&i) = self.by_pid.get(&info.pid) {
            self.list[i].left_alone = true;
        }
        self.refresh(info);
    }

    /// What a process runs now (it may have executed another program since first seen);
    /// what could not be read is kept.
    pub fn refresh(&mut self, info: ProcessInfo) {
        if let Some(&i) = self.by_pid.get(&info.pid) {
            let p = &mut self.list[i];
            if !info.command.is_empty() {
                p.command = info.command;
            }
            p.rank = info.rank.or(p.rank);
            p.local_rank = info.local_rank.or(p.local_rank);
        }
    }

    /// The pids of the processes followed now.
    pub fn followed(&self) -> Vec<u32> {
        self.list
            .iter()
            .filter(|p| !p.left_alone)
            .map(|p| p.pid)
            .collect()
    }

    /// Whether `pid` is known (followed or left alone).
    pub fn knows(&self, pid: u32) -> bool {
        self.by_pid.contains_key(&pid)
    }

    /// Whether `pid` is known and followed; counts a dropped sample otherwise.
    pub fn admit(&mut self, pid: u32) -> bool {
        match self.by_pid.get(&pid).map(|&i| &mut self.list[i]) {
            Some(p) if !p.left_alone => true,
            Some(p) => {
                p.dropped_samples += 1;
                false
            }
            None => false,
        }
    }

    /// Whether `pid` is known and followed, counting nothing.
    pub fn admit_quiet(&self, pid: u32) -> bool {
        self.by_pid
            .get(&pid)
            .is_some_and(|&i| !self.list[i].left_alone)
    }

    /// The processes, in the order first seen.
    pub fn list(&self) -> &[Process] {
        &self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(pid: u32) -> ProcessInfo {
        ProcessInfo {
            pid,
            command: format!("p{pid}"),
            ..ProcessInfo::default()
        }
    }

    #[test]
    fn followed_processes_are_numbered_and_foreign_ones_left_alone() {
        let mut t = ProcessTable::default();
        t.add(info(10), true);
        t.add(info(12), false);
        t.add(info(11), true);
        t.add(info(10), false);
        assert!(t.admit(10) && t.admit(11) && !t.admit(12) && !t.admit(13));
        let idx: Vec<_> = t.list().iter().map(|p| (p.pid, p.index)).collect();
        assert_eq!(idx, vec![(10, Some(0)), (12, None), (11, Some(1))]);
        assert_eq!(t.list()[1].dropped_samples, 1);
        t.leave_alone(ProcessInfo {
            pid: 11,
            command: "su".into(),
            ..ProcessInfo::default()
        });
        assert!(!t.admit(11) && t.list()[2].left_alone && t.list()[2].command == "su");
        assert_eq!(t.followed(), vec![10]);
    }
}
