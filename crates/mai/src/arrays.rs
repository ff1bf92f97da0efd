//! The arrays libmai allocated: every policy call looks its pointer up here, which is how
//! a pointer libmai did not allocate is refused (EFAULT) instead of crashing.

use crate::error::{MaiError, Result};
use std::collections::BTreeMap;
use std::sync::Mutex;
use tdmap_sys::vm;

/// The policy last applied to an array, as `mai_mempol` reports it (codes of mai.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum PolicyKind {
    /// Nothing applied: Linux first-touch.
    FirstTouch = 0,
    /// MAI_CYCLIC.
    Cyclic = 1,
    /// MAI_CYCLIC_BLOCK.
    CyclicBlock = 2,
    /// MAI_SKEW_MAPP.
    SkewMapp = 3,
    /// MAI_PRIME_MAPP.
    PrimeMapp = 4,
    /// MAI_BIND_ALL.
    BindAll = 5,
    /// MAI_BIND_BLOCK (pages, rows, columns or planes).
    BindBlock = 6,
    /// MAI_RANDOM.
    Random = 7,
    /// MAI_NEXT_TOUCH.
    NextTouch = 8,
    /// MAI_MIGRATED: pages moved by a migration call.
    Migrated = 9,
}

impl PolicyKind {
    /// The name `mai_mempol` prints.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::FirstTouch => "first_touch",
            PolicyKind::Cyclic => "cyclic",
            PolicyKind::CyclicBlock => "cyclic_block",
            PolicyKind::SkewMapp => "skew_mapp",
            PolicyKind::PrimeMapp => "prime_mapp",
            PolicyKind::BindAll => "bind_all",
            PolicyKind::BindBlock => "bind_block",
            PolicyKind::Random => "random",
            PolicyKind::NextTouch => "next_touch",
            PolicyKind::Migrated => "migrated",
        }
    }
}

/// One array allocated by `mai_alloc_*`.
#[derive(Debug, Clone)]
pub struct Array {
    /// Start address (page-aligned).
    pub addr: usize,
    /// Bytes the user asked for.
    pub len: usize,
    /// Bytes mapped (whole pages).
    pub mapped: usize,
    /// Size of one element.
    pub item: usize,
    /// Dimensions, outermost first; 1 for the missing ones.
    pub dims: [usize; 3],
    /// How many dimensions the user gave.
    pub ndims: usize,
    /// The policy last applied.
    pub policy: PolicyKind,
    /// OS node of each page as the last placement planned it (None: not planned).
    pub plan: Option<Vec<usize>>,
}

impl Array {
    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.mapped / vm::page_size()
    }

    /// Address of page `i`.
    pub fn page_addr(&self, i: usize) -> usize {
        self.addr + i * vm::page_size()
    }
}

static ARRAYS: Mutex<BTreeMap<usize, Array>> = Mutex::new(BTreeMap::new());

fn registry() -> std::sync::MutexGuard<'static, BTreeMap<usize, Array>> {
    // A panic while holding the lock cannot leave the map half-updated (single inserts
    // and removes), so a poisoned lock is still usable.
    ARRAYS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Allocates a zeroed array of `dims` elements of `item` bytes, page-aligned.
pub fn alloc(dims: &[usize], item: usize) -> Result<usize> {
    if item == 0 || dims.is_empty() || dims.contains(&0) {
        return Err(MaiError::Invalid(format!(
            "size zero (dimensions {dims:?}, item {item} bytes)"
        )));
    }
    let len = dims
        .iter()
        .try_fold(item, |acc, &d| acc.checked_mul(d))
        .filter(|&l| l <= isize::MAX as usize / 2)
        .ok_or_else(|| MaiError::Invalid(format!("{dims:?} x {item} bytes overflows")))?;
    let ps = vm::page_size();
    let mapped = len.div_ceil(ps) * ps;
    let addr = vm::mmap_anon(mapped)?;
    // MAi policies place 4 KiB pages; a transparent huge page would put 512 on one node.
    if let Err(e) = vm::no_huge_pages(addr, mapped) {
        // SAFETY: the mapping was just made and nothing refers to it.
        let _ = unsafe { vm::munmap(addr, mapped) };
        return Err(e.into());
    }
    let mut d = [1; 3];
    d[..dims.len()].copy_from_slice(dims);
    let a = Array {
        addr,
        len,
        mapped,
        item,
        dims: d,
        ndims: dims.len(),
        policy: PolicyKind::FirstTouch,
        plan: None,
    };
    registry().insert(addr, a);
    Ok(addr)
}

/// The array that starts at `ptr`.
pub fn get(ptr: usize) -> Result<Array> {
    registry().get(&ptr).cloned().ok_or(MaiError::NotMai(ptr))
}

/// Records the policy and plan of the array at `ptr`.
pub fn set_policy(ptr: usize, policy: PolicyKind, plan: Option<Vec<usize>>) {
    if let Some(a) = registry().get_mut(&ptr) {
        a.policy = policy;
        a.plan = plan;
    }
}

/// Unmaps the array at `ptr` and forgets it.
pub fn free(ptr: usize) -> Result<()> {
    let a = registry().remove(&ptr).ok_or(MaiError::NotMai(ptr))?;
    crate::nexttouch::forget(a.addr);
    // SAFETY: the C caller frees the array, promising not to use it again (mai.h); it is
    // out of the registry, so no libmai call reaches it either.
    unsafe { vm::munmap(a.addr, a.mapped) }?;
    Ok(())
}

/// Every array still allocated (for mai_final).
pub fn all() -> Vec<usize> {
    registry().keys().copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_checks_sizes_and_free_checks_pointers() {
        assert!(matches!(alloc(&[0, 4], 8), Err(MaiError::Invalid(_))));
        assert!(matches!(alloc(&[4], 0), Err(MaiError::Invalid(_))));
        assert!(matches!(
            alloc(&[usize::MAX, 2], 8),
            Err(MaiError::Invalid(_))
        ));
        let p = alloc(&[3, 1000], 8).unwrap();
        let a = get(p).unwrap();
        assert_eq!((a.len, a.dims, a.ndims), (24000, [3, 1000, 1], 2));
        assert_eq!(a.pages(), 24000usize.div_ceil(vm::page_size()));
        assert!(matches!(get(p + 8), Err(MaiError::NotMai(_))));
        free(p).unwrap();
        assert!(matches!(free(p), Err(MaiError::NotMai(_))));
    }
}
