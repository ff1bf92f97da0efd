//! kMAF's data-affinity rule (§3.3): when a page should move, and to which node.

/// kMAF Eq. 6: migrate when `max(NV) > 2 * max2(NV) + 1`.
pub fn should_migrate(nv: &[u32]) -> bool {
    let (max, max2) = top_two(nv);
    max as u64 > 2 * max2 as u64 + 1
}

/// The node a page on `current` should move to by Eq. 6, if any (none when it is already
/// on the node with the most accesses).
pub fn migration_target(nv: &[u32], current: Option<u32>) -> Option<u32> {
    if !should_migrate(nv) {
        return None;
    }
    let best = nv
        .iter()
        .enumerate()
        .max_by_key(|&(i, &c)| (c, std::cmp::Reverse(i)))?
        .0 as u32;
    (current != Some(best)).then_some(best)
}

fn top_two(nv: &[u32]) -> (u32, u32) {
    let mut max = 0;
    let mut max2 = 0;
    for &c in nv {
        if c > max {
            max2 = max;
            max = c;
        } else if c > max2 {
            max2 = c;
        }
    }
    (max, max2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq6_needs_more_than_double_plus_one() {
        assert!(
            !should_migrate(&[0, 1, 0, 0]),
            "1 > 2*0+1 is false: no early migration"
        );
        assert!(should_migrate(&[0, 2, 0, 0]));
        assert!(!should_migrate(&[3, 7, 0, 0]), "7 > 7 is false");
        assert!(should_migrate(&[3, 8, 0, 0]));
        assert!(!should_migrate(&[5, 5]));
        assert!(!should_migrate(&[]));
    }

    #[test]
    fn target_skips_the_current_node() {
        assert_eq!(migration_target(&[0, 9, 1], Some(0)), Some(1));
        assert_eq!(migration_target(&[0, 9, 1], Some(1)), None);
        assert_eq!(migration_target(&[0, 9, 1], None), Some(1));
        assert_eq!(migration_target(&[4, 9, 1], None), None);
    }

    /// kMAF §3.3: halving the vector after a move keeps a page used by two nodes in
    /// turn from bouncing between them, while a clear new owner still wins quickly.
    #[test]
    fn halving_after_migration_stops_ping_pong() {
        let (mut nv, mut node) = (vec![0u32, 0], 0u32);
        let mut access = |from: usize, nv: &mut Vec<u32>| -> bool {
            nv[from] += 1;
            let Some(to) = migration_target(nv, Some(node)) else {
                return false;
            };
            node = to;
            nv.iter_mut().for_each(|c| *c /= 2);
            true
        };
        assert!(!access(1, &mut nv));
        assert!(access(1, &mut nv));
        assert_eq!(nv, vec![0, 1]);
        let moves = (0..100).filter(|i| access(i % 2, &mut nv)).count();
        assert_eq!(moves, 0, "bounced {moves} times");
        let took = (1..=200).find(|_| access(0, &mut nv));
        assert!(took.is_some_and(|k| k <= 110), "{took:?}");
    }
}
