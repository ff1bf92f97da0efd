//! The online policies driven by the simulator: SAMMU and NUMA balancing move pages to
//! the node that uses them (SAMMU §2.4), and SAMMU's periodic mapping brings threads
//! that share data together (§2.7.1).

use tdmap_sim::policy::{pu_order, Fixed, NumaBalancing, Sammu, SammuParams, ThreadOrder};
use tdmap_sim::synth::{Pattern, Synth};
use tdmap_sim::{Policy, SimAccess, SimConfig, SimReport, Simulator};
use tdmap_topo::Topology;

/// Asserts `a < b`, showing both.
fn less(a: u64, b: u64) {
    assert!(a < b, "{a} is not below {b}");
}

/// The first seed whose initial placement satisfies `ok`.
fn seed_where(topo: &Topology, threads: usize, ok: impl Fn(&[usize]) -> bool) -> u64 {
    (1..1000)
        .find(|&s| {
            let order = pu_order(topo, ThreadOrder::Random(s));
            ok(&order[..threads])
        })
        .expect("a seed")
}

fn run(
    topo: &Topology,
    cfg: &SimConfig,
    p: Box<dyn Policy>,
    threads: usize,
    s: &[SimAccess],
) -> (SimReport, Vec<usize>, Vec<Option<usize>>) {
    let mut sim = Simulator::new(topo, cfg.clone(), p, threads).unwrap();
    sim.run_chunk(s).unwrap();
    let pus = sim.thread_pu().to_vec();
    let nodes = (0..512).map(|k| sim.page_node((1 << 18) + k)).collect();
    (sim.finish(), pus, nodes)
}

/// Thread 0 writes 2 MiB (512 pages, first touch on its node), then other data so that
/// its package's L2 no longer holds the buffer; thread 1 then reads the buffer line by
/// line, 12 times. The buffer is twice the shared L2, so the reads miss.
fn writer_then_reader() -> Vec<SimAccess> {
    let base = 1u64 << 30;
    let mut s: Vec<SimAccess> = (0..32768)
        .map(|k| SimAccess::write(0, base + k * 64, 8))
        .collect();
    s.extend((0..32768).map(|k| SimAccess::write(0, 2 * base + k * 64, 8)));
    for _ in 0..12 {
        s.extend((0..32768).map(|k| SimAccess::read(1, base + k * 64, 8)));
    }
    s
}

/// Runs [`writer_then_reader`] under a policy whose initial placement is the OS's with
/// `seed`, and under the same placement kept fixed; checks that every page moved to the
/// reader's node and that the run got faster.
fn pages_move_to_the_reader(cfg: SimConfig, policy: impl Fn(u64) -> Box<dyn Policy>) {
    let topo = tdmap_topo::preset("simics-4x2").unwrap();
    let node = |pu: usize| topo.pus[pu].node;
    // The policy's own initial placement (SAMMU's is the OS's).
    let start = |seed: u64| {
        let sim = Simulator::new(&topo, cfg.clone(), policy(seed), 2).unwrap();
        sim.thread_pu().to_vec()
    };
    let seed = (1..1000)
        .find(|&s| {
            let m = start(s);
            node(m[0]) != node(m[1])
        })
        .expect("a seed");
    let order = start(seed);
    let s = writer_then_reader();
    let (r, _, nodes) = run(&topo, &cfg, policy(seed), 2, &s);
    let fixed = Fixed::new("same-start", vec![order[0], order[1]]);
    let (base_r, _, base_nodes) = run(&topo, &cfg, Box::new(fixed), 2, &s);
    let reader = node(order[1]);
    assert!(
        base_nodes.iter().all(|&n| n == Some(node(order[0]))),
        "first touch"
    );
    assert!(
        nodes.iter().all(|&n| n == Some(reader)),
        "{}: every page moved: {nodes:?}",
        r.policy
    );
    assert_eq!(r.page_migrations, 512);
    less(r.mem.mem_remote * 2, base_r.mem.mem_remote);
    less(r.cycles_max, base_r.cycles_max);
}

#[test]
fn sammu_moves_pages_written_by_one_thread_and_read_by_another_to_the_reader() {
    // The OS drains SAMMU's list once per period (§2.6.2): a period shorter than the run.
    let cfg = SimConfig {
        ac_max: 32,
        tick_cycles: Some(1_000_000),
        ..SimConfig::default()
    };
    pages_move_to_the_reader(cfg, |seed| {
        Box::new(Sammu::new(SammuParams {
            seed,
            // Data mapping alone: Scotch would otherwise bring the reader to the pages
            // (both threads on the first core), which leaves nothing to move.
            remap_gain: 1.0,
            ..SammuParams::default()
        }))
    });
}

#[test]
fn numa_balancing_moves_pages_after_hinting_faults_from_the_reader() {
    let cfg = SimConfig {
        tick_cycles: Some(16_000_000),
        ..SimConfig::default()
    };
    pages_move_to_the_reader(cfg, |seed| {
        let mut p = NumaBalancing::new(seed);
        p.threads.migrations_per_sec = 0.0;
        // One scan per period (8 ms at 2 GHz), from the first.
        p.scan_delay = 1;
        p.scan_min = 1;
        Box::new(p)
    });
}

#[test]
fn the_periodic_mapping_brings_sharing_pairs_together() {
    let topo = tdmap_topo::preset("simics-4x2").unwrap();
    let pkg = |pu: usize| topo.pus[pu].package;
    // Start from a placement that splits every pair (2k, 2k+1) over two packages.
    let seed = seed_where(&topo, 8, |m| {
        (0..4).all(|k| pkg(m[2 * k]) != pkg(m[2 * k + 1]))
    });
    let stream: Vec<SimAccess> = Synth::new(Pattern::Pairs { bytes: 16 << 10 }, 8, 40_000, 0.3, 3)
        .with_run(8)
        .collect();
    let cfg = SimConfig {
        ac_max: 64,
        tick_cycles: Some(100_000),
        ..SimConfig::default()
    };
    let sammu = Sammu::new(SammuParams {
        seed,
        ..SammuParams::default()
    });
    let (r, pus, _) = run(&topo, &cfg, Box::new(sammu), 8, &stream);
    assert!(r.ticks >= 2, "ticks: {}", r.ticks);
    assert!(r.thread_migrations > 0);
    for k in 0..4 {
        assert_eq!(pkg(pus[2 * k]), pkg(pus[2 * k + 1]), "pair {k}: {pus:?}");
    }
    let order = pu_order(&topo, ThreadOrder::Random(seed));
    let fixed = Fixed::new("same-start", order[..8].to_vec());
    let (base, _, _) = run(&topo, &cfg, Box::new(fixed), 8, &stream);
    less(r.mem.c2c_inter * 2, base.mem.c2c_inter);
    less(r.cycles_max, base.cycles_max);
}
