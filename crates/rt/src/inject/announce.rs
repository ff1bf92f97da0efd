//! The runtime's side of the handler announcement (`tdmap_wire::announce`): the pipe
//! `tdmap run` named in the inject settings gets one message before `main`, from the
//! handler thread itself (its tid) or from the constructor (no handler), and is closed.
//!
//! Writes here happen on the main thread in the constructor, or first thing on the
//! handler thread: plain system calls, no allocation.

use std::sync::atomic::{AtomicU32, Ordering};
use tdmap_wire::Announcement;

/// 1 once the handler thread has written its announcement (or failed to); on the page
/// the handler never protects.
const SENT: &AtomicU32 = &super::SHARED.sent;

/// The announcement descriptor `fd` if it is a pipe, marked close-on-exec; None
/// otherwise (then it is not the pipe `tdmap run` made, and is left alone).
pub fn take(fd: i32) -> Option<i32> {
    // SAFETY: `st` is plain data filled by fstat; fcntl only reads its arguments.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
            return None;
        }
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    Some(fd)
}

/// This process's id and the calling thread's id.
pub fn ids() -> (u32, u32) {
    // SAFETY: getpid and gettid have no preconditions.
    unsafe { (libc::getpid() as u32, libc::gettid() as u32) }
}

/// Writes `a` to `fd` in one `write` (16 bytes, below PIPE_BUF: never split). A reader
/// that is gone must not kill the program: SIGPIPE is blocked for the call, and one it
/// raised is taken back.
pub fn send(fd: i32, a: Announcement) {
    let bytes = a.encode();
    // SAFETY: sigset_t values are plain data initialised by sigemptyset/sigaddset; the
    // write reads a live buffer; sigtimedwait with a zero timeout only dequeues.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old);
        libc::sigpending(&mut pending);
        let was_pending = libc::sigismember(&pending, libc::SIGPIPE) == 1;
        let n = loop {
            let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            if n >= 0 || *libc::__errno_location() != libc::EINTR {
                break n;
            }
        };
        if n < 0 && *libc::__errno_location() == libc::EPIPE && !was_pending {
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            libc::sigtimedwait(&pipe, std::ptr::null_mut(), &zero);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

/// Closes the announcement pipe: the tool reads EOF.
pub fn close(fd: i32) {
    // SAFETY: closing a descriptor this module took; nothing else uses it.
    unsafe { libc::close(fd) };
}

/// On the handler thread, first thing: announces its tid on `fd` (if any) and lets
/// the constructor go on ([`wait_for_handler`]).
pub fn handler_started(fd: i32) {
    if fd >= 0 {
        let (pid, tid) = ids();
        send(fd, Announcement::Handler { pid, tid });
    }
    SENT.store(1, Ordering::Release);
    // SAFETY: FUTEX_WAKE only reads the futex word's address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            SENT.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
}

/// In the constructor: returns once the handler thread has announced itself.
pub fn wait_for_handler() {
    while SENT.load(Ordering::Acquire) == 0 {
        // SAFETY: FUTEX_WAIT reads SENT's 4 bytes; it returns at once if SENT is not 0.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                SENT.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                0u32,
                std::ptr::null::<libc::timespec>(),
            )
        };
    }
}
