//! The C entry points for set-up, allocation and the MAi policies (Minas §3.1); see
//! include/mai.h for the contract of each. A policy can be applied again at any time,
//! which is MAi's "changing an array's policy while the program runs".

use crate::arrays::{self, PolicyKind};
use crate::error::{MaiError, Result};
use crate::ffi::{count, guard, status};
use crate::machine::{machine, Machine};
use crate::place::{self, Rule};
use crate::{nexttouch, threads};
use std::ffi::{c_char, c_int, c_long, c_ulong, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};

static LAST_SECONDS: AtomicU64 = AtomicU64::new(0);

/// Records the duration of the last placement or migration.
pub fn record_time(s: f64) {
    LAST_SECONDS.store(s.to_bits(), Ordering::Relaxed);
}

/// Seconds the last placement or migration took.
pub fn last_time() -> f64 {
    f64::from_bits(LAST_SECONDS.load(Ordering::Relaxed))
}

/// Plans `rule` over the whole array at `p` and places it.
pub fn apply_rule(
    p: *const c_void,
    kind: PolicyKind,
    rule: impl FnOnce(&Machine, &arrays::Array) -> Result<Rule>,
) -> c_int {
    status(|| {
        let a = arrays::get(p as usize)?;
        let m = machine()?;
        let rule = rule(m, &a)?;
        let plan = place::plan(&a, &rule, m);
        let pages: Vec<usize> = (0..a.pages()).collect();
        record_time(place::apply(&a, &pages, &plan)?);
        arrays::set_policy(a.addr, kind, Some(plan));
        Ok(())
    })
}

/// Reads a C string argument.
///
/// # Safety
/// `s` is null or a NUL-terminated string.
pub unsafe fn c_str(s: *const c_char) -> Option<String> {
    // SAFETY: the caller guarantees a valid C string when non-null.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

/// Discovers the machine; with `config`, reads the thread placement from a
/// `tdmap map --format json` file.
///
/// # Safety
/// `config` is null or a NUL-terminated path.
#[no_mangle]
pub unsafe extern "C" fn mai_init(config: *const c_char) -> c_int {
    // An empty string is "no file" too, for Fortran callers, who cannot pass NULL.
    // SAFETY: forwarded contract.
    let path = unsafe { c_str(config) }.filter(|p| !p.is_empty());
    status(|| {
        machine()?;
        if let Some(path) = path {
            threads::set_thread_cpus(threads::load_map_file(&path)?)?;
        }
        Ok(())
    })
}

/// Frees every array libmai still holds.
#[no_mangle]
pub extern "C" fn mai_final() -> c_int {
    status(|| arrays::all().into_iter().try_for_each(arrays::free))
}

fn alloc(dims: &[usize], item: usize) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        arrays::alloc(dims, item).map(|a| a as *mut c_void)
    })
}

/// A zeroed 1-D array of `nx` items of `item` bytes, page-aligned.
#[no_mangle]
pub extern "C" fn mai_alloc_1D(nx: usize, item: usize) -> *mut c_void {
    alloc(&[nx], item)
}

/// A zeroed row-major 2-D array (`nx` rows of `ny` items), contiguous.
#[no_mangle]
pub extern "C" fn mai_alloc_2D(nx: usize, ny: usize, item: usize) -> *mut c_void {
    alloc(&[nx, ny], item)
}

/// A zeroed row-major 3-D array, contiguous.
#[no_mangle]
pub extern "C" fn mai_alloc_3D(nx: usize, ny: usize, nz: usize, item: usize) -> *mut c_void {
    alloc(&[nx, ny, nz], item)
}

/// Frees an array from `mai_alloc_*`.
#[no_mangle]
pub extern "C" fn mai_free_array(p: *mut c_void) -> c_int {
    status(|| arrays::free(p as usize))
}

/// MAi cyclic: page i on node i mod M.
#[no_mangle]
pub extern "C" fn mai_cyclic(p: *mut c_void) -> c_int {
    apply_rule(p, PolicyKind::Cyclic, |_, _| Ok(Rule::Cyclic))
}

/// MAi cyclic_block: blocks of `block` pages, round-robin.
#[no_mangle]
pub extern "C" fn mai_cyclic_block(p: *mut c_void, block: c_long) -> c_int {
    apply_rule(p, PolicyKind::CyclicBlock, |_, _| {
        Ok(Rule::CyclicBlock(count("block", block)?))
    })
}

/// MAi skew_mapp: page i on node (i + ⌊i/M⌋ + 1) mod M.
#[no_mangle]
pub extern "C" fn mai_skew_mapp(p: *mut c_void) -> c_int {
    apply_rule(p, PolicyKind::SkewMapp, |_, _| Ok(Rule::SkewMapp))
}

/// MAi prime_mapp with `prime` virtual nodes (0: the smallest prime ≥ M).
#[no_mangle]
pub extern "C" fn mai_prime_mapp(p: *mut c_void, prime: c_int) -> c_int {
    apply_rule(p, PolicyKind::PrimeMapp, |m, _| {
        let n = m.num_nodes();
        let pr = match prime {
            0 => tdmap_map::policy::prime_at_least(n),
            x if x as usize >= n && tdmap_map::policy::prime_at_least(x as usize) == x as usize => {
                x as usize
            }
            x => return Err(MaiError::Invalid(format!("prime {x}: need a prime >= {n}"))),
        };
        Ok(Rule::PrimeMapp(pr))
    })
}

/// MAi random with `seed` (same seed, same placement).
#[no_mangle]
pub extern "C" fn mai_random(p: *mut c_void, seed: c_ulong) -> c_int {
    apply_rule(p, PolicyKind::Random, |_, _| Ok(Rule::Random(seed)))
}

/// MAi bind_all on `n` OS nodes (cyclic within the set); NULL/0: the caller's node.
///
/// # Safety
/// `nodes` is null or points to `n` ints.
#[no_mangle]
pub unsafe extern "C" fn mai_bind_all(p: *mut c_void, nodes: *const c_int, n: c_int) -> c_int {
    let list: Vec<i64> = if nodes.is_null() || n <= 0 {
        Vec::new()
    } else {
        // SAFETY: the caller guarantees `n` readable ints.
        unsafe { std::slice::from_raw_parts(nodes, n as usize) }
            .iter()
            .map(|&x| x as i64)
            .collect()
    };
    apply_rule(p, PolicyKind::BindAll, |m, _| {
        let list = if list.is_empty() {
            let cpu = tdmap_sys::Sys::current_cpu(&tdmap_sys::LinuxSys)?;
            vec![m.node_of_cpu(cpu as i64)? as i64]
        } else {
            list
        };
        let logical = list
            .iter()
            .map(|&x| m.logical_node(x))
            .collect::<Result<_>>()?;
        Ok(Rule::BindAll(logical))
    })
}

fn bind_block(p: *mut c_void, axis: Option<usize>) -> c_int {
    apply_rule(p, PolicyKind::BindBlock, |_, a| {
        if axis == Some(2) && a.ndims != 3 {
            return Err(MaiError::Invalid(
                "mai_bind_planes needs a 3-D array".into(),
            ));
        }
        let thread_nodes = threads::thread_nodes()?;
        // Planes of a 3-D array are its first dimension.
        Ok(Rule::BindBlock {
            axis: axis.map(|d| if d == 2 { 0 } else { d }),
            thread_nodes,
        })
    })
}

/// MAi bind_block: one block of pages per thread, on the thread's node.
#[no_mangle]
pub extern "C" fn mai_bind_block(p: *mut c_void) -> c_int {
    bind_block(p, None)
}

/// bind_block by rows: rows split into one block per thread.
#[no_mangle]
pub extern "C" fn mai_bind_rows(p: *mut c_void) -> c_int {
    bind_block(p, Some(0))
}

/// bind_block by columns: columns split into one block per thread.
#[no_mangle]
pub extern "C" fn mai_bind_columns(p: *mut c_void) -> c_int {
    bind_block(p, Some(1))
}

/// bind_block of a 3-D array by planes of its first dimension.
#[no_mangle]
pub extern "C" fn mai_bind_planes(p: *mut c_void) -> c_int {
    bind_block(p, Some(2))
}

/// MAi next-touch: each page moves to the node of the next thread that touches it.
#[no_mangle]
pub extern "C" fn mai_next_touch(p: *mut c_void) -> c_int {
    status(|| {
        let a = arrays::get(p as usize)?;
        nexttouch::arm(&a)?;
        arrays::set_policy(a.addr, PolicyKind::NextTouch, None);
        Ok(())
    })
}

/// The OS node the last policy or migration planned for page `page`.
#[no_mangle]
pub extern "C" fn mai_expected_node(p: *mut c_void, page: usize) -> c_int {
    guard(-1, || {
        let a = arrays::get(p as usize)?;
        let plan = a
            .plan
            .ok_or_else(|| MaiError::Invalid("no placement planned".into()))?;
        plan.get(page)
            .map(|&n| n as c_int)
            .ok_or_else(|| MaiError::Invalid(format!("page {page} of {}", plan.len())))
    })
}
