//! Known sharing patterns, written as real trace files, read back and fed to the model:
//! the matrix must have the pattern's shape and the metrics their expected values.

use tdmap_sharing::patterns::{accesses, Pattern};
use tdmap_sharing::*;
use tdmap_trace::{Header, Reader, TraceStatus, Writer};

const T: usize = 8;
const NODES: usize = 4;

/// Thread t on node t*4/8: pairs share a node, as a good mapping would place them.
fn node_of() -> Vec<u32> {
    (0..T).map(|t| (t * NODES / T) as u32).collect()
}

fn model_from_trace(p: Pattern) -> SharingModel {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("tdmap-pattern-{p:?}-{}-{n}.trace", std::process::id());
    let path = std::env::temp_dir().join(name);
    let mut h = Header::new(vec!["gen".into()], "test");
    h.threads = T as u32;
    let w = Writer::create(&path, h).unwrap();
    for (t, batch) in accesses(p, T, 200, 64, 42, 0) {
        w.append_accesses(t, &batch).unwrap();
    }
    w.finish(TraceStatus::Complete).unwrap();
    assert!(tdmap_trace::check(&path).ok());
    let mut r = Reader::open(&path).unwrap();
    let mut m = SharingModel::new(TableConfig::exact(NODES), T, &node_of()).unwrap();
    while let Some(c) = r.next_chunk().unwrap() {
        m.feed(c).unwrap();
    }
    std::fs::remove_file(&path).unwrap();
    assert_eq!(m.events(), (200 * T * 64) as u64);
    m
}

/// Asserts that exactly the pairs `shares(i, j)` have sharing, for both metrics.
fn assert_shape(m: &SharingModel, shares: impl Fn(usize, usize) -> bool) {
    for metric in [Metric::Accesses, Metric::Amount] {
        let mx = m.matrix(metric);
        for i in 0..T {
            assert!(
                mx.get(i, i) > 0,
                "{metric:?}: thread {i} has private data too"
            );
            for j in (0..T).filter(|&j| j != i) {
                assert_eq!(
                    mx.get(i, j) > 0,
                    shares(i, j),
                    "{metric:?} cell ({i},{j}) = {}",
                    mx.get(i, j)
                );
            }
        }
    }
}

fn exclusivity(m: &SharingModel, page: u64) -> f64 {
    data_metrics(m.table(), page).unwrap().avg_exclusivity
}

#[test]
fn all_private_has_no_sharing_and_exclusivity_one() {
    let m = model_from_trace(Pattern::AllPrivate);
    assert_shape(&m, |_, _| false);
    let tm = thread_metrics(m.matrix(Metric::Accesses));
    assert_eq!((tm.heterogeneity, tm.amount), (0.0, 0.0));
    assert_eq!(exclusivity(&m, 4096), 1.0);
    let d = data_metrics(m.table(), 4096).unwrap();
    assert_eq!(d.histogram[10], d.pages, "every page 100% exclusive");
    assert_eq!(d.pages, (T as u64) * 16);
}

#[test]
fn pairs_share_only_within_the_pair() {
    let m = model_from_trace(Pattern::Pairs);
    assert_shape(&m, |i, j| i / 2 == j / 2);
    let tm = thread_metrics(m.matrix(Metric::Accesses));
    assert!(tm.heterogeneity > 0.1, "{tm:?}");
    assert!(tm.amount < 0.2, "one partner of seven: {tm:?}");
    assert_eq!(exclusivity(&m, 4096), 1.0, "each pair runs on one node");
}

#[test]
fn neighbours_share_with_adjacent_threads() {
    let m = model_from_trace(Pattern::Neighbours);
    assert_shape(&m, |i, j| i.abs_diff(j) == 1);
    let tm = thread_metrics(m.matrix(Metric::Accesses));
    assert!(tm.heterogeneity > 0.05, "{tm:?}");
    // Halos between threads on different nodes (1|2, 3|4, 5|6) are shared across nodes.
    let ex = exclusivity(&m, 4096);
    assert!(ex > 0.6 && ex < 1.0, "{ex}");
}

#[test]
fn all_to_all_is_homogeneous() {
    let m = model_from_trace(Pattern::AllToAll);
    assert_shape(&m, |_, _| true);
    let tm = thread_metrics(m.matrix(Metric::Accesses));
    assert!(tm.heterogeneity < 0.01, "{tm:?}");
    assert!(tm.amount > 0.8, "{tm:?}");
    let pairs = thread_metrics(model_from_trace(Pattern::Pairs).matrix(Metric::Accesses));
    assert!(pairs.heterogeneity > 20.0 * tm.heterogeneity);
    // Four nodes touch every page alike: exclusivity near its minimum 1/4.
    let ex = exclusivity(&m, 4096);
    assert!(ex < 0.4, "{ex}");
}

#[test]
fn pipeline_shares_within_and_between_adjacent_stages() {
    let m = model_from_trace(Pattern::Pipeline);
    // Stages of 2 threads: stage s touches buffers s-1 and s.
    assert_shape(&m, |i, j| (i / 2).abs_diff(j / 2) <= 1);
    let tm = thread_metrics(m.matrix(Metric::Accesses));
    assert!(tm.heterogeneity > 0.05, "{tm:?}");
}

#[test]
fn exclusivity_at_2m_is_no_higher_than_at_4k() {
    for p in Pattern::ALL {
        let m = model_from_trace(p);
        assert!(
            exclusivity(&m, 2 << 20) <= exclusivity(&m, 4096) + 1e-12,
            "{p:?}"
        );
    }
}
