//! `greedy`: fast hierarchical grouping in the spirit of EagerMap (Cruz et al.), the
//! default for online use. Each group starts from the unit with the most sharing left
//! and adds, one at a time, the unit sharing most with the group so far; O(k²) per level.

/// Groups `k` units sharing `w` into groups of `size`; also returns the sharing between
/// the groups ([`reduce`](crate::hier::reduce)), built while the member rows are in cache.
pub fn group(w: &[f64], k: usize, size: usize) -> (Vec<Vec<usize>>, Vec<f64>) {
    let mut alive: Vec<usize> = (0..k).collect();
    let mut rowsum: Vec<f64> = (0..k).map(|u| w[u * k..(u + 1) * k].iter().sum()).collect();
    let mut gain = vec![0.0; k];
    let mut acc = vec![0.0; k];
    let g = k / size.max(1);
    let mut groups: Vec<Vec<usize>> = Vec::with_capacity(g);
    let mut flat: Vec<usize> = Vec::with_capacity(k);
    let mut out = vec![0.0; g * g];
    let mut next_seed = best_of(&alive, &rowsum);
    while !alive.is_empty() {
        let seed = alive.swap_remove(next_seed);
        let mut members = vec![seed];
        let row = &w[seed * k..(seed + 1) * k];
        acc.copy_from_slice(row);
        let (mut pick, mut seed_pos) = absorb(row, &alive, &mut gain, &mut rowsum, true);
        while members.len() < size && !alive.is_empty() {
            let u = alive.swap_remove(pick);
            members.push(u);
            let row = &w[u * k..(u + 1) * k];
            for (a, &x) in acc.iter_mut().zip(row) {
                *a += x;
            }
            (pick, seed_pos) = absorb(row, &alive, &mut gain, &mut rowsum, false);
        }
        next_seed = seed_pos;
        // Sharing with the groups formed so far (lower triangle; mirrored below).
        let gi = groups.len();
        let row = &mut out[gi * g..gi * g + gi];
        for (cell, other) in row.iter_mut().zip(flat.chunks_exact(size)) {
            *cell = other.iter().map(|&v| acc[v]).sum();
        }
        flat.extend_from_slice(&members);
        groups.push(members);
    }
    mirror_lower(&mut out, g);
    (groups, out)
}

/// Copies the lower triangle of the g × g matrix onto the upper one, tile by tile.
fn mirror_lower(out: &mut [f64], g: usize) {
    const T: usize = 64;
    for bi in (0..g).step_by(T) {
        for bj in (0..=bi).step_by(T) {
            for i in bi..(bi + T).min(g) {
                for j in bj..(bj + T).min(i) {
                    out[j * g + i] = out[i * g + j];
                }
            }
        }
    }
}

/// Adds a new member's row to the group's gain (or starts it) and removes it from the
/// remaining sharing, in one pass over the row; returns the positions in `alive` of the
/// best next member and of the best next seed (lowest unit index on ties).
fn absorb(
    row: &[f64],
    alive: &[usize],
    gain: &mut [f64],
    rowsum: &mut [f64],
    start: bool,
) -> (usize, usize) {
    let (mut pick, mut seed) = (0, 0);
    let (mut pick_u, mut seed_u) = (usize::MAX, usize::MAX);
    let (mut pick_g, mut seed_s) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for (i, &v) in alive.iter().enumerate() {
        let x = row[v];
        let g = if start { x } else { gain[v] + x };
        let s = rowsum[v] - x;
        gain[v] = g;
        rowsum[v] = s;
        if g > pick_g || (g == pick_g && v < pick_u) {
            (pick, pick_u, pick_g) = (i, v, g);
        }
        if s > seed_s || (s == seed_s && v < seed_u) {
            (seed, seed_u, seed_s) = (i, v, s);
        }
    }
    (pick, seed)
}

/// The position in `alive` of the unit with the largest score (lowest index on ties).
fn best_of(alive: &[usize], score: &[f64]) -> usize {
    let mut best = 0;
    for (i, &u) in alive.iter().enumerate() {
        let b = alive[best];
        if score[u] > score[b] || (score[u] == score[b] && u < b) {
            best = i;
        }
    }
    best
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
        let (mut g, r) = group(&w, k, 3);
        assert_eq!(r, crate::hier::reduce(&w, k, &g));
        for x in &mut g {
            x.sort();
        }
        g.sort();
        assert_eq!(g, vec![vec![0, 2, 4], vec![1, 3, 5]]);
    }
}
