//! Signal forwarding for every command that runs a program (`tdmap run`, `tdmap trace`):
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to tdmap go to the program instead of killing
//! tdmap, so tdmap sees the program end, writes its report or trace, and exits with the
//! program's status. A signal the terminal sent to the whole foreground process group
//! (Ctrl-C: `si_code` SI_KERNEL) already reached the program, which shares tdmap's group,
//! and is not sent a second time.
//!
//! The handler only calls async-signal-safe functions: `pidfd_send_signal` on a pidfd
//! opened beforehand (so a reaped program's pid, reused by another process, is never
//! signalled), else `kill`. The program itself starts with default dispositions (see
//! spawn.rs): execve resets these handlers.

use crate::SysError;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// The signals forwarded to the program.
pub const FORWARDED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Signals that stop a program on request (the forwarded ones and SIGKILL): a run they
/// end was cut short, not crashed.
pub const STOP_SIGNALS: [i32; 5] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGKILL,
];

/// The program's pid, 0 when none.
static PID: AtomicI32 = AtomicI32::new(0);
/// A pidfd of the program, -1 when none.
static PIDFD: AtomicI32 = AtomicI32::new(-1);
/// The last forwarded-kind signal tdmap received, 0 when none.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// How many of them tdmap received.
static COUNT: AtomicU64 = AtomicU64::new(0);
/// True while a [`Forwarding`] exists.
static ACTIVE: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: errno is thread-local; saving and restoring it keeps the interrupted code's.
    let errno = unsafe { *libc::__errno_location() };
    RECEIVED.store(sig, Ordering::Relaxed);
    COUNT.fetch_add(1, Ordering::Relaxed);
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo_t (null checked anyway).
    let code = if info.is_null() {
        0
    } else {
        unsafe { (*info).si_code }
    };
    if code != libc::SI_KERNEL {
        let fd = PIDFD.load(Ordering::Relaxed);
        let pid = PID.load(Ordering::Relaxed);
        // SAFETY: pidfd_send_signal and kill are async-signal-safe system calls.
        unsafe {
            if fd >= 0 {
                libc::syscall(libc::SYS_pidfd_send_signal, fd, sig, 0usize, 0u32);
            } else if pid > 0 {
                libc::kill(pid, sig);
            }
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// While alive, [`FORWARDED`] signals go to the program; dropping it restores the
/// dispositions tdmap had. One may exist at a time.
#[derive(Debug)]
pub struct Forwarding {
    old: Vec<(i32, libc::sigaction)>,
    pidfd: Option<OwnedFd>,
}

/// Forwards [`FORWARDED`] signals to `pid` (a child not yet reaped) until the returned
/// guard is dropped.
pub fn forward_signals(pid: i32) -> Result<Forwarding, SysError> {
    if pid <= 0 {
        return Err(SysError::Invalid {
            call: "sigaction",
            what: format!("cannot forward signals to pid {pid}"),
        });
    }
    if ACTIVE.swap(true, Ordering::AcqRel) {
        return Err(SysError::Invalid {
            call: "sigaction",
            what: "signals are already forwarded to another program".into(),
        });
    }
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a non-negative result is a descriptor that nothing else owns.
    let pidfd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) });
    PID.store(pid, Ordering::Relaxed);
    PIDFD.store(
        pidfd.as_ref().map_or(-1, |f| f.as_raw_fd()),
        Ordering::Relaxed,
    );
    RECEIVED.store(0, Ordering::Relaxed);
    COUNT.store(0, Ordering::Relaxed);
    let mut fwd = Forwarding {
        old: Vec::new(),
        pidfd,
    };
    for sig in FORWARDED {
        // SAFETY: all-zero is a valid sigaction (empty mask, no flags).
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_signal as *const () as usize;
        // SA_RESTART: tdmap's own reads and waits carry on; poll loops see EINTR.
        act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SAFETY: as above.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are to live sigaction structs; the handler is
        // async-signal-safe.
        if unsafe { libc::sigaction(sig, &act, &mut old) } != 0 {
            return Err(SysError::last_os("sigaction"));
        }
        fwd.old.push((sig, old));
    }
    Ok(fwd)
}

impl Forwarding {
    /// The last of [`FORWARDED`] that tdmap received (forwarded or not), if any.
    pub fn received(&self) -> Option<i32> {
        Some(RECEIVED.load(Ordering::Relaxed)).filter(|&s| s != 0)
    }

    /// How many of [`FORWARDED`] tdmap received so far: a caller that outlives the
    /// program (e.g. to write its trace) compares counts to see a signal meant for itself.
    pub fn count(&self) -> u64 {
        COUNT.load(Ordering::Relaxed)
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        for (sig, old) in &self.old {
            // SAFETY: `old` came from the kernel through sigaction.
            unsafe { libc::sigaction(*sig, old, std::ptr::null_mut()) };
        }
        PID.store(0, Ordering::Relaxed);
        PIDFD.store(-1, Ordering::Relaxed);
        self.pidfd.take();
        ACTIVE.store(false, Ordering::Release);
    }
}
