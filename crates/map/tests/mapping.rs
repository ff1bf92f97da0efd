//! The must-show behaviour of the thread-mapping algorithms on planted sharing patterns,
//! checked against exhaustive search where it is small enough.

use tdmap_map::rng::SplitMix;
use tdmap_map::{cost, map_threads, Algorithm, Distance, MapError, Options};
use tdmap_topo::Topology;

const AWARE: [Algorithm; 3] = [Algorithm::Drb, Algorithm::Matching, Algorithm::Greedy];

fn synth(spec: &str) -> Topology {
    tdmap_topo::from_synthetic(spec).unwrap()
}

/// Threads in the same group (`group(t)`) share `heavy`, others share 0..noise.
fn planted(
    n: usize,
    group: impl Fn(usize) -> usize,
    heavy: f64,
    noise: f64,
    seed: u64,
) -> Vec<f64> {
    let mut rng = SplitMix::new(seed);
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..i {
            let x = if group(i) == group(j) {
                heavy
            } else {
                noise * rng.unit()
            };
            m[i * n + j] = x;
            m[j * n + i] = x;
        }
    }
    m
}

fn run(algo: Algorithm, topo: &Topology, m: &[f64], n: usize) -> Vec<usize> {
    let map = map_threads(algo, topo, m, n, &Options::default()).unwrap();
    let mut seen = map.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), n, "{algo:?} put two threads on one PU: {map:?}");
    map
}

fn hops(topo: &Topology, m: &[f64], n: usize, map: &[usize]) -> f64 {
    cost(topo, m, n, map, Distance::Hops).unwrap()
}

#[test]
fn two_sharing_pairs_go_to_one_package_each_and_exhaustive_agrees() {
    let topo = synth("package:2 core:2");
    // Pairs (0,2) and (1,3): compact would split them.
    let m = planted(4, |t| t % 2, 1000.0, 1.0, 1);
    let best = run(Algorithm::Exhaustive, &topo, &m, 4);
    let pkg = |map: &[usize], t: usize| topo.pus[map[t]].package;
    for algo in AWARE.into_iter().chain([Algorithm::Exhaustive]) {
        let map = run(algo, &topo, &m, 4);
        assert_eq!(pkg(&map, 0), pkg(&map, 2), "{algo:?}: {map:?}");
        assert_eq!(pkg(&map, 1), pkg(&map, 3), "{algo:?}: {map:?}");
        assert_ne!(pkg(&map, 0), pkg(&map, 1), "{algo:?}: {map:?}");
        assert_eq!(
            hops(&topo, &m, 4, &map),
            hops(&topo, &m, 4, &best),
            "{algo:?}"
        );
    }
    let compact = run(Algorithm::Compact, &topo, &m, 4);
    assert!(hops(&topo, &m, 4, &compact) > hops(&topo, &m, 4, &best));
}

#[test]
fn four_groups_of_sixteen_fill_the_four_packages_of_the_x7550() {
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    assert_eq!(topo.num_pus(), 64);
    // Thread t belongs to group t % 4, so the identity order mixes all groups.
    let m = planted(64, |t| t % 4, 100.0, 5.0, 2);
    for algo in AWARE {
        let map = run(algo, &topo, &m, 64);
        for g in 0..4 {
            let pkgs: Vec<usize> = (g..64)
                .step_by(4)
                .map(|t| topo.pus[map[t]].package)
                .collect();
            assert!(
                pkgs.iter().all(|&p| p == pkgs[0]),
                "{algo:?} split group {g}: {pkgs:?}"
            );
        }
    }
}

#[test]
fn six_cores_per_socket_and_fewer_threads_than_pus() {
    // Arity 3 and 6 levels: groups of three threads must share a package.
    let topo = synth("package:2 core:3");
    let m = planted(6, |t| t % 2, 500.0, 1.0, 3);
    let best = hops(&topo, &m, 6, &run(Algorithm::Exhaustive, &topo, &m, 6));
    for algo in AWARE {
        let map = run(algo, &topo, &m, 6);
        assert_eq!(hops(&topo, &m, 6, &map), best, "{algo:?}: {map:?}");
    }
    let topo = synth("package:2 core:6 pu:2");
    let m = planted(24, |t| t % 2, 500.0, 1.0, 4);
    for algo in AWARE {
        let map = run(algo, &topo, &m, 24);
        for t in 2..24 {
            let same = topo.pus[map[t]].package == topo.pus[map[t % 2]].package;
            assert!(same, "{algo:?} split a group: {map:?}");
        }
    }
    // Five threads on eight PUs: as good as exhaustive.
    let topo = synth("package:2 core:2 pu:2");
    let m = planted(5, |t| usize::from(t >= 2), 300.0, 2.0, 5);
    let best = hops(&topo, &m, 5, &run(Algorithm::Exhaustive, &topo, &m, 5));
    for algo in [Algorithm::Matching, Algorithm::Greedy] {
        let map = run(algo, &topo, &m, 5);
        assert_eq!(hops(&topo, &m, 5, &map), best, "{algo:?}: {map:?}");
    }
}

#[test]
fn heavy_pairs_become_smt_siblings() {
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    // Pairs (t, t + 32) share most; compact would pair t with t + 1.
    let m = planted(64, |t| t % 32, 1000.0, 1.0, 6);
    for algo in AWARE {
        let map = run(algo, &topo, &m, 64);
        for t in 0..32 {
            assert_eq!(
                topo.pus[map[t]].core,
                topo.pus[map[t + 32]].core,
                "{algo:?}"
            );
        }
    }
}

#[test]
fn oversubscription_needs_the_flag_and_then_shares_pus_evenly() {
    let topo = synth("core:2");
    let m = planted(6, |t| t % 2, 100.0, 1.0, 7);
    let err = map_threads(Algorithm::Greedy, &topo, &m, 6, &Options::default());
    assert_eq!(err, Err(MapError::TooManyThreads { threads: 6, pus: 2 }));
    let opts = Options {
        seed: 0,
        oversubscribe: true,
    };
    for algo in Algorithm::ALL
        .into_iter()
        .filter(|&a| a != Algorithm::Exhaustive)
    {
        let map = map_threads(algo, &topo, &m, 6, &opts).unwrap();
        for pu in 0..2 {
            assert_eq!(
                map.iter().filter(|&&p| p == pu).count(),
                3,
                "{algo:?}: {map:?}"
            );
        }
        if algo.sharing_aware() {
            assert!((2..6).all(|t| map[t] == map[t % 2]), "{algo:?}: {map:?}");
        }
    }
}

#[test]
fn sharing_aware_algorithms_never_lose_to_compact_on_planted_blocks() {
    let mut rng = SplitMix::new(9);
    for spec in [
        "package:2 core:4",
        "package:2 core:2 pu:2",
        "package:4 core:3",
    ] {
        let topo = synth(spec);
        let n = topo.num_pus();
        for trial in 0..5 {
            let perm = {
                let mut p: Vec<usize> = (0..n).collect();
                rng.shuffle(&mut p);
                p
            };
            let size = topo.levels[1]
                .group_of_pu
                .iter()
                .filter(|&&g| g == 0)
                .count();
            let m = planted(n, |t| perm[t] / size, 100.0, 10.0, trial);
            let base = hops(&topo, &m, n, &run(Algorithm::Compact, &topo, &m, n));
            for algo in AWARE {
                let c = hops(&topo, &m, n, &run(algo, &topo, &m, n));
                assert!(c <= base, "{spec} {algo:?}: {c} > compact {base}");
            }
        }
    }
}

#[test]
fn bad_matrices_and_names_are_rejected() {
    let topo = synth("core:2");
    let opts = Options::default();
    assert!(matches!(
        map_threads(Algorithm::Greedy, &topo, &[0.0, 1.0, -1.0, 0.0], 2, &opts),
        Err(MapError::BadEntry { .. })
    ));
    assert!(matches!(
        map_threads(
            Algorithm::Greedy,
            &topo,
            &[0.0, f64::NAN, 1.0, 0.0],
            2,
            &opts
        ),
        Err(MapError::BadEntry { .. })
    ));
    assert!(matches!(
        map_threads(Algorithm::Greedy, &topo, &[0.0, 1.0, 1.0], 2, &opts),
        Err(MapError::NotSquare { .. })
    ));
    assert!("magic".parse::<Algorithm>().is_err());
    let big = synth("package:4 core:8");
    assert!(matches!(
        map_threads(Algorithm::Exhaustive, &big, &vec![0.0; 144], 12, &opts),
        Err(MapError::TooBigForExhaustive { .. })
    ));
}

/// "package:2 core:3" with the last PU taken away: packages of 3 and 2 cores.
fn uneven() -> Topology {
    let mut t = synth("package:2 core:3");
    t.pus.pop();
    for level in &mut t.levels {
        level.group_of_pu.pop();
        level.groups = level.group_of_pu.iter().max().map_or(0, |g| g + 1);
    }
    t
}

#[test]
fn uneven_machines_map_onto_real_pus_only() {
    let topo = uneven();
    assert_eq!(topo.num_pus(), 5);
    // Threads 0,1,2 share heavily: they belong on the full package (PUs 0..3).
    let m = planted(5, |t| usize::from(t >= 3), 100.0, 1.0, 8);
    for algo in Algorithm::ALL {
        let map = run(algo, &topo, &m, 5);
        assert!(map.iter().all(|&p| p < 5), "{algo:?}: {map:?}");
        if algo.sharing_aware() {
            let pkg: Vec<usize> = map.iter().map(|&p| topo.pus[p].package).collect();
            assert!(
                pkg[0] == pkg[1] && pkg[1] == pkg[2] && pkg[3] == pkg[4],
                "{algo:?}: {map:?}"
            );
        }
    }
}
