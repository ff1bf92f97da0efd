//! The `inject` sampler's half inside the program (kMAF §3.1.2, extra page faults): when
//! `tdmap run --sampler inject` preloads this library with [`env::ENV`] set, the
//! constructor starts one handler thread that write-protects a sample of the program's
//! anonymous memory every period (a different sample each time) and lifts the
//! protection of each page on its next write. Each such write faults once more, and `tdmap run`'s perf page-fault sampler
//! records it with the thread, the address and the CPU, like a first touch: the
//! injector sends nothing itself and never waits for the monitor, so the program goes
//! on if the monitor dies.
//!
//! The handler thread is known to the monitor by construction: with an announcement
//! pipe in the settings, the constructor returns only once the handler thread has
//! written its own tid there (`tdmap_wire::announce`), before `main` and so before the
//! program's first thread; the pipe is then closed. Its name and the beacon fault stay,
//! for monitors that pass no pipe.
//!
//! When the monitor dies the program is reparented: the handler notices at its next
//! period and closes the userfaultfd, which lifts every protection.
//!
//! Processes: only the monitor's direct child injects (an `exec` keeps the pid and the
//! parent, so the program's image after an `exec` injects again). A forked child has no
//! handler thread; the kernel (without `UFFD_FEATURE_EVENT_FORK`) gives it its memory
//! unregistered and unprotected, and the `atfork` hook closes its copy of the
//! descriptor. `munmap` and `mremap` drop registrations in the kernel; the handler skips
//! ranges that vanished and registers new ones at its next pass.
//!
//! Limits: writes only (reads of a protected page do not fault, so read-only sharing is
//! not seen). A program that calls `setuid` while multi-threaded runs glibc's set-id
//! signal handler on the handler thread too (glibc does not let it be blocked), and that
//! handler writes a counter on the caller's stack, and the kernel writes each thread's
//! signal frame on its stack: a page protected there would leave the handler thread
//! waiting on itself (it happened: `tests/run_inject.rs`,
//! `setuid_in_a_threaded_program_does_not_hang`). The set-id functions are therefore
//! wrapped ([`unprotected`]): protection passes pause and every protection is lifted
//! for the call. Calls glibc makes internally (`initgroups` calling `setgroups`) are not
//! wrapped.

mod announce;
mod handler;
pub(crate) mod maps;

use crate::quiet_thread::{self, Shape};
use handler::Injector;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use tdmap_sys::uffd;
use tdmap_wire::inject as env;

/// Stack of the handler thread (glibc also puts its descriptor and TLS there).
const STACK: usize = 256 * 1024;
/// The words the handler thread writes outside its own mapping, on one page that it
/// never protects: a write of its own to a protected page would wait for itself. It
/// happened: in a `tdmap cc` program the runtime's statics lie in the anonymous part of
/// `.bss`, which is eligible, and the handler hung at its first pass that sampled that
/// page (`tests/run_inject.rs`, `the_handlers_own_words_are_never_protected`).
#[repr(C, align(4096))]
struct Shared {
    /// The userfaultfd, -1 when not injecting.
    fd: AtomicI32,
    /// Set-id calls under way ([`unprotected`]): no protection pass starts meanwhile.
    paused: AtomicU32,
    /// 1 while the handler thread protects pages.
    busy: AtomicU32,
    /// 1 once the handler thread may have protected pages since they were last all
    /// lifted.
    protected: AtomicU32,
    /// 1 once the handler thread has written its announcement (`announce`).
    sent: AtomicU32,
}

static SHARED: Shared = Shared {
    fd: AtomicI32::new(-1),
    paused: AtomicU32::new(0),
    busy: AtomicU32::new(0),
    protected: AtomicU32::new(0),
    sent: AtomicU32::new(0),
};
const FD: &AtomicI32 = &SHARED.fd;
const PAUSED: &AtomicU32 = &SHARED.paused;
const BUSY: &AtomicU32 = &SHARED.busy;
const PROTECTED: &AtomicU32 = &SHARED.protected;

/// The page that holds [`SHARED`], never protected.
fn shared_page(page: usize) -> handler::Region {
    let at = std::ptr::addr_of!(SHARED) as usize & !(page - 1);
    handler::Region::new(at as u64, (at + page) as u64)
}

/// Runs `f`, a set-id call, with no page of the program write-protected. glibc runs its
/// set-id handler on every thread, the handler thread included, and the kernel writes
/// each thread's signal frame on its stack: a protected page there would make the
/// handler thread wait on itself. So no pass starts, the pass under way stops at its
/// next page (the two flags, sequentially consistent: either the handler sees `PAUSED`
/// or this sees `BUSY`), and every protection is lifted before the call.
pub fn unprotected<T>(f: impl FnOnce() -> T) -> T {
    let fd = FD.load(Ordering::Acquire);
    if fd < 0 {
        return f();
    }
    PAUSED.fetch_add(1, Ordering::SeqCst);
    while BUSY.load(Ordering::SeqCst) != 0 {
        // Sleep rather than spin: the handler thread needs a CPU to see PAUSED, and
        // wakes this futex when it is done (the timeout covers a missed wake-up).
        let ms = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        // SAFETY: FUTEX_WAIT reads BUSY's 4 bytes and `ms`, both live for the call.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                BUSY.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                1u32,
                &ms as *const libc::timespec,
            )
        };
    }
    // Cleared only once all is lifted: a concurrent caller that still sees it set
    // lifts too.
    if PROTECTED.load(Ordering::SeqCst) != 0 {
        // Writes to protected pages here (the heap buffer) fault and are resolved as
        // usual: the handler thread is not protecting.
        let mut buf = vec![0u8; handler::MAPS_BUF];
        maps::for_each_eligible(&mut buf, |l| {
            let _ = uffd::write_protect(fd, l.start, l.end - l.start, false);
        });
        PROTECTED.store(0, Ordering::SeqCst);
    }
    let r = f();
    PAUSED.fetch_sub(1, Ordering::SeqCst);
    r
}

/// The handler thread starts protecting unless a set-id call is under way.
fn begin_pass() -> bool {
    BUSY.store(1, Ordering::SeqCst);
    if PAUSED.load(Ordering::SeqCst) == 0 {
        PROTECTED.store(1, Ordering::SeqCst);
        return true;
    }
    BUSY.store(0, Ordering::SeqCst);
    false
}

/// The handler thread is done protecting; wakes a set-id call waiting for that.
fn end_pass() {
    BUSY.store(0, Ordering::SeqCst);
    if PAUSED.load(Ordering::SeqCst) != 0 {
        // SAFETY: FUTEX_WAKE only reads the futex word's address.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                BUSY.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            )
        };
    }
}

/// True while a set-id call waits for the pass under way.
fn paused() -> bool {
    PAUSED.load(Ordering::SeqCst) != 0
}

/// Starts the injector if this process is the one `tdmap run` asked for. Runs in the
/// constructor, before `main`, while the process has a single thread.
///
/// With an announcement pipe in the settings, it returns only once the pipe holds the
/// handler's tid ([`tdmap_wire::Announcement::Handler`], written by the handler thread
/// itself) or [`tdmap_wire::Announcement::NoHandler`], and the pipe is closed: the
/// monitor knows the handler before the program can start a thread of its own.
pub fn start() {
    // Ignored in a set-id program (secure_getenv): nothing injects, nothing is written.
    let Some(s) = tdmap_sys::secure_var(env::ENV)
        .and_then(|v| v.into_string().ok())
        .and_then(|v| env::Settings::decode(&v).ok())
    else {
        return;
    };
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != s.monitor {
        // Not the process `tdmap run` started: any descriptor number in the settings
        // is not ours to write to or close.
        return;
    }
    let announce_fd = s.announce_fd.and_then(announce::take);
    forget_announce_fd(&s);
    let result = uffd::open(uffd::FEATURE_PAGEFAULT_FLAG_WP).and_then(|fd| {
        FD.store(fd, Ordering::Release);
        spawn(fd, &s, announce_fd.unwrap_or(-1)).inspect_err(|_| stop())
    });
    let Some(afd) = announce_fd else { return };
    match result {
        Ok(()) => announce::wait_for_handler(),
        Err(errno) => {
            let pid = announce::ids().0;
            let errno = errno.max(0) as u32;
            announce::send(afd, tdmap_wire::Announcement::NoHandler { pid, errno });
        }
    }
    announce::close(afd);
}

/// Drops the announcement descriptor from `TDMAP_INJECT`: the program's children and
/// any image it `exec`s inherit the variable, and the number may by then name another
/// file of theirs.
fn forget_announce_fd(s: &env::Settings) {
    if s.announce_fd.is_none() {
        return;
    }
    let value = env::Settings {
        announce_fd: None,
        ..*s
    }
    .encode();
    let (Ok(name), Ok(value)) = (
        std::ffi::CString::new(env::ENV),
        std::ffi::CString::new(value),
    ) else {
        return;
    };
    // SAFETY: two NUL-terminated strings; the process has one thread (constructor).
    unsafe { libc::setenv(name.as_ptr(), value.as_ptr(), 1) };
}

/// Maps the handler's memory and starts its thread, which announces itself on
/// `announce_fd` (-1: none); the errno of the step that failed.
fn spawn(fd: i32, s: &env::Settings, announce_fd: i32) -> Result<(), i32> {
    let page = tdmap_sys::page_size();
    let size = (std::mem::size_of::<Injector>() + STACK).next_multiple_of(page);
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE;
    // SAFETY: no address, no MAP_FIXED: the kernel picks a free range.
    let area = unsafe {
        tdmap_sys::vm::raw_mmap(0, size, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0)
    }
    .map_err(|e| e.errno().unwrap_or(libc::ENOMEM))?;
    // No MADV_DONTFORK: glibc's fork walks every thread's descriptor in the child, and
    // the handler's lives on this stack.
    let inj = area as *mut Injector;
    // SAFETY: the mapping is fresh, zeroed (a valid Injector) and large enough.
    let st = unsafe { &mut *inj };
    st.fd = fd;
    st.page = page as u64;
    st.period_ns = s.period_ms * 1_000_000;
    st.fraction = s.fraction;
    st.max_pages = s.pages;
    st.monitor = s.monitor;
    st.own = [
        handler::Region::new(area as u64, (area + size) as u64),
        shared_page(page),
    ];
    st.own.sort_by_key(|r| r.start);
    st.beacon = map_beacon(page);
    st.announce_fd = announce_fd;
    let stack = area + std::mem::size_of::<Injector>().next_multiple_of(page);
    // The handler's first run of each code path would fault code pages (and the vDSO's
    // clock page) in, and a short program may end before the monitor can tell the
    // handler's samples from a thread's by its name: run the paths once here, on the
    // main thread, before anything is protected.
    st.warm_up();
    // SAFETY: only function pointers to our own extern "C" functions.
    unsafe { libc::pthread_atfork(None, None, Some(forked_child)) };
    let started = start_thread(stack, area + size - stack, inj);
    if started.is_err() {
        // SAFETY: no thread was started, so nothing uses the mapping any more.
        let _ = unsafe { tdmap_sys::vm::munmap(area, size) };
    }
    started
}

/// Maps the read-only beacon page (see [`env::BEACON`]); 0 if the address is taken.
fn map_beacon(page: usize) -> u64 {
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE;
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
    match unsafe {
        tdmap_sys::vm::raw_mmap(env::BEACON as usize, page, libc::PROT_READ, flags, -1, 0)
    } {
        Ok(a) if a as u64 == env::BEACON => env::BEACON,
        Ok(a) => {
            // A kernel without MAP_FIXED_NOREPLACE took the address as a hint only.
            // SAFETY: the page just mapped, used by nobody.
            let _ = unsafe { tdmap_sys::vm::munmap(a, page) };
            0
        }
        Err(_) => 0,
    }
}

/// Starts the handler on the given stack with every signal blocked; else the errno.
fn start_thread(stack: usize, len: usize, inj: *mut Injector) -> Result<(), i32> {
    // The stack range belongs to our mapping and outlives the thread.
    let shape = Shape::Stack(stack, len);
    quiet_thread::spawn(
        libc::pthread_create,
        shape,
        handler_main,
        inj.cast(),
        THREAD_NAME_C,
    )
}

const THREAD_NAME_C: &std::ffi::CStr = c"tdmap-inject";

extern "C" fn handler_main(p: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, THREAD_NAME_C.as_ptr()) };
    // SAFETY: `p` is the Injector set up by `spawn`, used by this thread only.
    let inj = unsafe { &mut *p.cast::<Injector>() };
    // Before anything else this thread does, so that the monitor has the tid before
    // this thread's first fault (the beacon's) and before `main` runs.
    announce::handler_started(inj.announce_fd);
    if inj.beacon != 0 {
        // SAFETY: the beacon is a mapped, readable page; reading it faults once.
        unsafe { std::ptr::read_volatile(inj.beacon as *const u8) };
    }
    inj.run()
}

/// Closes the userfaultfd, if open: the kernel then unregisters and unprotects all
/// memory and wakes the writers waiting on it. Async-signal-safe (close and an atomic).
fn stop() {
    let fd = FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        uffd::close(fd);
    }
}

/// In a forked child: the kernel already unregistered and unprotected its memory; drop
/// the inherited descriptor.
extern "C" fn forked_child() {
    stop();
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_c_thread_name_is_the_one_the_monitor_looks_for() {
        assert_eq!(
            super::THREAD_NAME_C.to_str().unwrap(),
            super::env::THREAD_NAME
        );
    }
}
