//! Every policy on the same synthetic streams (xeon-x7550-4s, 32 threads), normalised
//! to `os`: the shape of the papers' Figures 7-9, on SIMULATED runs of synthetic
//! patterns. `aware` is a static mapping computed from the pattern's true affinity with
//! the stand-in grouping algorithm; it is not the papers' oracle.

use tdmap_sim::policy::grouping::map_greedy;
use tdmap_sim::policy::{ByName, Fixed};
use tdmap_sim::synth::{Pattern, Synth};
use tdmap_sim::{simulate, Policy, SimConfig, SimReport};

const THREADS: u32 = 32;
const PER_THREAD: u64 = 60_000;

fn main() {
    let topo = tdmap_topo::preset("xeon-x7550-4s").expect("preset");
    // The traces last a few ms of simulated time, so the 100 ms mapping period is
    // shortened to 50 µs (SAMMU then maps about ten times per run). The OS's migration
    // rate and NUMA balancing's 1 s scan period are in simulated time and stay as they
    // are: within a few ms, neither acts.
    let cfg = SimConfig {
        tick_cycles: Some(100_000),
        ac_max: 256,
        ..SimConfig::default()
    };
    println!("SIMULATED, not measured: xeon-x7550-4s model, {THREADS} threads, {PER_THREAD} accesses per thread, 30% stores, runs of 16 words");
    println!(
        "policy period {:?} cycles (50 µs), SAMMU AC max {}, seed 1; OS and NUMA-balancing rates in simulated time",
        cfg.tick_cycles, cfg.ac_max
    );
    let cases = [
        ("pairs share 64 KiB", Pattern::Pairs { bytes: 64 << 10 }),
        ("pairs share 4 MiB", Pattern::Pairs { bytes: 4 << 20 }),
        ("private 1 MiB", Pattern::Private { bytes: 1 << 20 }),
    ];
    for (label, pattern) in cases {
        let stream = Synth::new(pattern, THREADS, PER_THREAD, 0.3, 1).with_run(16);
        println!("\n== {label} (values relative to os; remote ratio and migrations absolute)");
        println!(
            "{:<15} {:>7} {:>9} {:>10} {:>8} {:>9} {:>9}",
            "policy", "time", "L3 miss", "interchip", "remote", "thr.mig", "page.mig"
        );
        let mut base: Option<SimReport> = None;
        let aware = map_greedy(&stream.affinity(), THREADS as usize, &topo);
        // ByName::NAMES starts with "os", the baseline of the table.
        let mut policies: Vec<Box<dyn Policy>> = ByName::NAMES
            .iter()
            .map(|n| ByName::build(n, 1).expect("policy"))
            .collect();
        policies.push(Box::new(Fixed::new("aware", aware)));
        for p in policies {
            let r = simulate(&topo, cfg.clone(), p, THREADS as usize, stream.clone()).expect("run");
            let b = base.get_or_insert_with(|| r.clone());
            // "-" when the baseline is 0 (nothing to normalise by).
            let rel = |x: u64, y: u64| {
                if y == 0 {
                    "-".to_string()
                } else {
                    format!("{:.3}", x as f64 / y as f64)
                }
            };
            println!(
                "{:<15} {:>7} {:>9} {:>10} {:>8.3} {:>9} {:>9}",
                r.policy,
                rel(r.cycles_max, b.cycles_max),
                rel(r.l3_misses(), b.l3_misses()),
                rel(r.interchip_bytes(), b.interchip_bytes()),
                r.remote_ratio(),
                r.thread_migrations,
                r.page_migrations
            );
        }
    }
}
