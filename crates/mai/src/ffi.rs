//! The FFI boundary: every exported function runs its body through [`guard`], which turns
//! an error into the documented return value plus errno and a panic into EIO, so that
//! nothing unwinds into C.

use crate::error::{MaiError, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Sets the calling thread's errno.
pub fn set_errno(e: i32) {
    // SAFETY: __errno_location returns the calling thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = e };
}

/// Runs `f`; on error sets errno and returns `on_err`.
pub fn guard<T>(on_err: T, f: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)).unwrap_or(Err(MaiError::Panic)) {
        Ok(v) => v,
        Err(e) => {
            if tdmap_sys::secure_var("MAI_DEBUG").is_some() {
                eprintln!("libmai: {e}");
            }
            set_errno(e.errno());
            on_err
        }
    }
}

/// `guard` for calls that return 0 or -1.
pub fn status(f: impl FnOnce() -> Result<()>) -> i32 {
    guard(-1, || f().map(|()| 0))
}

/// A C int that must be a non-negative count.
pub fn count(what: &str, v: i64) -> Result<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| MaiError::Invalid(format!("{what} = {v}")))
}
