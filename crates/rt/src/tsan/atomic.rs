//! gcc's `__tsan_atomic*` entry points, performed for real: with `-fsanitize=thread`
//! every atomic builtin (C11 `<stdatomic.h>`, C++ `std::atomic`, `__sync_*`, OpenMP
//! `atomic` in gfortran) becomes one of these calls, so the program is only correct if
//! each does what the builtin would have done, at the memory order asked for or a
//! stronger one. Each also records one access: a load as a read, everything else as a
//! write (the line is written, or at least claimed exclusively).
//!
//! Signatures follow compiler-rt's `tsan_interface_atomic.h`; the memory order is
//! gcc's memmodel (0 relaxed, 1 consume, 2 acquire, 3 release, 4 acq_rel, 5 seq_cst,
//! upper bits such as `__ATOMIC_HLE_*` or gcc's sync flag ignored).

use crate::state::record;
use std::sync::atomic::Ordering::{self, AcqRel, Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicI16, AtomicI32, AtomicI64, AtomicI8};

/// The order of a read-modify-write; unknown values are taken as seq_cst.
fn rmw(mo: i32) -> Ordering {
    match mo & 0x7fff {
        0 => Relaxed,
        1 | 2 => Acquire,
        3 => Release,
        4 => AcqRel,
        _ => SeqCst,
    }
}

/// The order of a load: release and acq_rel are not load orders; take seq_cst.
fn load(mo: i32) -> Ordering {
    match rmw(mo) {
        o @ (Relaxed | Acquire) => o,
        _ => SeqCst,
    }
}

/// The order of a store: acquire and acq_rel are not store orders; take seq_cst.
fn store(mo: i32) -> Ordering {
    match rmw(mo) {
        o @ (Relaxed | Release) => o,
        _ => SeqCst,
    }
}

/// The failure order of a compare-exchange (a load).
fn fail(mo: i32) -> Ordering {
    match rmw(mo) {
        Relaxed | Release => Relaxed,
        Acquire | AcqRel => Acquire,
        _ => SeqCst,
    }
}

macro_rules! width {
    ($at:ty, $t:ty, $log2:expr, $load:ident, $store:ident, $xchg:ident, $add:ident,
     $sub:ident, $and:ident, $or:ident, $xor:ident, $nand:ident, $cas:ident, $casw:ident) => {
        /// Atomic load (`__atomic_load_n`).
        ///
        /// # Safety
        /// `a` points to a live, aligned object of this width, as for the builtin.
        #[no_mangle]
        pub unsafe extern "C" fn $load(a: *mut $t, mo: i32) -> $t {
            record(a as u64, $log2, false);
            // SAFETY: the caller's contract.
            unsafe { <$at>::from_ptr(a) }.load(load(mo))
        }

        /// Atomic store (`__atomic_store_n`).
        ///
        /// # Safety
        /// As for the load.
        #[no_mangle]
        pub unsafe extern "C" fn $store(a: *mut $t, v: $t, mo: i32) {
            record(a as u64, $log2, true);
            // SAFETY: the caller's contract.
            unsafe { <$at>::from_ptr(a) }.store(v, store(mo))
        }

        width!(@rmw $at, $t, $log2, $xchg, swap);
        width!(@rmw $at, $t, $log2, $add, fetch_add);
        width!(@rmw $at, $t, $log2, $sub, fetch_sub);
        width!(@rmw $at, $t, $log2, $and, fetch_and);
        width!(@rmw $at, $t, $log2, $or, fetch_or);
        width!(@rmw $at, $t, $log2, $xor, fetch_xor);
        width!(@rmw $at, $t, $log2, $nand, fetch_nand);
        width!(@cas $at, $t, $log2, $cas, compare_exchange);
        width!(@cas $at, $t, $log2, $casw, compare_exchange_weak);
    };
    (@rmw $at:ty, $t:ty, $log2:expr, $name:ident, $op:ident) => {
        /// Atomic read-modify-write returning the old value (`__atomic_fetch_*`,
        /// `__atomic_exchange_n`).
        ///
        /// # Safety
        /// `a` points to a live, aligned object of this width, as for the builtin.
        #[no_mangle]
        pub unsafe extern "C" fn $name(a: *mut $t, v: $t, mo: i32) -> $t {
            record(a as u64, $log2, true);
            // SAFETY: the caller's contract.
            unsafe { <$at>::from_ptr(a) }.$op(v, rmw(mo))
        }
    };
    (@cas $at:ty, $t:ty, $log2:expr, $name:ident, $op:ident) => {
        /// Compare-exchange: on failure the current value goes to `*c`; 1 on success.
        ///
        /// # Safety
        /// `a` and `c` point to live, aligned objects of this width.
        #[no_mangle]
        pub unsafe extern "C" fn $name(a: *mut $t, c: *mut $t, v: $t, mo: i32, fmo: i32) -> i32 {
            record(a as u64, $log2, true);
            // SAFETY: the caller's contract.
            let (at, expected) = unsafe { (<$at>::from_ptr(a), *c) };
            match at.$op(expected, v, rmw(mo), fail(fmo)) {
                Ok(_) => 1,
                Err(now) => {
                    // SAFETY: the caller's contract.
                    unsafe { *c = now };
                    0
                }
            }
        }
    };
}

width!(
    AtomicI8,
    i8,
    0,
    __tsan_atomic8_load,
    __tsan_atomic8_store,
    __tsan_atomic8_exchange,
    __tsan_atomic8_fetch_add,
    __tsan_atomic8_fetch_sub,
    __tsan_atomic8_fetch_and,
    __tsan_atomic8_fetch_or,
    __tsan_atomic8_fetch_xor,
    __tsan_atomic8_fetch_nand,
    __tsan_atomic8_compare_exchange_strong,
    __tsan_atomic8_compare_exchange_weak
);
width!(
    AtomicI16,
    i16,
    1,
    __tsan_atomic16_load,
    __tsan_atomic16_store,
    __tsan_atomic16_exchange,
    __tsan_atomic16_fetch_add,
    __tsan_atomic16_fetch_sub,
    __tsan_atomic16_fetch_and,
    __tsan_atomic16_fetch_or,
    __tsan_atomic16_fetch_xor,
    __tsan_atomic16_fetch_nand,
    __tsan_atomic16_compare_exchange_strong,
    __tsan_atomic16_compare_exchange_weak
);
width!(
    AtomicI32,
    i32,
    2,
    __tsan_atomic32_load,
    __tsan_atomic32_store,
    __tsan_atomic32_exchange,
    __tsan_atomic32_fetch_add,
    __tsan_atomic32_fetch_sub,
    __tsan_atomic32_fetch_and,
    __tsan_atomic32_fetch_or,
    __tsan_atomic32_fetch_xor,
    __tsan_atomic32_fetch_nand,
    __tsan_atomic32_compare_exchange_strong,
    __tsan_atomic32_compare_exchange_weak
);
width!(
    AtomicI64,
    i64,
    3,
    __tsan_atomic64_load,
    __tsan_atomic64_store,
    __tsan_atomic64_exchange,
    __tsan_atomic64_fetch_add,
    __tsan_atomic64_fetch_sub,
    __tsan_atomic64_fetch_and,
    __tsan_atomic64_fetch_or,
    __tsan_atomic64_fetch_xor,
    __tsan_atomic64_fetch_nand,
    __tsan_atomic64_compare_exchange_strong,
    __tsan_atomic64_compare_exchange_weak
);

/// `atomic_thread_fence`.
#[no_mangle]
pub extern "C" fn __tsan_atomic_thread_fence(mo: i32) {
    match rmw(mo) {
        Relaxed => {}
        o => std::sync::atomic::fence(o),
    }
}

/// `atomic_signal_fence`: orders against a signal handler on this thread only.
#[no_mangle]
pub extern "C" fn __tsan_atomic_signal_fence(mo: i32) {
    match rmw(mo) {
        Relaxed => {}
        o => std::sync::atomic::compiler_fence(o),
    }
}

mod wide;
pub use wide::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_entry_point_does_what_its_builtin_does() {
        let mut x: i32 = 5;
        let p = &raw mut x;
        // SAFETY: `p` points to a live local for every call.
        unsafe {
            assert_eq!(__tsan_atomic32_fetch_add(p, 3, 5), 5);
            assert_eq!(__tsan_atomic32_fetch_sub(p, 1, 0), 8);
            assert_eq!(__tsan_atomic32_fetch_nand(p, 3, 5), 7);
            assert_eq!(__tsan_atomic32_load(p, 2), !(7 & 3));
            __tsan_atomic32_store(p, 10, 3);
            assert_eq!(__tsan_atomic32_exchange(p, 11, 4), 10);
            let mut c = 0;
            assert_eq!(
                __tsan_atomic32_compare_exchange_strong(p, &mut c, 1, 5, 5),
                0
            );
            assert_eq!(c, 11, "a failed exchange returns the current value");
            assert_eq!(
                __tsan_atomic32_compare_exchange_strong(p, &mut c, 1, 5, 5),
                1
            );
            assert_eq!(x, 1);
        }
        let mut b: i8 = 0b0110;
        // SAFETY: as above.
        unsafe {
            assert_eq!(__tsan_atomic8_fetch_and(&raw mut b, 0b0100, 5), 0b0110);
            assert_eq!(__tsan_atomic8_fetch_or(&raw mut b, 1, 5), 0b0100);
            assert_eq!(__tsan_atomic8_fetch_xor(&raw mut b, 0b0101, 5), 0b0101);
        }
        assert_eq!(b, 0);
    }

    #[test]
    fn orders_are_never_weaker_than_asked() {
        for mo in 0..6 {
            let _ = (load(mo), store(mo), fail(mo));
        }
        assert_eq!(load(3), SeqCst);
        assert_eq!(store(2), SeqCst);
        assert_eq!(rmw(5 | 1 << 15), SeqCst, "gcc's sync flag is ignored");
        assert_eq!(rmw(2 | 1 << 16), Acquire, "the HLE bits are ignored");
    }
}
