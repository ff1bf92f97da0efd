//! The only place where tdmap talks to the kernel: syscalls and `/proc` or `/sys` reads.
//!
//! Every syscall sits behind the [`Sys`] trait so that tests can fake the kernel, as
//! perf-event's `Hooks` does, and every file read goes through an [`FsRoot`] whose root
//! can be swapped for a captured tree, as hwloc's `HWLOC_FSROOT` does.

mod error;
mod fsroot;
mod linux;
#[cfg(feature = "scotch")]
pub mod scotch;

pub use error::SysError;
pub use fsroot::{parse_list, FsRoot, FSROOT_ENV};
pub use linux::LinuxSys;

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
}
