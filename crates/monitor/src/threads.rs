//! Stable thread indexes for the sharing matrix: the k-th distinct tid seen in the
//! samples (in drain order) is thread k, and keeps that index for the whole run even
//! after it exits. Without a runtime inside the program this is the only order tdmap
//! can know; for a program whose threads fault first in creation order it matches the
//! creation order that `tdmap map --mapping` files and OpenMP thread numbers use.

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
