//! The real kernel behind the [`Sys`] trait.

use crate::{mem, CpuList, MbindFlags, MemPolicy, Sys, SysError};

/// The live Linux kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct LinuxSys;

fn cpu_set(cpus: &[usize]) -> Result<libc::cpu_set_t, SysError> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &c in cpus {
        if c >= max {
            return Err(SysError::Invalid {
                call: "sched_setaffinity",
                what: format!("CPU {c} is beyond the {max}-CPU mask"),
            });
        }
        // SAFETY: `c` was checked to be inside the mask above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    Ok(set)
}

impl Sys for LinuxSys {
    fn set_affinity(&self, tid: i32, cpus: &[usize]) -> Result<(), SysError> {
        let set = cpu_set(cpus)?;
        // SAFETY: `set` is a valid cpu_set_t and the size passed is its size.
        let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
        if rc != 0 {
            return Err(SysError::last_os("sched_setaffinity"));
        }
        Ok(())
    }

    fn get_affinity(&self, tid: i32) -> Result<CpuList, SysError> {
        // SAFETY: all-zero is a valid empty cpu_set_t.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: the kernel writes at most size_of(set) bytes into `set`.
        let rc = unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&set), &mut set) };
        if rc != 0 {
            return Err(SysError::last_os("sched_getaffinity"));
        }
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: every index tested is inside the mask.
        Ok((0..max)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect())
    }

    fn current_cpu(&self) -> Result<usize, SysError> {
        // SAFETY: sched_getcpu takes no arguments and only returns a value.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu < 0 {
            return Err(SysError::last_os("sched_getcpu"));
        }
        Ok(cpu as usize)
    }

    fn process_owned(&self, pid: i32) -> Result<bool, SysError> {
        crate::owned_by_caller(&crate::FsRoot::default(), pid)
    }

    fn move_pages(
        &self,
        pid: i32,
        pages: &[usize],
        nodes: Option<&[i32]>,
    ) -> Result<Vec<i32>, SysError> {
        mem::move_pages(pid, pages, nodes)
    }

    fn move_shared_pages(
        &self,
        pid: i32,
        pages: &[usize],
        nodes: Option<&[i32]>,
    ) -> Result<Vec<i32>, SysError> {
        mem::move_shared_pages(pid, pages, nodes)
    }

    fn mbind(
        &self,
        addr: usize,
        len: usize,
        policy: &MemPolicy,
        flags: MbindFlags,
    ) -> Result<(), SysError> {
        mem::mbind(addr, len, policy, flags)
    }

    fn set_mempolicy(&self, policy: &MemPolicy) -> Result<(), SysError> {
        mem::set_mempolicy(policy)
    }

    fn get_mempolicy(&self, addr: Option<usize>) -> Result<MemPolicy, SysError> {
        mem::get_mempolicy(addr)
    }
}
