//! libc's own functions behind this library's wrappers of the same names.

use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The address of `name` in the libraries loaded after this one (libc), looked up once
/// and kept in `cache`; 0 if there is none.
pub fn symbol(cache: &AtomicUsize, name: &CStr) -> usize {
    let mut f = cache.load(Ordering::Acquire);
    if f == 0 {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name has no other preconditions.
        f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
        cache.store(f, Ordering::Release);
    }
    f
}
