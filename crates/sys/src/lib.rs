//! The only place where tdmap talks to the kernel: syscalls and `/proc` or `/sys` reads.
//!
//! Every syscall sits behind the [`Sys`] trait so that tests can fake the kernel, as
//! perf-event's `Hooks` does, and every file read goes through an [`FsRoot`] whose root
//! can be swapped for a captured tree, as hwloc's `HWLOC_FSROOT` does.

mod announce;
mod env;
mod error;
pub mod fake;
mod fsroot;
pub mod isolate;
mod linux;
mod mem;
mod meminfo;
mod owner;
pub mod perf;
mod preloadable;
pub mod procs;
pub mod rapl;
mod signals;
mod softdirty;
mod spawn;
pub mod uffd;
pub mod vm;

pub use announce::InheritedPipe;
pub use env::secure_var;
pub use error::SysError;
pub use fsroot::{parse_list, FsRoot, FSROOT_ENV};
pub use isolate::{run_isolated, ChildEnd, Isolated};
pub use linux::LinuxSys;
pub use mem::{MbindFlags, MemPolicy, MAX_NODES};
pub use meminfo::{node_memory, NodeMemory};
pub use owner::{owned_by_caller, process_uids, task_ids};
pub use preloadable::{preloadable, Preload};
pub use signals::{forward_signals, Forwarding, FORWARDED, STOP_SIGNALS};
pub use softdirty::{inject_soft_dirty_faults, soft_dirty_available};
pub use spawn::{resolve as find_program, spawn_gated, spawn_gated_env, GatedChild};
pub use vm::page_size;

/// Frees the disk blocks of the first `len` bytes of `file` (rounded down to whole 4 KiB
/// blocks) without changing its size or offsets: a reader that has consumed the front of
/// a file another process keeps appending to gives the space back as it goes.
pub fn punch_hole(file: &std::fs::File, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = len & !4095;
    if len == 0 {
        return Ok(());
    }
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: the descriptor is owned by `file`, alive for the call; fallocate reads no memory.
    let r = unsafe { libc::fallocate(file.as_raw_fd(), mode, 0, len as libc::off_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A set of CPUs (OS indexes), kept sorted and without duplicates.
pub type CpuList = Vec<usize>;

/// The kernel operations tdmap needs; [`LinuxSys`] is the real one, tests bring fakes.
pub trait Sys {
    /// Pins thread `tid` (0 for the caller) to `cpus`.
    fn set_affinity(&self, tid: i32, cpus: &[usize]) -> Result<(), SysError>;
    /// Returns the CPUs that thread `tid` (0 for the caller) may run on.
    fn get_affinity(&self, tid: i32) -> Result<CpuList, SysError>;
    /// Returns the CPU the calling thread runs on right now.
    fn current_cpu(&self) -> Result<usize, SysError>;
    /// Whether process `pid` belongs to the caller (real and effective uid): tdmap acts
    /// only on the user's own processes.
    fn process_owned(&self, pid: i32) -> Result<bool, SysError> {
        let _ = pid;
        Err(not_modelled("process_owned"))
    }

    // The NUMA memory calls have defaults so that fakes which only need affinity stay
    // small; a fake that is asked for memory placement it does not model says so.

    /// Moves pages of process `pid` (0 for the caller) to `nodes`, one per page, or only
    /// queries them when `nodes` is None; returns each page's node or a negative errno.
    fn move_pages(
        &self,
        pid: i32,
        pages: &[usize],
        nodes: Option<&[i32]>,
    ) -> Result<Vec<i32>, SysError> {
        let _ = (pid, pages, nodes);
        Err(not_modelled("move_pages"))
    }
    /// [`Sys::move_pages`] of pages that other processes may map too (a `MAP_SHARED`
    /// mapping): the kernel moves them only with `MPOL_MF_MOVE_ALL`, which needs
    /// CAP_SYS_NICE. Fakes that do not tell the two apart keep the default.
    fn move_shared_pages(
        &self,
        pid: i32,
        pages: &[usize],
        nodes: Option<&[i32]>,
    ) -> Result<Vec<i32>, SysError> {
        self.move_pages(pid, pages, nodes)
    }
    /// Sets the memory policy of the page-aligned range `[addr, addr + len)`.
    fn mbind(
        &self,
        addr: usize,
        len: usize,
        policy: &MemPolicy,
        flags: MbindFlags,
    ) -> Result<(), SysError> {
        let _ = (addr, len, policy, flags);
        Err(not_modelled("mbind"))
    }
    /// Sets the calling thread's memory policy.
    fn set_mempolicy(&self, policy: &MemPolicy) -> Result<(), SysError> {
        let _ = policy;
        Err(not_modelled("set_mempolicy"))
    }
    /// Returns the policy that applies at `addr`, or the calling thread's when None.
    fn get_mempolicy(&self, addr: Option<usize>) -> Result<MemPolicy, SysError> {
        let _ = addr;
        Err(not_modelled("get_mempolicy"))
    }
}

fn not_modelled(call: &'static str) -> SysError {
    SysError::Invalid {
        call,
        what: "this Sys implementation does not model it".into(),
    }
}

/// A shared reference to a kernel is a kernel: tests keep the fake to inspect it while
/// the loop acts through it.
impl<S: Sys + ?Sized> Sys for &S {
    fn set_affinity(&self, tid: i32, cpus: &[usize]) -> Result<(), SysError> {
        (**self).set_affinity(tid, cpus)
    }
    fn get_affinity(&self, tid: i32) -> Result<CpuList, SysError> {
        (**self).get_affinity(tid)
    }
    fn current_cpu(&self) -> Result<usize, SysError> {
        (**self).current_cpu()
    }
    fn process_owned(&self, pid: i32) -> Result<bool, SysError> {
        (**self).process_owned(pid)
    }
    fn move_pages(
        &self,
        pid: i32,
        pages: &[usize],
        nodes: Option<&[i32]>,
    ) -> Result<Vec<i32>, SysError> {
        (**self).move_pages(pid, pages, nodes)
    }
    fn move_shared_pages(
        &self,
        pid: i32,
        pages: &[usize],
        nodes: Option<&[i32]>,
    ) -> Result<Vec<i32>, SysError> {
        (**self).move_shared_pages(pid, pages, nodes)
    }
    fn mbind(
        &self,
        addr: usize,
        len: usize,
        policy: &MemPolicy,
        flags: MbindFlags,
    ) -> Result<(), SysError> {
        (**self).mbind(addr, len, policy, flags)
    }
    fn set_mempolicy(&self, policy: &MemPolicy) -> Result<(), SysError> {
        (**self).set_mempolicy(policy)
    }
    fn get_mempolicy(&self, addr: Option<usize>) -> Result<MemPolicy, SysError> {
        (**self).get_mempolicy(addr)
    }
}
