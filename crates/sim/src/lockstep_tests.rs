//! A lockstep group's reports against each policy replayed alone, on streams where the
//! lanes' states diverge (writes to lines other threads read) and on caches so small
//! that almost every fill evicts.

use super::*;
use crate::policy::OsPolicy;
use crate::policy::{Fixed, PagePlacement, StaticPolicy, ThreadOrder};
use crate::{simulate, simulate_chunks, SplitMix64};

/// The period of the tests' runs, in cycles: many ticks.
const PERIOD: u64 = 20_000;

/// Threads reading and writing lines of 64 shared pages (30 % writes), thread 1 late,
/// some accesses crossing a line boundary.
fn stream(threads: usize, seed: u64) -> Vec<SimAccess> {
    let mut rng = SplitMix64::new(seed);
    (0..60_000u64)
        .map(|i| {
            let t = if i < 3_000 {
                0
            } else {
                rng.below(threads) as u32
            };
            let page = rng.below(64) as u64;
            let addr = match rng.below(40) {
                0 => (page << 12) + 60,
                _ => (page << 12) + rng.below(64) as u64 * 64,
            };
            match rng.unit() < 0.3 {
                true => SimAccess::write(t, addr, 8),
                false => SimAccess::read(t, addr, 8),
            }
        })
        .collect()
}

/// Static policies of four thread mappings with a core per thread (packed on the first
/// cores, scattered, two seeded permutations), some sharing a mapping with other page
/// homes; and, unless `alone_only`, compact, whose SMT siblings share a core.
fn policies(topo: &Topology, threads: usize, alone_only: bool) -> Vec<Box<dyn Policy>> {
    let cfg = SimConfig::default();
    let m = Machine::new(topo, &cfg).unwrap();
    let first_pu = |core: usize| (0..m.pus()).find(|&p| m.core_of_pu[p] == core).unwrap();
    let packed: Vec<usize> = (0..threads).map(first_pu).collect();
    let nodes = topo.num_nodes();
    let homes = (0..64u64).map(move |p| (p, (p as usize * 5 + 1) % nodes));
    let placed = |name, order, pages| Box::new(StaticPolicy::new(name, order, pages));
    let mut out: Vec<Box<dyn Policy>> = vec![
        Box::new(Fixed::new("packed", packed.clone())),
        placed("scatter", ThreadOrder::Scatter, PagePlacement::FirstTouch),
        Box::new(Fixed::new("packed+homes", packed).with_pages(homes)),
        placed(
            "scatter-il",
            ThreadOrder::Scatter,
            PagePlacement::Interleave,
        ),
    ];
    for seed in [3, 8] {
        let mut cores: Vec<usize> = (0..m.cores()).collect();
        let mut rng = SplitMix64::new(seed);
        for i in (1..cores.len()).rev() {
            cores.swap(i, rng.below(i + 1));
        }
        let mapping = cores[..threads].iter().map(|&c| first_pu(c)).collect();
        let p = Fixed::new(&format!("perm{seed}"), mapping);
        out.push(Box::new(
            p.with_pages((0..64u64).map(|p| (p, p as usize % nodes))),
        ));
    }
    if !alone_only {
        out.insert(
            2,
            placed("compact", ThreadOrder::Compact, PagePlacement::FirstTouch),
        );
    }
    out
}

fn cfg() -> SimConfig {
    SimConfig {
        tick_cycles: Some(PERIOD),
        ..SimConfig::default()
    }
}

/// Each policy's report from one pass (lockstep group included) and from a replay of
/// its own.
fn together_and_alone(
    topo: &Topology,
    threads: usize,
    ps: impl Fn() -> Vec<Box<dyn Policy>>,
) -> (Vec<SimReport>, Vec<SimReport>) {
    let t = stream(threads, 7);
    // Chunks of 7,000: lanes leave their group within one and replay the next alone.
    let mut chunks = t.chunks(7_000);
    let next = |buf: &mut Vec<SimAccess>| {
        buf.extend_from_slice(chunks.next().unwrap_or_default());
        Ok::<_, SimError>(())
    };
    let together = simulate_chunks(topo, &cfg(), ps(), threads, next).unwrap();
    let alone = ps()
        .into_iter()
        .map(|p| simulate(topo, cfg(), p, threads, t.iter().copied()).unwrap())
        .collect();
    (together, alone)
}

/// Some figure differs between the policies replayed alone: the test compares different
/// reports. With a shared cache (`states`), the lanes' states did diverge: a fill is
/// Shared where another domain's shared cache holds the line, and a later write hit is
/// then an upgrade.
fn assert_diverse(alone: &[SimReport], what: &str, states: bool) {
    let differ = |f: fn(&SimReport) -> u64| alone.iter().any(|r| f(r) != f(&alone[0]));
    assert!(differ(|r| r.cycles_max), "times on {what}");
    assert!(!states || differ(|r| r.mem.upgrades), "upgrades on {what}");
    assert!(
        !states || differ(|r| r.mem.llc_misses),
        "shared-cache misses on {what}"
    );
    assert!(differ(|r| r.mem.mem_remote), "remote reads on {what}");
    assert!(alone[0].mem.writebacks > 0 && alone[0].ticks > 1, "{what}");
}

/// On the 4-package Xeon (SMT, a shared L3 per package), the group's reports are each
/// policy's own, compact (two threads per core) replayed beside it.
#[test]
fn a_lockstep_group_reports_each_policy_as_its_own_replay() {
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let (together, alone) = together_and_alone(&topo, 8, || policies(&topo, 8, false));
    assert_eq!(together.len(), alone.len());
    for (a, b) in together.iter().zip(&alone) {
        assert_eq!(a, b, "{}", b.policy);
    }
    assert_diverse(&alone, "xeon", true);
}

/// Tiny private and shared caches (almost every fill evicts, dirty victims go to the
/// shared cache or home), and a machine without a shared cache: the same.
#[test]
fn a_lockstep_group_matches_alone_replays_on_tiny_caches_and_without_a_shared_cache() {
    let tiny = tdmap_topo::from_synthetic(
        "pack:2 [numa(memory=1GiB)] l3:1(size=8KiB) l2:4(size=1KiB) l1d:1(size=512) core:1 pu:1",
    )
    .unwrap();
    let opteron = tdmap_topo::preset("opteron-8n").unwrap();
    for (topo, threads, shared) in [(&tiny, 6, true), (&opteron, 8, false)] {
        let (together, alone) = together_and_alone(topo, threads, || policies(topo, threads, true));
        for (a, b) in together.iter().zip(&alone) {
            assert_eq!(a, b, "{} on {}", b.policy, topo.name);
        }
        assert_diverse(&alone, &topo.name, shared);
    }
}

/// Only static mappings with a core per thread join a group: compact's SMT siblings
/// (and an oversubscribed mapping) replay on their own, and the others as one group.
#[test]
fn only_mappings_with_a_core_per_thread_join_a_group() {
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let m = Machine::new(&topo, &SimConfig::default()).unwrap();
    let mut ps = policies(&topo, 8, false);
    ps.push(Box::new(Fixed::new("crowded", vec![0; 8])));
    let names: Vec<String> = ps.iter().map(|p| p.name()).collect();
    let replays = crate::replay::share(&topo, &cfg(), ps, 8);
    let lanes: Vec<(Vec<&str>, usize)> = replays
        .iter()
        .map(|(at, l)| (at.iter().map(|&k| names[k].as_str()).collect(), l.len()))
        .collect();
    assert_eq!(
        lanes,
        vec![
            (
                vec![
                    "packed",
                    "packed+homes",
                    "scatter",
                    "scatter-il",
                    "perm3",
                    "perm8"
                ],
                4
            ),
            (vec!["compact"], 1),
            (vec!["crowded"], 1),
        ]
    );
    let ctx = PolicyCtx::before_run(&topo, &m, 8);
    let compact = StaticPolicy::new("c", ThreadOrder::Compact, PagePlacement::FirstTouch);
    assert!(!alone_on_cores(&m, &compact.static_mapping(&ctx).unwrap()));
}

/// The OS model, calm (it moves no thread in these runs) and busy (a migration every
/// few ticks), each on its own core per thread, join the group as lanes: the busy one's
/// lane leaves it at its first move, its followers going on alone, and every report is
/// still its own replay's, whichever policy leads the lane. A busier OS model of another
/// seed leaves too, at another time.
#[test]
fn a_quiet_lane_leaves_its_group_when_it_acts() {
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let m = Machine::new(&topo, &SimConfig::default()).unwrap();
    let mixed = |busy_first: bool| {
        let calm = OsPolicy::new("os-calm", 5, PagePlacement::FirstTouch);
        let mut busy = OsPolicy::new("os-busy", 5, PagePlacement::Interleave);
        busy.migrations_per_sec = 0.05 * m.hz / PERIOD as f64;
        let nodes = topo.num_nodes();
        let ctx = PolicyCtx::before_run(&topo, &m, 8);
        let mapping = calm.quiet_mapping(&ctx).unwrap();
        let homes = (0..64u64).map(move |p| (p, (p as usize * 3) % nodes));
        let fixed = Box::new(Fixed::new("fixed", mapping).with_pages(homes));
        let mut busier = OsPolicy::new("os-busier", 6, PagePlacement::FirstTouch);
        busier.migrations_per_sec = 0.2 * m.hz / PERIOD as f64;
        let mut ps = policies(&topo, 8, true);
        ps.push(Box::new(busier));
        let os: Vec<Box<dyn Policy>> = match busy_first {
            true => vec![Box::new(busy), Box::new(calm), fixed],
            false => vec![Box::new(calm), fixed, Box::new(busy)],
        };
        ps.splice(1..1, os);
        ps
    };
    for busy_first in [true, false] {
        let (together, alone) = together_and_alone(&topo, 8, || mixed(busy_first));
        for (a, b) in together.iter().zip(&alone) {
            assert_eq!(a, b, "{}, busy first: {busy_first}", b.policy);
        }
        for name in ["os-busy", "os-busier"] {
            let busy = alone.iter().find(|r| r.policy == name).unwrap();
            assert!(busy.thread_migrations > 1, "{busy:?}");
        }
        let ctx = PolicyCtx::before_run(&topo, &m, 8);
        let os = mixed(busy_first).remove(1);
        assert!(alone_on_cores(&m, &os.quiet_mapping(&ctx).unwrap()));
        let replays = crate::replay::share(&topo, &cfg(), mixed(busy_first), 8);
        assert_eq!(replays.len(), 1, "one group of every lane");
    }
}
