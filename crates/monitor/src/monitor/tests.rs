use super::*;
use crate::config::FIRST_MAPPING_WAIT;
use tdmap_sharing::Sharers;

fn topo() -> Topology {
    // 4 nodes of 16 PUs; OS CPU c is on node c / 16.
    tdmap_topo::preset("xeon-x7550-4s").unwrap()
}

fn f(tid: u32, addr: u64, cpu: u32) -> Fault {
    Fault::new(tid, addr, cpu)
}

/// Threads 100,101 share page 0x1000 (faulting on node 0) and 102,103 share page 0x9000
/// (faulting on node 1).
fn pairs() -> Vec<Fault> {
    let mut v = Vec::new();
    for _ in 0..3 {
        v.extend([f(100, 0x1000, 0), f(101, 0x1008, 1)]);
        v.extend([f(102, 0x9000, 16), f(103, 0x9008, 17)]);
    }
    v
}

#[test]
fn threads_are_numbered_by_batch_of_first_appearance_then_tid() {
    let t = topo();
    let mut m = Monitor::new(&t, Config::default()).unwrap();
    m.ingest(&[f(77, 0, 0), f(5, 0x40, 0), f(77, 0x80, 0)])
        .unwrap();
    assert_eq!(m.threads().tids(), &[5, 77], "one batch: tid order");
    m.ingest(&[f(9, 0, 0), f(3, 0x40, 0)]).unwrap();
    assert_eq!(
        m.threads().tids(),
        &[5, 77, 3, 9],
        "later batches come after"
    );
}

/// Regression: pipeline's stage 6 faulted in an earlier drain than stages 2-5 and took
/// index 2, so the detected chain came out permuted (0-1-6-2-...). Registering every
/// live thread in tid order when a new one faults keeps creation order.
#[test]
fn live_threads_registered_before_a_late_faulter_keep_tid_order() {
    let t = topo();
    let mut m = Monitor::new(&t, Config::default()).unwrap();
    m.ingest(&[f(10, 0, 0), f(11, 0x40, 0)]).unwrap();
    let batch = [f(16, 0x80, 0)];
    assert!(m.has_new_threads(&batch));
    m.register_threads(&[10, 11, 12, 13, 16]);
    assert!(!m.has_new_threads(&batch));
    m.ingest(&batch).unwrap();
    m.ingest(&[f(12, 0xc0, 0)]).unwrap();
    assert_eq!(m.threads().tids(), &[10, 11, 12, 13, 16]);
}

#[test]
fn first_mapping_waits_for_sharing_then_keeps_pairs_together() {
    let t = topo();
    let mut m = Monitor::new(&t, Config::default()).unwrap();
    m.ingest(&[f(1, 0x1000, 0), f(2, 0x5000, 0)]).unwrap();
    assert_eq!(m.plan_threads().unwrap(), None, "no sharing seen yet");
    m.end_period();
    m.ingest(&pairs()).unwrap();
    let plan = m.plan_threads().unwrap().expect("first mapping");
    let map = &plan.mapping;
    assert_eq!(map.len(), 6);
    let (a, b, c) = (map[2], map[3], map[4]);
    assert!(t.pu_distance(a, b) < t.pu_distance(a, c), "{map:?}");
    assert_eq!(plan.changed, (0..6).collect::<Vec<_>>());
    // The same sharing again: no mapping can be 10% better, so nothing moves.
    m.ingest(&pairs()).unwrap();
    assert_eq!(m.plan_threads().unwrap(), None);
}

#[test]
fn a_new_thread_alone_gets_a_pu_when_the_rest_stays() {
    let t = topo();
    let mut m = Monitor::new(&t, Config::default()).unwrap();
    m.ingest(&pairs()).unwrap();
    let first = m.plan_threads().unwrap().unwrap().mapping;
    m.ingest(&[f(200, 0x20000, 5)]).unwrap();
    let plan = m
        .plan_threads()
        .unwrap()
        .expect("the new thread needs a PU");
    assert_eq!(plan.changed, vec![4]);
    assert_eq!(&plan.mapping[..4], &first[..]);
}

#[test]
fn pages_move_only_after_the_first_mapping_and_by_eq6() {
    let t = topo();
    let mut m = Monitor::new(&t, Config::default()).unwrap();
    m.ingest(&pairs()).unwrap();
    assert!(
        m.page_candidates().is_empty(),
        "no page moves before a thread mapping"
    );
    m.plan_threads().unwrap().unwrap();
    assert_eq!(
        m.table().nv(0x9000).unwrap(),
        vec![0, 0, 0, 0],
        "counts from before the mapping are dropped"
    );
    assert!(m.page_candidates().is_empty());
    m.ingest(&pairs()).unwrap();
    let cands = m.page_candidates();
    let addrs: Vec<u64> = cands.iter().map(|c| c.0).collect();
    assert_eq!(addrs, vec![0x1000, 0x9000]);
    // 0x1000 is already on node 0; 0x9000 sits on node 0 and goes to node 1.
    let moves = m.plan_pages(&cands, &[Some(0), Some(0)]);
    assert_eq!(moves, vec![(0x9000, 1)]);
    assert!(
        m.plan_pages(&cands, &[None, None]).is_empty(),
        "unknown pages stay"
    );
    m.moved(0x9000);
    assert_eq!(m.table().nv(0x9000).unwrap(), vec![0, 3, 0, 0], "halved");
}

#[test]
fn a_huge_page_is_one_candidate_at_its_first_page() {
    const HUGE: u64 = 2 << 20;
    let t = topo();
    let mut m = Monitor::new(&t, Config::default()).unwrap();
    m.ingest(&pairs()).unwrap();
    m.plan_threads().unwrap().unwrap();
    m.end_period();
    // Hinting faults of a thread on node 1 all over one huge page: each 4 KiB page is
    // hit once, which alone would never pass Eq. 6; the huge page as a whole does.
    let huge = |k: u64| Fault {
        page_size: HUGE,
        ..f(102, 8 * HUGE + k * 4096, 16)
    };
    m.ingest(&(0..4).map(huge).collect::<Vec<_>>()).unwrap();
    let cands = m.page_candidates();
    assert_eq!(cands, vec![(8 * HUGE, vec![0, 4, 0, 0])]);
    // The same faults without their page size: four pages of one fault each.
    m.end_period();
    let small: Vec<Fault> = (0..4).map(|k| f(102, 16 * HUGE + k * 4096, 16)).collect();
    m.ingest(&small).unwrap();
    assert!(m.page_candidates().is_empty());
}

#[test]
fn threads_that_share_nothing_are_placed_after_a_wait() {
    let t = topo();
    let mut m = Monitor::new(&t, Config::default()).unwrap();
    let private: Vec<Fault> = (1..=4).map(|k| f(k, 0x10000 * k as u64, 0)).collect();
    for _ in 0..FIRST_MAPPING_WAIT {
        m.ingest(&private).unwrap();
        assert_eq!(m.plan_threads().unwrap(), None, "still waiting for sharing");
        m.end_period();
    }
    let plan = m.plan_threads().unwrap().expect("placed after the wait");
    assert_eq!(plan.changed, vec![0, 1, 2, 3]);
    let mut pus = plan.mapping.clone();
    pus.dedup();
    assert_eq!(pus.len(), 4, "one PU each: {:?}", plan.mapping);
    // A few sharing events between the first and the last thread: a mapping that puts
    // them side by side costs far less, but 2 events are too few to move threads for;
    // 8 (two per thread) are enough.
    let share = |times: usize| [f(1, 0x90000, 0), f(4, 0x90008, 0)].repeat(times);
    m.end_period();
    m.ingest(&share(1)).unwrap();
    assert_eq!(m.plan_threads().unwrap(), None);
    m.ingest(&share(4)).unwrap();
    let again = m.plan_threads().unwrap().expect("enough sharing to remap");
    let (a, b) = (again.mapping[0], again.mapping[3]);
    assert!(t.pu_distance(a, b) < t.pu_distance(plan.mapping[0], plan.mapping[3]));
    // A lone thread is never placed for want of sharing.
    let mut one = Monitor::new(&t, Config::default()).unwrap();
    for _ in 0..=FIRST_MAPPING_WAIT {
        one.ingest(&[f(1, 0x1000, 0)]).unwrap();
        assert_eq!(one.plan_threads().unwrap(), None);
        one.end_period();
    }
}

/// A thread that ran on node 0 before the first mapping and on node 1 after it: its
/// page follows it at once, not after the old counts are outweighed.
#[test]
fn counts_from_before_the_first_mapping_do_not_hold_pages_back() {
    let t = topo();
    let mut m = Monitor::new(&t, Config::default()).unwrap();
    m.ingest(&vec![f(102, 0x9000, 0); 20]).unwrap();
    m.ingest(&pairs()).unwrap();
    m.plan_threads().unwrap().unwrap();
    m.end_period();
    m.ingest(&[f(102, 0x9000, 16), f(102, 0x9000, 16)]).unwrap();
    assert_eq!(m.page_candidates(), vec![(0x9000, vec![0, 2, 0, 0])]);
}

#[test]
fn a_shared_page_fails_eq6() {
    let t = topo();
    let mut m = Monitor::new(&t, Config::default()).unwrap();
    m.ingest(&pairs()).unwrap();
    m.plan_threads().unwrap();
    m.end_period();
    // 3 faults from node 0 and 3 from node 2: 3 > 2*3+1 is false.
    m.ingest(&[f(100, 0x40000, 0), f(101, 0x40008, 32)].repeat(3))
        .unwrap();
    assert!(m.page_candidates().is_empty());
}

#[test]
fn modes_switch_decisions_off() {
    let t = topo();
    let data_only = Config {
        threads: false,
        ..Config::default()
    };
    let mut m = Monitor::new(&t, data_only).unwrap();
    m.ingest(&pairs()).unwrap();
    assert_eq!(m.plan_threads().unwrap(), None);
    assert_eq!(m.page_candidates().len(), 2, "no mapping to wait for");
    let threads_only = Config {
        data: false,
        ..Config::default()
    };
    let mut m = Monitor::new(&t, threads_only).unwrap();
    m.ingest(&pairs()).unwrap();
    assert!(m.plan_threads().unwrap().is_some());
    assert!(m.page_candidates().is_empty());
}

#[test]
fn aging_shrinks_the_live_matrix_but_not_the_total() {
    for metric in [Metric::Accesses, Metric::Amount] {
        let t = topo();
        let mut m = Monitor::new(&t, Config::default()).unwrap();
        m.ingest(&pairs()).unwrap();
        let before = m.total_matrix(metric);
        assert!(before.get(0, 1) > 0, "{metric:?}");
        m.end_period();
        assert!(m.current(metric)[1] < before.get(0, 1), "aged ×0.75");
        assert_eq!(m.total_matrix(metric), before, "{metric:?}");
        // The same pattern on fresh pages adds exactly as much sharing again.
        let fresh: Vec<Fault> = pairs()
            .into_iter()
            .map(|x| f(x.tid, x.addr + 0x100000, x.cpu))
            .collect();
        m.ingest(&fresh).unwrap();
        m.end_period();
        assert_eq!(m.total_matrix(metric).get(0, 1), 2 * before.get(0, 1));
    }
}

/// The phase workload in the 2-node guest: a producer's write faults recur every
/// period, its two readers fault now and then. The amount metric (trace paper §III-B),
/// with every sharer kept, counts each pair once, as the exact trace does; the access
/// metric weighs the producer's pairs by its faults.
#[test]
fn amount_with_all_sharers_counts_each_sharing_pair_once() {
    let t = topo();
    let cfg = Config {
        sharers: Sharers::All,
        ..Config::default()
    };
    let mut m = Monitor::new(&t, cfg).unwrap();
    m.ingest(&[f(1, 0x1000, 0), f(2, 0x1010, 0), f(3, 0x1020, 0)])
        .unwrap();
    for _ in 0..4 {
        m.ingest(&[f(1, 0x1000, 0)]).unwrap();
        m.end_period();
    }
    let amount = m.total_matrix(Metric::Amount);
    assert!(amount.get(0, 1) > 0);
    assert_eq!(amount.get(0, 1), amount.get(1, 2));
    assert_eq!(amount.get(0, 2), amount.get(1, 2));
    let acc = m.total_matrix(Metric::Accesses);
    assert_eq!(acc.get(0, 1), 5, "thread 2 joining, then 4 producer faults");
    assert_eq!(acc.get(1, 2), 1, "only thread 3 joining");
}

#[test]
fn threads_beyond_the_capacity_are_ignored_not_errors() {
    let t = topo();
    let cfg = Config {
        max_threads: 2,
        ..Config::default()
    };
    let mut m = Monitor::new(&t, cfg).unwrap();
    assert_eq!(m.ingest(&[f(1, 0, 0), f(2, 0, 0), f(3, 0, 0)]).unwrap(), 2);
    assert_eq!(m.ignored(), 1);
}

/// Issue 19: a task that exited is dropped from later mappings: it keeps its PU and is
/// never in a plan's changes, the live ones are mapped among themselves.
#[test]
fn exited_tasks_are_left_out_of_later_mappings() {
    let t = topo();
    let mut m = Monitor::new(&t, Config::default()).unwrap();
    m.ingest(&pairs()).unwrap();
    let first = m
        .plan_threads()
        .unwrap()
        .expect("sharing seen: a first mapping");
    m.end_period();
    m.retire(101);
    m.retire(103);
    m.retire(999); // never seen: nothing to drop
                   // New sharing between the survivors only: 100 and 102 now share a page.
    for _ in 0..20 {
        m.ingest(&[f(100, 0x20000, 0), f(102, 0x20008, 16)])
            .unwrap();
    }
    let plan = m
        .plan_threads()
        .unwrap()
        .expect("100 and 102 now share: a remap");
    assert!(
        !plan.changed.contains(&1) && !plan.changed.contains(&3),
        "an exited task was planned: {plan:?}"
    );
    assert_eq!(
        plan.mapping[1], first.mapping[1],
        "exited tasks keep their PU"
    );
    assert_eq!(plan.mapping[3], first.mapping[3]);
    let node = |pu: usize| t.node_of_pu(pu);
    assert_eq!(
        node(plan.mapping[0]),
        node(plan.mapping[2]),
        "the survivors that share are mapped together: {plan:?}"
    );
}
