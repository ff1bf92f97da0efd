//! MAi next-touch (Minas §3.1): the array is made inaccessible; the first access to each
//! page faults, and the SIGSEGV handler moves that page to the node of the CPU that
//! touched it, then opens the page again. The handler uses only async-signal-safe calls
//! and a fixed table of atomics (no locks, no allocation).

use crate::arrays::Array;
use crate::error::Result;
use crate::machine::machine;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use tdmap_sys::vm;

/// Arrays under next-touch at once.
const SLOTS: usize = 64;

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: (AtomicUsize, AtomicUsize) = (AtomicUsize::new(0), AtomicUsize::new(0));
static RANGES: [(AtomicUsize, AtomicUsize); SLOTS] = [EMPTY; SLOTS];
/// OS node of each OS CPU (-1: none), fixed before the handler is installed.
static NODE_OF_CPU: OnceLock<Vec<i32>> = OnceLock::new();
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Arms next-touch on `a`.
pub fn arm(a: &Array) -> Result<()> {
    install()?;
    let slot = RANGES
        .iter()
        .find(|(s, _)| {
            s.compare_exchange(0, a.addr, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        })
        .ok_or_else(|| {
            crate::error::MaiError::Invalid(format!("more than {SLOTS} arrays under next-touch"))
        })?;
    slot.1.store(a.addr + a.mapped, Ordering::Release);
    if let Err(e) = vm::protect(a.addr, a.mapped, false) {
        forget(a.addr);
        return Err(e.into());
    }
    Ok(())
}

/// Ends next-touch on `a`, if armed: pages become accessible where they are.
pub fn release(a: &Array) {
    if forget(a.addr) {
        let _ = vm::protect(a.addr, a.mapped, true);
    }
}

/// Drops `addr`'s slot; true if it had one.
pub fn forget(addr: usize) -> bool {
    match RANGES
        .iter()
        .find(|(s, _)| s.load(Ordering::Acquire) == addr)
    {
        Some((s, e)) => {
            e.store(0, Ordering::Release);
            s.store(0, Ordering::Release);
            true
        }
        None => false,
    }
}

fn install() -> Result<()> {
    if INSTALLED.load(Ordering::Acquire) {
        return Ok(());
    }
    let m = machine()?;
    let max = m.cpus.iter().max().map_or(0, |c| c + 1);
    let table = (0..max)
        .map(|c| m.node_of_cpu(c as i64).map_or(-1, |n| n as i32))
        .collect();
    let _ = NODE_OF_CPU.set(table);
    if !INSTALLED.swap(true, Ordering::AcqRel) {
        let old = vm::set_signal_handler(libc::SIGSEGV, on_fault)?;
        let _ = PREVIOUS.set(old);
    }
    Ok(())
}

extern "C" fn on_fault(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers of SIGSEGV.
    let addr = unsafe { (*info).si_addr() } as usize;
    let ps = vm::page_size();
    let page = addr & !(ps - 1);
    let ours = RANGES.iter().any(|(s, e)| {
        let s = s.load(Ordering::Acquire);
        s != 0 && page >= s && page < e.load(Ordering::Acquire)
    });
    if !ours {
        // Not a next-touch page: give the fault back to whoever had it (default: crash
        // with the usual SIGSEGV once the access is retried).
        if let Some(old) = PREVIOUS.get() {
            let _ = vm::restore_signal_handler(libc::SIGSEGV, old);
        }
        return;
    }
    // SAFETY: sched_getcpu reads the CPU number (vDSO or syscall), async-signal-safe.
    let cpu = unsafe { libc::sched_getcpu() };
    let node = NODE_OF_CPU
        .get()
        .and_then(|t| t.get(cpu as usize).copied())
        .unwrap_or(-1);
    // Open the page first: move_pages does not see pages behind PROT_NONE (their ptes
    // look like NUMA-hinting ones), it reports them absent.
    let _ = vm::protect(page, ps, true);
    if node >= 0 {
        // A page never touched reports -ENOENT: the access, retried, faults it in locally.
        let _ = vm::move_one_page(page, node);
    }
}
