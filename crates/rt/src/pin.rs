//! `tdmap exec`'s pinning inside the program: with [`pin::ENV`] set, the main thread
//! (thread 0) is pinned before `main`, and each thread the program creates is pinned by
//! itself as it starts, to the CPU of its number in creation order (numbers are taken in
//! the creating thread, so they follow `pthread_create` order, not start order). Later
//! batches of threads keep counting, so a mapping long enough for every batch pins them
//! all; with the cycle flag thread k takes CPU k mod n. Each pin, and each thread left
//! beyond the list, is written as a record to the file `tdmap exec` named, which it
//! reports from once the program has ended ([`tdmap_wire::pin`]).
//!
//! A thread beyond the list gets the CPUs the process had before main was pinned
//! (otherwise it would inherit its creator's single CPU).
//!
//! A thread pins itself rather than being pinned from outside, so it cannot have exited
//! yet: a failure here is the CPU (EINVAL: outside the thread's cpuset). A thread whose
//! creator set an affinity in its attributes is re-pinned as the mapping says.

use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::OnceLock;
use tdmap_wire::pin::{self as wire, Record, Settings};

type StartFn = extern "C" fn(*mut c_void) -> *mut c_void;

static SETTINGS: OnceLock<Settings> = OnceLock::new();
/// The process's CPUs before main was pinned: where threads beyond the list run, rather
/// than on the CPU of whichever thread created them.
static UNPINNED: OnceLock<Vec<usize>> = OnceLock::new();
/// The record file, -1 when not pinning.
static LOG: AtomicI32 = AtomicI32::new(-1);
/// The next created thread's number (main is 0).
static NEXT: AtomicU32 = AtomicU32::new(1);

/// Runs before `main`: reads the settings and pins the main thread.
#[used]
#[link_section = ".init_array"]
static CTOR: extern "C" fn() = ctor;

extern "C" fn ctor() {
    let Some(value) = tdmap_sys::secure_var(wire::ENV) else {
        return;
    };
    let Ok(s) = value
        .into_string()
        .map_err(drop)
        .and_then(|v| Settings::decode(&v).map_err(drop))
    else {
        return;
    };
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != s.parent {
        return;
    }
    if let Some(path) = tdmap_sys::secure_var(wire::ENV_LOG)
        .and_then(|p| std::ffi::CString::new(p.into_encoded_bytes()).ok())
    {
        let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC;
        // SAFETY: a NUL-terminated path; no O_CREAT, so no mode argument is needed.
        LOG.store(
            unsafe { libc::open(path.as_ptr(), flags) },
            Ordering::Relaxed,
        );
    }
    let n = s.cpus.len() as u32;
    if let Ok(cpus) = tdmap_sys::Sys::get_affinity(&tdmap_sys::LinuxSys, 0) {
        let _ = UNPINNED.set(cpus);
    }
    let settings = SETTINGS.get_or_init(|| s);
    log(wire::KIND_HELLO, 0, n, 0);
    pin_self(settings, 0);
}

struct Start {
    start: StartFn,
    arg: *mut c_void,
    thread: u32,
}

/// The start routine and argument to hand libc's `pthread_create`: ours, owning the
/// program's, when pinning; the program's unchanged otherwise.
pub fn wrap(start: StartFn, arg: *mut c_void) -> (StartFn, *mut c_void) {
    if SETTINGS.get().is_none() {
        return (start, arg);
    }
    let thread = NEXT.fetch_add(1, Ordering::Relaxed);
    let boxed = Box::into_raw(Box::new(Start { start, arg, thread }));
    (trampoline, boxed.cast())
}

/// Frees what [`wrap`] made when the thread could not be created (its number is lost:
/// the next thread does not take it, as the program would not expect a shift).
pub fn not_created(start: StartFn, arg: *mut c_void) {
    if start as usize == trampoline as StartFn as usize {
        // SAFETY: `arg` is the box wrap leaked, which no thread received.
        drop(unsafe { Box::from_raw(arg.cast::<Start>()) });
    }
}

extern "C" fn trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the Start box leaked by wrap, read exactly once.
    let s = unsafe { Box::from_raw(p.cast::<Start>()) };
    if let Some(settings) = SETTINGS.get() {
        pin_self(settings, s.thread);
    }
    (s.start)(s.arg)
}

fn pin_self(s: &Settings, thread: u32) {
    let set = |cpus: &[usize]| match tdmap_sys::Sys::set_affinity(&tdmap_sys::LinuxSys, 0, cpus) {
        Ok(()) => 0,
        Err(e) => e.errno().unwrap_or(libc::EINVAL) as u32,
    };
    let Some(cpu) = s.cpu_of(thread) else {
        let errno = UNPINNED.get().map_or(0, |all| set(all));
        log(wire::KIND_BEYOND, thread, 0, errno);
        return;
    };
    log(wire::KIND_PIN, thread, cpu, set(&[cpu as usize]));
}

fn log(kind: u32, thread: u32, cpu: u32, errno: u32) {
    let fd = LOG.load(Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    // SAFETY: getpid and gettid have no preconditions.
    let (pid, tid) = unsafe {
        (
            libc::getpid() as u32,
            libc::syscall(libc::SYS_gettid) as u32,
        )
    };
    let rec = Record {
        kind,
        pid,
        thread,
        tid,
        cpu,
        errno,
    }
    .encode();
    // SAFETY: writes the record's bytes from a live local array; one write per record
    // on an O_APPEND file, so records from several threads never interleave.
    unsafe { libc::write(fd, rec.as_ptr().cast(), rec.len()) };
}
