//! Whole runs on synthetic streams with a known answer: sharing-aware mapping beats
//! random placement when pairs of threads share data; mapping does not matter when all
//! data is private; runs are deterministic.

use tdmap_sim::policy::grouping::map_greedy;
use tdmap_sim::policy::{ByName, Fixed, OsPolicy, PagePlacement, StaticPolicy, ThreadOrder};
use tdmap_sim::synth::{Pattern, Synth};
use tdmap_sim::{simulate, Policy, SimConfig, SimReport};

const THREADS: u32 = 32;

fn run(stream: &Synth, policy: Box<dyn Policy>) -> SimReport {
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    simulate(
        &topo,
        SimConfig::default(),
        policy,
        THREADS as usize,
        stream.clone(),
    )
    .unwrap()
}

fn sharing_aware(stream: &Synth) -> Box<dyn Policy> {
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let map = map_greedy(&stream.affinity(), THREADS as usize, &topo);
    Box::new(Fixed::new("sharing-aware", map))
}

fn random(seed: u64) -> Box<dyn Policy> {
    Box::new(StaticPolicy::new(
        "random",
        ThreadOrder::Random(seed),
        PagePlacement::FirstTouch,
    ))
}

#[test]
fn pairs_sharing_data_run_faster_with_a_sharing_aware_mapping_than_random() {
    let s = Synth::new(Pattern::Pairs { bytes: 64 << 10 }, THREADS, 6_000, 0.3, 11);
    let aware = run(&s, sharing_aware(&s));
    for seed in 1..=3 {
        let r = run(&s, random(seed));
        assert!(
            (aware.cycles_max as f64) < 0.8 * r.cycles_max as f64,
            "aware {} vs random(seed {seed}) {}",
            aware.cycles_max,
            r.cycles_max
        );
        assert!(aware.mem.c2c_inter < r.mem.c2c_inter / 4);
        assert!(aware.mem.traffic_inter < r.mem.traffic_inter / 4);
        assert!(aware.remote_ratio() <= r.remote_ratio());
    }
    // Each pair shares a package (its L3 and its node): nothing crosses the chips.
    assert_eq!(aware.mem.c2c_inter, 0);
    assert_eq!(aware.mem.traffic_inter, 0);
    assert_eq!(aware.remote_ratio(), 0.0);
}

#[test]
fn private_data_makes_every_static_mapping_equal() {
    // 8 KiB per thread: two SMT siblings still fit their shared L1.
    let s = Synth::new(Pattern::Private { bytes: 8 << 10 }, THREADS, 4_000, 0.3, 5);
    let mut times = Vec::new();
    // `random` is not here: it randomises page homes too (kMAF's random mapping), so
    // 3 in 4 of its private pages are remote on 4 nodes.
    let r = run(&s, ByName::build("random", 3).unwrap());
    assert!(r.remote_ratio() > 0.5, "random homes: {}", r.remote_ratio());
    for name in ["compact", "scatter", "os"] {
        let r = run(&s, ByName::build(name, 3).unwrap());
        assert_eq!(r.mem.c2c_intra + r.mem.c2c_inter, 0, "{name}: no sharing");
        assert_eq!(r.remote_ratio(), 0.0, "{name}: first touch is local");
        times.push(r.cycles_max as f64);
    }
    times.push(run(&s, sharing_aware(&s)).cycles_max as f64);
    let (lo, hi) = times
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &t| (l.min(t), h.max(t)));
    assert!(hi <= lo * 1.01, "times {times:?}");
}

#[test]
fn same_stream_machine_and_seed_give_identical_results() {
    let s = Synth::new(Pattern::Pairs { bytes: 32 << 10 }, THREADS, 2_000, 0.3, 2);
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let cfg = SimConfig {
        // Ticks every 20k cycles (10 µs), so that policies act within the run.
        tick_cycles: Some(20_000),
        ..SimConfig::default()
    };
    // A busy load balancer (a migration per thread every 2 ms on average, i.e. about
    // one in ten 10 µs periods), so that migrations happen within this short run.
    let build = |name: &str, seed: u64| -> Box<dyn Policy> {
        if name == "os" {
            let mut os = OsPolicy::new("os", seed, PagePlacement::FirstTouch);
            os.migrations_per_sec = 10_000.0;
            Box::new(os)
        } else {
            ByName::build(name, seed).unwrap()
        }
    };
    for name in ["os", "sammu", "interleave", "numa-balancing"] {
        let go = || simulate(&topo, cfg.clone(), build(name, 9), 32, s.clone()).unwrap();
        let (a, b) = (go(), go());
        assert_eq!(a, b, "{name}");
        assert!(a.ticks > 0);
        if name == "os" {
            assert!(a.thread_migrations > 0, "the OS model migrates threads");
        }
        let other = simulate(&topo, cfg.clone(), build(name, 10), 32, s.clone());
        assert_ne!(
            other.unwrap().thread_cycles,
            a.thread_cycles,
            "{name}: seed matters"
        );
    }
}

#[test]
fn one_pass_over_a_stream_gives_each_policy_the_report_of_its_own_run() {
    let s = Synth::new(Pattern::Pairs { bytes: 16 << 10 }, THREADS, 3_000, 0.3, 4);
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let names = ["os", "compact", "sammu"];
    let policies = names.iter().map(|n| ByName::build(n, 2).unwrap()).collect();
    // More accesses than one chunk, so that chunking is exercised.
    assert!(3_000 * THREADS as usize > tdmap_sim::CHUNK);
    let ok = s.clone().map(Ok::<_, tdmap_sim::SimError>);
    let many = tdmap_sim::simulate_many(&topo, &SimConfig::default(), policies, 32, ok).unwrap();
    for (n, r) in names.iter().zip(&many) {
        let alone = run(&s, ByName::build(n, 2).unwrap());
        assert_eq!(&alone, r, "{n}");
    }
}
