//! gcc's ThreadSanitizer entry points, defined by tdmap instead of libtsan: `tdmap gcc`,
//! `tdmap g++` and `tdmap gfortran` compile with `-fsanitize=thread` (so gcc calls
//! `__tsan_read4` and the like before each access) and link this runtime in place of
//! libtsan. Accesses go to the same per-thread recording path as clang's callbacks
//! ([`crate::state::record`]); atomics are performed for real in [`atomic`].
//!
//! The set is the one gcc 12's cc1 knows (its `__tsan_*` builtins), a superset of what
//! `nm -u` shows on `-O2 -fsanitize=thread` C, C++ and Fortran-with-OpenMP objects.
//! gcc 12 has no `__tsan_unaligned_*` builtins: unaligned accesses come as `*_range`.

pub mod atomic;

use crate::state::{record, record_range, record_sized};
use std::ffi::c_void;

macro_rules! accesses {
    ($($name:ident => $log2:expr, $write:expr;)*) => {$(
        /// gcc `-fsanitize=thread` callback: records one access of this size and kind.
        #[no_mangle]
        pub extern "C" fn $name(addr: *const c_void) {
            record_sized::<$log2, $write>(addr as u64);
        }
    )*};
}

accesses! {
    __tsan_read1 => 0, false;
    __tsan_read2 => 1, false;
    __tsan_read4 => 2, false;
    __tsan_read8 => 3, false;
    __tsan_read16 => 4, false;
    __tsan_write1 => 0, true;
    __tsan_write2 => 1, true;
    __tsan_write4 => 2, true;
    __tsan_write8 => 3, true;
    __tsan_write16 => 4, true;
    // Only with `--param tsan-distinguish-volatile=1`; recorded like plain accesses.
    __tsan_volatile_read1 => 0, false;
    __tsan_volatile_read2 => 1, false;
    __tsan_volatile_read4 => 2, false;
    __tsan_volatile_read8 => 3, false;
    __tsan_volatile_read16 => 4, false;
    __tsan_volatile_write1 => 0, true;
    __tsan_volatile_write2 => 1, true;
    __tsan_volatile_write4 => 2, true;
    __tsan_volatile_write8 => 3, true;
    __tsan_volatile_write16 => 4, true;
}

/// gcc's call for an access it cannot size as 1–16 aligned bytes (unaligned or odd-sized).
#[no_mangle]
pub extern "C" fn __tsan_read_range(addr: *const c_void, size: usize) {
    record_range(addr as u64, size, false);
}

/// The store counterpart of [`__tsan_read_range`].
#[no_mangle]
pub extern "C" fn __tsan_write_range(addr: *const c_void, size: usize) {
    record_range(addr as u64, size, true);
}

/// A C++ object's vtable pointer is set (constructors, destructors): a pointer store.
#[no_mangle]
pub extern "C" fn __tsan_vptr_update(vptr: *mut *mut c_void, _new: *mut c_void) {
    record(vptr as u64, 3, true);
}

/// Called from each instrumented object's constructor; the runtime starts from its own
/// constructor (init.rs), so there is nothing left to do.
#[no_mangle]
pub extern "C" fn __tsan_init() {}

/// Function entry (tsan keeps a shadow call stack for its reports); tdmap needs none.
#[no_mangle]
pub extern "C" fn __tsan_func_entry(_pc: *mut c_void) {}

/// Function exit; see [`__tsan_func_entry`].
#[no_mangle]
pub extern "C" fn __tsan_func_exit() {}
