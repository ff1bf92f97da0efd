//! Writing to the data and control files: plain `write(2)` calls, safe in signal handlers.
//! A failed data write (disk full, file size limit) stops recording and tells `tdmap
//! trace` through the control file, which then marks the trace incomplete.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::Relaxed};
use tdmap_wire::raw::{Msg, MODE_UNFOLLOWED, MSG_WRITE_FAILED};

/// The data file's descriptor, -1 until set up.
pub static DATA_FD: AtomicI32 = AtomicI32::new(-1);
/// The control file's descriptor, -1 until set up.
pub static CTL_FD: AtomicI32 = AtomicI32::new(-1);
/// The maps-snapshot file's descriptor, -1 until set up.
pub static MAPS_FD: AtomicI32 = AtomicI32::new(-1);
static FAILED: AtomicBool = AtomicBool::new(false);
/// The most allocated bytes the data file may hold before a writer waits
/// (`tdmap_wire::raw::ENV_BUFFER`); 0 for no limit.
pub static BUFFER: AtomicU64 = AtomicU64::new(0);
/// A writer that saw the reader free nothing for this long stops waiting for good: tdmap
/// is gone or stuck, and the program must not hang on it. (A tdmap that stops reading on
/// purpose says so at once: [`tdmap_wire::raw::MODE_UNFOLLOWED`].)
const GIVE_UP_NS: u64 = 10_000_000_000;

/// Creates `path` for appending; fails if it exists, so only one process owns a trace.
pub fn create_exclusive(path: &std::ffi::CStr) -> i32 {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_APPEND | libc::O_CLOEXEC;
    // SAFETY: `path` is a valid NUL-terminated string; open has no other preconditions.
    unsafe { libc::open(path.as_ptr(), flags, 0o600 as libc::c_uint) }
}

fn errno() -> i32 {
    // SAFETY: __errno_location always returns this thread's valid errno slot.
    unsafe { *libc::__errno_location() }
}

/// Writes all of `bytes` to `fd`, retrying on EINTR; returns the errno on failure.
fn write_all(fd: i32, mut bytes: &[u8]) -> Result<(), i32> {
    while !bytes.is_empty() {
        // SAFETY: the pointer and length come from a live slice.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(libc::EIO);
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

/// Appends to the maps-snapshot file; a lost snapshot only leaves shared pages keyed
/// as private ones, so errors are ignored.
pub fn write_maps(bytes: &[u8]) {
    let fd = MAPS_FD.load(Relaxed);
    if fd >= 0 {
        let _ = write_all(fd, bytes);
    }
}

/// Gives a forked child files of its own: closes the parent's (which it must not write
/// to), clears a failure the parent had and installs the child's descriptors.
pub fn switch_to(ctl: i32, data: i32, maps: i32) {
    for (slot, fd) in [(&CTL_FD, ctl), (&DATA_FD, data), (&MAPS_FD, maps)] {
        let old = slot.swap(fd, Relaxed);
        if old >= 0 {
            // SAFETY: closing the inherited descriptor this slot owned.
            unsafe { libc::close(old) };
        }
    }
    FAILED.store(false, Relaxed);
    // The child keeps the parent's buffer: `tdmap trace` reads every process's file while
    // the program runs (its spill.rs), and says so on a file it stops reading.
}

/// The data file's allocated bytes (what the disk or memory holds of it), None if unknown
/// or if tdmap no longer reads it ([`MODE_UNFOLLOWED`]).
fn allocated(fd: i32) -> Option<u64> {
    // SAFETY: an all-zero stat is a valid out-buffer; fstat is async-signal-safe.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid out-pointer.
    let ok = unsafe { libc::fstat(fd, &mut st) } == 0;
    (ok && st.st_mode & MODE_UNFOLLOWED == 0).then_some(st.st_blocks as u64 * 512)
}

/// Waits while writing `len` more bytes would put the data file's unconsumed part over
/// [`BUFFER`]: `tdmap trace` reads it as it grows and frees the blocks behind it, so this
/// bounds the disk (or memory) the raw stream takes. Plain system calls only (it runs in
/// the exit and crash handlers too).
fn wait_for_room(fd: i32, len: u64) {
    let cap = BUFFER.load(Relaxed);
    if cap == 0 {
        return;
    }
    let (mut last, mut since) = (u64::MAX, crate::state::now_ns());
    loop {
        let Some(used) = allocated(fd) else {
            BUFFER.store(0, Relaxed);
            return;
        };
        if used + len <= cap {
            return;
        }
        let now = crate::state::now_ns();
        if used < last {
            (last, since) = (used, now);
        } else if now - since > GIVE_UP_NS {
            BUFFER.store(0, Relaxed);
            return;
        }
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 200_000,
        };
        // SAFETY: a valid timespec; nanosleep is async-signal-safe.
        unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
    }
}

/// Sends one control message; losing one is harmless, so errors are ignored.
pub fn send(msg: Msg) {
    let fd = CTL_FD.load(Relaxed);
    if fd < 0 {
        return;
    }
    let _ = write_all(fd, &msg.encode());
}

/// Appends a chunk to the data file; on the first failure reports it and returns false.
pub fn write_data(bytes: &[u8]) -> bool {
    let fd = DATA_FD.load(Relaxed);
    if fd < 0 || FAILED.load(Relaxed) {
        return false;
    }
    wait_for_room(fd, bytes.len() as u64);
    match write_all(fd, bytes) {
        Ok(()) => true,
        Err(e) => {
            if !FAILED.swap(true, Relaxed) {
                send(Msg {
                    tag: MSG_WRITE_FAILED,
                    b: 0,
                    a: e as u64,
                });
                crate::state::stop_all();
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::PermissionsExt;

    /// A data file that tdmap marked as no longer read gives no room to wait for, so a
    /// writer stops waiting at once; an unmarked one reports its allocated bytes.
    #[test]
    fn a_file_marked_unfollowed_is_not_waited_on() {
        let path = std::env::temp_dir().join(format!("tdmap-rt-unfollowed-{}", std::process::id()));
        std::fs::write(&path, vec![1u8; 64 << 10]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(allocated(f.as_raw_fd()).is_some_and(|b| b >= 64 << 10));
        std::fs::set_permissions(
            &path,
            std::fs::Permissions::from_mode(0o600 | MODE_UNFOLLOWED),
        )
        .unwrap();
        assert_eq!(allocated(f.as_raw_fd()), None);
        std::fs::remove_file(&path).unwrap();
    }
}
