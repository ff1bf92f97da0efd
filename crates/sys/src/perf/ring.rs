//! One per-CPU perf event and its mmapped ring buffer: the kernel writes records at
//! `data_head`, tdmap reads up to it and hands the space back by advancing `data_tail`.

use super::attr::{self, Attr};
use super::record::{self, Drained, Task};
use super::FaultSample;
use crate::{page_size, SysError};
use std::sync::atomic::{AtomicU64, Ordering};

/// Offsets in `struct perf_event_mmap_page` (the ring's first page).
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// A page-fault event of one task on one CPU, with its ring.
#[derive(Debug)]
pub(crate) struct Ring {
    fd: i32,
    cpu: usize,
    base: *mut u8,
    map_len: usize,
    data_off: usize,
    data_size: usize,
    /// A ring-sized copy of the bytes being parsed, so the parser never reads memory
    /// the kernel may be writing.
    scratch: Vec<u8>,
}

// SAFETY: the mapping is owned by this Ring alone and only touched through &mut self
// (reads of the header use atomics), so moving it to another thread is sound.
unsafe impl Send for Ring {}

impl Ring {
    /// Opens the event for `pid` on `cpu` and maps `pages` (a power of two) data pages.
    pub(crate) fn open(attr: &Attr, pid: i32, cpu: usize, pages: usize) -> Result<Ring, SysError> {
        if !pages.is_power_of_two() {
            return Err(SysError::Invalid {
                call: "mmap",
                what: format!("perf ring of {pages} pages is not a power of two"),
            });
        }
        let fd = attr::open(attr, pid, cpu as i32)?;
        let map_len = (pages + 1) * page_size();
        // SAFETY: a shared read-write mapping of a perf fd; the kernel sizes and owns it
        // and nothing else in this process aliases it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let err = std::io::Error::last_os_error();
            // SAFETY: fd was opened above and is not used after this.
            unsafe { libc::close(fd) };
            return Err(SysError::Refused {
                call: "mmap",
                err,
                fix: "a perf ring could not be mapped; raise /proc/sys/kernel/perf_event_mlock_kb \
                      or use fewer ring pages",
            });
        }
        let base = p as *mut u8;
        // SAFETY: the header page is mapped; data_offset/data_size are u64 fields of it,
        // written by the kernel before mmap returned.
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(base.add(DATA_OFFSET) as *const u64) as usize,
                std::ptr::read_volatile(base.add(DATA_SIZE) as *const u64) as usize,
            )
        };
        // Kernels before 4.1 leave both at zero: the data starts after one page.
        let (data_off, data_size) = if size == 0 {
            (page_size(), pages * page_size())
        } else {
            (off, size)
        };
        Ok(Ring {
            fd,
            cpu,
            base,
            map_len,
            data_off,
            data_size,
            scratch: vec![0; data_size],
        })
    }

    /// The CPU this ring records.
    pub(crate) fn cpu(&self) -> usize {
        self.cpu
    }

    /// The event's descriptor, for poll.
    pub(crate) fn fd(&self) -> i32 {
        self.fd
    }

    fn word(&self, off: usize) -> &AtomicU64 {
        // SAFETY: `off` is an 8-aligned u64 field of the mapped header page, which lives
        // as long as `self`; the kernel accesses it atomically too.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    /// Appends the samples written since the last drain to `out`, the process events to
    /// `tasks`.
    pub(crate) fn drain(
        &mut self,
        out: &mut Vec<FaultSample>,
        tasks: &mut Vec<Task>,
    ) -> Result<Drained, SysError> {
        // Acquire pairs with the kernel's write barrier before it publishes data_head.
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        let len = head.wrapping_sub(tail).min(self.data_size as u64) as usize;
        let start = (tail % self.data_size as u64) as usize;
        let first = len.min(self.data_size - start);
        // SAFETY: [start, start+first) and [0, len-first) lie inside the data area, and the
        // kernel does not write between tail and head until tail moves past them.
        unsafe {
            let data = self.base.add(self.data_off);
            std::ptr::copy_nonoverlapping(
                data.add(start),
                self.scratch.as_mut_ptr().add(start),
                first,
            );
            std::ptr::copy_nonoverlapping(data, self.scratch.as_mut_ptr(), len - first);
        }
        let parsed = record::parse_tasks(&self.scratch, tail, head, out, tasks);
        // Release: the kernel may reuse the space only after the copy above.
        self.word(DATA_TAIL).store(head, Ordering::Release);
        parsed.map_err(|c| SysError::Invalid {
            call: "perf ring",
            what: format!("CPU {}: record at {}: {}", self.cpu, c.at, c.what),
        })
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base/map_len are the mapping made in open and fd its event; neither is
        // used after drop.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.map_len);
            libc::close(self.fd);
        }
    }
}
