//! The runtime's own threads (the injector's fault handler, `--window`'s clock): started
//! with every signal blocked, so that the program's signals never run on them.

use std::ffi::{c_void, CStr};

/// A thread's start routine.
pub type StartFn = extern "C" fn(*mut c_void) -> *mut c_void;

/// libc's `pthread_create`, or what stands for it.
pub type CreateFn = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    StartFn,
    *mut c_void,
) -> i32;

/// Where the thread's stack is, and whether anyone joins it.
pub enum Shape {
    /// A detached thread on a stack libc allocates.
    Detached,
    /// A thread on the given stack range (address, length), which must outlive it.
    Stack(usize, usize),
}

/// Starts `start(arg)` through `create` as a thread named `name`, with every signal
/// blocked in it (it inherits the mask in force at creation, then the caller's is
/// restored); else the errno.
pub fn spawn(
    create: CreateFn,
    shape: Shape,
    start: StartFn,
    arg: *mut c_void,
    name: &CStr,
) -> Result<(), i32> {
    // SAFETY: sigset_t, pthread_attr_t and pthread_t are plain data initialised by the
    // calls below; a given stack range is the caller's and outlives the thread (`Shape`).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        match shape {
            Shape::Detached => {
                libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
            }
            Shape::Stack(addr, len) => {
                libc::pthread_attr_setstack(&mut attr, addr as *mut c_void, len);
            }
        }
        let mut t: libc::pthread_t = 0;
        let rc = create(&mut t, &attr, start, arg);
        libc::pthread_attr_destroy(&mut attr);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if rc != 0 {
            return Err(rc);
        }
        libc::pthread_setname_np(t, name.as_ptr());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    extern "C" fn report_mask(p: *mut c_void) -> *mut c_void {
        // SAFETY: `p` is the boxed sender below, taken back exactly once.
        let tx = unsafe { Box::from_raw(p.cast::<mpsc::Sender<bool>>()) };
        // SAFETY: reading this thread's mask into a zeroed sigset_t.
        let blocked = unsafe {
            let mut cur: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_SETMASK, std::ptr::null(), &mut cur);
            libc::sigismember(&cur, libc::SIGTERM) == 1
                && libc::sigismember(&cur, libc::SIGINT) == 1
        };
        let _ = tx.send(blocked);
        std::ptr::null_mut()
    }

    #[test]
    fn the_thread_runs_with_signals_blocked_and_the_caller_keeps_its_mask() {
        let (tx, rx) = mpsc::channel::<bool>();
        let arg = Box::into_raw(Box::new(tx)).cast();
        spawn(
            libc::pthread_create,
            Shape::Detached,
            report_mask,
            arg,
            c"tdmap-test",
        )
        .unwrap();
        assert!(
            rx.recv().unwrap(),
            "SIGTERM or SIGINT not blocked in the thread"
        );
        // SAFETY: reading this thread's mask into a zeroed sigset_t.
        let here = unsafe {
            let mut cur: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_SETMASK, std::ptr::null(), &mut cur);
            libc::sigismember(&cur, libc::SIGTERM)
        };
        assert_eq!(here, 0, "the caller's mask was not restored");
    }
}
