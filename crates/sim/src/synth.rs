//! Synthetic access streams with a known sharing pattern, for tests and benchmarks:
//! pairs of threads sharing a buffer, or threads with private buffers only. Streams are
//! generated lazily (an iterator), so they cost no memory however long they are.

use crate::access::SimAccess;
use crate::rng::SplitMix64;

/// Where each thread's accesses fall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Threads `2k` and `2k+1` share one buffer of `bytes`.
    Pairs {
        /// Buffer size per pair.
        bytes: u64,
    },
    /// Each thread has its own buffer of `bytes`.
    Private {
        /// Buffer size per thread.
        bytes: u64,
    },
}

/// A round-robin interleaving of `threads` threads, `per_thread` accesses each, 8-byte
/// accesses at random 8-byte-aligned offsets of each thread's buffer (or runs of
/// consecutive words, see [`Synth::with_run`]), a fraction
/// `write_ratio` of them stores. Buffers are 1 GiB apart.
#[derive(Debug, Clone)]
pub struct Synth {
    pattern: Pattern,
    threads: u32,
    left: u64,
    next_thread: u32,
    write_ratio: f64,
    run: u32,
    cursors: Vec<(u64, u32)>,
    rng: SplitMix64,
}

impl Synth {
    /// A stream of the pattern.
    pub fn new(
        pattern: Pattern,
        threads: u32,
        per_thread: u64,
        write_ratio: f64,
        seed: u64,
    ) -> Self {
        Synth {
            pattern,
            threads: threads.max(1),
            left: per_thread * threads.max(1) as u64,
            next_thread: 0,
            write_ratio,
            run: 1,
            cursors: vec![(0, 0); threads.max(1) as usize],
            rng: SplitMix64::new(seed),
        }
    }

    /// Gives the stream spatial locality: each thread walks `run` consecutive 8-byte
    /// words before jumping to a random offset (1, the default, is uniform random).
    pub fn with_run(mut self, run: u32) -> Self {
        self.run = run.max(1);
        self
    }

    /// The true affinity matrix of the pattern (row-major, threads × threads).
    pub fn affinity(&self) -> Vec<f64> {
        let n = self.threads as usize;
        let mut a = vec![0.0; n * n];
        if let Pattern::Pairs { .. } = self.pattern {
            for t in (0..n - n % 2).step_by(2) {
                a[t * n + t + 1] = 1.0;
                a[(t + 1) * n + t] = 1.0;
            }
        }
        a
    }
}

impl Iterator for Synth {
    type Item = SimAccess;

    fn next(&mut self) -> Option<SimAccess> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let t = self.next_thread;
        self.next_thread = (t + 1) % self.threads;
        let (buf, bytes) = match self.pattern {
            Pattern::Pairs { bytes } => (t as u64 / 2, bytes),
            Pattern::Private { bytes } => (t as u64, bytes),
        };
        let words = (bytes / 8).max(1);
        let cur = &mut self.cursors[t as usize];
        if cur.1 == 0 {
            *cur = (self.rng.next_u64() % words, self.run);
        }
        let off = (cur.0 % words) * 8;
        cur.0 += 1;
        cur.1 -= 1;
        let write = self.rng.unit() < self.write_ratio;
        Some(SimAccess {
            thread: t,
            addr: (1 << 30) * (buf + 1) + off,
            size: 8,
            write,
        })
    }
}
