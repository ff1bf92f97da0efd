//! Address-space calls for the Minas memory-affinity library (crates/mai): anonymous
//! mappings, protection changes, prefaulting and a one-page move that allocates nothing,
//! so that it can run inside a SIGSEGV handler (MAi next-touch) or a malloc hook.
//!
//! They are raw syscalls rather than libc wrappers on purpose: libmai interposes `mmap`
//! in its automatic mode, and its own mappings must not go through that hook.

use crate::SysError;

/// `MADV_POPULATE_WRITE` (Linux 5.14): fault pages in writable without changing them.
const MADV_POPULATE_WRITE: libc::c_long = 23;

fn check(call: &'static str, rc: libc::c_long) -> Result<libc::c_long, SysError> {
    if rc < 0 {
        Err(SysError::last_os(call))
    } else {
        Ok(rc)
    }
}

/// Maps `len` bytes of private anonymous read-write memory; returns its address.
pub fn mmap_anon(len: usize) -> Result<usize, SysError> {
    let (prot, flags) = (
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
    );
    // SAFETY: no address and no MAP_FIXED: the kernel picks a free range.
    unsafe { raw_mmap(0, len, prot, flags, -1, 0) }
}

/// `mmap(2)` as the kernel takes it, bypassing any interposed `mmap`.
///
/// # Safety
/// As mmap: with `MAP_FIXED`, the range must hold nothing that is still referred to.
pub unsafe fn raw_mmap(
    addr: usize,
    len: usize,
    prot: i32,
    flags: i32,
    fd: i32,
    off: i64,
) -> Result<usize, SysError> {
    // SAFETY: mmap with these arguments only creates a mapping (or fails); with a null
    // or hinted address and no MAP_FIXED it cannot replace memory Rust code refers to.
    // Callers that pass MAP_FIXED take on that duty, as with libc's mmap.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            addr as libc::c_ulong,
            len as libc::c_ulong,
            prot as libc::c_ulong,
            flags as libc::c_ulong,
            fd as libc::c_long,
            off as libc::c_long,
        )
    };
    check("mmap", rc).map(|a| a as usize)
}

/// Unmaps `[addr, addr + len)`, which the caller obtained from [`mmap_anon`].
///
/// # Safety
/// Nothing may use the range afterwards.
pub unsafe fn munmap(addr: usize, len: usize) -> Result<(), SysError> {
    // SAFETY: the caller owns the mapping and no longer refers to it.
    let rc = unsafe { libc::syscall(libc::SYS_munmap, addr as libc::c_ulong, len) };
    check("munmap", rc).map(|_| ())
}

/// Makes `[addr, addr + len)` inaccessible (`accessible = false`) or read-write again.
/// Async-signal-safe.
pub fn protect(addr: usize, len: usize, accessible: bool) -> Result<(), SysError> {
    let prot = if accessible {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_NONE
    };
    // SAFETY: mprotect changes page permissions only; a later access to a PROT_NONE page
    // raises SIGSEGV, which the caller (MAi next-touch) handles.
    let rc = unsafe { libc::syscall(libc::SYS_mprotect, addr as libc::c_ulong, len, prot) };
    check("mprotect", rc).map(|_| ())
}

/// Faults every page of `[addr, addr + len)` in writable without changing its content,
/// so that `move_pages` finds them. Returns false if the kernel lacks
/// `MADV_POPULATE_WRITE` (before 5.14), in which case the caller must touch the pages.
pub fn populate_write(addr: usize, len: usize) -> Result<bool, SysError> {
    // SAFETY: MADV_POPULATE_WRITE only faults pages in; memory content is unchanged.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_madvise,
            addr as libc::c_ulong,
            len,
            MADV_POPULATE_WRITE,
        )
    };
    if rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        return Ok(false);
    }
    check("madvise", rc).map(|_| true)
}

/// Asks for base pages only in `[addr, addr + len)` (`MADV_NOHUGEPAGE`): a transparent
/// huge page sits on one node as a whole, which would defeat per-page placement.
pub fn no_huge_pages(addr: usize, len: usize) -> Result<(), SysError> {
    // SAFETY: MADV_NOHUGEPAGE only changes the range's THP eligibility.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_madvise,
            addr as libc::c_ulong,
            len,
            libc::MADV_NOHUGEPAGE as libc::c_long,
        )
    };
    // Kernels without THP refuse the advice with EINVAL: nothing to avoid then.
    if rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        return Ok(());
    }
    check("madvise", rc).map(|_| ())
}

/// Moves the one page at `addr` of the calling process to `node`; returns its node after
/// the call or a negative errno for that page. Allocates nothing: async-signal-safe.
pub fn move_one_page(addr: usize, node: i32) -> Result<i32, SysError> {
    let pages = [addr];
    let nodes = [node];
    let mut status = [0i32];
    // SAFETY: the three arrays have one element each, as the count says; the kernel only
    // looks the address up.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_long,
            1 as libc::c_ulong,
            pages.as_ptr(),
            nodes.as_ptr(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    check("move_pages", rc)?;
    Ok(status[0])
}

/// A `SA_SIGINFO` signal handler.
pub type SigHandler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);

/// Installs `handler` for `sig` (with `SA_SIGINFO | SA_RESTART`); returns the previous
/// action so that a handler that does not own a fault can give it back.
pub fn set_signal_handler(sig: i32, handler: SigHandler) -> Result<libc::sigaction, SysError> {
    // SAFETY: all-zero is a valid sigaction (empty mask, no flags) for both structs.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: both pointers are to live sigaction structs; the handler is a valid
    // extern "C" function for the life of the program.
    let rc = unsafe { libc::sigaction(sig, &act, &mut old) };
    if rc != 0 {
        return Err(SysError::last_os("sigaction"));
    }
    Ok(old)
}

/// Puts back an action returned by [`set_signal_handler`]. Async-signal-safe.
pub fn restore_signal_handler(sig: i32, old: &libc::sigaction) -> Result<(), SysError> {
    // SAFETY: `old` came from the kernel through sigaction.
    let rc = unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(SysError::last_os("sigaction"));
    }
    Ok(())
}

/// Which of the `out.len()` pages from `addr` (page-aligned) are resident (`mincore`):
/// byte k of `out` has bit 0 set for page k. Allocation-free, for the inject runtime's
/// handler thread.
pub fn resident(addr: usize, out: &mut [u8]) -> Result<(), SysError> {
    let len = out.len() * page_size();
    // SAFETY: `out` has one byte per page of the range; mincore only reads our own
    // process's page tables.
    let rc = unsafe { libc::mincore(addr as *mut libc::c_void, len, out.as_mut_ptr()) };
    if rc != 0 {
        return Err(SysError::last_os("mincore"));
    }
    Ok(())
}

/// The page size in bytes.
pub fn page_size() -> usize {
    // SAFETY: sysconf only returns a value.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touched_pages_are_resident_and_untouched_ones_not() {
        let page = page_size();
        let a = mmap_anon(4 * page).unwrap();
        // SAFETY: writes one byte inside the fresh 4-page mapping.
        unsafe { *((a + 2 * page) as *mut u8) = 1 };
        let mut out = [0u8; 4];
        resident(a, &mut out).unwrap();
        assert_eq!(out.map(|b| b & 1), [0, 0, 1, 0]);
        // SAFETY: the mapping is ours and unused from here.
        unsafe { munmap(a, 4 * page).unwrap() };
    }

    #[test]
    fn map_populate_protect_and_unmap() {
        let ps = page_size();
        let a = mmap_anon(4 * ps).unwrap();
        assert_eq!(a % ps, 0);
        no_huge_pages(a, 4 * ps).unwrap();
        assert!(populate_write(a, 4 * ps).is_ok());
        // A populated page is somewhere: its node is not a negative errno.
        assert!(move_one_page(a, 0).unwrap() >= 0);
        protect(a, ps, false).unwrap();
        protect(a, ps, true).unwrap();
        // SAFETY: the test mapping is not used after this.
        unsafe { munmap(a, 4 * ps) }.unwrap();
        // Misaligned addresses are the kernel's EINVAL, named by call.
        let err = protect(a + 1, ps, true).unwrap_err();
        assert_eq!(err.errno(), Some(libc::EINVAL));
        assert!(err.to_string().contains("mprotect"), "{err}");
    }
}
