//! Without libscotch, `drb` fails with one message that names the library and the fix,
//! instead of tdmap failing to start at all (as when it was linked). Its own test binary:
//! the outcome of opening the library is kept for the life of the process.

use tdmap_scotch::{scotch_map_tleaf, CsrGraph, ScotchError};

#[test]
fn a_missing_libscotch_is_an_error_naming_it_and_the_fix() {
    std::env::set_var("TDMAP_LIBSCOTCH", "/nonexistent/libscotch-7.0.so");
    let g = CsrGraph {
        xadj: vec![0, 1, 2],
        adjncy: vec![1, 0],
        adjwgt: vec![1, 1],
    };
    let err = scotch_map_tleaf(&g, &[2], &[1], false, 1).unwrap_err();
    assert!(matches!(err, ScotchError::Missing { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("/nonexistent/libscotch-7.0.so"), "{msg}");
    assert!(msg.contains("apt-get install libscotch-7.0"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
}
