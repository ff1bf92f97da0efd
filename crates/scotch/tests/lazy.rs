//! libscotch is opened at the first mapping, not when the process starts (issue 22 item
//! 9: linking it cost every tdmap process about 0.25 ms of CPU). Its own test binary, so
//! that no other test has loaded the library first.

use tdmap_scotch::{library_name, scotch_map_tleaf, CsrGraph};

/// Whether a file whose name starts with `libscotch` is mapped in this process.
fn scotch_mapped() -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    maps.lines()
        .filter_map(|l| l.rsplit('/').next())
        .any(|file| file.starts_with("libscotch"))
}

#[test]
fn libscotch_is_loaded_at_the_first_mapping_only() {
    assert!(
        !scotch_mapped(),
        "{} was loaded before any mapping (linked, not opened on demand)",
        library_name()
    );
    // Two pairs that share: 0-1 and 2-3.
    let g = CsrGraph {
        xadj: vec![0, 1, 2, 3, 4],
        adjncy: vec![1, 0, 3, 2],
        adjwgt: vec![10, 10, 10, 10],
    };
    let map = scotch_map_tleaf(&g, &[2, 2], &[2, 1], true, 1).expect("scotch maps");
    assert_eq!(map[0] / 2, map[1] / 2, "{map:?}");
    assert!(scotch_mapped(), "mapping worked without loading libscotch?");
}
