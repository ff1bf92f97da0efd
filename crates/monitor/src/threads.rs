//! Stable thread indexes for the sharing matrix: threads are numbered in order of first
//! appearance in the samples, batch by batch (one drain of the rings), and within one
//! batch in ascending tid order (`tdmap run` also registers, in tid order, every live
//! thread of the program when a new one faults, see `Monitor::register_threads`); an
//! index is kept for the whole run, even after its thread exits. Linux hands out tids in
//! creation order (until they wrap), so threads created close together, as a parallel
//! region's are, get their creation order: the order `tdmap trace`, `tdmap map
//! --mapping` files and OpenMP thread numbers use.

use std::collections::HashMap;

/// tid → thread index, in order of first appearance, up to a capacity.
#[derive(Debug, Clone)]
pub struct ThreadIndex {
    by_tid: HashMap<u32, u16>,
    tids: Vec<u32>,
    cap: usize,
}

impl ThreadIndex {
    /// An empty index that gives out at most `cap` indexes.
    pub fn new(cap: usize) -> ThreadIndex {
        ThreadIndex {
            by_tid: HashMap::new(),
            tids: Vec::new(),
            cap,
        }
    }

    /// The index of `tid`, giving it the next one if it is new; None once full.
    pub fn index(&mut self, tid: u32) -> Option<u16> {
        if let Some(&i) = self.by_tid.get(&tid) {
            return Some(i);
        }
        if self.tids.len() >= self.cap {
            return None;
        }
        let i = self.tids.len() as u16;
        self.by_tid.insert(tid, i);
        self.tids.push(tid);
        Some(i)
    }

    /// True if `tid` has an index.
    pub fn contains(&self, tid: u32) -> bool {
        self.by_tid.contains_key(&tid)
    }

    /// The tids, by index.
    pub fn tids(&self) -> &[u32] {
        &self.tids
    }

    /// Threads seen so far.
    pub fn len(&self) -> usize {
        self.tids.len()
    }

    /// True before the first sample.
    pub fn is_empty(&self) -> bool {
        self.tids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_appearance_order_is_kept_and_capped() {
        let mut t = ThreadIndex::new(2);
        assert_eq!(t.index(500), Some(0));
        assert_eq!(t.index(42), Some(1));
        assert_eq!(t.index(500), Some(0));
        assert_eq!(t.index(7), None, "beyond the capacity");
        assert_eq!(t.tids(), &[500, 42]);
    }
}
