//! `_exit`, `_Exit` and the `exec` family, wrapped so that a process that leaves without
//! `exit` (a forked child's usual `_exit`, an exec of another program) still flushes its
//! threads, snapshots its shared mappings and ends its part of the trace whole. A vfork
//! child (glibc's `posix_spawn` and `system` among them) runs in the parent's memory and
//! is left alone ([`crate::init::finish_process`]).
//!
//! The variadic `execl`, `execlp` and `execle` cannot be wrapped in Rust: a child that
//! uses them loses its last unflushed accesses and its part is marked incomplete.

use libc::{c_char, c_int};
use tdmap_wire::raw::{MSG_DONE, MSG_EXEC};

/// Wraps libc's `_exit`: ends the recording, then exits as it does.
#[no_mangle]
pub extern "C" fn _exit(code: c_int) -> ! {
    crate::init::finish_process(MSG_DONE);
    loop {
        // SAFETY: exit_group ends the process; it has no preconditions.
        unsafe { libc::syscall(libc::SYS_exit_group, code as libc::c_long) };
    }
}

/// Wraps libc's `_Exit`, the same function as `_exit`.
#[no_mangle]
pub extern "C" fn _Exit(code: c_int) -> ! {
    _exit(code)
}

/// Defines `name(args) -> c_int`, ending the recording then calling libc's `name`.
macro_rules! exec {
    ($name:ident($($arg:ident: $ty:ty),*)) => {
        /// Wraps libc's function of the same name (see the module documentation). If the
        /// exec fails, the process goes on unrecorded.
        ///
        /// # Safety
        /// Same contract as libc's function.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            let Some(real) = crate::next::next_fn!($name: fn($($ty),*) -> c_int) else {
                // SAFETY: errno is this thread's.
                unsafe { *libc::__errno_location() = libc::ENOSYS };
                return -1;
            };
            crate::init::finish_process(MSG_EXEC);
            // SAFETY: forwarding the caller's arguments unchanged.
            unsafe { real($($arg),*) }
        }
    };
}

exec!(execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char));
exec!(execv(path: *const c_char, argv: *const *const c_char));
exec!(execvp(file: *const c_char, argv: *const *const c_char));
exec!(execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char));
