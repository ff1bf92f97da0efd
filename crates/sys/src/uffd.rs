//! userfaultfd write-protection, for the `inject` sampler of `tdmap run`: the runtime
//! preloaded into the program (crates/rt) write-protects part of the program's anonymous
//! memory each period and lifts the protection of each page on its next write, so that
//! the write faults once more and the kernel's page-fault sampler sees it (kMAF §3.1.2's
//! extra page faults, made with write-protection instead of cleared present bits).
//!
//! The raw calls allocate nothing and return the errno on failure: the runtime's handler
//! thread uses them while the heap may be write-protected, where a `malloc` could block
//! the only thread able to lift the protection. [`wp_probe`] is for tdmap itself.
//! Constants and layouts are `<linux/userfaultfd.h>`'s (Linux 5.7+ for write-protection).

use crate::SysError;

/// `UFFD_API`: the API version a descriptor is opened with.
const API: u64 = 0xAA;
/// `UFFD_FEATURE_PAGEFAULT_FLAG_WP`: fault messages say when a write hit a protected page.
pub const FEATURE_PAGEFAULT_FLAG_WP: u64 = 1 << 0;
/// `UFFD_EVENT_PAGEFAULT`: the event of a fault message.
pub const EVENT_PAGEFAULT: u8 = 0x12;
/// `UFFD_PAGEFAULT_FLAG_WP`: the fault hit a write-protected page.
pub const PAGEFAULT_FLAG_WP: u64 = 1 << 1;

const IOC_API: libc::c_ulong = 0xC018_AA3F;
const IOC_REGISTER: libc::c_ulong = 0xC020_AA00;
const IOC_WAKE: libc::c_ulong = 0x8010_AA02;
const IOC_WRITEPROTECT: libc::c_ulong = 0xC018_AA06;
const REGISTER_MODE_WP: u64 = 1 << 1;
const WRITEPROTECT_MODE_WP: u64 = 1 << 0;
/// Bit of `UFFDIO_WRITEPROTECT` in the ioctl mask `UFFDIO_REGISTER` returns.
const HAS_WRITEPROTECT: u64 = 1 << 6;

/// `struct uffd_msg` for a page fault (the only event this module asks for).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Msg {
    /// The event, [`EVENT_PAGEFAULT`] for faults.
    pub event: u8,
    reserved1: u8,
    reserved2: u16,
    reserved3: u32,
    /// `UFFD_PAGEFAULT_FLAG_*`.
    pub flags: u64,
    /// The faulting address.
    pub address: u64,
    /// The faulting thread, with `UFFD_FEATURE_THREAD_ID`.
    pub ptid: u32,
    reserved4: u32,
}

const _: () = assert!(std::mem::size_of::<Msg>() == 32);

#[repr(C)]
struct Range {
    start: u64,
    len: u64,
}

#[repr(C)]
struct ApiArg {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
struct RegisterArg {
    range: Range,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
struct WriteProtectArg {
    range: Range,
    mode: u64,
}

fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

fn ioctl<T>(fd: i32, req: libc::c_ulong, arg: &mut T) -> Result<(), i32> {
    // SAFETY: every request used here takes a pointer to the repr(C) struct `T` given
    // with it, which lives for the call.
    let rc = unsafe { libc::ioctl(fd, req, arg as *mut T) };
    if rc == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// Opens a close-on-exec, non-blocking userfaultfd with `features` enabled; returns the
/// descriptor, or the errno of the step that failed.
pub fn open(features: u64) -> Result<i32, i32> {
    // SAFETY: userfaultfd takes only flags.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if fd < 0 {
        return Err(errno());
    }
    let fd = fd as i32;
    let mut a = ApiArg {
        api: API,
        features,
        ioctls: 0,
    };
    if let Err(e) = ioctl(fd, IOC_API, &mut a) {
        close(fd);
        return Err(e);
    }
    Ok(fd)
}

/// Closes a descriptor from [`open`].
pub fn close(fd: i32) {
    // SAFETY: closing a descriptor has no memory preconditions.
    unsafe { libc::close(fd) };
}

/// Registers `[start, start + len)` for write-protect faults; registering a range again
/// with the same descriptor is allowed. EINVAL when the range holds memory that cannot
/// be registered, ENOMEM when part of it is not mapped.
pub fn register_wp(fd: i32, start: u64, len: u64) -> Result<(), i32> {
    let mut r = RegisterArg {
        range: Range { start, len },
        mode: REGISTER_MODE_WP,
        ioctls: 0,
    };
    ioctl(fd, IOC_REGISTER, &mut r)?;
    if r.ioctls & HAS_WRITEPROTECT == 0 {
        return Err(libc::EOPNOTSUPP);
    }
    Ok(())
}

/// Write-protects (`protect`) or unprotects a registered range; unprotecting wakes the
/// threads waiting on it. ENOENT when part of the range is no longer registered.
pub fn write_protect(fd: i32, start: u64, len: u64, protect: bool) -> Result<(), i32> {
    let mut w = WriteProtectArg {
        range: Range { start, len },
        mode: if protect { WRITEPROTECT_MODE_WP } else { 0 },
    };
    ioctl(fd, IOC_WRITEPROTECT, &mut w)
}

/// Wakes the threads waiting on faults in a range, e.g. one that vanished.
pub fn wake(fd: i32, start: u64, len: u64) -> Result<(), i32> {
    let mut r = Range { start, len };
    ioctl(fd, IOC_WAKE, &mut r)
}

/// Reads the pending messages into `buf` without blocking; returns how many (0: none).
pub fn read_msgs(fd: i32, buf: &mut [Msg]) -> Result<usize, i32> {
    let bytes = std::mem::size_of_val(buf);
    // SAFETY: `buf` is a live, writable slice of plain-data messages of `bytes` bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), bytes) };
    if n >= 0 {
        return Ok(n as usize / std::mem::size_of::<Msg>());
    }
    match errno() {
        libc::EAGAIN => Ok(0),
        e => Err(e),
    }
}

/// Waits up to `timeout_ms` (-1: forever) for messages; returns whether some are ready.
/// EBADF when the descriptor was closed under us.
pub fn wait(fd: i32, timeout_ms: i32) -> Result<bool, i32> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd.
    let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if n < 0 {
        let e = errno();
        return if e == libc::EINTR { Ok(false) } else { Err(e) };
    }
    if p.revents & (libc::POLLNVAL | libc::POLLERR | libc::POLLHUP) != 0 {
        return Err(libc::EBADF);
    }
    Ok(n > 0)
}

fn refused(e: i32, fix: &'static str) -> SysError {
    SysError::Refused {
        call: "userfaultfd",
        err: std::io::Error::from_raw_os_error(e),
        fix,
    }
}

/// Checks that userfaultfd write-protection works for this user on this kernel: a page is
/// registered and protected, a second thread writes it, and the write must arrive here as
/// a write-protect fault, which is then lifted. Errors name the fix.
pub fn wp_probe() -> Result<(), SysError> {
    let fd = open(FEATURE_PAGEFAULT_FLAG_WP).map_err(|e| match e {
        libc::EPERM => refused(
            e,
            "run as root or allow it with `sysctl vm.unprivileged_userfaultfd=1`",
        ),
        libc::ENOSYS => refused(e, "this kernel lacks userfaultfd (CONFIG_USERFAULTFD)"),
        _ => refused(
            e,
            "this kernel lacks userfaultfd write-protection (Linux 5.7+ on x86-64)",
        ),
    })?;
    let page = crate::page_size();
    let result = crate::vm::mmap_anon(page).and_then(|p| {
        let r = probe_page(fd, p as u64, page as u64);
        // SAFETY: exactly the mapping made above; the writer thread has ended.
        unsafe { crate::vm::munmap(p, page)? };
        r
    });
    close(fd);
    result
}

fn probe_page(fd: i32, p: u64, len: u64) -> Result<(), SysError> {
    let no_wp = |e| {
        refused(
            e,
            "this kernel lacks userfaultfd write-protection for anonymous memory",
        )
    };
    // SAFETY: `p` is a live private page of ours; writing it populates it.
    unsafe { std::ptr::write_volatile(p as *mut u8, 1) };
    register_wp(fd, p, len).map_err(no_wp)?;
    write_protect(fd, p, len, true).map_err(no_wp)?;
    let writer = std::thread::spawn(move || {
        // SAFETY: the page stays mapped until this thread is joined.
        unsafe { std::ptr::write_volatile(p as *mut u8, 2) };
    });
    let mut msgs = [Msg::default(); 4];
    let mut seen = false;
    for _ in 0..50 {
        if wait(fd, 20) == Ok(true) {
            let n = read_msgs(fd, &mut msgs).unwrap_or(0);
            seen = msgs[..n]
                .iter()
                .any(|m| m.event == EVENT_PAGEFAULT && m.flags & PAGEFAULT_FLAG_WP != 0);
            if seen {
                break;
            }
        }
    }
    // Lifting the protection also wakes the writer when no message came.
    let lifted = write_protect(fd, p, len, false);
    let _ = writer.join();
    lifted.map_err(no_wp)?;
    if !seen {
        return Err(refused(
            libc::ETIMEDOUT,
            "a write to a write-protected page raised no userfaultfd message",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_sees_a_write_protect_fault_here() {
        // FACTS.md: write-protect mode works on this machine's kernel (as root).
        wp_probe().unwrap();
    }

    #[test]
    fn a_range_can_be_registered_twice_and_vanished_ranges_give_enoent() {
        let fd = open(FEATURE_PAGEFAULT_FLAG_WP).unwrap();
        let len = 4 * crate::page_size();
        let p = crate::vm::mmap_anon(len).unwrap() as u64;
        register_wp(fd, p, len as u64).unwrap();
        register_wp(fd, p, len as u64).unwrap();
        write_protect(fd, p, len as u64, true).unwrap();
        write_protect(fd, p, len as u64, false).unwrap();
        // SAFETY: the mapping made above, no longer used.
        unsafe { crate::vm::munmap(p as usize, len).unwrap() };
        assert_eq!(write_protect(fd, p, len as u64, true), Err(libc::ENOENT));
        assert!(register_wp(fd, p, len as u64).is_err());
        let mut msgs = [Msg::default(); 2];
        assert_eq!(read_msgs(fd, &mut msgs), Ok(0), "no fault, no message");
        close(fd);
    }
}
