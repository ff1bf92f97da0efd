//! `greedy`: fast hierarchical grouping in the spirit of EagerMap (Cruz et al.), the
//! default for online use. Each group starts from the unit with the most sharing left
//! and adds, one at a time, the unit sharing most with the group so far; O(k²) per level.
//! [`Key`] is that rule's order, used here and by [`crate::greedy_sparse`].

use std::cmp::Ordering;

/// A unit's rank in the greedy rule: larger `score` first (the sharing with the group for
/// a candidate, the sharing left for a seed); on a tie, the unit that began sharing with
/// the group at an earlier member (`first`, its position in the group; `usize::MAX` when
/// it shares nothing with it, and 0 for seeds); then the lower unit.
///
/// `first` makes groups grow breadth-first: on a halo every frontier unit ties at one
/// neighbour in the group, and by index alone the group grows along a row, so 64 ranks of
/// a 16 × 16 grid became a 4 × 16 strip (48 cut edges for 4 groups, where quadrants cut
/// 32, as Scotch and matching do). On dense matrices the seed touches every unit, so
/// `first` ties everywhere and the order is by index, as before.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Key {
    /// Sharing with the group (candidate) or sharing left (seed).
    pub score: f64,
    /// Position in the group of the first member sharing with the unit.
    pub first: usize,
    /// The unit.
    pub unit: usize,
}

impl Key {
    /// Whether `self` comes before `o` in the greedy rule.
    #[inline]
    pub fn beats(&self, o: &Key) -> bool {
        self.score > o.score
            || (self.score == o.score
                && (self.first < o.first || (self.first == o.first && self.unit < o.unit)))
    }
}

impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
/// Greater is better, so that a max-heap pops the next pick.
impl Ord for Key {
    fn cmp(&self, o: &Self) -> Ordering {
        if self.beats(o) {
            Ordering::Greater
        } else if o.beats(self) {
            Ordering::Less
        } else {
            Ordering::Equal
        }
    }
}

/// Groups `k` units sharing `w` into groups of `size`; also returns the sharing between
/// the groups ([`reduce`](crate::hier::reduce)), built while the member rows are in cache.
pub fn group(w: &[f64], k: usize, size: usize) -> (Vec<Vec<usize>>, Vec<f64>) {
    let mut alive: Vec<usize> = (0..k).collect();
    let mut rowsum: Vec<f64> = (0..k).map(|u| w[u * k..(u + 1) * k].iter().sum()).collect();
    let mut gain = vec![0.0; k];
    let mut first = vec![usize::MAX; k];
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
        let (mut pick, mut seed_pos) = absorb(row, &alive, &mut gain, &mut first, &mut rowsum, 0);
        while members.len() < size && !alive.is_empty() {
            let u = alive.swap_remove(pick);
            members.push(u);
            let row = &w[u * k..(u + 1) * k];
            for (a, &x) in acc.iter_mut().zip(row) {
                *a += x;
            }
            (pick, seed_pos) = absorb(
                row,
                &alive,
                &mut gain,
                &mut first,
                &mut rowsum,
                members.len() - 1,
            );
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

/// Adds the row of the group's member number `at` (0: the seed, which starts the gains)
/// to the gains and removes it from the remaining sharing, in one pass over the row;
/// returns the positions in `alive` of the best next member and of the best next seed
/// ([`Key`]'s order).
fn absorb(
    row: &[f64],
    alive: &[usize],
    gain: &mut [f64],
    first: &mut [usize],
    rowsum: &mut [f64],
    at: usize,
) -> (usize, usize) {
    let (mut pick, mut seed) = (0, 0);
    let none = Key {
        score: f64::NEG_INFINITY,
        first: usize::MAX,
        unit: usize::MAX,
    };
    let (mut best_pick, mut best_seed) = (none, none);
    for (i, &v) in alive.iter().enumerate() {
        let x = row[v];
        if at == 0 {
            gain[v] = x;
            first[v] = if x > 0.0 { 0 } else { usize::MAX };
        } else {
            gain[v] += x;
            if x > 0.0 && first[v] == usize::MAX {
                first[v] = at;
            }
        }
        rowsum[v] -= x;
        let p = Key {
            score: gain[v],
            first: first[v],
            unit: v,
        };
        if p.beats(&best_pick) {
            (pick, best_pick) = (i, p);
        }
        let s = Key {
            score: rowsum[v],
            first: 0,
            unit: v,
        };
        if s.beats(&best_seed) {
            (seed, best_seed) = (i, s);
        }
    }
    (pick, seed)
}

/// The position in `alive` of the unit with the largest score ([`Key`]'s order).
fn best_of(alive: &[usize], score: &[f64]) -> usize {
    let key = |u: usize| Key {
        score: score[u],
        first: 0,
        unit: u,
    };
    let mut best = 0;
    for (i, &u) in alive.iter().enumerate() {
        if key(u).beats(&key(alive[best])) {
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
