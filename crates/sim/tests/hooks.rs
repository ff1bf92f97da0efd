//! The policy seam: the simulator reports faults, TLB evictions and AC saturations with
//! the right thread, page, node and counter, and carries out what the policy asks.

use std::sync::{Arc, Mutex};
use tdmap_sim::policy::{Actions, FaultEvent, FaultKind, PolicyCtx, TlbEvent, TlbEventKind};
use tdmap_sim::{Policy, SimAccess, SimConfig, Simulator};

#[derive(Default)]
struct Log {
    accesses: Vec<(u32, u64, usize)>,
    faults: Vec<FaultEvent>,
    tlb: Vec<TlbEvent>,
    ticks: u64,
}

/// Threads on PUs 0 and 2 (nodes 0 and 1 of simics-4x2); logs every event; at its first
/// tick injects faults and moves thread 0 to PU 4.
struct Recorder(Arc<Mutex<Log>>);

impl Policy for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }
    fn initial_mapping(&mut self, _ctx: &PolicyCtx) -> Vec<usize> {
        vec![0, 2]
    }
    fn on_fault(&mut self, _ctx: &PolicyCtx, ev: &FaultEvent, _out: &mut Actions) {
        self.0.lock().unwrap().faults.push(*ev);
    }
    fn wants_tlb_events(&self) -> bool {
        true
    }
    fn wants_accesses(&self) -> bool {
        true
    }
    fn on_access(&mut self, _ctx: &PolicyCtx, a: &SimAccess, page_node: usize, out: &mut Actions) {
        self.0
            .lock()
            .unwrap()
            .accesses
            .push((a.thread, a.addr, page_node));
        // Moving a page on an access takes effect before the next one.
        if a.addr == 0x5000 {
            out.page_moves.push((5, 3));
        }
    }
    fn on_tlb_event(&mut self, _ctx: &PolicyCtx, ev: &TlbEvent, _out: &mut Actions) {
        self.0.lock().unwrap().tlb.push(*ev);
    }
    fn on_tick(&mut self, _ctx: &PolicyCtx, out: &mut Actions) {
        let mut log = self.0.lock().unwrap();
        log.ticks += 1;
        if log.ticks == 1 {
            out.inject_faults = true;
            out.thread_moves.push((0, 4));
        }
    }
}

fn setup(cfg: SimConfig) -> (Arc<Mutex<Log>>, Simulator<'static>) {
    let topo: &'static _ = Box::leak(Box::new(tdmap_topo::preset("simics-4x2").unwrap()));
    let log = Arc::new(Mutex::new(Log::default()));
    let sim = Simulator::new(topo, cfg, Box::new(Recorder(log.clone())), 2).unwrap();
    (log, sim)
}

#[test]
fn tlb_evictions_and_saturations_carry_thread_page_node_and_counter() {
    let cfg = SimConfig {
        ac_max: 4,
        ..SimConfig::default()
    };
    let (log, mut sim) = setup(cfg);
    // Thread 1 (node 1) touches page 0 three times, then pages 16, 32, 48, 64: the same
    // set of the 16-set, 4-way TLB, so page 0 is evicted with AC = 3.
    let mut s = vec![SimAccess::read(1, 0, 8); 3];
    s.extend([16u64, 32, 48, 64].map(|p| SimAccess::read(1, p << 12, 8)));
    // Thread 0 (node 0) touches page 100 nine times: AC saturates at 4, twice.
    s.extend(vec![SimAccess::write(0, 100 << 12, 8); 9]);
    sim.run_chunk(&s).unwrap();
    let log = log.lock().unwrap();
    let ev = log
        .tlb
        .iter()
        .find(|e| e.kind == TlbEventKind::Evicted)
        .unwrap();
    assert_eq!(
        (ev.thread, ev.node, ev.page, ev.page_node, ev.ac),
        (1, 1, 0, 1, 3)
    );
    let sat: Vec<_> = log
        .tlb
        .iter()
        .filter(|e| e.kind == TlbEventKind::Saturated)
        .collect();
    assert_eq!(sat.len(), 2);
    assert!(sat
        .iter()
        .all(|e| (e.thread, e.page, e.ac, e.node) == (0, 100, 4, 0)));
    assert_eq!(log.faults.len(), 6, "six pages touched");
    assert!(log.faults.iter().all(|f| f.kind == FaultKind::FirstTouch));
    assert_eq!(
        sim.page_node(100),
        Some(0),
        "first touch by thread 0 on node 0"
    );
}

#[test]
fn a_tick_can_inject_faults_and_migrate_threads() {
    let cfg = SimConfig {
        tick_cycles: Some(500_000),
        ..SimConfig::default()
    };
    let (log, mut sim) = setup(cfg);
    // Thread 1 touches page 7, then spins on page 8 past the first tick (about 3 cycles
    // per L1 hit); then thread 0 and thread 1 touch page 7 again.
    let mut s = vec![SimAccess::read(1, 7 << 12, 8)];
    s.extend(vec![SimAccess::read(1, 8 << 12, 8); 400_000]);
    s.push(SimAccess::read(0, 7 << 12, 8));
    s.push(SimAccess::read(1, 7 << 12, 8));
    sim.run_chunk(&s).unwrap();
    assert_eq!(sim.thread_pu(), &[4, 2], "thread 0 moved to PU 4");
    let r = sim.finish();
    assert_eq!(r.thread_migrations, 1);
    assert!(r.ticks >= 1);
    let log = log.lock().unwrap();
    let on7: Vec<&FaultEvent> = log.faults.iter().filter(|f| f.page == 7).collect();
    let kinds: Vec<(u32, FaultKind)> = on7.iter().map(|f| (f.thread, f.kind)).collect();
    assert_eq!(
        kinds,
        vec![(1, FaultKind::FirstTouch), (0, FaultKind::Injected)],
        "after the injection, the next access to the page faults once, whoever makes it"
    );
    let on8: Vec<FaultKind> = log
        .faults
        .iter()
        .filter(|f| f.page == 8)
        .map(|f| f.kind)
        .collect();
    assert_eq!(on8, vec![FaultKind::FirstTouch, FaultKind::Injected]);
    assert_eq!(on7[1].node, 2, "thread 0 now runs on PU 4, node 2");
}

#[test]
fn every_access_is_reported_when_the_policy_asks() {
    let (log, mut sim) = setup(SimConfig::default());
    let s = [
        SimAccess::read(0, 0x5000, 8),
        SimAccess::write(1, 0x5008, 8),
        SimAccess::read(0, 0x9000, 4),
    ];
    sim.run_chunk(&s).unwrap();
    assert_eq!(sim.page_node(5), Some(3), "moved by the access hook");
    assert_eq!(sim.finish().page_migrations, 1);
    assert_eq!(
        log.lock().unwrap().accesses,
        vec![(0, 0x5000, 0), (1, 0x5008, 3), (0, 0x9000, 0)]
    );
}
