//! The set-id functions, wrapped so that the `inject` sampler lifts every protection
//! while glibc broadcasts the change to all threads ([`crate::inject::unprotected`]).
//! Without injection they only call libc's.

/// Defines `name(args) -> c_int` calling libc's `name` through `unprotected`.
macro_rules! setid {
    ($name:ident($($arg:ident: $ty:ty),*)) => {
        /// Wraps libc's function of the same name (see the module documentation).
        ///
        /// # Safety
        /// Same contract as libc's function.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> libc::c_int {
            let Some(real) = crate::next::next_fn!($name: fn($($ty),*) -> libc::c_int) else {
                // SAFETY: errno is this thread's.
                unsafe { *libc::__errno_location() = libc::ENOSYS };
                return -1;
            };
            // SAFETY: forwarding the caller's arguments unchanged.
            crate::inject::unprotected(|| unsafe { real($($arg),*) })
        }
    };
}

setid!(setuid(uid: libc::uid_t));
setid!(setgid(gid: libc::gid_t));
setid!(seteuid(uid: libc::uid_t));
setid!(setegid(gid: libc::gid_t));
setid!(setreuid(ruid: libc::uid_t, euid: libc::uid_t));
setid!(setregid(rgid: libc::gid_t, egid: libc::gid_t));
setid!(setresuid(ruid: libc::uid_t, euid: libc::uid_t, suid: libc::uid_t));
setid!(setresgid(rgid: libc::gid_t, egid: libc::gid_t, sgid: libc::gid_t));
setid!(setgroups(size: libc::size_t, list: *const libc::gid_t));
