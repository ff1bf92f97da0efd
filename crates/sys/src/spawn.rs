//! Starting an unmodified program held at a gate, so that the page-fault sampler can be
//! attached to its pid before it runs a single instruction of its own: `tdmap run` forks,
//! the child waits on a pipe, tdmap opens the perf events on the child's pid, then lets
//! it `execve`. (std's `Command::spawn` returns only after the exec, too late.)
//!
//! Between fork and exec the child only calls async-signal-safe functions (close, read,
//! write, sigaction, execve, _exit): everything it needs is prepared before the fork.
//!
//! The program gets what a shell would give it: tdmap's stdin, stdout and stderr, closed
//! ones included (Rust's runtime puts /dev/null on a closed one before `main`; a
//! constructor notes which were closed before that, and the child closes them again);
//! SIGPIPE's default action (Rust's runtime ignores it, and an ignored signal stays
//! ignored across execve), unless tdmap itself was started with it ignored; and the
//! signal mask tdmap inherited, untouched.
//! Gated children started at the same time by several threads inherit each other's
//! (close-on-exec) pipe ends until they exec; `release` may then wait for the others'
//! release too. `tdmap run` starts one.

use crate::SysError;
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU8, Ordering};

/// A forked child waiting at its gate, then the program it became.
#[derive(Debug)]
pub struct GatedChild {
    pid: i32,
    /// Write end of the gate pipe; closed once released.
    gate: Option<i32>,
    /// Read end of the exec-error pipe; closed once released.
    errs: Option<i32>,
    /// A pidfd of the child (Linux 5.3+), readable once it has ended.
    pidfd: Option<OwnedFd>,
    reaped: bool,
}

/// Bit k set: standard descriptor k was closed when tdmap started.
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);
/// 1 when SIGPIPE was ignored when tdmap started (by whoever started it).
static PIPE_IGNORED_AT_START: AtomicU8 = AtomicU8::new(0);

/// Notes which of descriptors 0-2 are closed, and whether SIGPIPE is ignored, before
/// Rust's runtime changes both (in `main`'s prologue, after the constructors).
extern "C" fn note_start_state() {
    let mut closed = 0u8;
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads the descriptor's flags.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            closed |= 1 << fd;
        }
    }
    CLOSED_AT_START.store(closed, Ordering::Relaxed);
    // SAFETY: reads the current disposition into a zeroed, live struct.
    let ignored = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    };
    PIPE_IGNORED_AT_START.store(ignored as u8, Ordering::Relaxed);
}

#[used]
#[link_section = ".init_array"]
static NOTE_START_STATE: extern "C" fn() = note_start_state;

/// Finds `program` as execvp would: a name with a slash as is (if it exists: execve then
/// says why it cannot run), otherwise the first executable file in `PATH`, else the
/// first file of that name there (execve then gives the real error, e.g. EACCES).
pub fn resolve(program: &OsStr) -> Option<PathBuf> {
    let is_file = |p: &Path| p.metadata().is_ok_and(|m| m.is_file());
    let is_exe = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.as_bytes().contains(&b'/') {
        let p = PathBuf::from(program);
        return p.exists().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let found = || std::env::split_paths(&path).map(|d| d.join(program));
    found()
        .find(|p| is_exe(p))
        .or_else(|| found().find(|p| is_file(p)))
}

fn cstring(s: &OsStr) -> Result<CString, SysError> {
    CString::new(s.as_bytes()).map_err(|_| SysError::Invalid {
        call: "execve",
        what: format!("{s:?} holds a NUL byte"),
    })
}

fn pipe() -> Result<(i32, i32), SysError> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the 2-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SysError::last_os("pipe2"));
    }
    Ok((fds[0], fds[1]))
}

fn close(fd: i32) {
    // SAFETY: closing a descriptor this module opened and no longer uses.
    unsafe { libc::close(fd) };
}

/// The child side of the fork: wait at the gate, then become the program.
///
/// # Safety
/// Call only in the child of a fork; the pointers must be the NUL-terminated arrays
/// prepared before the fork.
unsafe fn child(
    [gate, gate_w, errs_r, errs]: [i32; 4],
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
) -> ! {
    // Without this the child itself would hold the gate open and never see EOF.
    libc::close(gate_w);
    libc::close(errs_r);
    let mut b = 0u8;
    loop {
        let n = libc::read(gate, &mut b as *mut u8 as *mut libc::c_void, 1);
        if n == 1 {
            break;
        }
        // EOF: the parent is gone or gave up, so the program must not run unwatched.
        if n == 0 || *libc::__errno_location() != libc::EINTR {
            libc::_exit(127);
        }
    }
    if PIPE_IGNORED_AT_START.load(Ordering::Relaxed) == 0 {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGPIPE, &dfl, std::ptr::null_mut());
    }
    let closed = CLOSED_AT_START.load(Ordering::Relaxed);
    for fd in 0..3 {
        if closed & (1 << fd) != 0 {
            libc::close(fd);
        }
    }
    libc::execve(path, argv, envp);
    let e = *libc::__errno_location();
    libc::write(errs, &e as *const i32 as *const libc::c_void, 4);
    libc::_exit(127);
}

/// Forks a child that will run `program` with `args` (and this process's environment)
/// once [`GatedChild::release`] is called; until then it runs nothing of the program.
/// A program that cannot be found is refused before the fork.
pub fn spawn_gated(program: &OsStr, args: &[OsString]) -> Result<GatedChild, SysError> {
    spawn_gated_env(program, args, &[])
}

/// [`spawn_gated`] with the variables of `env` set (or replaced) in the program's
/// environment, e.g. `LD_PRELOAD` for the `inject` sampler's runtime.
pub fn spawn_gated_env(
    program: &OsStr,
    args: &[OsString],
    env: &[(OsString, OsString)],
) -> Result<GatedChild, SysError> {
    let path = resolve(program).ok_or_else(|| SysError::Refused {
        call: "execve",
        err: std::io::Error::from_raw_os_error(libc::ENOENT),
        fix: "no such executable program: check its name, its x bit and PATH",
    })?;
    let path = cstring(path.as_os_str())?;
    let argv: Vec<CString> = std::iter::once(program)
        .chain(args.iter().map(OsString::as_os_str))
        .map(cstring)
        .collect::<Result<_, _>>()?;
    let envp: Vec<CString> = std::env::vars_os()
        .filter(|(k, _)| env.iter().all(|(o, _)| o != k))
        .chain(env.iter().cloned())
        .map(|(k, v)| {
            let mut kv = k;
            kv.push("=");
            kv.push(v);
            cstring(&kv)
        })
        .collect::<Result<_, _>>()?;
    let nul_terminated = |v: &[CString]| -> Vec<*const libc::c_char> {
        v.iter()
            .map(|c| c.as_ptr())
            .chain([std::ptr::null()])
            .collect()
    };
    let (argv_p, envp_p) = (nul_terminated(&argv), nul_terminated(&envp));
    let (gate_r, gate_w) = pipe()?;
    let (errs_r, errs_w) = pipe()?;
    // SAFETY: the child branch calls only async-signal-safe functions on data prepared
    // above, which the fork copied; the parent branch continues normally.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: we are the child of the fork and the arrays are NUL-terminated.
        unsafe {
            child(
                [gate_r, gate_w, errs_r, errs_w],
                path.as_ptr(),
                argv_p.as_ptr(),
                envp_p.as_ptr(),
            )
        }
    }
    close(gate_r);
    close(errs_w);
    if pid < 0 {
        close(gate_w);
        close(errs_r);
        return Err(SysError::last_os("fork"));
    }
    Ok(GatedChild {
        pid,
        gate: Some(gate_w),
        errs: Some(errs_r),
        pidfd: pidfd_open(pid),
        reaped: false,
    })
}

/// A pidfd of `pid`, or None on kernels before 5.3 (callers then poll with a timeout).
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a non-negative result is a descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

impl GatedChild {
    /// The child's pid, which the program keeps after exec.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// A descriptor that polls readable once the child has ended (a pidfd), if the
    /// kernel has pidfds: the monitor wakes at the program's end instead of a tick later.
    pub fn exit_fd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_ref().map(|f| f.as_fd())
    }

    /// Opens the gate; returns once the program runs, or with execve's error.
    pub fn release(&mut self) -> Result<(), SysError> {
        let (Some(gate), Some(errs)) = (self.gate.take(), self.errs.take()) else {
            return Ok(());
        };
        let b = 1u8;
        // SAFETY: writes one byte from a live local to our pipe.
        let wrote = unsafe { libc::write(gate, &b as *const u8 as *const libc::c_void, 1) };
        let write_err = (wrote != 1).then(|| SysError::last_os("write"));
        close(gate);
        let mut e = 0i32;
        let mut got = 0usize;
        while got < 4 {
            // SAFETY: reads at most the 4 - got bytes left of the local `e`.
            let n = unsafe {
                libc::read(
                    errs,
                    (&mut e as *mut i32 as *mut u8).add(got) as *mut libc::c_void,
                    4 - got,
                )
            };
            match n {
                n if n > 0 => got += n as usize,
                0 => break,
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
                _ => break,
            }
        }
        close(errs);
        if let Some(err) = write_err {
            return Err(err);
        }
        if got == 4 {
            let _ = self.wait();
            return Err(SysError::Refused {
                call: "execve",
                err: std::io::Error::from_raw_os_error(e),
                fix:
                    "the program exists but could not be executed: check its format and permissions",
            });
        }
        Ok(())
    }

    /// Waits for the child to end and returns its status.
    pub fn wait(&mut self) -> Result<ExitStatus, SysError> {
        loop {
            if let Some(st) = self.wait_flags(0)? {
                return Ok(st);
            }
        }
    }

    /// The child's status if it has ended, without blocking.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, SysError> {
        self.wait_flags(libc::WNOHANG)
    }

    fn wait_flags(&mut self, flags: i32) -> Result<Option<ExitStatus>, SysError> {
        let mut status = 0;
        // SAFETY: waitpid writes one int into `status`.
        let rc = unsafe { libc::waitpid(self.pid, &mut status, flags) };
        if rc == self.pid {
            self.reaped = true;
            return Ok(Some(ExitStatus::from_raw(status)));
        }
        if rc == 0 || std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            return Ok(None);
        }
        Err(SysError::last_os("waitpid"))
    }
}

impl Drop for GatedChild {
    fn drop(&mut self) {
        // An unreleased child never runs the program: it is killed at its gate. (If tdmap
        // itself dies, the child reads EOF at the gate and exits on its own.)
        let unreleased = self.gate.is_some();
        for fd in [self.gate.take(), self.errs.take()].into_iter().flatten() {
            close(fd);
        }
        if unreleased && !self.reaped {
            // SAFETY: kill only sends a signal to our own, not yet reaped, child.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            let _ = self.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gated `sh` that creates a mark file then exits 7, with the mark's folder.
    fn marking_child(tag: &str) -> (PathBuf, PathBuf, GatedChild) {
        let dir = std::env::temp_dir().join(format!("tdmap-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mark = dir.join("ran");
        let script = format!("touch {}; exit 7", mark.display());
        let args = [OsString::from("-c"), script.into()];
        let c = spawn_gated(OsStr::new("sh"), &args).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        (dir, mark, c)
    }

    #[test]
    fn the_program_runs_only_after_release_and_its_status_comes_back() {
        let (dir, mark, mut c) = marking_child("gate");
        assert!(!mark.exists(), "the program ran before release");
        c.release().unwrap();
        assert_eq!(c.wait().unwrap().code(), Some(7));
        assert!(mark.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn extra_variables_reach_the_program_and_replace_inherited_ones() {
        let dir = std::env::temp_dir().join(format!("tdmap-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("env");
        let script = format!("echo \"$TDMAP_SPAWN_TEST:$HOME\" > {}", out.display());
        let env = [
            ("TDMAP_SPAWN_TEST".into(), "yes".into()),
            ("HOME".into(), "/nowhere".into()),
        ];
        let args = [OsString::from("-c"), script.into()];
        let mut c = spawn_gated_env(OsStr::new("sh"), &args, &env).unwrap();
        c.release().unwrap();
        assert_eq!(c.wait().unwrap().code(), Some(0));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "yes:/nowhere\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_program_is_refused_before_forking() {
        let err = spawn_gated(OsStr::new("./does-not-exist"), &[]).unwrap_err();
        assert_eq!(err.errno(), Some(libc::ENOENT));
        assert!(err.to_string().contains("execve"), "{err}");
        assert!(err.to_string().contains("PATH"), "{err}");
    }

    #[test]
    fn an_unexecutable_file_fails_at_release_with_execves_errno() {
        let dir = std::env::temp_dir().join(format!("tdmap-noexec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("garbage");
        std::fs::write(&f, [0u8, 1, 2, 3]).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Another test's fork may briefly hold the file open for writing (ETXTBSY).
        let errno = (0..20)
            .map(|_| {
                let mut c = spawn_gated(f.as_os_str(), &[]).unwrap();
                let err = c.release().unwrap_err();
                std::thread::sleep(std::time::Duration::from_millis(20));
                err.errno()
            })
            .find(|&e| e != Some(libc::ETXTBSY));
        assert_eq!(errno, Some(Some(libc::ENOEXEC)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 21: `tdmap run -- /etc/passwd` said "No such file or directory".
    #[test]
    fn a_file_without_its_x_bit_fails_at_release_with_eacces() {
        let mut c = spawn_gated(OsStr::new("/etc/passwd"), &[]).unwrap();
        assert_eq!(c.release().unwrap_err().errno(), Some(libc::EACCES));
    }

    #[test]
    fn dropping_an_unreleased_child_never_runs_the_program() {
        let (dir, mark, c) = marking_child("drop");
        drop(c);
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!mark.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
