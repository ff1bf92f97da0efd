//! Simulated accesses per second on one core, with the full model (caches, MESI
//! directory, TLB, page table, policy hooks), on the xeon-x7550-4s preset.
//!
//! The streams are generated before timing. Run with `make bench-sim`.

use std::time::Instant;
use tdmap_sim::policy::ByName;
use tdmap_sim::synth::{Pattern, Synth};
use tdmap_sim::{SimAccess, SimConfig, Simulator};

const THREADS: u32 = 32;
const ACCESSES: u64 = 8_000_000;

fn main() {
    let topo = tdmap_topo::preset("xeon-x7550-4s").expect("preset");
    // Runs of 16 consecutive words give an L1 hit rate near that of real programs;
    // runs of 1 (uniform random words) are the worst case.
    let cases = [
        (
            "private 16 KiB, runs of 16 words",
            Pattern::Private { bytes: 16 << 10 },
            16,
        ),
        (
            "pairs 64 KiB, runs of 16 words",
            Pattern::Pairs { bytes: 64 << 10 },
            16,
        ),
        (
            "private 1 MiB, runs of 16 words",
            Pattern::Private { bytes: 1 << 20 },
            16,
        ),
        (
            "pairs 64 KiB, uniform random words",
            Pattern::Pairs { bytes: 64 << 10 },
            1,
        ),
        (
            "pairs 8 MiB, uniform random words",
            Pattern::Pairs { bytes: 8 << 20 },
            1,
        ),
        (
            "private 1 MiB, uniform random words",
            Pattern::Private { bytes: 1 << 20 },
            1,
        ),
    ];
    println!("tdmap-sim throughput: {ACCESSES} accesses, {THREADS} threads, xeon-x7550-4s, 30% stores, one core, best of 3 wall-clock runs");
    println!(
        "{:<40} {:>8} {:>10} {:>12} {:>10}",
        "stream", "policy", "seconds", "M acc/s", "L1 hit %"
    );
    let only: Option<usize> = std::env::args().nth(1).and_then(|a| a.parse().ok());
    for (k, (label, pattern, run)) in cases.into_iter().enumerate() {
        if only.is_some_and(|o| o != k) {
            continue;
        }
        let stream: Vec<SimAccess> =
            Synth::new(pattern, THREADS, ACCESSES / THREADS as u64, 0.3, 1)
                .with_run(run)
                .collect();
        for policy in ["os", "sammu"] {
            // Best of three: the machine is shared, and the least disturbed run is the
            // closest to the simulator's own speed.
            let mut best = f64::MAX;
            let mut report = None;
            for _ in 0..3 {
                let p = ByName::build(policy, 1).expect("policy");
                let mut sim = Simulator::new(&topo, SimConfig::default(), p, THREADS as usize)
                    .expect("simulator");
                let start = Instant::now();
                for chunk in stream.chunks(1 << 16) {
                    sim.run_chunk(chunk).expect("run");
                }
                best = best.min(start.elapsed().as_secs_f64());
                report = Some(sim.finish());
            }
            let (secs, r) = (best, report.expect("one run"));
            let hits = 100.0 * r.mem.l1_hits as f64 / (r.mem.l1_hits + r.mem.l1_misses) as f64;
            println!(
                "{label:<40} {policy:>8} {secs:>10.3} {:>12.1} {hits:>10.1}",
                ACCESSES as f64 / secs / 1e6
            );
        }
    }
}
