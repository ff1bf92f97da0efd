//! The kMAF loop against a recording fake kernel (tdmap-sys `fake`): what it asks the
//! kernel to do, period by period. Runs anywhere, without root and on one node.

use tdmap_monitor::live::SysActuator;
use tdmap_monitor::report::{RunReport, RunSetup};
use tdmap_monitor::{Config, Engine, Fault};
use tdmap_sys::fake::{Call, RecordingSys};

const PID: i32 = 77;

fn topo() -> tdmap_topo::Topology {
    // 4 nodes of 16 PUs; logical PU k is OS CPU k, OS node n is logical node n.
    tdmap_topo::preset("xeon-x7550-4s").unwrap()
}

/// Threads 100,101 share page 0x1000 and 102,103 page 0x9000, faulting on nodes 0-3.
fn pairs(cpus: [u32; 4]) -> Vec<Fault> {
    let mut v = Vec::new();
    for _ in 0..3 {
        v.push(Fault::new(100, 0x1000, cpus[0]));
        v.push(Fault::new(101, 0x1008, cpus[1]));
        v.push(Fault::new(102, 0x9000, cpus[2]));
        v.push(Fault::new(103, 0x9008, cpus[3]));
    }
    v
}

fn pins(calls: &[Call]) -> Vec<(i32, usize)> {
    calls
        .iter()
        .filter_map(|c| match c {
            Call::SetAffinity { tid, cpus } => Some((*tid, cpus[0])),
            _ => None,
        })
        .collect()
}

fn moves(calls: &[Call]) -> Vec<(usize, i32)> {
    calls
        .iter()
        .filter_map(|c| match c {
            Call::MovePages {
                pages,
                nodes: Some(n),
                ..
            } => Some(pages.iter().copied().zip(n.iter().copied())),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Runs two periods: the pairs from nodes 0-3 (first mapping), then the pairs from
/// where they were pinned. Returns the kernel calls of each period.
fn two_periods(cfg: Config, dry_run: bool, sys: &RecordingSys) -> (Engine, Vec<Vec<Call>>) {
    let topo = topo();
    sys.place(0x1000, 2);
    sys.place(0x9000, 3);
    let mut e = Engine::new(&topo, cfg, dry_run).unwrap();
    let mut act = SysActuator::new(sys, PID, &topo);
    let mut log = Vec::new();
    e.ingest(&pairs([0, 16, 32, 48]), &mut act).unwrap();
    e.period(&mut act).unwrap();
    log.push(sys.calls());
    sys.clear_calls();
    let at: Vec<u32> = (0..4)
        .map(|k| e.counts().planned.get(k).copied().flatten().unwrap_or(k) as u32)
        .collect();
    e.ingest(&pairs([at[0], at[1], at[2], at[3]]), &mut act)
        .unwrap();
    e.period(&mut act).unwrap();
    log.push(sys.calls());
    sys.clear_calls();
    (e, log)
}

#[test]
fn pins_are_applied_as_planned() {
    let sys = RecordingSys::new();
    let (e, log) = two_periods(Config::default(), false, &sys);
    let plan = e.monitor().mapping().unwrap().to_vec();
    let want: Vec<(i32, usize)> = (0..4).map(|k| (100 + k as i32, plan[k])).collect();
    assert_eq!(pins(&log[0]), want, "every thread, where the mapping says");
    assert_eq!(e.counts().threads_pinned, 4);
    // Pairs on SMT siblings or one core apart: closer than the other pair.
    let t = topo();
    assert!(t.pu_distance(plan[0], plan[1]) < t.pu_distance(plan[0], plan[2]));
    assert!(pins(&log[1]).is_empty(), "the same sharing: no remap");
}

#[test]
fn no_page_moves_before_the_first_mapping() {
    let sys = RecordingSys::new();
    let topo = topo();
    sys.place(0x1000, 2);
    // Data only would move pages without a mapping; with threads on, Eq. 6 waits for it.
    let mut e = Engine::new(&topo, Config::default(), false).unwrap();
    let mut act = SysActuator::new(&sys, PID, &topo);
    // One thread (no pair to share): no mapping in the first periods.
    let alone: Vec<Fault> = (0..6).map(|_| Fault::new(100, 0x1000, 16)).collect();
    e.ingest(&alone, &mut act).unwrap();
    e.period(&mut act).unwrap();
    assert!(e.monitor().mapping().is_none());
    assert!(moves(&sys.calls()).is_empty(), "{:?}", sys.calls());
    assert_eq!(e.counts().page_candidates, 0);
}

#[test]
fn pages_move_after_the_mapping_and_halve_only_after_a_move_that_happened() {
    let sys = RecordingSys::new();
    sys.fail_move(0x9000, libc::EBUSY);
    let (e, log) = two_periods(Config::default(), false, &sys);
    assert!(
        moves(&log[0]).is_empty(),
        "no moves in the period of the first mapping"
    );
    let plan = e.monitor().mapping().unwrap().to_vec();
    let node = |k: usize| topo().node_of_pu(plan[k]) as i32;
    assert_eq!(moves(&log[1]), vec![(0x1000, node(0)), (0x9000, node(2))]);
    assert_eq!(sys.node_of(0x1000), Some(node(0)));
    assert_eq!(sys.node_of(0x9000), Some(3), "the failed move left it");
    let t = e.monitor().table();
    assert_eq!(
        t.nv(0x1000).unwrap().iter().sum::<u32>(),
        3,
        "6 halved: it moved"
    );
    assert_eq!(
        t.nv(0x9000).unwrap().iter().sum::<u32>(),
        6,
        "not halved: it failed"
    );
    let c = e.counts();
    assert_eq!(
        (c.pages_moved, c.move_failures.by_errno.clone()),
        (1, vec![(libc::EBUSY, 1)])
    );
}

#[test]
fn failed_pins_are_counted_with_their_errno() {
    let sys = RecordingSys::new();
    sys.fail_pin(101, libc::ESRCH);
    sys.fail_pin(103, libc::EINVAL);
    let (e, _) = two_periods(Config::default(), false, &sys);
    let c = e.counts();
    assert_eq!(c.threads_pinned, 2);
    assert_eq!(
        c.pin_failures.by_errno,
        vec![(libc::ESRCH, 1), (libc::EINVAL, 1)]
    );
    assert_eq!(c.pinned[1], None, "a failed pin is not reported as pinned");
    assert!(c.planned[1].is_some());
    // Each thread keeps its own errno (issue 22: every failed pin with its reason).
    assert_eq!(
        c.pin_errno,
        vec![None, Some(libc::ESRCH), None, Some(libc::EINVAL)]
    );
}

#[test]
fn threads_only_and_data_only_do_only_their_half() {
    let sys = RecordingSys::new();
    let (e, log) = two_periods(Config::default().threads_only(), false, &sys);
    assert_eq!(pins(&log[0]).len(), 4);
    assert!(
        log.iter().all(|l| moves(l).is_empty()),
        "threads-only moved pages"
    );
    assert_eq!(e.counts().page_candidates, 0);

    let sys = RecordingSys::new();
    let (e, log) = two_periods(Config::default().data_only(), false, &sys);
    assert!(
        log.iter().all(|l| pins(l).is_empty()),
        "data-only pinned threads"
    );
    assert_eq!(e.counts().mappings, 0);
    // Period 1, from nodes 0-3: both pages are shared across nodes ([3,3,0,0] and
    // [0,0,3,3]), Eq. 6 says no. Period 2, every thread on node 0 (none was pinned):
    // 0x1000 [9,3,0,0] passes (9 > 7), 0x9000 [6,0,3,3] does not (6 > 7 is false).
    assert!(moves(&log[0]).is_empty());
    assert_eq!(moves(&log[1]), vec![(0x1000, 0)]);
}

#[test]
fn a_dry_run_asks_nothing_of_the_kernel_and_says_would() {
    let sys = RecordingSys::new();
    let (e, log) = two_periods(Config::default(), true, &sys);
    assert!(
        log.iter()
            .all(|l| pins(l).is_empty() && moves(l).is_empty()),
        "{log:?}"
    );
    let c = e.counts();
    assert_eq!((c.threads_pinned, c.pages_moved), (0, 0));
    assert_eq!(c.pins_planned, 4);
    assert_eq!(c.moves_planned, 2);
    assert!(c.pinned.iter().all(Option::is_none));
    // The report: no thread pinned, every thread planned.
    let topo = topo();
    let o = tdmap_monitor::Outcome {
        exit_code: 0,
        wall: std::time::Duration::from_secs(1),
        periods: 2,
        samples: Default::default(),
        threads: (100..104).map(|t| (t, 6)).collect(),
        thread_pids: vec![100; 4],
        processes: Vec::new(),
        untracked: Vec::new(),
        keying: "virtual addresses".into(),
        matrix: tdmap_sharing::SharingMatrix::new(4),
        amount: tdmap_sharing::SharingMatrix::new(4),
        metrics: tdmap_sharing::thread_metrics(&tdmap_sharing::SharingMatrix::new(4)),
        data: None,
        actions: c.clone(),
        handler: Default::default(),
        times: Default::default(),
        timeline: Vec::new(),
    };
    let setup = RunSetup {
        program: "p".into(),
        sampler: "kernel".into(),
        events: "system-wide".into(),
        soft_dirty: false,
        inject: None,
        mai_auto: false,
        dry_run: true,
        fixed_mapping: false,
        rules: "run".into(),
        cfg: Config::default(),
        period_ms: 100,
        ring_pages: 128,
        reference: None,
    };
    let r = RunReport::new(&topo, setup, &o);
    assert_eq!(r.mode, "dry-run");
    assert!(r
        .threads
        .iter()
        .all(|t| t.pinned_cpu.is_none() && t.planned_cpu.is_some()));
    assert_eq!(r.migrations.threads_pinned, 0);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["migrations"]["threads_pinned"], 0);
    let path = std::path::Path::new("r.json");
    let text = tdmap_format::to_string(&r);
    let back: RunReport = tdmap_format::from_str(&text, path).unwrap();
    let future = text.replace("\"version\": 2,", "\"version\": 99,");
    let err = tdmap_format::from_str::<RunReport>(&future, path).unwrap_err();
    assert!(err.to_string().contains("version 99"), "{err}");
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        json,
        "the report reads back as written"
    );
}

#[test]
fn a_process_of_another_user_is_left_alone() {
    let sys = RecordingSys::new();
    sys.set_foreign(true);
    let (e, log) = two_periods(Config::default(), false, &sys);
    assert!(log
        .iter()
        .all(|l| pins(l).is_empty() && moves(l).is_empty()));
    assert!(e.counts().foreign_skips > 0);
}
