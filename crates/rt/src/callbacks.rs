//! The SanitizerCoverage entry points: clang-16 with
//! `-fsanitize-coverage=edge,trace-loads,trace-stores` calls these before each access.

use crate::state::record_sized;

macro_rules! callbacks {
    ($($name:ident => $log2:expr, $write:expr;)*) => {$(
        /// SanitizerCoverage callback: records one access of this size and kind.
        #[no_mangle]
        pub extern "C" fn $name(addr: *const u8) {
            record_sized::<$log2, $write>(addr as u64);
        }
    )*};
}

callbacks! {
    __sanitizer_cov_load1 => 0, false;
    __sanitizer_cov_load2 => 1, false;
    __sanitizer_cov_load4 => 2, false;
    __sanitizer_cov_load8 => 3, false;
    __sanitizer_cov_load16 => 4, false;
    __sanitizer_cov_store1 => 0, true;
    __sanitizer_cov_store2 => 1, true;
    __sanitizer_cov_store4 => 2, true;
    __sanitizer_cov_store8 => 3, true;
    __sanitizer_cov_store16 => 4, true;
}

/// Edge-coverage guard callback; tdmap needs no edge coverage, so it does nothing.
#[no_mangle]
pub extern "C" fn __sanitizer_cov_trace_pc_guard(_guard: *mut u32) {}

/// Edge-coverage guard set-up callback; does nothing, like the guard callback.
#[no_mangle]
pub extern "C" fn __sanitizer_cov_trace_pc_guard_init(_start: *mut u32, _stop: *mut u32) {}
