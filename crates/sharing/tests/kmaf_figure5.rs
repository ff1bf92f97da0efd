//! kMAF Figure 5, step by step: four threads, four nodes, pages of four 1 KiB sub-blocks
//! with an MRU and an LRU sharer. Thread 3, on node 1, faults on a sub-block thread 0
//! touched before.

use tdmap_sharing::*;

const PAGE: u64 = 0x4000_0000;
const SB1: u64 = PAGE + 1024 + 100;
const SB3: u64 = PAGE + 3 * 1024 + 8;

#[test]
fn figure5_thread3_on_node1_faults_and_the_page_migrates_to_node1() {
    let cfg = TableConfig::page_faults(4);
    assert_eq!(cfg.page_size / cfg.sub_block, 4, "4 sub-blocks per page");
    assert_eq!(cfg.sharers, 2, "MRU and LRU");
    let mut m = SharingModel::new(cfg, 4, &[]).unwrap();

    // History: thread 0 (node 0) faulted on sub-block 1; thread 2 (node 1) three times
    // on sub-block 3. The page sits on node 0.
    m.fault(0, SB1, 0).unwrap();
    for _ in 0..3 {
        m.fault(2, SB3, 1).unwrap();
    }
    let before = m.table().nv(PAGE).unwrap();
    assert_eq!(before, vec![1, 3, 0, 0]);
    assert!(!should_migrate(&before), "3 > 2*1+1 is false: not yet");
    assert_eq!(m.table().sharers(SB1).unwrap(), vec![0]);

    // The fault of the figure.
    m.fault(3, SB1, 1).unwrap();

    // kMAF increments the NUMA vector in position 1 ...
    let nv = m.table().nv(PAGE).unwrap();
    assert_eq!(nv, vec![1, 4, 0, 0]);
    // ... adds thread 3 in the MRU position, and thread 0 moves to LRU ...
    assert_eq!(m.table().sharers(SB1).unwrap(), vec![3, 0]);
    // ... and a sharing event is stored in the affinity matrix in cell (0,3).
    let am = m.matrix(Metric::Accesses);
    assert_eq!((am.get(0, 3), am.get(3, 0)), (1, 1));
    assert_eq!(am.off_diagonal_sum(), 2, "no other pair shares");
    assert_eq!(
        m.matrix(Metric::Amount).get(0, 3),
        1024,
        "one shared 1 KiB sub-block"
    );

    // Eq. 6 holds (4 > 2*1+1): the page migrates from node 0 to node 1 ...
    assert!(should_migrate(&nv));
    assert_eq!(migration_target(&nv, Some(0)), Some(1));
    // ... and kMAF §3.3 halves its NUMA vector afterwards.
    m.table_mut().halve_nv(PAGE);
    assert_eq!(m.table().nv(PAGE).unwrap(), vec![0, 2, 0, 0]);
}

#[test]
fn a_third_sharer_evicts_the_lru_thread() {
    let mut m = SharingModel::new(TableConfig::page_faults(4), 4, &[]).unwrap();
    m.fault(0, SB1, 0).unwrap();
    m.fault(3, SB1, 1).unwrap();
    m.fault(2, SB1, 2).unwrap();
    assert_eq!(m.table().sharers(SB1).unwrap(), vec![2, 3]);
    let am = m.matrix(Metric::Accesses);
    assert_eq!((am.get(0, 3), am.get(2, 3), am.get(0, 2)), (1, 1, 0));
}
