//! The PU, node and distance helpers on known machine shapes.

use tdmap_topo::{from_synthetic, preset, ObjKind};

/// The shape. hwloc counts are per parent: 2 packages x 2 NUMA nodes x 4 cores
/// x 2 PUs = 32 PUs (the issue text says 16; hwloc's syntax decides).
fn pkg2_numa2() -> tdmap_topo::Topology {
    from_synthetic("package:2 numa:2 core:4 pu:2").unwrap()
}

#[test]
fn pkg2_numa2_has_32_pus_in_4_nodes() {
    let t = pkg2_numa2();
    assert_eq!(t.num_pus(), 32);
    assert_eq!(t.num_nodes(), 4);
    assert_eq!(t.count(ObjKind::Core), 16);
    assert_eq!(t.count(ObjKind::Package), 2);
    let half = from_synthetic("package:2 numa:2 core:2 pu:2").unwrap();
    assert_eq!((half.num_pus(), half.num_nodes()), (16, 4));
}

#[test]
fn pu_to_node_follows_hierarchy() {
    let t = pkg2_numa2();
    // 8 PUs per node (4 cores x 2 PUs), in logical order.
    for pu in 0..32 {
        assert_eq!(t.node_of_pu(pu), pu / 8, "PU {pu}");
    }
    assert_eq!(t.pus_of_node(2), &[16, 17, 18, 19, 20, 21, 22, 23]);
    assert_eq!(t.pus[5].core, 2);
    assert_eq!(t.pus[17].package, 1);
    assert_eq!(t.pus[15].package, 0);
}

#[test]
fn pu_distance_counts_levels_to_common_ancestor() {
    let t = pkg2_numa2();
    // Levels: Machine > Package > Group+NUMANode > Core > PU.
    assert_eq!(t.levels.len(), 5);
    assert_eq!(t.pu_distance(0, 0), 0);
    assert_eq!(t.pu_distance(0, 1), 1, "SMT siblings share a core");
    assert_eq!(t.pu_distance(0, 2), 2, "same node, other core");
    assert_eq!(t.pu_distance(0, 7), 2, "same node, last core");
    assert_eq!(t.pu_distance(0, 8), 3, "same package, other node");
    assert_eq!(t.pu_distance(0, 16), 4, "other package");
    assert_eq!(t.pu_distance(16, 0), t.pu_distance(0, 16));
    assert_eq!(t.max_pu_distance(), 4);
    assert_eq!(t.common_level(3, 2), 3);
}

#[test]
fn arities_drop_levels_of_arity_one() {
    assert_eq!(pkg2_numa2().arities(), vec![2, 2, 4, 2]);
    // One L3 and one node per package merge with it; one L2/L1 per core merge with it.
    assert_eq!(preset("xeon-x7550-4s").unwrap().arities(), vec![4, 8, 2]);
    assert_eq!(preset("opteron-8n").unwrap().arities(), vec![8, 2]);
}

#[test]
fn x7550_preset_matches_the_paper() {
    let t = preset("xeon-x7550-4s").unwrap();
    assert_eq!(
        (t.num_nodes(), t.count(ObjKind::Core), t.num_pus()),
        (4, 32, 64)
    );
    assert_eq!(t.count(ObjKind::L3), 4);
    assert_eq!(t.cache_of_pu(63, 3).unwrap().size, 18 << 20);
    assert_eq!(t.cache_of_pu(0, 2).unwrap().size, 256 << 10);
    assert!(t.numa_factor() > 1.0);
    assert_eq!(t.last_level_cache_size(), 18 << 20);
}

#[test]
fn trace_paper_presets_have_their_numa_factor_ranges() {
    let o = preset("opteron-8n").unwrap();
    assert!((o.distances.numa_factor_min() - 1.2).abs() < 1e-9);
    assert!((o.numa_factor() - 1.5).abs() < 1e-9);
    assert_eq!(o.count(ObjKind::L3), 0, "no shared cache");
    let x = preset("xeon-x7560-4n").unwrap();
    assert!((x.distances.numa_factor_min() - 1.2).abs() < 1e-9);
    assert!((x.numa_factor() - 3.6).abs() < 1e-9);
}

#[test]
fn every_preset_distance_matrix_is_symmetric() {
    for name in tdmap_topo::preset_names() {
        let t = preset(name).unwrap();
        for i in 0..t.num_nodes() {
            for j in 0..t.num_nodes() {
                assert_eq!(
                    t.distances.get(i, j),
                    t.distances.get(j, i),
                    "{name} ({i},{j})"
                );
            }
        }
    }
}

#[test]
fn synthetic_without_numa_has_one_node_and_factor_one() {
    let t = from_synthetic("package:2 core:2").unwrap();
    assert_eq!(t.num_nodes(), 1);
    assert_eq!(t.num_pus(), 4);
    assert_eq!(t.numa_factor(), 1.0);
    assert_eq!(t.pu_distance(0, 1), 1);
    assert_eq!(t.pu_distance(0, 2), 2);
}

#[test]
fn bad_synthetic_string_is_an_error_not_a_panic() {
    for bad in ["package:x", "bogus:3 pu:2", "core:0"] {
        let err = from_synthetic(bad).unwrap_err().to_string();
        assert!(err.contains(bad), "{err}");
        assert!(!err.contains('\n'));
    }
}
