//! The calling thread's [`ThreadState`] pointer, read by every callback. On x86-64 it
//! is a thread-local word of the initial-exec model, read by two instructions that the
//! compiler sees as such. A `thread_local!` in this position-independent library is a
//! call to `__tls_get_addr` as far as the compiler knows (the linker turns it into a
//! load when linking the program), so every callback kept the access's address in a
//! saved register across it: a push, a move and a pop per access, and calls where tail
//! calls would do. Initial-exec also holds in `libtdmap_rt.so`, which is preloaded (it
//! takes the static TLS that the loader sets aside at start).

use super::ThreadState;
#[cfg(not(target_arch = "x86_64"))]
use std::cell::Cell;

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".section .tbss.tdmap_rt_current,\"awT\",@nobits",
    ".globl tdmap_rt_current",
    ".hidden tdmap_rt_current",
    ".type tdmap_rt_current,@object",
    ".size tdmap_rt_current,8",
    ".p2align 3",
    "tdmap_rt_current:",
    ".zero 8",
    ".text",
);

/// This thread's state, null before it registers.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn get() -> *mut ThreadState {
    let p: *mut ThreadState;
    // SAFETY: reads the 8-byte thread-local word defined above, at its initial-exec
    // offset from the thread pointer; every thread has it, zeroed (null) at its start.
    unsafe {
        std::arch::asm!(
            "mov {p}, qword ptr [rip + tdmap_rt_current@GOTTPOFF]",
            "mov {p}, qword ptr fs:[{p}]",
            p = out(reg) p,
            options(nostack, readonly, preserves_flags),
        )
    };
    p
}

/// Makes `st` this thread's state.
#[cfg(target_arch = "x86_64")]
pub(super) fn set(st: *mut ThreadState) {
    // SAFETY: writes this thread's own thread-local word (see `get`).
    unsafe {
        std::arch::asm!(
            "mov {t}, qword ptr [rip + tdmap_rt_current@GOTTPOFF]",
            "mov qword ptr fs:[{t}], {p}",
            t = out(reg) _,
            p = in(reg) st,
            options(nostack, preserves_flags),
        )
    };
}

#[cfg(not(target_arch = "x86_64"))]
thread_local! {
    static CURRENT: Cell<*mut ThreadState> = const { Cell::new(std::ptr::null_mut()) };
}

/// This thread's state, null before it registers.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(super) fn get() -> *mut ThreadState {
    CURRENT.with(Cell::get)
}

/// Makes `st` this thread's state.
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn set(st: *mut ThreadState) {
    CURRENT.with(|c| c.set(st))
}

#[cfg(test)]
mod tests {
    /// Each thread has its own word, null at its start.
    #[test]
    fn each_thread_has_its_own_state_pointer() {
        let mine = std::ptr::NonNull::<super::ThreadState>::dangling().as_ptr();
        super::set(mine);
        let other = std::thread::spawn(|| {
            let fresh = super::get().is_null();
            let theirs = std::ptr::NonNull::<super::ThreadState>::dangling().as_ptr();
            super::set(theirs.wrapping_add(1));
            fresh && super::get() == theirs.wrapping_add(1)
        });
        assert!(
            other.join().unwrap(),
            "a new thread starts with null, then has its own"
        );
        assert_eq!(super::get(), mine);
        super::set(std::ptr::null_mut());
    }
}
