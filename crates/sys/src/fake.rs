//! A recording fake of the kernel for tests: every call made through [`Sys`] is logged,
//! pages live on the nodes a test sets, and chosen calls fail with a chosen errno. Tests
//! of the kMAF loop run with it on any machine, without root.

use crate::{CpuList, Sys, SysError};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// One call made through [`RecordingSys`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `sched_setaffinity(tid, cpus)`.
    SetAffinity {
        /// The thread.
        tid: i32,
        /// The CPUs it was pinned to.
        cpus: Vec<usize>,
    },
    /// `move_pages(pid, pages, nodes)`: a query when `nodes` is None.
    MovePages {
        /// The process.
        pid: i32,
        /// The pages.
        pages: Vec<usize>,
        /// The OS nodes asked for, or None for a query.
        nodes: Option<Vec<i32>>,
    },
}

/// The fake kernel's state.
#[derive(Debug, Default)]
struct State {
    log: Vec<Call>,
    /// OS node of each page; pages not here are not present (-ENOENT).
    pages: BTreeMap<usize, i32>,
    /// errno of every set_affinity on this tid.
    pin_errno: HashMap<i32, i32>,
    /// errno of every move of this page.
    move_errno: HashMap<usize, i32>,
    /// Whether the process belongs to the caller.
    foreign: bool,
    /// Processes that have exited: move_pages on them fails with ESRCH.
    gone: Vec<i32>,
}

/// A fake [`Sys`] that records its calls.
#[derive(Debug, Default)]
pub struct RecordingSys {
    state: RefCell<State>,
}

impl RecordingSys {
    /// A fake with no page present and every call succeeding.
    pub fn new() -> RecordingSys {
        RecordingSys::default()
    }

    /// Process `pid` exits: move_pages on it fails as a whole with ESRCH.
    pub fn exit_process(&self, pid: i32) {
        self.state.borrow_mut().gone.push(pid);
    }

    /// Places `page` (its address) on OS node `node`.
    pub fn place(&self, page: usize, node: i32) {
        self.state.borrow_mut().pages.insert(page, node);
    }

    /// The OS node of `page`, if present.
    pub fn node_of(&self, page: usize) -> Option<i32> {
        self.state.borrow().pages.get(&page).copied()
    }

    /// Makes every pin of `tid` fail with `errno`.
    pub fn fail_pin(&self, tid: i32, errno: i32) {
        self.state.borrow_mut().pin_errno.insert(tid, errno);
    }

    /// Makes every move of `page` fail with `errno` (the page stays where it is).
    pub fn fail_move(&self, page: usize, errno: i32) {
        self.state.borrow_mut().move_errno.insert(page, errno);
    }

    /// Makes the process another user's: `process_owned` says false.
    pub fn set_foreign(&self, foreign: bool) {
        self.state.borrow_mut().foreign = foreign;
    }

    /// The calls so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.state.borrow().log.clone()
    }

    /// The calls that change something (pins and moves, not queries), in order.
    pub fn actions(&self) -> Vec<Call> {
        let st = self.state.borrow();
        st.log
            .iter()
            .filter(|c| !matches!(c, Call::MovePages { nodes: None, .. }))
            .cloned()
            .collect()
    }

    /// Forgets the calls so far.
    pub fn clear_calls(&self) {
        self.state.borrow_mut().log.clear();
    }
}

fn errno(call: &'static str, e: i32) -> SysError {
    SysError::Syscall {
        call,
        err: std::io::Error::from_raw_os_error(e),
    }
}

impl Sys for RecordingSys {
    fn set_affinity(&self, tid: i32, cpus: &[usize]) -> Result<(), SysError> {
        let mut st = self.state.borrow_mut();
        st.log.push(Call::SetAffinity {
            tid,
            cpus: cpus.to_vec(),
        });
        match st.pin_errno.get(&tid) {
            Some(&e) => Err(errno("sched_setaffinity", e)),
            None => Ok(()),
        }
    }

    fn get_affinity(&self, _tid: i32) -> Result<CpuList, SysError> {
        Ok(vec![0])
    }

    fn current_cpu(&self) -> Result<usize, SysError> {
        Ok(0)
    }

    fn process_owned(&self, _pid: i32) -> Result<bool, SysError> {
        Ok(!self.state.borrow().foreign)
    }

    fn move_pages(
        &self,
        pid: i32,
        pages: &[usize],
        nodes: Option<&[i32]>,
    ) -> Result<Vec<i32>, SysError> {
        let mut st = self.state.borrow_mut();
        st.log.push(Call::MovePages {
            pid,
            pages: pages.to_vec(),
            nodes: nodes.map(<[i32]>::to_vec),
        });
        if st.gone.contains(&pid) {
            return Err(errno("move_pages", libc::ESRCH));
        }
        let enoent = -libc::ENOENT;
        let mut out = Vec::with_capacity(pages.len());
        for (k, &p) in pages.iter().enumerate() {
            let Some(&now) = st.pages.get(&p) else {
                out.push(enoent);
                continue;
            };
            let Some(want) = nodes.map(|n| n[k]) else {
                out.push(now);
                continue;
            };
            match st.move_errno.get(&p) {
                Some(&e) => out.push(-e),
                None => {
                    st.pages.insert(p, want);
                    out.push(want);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_follow_the_pages_and_failures_keep_them() {
        let sys = RecordingSys::new();
        sys.place(0x1000, 0);
        sys.place(0x2000, 0);
        sys.fail_move(0x2000, libc::EBUSY);
        let st = sys
            .move_pages(7, &[0x1000, 0x2000, 0x3000], Some(&[1, 1, 1]))
            .unwrap();
        assert_eq!(st, vec![1, -libc::EBUSY, -libc::ENOENT]);
        assert_eq!(sys.node_of(0x1000), Some(1));
        assert_eq!(sys.node_of(0x2000), Some(0));
        sys.fail_pin(42, libc::ESRCH);
        let e = sys.set_affinity(42, &[3]).unwrap_err();
        assert_eq!(e.errno(), Some(libc::ESRCH));
        assert_eq!(sys.actions().len(), 2);
    }
}
