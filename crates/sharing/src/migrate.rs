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
}
