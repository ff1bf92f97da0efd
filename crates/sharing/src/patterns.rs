//! Synthetic access streams with known sharing patterns (kMAF Figure 4's shapes), for
//! tests, benchmarks and demonstrations. Deterministic for a given seed.

/// A sharing pattern among T threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Each thread touches only its own region.
    AllPrivate,
    /// Threads 2k and 2k+1 share a region.
    Pairs,
    /// Thread t shares a region with t−1 and one with t+1 (a stencil's halos).
    Neighbours,
    /// Every thread touches one common region.
    AllToAll,
    /// Stages of T/4 threads (at least 1): a stage shares its buffer within itself and
    /// with the next stage, which reads it.
    Pipeline,
}

impl Pattern {
    /// Every pattern, for sweeps.
    pub const ALL: [Pattern; 5] = [
        Pattern::AllPrivate,
        Pattern::Pairs,
        Pattern::Neighbours,
        Pattern::AllToAll,
        Pattern::Pipeline,
    ];

    /// The regions thread `t` of `n` touches.
    pub fn regions(self, t: usize, n: usize) -> Vec<usize> {
        match self {
            Pattern::AllPrivate => vec![t],
            Pattern::Pairs => vec![t / 2],
            Pattern::Neighbours => {
                let mut v = vec![t + 1];
                if t > 0 {
                    v.push(t);
                }
                if t + 1 == n {
                    v.retain(|&r| r != n);
                }
                if v.is_empty() {
                    v.push(0);
                }
                v
            }
            Pattern::AllToAll => vec![0],
            Pattern::Pipeline => {
                let stage = t / (n / 4).max(1);
                if stage == 0 {
                    vec![0]
                } else {
                    vec![stage - 1, stage]
                }
            }
        }
    }
}

/// A small xorshift generator, so the crate needs no dependency for this.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Bytes of one shared region (16 pages of 4 KiB).
pub const REGION: u64 = 64 * 1024;
/// Base address of region 0.
pub const BASE: u64 = 0x10_0000_0000;

/// Generates `rounds` rounds in which every thread, in a random order, makes one batch
/// of `batch` accesses to random 8-byte words of its regions. Returns (thread, addresses)
/// batches in time order.
pub fn generate(
    p: Pattern,
    threads: usize,
    rounds: usize,
    batch: usize,
    seed: u64,
) -> Vec<(u32, Vec<u64>)> {
    let mut rng = Rng(seed | 1);
    let regions: Vec<Vec<usize>> = (0..threads).map(|t| p.regions(t, threads)).collect();
    let mut out = Vec::with_capacity(rounds * threads);
    let mut order: Vec<usize> = (0..threads).collect();
    for _ in 0..rounds {
        for i in (1..order.len()).rev() {
            order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
        }
        for &t in &order {
            let rs = &regions[t];
            let addrs = (0..batch)
                .map(|_| {
                    let r = rs[(rng.next() % rs.len() as u64) as usize] as u64;
                    BASE + r * REGION + (rng.next() % (REGION / 8)) * 8
                })
                .collect();
            out.push((t as u32, addrs));
        }
    }
    out
}

/// [`generate`]'s batches as 8-byte trace accesses, timestamped 1, 2, ... in order;
/// every `write_every`-th access is a write (0: none). What a trace writer appends.
pub fn accesses(
    p: Pattern,
    threads: usize,
    rounds: usize,
    batch: usize,
    seed: u64,
    write_every: u64,
) -> Vec<(u32, Vec<tdmap_trace::Access>)> {
    let mut time = 0u64;
    generate(p, threads, rounds, batch, seed)
        .into_iter()
        .map(|(thread, addrs)| {
            let v = addrs
                .into_iter()
                .map(|addr| {
                    time += 1;
                    tdmap_trace::Access {
                        thread,
                        addr,
                        size: 8,
                        write: write_every > 0 && time.is_multiple_of(write_every),
                        time,
                    }
                })
                .collect();
            (thread, v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_match_the_pattern_names() {
        assert_eq!(Pattern::Pairs.regions(5, 8), vec![2]);
        assert_eq!(Pattern::Neighbours.regions(0, 4), vec![1]);
        assert_eq!(Pattern::Neighbours.regions(2, 4), vec![3, 2]);
        assert_eq!(Pattern::Neighbours.regions(3, 4), vec![3]);
        assert_eq!(Pattern::Pipeline.regions(0, 8), vec![0]);
        assert_eq!(Pattern::Pipeline.regions(3, 8), vec![0, 1]);
    }

    #[test]
    fn generation_is_deterministic_and_stays_in_regions() {
        let a = generate(Pattern::Pairs, 4, 3, 10, 7);
        assert_eq!(a, generate(Pattern::Pairs, 4, 3, 10, 7));
        assert_eq!(a.len(), 12);
        for (t, addrs) in &a {
            let r = (*t as u64) / 2;
            assert!(addrs.iter().all(|&x| (x - BASE) / REGION == r));
        }
    }
}
