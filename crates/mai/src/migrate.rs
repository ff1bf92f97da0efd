//! MAi migration (Minas §3.1: "any incorrect memory placement can be optimized through
//! the use of MAi memory migration functions") by rows, columns or pages, and the
//! diagnostics that show where an array's pages are.

use crate::api::{last_time, record_time};
use crate::arrays::{self, Array, PolicyKind};
use crate::error::{MaiError, Result};
use crate::ffi::{count, guard, status};
use crate::machine::machine;
use crate::place;
use std::collections::BTreeSet;
use std::ffi::{c_double, c_int, c_ulong, c_void};
use tdmap_sys::vm;

/// Moves pages `pages` of the array at `p` to OS nodes `nodes` and records the plan.
fn migrate(p: *mut c_void, f: impl FnOnce(&Array) -> Result<(Vec<usize>, Vec<usize>)>) -> c_int {
    status(|| {
        let a = arrays::get(p as usize)?;
        let (pages, nodes) = f(&a)?;
        record_time(place::apply(&a, &pages, &nodes)?);
        let mut plan = a
            .plan
            .clone()
            .unwrap_or_else(|| vec![usize::MAX; a.pages()]);
        for (&pg, &n) in pages.iter().zip(&nodes) {
            plan[pg] = n;
        }
        let planned = plan.iter().all(|&n| n != usize::MAX).then_some(plan);
        arrays::set_policy(a.addr, PolicyKind::Migrated, planned);
        Ok(())
    })
}

/// The pages holding bytes `[from, to)` of the array.
fn pages_of(from: usize, to: usize) -> std::ops::Range<usize> {
    let ps = vm::page_size();
    from / ps..to.div_ceil(ps)
}

/// Checks a node and a range `[start, start + n)` of dimension `d` of `a`.
fn span(a: &Array, node: c_int, d: usize, start: usize, n: usize) -> Result<usize> {
    machine()?.logical_node(node as i64)?;
    let n = count("count", n as i64)?;
    if start.checked_add(n).is_none_or(|e| e > a.dims[d]) {
        return Err(MaiError::Invalid(format!(
            "{start}+{n} beyond dimension {d} of size {}",
            a.dims[d]
        )));
    }
    Ok(n)
}

/// Moves rows `[start, start + n)` (planes of a 3-D array) to OS node `node`.
#[no_mangle]
pub extern "C" fn mai_migrate_rows(p: *mut c_void, node: c_int, start: usize, n: usize) -> c_int {
    migrate(p, |a| {
        let n = span(a, node, 0, start, n)?;
        let row = a.len / a.dims[0];
        let pages: Vec<usize> = pages_of(start * row, (start + n) * row).collect();
        Ok((pages.clone(), vec![node as usize; pages.len()]))
    })
}

/// Moves the pages holding columns `[start, start + n)` of every row to OS node `node`.
#[no_mangle]
pub extern "C" fn mai_migrate_columns(
    p: *mut c_void,
    node: c_int,
    start: usize,
    n: usize,
) -> c_int {
    migrate(p, |a| {
        let n = span(a, node, 1, start, n)?;
        let (row, col) = (a.len / a.dims[0], a.len / a.dims[0] / a.dims[1]);
        let pages: BTreeSet<usize> = (0..a.dims[0])
            .flat_map(|r| pages_of(r * row + start * col, r * row + (start + n) * col))
            .collect();
        Ok((
            pages.iter().copied().collect(),
            vec![node as usize; pages.len()],
        ))
    })
}

/// Spreads the pages cyclically over the OS nodes in bit mask `nodes`.
#[no_mangle]
pub extern "C" fn mai_migrate_scatter(p: *mut c_void, nodes: c_ulong) -> c_int {
    migrate(p, |a| {
        let m = machine()?;
        let set: Vec<usize> = (0..64).filter(|b| nodes & (1 << b) != 0).collect();
        if set.is_empty() {
            return Err(MaiError::Invalid("empty node mask".into()));
        }
        set.iter()
            .try_for_each(|&n| m.logical_node(n as i64).map(|_| ()))?;
        let pages: Vec<usize> = (0..a.pages()).collect();
        let targets = pages
            .iter()
            .map(|&i| tdmap_map::policy::bind_all(i, &set))
            .collect();
        Ok((pages, targets))
    })
}

/// Moves every page to OS node `node`.
#[no_mangle]
pub extern "C" fn mai_migrate_gather(p: *mut c_void, node: c_int) -> c_int {
    migrate(p, |a| {
        machine()?.logical_node(node as i64)?;
        Ok(((0..a.pages()).collect(), vec![node as usize; a.pages()]))
    })
}

/// Seconds the last placement or migration took.
#[no_mangle]
pub extern "C" fn mai_get_time_pmigration() -> c_double {
    last_time()
}

/// Writes the distinct OS nodes holding the array's pages (up to `max`) to `nodes`;
/// returns how many there are.
///
/// # Safety
/// `nodes` is null or has room for `max` ints.
#[no_mangle]
pub unsafe extern "C" fn mai_arraynodes(p: *mut c_void, nodes: *mut c_int, max: c_int) -> c_int {
    let found = guard(None, || {
        let a = arrays::get(p as usize)?;
        let set: BTreeSet<i32> = place::where_are(&a)?
            .into_iter()
            .filter(|&n| n >= 0)
            .collect();
        Ok(Some(set))
    });
    let Some(set) = found else { return -1 };
    if !nodes.is_null() {
        for (k, &n) in set.iter().take(max.max(0) as usize).enumerate() {
            // SAFETY: the caller guarantees room for `max` ints; k < max.
            unsafe { *nodes.add(k) = n };
        }
    }
    set.len() as c_int
}

/// Prints each page's node ("page I node N", -2 = never touched) to stdout.
#[no_mangle]
pub extern "C" fn mai_print_pagenodes(p: *mut c_void) -> c_int {
    status(|| {
        let a = arrays::get(p as usize)?;
        let mut out = String::new();
        for (i, n) in place::where_are(&a)?.iter().enumerate() {
            out.push_str(&format!("page {i} node {n}\n"));
        }
        print!("{out}");
        Ok(())
    })
}

/// Prints and returns the policy code of the array (MAI_CYCLIC...).
#[no_mangle]
pub extern "C" fn mai_mempol(p: *mut c_void) -> c_int {
    guard(-1, || {
        let a = arrays::get(p as usize)?;
        println!(
            "array {:#x}: {} pages, policy {}",
            a.addr,
            a.pages(),
            a.policy.name()
        );
        Ok(a.policy as c_int)
    })
}
