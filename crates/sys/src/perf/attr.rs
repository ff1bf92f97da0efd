//! `perf_event_attr` for the page-fault software event and the `perf_event_open` call,
//! with errors that say what to change when the kernel refuses.

use super::record::{SAMPLE_TYPE, SAMPLE_TYPE_SIZED};
use crate::SysError;

/// `PERF_TYPE_SOFTWARE`.
const TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_SW_PAGE_FAULTS`.
const SW_PAGE_FAULTS: u64 = 2;
/// `PERF_FLAG_FD_CLOEXEC`: the program tdmap runs must not inherit the descriptors.
const FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Bits of the attr's flag word (`perf_event.h`, in declaration order).
const DISABLED: u64 = 1 << 0;
const INHERIT: u64 = 1 << 1;
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;
/// `attr.task`: fork and exit records too (system-wide events: to follow the target's
/// children, whose samples arrive among everyone's).
const TASK: u64 = 1 << 13;
/// `attr.mmap_data` and `attr.mmap2`: a record with the backing object of every new
/// mapping, so that pages of a process that exits before its maps are read still get
/// their keys by object.
const MMAP_DATA: u64 = 1 << 17;
const MMAP2: u64 = 1 << 23;
/// `attr.comm` and `attr.comm_exec`: a record at each exec, with the program's name.
const COMM: u64 = 1 << 9;
const COMM_EXEC: u64 = 1 << 24;
/// `attr.sample_id_all`: fork and mmap records carry their time, so that those of
/// different CPUs are applied in order.
const SAMPLE_ID_ALL: u64 = 1 << 18;
const WATERMARK: u64 = 1 << 14;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER5` (112 bytes), which every kernel
/// since 4.1 accepts; later fields stay at the kernel's zero default.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_watermark: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved2: u16,
}

const ATTR_SIZE_VER5: u32 = 112;
const _: () = assert!(std::mem::size_of::<Attr>() == ATTR_SIZE_VER5 as usize);

impl Attr {
    /// User-space page faults, one sample every `period` faults, waking a poller once
    /// `wakeup_bytes` are in the ring. With `inherit`, a task's event follows the threads
    /// it creates afterwards; a CPU-wide event (pid -1) must not inherit.
    pub(crate) fn page_faults(
        period: u64,
        wakeup_bytes: u32,
        disabled: bool,
        inherit: bool,
    ) -> Attr {
        let mut flags = EXCLUDE_KERNEL | EXCLUDE_HV | WATERMARK;
        if inherit {
            flags |= INHERIT;
        } else {
            flags |= TASK | MMAP_DATA | MMAP2 | COMM | COMM_EXEC | SAMPLE_ID_ALL;
        }
        if disabled {
            flags |= DISABLED;
        }
        Attr {
            kind: TYPE_SOFTWARE,
            size: ATTR_SIZE_VER5,
            config: SW_PAGE_FAULTS,
            sample_period: period.max(1),
            sample_type: SAMPLE_TYPE_SIZED,
            flags,
            wakeup_watermark: wakeup_bytes.max(1),
            ..Attr::default()
        }
    }

    /// The same event without the data page size, for kernels before 5.11.
    pub(crate) fn without_page_size(mut self) -> Attr {
        self.sample_type = SAMPLE_TYPE;
        self
    }
}

/// What to do about an errno from `perf_event_open`.
pub(crate) fn open_fix(errno: i32) -> &'static str {
    match errno {
        libc::EACCES | libc::EPERM => {
            "a process of another user needs root or CAP_PERFMON; for your own processes lower \
             /proc/sys/kernel/perf_event_paranoid to 2 or less (sysctl \
             kernel.perf_event_paranoid=2) (both samplers read faults through perf)"
        }
        libc::ESRCH => "the target process has already exited",
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => {
            "this kernel has no software page-fault event (CONFIG_PERF_EVENTS), which both samplers need"
        }
        libc::EMFILE => "too many open files; raise the limit with ulimit -n",
        libc::ENOSYS => "this kernel has no perf_event_open (CONFIG_PERF_EVENTS)",
        _ => "check that the pid exists and the CPU is online",
    }
}

/// Checks that `pid` exists and may be watched by this process, with the errors (and
/// fixes) a per-task event would get, by opening and closing a counting event on it.
pub(crate) fn probe(pid: i32) -> Result<(), SysError> {
    let attr = Attr {
        kind: TYPE_SOFTWARE,
        size: ATTR_SIZE_VER5,
        config: SW_PAGE_FAULTS,
        flags: DISABLED | EXCLUDE_KERNEL | EXCLUDE_HV,
        ..Attr::default()
    };
    let fd = open(&attr, pid, -1)?;
    // SAFETY: fd was just opened here and is not used after this.
    unsafe { libc::close(fd) };
    Ok(())
}

/// Opens `attr` for task `pid` on `cpu`; returns the descriptor.
pub(crate) fn open(attr: &Attr, pid: i32, cpu: i32) -> Result<i32, SysError> {
    // SAFETY: `attr` is a valid perf_event_attr of the size it declares; the kernel only
    // reads it (and may write `size` back on E2BIG, which is inside the struct).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const Attr,
            pid as libc::c_long,
            cpu as libc::c_long,
            -1 as libc::c_long,
            FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        let fix = open_fix(err.raw_os_error().unwrap_or(0));
        return Err(SysError::Refused {
            call: "perf_event_open",
            err,
            fix,
        });
    }
    Ok(fd as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_fault_attr_asks_for_what_the_parser_reads() {
        let a = Attr::page_faults(0, 4096, true, true);
        assert_eq!((a.kind, a.config, a.size), (1, 2, 112));
        assert_eq!(a.sample_period, 1, "period 0 would mean frequency mode off");
        assert_eq!(a.sample_type, SAMPLE_TYPE_SIZED);
        assert_eq!(a.without_page_size().sample_type, SAMPLE_TYPE);
        assert_eq!(
            a.flags & (INHERIT | EXCLUDE_KERNEL),
            INHERIT | EXCLUDE_KERNEL
        );
        assert_ne!(a.flags & DISABLED, 0);
        assert_eq!(Attr::page_faults(3, 1, false, true).flags & DISABLED, 0);
        assert_eq!(
            Attr::page_faults(1, 1, false, false).flags & INHERIT,
            0,
            "a CPU-wide event (pid -1) with inherit is refused"
        );
    }

    #[test]
    fn permission_errors_suggest_the_fix() {
        assert!(open_fix(libc::EACCES).contains("perf_event_paranoid"));
        assert!(open_fix(libc::EPERM).contains("root"));
        assert!(open_fix(libc::ESRCH).contains("exited"));
    }
}
