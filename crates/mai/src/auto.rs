//! Automatic mode: MApp's heuristic (Minas §3.2) without the preprocessor. With
//! `MAI_AUTO=1`, every array at least as large as the highest-level cache (MApp's
//! "eligible array") gets the policy the heuristic picks for this machine, if it fits in
//! the nodes' free memory, and the choice is logged: the program's static arrays (.data
//! and .bss, found by `statics`) from the constructor, before `main` touches them, and
//! each allocation made through malloc, calloc, posix_memalign or mmap as it is made.
//!
//! libmai defines those four symbols, so they interpose glibc's when libmai is linked or
//! LD_PRELOADed. They allocate through glibc's `__libc_*` entry points (no dlsym, which
//! itself allocates) and raw `mmap`, and only act once the constructor below has read the
//! machine: calls before that, during it, or nested inside the hook (a thread-local
//! guard) go straight to glibc. Without MAI_AUTO the cost is one atomic load per call.

use crate::machine::{machine, Machine};
use std::cell::Cell;
use std::ffi::c_void;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use tdmap_map::policy;
use tdmap_sys::{secure_var, vm, FsRoot, LinuxSys, MbindFlags, MemPolicy, Sys};

/// MApp §3.2: at or above this NUMA factor the machine is latency-bound: bind_block.
pub const HIGH_NUMA_FACTOR: f64 = 2.0;
/// MApp §3.2: "many interconnections" = at least this share of node pairs one hop apart.
pub const MANY_LINKS: f64 = 0.5;
/// Threshold when the machine reports no cache.
const DEFAULT_THRESHOLD: usize = 1 << 20;

/// The policy the heuristic picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Spread pages round-robin (bandwidth).
    Cyclic,
    /// One contiguous block per thread, on the thread's node (latency).
    BindBlock,
}

/// MApp §3.2: cyclic on a small NUMA factor with many interconnections, bind_block
/// otherwise (high NUMA factor, or few links).
pub fn choose(numa_factor: f64, connectivity: f64) -> Choice {
    if numa_factor < HIGH_NUMA_FACTOR && connectivity >= MANY_LINKS {
        Choice::Cyclic
    } else {
        Choice::BindBlock
    }
}

/// Minas §3 (Fig. 1, arrow 2): MApp takes "the amount of free memory of each node" from
/// numarch. The paper gives no formula; libmai keeps a policy only if every node's share
/// of the array fits in that node's free memory (`free`: OS node and bytes; a node not
/// listed is assumed to fit), because MPOL_BIND does not spill to other nodes (a full
/// node means reclaim or the OOM killer) and an interleave that spills no longer follows
/// the round-robin. Else the other policy if it fits, else None (the kernel's first touch).
pub fn fit(
    choice: Choice,
    len: u64,
    nodes: &[usize],
    thread_nodes: &[usize],
    free: &[(usize, u64)],
) -> Option<Choice> {
    let room = |n: usize| free.iter().find(|f| f.0 == n).map_or(u64::MAX, |f| f.1);
    let fits = |c: Choice| match c {
        // cyclic: one page per round, so len / M per node.
        Choice::Cyclic => nodes
            .iter()
            .all(|&n| len.div_ceil(nodes.len() as u64) <= room(n)),
        // bind_block: one block per thread, on the thread's node.
        Choice::BindBlock => nodes.iter().all(|&n| {
            let t = thread_nodes.iter().filter(|&&x| x == n).count() as u64;
            (len as u128 * t as u128).div_ceil(thread_nodes.len().max(1) as u128) <= room(n) as u128
        }),
    };
    let other = match choice {
        Choice::Cyclic => Choice::BindBlock,
        Choice::BindBlock => Choice::Cyclic,
    };
    [choice, other].into_iter().find(|&c| fits(c))
}

/// Free memory of each node, as the kernel reports it now (numarch's query).
fn free_memory(nodes: &[usize]) -> Vec<(usize, u64)> {
    let fs = FsRoot::from_env();
    nodes
        .iter()
        .filter_map(|&n| Some((n, tdmap_sys::node_memory(&fs, n).ok()?.free)))
        .collect()
}

struct Auto {
    choice: Choice,
    threshold: usize,
    /// OS node of each page block for bind_block (node of each thread, compact order).
    thread_nodes: Vec<usize>,
    nodes: Vec<usize>,
}

/// 0: not started, 1: initialising, 2: active, 3: off.
static STATE: AtomicU8 = AtomicU8::new(0);
static AUTO: OnceLock<Auto> = OnceLock::new();

thread_local! {
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
}

#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;

extern "C" fn constructor() {
    // These variables are ignored in a set-id program (secure_getenv), which then runs
    // without automatic placement and writes no log (issue 21).
    let on = secure_var("MAI_AUTO").is_some_and(|v| v == "1");
    if !on
        || STATE
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
    {
        STATE.store(3, Ordering::Release);
        return;
    }
    let ok = std::panic::catch_unwind(|| match machine() {
        Ok(m) => {
            let a = configure(m);
            let free: Vec<String> = free_memory(&m.nodes)
                .iter()
                .map(|(n, f)| format!("{n}:{}", f >> 20))
                .collect();
            log(&format!(
                "mai-auto: {} nodes, NUMA factor {:.2}, connectivity {:.2}, free MiB per node {} -> {} for arrays >= {} bytes (MApp §3.2)",
                m.num_nodes(), m.numa_factor, m.connectivity, free.join(","), name(a.choice), a.threshold
            ));
            if AUTO.set(a).is_ok() {
                if let Some(a) = AUTO.get() {
                    place_statics(a);
                }
            }
            true
        }
        Err(e) => {
            log(&format!("mai-auto: off: {e}"));
            false
        }
    });
    STATE.store(if ok.unwrap_or(false) { 2 } else { 3 }, Ordering::Release);
}

/// MApp §3.2: an array is eligible if it is at least the highest-level cache; a
/// positive `MAI_AUTO_THRESHOLD` (bytes) overrides.
fn threshold(m: &Machine, env: Option<&str>) -> usize {
    env.and_then(|v| v.trim().parse().ok())
        .filter(|&t: &usize| t > 0)
        .unwrap_or(if m.llc > 0 {
            m.llc as usize
        } else {
            DEFAULT_THRESHOLD
        })
}

fn configure(m: &Machine) -> Auto {
    let threshold = threshold(
        m,
        secure_var("MAI_AUTO_THRESHOLD")
            .and_then(|v| v.into_string().ok())
            .as_deref(),
    );
    let threads = crate::threads::thread_cpus().unwrap_or_else(|_| m.cpus.clone());
    let thread_nodes = threads
        .iter()
        .filter_map(|&c| m.node_of_cpu(c as i64).ok())
        .collect();
    let thread_nodes: Vec<usize> = thread_nodes;
    let thread_nodes = if thread_nodes.is_empty() {
        m.nodes.clone()
    } else {
        thread_nodes
    };
    Auto {
        choice: choose(m.numa_factor, m.connectivity),
        threshold: threshold.max(1),
        thread_nodes,
        nodes: m.nodes.clone(),
    }
}

fn name(c: Choice) -> &'static str {
    match c {
        Choice::Cyclic => "cyclic",
        Choice::BindBlock => "bind_block",
    }
}

/// Appends a line to `MAI_AUTO_LOG` if set, else to stderr. A new log is not
/// writable by others (0644 less the umask).
fn log(line: &str) {
    let file = secure_var("MAI_AUTO_LOG").and_then(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o644)
            .open(p)
            .ok()
    });
    let _ = match file {
        Some(mut f) => writeln!(f, "{line}"),
        None => writeln!(std::io::stderr(), "{line}"),
    };
}

/// MApp §3.2's eligible static arrays, placed before `main` runs: the .bss pages are still
/// untouched and get the policy at their first touch; .data pages the loader or an
/// earlier constructor already wrote are moved by mbind's MPOL_MF_MOVE (the kernel's
/// page migration, as move_pages does).
fn place_statics(a: &Auto) {
    match crate::statics::static_arrays(a.threshold) {
        Ok(arrays) => arrays
            .iter()
            .for_each(|s| place(a, s.addr, s.len, &format!("static {}", s.name))),
        Err(e) => log(&format!("mai-auto: static arrays: none placed: {e}")),
    }
}

/// Applies the chosen policy to a fresh allocation `[addr, addr + len)`.
fn hook(addr: usize, len: usize, call: &str) {
    if STATE.load(Ordering::Acquire) != 2 || addr == 0 {
        return;
    }
    let Some(a) = AUTO.get() else { return };
    if len < a.threshold || IN_HOOK.with(|g| g.replace(true)) {
        return;
    }
    let _ = std::panic::catch_unwind(|| place(a, addr, len, call));
    IN_HOOK.with(|g| g.set(false));
}

fn place(a: &Auto, addr: usize, len: usize, call: &str) {
    if let Some(what) = apply(a, addr, len, &free_memory(&a.nodes)) {
        log(&format!("mai-auto: {call}({len}) = {addr:#x}: {what}"));
    }
}

/// Places the pages wholly inside `[addr, addr + len)` given the nodes' free memory;
/// returns what was done, or None if no page lies wholly inside.
fn apply(a: &Auto, addr: usize, len: usize, free: &[(usize, u64)]) -> Option<String> {
    let ps = vm::page_size();
    let start = addr.div_ceil(ps) * ps;
    let end = (addr + len) / ps * ps;
    if end <= start {
        return None;
    }
    let flags = MbindFlags {
        move_pages: true,
        strict: false,
    };
    let Some(choice) = fit(a.choice, len as u64, &a.nodes, &a.thread_nodes, free) else {
        let mib: Vec<String> = free
            .iter()
            .map(|(n, f)| format!("node {n}: {} MiB", f >> 20))
            .collect();
        return Some(format!(
            "none (does not fit in the nodes' free memory: {})",
            mib.join(", ")
        ));
    };
    let rc = match choice {
        // MApp's cyclic is one page per round: no transparent huge pages in the range.
        Choice::Cyclic => vm::no_huge_pages(start, end - start).and_then(|()| {
            let all = MemPolicy::Interleave(a.nodes.clone());
            LinuxSys.mbind(start, end - start, &all, flags)
        }),
        Choice::BindBlock => {
            // MAi bind_block page by page (tdmap_map), one mbind per run of equal nodes.
            let pages = (end - start) / ps;
            let node = |i| policy::bind_block(i, pages, &a.thread_nodes);
            let mut first = 0;
            (1..=pages).try_for_each(|i| {
                if i < pages && node(i) == node(first) {
                    return Ok(());
                }
                let bind = MemPolicy::Bind(vec![node(first)]);
                let r = LinuxSys.mbind(start + first * ps, (i - first) * ps, &bind, flags);
                first = i;
                r
            })
        }
    };
    let what = match rc {
        Ok(()) if choice != a.choice => format!(
            "{} ({} does not fit in the nodes' free memory)",
            name(choice),
            name(a.choice)
        ),
        Ok(()) => name(choice).to_string(),
        Err(e) => format!("none ({e})"),
    };
    Some(what)
}

extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
}

/// malloc, with the automatic policy for large blocks.
///
/// # Safety
/// As glibc's malloc.
#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    // SAFETY: glibc's own malloc, same contract.
    let p = unsafe { __libc_malloc(size) };
    hook(p as usize, size, "malloc");
    p
}

/// calloc, with the automatic policy for large blocks.
///
/// # Safety
/// As glibc's calloc.
#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    // SAFETY: glibc's own calloc, same contract (it checks n * size for overflow).
    let p = unsafe { __libc_calloc(n, size) };
    hook(p as usize, n.saturating_mul(size), "calloc");
    p
}

/// posix_memalign, with the automatic policy for large blocks.
///
/// # Safety
/// As glibc's posix_memalign: `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> i32 {
    if !align.is_power_of_two() || !align.is_multiple_of(std::mem::size_of::<usize>()) {
        return libc::EINVAL;
    }
    // SAFETY: glibc's memalign with an alignment checked as posix_memalign requires.
    let p = unsafe { __libc_memalign(align, size) };
    if p.is_null() {
        return libc::ENOMEM;
    }
    hook(p as usize, size, "posix_memalign");
    // SAFETY: the caller gives a writable pointer, as posix_memalign requires.
    unsafe { *out = p };
    0
}

/// aligned_alloc (C11), with the automatic policy for large blocks. glibc 2.36's own is
/// memalign under another name (any alignment, rounded up to a power of two).
///
/// # Safety
/// As glibc's aligned_alloc.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    // SAFETY: glibc's memalign, which its aligned_alloc is.
    let p = unsafe { __libc_memalign(align, size) };
    hook(p as usize, size, "aligned_alloc");
    p
}

/// memalign, with the automatic policy for large blocks.
///
/// # Safety
/// As glibc's memalign.
#[no_mangle]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    // SAFETY: glibc's own memalign, same contract.
    let p = unsafe { __libc_memalign(align, size) };
    hook(p as usize, size, "memalign");
    p
}

/// mmap, with the automatic policy for large private anonymous mappings.
///
/// # Safety
/// As glibc's mmap.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: usize,
    prot: i32,
    flags: i32,
    fd: i32,
    off: i64,
) -> *mut c_void {
    // SAFETY: the caller's mmap arguments, under mmap's own contract.
    match unsafe { vm::raw_mmap(addr as usize, len, prot, flags, fd, off) } {
        Ok(p) => {
            if flags & libc::MAP_ANONYMOUS != 0 && prot & libc::PROT_WRITE != 0 {
                hook(p, len, "mmap");
            }
            p as *mut c_void
        }
        Err(e) => {
            crate::ffi::set_errno(e.errno().unwrap_or(libc::EINVAL));
            libc::MAP_FAILED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heuristic_follows_mapp() {
        // Small factor, fully connected (the 2-node VM, 17/10): cyclic.
        assert_eq!(choose(1.7, 1.0), Choice::Cyclic);
        // High factor (the 4-node VM, 22/10, a third of pairs one hop): bind_block.
        assert_eq!(choose(2.2, 1.0 / 3.0), Choice::BindBlock);
        // Small factor but few links, or many links but high factor: bind_block.
        assert_eq!(choose(1.5, 0.25), Choice::BindBlock);
        assert_eq!(choose(2.1, 1.0), Choice::BindBlock);
        // One node: factor 1, trivially connected.
        assert_eq!(choose(1.0, 1.0), Choice::Cyclic);
    }

    #[test]
    fn the_choice_must_fit_in_each_nodes_free_memory() {
        const MIB: u64 = 1 << 20;
        let nodes = [0, 1];
        // 4 threads, 3 on node 0: bind_block puts 48 of 64 MiB on node 0, cyclic 32.
        let threads = [0, 0, 0, 1];
        let free = |a, b| [(0, a * MIB), (1, b * MIB)];
        let f = |c, a, b| fit(c, 64 * MIB, &nodes, &threads, &free(a, b));
        assert_eq!(f(Choice::BindBlock, 48, 16), Some(Choice::BindBlock));
        assert_eq!(f(Choice::BindBlock, 47, 100), Some(Choice::Cyclic));
        assert_eq!(f(Choice::Cyclic, 32, 32), Some(Choice::Cyclic));
        assert_eq!(f(Choice::Cyclic, 48, 31), Some(Choice::BindBlock));
        assert_eq!(f(Choice::Cyclic, 47, 31), None);
        assert_eq!(f(Choice::BindBlock, 47, 31), None);
        // A node whose free memory is unknown is assumed to have room.
        assert_eq!(
            fit(
                Choice::BindBlock,
                64 * MIB,
                &nodes,
                &threads,
                &[(1, 16 * MIB)]
            ),
            Some(Choice::BindBlock)
        );
    }

    #[test]
    fn a_region_that_does_not_fit_is_left_to_first_touch() {
        // This machine's first node; the decision is the free memory passed in.
        let m = Machine::from_topology(&tdmap_topo::live().unwrap());
        let node = m.nodes[0];
        let a = Auto {
            choice: Choice::BindBlock,
            threshold: 1,
            thread_nodes: vec![node],
            nodes: vec![node],
        };
        let len = 8 << 20;
        let addr = vm::mmap_anon(len).unwrap();
        let small = apply(&a, addr, len, &[(node, 4 << 20)]).unwrap();
        assert!(small.starts_with("none (does not fit"), "{small}");
        assert!(small.contains(&format!("node {node}: 4 MiB")), "{small}");
        assert_eq!(
            apply(&a, addr, len, &[(node, 8 << 20)]).unwrap(),
            "bind_block"
        );
        // Not one whole page inside: nothing to do.
        assert_eq!(apply(&a, addr + 1, 4096, &[]), None);
        // SAFETY: the mapping made above, no longer used.
        unsafe { vm::munmap(addr, len).unwrap() };
    }

    #[test]
    fn threshold_defaults_to_the_llc() {
        let t = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let m = Machine::from_topology(&t);
        assert_eq!(threshold(&m, None), 18 << 20, "the X7550's 18 MiB L3");
        assert_eq!(threshold(&m, Some("4096")), 4096);
        assert_eq!(threshold(&m, Some("0")), 18 << 20);
        assert_eq!(threshold(&m, Some("junk")), 18 << 20);
        let mut none = m.clone();
        none.llc = 0;
        assert_eq!(threshold(&none, None), DEFAULT_THRESHOLD);
    }

    #[test]
    fn interposed_calls_still_allocate() {
        // SAFETY: plain allocations, freed with glibc's free.
        unsafe {
            let p = malloc(100) as *mut u8;
            assert!(!p.is_null());
            p.write(7);
            libc::free(p.cast());
            let mut q = std::ptr::null_mut();
            assert_eq!(posix_memalign(&mut q, 4096, 10), 0);
            assert_eq!(q as usize % 4096, 0);
            libc::free(q);
            assert_eq!(posix_memalign(&mut q, 3, 10), libc::EINVAL);
        }
    }
}
