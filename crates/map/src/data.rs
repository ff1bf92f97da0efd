//! Data mapping from NUMA vectors: where a page should live given how many accesses each
//! node made to it. kMAF's rule (Eq. 6) with its ping-pong protection, and plain majority.

/// The node with the most accesses and the second-highest count: (argmax, max, max2).
/// Ties go to the lowest node. `None` for an empty vector.
fn top_two(nv: &[u32]) -> Option<(usize, u32, u32)> {
    let (best, &max) = nv
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))?;
    let max2 = nv
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != best)
        .map(|(_, &c)| c)
        .max()
        .unwrap_or(0);
    Some((best, max, max2))
}

/// kMAF Eq. 6: migrate to the node with the most accesses when
/// `max(NV) > 2 · max2(NV) + 1`. Returns that node when the page, now on `current`,
/// should move there; `None` when it should stay.
pub fn kmaf_target(nv: &[u32], current: usize) -> Option<usize> {
    let (best, max, max2) = top_two(nv)?;
    // kMAF Eq. 6
    let migrate = u64::from(max) > 2 * u64::from(max2) + 1;
    (migrate && best != current).then_some(best)
}

/// kMAF §3.3 aging: after a migration every counter is halved, so that old accesses
/// weigh less and a page shared by two nodes does not bounce between them.
pub fn halve(nv: &mut [u32]) {
    for c in nv {
        *c /= 2;
    }
}

/// A page as kMAF tracks it: its NUMA vector and the node it lives on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KmafPage {
    /// Accesses (faults) per node.
    pub nv: Vec<u32>,
    /// The node the page lives on.
    pub node: usize,
}

impl KmafPage {
    /// A page on `node` of a machine with `nodes` nodes, never accessed yet.
    pub fn new(nodes: usize, node: usize) -> KmafPage {
        KmafPage {
            nv: vec![0; nodes],
            node,
        }
    }

    /// Records an access from `from` and applies Eq. 6; returns the new node if the page
    /// migrates (and then halves the vector, kMAF §3.3).
    pub fn access(&mut self, from: usize) -> Option<usize> {
        self.nv[from] = self.nv[from].saturating_add(1);
        let target = kmaf_target(&self.nv, self.node)?;
        self.node = target;
        halve(&mut self.nv);
        Some(target)
    }
}

/// Simple majority: the node with the most accesses (lowest on ties), `None` if none.
pub fn majority(nv: &[u32]) -> Option<usize> {
    let (best, max, _) = top_two(nv)?;
    (max > 0).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq6_needs_more_than_twice_the_second_plus_one() {
        assert_eq!(kmaf_target(&[5, 2, 0], 1), None, "5 = 2·2+1 is not enough");
        assert_eq!(kmaf_target(&[6, 2, 0], 1), Some(0));
        assert_eq!(kmaf_target(&[6, 2, 0], 0), None, "already there");
        assert_eq!(kmaf_target(&[1, 0], 1), None, "1 = 2·0+1 is not enough");
        assert_eq!(kmaf_target(&[0, 2], 0), Some(1));
        assert_eq!(kmaf_target(&[], 0), None);
    }

    #[test]
    fn halving_after_migration_stops_ping_pong() {
        let mut page = KmafPage::new(2, 0);
        assert_eq!(page.access(1), None);
        assert_eq!(page.access(1), Some(1));
        assert_eq!(page.nv, vec![0, 1]);
        // Two nodes now alternate: the page must not bounce at every other access.
        let mut moves = 0;
        for i in 0..100 {
            if page.access(i % 2).is_some() {
                moves += 1;
            }
        }
        assert_eq!(moves, 0, "moved {moves} times: {page:?}");
        // A clear new owner still wins quickly.
        let before = page.node;
        let mut moved_after = None;
        for k in 1..=200 {
            if page.access(1 - before).is_some() {
                moved_after = Some(k);
                break;
            }
        }
        assert!(moved_after.is_some_and(|k| k <= 110), "{moved_after:?}");
    }

    #[test]
    fn majority_picks_the_largest_count() {
        assert_eq!(majority(&[1, 3, 3]), Some(1));
        assert_eq!(majority(&[0, 0]), None);
        assert_eq!(majority(&[4, 1]), Some(0));
    }
}
