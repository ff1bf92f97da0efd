//! Environment variables that name paths or switch behaviour on, read so that a
//! set-id program ignores them: the runtime and libmai are linked into programs that
//! may be setuid, and a variable set by an unprivileged user must not make them create
//! or append to files with the program's privileges (issue 21).

use std::ffi::{c_char, CString, OsString};
use std::os::unix::ffi::OsStringExt;

extern "C" {
    /// glibc (2.17+) and musl: `getenv`, but NULL in secure-execution mode (AT_SECURE:
    /// setuid, setgid or file capabilities).
    fn secure_getenv(name: *const c_char) -> *mut c_char;
}

/// The value of `name`, as `std::env::var_os`, but None in a set-id process (AT_SECURE).
/// Like `getenv`, it must not race with a thread that changes the environment.
pub fn secure_var(name: &str) -> Option<OsString> {
    let name = CString::new(name).ok()?;
    // SAFETY: `name` is NUL-terminated; a non-null result points to a NUL-terminated
    // string in the environment, copied before anything can change it.
    unsafe {
        let p = secure_getenv(name.as_ptr());
        if p.is_null() {
            return None;
        }
        let bytes = std::ffi::CStr::from_ptr(p).to_bytes().to_vec();
        Some(OsString::from_vec(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_var_os_in_a_process_that_is_not_set_id() {
        assert_eq!(secure_var("PATH"), std::env::var_os("PATH"));
        assert_eq!(secure_var("TDMAP_SURELY_UNSET_VARIABLE"), None);
        assert_eq!(secure_var("A\0B"), None);
    }
}
