//! How much of a trace an in-thread "stride at distance k" encoder would still have to
//! send: `cargo run --release -p tdmap-trace --example predict -- TRACE`. Per thread, an
//! access is predicted when its address is `a[i-k] + (a[i-k] - a[i-2k])` and its size and
//! write flag those of `a[i-k]`, for the distance k (1 to 32: a loop body's accesses)
//! that predicted the last miss; a run of predicted accesses would cost one symbol, a
//! miss one literal. Issue 17 item 2's design note (docs/bench-trace.md, "Next"): if the
//! runtime sent only those symbols, tdmap would have almost nothing left to convert.

use std::collections::BTreeMap;
use tdmap_trace::{Chunk, Reader};

/// The longest loop body, in accesses, that the predictor looks back over.
const K: usize = 32;
/// Accesses remembered: two bodies of the longest distance, and a spare.
const RING: usize = 2 * K + 2;

/// One thread's predictor and its tallies.
struct Thread {
    /// The last accesses: (address, size << 1 | write).
    ring: [(u64, u64); RING],
    at: usize,
    k: usize,
    accesses: u64,
    predicted: u64,
    runs: u64,
    in_run: bool,
}

impl Thread {
    fn new() -> Thread {
        Thread {
            ring: [(0, 0); RING],
            at: 0,
            k: 1,
            accesses: 0,
            predicted: 0,
            runs: 0,
            in_run: false,
        }
    }

    /// The access predicted by distance `k`.
    fn guess(&self, k: usize) -> (u64, u64) {
        let back = |n: usize| self.ring[(self.at + RING - n) % RING];
        let ((a1, s1), (a2, _)) = (back(k), back(2 * k));
        (a1.wrapping_add(a1.wrapping_sub(a2)), s1)
    }

    fn access(&mut self, x: (u64, u64)) {
        let hit = self.guess(self.k) == x;
        if !hit {
            if let Some(k) = (1..=K).find(|&k| self.guess(k) == x) {
                self.k = k;
            }
        }
        self.accesses += 1;
        self.predicted += hit as u64;
        self.runs += (hit && !self.in_run) as u64;
        self.in_run = hit;
        self.ring[self.at] = x;
        self.at = (self.at + 1) % RING;
    }
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: predict TRACE");
        std::process::exit(2);
    };
    let mut r = Reader::open(&path).unwrap_or_else(|e| {
        eprintln!("predict: {e}");
        std::process::exit(2)
    });
    let mut threads: BTreeMap<u32, Thread> = BTreeMap::new();
    while let Some(c) = r.next_chunk().expect("a readable trace") {
        if let Chunk::Accesses(a) = c {
            let t = threads.entry(a.thread).or_insert_with(Thread::new);
            for i in 0..a.addrs.len() {
                t.access((a.addrs[i], (a.sizes[i] as u64) << 1 | a.writes[i] as u64));
            }
        }
    }
    let sum = |f: fn(&Thread) -> u64| threads.values().map(f).sum::<u64>();
    let (n, hit, runs) = (sum(|t| t.accesses), sum(|t| t.predicted), sum(|t| t.runs));
    println!(
        "{path}: {n} accesses, {:.1} % predicted, {:.3} symbols per access",
        100.0 * hit as f64 / n.max(1) as f64,
        (n - hit + runs) as f64 / n.max(1) as f64
    );
}
