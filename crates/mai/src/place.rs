//! Placing an array's pages: each MAi policy (Minas §3.1) is planned page by page with the
//! pure functions of `tdmap_map::policy`, then applied with libnuma's two mechanisms:
//! `mbind(MPOL_BIND, MPOL_MF_MOVE)` per run of pages bound for the same node when runs
//! are few (the policy also holds when pages are reclaimed and faulted again), or prefault and
//! `move_pages` when they are many (cyclic forms), since each mbind run splits the VMA
//! and `vm.max_map_count` would run out.

use crate::arrays::Array;
use crate::error::{MaiError, Result};
use crate::machine::Machine;
use std::time::Instant;
use tdmap_map::policy;
use tdmap_sys::{vm, LinuxSys, MbindFlags, MemPolicy, Sys};

/// Runs above this many go through move_pages instead of one mbind each.
const MAX_MBIND_RUNS: usize = 256;
/// Pages per move_pages call.
const MOVE_BATCH: usize = 16384;

/// A page-to-node rule with its parameters; nodes are logical (0..M).
#[derive(Debug, Clone)]
pub enum Rule {
    /// MAi cyclic.
    Cyclic,
    /// MAi cyclic_block, blocks of this many pages.
    CyclicBlock(usize),
    /// MAi skew_mapp.
    SkewMapp,
    /// MAi prime_mapp on this many virtual nodes.
    PrimeMapp(usize),
    /// MAi random with this seed.
    Random(u64),
    /// MAi bind_all on these nodes (cyclic within the set).
    BindAll(Vec<usize>),
    /// MAi bind_block: blocks follow the threads (node of each thread); `axis` None cuts
    /// pages, Some(d) cuts dimension d (0 rows/planes, 1 columns) at the page's first
    /// element.
    BindBlock {
        /// Which dimension to cut, or pages.
        axis: Option<usize>,
        /// Logical node of each thread.
        thread_nodes: Vec<usize>,
    },
}

/// The logical node of page `i` of `a` under `rule` on `m` nodes.
pub fn node_of_page(a: &Array, rule: &Rule, i: usize, m: usize) -> usize {
    let pages = a.pages();
    match rule {
        Rule::Cyclic => policy::cyclic(i, m),
        Rule::CyclicBlock(b) => policy::cyclic_block(i, m, *b),
        Rule::SkewMapp => policy::skew_mapp(i, m),
        Rule::PrimeMapp(p) => policy::prime_mapp(i, m, *p),
        Rule::Random(seed) => policy::random(i, m, *seed),
        Rule::BindAll(nodes) => policy::bind_all(i, nodes),
        Rule::BindBlock {
            axis: None,
            thread_nodes,
        } => policy::bind_block(i, pages, thread_nodes),
        Rule::BindBlock {
            axis: Some(d),
            thread_nodes,
        } => {
            let elem = (i * vm::page_size() / a.item).min(a.len / a.item - 1);
            let coord = coords(elem, &a.dims)[*d];
            policy::bind_block(coord, a.dims[*d], thread_nodes)
        }
    }
}

/// Coordinates of element `e` of a row-major array of `dims`.
fn coords(e: usize, dims: &[usize; 3]) -> [usize; 3] {
    [
        e / (dims[1] * dims[2]),
        (e / dims[2]) % dims[1],
        e % dims[2],
    ]
}

/// The OS node of every page of `a` under `rule`.
pub fn plan(a: &Array, rule: &Rule, m: &Machine) -> Vec<usize> {
    (0..a.pages())
        .map(|i| m.nodes[node_of_page(a, rule, i, m.num_nodes())])
        .collect()
}

/// Maximal runs of equal nodes: (first page, pages, node).
fn runs(plan: &[usize]) -> Vec<(usize, usize, usize)> {
    let mut out: Vec<(usize, usize, usize)> = Vec::new();
    for (i, &n) in plan.iter().enumerate() {
        match out.last_mut() {
            Some((_, len, node)) if *node == n => *len += 1,
            _ => out.push((i, 1, n)),
        }
    }
    out
}

/// Places pages `pages` of `a` (indexes) on `nodes` (OS), one node per page; returns the
/// seconds it took.
pub fn apply(a: &Array, pages: &[usize], nodes: &[usize]) -> Result<f64> {
    let start = Instant::now();
    crate::nexttouch::release(a);
    let contiguous = pages.windows(2).all(|w| w[1] == w[0] + 1);
    let r = runs(nodes);
    if contiguous && r.len() <= MAX_MBIND_RUNS {
        let first = pages.first().copied().unwrap_or(0);
        for (p, len, node) in r {
            let ps = vm::page_size();
            let addr = a.page_addr(first + p);
            LinuxSys.mbind(
                addr,
                len * ps,
                &MemPolicy::Bind(vec![node]),
                MbindFlags::MOVE_STRICT,
            )?;
            // Fault untouched pages in now, under the new policy, so that the placement
            // is done (and visible to move_pages) when the call returns.
            populate(addr, len * ps)?;
        }
    } else {
        move_pages(a, pages, nodes)?;
    }
    Ok(start.elapsed().as_secs_f64())
}

fn move_pages(a: &Array, pages: &[usize], nodes: &[usize]) -> Result<()> {
    // A bind policy left by an earlier mbind would fight the moves: back to default.
    LinuxSys.mbind(a.addr, a.mapped, &MemPolicy::Default, MbindFlags::NONE)?;
    populate(a.addr, a.mapped)?;
    for (pg, nd) in pages.chunks(MOVE_BATCH).zip(nodes.chunks(MOVE_BATCH)) {
        let addrs: Vec<usize> = pg.iter().map(|&i| a.page_addr(i)).collect();
        let targets: Vec<i32> = nd.iter().map(|&n| n as i32).collect();
        let status = LinuxSys.move_pages(0, &addrs, Some(&targets))?;
        if let Some(k) = (0..status.len()).find(|&k| status[k] != targets[k]) {
            return Err(MaiError::Moved {
                page: pg[k],
                node: nd[k],
                errno: if status[k] < 0 { -status[k] } else { libc::EIO },
            });
        }
    }
    Ok(())
}

/// Faults `[addr, addr + len)` in writable, content unchanged.
fn populate(addr: usize, len: usize) -> Result<()> {
    if vm::populate_write(addr, len)? {
        return Ok(());
    }
    // Kernels before 5.14: write each page's first byte back to itself.
    for page in (addr..addr + len).step_by(vm::page_size()) {
        let p = page as *mut u8;
        // SAFETY: the range lies in a live libmai mapping, readable and writable (the
        // next-touch protection was released in apply); the byte is written back unchanged.
        unsafe { p.write_volatile(p.read_volatile()) };
    }
    Ok(())
}

/// The node of each page now, or a negative errno (-ENOENT: never touched).
pub fn where_are(a: &Array) -> Result<Vec<i32>> {
    let addrs: Vec<usize> = (0..a.pages()).map(|i| a.page_addr(i)).collect();
    Ok(LinuxSys.move_pages(0, &addrs, None)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(dims: [usize; 3], item: usize) -> Array {
        let len = dims.iter().product::<usize>() * item;
        let ps = vm::page_size();
        Array {
            addr: 0,
            len,
            mapped: len.div_ceil(ps) * ps,
            item,
            dims,
            ndims: 3,
            policy: crate::arrays::PolicyKind::FirstTouch,
            plan: None,
        }
    }

    #[test]
    fn rows_and_columns_follow_the_threads() {
        let ps = vm::page_size();
        // 4 rows of one page each, 2 threads on nodes 1 and 0: rows 0-1 on 1, 2-3 on 0.
        let a = array([4, ps / 8, 1], 8);
        let rows = Rule::BindBlock {
            axis: Some(0),
            thread_nodes: vec![1, 0],
        };
        let got: Vec<usize> = (0..4).map(|i| node_of_page(&a, &rows, i, 2)).collect();
        assert_eq!(got, vec![1, 1, 0, 0]);
        // One row of 4 pages cut by columns: the same split, along the row.
        let b = array([1, 4 * ps / 8, 1], 8);
        let cols = Rule::BindBlock {
            axis: Some(1),
            thread_nodes: vec![1, 0],
        };
        let got: Vec<usize> = (0..4).map(|i| node_of_page(&b, &cols, i, 2)).collect();
        assert_eq!(got, vec![1, 1, 0, 0]);
        assert_eq!(coords(7, &[2, 2, 2]), [1, 1, 1]);
    }

    #[test]
    fn runs_group_equal_neighbours() {
        assert_eq!(
            runs(&[0, 0, 1, 1, 1, 0]),
            vec![(0, 2, 0), (2, 3, 1), (5, 1, 0)]
        );
        assert!(runs(&[]).is_empty());
    }
}
