//! The injector's thread: every period it registers the program's new anonymous
//! mappings with a userfaultfd and write-protects a sample of their resident pages
//! (`fraction` of them, at most `max_pages`, spread over all of them, a different sample
//! each period);
//! in between it lifts the protection of each page as soon as a write faults on it,
//! which wakes the writer.
//!
//! Everything this thread writes lives in the [`Injector`] and its stack, one mapping
//! that is never protected: it never calls `malloc` and takes no lock a program thread
//! may hold, so no write of its own can wait for itself. It blocks every signal, so no
//! program signal handler runs on it.
//!
//! The top page of each mapping is never protected: it holds a thread's descriptor when
//! the mapping is a thread stack, and the kernel writes the descriptor's tid word as the
//! thread exits (`CLONE_CHILD_CLEARTID`), which `pthread_join` waits for. On Linux 6.1
//! and 6.18 that write waits for the handler like any other (checked); skipping the page
//! is a precaution in case a kernel refuses userfaults from an exiting task, which would
//! leave the joiner waiting forever.

use super::maps;
use tdmap_sys::uffd::{self, Msg, EVENT_PAGEFAULT};

/// Mappings tracked at most; more are left unprotected.
const MAX_REGIONS: usize = 4096;
pub(super) const MAPS_BUF: usize = 64 * 1024;
const MSGS: usize = 64;
/// Pages asked about per `mincore` call (64 MiB of 4 KiB pages).
const RES_BUF: usize = 16 * 1024;

/// An address range, and whether registering it worked.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Region {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// 1 when registered with the userfaultfd.
    ok: u64,
}

impl Region {
    /// The range `[start, end)`, not registered.
    pub fn new(start: u64, end: u64) -> Region {
        Region { start, end, ok: 0 }
    }
}

/// The handler thread's whole state. All-zero bytes are a valid value (integers and
/// plain arrays), so it can live in fresh anonymous memory.
#[repr(C)]
pub struct Injector {
    /// The userfaultfd.
    pub fd: i32,
    /// The page size.
    pub page: u64,
    /// Nanoseconds between two passes.
    pub period_ns: u64,
    /// Share of the registered memory protected per pass.
    pub fraction: f64,
    /// At most this many pages protected per pass.
    pub max_pages: u64,
    /// The beacon page's address, 0 if none (see `env::BEACON`).
    pub beacon: u64,
    /// The monitor's pid: once the process has another parent, the monitor is gone.
    pub monitor: i32,
    /// The pipe on which the thread announces its tid as it starts, -1 for none; the
    /// constructor closes it once the thread has.
    pub announce_fd: i32,
    /// Memory never registered, sorted: the injector's own (this struct and the thread's
    /// stack) and the page of the words it shares with the program's threads.
    pub own: [Region; 2],
    regions: [Region; MAX_REGIONS],
    n: usize,
    fresh: [Region; MAX_REGIONS],
    phase: u64,
    buf: [u8; MAPS_BUF],
    msgs: [Msg; MSGS],
    /// Residency of the pages of one stretch of a mapping (`mincore`).
    res: [u8; RES_BUF],
    /// Write-protect faults resolved.
    pub faults: u64,
}

/// Appends the parts of `r` outside every range of `own` (sorted, disjoint) to `out`
/// (the kernel may merge our mapping with a neighbour into one line).
fn push_outside(out: &mut [Region], m: &mut usize, r: Region, own: &[Region]) {
    let mut push = |start: u64, end: u64| {
        if start < end && *m < out.len() {
            out[*m] = Region { start, end, ..r };
            *m += 1;
        }
    };
    let mut from = r.start;
    for o in own {
        if o.end <= from || o.start >= r.end {
            continue;
        }
        push(from, o.start);
        from = o.end;
    }
    push(from, r.end);
}

impl Injector {
    /// The handler loop. It stops injecting (and parks the thread) once the monitor is
    /// gone, since nobody records the faults any more, or the userfaultfd is (the program
    /// closed it, which also lifted every protection).
    pub fn run(&mut self) -> ! {
        let mut next = crate::state::now_ns();
        loop {
            let now = crate::state::now_ns();
            // SAFETY: getppid has no preconditions.
            if now >= next && unsafe { libc::getppid() } != self.monitor {
                // Closing the userfaultfd unregisters and unprotects everything and wakes
                // every waiting writer.
                super::stop();
                park();
            }
            if now >= next {
                self.scan();
                // No protection while a set-id call runs (see `super::unprotected`).
                if super::begin_pass() {
                    self.protect();
                    super::end_pass();
                }
                next = (next + self.period_ns).max(now + self.period_ns / 2);
            }
            let left = next.saturating_sub(crate::state::now_ns());
            let ms = left.div_ceil(1_000_000).min(i32::MAX as u64) as i32;
            match uffd::wait(self.fd, ms) {
                Ok(true) => self.resolve(),
                Ok(false) => {}
                Err(_) => park(),
            }
        }
    }

    /// Runs the handler's code paths once without protecting anything (see `spawn`).
    pub fn warm_up(&mut self) {
        crate::state::now_ns();
        self.scan();
        self.each_resident(0, u64::MAX, 0);
        let _ = uffd::wait(self.fd, 0);
        self.resolve();
        let _ = uffd::write_protect(self.fd, 0, 0, false);
    }

    /// Lifts the protection of every page a pending message reports; that wakes the
    /// faulting threads. A page whose mapping vanished only needs the wake-up.
    fn resolve(&mut self) {
        let page = self.page;
        loop {
            let n = match uffd::read_msgs(self.fd, &mut self.msgs) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            for m in &self.msgs[..n] {
                if m.event != EVENT_PAGEFAULT {
                    continue;
                }
                let at = m.address & !(page - 1);
                if uffd::write_protect(self.fd, at, page, false).is_err() {
                    let _ = uffd::wake(self.fd, at, page);
                }
                self.faults += 1;
            }
        }
    }

    /// Re-reads the mappings and registers the new eligible ones.
    fn scan(&mut self) {
        let mut m = 0;
        let own = self.own;
        let fresh = &mut self.fresh;
        maps::for_each_eligible(&mut self.buf, |line| {
            let r = Region {
                start: line.start,
                end: line.end,
                ok: 0,
            };
            push_outside(fresh, &mut m, r, &own);
        });
        let known = &self.regions[..self.n];
        for r in &mut self.fresh[..m] {
            // Lines come in address order, so the previous scan's table is sorted.
            r.ok = match known.binary_search_by_key(&(r.start, r.end), |k| (k.start, k.end)) {
                Ok(i) => known[i].ok,
                Err(_) => u64::from(uffd::register_wp(self.fd, r.start, r.end - r.start).is_ok()),
            };
        }
        self.regions[..m].copy_from_slice(&self.fresh[..m]);
        self.n = m;
    }

    /// The part of `r` that may be protected: all but its top page (see the module doc).
    fn usable(&self, r: &Region) -> u64 {
        if r.ok == 0 {
            return 0;
        }
        r.end.saturating_sub(self.page).saturating_sub(r.start)
    }

    /// Write-protects this pass's sample of the registered memory: `fraction` of its
    /// resident pages, at most `max_pages`, spread evenly over all of them (one resident
    /// page every `stride`) so that every mapping gets its share each period; the offset
    /// within the stride moves at each pass, so that over passes every page gets its
    /// turn. Only resident pages: write-protecting a page never touched does nothing
    /// (no fault comes of it), and most of a program's address space, its threads'
    /// stacks above all, is never touched.
    fn protect(&mut self) {
        // Counted afresh: memory may have grown a lot since the last pass. mincore is
        // cheap next to the faults (a few ns a page).
        let est = self.each_resident(0, u64::MAX, 0);
        if est == 0 || super::paused() {
            return;
        }
        let k = ((est as f64 * self.fraction).ceil() as u64).clamp(1, self.max_pages.max(1));
        let stride = (est / k).max(1);
        // A golden-ratio step visits the offsets of the stride in a well-spread order.
        self.phase = self.phase.wrapping_add(0x9E37_79B9_7F4A_7C15);
        self.each_resident(stride, self.phase % stride, k);
    }

    /// Walks the resident pages of the usable part of every registered mapping, in
    /// address order, write-protecting resident pages number `first`, `first + stride`,
    /// and so on, at most `max` of them (pages that became resident between the count
    /// and this walk would add more); returns how many pages are resident.
    fn each_resident(&mut self, stride: u64, first: u64, max: u64) -> u64 {
        let (n, page) = (self.n, self.page);
        let (mut seen, mut next, mut left) = (0u64, first, max);
        for i in 0..n {
            let r = self.regions[i];
            let len = self.usable(&r) / page;
            let mut off = 0;
            while off < len {
                let chunk = (len - off).min(RES_BUF as u64) as usize;
                let from = r.start + off * page;
                // ENOMEM: the mapping went away since the scan; nothing to protect there.
                if tdmap_sys::vm::resident(from as usize, &mut self.res[..chunk]).is_err() {
                    break;
                }
                for (p, &b) in self.res[..chunk].iter().enumerate() {
                    if b & 1 == 0 {
                        continue;
                    }
                    if seen == next && left > 0 {
                        // A set-id call waits for this pass (`super::unprotected`).
                        if super::paused() {
                            return seen;
                        }
                        let _ = uffd::write_protect(self.fd, from + p as u64 * page, page, true);
                        next = next.saturating_add(stride);
                        left -= 1;
                    }
                    seen += 1;
                }
                off += chunk as u64;
            }
        }
        seen
    }
}

/// Sleeps forever: the thread has nothing left to do but must not exit, since glibc's
/// thread exit path writes shared state.
fn park() -> ! {
    loop {
        // SAFETY: sleep has no memory preconditions.
        unsafe { libc::sleep(3600) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(start: u64, end: u64) -> Region {
        Region { start, end, ok: 1 }
    }

    #[test]
    fn our_own_memory_is_cut_out_of_a_merged_line() {
        let own = [reg(0x4000, 0x6000), reg(0x7000, 0x8000)];
        let mut out = [Region::default(); 8];
        let mut m = 0;
        for r in [
            reg(0x1000, 0x9000),
            reg(0x4000, 0x6000),
            reg(0xa000, 0xb000),
            reg(0x5000, 0x7800),
            reg(0x6000, 0x7000),
        ] {
            push_outside(&mut out, &mut m, r, &own);
        }
        assert_eq!(
            &out[..m],
            &[
                reg(0x1000, 0x4000),
                reg(0x6000, 0x7000),
                reg(0x8000, 0x9000),
                reg(0xa000, 0xb000),
                reg(0x6000, 0x7000),
                reg(0x6000, 0x7000)
            ]
        );
    }

    #[test]
    fn the_shared_words_have_a_page_to_themselves() {
        let page = tdmap_sys::page_size();
        let p = super::super::shared_page(page);
        let at = std::ptr::addr_of!(super::super::SHARED) as u64;
        assert_eq!(p.end - p.start, page as u64);
        assert!(p.start <= at && at + std::mem::size_of::<super::super::Shared>() as u64 <= p.end);
        assert_eq!(std::mem::align_of::<super::super::Shared>(), 4096);
    }
}
