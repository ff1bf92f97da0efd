//! numarch queries (Minas §3.3) and thread binding, for C: nodes, CPUs of each node, node
//! of a CPU, caches, free memory per node and the NUMA factor.

use crate::api::c_str;
use crate::error::MaiError;
use crate::ffi::{count, guard, status};
use crate::machine::machine;
use crate::threads;
use std::ffi::{c_char, c_double, c_int, c_longlong};

/// Copies `src` into the C array `out` of room `max`; returns `src.len()`.
///
/// # Safety
/// `out` is null or has room for `max` ints.
unsafe fn fill(src: &[usize], out: *mut c_int, max: c_int) -> c_int {
    if !out.is_null() {
        for (k, &v) in src.iter().take(max.max(0) as usize).enumerate() {
            // SAFETY: k < max and the caller guarantees room for `max` ints.
            unsafe { *out.add(k) = v as c_int };
        }
    }
    src.len() as c_int
}

/// Number of NUMA nodes.
#[no_mangle]
pub extern "C" fn mai_get_num_nodes() -> c_int {
    guard(-1, || Ok(machine()?.num_nodes() as c_int))
}

/// Number of CPUs (hardware threads).
#[no_mangle]
pub extern "C" fn mai_get_num_cpu() -> c_int {
    guard(-1, || Ok(machine()?.cpus.len() as c_int))
}

/// OS numbers of the nodes into `nodes` (room `max`); returns how many nodes.
///
/// # Safety
/// `nodes` is null or has room for `max` ints.
#[no_mangle]
pub unsafe extern "C" fn mai_get_nodes(nodes: *mut c_int, max: c_int) -> c_int {
    match machine() {
        // SAFETY: forwarded contract.
        Ok(m) => unsafe { fill(&m.nodes, nodes, max) },
        Err(e) => guard(-1, || Err(e)),
    }
}

/// OS CPUs of OS node `node` into `cpus` (room `max`); returns how many.
///
/// # Safety
/// `cpus` is null or has room for `max` ints.
#[no_mangle]
pub unsafe extern "C" fn mai_node_cpus(node: c_int, cpus: *mut c_int, max: c_int) -> c_int {
    let list = guard(None, || {
        let m = machine()?;
        Ok(Some(m.cpus_of_node[m.logical_node(node as i64)?].clone()))
    });
    match list {
        // SAFETY: forwarded contract.
        Some(l) => unsafe { fill(&l, cpus, max) },
        None => -1,
    }
}

/// OS node of OS CPU `cpu`.
#[no_mangle]
pub extern "C" fn mai_cpu_node(cpu: c_int) -> c_int {
    guard(-1, || Ok(machine()?.node_of_cpu(cpu as i64)? as c_int))
}

/// Size in bytes of the level-`level` data cache above CPU 0 (0: the highest level);
/// 0 if there is none.
#[no_mangle]
pub extern "C" fn mai_cache_size(level: c_int) -> c_longlong {
    guard(-1, || {
        let m = machine()?;
        match level {
            0 => Ok(m.llc as c_longlong),
            1..=4 => Ok(m.caches[level as usize - 1] as c_longlong),
            l => Err(MaiError::Invalid(format!("cache level {l}"))),
        }
    })
}

/// Free memory of OS node `node` in bytes (from /sys/devices/system/node).
#[no_mangle]
pub extern "C" fn mai_node_free_memory(node: c_int) -> c_longlong {
    guard(-1, || {
        machine()?.logical_node(node as i64)?;
        let mem = tdmap_sys::node_memory(&tdmap_sys::FsRoot::from_env(), node as usize)?;
        Ok(mem.free as c_longlong)
    })
}

/// The NUMA factor: the largest remote/local distance ratio (1 on one node).
#[no_mangle]
pub extern "C" fn mai_numa_factor() -> c_double {
    guard(-1.0, || Ok(machine()?.numa_factor))
}

/// Sets `n` threads, placed compactly (thread t on the t-th CPU).
#[no_mangle]
pub extern "C" fn mai_set_threads(n: c_int) -> c_int {
    status(|| {
        let n = count("threads", n as i64)?;
        threads::set_thread_cpus(threads::compact(machine()?, n))
    })
}

/// Sets the OS CPU of each of `n` threads.
///
/// # Safety
/// `cpus` points to `n` ints.
#[no_mangle]
pub unsafe extern "C" fn mai_set_thread_cpus(cpus: *const c_int, n: c_int) -> c_int {
    if cpus.is_null() || n <= 0 {
        return status(|| Err(MaiError::Invalid("no threads".into())));
    }
    // SAFETY: the caller guarantees `n` readable ints.
    let list = unsafe { std::slice::from_raw_parts(cpus, n as usize) };
    status(|| {
        let list = list
            .iter()
            .map(|&c| usize::try_from(c).map_err(|_| MaiError::NoCpu(c as i64)))
            .collect::<Result<_, _>>()?;
        threads::set_thread_cpus(list)
    })
}

/// Sets the threads' CPUs from a `tdmap map --format json` file.
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mai_bind_threads_file(path: *const c_char) -> c_int {
    // SAFETY: forwarded contract.
    let path = unsafe { c_str(path) };
    status(|| {
        let path = path.ok_or_else(|| MaiError::Invalid("null path".into()))?;
        threads::set_thread_cpus(threads::load_map_file(&path)?)
    })
}

/// Pins the calling thread to thread `t`'s CPU; returns that OS CPU.
#[no_mangle]
pub extern "C" fn mai_bind_thread(t: c_int) -> c_int {
    guard(-1, || Ok(threads::bind_thread(t as i64)? as c_int))
}

/// Pins the calling thread to OS CPU `cpu`.
#[no_mangle]
pub extern "C" fn mai_bind_cpu(cpu: c_int) -> c_int {
    status(|| threads::bind_cpu(cpu as i64))
}

/// OS CPU of thread `t`.
#[no_mangle]
pub extern "C" fn mai_thread_cpu(t: c_int) -> c_int {
    guard(-1, || {
        let cpus = threads::thread_cpus()?;
        usize::try_from(t)
            .ok()
            .and_then(|t| cpus.get(t))
            .map(|&c| c as c_int)
            .ok_or_else(|| MaiError::Invalid(format!("thread {t} of {}", cpus.len())))
    })
}
