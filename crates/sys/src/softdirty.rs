//! Extra page faults injected from outside a process through soft-dirty tracking: writing
//! "4" to `/proc/PID/clear_refs` write-protects every page of PID, so its next write to
//! each page faults again. These are the `kernel` sampler's stand-in for kMAF §3.1.2's
//! extra page faults, on kernels built with `CONFIG_MEM_SOFT_DIRTY`.

use crate::{page_size, FsRoot, SysError};
use std::io::Write;
use std::os::unix::fs::FileExt;

/// Bit 55 of a `/proc/PID/pagemap` entry: the page was written since the last clear.
const PM_SOFT_DIRTY: u64 = 1 << 55;

/// Writes "4" to `/proc/PID/clear_refs` under `fs`, clearing PID's soft-dirty bits so
/// that its next write to each page faults.
pub fn inject_soft_dirty_faults(fs: &FsRoot, pid: i32) -> Result<(), SysError> {
    write_clear_refs(fs, &format!("/proc/{pid}/clear_refs"))
}

fn write_clear_refs(fs: &FsRoot, abs: &str) -> Result<(), SysError> {
    let path = fs.path(abs);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| f.write_all(b"4"))
        .map_err(|err| SysError::Write { path, err })
}

fn soft_dirty_bit(fs: &FsRoot, addr: usize) -> Result<bool, SysError> {
    let path = fs.path("/proc/self/pagemap");
    let mut entry = [0u8; 8];
    let off = (addr / page_size() * 8) as u64;
    std::fs::File::open(&path)
        .and_then(|f| f.read_exact_at(&mut entry, off))
        .map_err(|err| SysError::Read { path, err })?;
    Ok(u64::from_ne_bytes(entry) & PM_SOFT_DIRTY != 0)
}

/// Whether clearing soft-dirty bits injects write faults on this kernel. It is probed on
/// a page of the calling process: written, cleared with "4", then written again, the
/// page must read clean in between and dirty after; a kernel without
/// `CONFIG_MEM_SOFT_DIRTY` accepts the "4" but never sets the bit.
pub fn soft_dirty_available(fs: &FsRoot) -> Result<bool, SysError> {
    let len = page_size();
    let p = crate::vm::mmap_anon(len)?;
    let page = p as *mut u8;
    let probe = || -> Result<bool, SysError> {
        // SAFETY: `page` is the live, writable mapping made above.
        unsafe { std::ptr::write_volatile(page, 1) };
        write_clear_refs(fs, "/proc/self/clear_refs")?;
        let clean = !soft_dirty_bit(fs, page as usize)?;
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(page, 2) };
        Ok(clean && soft_dirty_bit(fs, page as usize)?)
    };
    let answer = probe();
    // SAFETY: exactly the mapping made above, not used after this.
    unsafe { crate::vm::munmap(p, len)? };
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injection_writes_4_to_the_pids_clear_refs() {
        let dir = std::env::temp_dir().join(format!("tdmap-sd-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc/42")).unwrap();
        std::fs::write(dir.join("proc/42/clear_refs"), "").unwrap();
        let fs = FsRoot::new(&dir);
        inject_soft_dirty_faults(&fs, 42).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("proc/42/clear_refs")).unwrap(),
            "4"
        );
        let err = inject_soft_dirty_faults(&fs, 43).unwrap_err();
        assert!(err.to_string().contains("proc/43/clear_refs"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_probe_agrees_with_a_fresh_mappings_soft_dirty_bit() {
        // A new mapping starts soft-dirty (VM_SOFTDIRTY) on kernels that track the bit
        // and never reads so on kernels that do not: an independent oracle for the probe.
        let fs = FsRoot::default();
        let on = soft_dirty_available(&fs).unwrap();
        let len = page_size();
        let p = crate::vm::mmap_anon(len).unwrap();
        // SAFETY: p is the live mapping above.
        unsafe { std::ptr::write_volatile(p as *mut u8, 1) };
        let fresh = soft_dirty_bit(&fs, p).unwrap();
        // SAFETY: exactly the mapping above.
        unsafe { crate::vm::munmap(p, len).unwrap() };
        assert_eq!(
            on, fresh,
            "probe says {on}, a fresh page reads soft-dirty={fresh}"
        );
    }
}
