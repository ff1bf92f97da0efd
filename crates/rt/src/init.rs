//! Start-up and shut-down: the handshake with `tdmap trace` through the environment,
//! the exit and crash handlers, and the thread-exit hook.
//!
//! `tdmap trace` names two files that must not exist yet; the first process to create
//! them is process 0. A child it forks, and an instrumented program that a traced
//! process execs (directly or through a shell), records into files of its own, named
//! after those with `.PID` appended (`tdmap_wire::raw`), so that its stream never
//! interleaves with another process's.

use crate::io::{self, CTL_FD, DATA_FD, MAPS_FD};
use crate::state::{
    self, AGGREGATE, COLLAPSE, DEFAULT_MODE, FILTER, MODE_COUNT, MODE_RECORD, PAGE_SHIFT, PREDICT,
    TOUCHED, TOUCHED_WORDS,
};
use crate::window::{self, MODE_PAUSE};
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::OnceLock;
use tdmap_wire::raw::{self as wire, Msg};
use tdmap_wire::window::ENV_WINDOW;

const UNINIT: u8 = 0;
const BUSY: u8 = 1;
const ON: u8 = 2;
const OFF: u8 = 3;
static STATUS: AtomicU8 = AtomicU8::new(UNINIT);
static mut KEY: libc::pthread_key_t = 0;
/// The control and data paths `tdmap trace` named; a forked child appends `.PID`.
static PATHS: OnceLock<[CString; 2]> = OnceLock::new();
/// The process this runtime records; a vfork child, which runs in our memory until it
/// execs or exits, has another pid and must not end our recording.
static OWN_PID: AtomicU32 = AtomicU32::new(0);
/// The recording mode the environment asked for, restored in forked children.
static MODE: AtomicU8 = AtomicU8::new(MODE_RECORD);
/// Whether forked children record (`tdmap_wire::raw::ENV_CHILDREN`).
static CHILDREN: AtomicBool = AtomicBool::new(true);

thread_local! {
    /// When this thread last called `fork`, taken in the parent: the child inherits it
    /// (its one thread is this one) and reports it, so `tdmap trace` numbers processes
    /// in fork order. Taken in the child instead, it followed which child the scheduler
    /// ran first: under load process 3 could start before process 1.
    static FORKED_AT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Embedded in every instrumented program so that `tdmap trace` can recognise one.
#[used]
#[no_mangle]
pub static TDMAP_RT_MARKER: [u8; 24] = *wire::MARKER;

/// Runs before `main`, so the main thread gets id 0 before any thread is created.
#[used]
#[link_section = ".init_array"]
static CTOR: extern "C" fn() = ctor;

extern "C" fn ctor() {
    crate::inject::start();
    state::register_current();
}

/// True once set-up finished and this process is being traced; never starts set-up, so
/// it is safe to call from anywhere (the library-call interceptors do).
#[cfg_attr(test, allow(dead_code))] // only the interceptors, not built for tests
pub fn is_on() -> bool {
    STATUS.load(Ordering::Acquire) == ON
}

/// Sets the runtime up once; true when this process is being traced.
pub fn ensure() -> bool {
    match STATUS.load(Ordering::Acquire) {
        ON => return true,
        OFF => return false,
        _ => {}
    }
    if STATUS
        .compare_exchange(UNINIT, BUSY, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        let on = setup();
        STATUS.store(if on { ON } else { OFF }, Ordering::Release);
        return on;
    }
    while STATUS.load(Ordering::Acquire) == BUSY {
        // SAFETY: sched_yield has no preconditions.
        unsafe { libc::sched_yield() };
    }
    STATUS.load(Ordering::Acquire) == ON
}

// The variables are ignored in a set-id program (secure_getenv): an unprivileged user
// must not make it create files with its privileges (issue 21).
fn env_path(name: &str) -> Option<CString> {
    CString::new(tdmap_sys::secure_var(name)?.into_encoded_bytes()).ok()
}

fn env_flag(name: &str) -> bool {
    tdmap_sys::secure_var(name).is_some_and(|v| v == "1")
}

fn setup() -> bool {
    // SAFETY: reading our own static through a volatile pointer keeps the marker linked.
    let _ = unsafe { std::ptr::read_volatile(&TDMAP_RT_MARKER[0]) };
    let (Some(ctl), Some(data)) = (env_path(wire::ENV_CTL), env_path(wire::ENV_DATA)) else {
        return false;
    };
    let children = tdmap_sys::secure_var(wire::ENV_CHILDREN).is_none_or(|v| v != "0");
    CHILDREN.store(children, Ordering::Relaxed);
    let ctl_fd = io::create_exclusive(&ctl);
    // Taken: a traced process exec'd this program (maybe through a shell); it records
    // as a process of its own.
    let joined = ctl_fd < 0 && errno() == libc::EEXIST && children;
    let (data_fd, data_errno) = if joined {
        let Some((data_fd, data_errno)) = open_own(&ctl, &data) else {
            return false;
        };
        (data_fd, data_errno)
    } else if ctl_fd < 0 {
        return false;
    } else {
        CTL_FD.store(ctl_fd, Ordering::Relaxed);
        let data_fd = io::create_exclusive(&data);
        let data_errno = errno();
        DATA_FD.store(data_fd, Ordering::Relaxed);
        MAPS_FD.store(
            with_suffix(&data, &[wire::MAPS_SUFFIX.as_bytes()]),
            Ordering::Relaxed,
        );
        (data_fd, data_errno)
    };
    let _ = PATHS.set([ctl, data]);
    FILTER.store(env_flag(wire::ENV_FILTER), Ordering::Relaxed);
    let buffer = tdmap_sys::secure_var(wire::ENV_BUFFER).and_then(|v| v.to_str()?.parse().ok());
    // `tdmap trace` reads every process's file while the program runs, an exec'd
    // program's too (its spill.rs).
    io::BUFFER.store(buffer.unwrap_or(0), Ordering::Relaxed);
    let collapse = tdmap_sys::secure_var(wire::ENV_COLLAPSE).is_none_or(|v| v != "0");
    COLLAPSE.store(collapse, Ordering::Relaxed);
    AGGREGATE.store(env_flag(wire::ENV_AGGREGATE), Ordering::Relaxed);
    let predict = tdmap_sys::secure_var(wire::ENV_PREDICT).is_none_or(|v| v != "0");
    PREDICT.store(predict, Ordering::Relaxed);
    if env_flag(wire::ENV_COUNT_ONLY) {
        MODE.store(MODE_COUNT, Ordering::Relaxed);
    } else if window::configure(
        tdmap_sys::secure_var(ENV_WINDOW)
            .and_then(|v| v.into_string().ok())
            .as_deref(),
    ) {
        MODE.store(MODE_PAUSE, Ordering::Relaxed);
    }
    DEFAULT_MODE.store(MODE.load(Ordering::Relaxed), Ordering::Relaxed);
    setup_first_touch();
    install_hooks();
    if !hello(data_fd, data_errno) {
        return false;
    }
    if joined {
        // SAFETY: getppid has no preconditions.
        let ppid = unsafe { libc::getppid() } as u32;
        io::send(Msg {
            tag: wire::MSG_EXECED,
            b: ppid,
            a: state::now_ns(),
        });
    }
    window::start();
    crate::batch::start();
    true
}

/// Creates this process's own files, the base paths with the first free suffix `.PID`,
/// `.PID-2`, ... (taken by the image this one replaced, or by a process whose pid the
/// system reused) and installs them; the data file's descriptor and errno, None if no
/// control file could be created. Allocates nothing (it runs in a forked child).
fn open_own(ctl: &CStr, data: &CStr) -> Option<(i32, i32)> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    let mut sfx = [0u8; 24];
    let (ctl_fd, len) = (1..=64).find_map(|n| {
        let len = wire::child_suffix(pid, n, &mut sfx);
        let fd = with_suffix(ctl, &[&sfx[..len]]);
        (fd >= 0 || errno() != libc::EEXIST).then_some((fd, len))
    })?;
    if ctl_fd < 0 {
        return None;
    }
    let sfx = &sfx[..len];
    let data_fd = with_suffix(data, &[sfx]);
    let data_errno = errno();
    let maps_fd = with_suffix(data, &[sfx, wire::MAPS_SUFFIX.as_bytes()]);
    io::switch_to(ctl_fd, data_fd, maps_fd);
    Some((data_fd, data_errno))
}

fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// Sends the handshake of a process that starts recording; false (the runtime stays off)
/// when its data file could not be created (`data_errno` says why).
fn hello(data_fd: i32, data_errno: i32) -> bool {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    OWN_PID.store(pid, Ordering::Relaxed);
    io::send(Msg {
        tag: wire::MSG_HELLO,
        b: wire::VERSION,
        a: pid as u64,
    });
    let page = 1u64 << PAGE_SHIFT.load(Ordering::Relaxed);
    io::send(Msg {
        tag: wire::MSG_PAGE_SIZE,
        b: 0,
        a: page,
    });
    if data_fd < 0 {
        io::send(Msg {
            tag: wire::MSG_WRITE_FAILED,
            b: 0,
            a: data_errno as u64,
        });
        return false;
    }
    true
}

/// Creates (exclusively) the file named `base` followed by `parts`, without allocating
/// (it runs in a forked child); -1 if that fails or the name is too long.
fn with_suffix(base: &CStr, parts: &[&[u8]]) -> i32 {
    let mut buf = [0u8; 4096 + 32];
    let mut n = 0;
    for p in std::iter::once(base.to_bytes()).chain(parts.iter().copied()) {
        let Some(dst) = buf.get_mut(n..n + p.len()) else {
            return -1;
        };
        dst.copy_from_slice(p);
        n += p.len();
    }
    match CStr::from_bytes_until_nul(&buf[..=n.min(buf.len() - 1)]) {
        Ok(path) if n < buf.len() => io::create_exclusive(path),
        _ => -1,
    }
}

/// True in the process this runtime records (not in a vfork child sharing its memory).
fn own_process() -> bool {
    // SAFETY: getpid has no preconditions.
    OWN_PID.load(Ordering::Relaxed) == unsafe { libc::getpid() } as u32
}

/// Ends this process's recording whole: flushes every thread, snapshots the shared
/// mappings and sends `tag` (MSG_DONE at exit, MSG_EXEC before an exec) with the
/// accesses seen. Does nothing when not recording or in a vfork child.
pub fn finish_process(tag: u32) {
    if STATUS.load(Ordering::Acquire) != ON || !own_process() {
        return;
    }
    let seen = state::finish_all();
    crate::snapshot::maps();
    io::send(Msg { tag, b: 0, a: seen });
}

/// Starts recording in a forked child: files of its own, the calling thread as thread 0
/// and a first maps snapshot (the mappings it inherited); false if its files cannot be
/// created.
fn start_child() -> bool {
    let forked_at = FORKED_AT.with(|t| t.get());
    let Some([ctl, data]) = PATHS.get() else {
        return false;
    };
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() } as u32;
    let Some((data_fd, data_errno)) = open_own(ctl, data) else {
        return false;
    };
    if !hello(data_fd, data_errno) {
        return false;
    }
    io::send(Msg {
        tag: wire::MSG_FORKED,
        b: ppid,
        a: forked_at,
    });
    state::restart_in_child(MODE.load(Ordering::Relaxed));
    window::start();
    crate::batch::start();
    crate::snapshot::maps();
    true
}

/// Maps one bit per page of the 47-bit user address space (4 GiB of NORESERVE memory,
/// only the touched parts become real); without it there are no first-touch records.
fn setup_first_touch() {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    PAGE_SHIFT.store(page.trailing_zeros(), Ordering::Relaxed);
    let words = (1u64 << (47 - page.trailing_zeros())) / 64;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: an anonymous mapping has no preconditions.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), words as usize * 8, prot, flags, -1, 0) };
    if p != libc::MAP_FAILED {
        TOUCHED_WORDS.store(words, Ordering::Relaxed);
        TOUCHED.store(p.cast(), Ordering::Release);
    }
}

fn install_hooks() {
    // SAFETY: KEY is written once here, before any thread can read it (STATUS is BUSY).
    unsafe {
        libc::pthread_key_create(&raw mut KEY, Some(on_thread_exit));
        libc::atexit(on_exit);
        libc::pthread_atfork(
            Some(on_fork_prepare),
            Some(on_fork_parent),
            Some(on_fork_child),
        );
    }
    let fatal = on_fatal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for sig in [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGABRT,
    ] {
        catch(sig, fatal);
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT, libc::SIGHUP] {
        catch(sig, fatal);
    }
    // A file size limit should fail the write (trace incomplete), not kill the program.
    catch(libc::SIGXFSZ, libc::SIG_IGN);
}

/// Installs `handler` for `sig` unless the program already set its own disposition.
fn catch(sig: i32, handler: libc::sighandler_t) {
    // SAFETY: sigaction structs are plain data; null old-action pointers are allowed.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
            || old.sa_sigaction != libc::SIG_DFL
        {
            return;
        }
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = handler;
        act.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(sig, &act, std::ptr::null_mut());
    }
}

/// Arranges for `st` to be flushed when the calling thread exits.
pub fn watch_thread_exit(st: *mut libc::c_void) {
    // SAFETY: KEY was created in setup, which finished before any state exists.
    unsafe { libc::pthread_setspecific(KEY, st) };
}

extern "C" fn on_thread_exit(st: *mut libc::c_void) {
    // SAFETY: the key only ever holds states from register_current.
    unsafe { state::finish_thread(st.cast()) };
}

extern "C" fn on_exit() {
    finish_process(wire::MSG_DONE);
}

extern "C" fn on_fatal(sig: libc::c_int) {
    if !own_process() {
        // SAFETY: raise is async-signal-safe; the default action is back (SA_RESETHAND).
        unsafe { libc::raise(sig) };
        return;
    }
    let _ = state::finish_all();
    crate::snapshot::maps();
    io::send(Msg {
        tag: wire::MSG_CRASHED,
        b: sig as u32,
        a: 0,
    });
    // SA_RESETHAND restored the default action, so this kills the process as intended.
    // SAFETY: raise is async-signal-safe.
    unsafe { libc::raise(sig) };
}

extern "C" fn on_fork_prepare() {
    FORKED_AT.with(|t| t.set(state::now_ns()));
}

/// A parent snapshots its shared mappings at each fork too: its child shares what is
/// mapped now, and the parent may be killed before its exit snapshot.
extern "C" fn on_fork_parent() {
    if STATUS.load(Ordering::Acquire) == ON && CHILDREN.load(Ordering::Relaxed) && own_process() {
        crate::snapshot::maps();
    }
}

extern "C" fn on_fork_child() {
    if STATUS.load(Ordering::Acquire) != ON {
        return;
    }
    // The child must never write to the parent's files: its records would land among
    // the parent's, and a kill mid-write would tear the parent's stream.
    if !CHILDREN.load(Ordering::Relaxed) || !start_child() {
        io::switch_to(-1, -1, -1);
        STATUS.store(OFF, Ordering::Release);
        state::stop_all();
    }
}
