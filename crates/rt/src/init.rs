//! Start-up and shut-down: the handshake with `tdmap trace` through the environment,
//! the exit and crash handlers, and the thread-exit hook.
//!
//! `tdmap trace` names two files that must not exist yet; the first process to create
//! them owns the trace, so an instrumented child the program execs stays silent.

use crate::io::{self, CTL_FD, DATA_FD};
use crate::state::{self, DEFAULT_MODE, FILTER, MODE_COUNT, PAGE_SHIFT, TOUCHED, TOUCHED_WORDS};
use std::ffi::CString;
use std::sync::atomic::{AtomicU8, Ordering};
use tdmap_wire::raw::{self as wire, Msg};

const UNINIT: u8 = 0;
const BUSY: u8 = 1;
const ON: u8 = 2;
const OFF: u8 = 3;
static STATUS: AtomicU8 = AtomicU8::new(UNINIT);
static mut KEY: libc::pthread_key_t = 0;

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
    let ctl_fd = io::create_exclusive(&ctl);
    if ctl_fd < 0 {
        return false;
    }
    CTL_FD.store(ctl_fd, Ordering::Relaxed);
    let data_fd = io::create_exclusive(&data);
    DATA_FD.store(data_fd, Ordering::Relaxed);
    FILTER.store(env_flag(wire::ENV_FILTER), Ordering::Relaxed);
    if env_flag(wire::ENV_COUNT_ONLY) {
        DEFAULT_MODE.store(MODE_COUNT, Ordering::Relaxed);
    }
    setup_first_touch();
    install_hooks();
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u64;
    io::send(Msg {
        tag: wire::MSG_HELLO,
        b: wire::VERSION,
        a: pid,
    });
    let page = 1u64 << PAGE_SHIFT.load(Ordering::Relaxed);
    io::send(Msg {
        tag: wire::MSG_PAGE_SIZE,
        b: 0,
        a: page,
    });
    if data_fd < 0 {
        // SAFETY: __errno_location returns this thread's errno slot.
        let e = unsafe { *libc::__errno_location() };
        io::send(Msg {
            tag: wire::MSG_WRITE_FAILED,
            b: 0,
            a: e as u64,
        });
        return false;
    }
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
        libc::pthread_atfork(None, None, Some(on_fork_child));
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
    if STATUS.load(Ordering::Acquire) != ON {
        return;
    }
    let seen = state::finish_all();
    io::send(Msg {
        tag: wire::MSG_DONE,
        b: 0,
        a: seen,
    });
}

extern "C" fn on_fatal(sig: libc::c_int) {
    let _ = state::finish_all();
    io::send(Msg {
        tag: wire::MSG_CRASHED,
        b: sig as u32,
        a: 0,
    });
    // SA_RESETHAND restored the default action, so this kills the process as intended.
    // SAFETY: raise is async-signal-safe.
    unsafe { libc::raise(sig) };
}

extern "C" fn on_fork_child() {
    // The child shares our descriptors; its records would corrupt the parent's trace.
    STATUS.store(OFF, Ordering::Release);
    state::stop_all();
}
