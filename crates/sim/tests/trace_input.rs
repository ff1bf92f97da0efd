//! The trace adapter and the policies that read traces: threads are merged by time stamp
//! whatever the frame order, faults are skipped, the first pass counts accesses, and the
//! oracle and kMAF act on what the trace shows.

use std::path::{Path, PathBuf};
use tdmap_sim::policy::best_static::{BestStatic, Knowledge};
use tdmap_sim::policy::{Kmaf, KmafParams};
use tdmap_sim::{first_pass, SimAccess, SimConfig, Simulator, TraceInput};
use tdmap_trace::{Access, Fault, Header, ThreadInfo, TraceStatus, Writer};

fn path(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sim-trace-input");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn acc(thread: u32, addr: u64, time: u64) -> Access {
    Access {
        thread,
        addr,
        size: 8,
        write: time.is_multiple_of(2),
        time,
    }
}

/// Writes a trace of `threads` threads; `frames` are written in the given order.
fn write(name: &str, threads: u32, frames: &[(u32, Vec<Access>)]) -> PathBuf {
    let p = path(name);
    let mut h = Header::new(vec!["test".into()], "test");
    h.threads = threads;
    let w = Writer::create(&p, h).unwrap();
    for (t, f) in frames {
        w.append_accesses(*t, f).unwrap();
    }
    let fault = Fault {
        thread: 0,
        addr: 0x1000,
        cpu: 0,
        node: 0,
        time: 0,
    };
    w.append_faults(0, &[fault]).unwrap();
    let info = (0..threads)
        .map(|id| ThreadInfo {
            id,
            os_tid: id as i32,
            cpu: None,
        })
        .collect();
    w.set_threads(info).unwrap();
    w.finish(TraceStatus::Complete).unwrap();
    p
}

#[test]
fn threads_are_merged_by_time_and_faults_skipped() {
    // Thread 1's whole frame is written first, but its accesses fall between thread 0's.
    let t0: Vec<Access> = (0..50).map(|i| acc(0, 0x1000 + i * 8, 2 * i)).collect();
    let t1: Vec<Access> = (0..50).map(|i| acc(1, 0x9000 + i * 8, 2 * i + 1)).collect();
    let p = write("merge.trace", 2, &[(1, t1.clone()), (0, t0.clone())]);
    let input = TraceInput::open(&p).unwrap();
    assert_eq!(input.threads(), 2);
    let got: Vec<SimAccess> = input.map(|r| r.unwrap()).collect();
    assert_eq!(got.len(), 100, "faults are not accesses");
    let mut all: Vec<Access> = t0.into_iter().chain(t1).collect();
    all.sort_by_key(|a| a.time);
    let want: Vec<SimAccess> = all
        .iter()
        .map(|a| SimAccess {
            thread: a.thread,
            addr: a.addr,
            size: a.size,
            write: a.write,
        })
        .collect();
    assert_eq!(got, want);
    let prof = first_pass(&p, |_| Ok(())).unwrap();
    assert_eq!(prof.accesses, vec![50, 50]);
}

#[test]
fn a_corrupt_trace_is_an_error_not_a_panic() {
    let t0: Vec<Access> = (0..5000).map(|i| acc(0, i * 4096, i)).collect();
    let p = write("whole.trace", 1, &[(0, t0)]);
    let bytes = std::fs::read(&p).unwrap();
    let bad = path("bad.trace");
    let mut damaged = bytes.clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0x40;
    std::fs::write(&bad, &damaged).unwrap();
    let res: Result<Vec<_>, _> = match TraceInput::open(&bad) {
        Ok(input) => input.collect(),
        Err(e) => Err(e),
    };
    assert!(res.is_err());
    // A cut one is read up to its last whole frame and ends Incomplete.
    let cut = path("cut.trace");
    std::fs::write(&cut, &bytes[..bytes.len() - 40]).unwrap();
    let profile = first_pass(&cut, |_| Ok(())).unwrap();
    let ending = profile.ending.unwrap();
    assert!(!ending.complete() && ending.cut_frame, "{ending:?}");
}

/// Threads 0 and 1 share a buffer, so do 2 and 3: greedy puts each pair in one package,
/// its majority homes put each pair's pages on that pair's node, and best-static, read
/// from the trace file, is no slower than any candidate it replayed.
#[test]
fn best_static_groups_sharers_and_homes_pages_with_them() {
    let mut frames = Vec::new();
    for t in 0..4u32 {
        let base = if t < 2 { 0x10_0000 } else { 0x20_0000 };
        let f: Vec<Access> = (0..2000)
            .map(|i| acc(t, base + (i % 256) * 64, i))
            .collect();
        frames.push((t, f));
    }
    let p = write("pairs.trace", 4, &frames);
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let k = Knowledge::from_trace(&p).unwrap();
    assert_eq!(k.profile.total(), 8000);
    let opts = tdmap_map::Options::default();
    let greedy =
        tdmap_map::map_threads(tdmap_map::Algorithm::Greedy, &topo, &k.matrix, 4, &opts).unwrap();
    let pkg = |t: usize| topo.pus[greedy[t]].package;
    assert_eq!(pkg(0), pkg(1), "{greedy:?}");
    assert_eq!(pkg(2), pkg(3), "{greedy:?}");
    let node = |t: usize| topo.pus[greedy[t]].node;
    for (page, n) in k.homes(&topo, &greedy, 4096) {
        let owner = if page < 0x20_0000 >> 12 { 0 } else { 2 };
        assert_eq!(n, node(owner), "page {page:#x}");
    }
    let cfg = SimConfig::default();
    let b = BestStatic::from_trace(&p, &topo, &cfg).unwrap();
    let best = b.report().cycles_max;
    for (c, r) in &b.tried {
        assert!(best <= r.cycles_max, "{} beats best-static", c.label());
    }
}

/// kMAF: threads 0 and 1 share pages but start on different packages; the extra faults
/// let the sharing show, and the periodic mapping brings the two together.
#[test]
fn kmaf_maps_sharers_together() {
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let cfg = SimConfig {
        tick_cycles: Some(200_000),
        ..SimConfig::default()
    };
    let seed = (1..500)
        .find(|&s| {
            let o = tdmap_sim::policy::pu_order(&topo, tdmap_sim::policy::ThreadOrder::Random(s));
            topo.pus[o[0]].package != topo.pus[o[1]].package
        })
        .unwrap();
    // A generous fault budget: this run is short, and the test is about the mapping.
    let kmaf = Kmaf::new(KmafParams {
        seed,
        fault_budget: 0.5,
        ..Default::default()
    });
    let mut sim = Simulator::new(&topo, cfg, Box::new(kmaf), 2).unwrap();
    let base = 1u64 << 30;
    // Thread 1 first-touches 64 pages, then both threads work on them in turn.
    let touch: Vec<SimAccess> = (0..64)
        .map(|p| SimAccess::write(1, base + p * 4096, 8))
        .collect();
    sim.run_chunk(&touch).unwrap();
    let mut rounds = Vec::new();
    for r in 0..3000u64 {
        for p in 0..64 {
            let t = (r % 2) as u32;
            rounds.push(SimAccess::write(t, base + p * 4096 + (r % 64) * 64, 8));
        }
    }
    sim.run_chunk(&rounds[..64]).unwrap();
    let before = sim.thread_pu().to_vec();
    sim.run_chunk(&rounds[64..]).unwrap();
    let after = sim.thread_pu().to_vec();
    let rep = sim.finish();
    assert!(rep.ticks > 2, "{} ticks", rep.ticks);
    assert_ne!(topo.pus[before[0]].package, topo.pus[before[1]].package);
    assert_eq!(
        topo.pus[after[0]].package, topo.pus[after[1]].package,
        "kMAF brings sharers together: {after:?}"
    );
    assert!(rep.thread_migrations > 0);
}
