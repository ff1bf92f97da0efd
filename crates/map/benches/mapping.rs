//! `make bench` figures for the thread-mapping algorithms: speed on dense 1024 × 1024 and
//! 4096 × 4096 matrices, and quality (hop cost relative to the best algorithm, and to
//! exhaustive search for n ≤ 10) on 200 random hierarchical block instances.
//! Release build; prints machine-readable tables on stdout.

use std::time::Instant;
use tdmap_map::rng::SplitMix;
use tdmap_map::{cost, map_threads, Algorithm, Distance, Options, Slots};
use tdmap_topo::Topology;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    speed(
        1024,
        "package:8 core:64 pu:2",
        &[Algorithm::Greedy, Algorithm::Matching, Algorithm::Drb],
        if quick { 1 } else { 5 },
    );
    speed(
        4096,
        "package:8 core:256 pu:2",
        &[Algorithm::Greedy],
        if quick { 1 } else { 3 },
    );
    quality(if quick { 40 } else { 200 });
}

/// A planted hierarchical matrix: threads sit on a random permutation of the slots and
/// share 10^(depth of their common ancestor) × U(0.5, 1.5), plus noise everywhere.
fn instance(topo: &Topology, n: usize, rng: &mut SplitMix) -> Vec<f64> {
    let slots = Slots::new(topo, 1);
    let mut place: Vec<usize> = (0..slots.len()).collect();
    rng.shuffle(&mut place);
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..i {
            let depth = slots.common_depth(place[i], place[j]) as i32;
            let x = 10f64.powi(depth) * (0.5 + rng.unit()) + 2.0 * rng.unit();
            m[i * n + j] = x;
            m[j * n + i] = x;
        }
    }
    m
}

fn speed(n: usize, spec: &str, algos: &[Algorithm], reps: usize) {
    let topo = tdmap_topo::from_synthetic(spec).expect("synthetic machine");
    let m = instance(&topo, n, &mut SplitMix::new(42));
    println!(
        "speed: dense {n}x{n} matrix, machine \"{spec}\" ({} PUs), {reps} runs, median",
        topo.num_pus()
    );
    println!(
        "{:<10} {:>12} {:>12} {:>14}",
        "algorithm", "median ms", "min ms", "cost/compact"
    );
    let compact = map_threads(Algorithm::Compact, &topo, &m, n, &Options::default()).unwrap();
    let base = cost(&topo, &m, n, &compact, Distance::Hops).unwrap();
    for &algo in algos {
        let mut times = Vec::new();
        let mut map = Vec::new();
        for _ in 0..reps {
            let t = Instant::now();
            map = map_threads(algo, &topo, &m, n, &Options::default()).unwrap();
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        let c = cost(&topo, &m, n, &map, Distance::Hops).unwrap();
        println!(
            "{:<10} {:>12.1} {:>12.1} {:>14.3}",
            algo.name(),
            times[reps / 2],
            times[0],
            c / base
        );
    }
    println!();
}

const MACHINES: [&str; 10] = [
    "package:2 core:2 pu:2",
    "package:2 core:5",
    "package:3 core:3",
    "package:2 core:4",
    "package:2 core:8",
    "package:4 core:4 pu:2",
    "package:2 core:6 pu:2",
    "package:4 core:8 pu:2",
    "package:8 core:8",
    "package:2 numa:2 core:6",
];

const ALGOS: [Algorithm; 7] = [
    Algorithm::Drb,
    Algorithm::Matching,
    Algorithm::Greedy,
    Algorithm::Compact,
    Algorithm::Scatter,
    Algorithm::Random,
    Algorithm::Identity,
];

fn quality(instances: usize) {
    let mut rng = SplitMix::new(2026);
    let topos: Vec<Topology> = MACHINES
        .iter()
        .map(|s| tdmap_topo::from_synthetic(s).expect("synthetic machine"))
        .collect();
    let mut vs_best = vec![Vec::new(); ALGOS.len()];
    let mut vs_exh = vec![Vec::new(); ALGOS.len()];
    let mut small = 0;
    for k in 0..instances {
        let topo = &topos[k % topos.len()];
        let p = topo.num_pus();
        // One instance in four has fewer threads than PUs.
        let n = if k % 4 == 3 {
            p - rng.below(p / 4 + 1)
        } else {
            p
        };
        let m = instance(topo, n, &mut rng);
        let opts = Options {
            seed: k as u64,
            oversubscribe: false,
        };
        let costs: Vec<f64> = ALGOS
            .iter()
            .map(|&a| {
                let map = map_threads(a, topo, &m, n, &opts).unwrap();
                cost(topo, &m, n, &map, Distance::Hops).unwrap()
            })
            .collect();
        let exh = (n <= 10).then(|| {
            let map = map_threads(Algorithm::Exhaustive, topo, &m, n, &opts).unwrap();
            cost(topo, &m, n, &map, Distance::Hops).unwrap()
        });
        let best = costs
            .iter()
            .copied()
            .chain(exh)
            .fold(f64::INFINITY, f64::min);
        for (i, &c) in costs.iter().enumerate() {
            vs_best[i].push(c / best);
            if let Some(e) = exh {
                vs_exh[i].push(c / e);
            }
        }
        small += usize::from(exh.is_some());
    }
    println!(
        "quality: {instances} hierarchical block instances on {} machines, hop cost",
        MACHINES.len()
    );
    println!("ratio to the best of all algorithms (all instances); to exhaustive ({small} instances with n <= 10)");
    println!(
        "{:<10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "algorithm", "mean/best", "max/best", "mean/exh", "max/exh", "optimal%"
    );
    for (i, a) in ALGOS.iter().enumerate() {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let opt = vs_exh[i].iter().filter(|&&r| r <= 1.0 + 1e-9).count() as f64 * 100.0
            / small.max(1) as f64;
        println!(
            "{:<10} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>9.0}%",
            a.name(),
            mean(&vs_best[i]),
            max(&vs_best[i]),
            mean(&vs_exh[i]),
            max(&vs_exh[i]),
            opt
        );
    }
}
