//! Runs a risky library call in a forked child, so that a crash inside a C library
//! (hwloc 2.9 dies of SIGSEGV on some damaged XML files) becomes an error in tdmap
//! instead of killing it. The child runs one closure, reports an exit status and never
//! returns; its stderr goes to a memory file that the parent reads back, so that the
//! library's last words can name the problem without cluttering tdmap's own output.

use crate::SysError;
use std::ffi::CStr;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::{Duration, Instant};

/// The exit status of a child whose closure panicked.
pub const PANICKED: i32 = 101;

/// The most of the child's stderr that is kept.
const STDERR_MAX: u64 = 64 * 1024;

/// How an isolated call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildEnd {
    /// The closure returned this status (or [`PANICKED`]).
    Exited(i32),
    /// The child was killed by this signal: the library crashed.
    Signaled(i32),
    /// The child was still running at the deadline and was killed.
    TimedOut,
}

/// What an isolated call left behind.
#[derive(Debug, Clone)]
pub struct Isolated {
    /// How it ended.
    pub end: ChildEnd,
    /// What the child wrote to stderr (at most 64 KiB, lossily decoded).
    pub stderr: String,
}

/// The name of signal `sig` (`SIGSEGV`), or its number.
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGKILL => "SIGKILL".into(),
        _ => format!("signal {sig}"),
    }
}

/// Runs `f` in a forked child, with the variables `env` set in the child only, and waits
/// for it at most `timeout`; the child's exit status is what `f` returns. Nothing `f`
/// does reaches the parent but that status and its stderr: it must report through the
/// status.
///
/// The child is a copy of a process that may have other threads, and only the calling
/// thread exists in it: `f` must not wait for another thread or for a lock another thread
/// may hold at the fork (Rust's environment lock included: hence `env`, set with libc,
/// rather than `std::env::set_var` in `f`). A caller whose library has global locks holds
/// its own lock around both its calls and this one. Allocating is fine (glibc resets its
/// allocator's locks in the child). A child still running at `timeout` is killed.
pub fn run_isolated<F: FnOnce() -> i32>(
    timeout: Duration,
    env: &[(&CStr, &CStr)],
    f: F,
) -> Result<Isolated, SysError> {
    // SAFETY: the name is a NUL-terminated string that memfd_create only reads.
    let fd = unsafe { libc::memfd_create(c"tdmap-isolated-stderr".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(SysError::last_os("memfd_create"));
    }
    // SAFETY: `fd` was just created and nothing else owns it.
    let mut log = unsafe { File::from_raw_fd(fd) };
    // SAFETY: fork has no memory preconditions; the child below only runs `f` and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(SysError::last_os("fork"));
    }
    if pid == 0 {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: dup2 takes two descriptors, the memory file being open in this child;
        // setrlimit reads one rlimit. A crash is expected here, not worth a core file.
        unsafe {
            libc::dup2(log.as_raw_fd(), libc::STDERR_FILENO);
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        }
        for (name, value) in env {
            // SAFETY: both are NUL-terminated strings that setenv copies; this child has
            // one thread, so nothing reads the environment meanwhile.
            unsafe { libc::setenv(name.as_ptr(), value.as_ptr(), 1) };
        }
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(PANICKED);
        // SAFETY: _exit ends the child at once, without running the parent's exit
        // handlers or flushing the stdio buffers it copied from the parent.
        unsafe { libc::_exit(code) }
    }
    let end = wait(pid, timeout)?;
    let mut stderr = Vec::new();
    log.seek(SeekFrom::Start(0))
        .and_then(|_| (&mut log).take(STDERR_MAX).read_to_end(&mut stderr))
        .map_err(|err| SysError::Syscall { call: "read", err })?;
    Ok(Isolated {
        end,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// Reaps `pid`, killing it once `timeout` has passed.
fn wait(pid: libc::pid_t, timeout: Duration) -> Result<ChildEnd, SysError> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_micros(200);
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes one int into `status`.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if rc == pid {
            return Ok(if libc::WIFSIGNALED(status) {
                ChildEnd::Signaled(libc::WTERMSIG(status))
            } else {
                ChildEnd::Exited(libc::WEXITSTATUS(status))
            });
        }
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(SysError::Syscall {
                    call: "waitpid",
                    err,
                });
            }
        }
        if Instant::now() >= deadline {
            // SAFETY: `pid` is this process's child and is not reaped yet; waitpid writes
            // one int into `status`.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Ok(ChildEnd::TimedOut);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(30);

    #[test]
    fn the_closures_status_and_stderr_come_back() {
        let env = [(c"TDMAP_ISOLATE_TEST", c"child")];
        let r = run_isolated(LONG, &env, || {
            // Not eprintln!, which the test harness captures: the library writes to fd 2.
            use std::io::Write;
            // libc's getenv, not std::env::var, whose lock another test thread may hold.
            // SAFETY: the name is NUL-terminated; the child has one thread, and getenv's
            // result, when not null, is a NUL-terminated string of the environment.
            let v = unsafe {
                let p = libc::getenv(c"TDMAP_ISOLATE_TEST".as_ptr());
                if p.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(p).to_string_lossy().into_owned()
                }
            };
            let _ = writeln!(std::io::stderr(), "hello from the {v}");
            7
        })
        .unwrap();
        assert_eq!(r.end, ChildEnd::Exited(7));
        assert_eq!(r.stderr, "hello from the child\n");
        assert!(
            std::env::var_os("TDMAP_ISOLATE_TEST").is_none(),
            "set in the parent"
        );
    }

    #[test]
    fn a_crash_in_the_child_is_a_signal_not_a_crash_of_the_caller() {
        // abort, not raise(SIGSEGV): Rust's stack-overflow handler catches a raised SIGSEGV
        // and returns (a real fault runs again after it and kills the child).
        // SAFETY: abort has no preconditions; it kills the child, which is the test.
        let r = run_isolated(LONG, &[], || unsafe { libc::abort() }).unwrap();
        assert_eq!(r.end, ChildEnd::Signaled(libc::SIGABRT));
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
    }

    #[test]
    fn a_panic_is_an_exit_status() {
        let r = run_isolated(LONG, &[], || panic!("boom")).unwrap();
        assert_eq!(r.end, ChildEnd::Exited(PANICKED));
    }

    #[test]
    fn a_child_past_its_deadline_is_killed() {
        let r = run_isolated(Duration::from_millis(50), &[], || loop {
            std::thread::sleep(Duration::from_secs(1));
        })
        .unwrap();
        assert_eq!(r.end, ChildEnd::TimedOut);
    }
}
