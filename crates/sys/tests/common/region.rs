//! A private anonymous mapping for the NUMA memory tests and the VM guest checker: fresh
//! pages that nothing has touched, so first-touch and policy effects are visible.
//! Shared by `tests/numa_mem.rs` and `examples/numa_check.rs` through `#[path]`.

/// Page-aligned anonymous memory, unmapped on drop.
pub struct Region {
    addr: usize,
    len: usize,
}

impl Region {
    /// Maps `pages` fresh pages; panics if the kernel refuses (tests only).
    pub fn new(pages: usize) -> Region {
        let len = pages * page_size();
        let addr = tdmap_sys::vm::mmap_anon(len)
            .unwrap_or_else(|e| panic!("mmap of {len} bytes failed: {e}"));
        Region { addr, len }
    }

    /// The first address.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The address of each page.
    pub fn pages(&self) -> Vec<usize> {
        (self.addr..self.addr + self.len)
            .step_by(page_size())
            .collect()
    }

    /// Writes one byte per page, so that each page gets allocated.
    pub fn touch(&self) {
        for a in self.pages() {
            // SAFETY: `a` lies inside this live, writable mapping.
            unsafe { std::ptr::write_volatile(a as *mut u8, 1) };
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the range is exactly the mapping made in `new`, and no reference to it
        // outlives the Region.
        let _ = unsafe { tdmap_sys::vm::munmap(self.addr, self.len) };
    }
}

pub use tdmap_sys::page_size;
