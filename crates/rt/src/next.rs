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

/// libc's function `name` behind this library's wrapper of the same name, typed as
/// `unsafe extern "C" fn(args) -> ret` and looked up once per call site; `None` if
/// there is none. The caller states the signature, which must be libc's.
macro_rules! next_fn {
    ($name:ident: fn($($ty:ty),*) -> $ret:ty) => {{
        static REAL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = concat!(stringify!($name), "\0");
        let name = std::ffi::CStr::from_bytes_with_nul(name.as_bytes()).expect("NUL-ended");
        match $crate::next::symbol(&REAL, name) {
            0 => None,
            // SAFETY: a non-null result is libc's function of this name, whose signature
            // the caller states.
            f => Some(unsafe {
                std::mem::transmute::<usize, unsafe extern "C" fn($($ty),*) -> $ret>(f)
            }),
        }
    }};
}
pub(crate) use next_fn;
