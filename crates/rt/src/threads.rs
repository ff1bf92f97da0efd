//! Stable thread ids: `pthread_create` is wrapped so that each new thread's id is taken
//! in the creating thread, in creation order, not when the thread first runs.

use crate::state::{NEXT_ID, PENDING_ID};
use std::ffi::c_void;
use std::sync::atomic::Ordering;

type StartFn = extern "C" fn(*mut c_void) -> *mut c_void;
type CreateFn = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    StartFn,
    *mut c_void,
) -> i32;

struct Start {
    start: StartFn,
    arg: *mut c_void,
    id: u32,
}

fn real_create() -> Option<CreateFn> {
    crate::next::next_fn!(pthread_create: fn(
        *mut libc::pthread_t,
        *const libc::pthread_attr_t,
        StartFn,
        *mut c_void
    ) -> i32)
}

extern "C" fn trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the Start box leaked by pthread_create below, read exactly once.
    let s = unsafe { Box::from_raw(p.cast::<Start>()) };
    PENDING_ID.with(|c| c.set(s.id));
    (s.start)(s.arg)
}

/// Wraps libc's `pthread_create`, reserving the new thread's id in creation order.
///
/// # Safety
/// Same contract as libc's `pthread_create`.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: StartFn,
    arg: *mut c_void,
) -> i32 {
    let Some(real) = real_create() else {
        return libc::EAGAIN;
    };
    // `tdmap exec`'s pinning wraps the start routine first (unchanged when off).
    let (start, arg) = crate::pin::wrap(start, arg);
    // SAFETY: forwarding the caller's arguments, with pin's start routine if it wrapped.
    let rc = unsafe { create(real, thread, attr, start, arg) };
    if rc != 0 {
        crate::pin::not_created(start, arg);
    }
    rc
}

/// libc's `pthread_create`, with the trace's thread id reserved when tracing.
///
/// # Safety
/// Same contract as libc's `pthread_create`.
unsafe fn create(
    real: CreateFn,
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: StartFn,
    arg: *mut c_void,
) -> i32 {
    if !crate::init::ensure() {
        // SAFETY: forwarding the caller's arguments unchanged.
        return unsafe { real(thread, attr, start, arg) };
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let boxed = Box::into_raw(Box::new(Start { start, arg, id }));
    // SAFETY: the caller's arguments, with our trampoline owning `boxed`.
    let rc = unsafe { real(thread, attr, trampoline, boxed.cast()) };
    if rc != 0 {
        // SAFETY: the thread was not created, so `boxed` is still ours.
        drop(unsafe { Box::from_raw(boxed) });
    }
    rc
}
