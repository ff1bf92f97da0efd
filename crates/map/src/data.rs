//! Data mapping from NUMA vectors: where a page should live given how many accesses each
//! node made to it, by plain majority (the oracle's static rule). kMAF's online rule
//! (Eq. 6, halving after a move) is `tdmap_sharing::migration_target`.

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

/// Simple majority: the node with the most accesses (lowest on ties), `None` if none.
pub fn majority(nv: &[u32]) -> Option<usize> {
    let (best, max, _) = top_two(nv)?;
    (max > 0).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majority_picks_the_largest_count() {
        assert_eq!(majority(&[1, 3, 3]), Some(1));
        assert_eq!(majority(&[0, 0]), None);
        assert_eq!(majority(&[4, 1]), Some(0));
    }
}
