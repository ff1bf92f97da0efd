//! `greedy`: fast hierarchical grouping in the spirit of EagerMap (Cruz et al.), the
//! default for online use. Each group starts from the unit with the most sharing left
//! and adds, one at a time, the unit sharing most with the group so far; O(k²) per level.

/// Groups `k` units sharing `w` into groups of `size`.
pub fn group(w: &[f64], k: usize, size: usize) -> Vec<Vec<usize>> {
    let mut alive: Vec<usize> = (0..k).collect();
    let mut rowsum: Vec<f64> = (0..k).map(|u| w[u * k..(u + 1) * k].iter().sum()).collect();
    let mut gain = vec![0.0; k];
    let mut groups = Vec::with_capacity(k / size.max(1));
    while !alive.is_empty() {
        let seed = take_best(&mut alive, &rowsum);
        let mut members = vec![seed];
        gain.copy_from_slice(&w[seed * k..(seed + 1) * k]);
        while members.len() < size && !alive.is_empty() {
            let u = take_best(&mut alive, &gain);
            let row = &w[u * k..(u + 1) * k];
            for &v in &alive {
                gain[v] += row[v];
            }
            members.push(u);
        }
        for &u in &members {
            let row = &w[u * k..(u + 1) * k];
            for &v in &alive {
                rowsum[v] -= row[v];
            }
        }
        groups.push(members);
    }
    groups
}

/// Removes and returns the alive unit with the largest score (lowest index on ties).
fn take_best(alive: &mut Vec<usize>, score: &[f64]) -> usize {
    let mut best = 0;
    for (i, &u) in alive.iter().enumerate() {
        let b = alive[best];
        if score[u] > score[b] || (score[u] == score[b] && u < b) {
            best = i;
        }
    }
    alive.swap_remove(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_the_heavy_sharers_together() {
        // Units 0..6; 0,2,4 share heavily, 1,3,5 share heavily.
        let k = 6;
        let mut w = vec![1.0; k * k];
        for u in 0..k {
            w[u * k + u] = 0.0;
            for v in 0..k {
                if u != v && u % 2 == v % 2 {
                    w[u * k + v] = 50.0;
                }
            }
        }
        let mut g = group(&w, k, 3);
        for x in &mut g {
            x.sort();
        }
        g.sort();
        assert_eq!(g, vec![vec![0, 2, 4], vec![1, 3, 5]]);
    }
}
