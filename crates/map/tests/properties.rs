//! Property tests: on any small machine and any sharing matrix, every algorithm returns a
//! valid mapping, and none beats exhaustive search.

use proptest::prelude::*;
use tdmap_map::{cost, map_threads, Algorithm, Distance, Options};

const MACHINES: [&str; 5] = [
    "core:3",
    "package:2 core:2",
    "package:2 core:3",
    "package:2 core:2 pu:2",
    "package:3 core:2",
];

fn case() -> impl Strategy<Value = (usize, usize, Vec<f64>)> {
    (0..MACHINES.len(), 1usize..=8).prop_flat_map(|(mi, n)| {
        let cells = proptest::collection::vec(prop_oneof![Just(0.0), 0.0..100.0f64], n * n);
        (Just(mi), Just(n), cells)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn mappings_are_valid_and_never_beat_exhaustive((mi, n, m) in case()) {
        let topo = tdmap_topo::from_synthetic(MACHINES[mi]).unwrap();
        let p = topo.num_pus();
        let opts = Options { seed: 1, oversubscribe: true };
        let exhaustive = (n <= p).then(|| {
            let map = map_threads(Algorithm::Exhaustive, &topo, &m, n, &opts).unwrap();
            cost(&topo, &m, n, &map, Distance::Hops).unwrap()
        });
        for algo in Algorithm::ALL {
            if algo == Algorithm::Exhaustive && n > p {
                continue;
            }
            let map = map_threads(algo, &topo, &m, n, &opts).unwrap();
            prop_assert_eq!(map.len(), n);
            let per_pu = n.div_ceil(p);
            for pu in 0..p {
                let load = map.iter().filter(|&&x| x == pu).count();
                prop_assert!(load <= per_pu, "{:?} put {} threads on PU {}: {:?}", algo, load, pu, map);
            }
            if let Some(best) = exhaustive {
                let c = cost(&topo, &m, n, &map, Distance::Hops).unwrap();
                prop_assert!(c + 1e-6 >= best, "{:?} cost {} below exhaustive {}", algo, c, best);
            }
        }
    }
}
