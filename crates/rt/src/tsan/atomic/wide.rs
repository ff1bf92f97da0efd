//! The 128-bit `__tsan_atomic128_*` entry points. Rust has no stable 128-bit atomic, so
//! everything is built on one compare-exchange: `lock cmpxchg16b` on x86-64 (what
//! libatomic uses on CPUs with CX16, so uninstrumented code sharing the object agrees),
//! a process-wide spin lock elsewhere. `lock cmpxchg16b` is a full barrier, so every
//! memory order is honoured.

use crate::state::record;

/// Atomically: if `*p == old` then `*p = new`; returns the value seen before.
///
/// # Safety
/// `p` is valid for reads and writes and 16-byte aligned.
#[cfg(target_arch = "x86_64")]
unsafe fn cas(p: *mut i128, old: i128, new: i128) -> i128 {
    let (lo, hi): (u64, u64);
    // rbx cannot be named as an operand: swap the new value's low half in and out around
    // the instruction. The address is pinned to rdi, because a `reg` operand may be
    // given rbx itself (it was, in a debug build), which the swap would overwrite.
    // SAFETY: the caller's contract; rbx is restored before the block ends.
    unsafe {
        std::arch::asm!(
            "xchg {nlo}, rbx",
            "lock cmpxchg16b xmmword ptr [rdi]",
            "mov rbx, {nlo}",
            in("rdi") p,
            nlo = inout(reg) new as u64 => _,
            in("rcx") (new >> 64) as u64,
            inout("rax") old as u64 => lo,
            inout("rdx") (old >> 64) as u64 => hi,
            options(nostack),
        );
    }
    ((hi as u128) << 64 | lo as u128) as i128
}

/// As above, under a process-wide spin lock where there is no 16-byte compare-exchange.
///
/// # Safety
/// `p` is valid for reads and writes.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn cas(p: *mut i128, old: i128, new: i128) -> i128 {
    use std::sync::atomic::{AtomicBool, Ordering};
    static LOCK: AtomicBool = AtomicBool::new(false);
    while LOCK.swap(true, Ordering::Acquire) {
        std::hint::spin_loop();
    }
    // SAFETY: the caller's contract; the lock serialises every 128-bit atomic.
    let now = unsafe { p.read_volatile() };
    if now == old {
        // SAFETY: as above.
        unsafe { p.write_volatile(new) };
    }
    LOCK.store(false, Ordering::Release);
    now
}

/// Applies `f` atomically; returns the old value.
///
/// # Safety
/// As for [`cas`].
unsafe fn update(p: *mut i128, f: impl Fn(i128) -> i128) -> i128 {
    // SAFETY: the caller's contract; a torn first guess only costs one more round.
    let mut cur = unsafe { p.read_volatile() };
    loop {
        // SAFETY: the caller's contract.
        let seen = unsafe { cas(p, cur, f(cur)) };
        if seen == cur {
            return cur;
        }
        cur = seen;
    }
}

/// 128-bit atomic load.
///
/// # Safety
/// `a` points to a live, writable, 16-byte aligned object (cmpxchg16b writes).
#[no_mangle]
pub unsafe extern "C" fn __tsan_atomic128_load(a: *mut i128, _mo: i32) -> i128 {
    record(a as u64, 4, false);
    // SAFETY: the caller's contract; exchanging 0 for 0 leaves the value as it was.
    unsafe { cas(a, 0, 0) }
}

/// 128-bit atomic store.
///
/// # Safety
/// As for the load.
#[no_mangle]
pub unsafe extern "C" fn __tsan_atomic128_store(a: *mut i128, v: i128, _mo: i32) {
    record(a as u64, 4, true);
    // SAFETY: the caller's contract.
    unsafe { update(a, |_| v) };
}

macro_rules! rmw128 {
    ($($name:ident => $f:expr;)*) => {$(
        /// 128-bit atomic read-modify-write returning the old value.
        ///
        /// # Safety
        /// As for the load.
        #[no_mangle]
        pub unsafe extern "C" fn $name(a: *mut i128, v: i128, _mo: i32) -> i128 {
            record(a as u64, 4, true);
            let f: fn(i128, i128) -> i128 = $f;
            // SAFETY: the caller's contract.
            unsafe { update(a, |x| f(x, v)) }
        }
    )*};
}

rmw128! {
    __tsan_atomic128_exchange => |_, v| v;
    __tsan_atomic128_fetch_add => |x, v| x.wrapping_add(v);
    __tsan_atomic128_fetch_sub => |x, v| x.wrapping_sub(v);
    __tsan_atomic128_fetch_and => |x, v| x & v;
    __tsan_atomic128_fetch_or => |x, v| x | v;
    __tsan_atomic128_fetch_xor => |x, v| x ^ v;
    __tsan_atomic128_fetch_nand => |x, v| !(x & v);
}

/// 128-bit compare-exchange; the weak form never fails spuriously here.
///
/// # Safety
/// `a` and `c` point to live, 16-byte aligned objects.
#[no_mangle]
pub unsafe extern "C" fn __tsan_atomic128_compare_exchange_strong(
    a: *mut i128,
    c: *mut i128,
    v: i128,
    _mo: i32,
    _fmo: i32,
) -> i32 {
    record(a as u64, 4, true);
    // SAFETY: the caller's contract.
    unsafe {
        let expected = *c;
        let seen = cas(a, expected, v);
        if seen == expected {
            1
        } else {
            *c = seen;
            0
        }
    }
}

/// See [`__tsan_atomic128_compare_exchange_strong`].
///
/// # Safety
/// As there.
#[no_mangle]
pub unsafe extern "C" fn __tsan_atomic128_compare_exchange_weak(
    a: *mut i128,
    c: *mut i128,
    v: i128,
    mo: i32,
    fmo: i32,
) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { __tsan_atomic128_compare_exchange_strong(a, c, v, mo, fmo) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_atomics_act_on_all_128_bits() {
        let mut x: i128 = (1 << 100) | 7;
        let p = &raw mut x;
        // SAFETY: `p` points to an aligned live local.
        unsafe {
            assert_eq!(__tsan_atomic128_load(p, 5), (1 << 100) | 7);
            assert_eq!(__tsan_atomic128_fetch_add(p, 1 << 64, 5), (1 << 100) | 7);
            assert_eq!(x, (1 << 100) | (1 << 64) | 7);
            __tsan_atomic128_store(p, -1, 5);
            let mut c = 0;
            assert_eq!(
                __tsan_atomic128_compare_exchange_strong(p, &mut c, 3, 5, 5),
                0
            );
            assert_eq!(c, -1);
            assert_eq!(
                __tsan_atomic128_compare_exchange_weak(p, &mut c, 3, 5, 5),
                1
            );
            assert_eq!(__tsan_atomic128_exchange(p, 9, 5), 3);
            assert_eq!(__tsan_atomic128_fetch_nand(p, 1, 5), 9);
            assert_eq!(x, !1);
        }
    }
}
