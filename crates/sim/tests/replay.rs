//! Replaying many policies at once must not change any of them (issue 18 item 7): the
//! policies of one pass run on worker threads, and best-static's plan replays once the
//! candidates it proves identical. Each report must equal that policy's replay alone.

use tdmap_sim::policy::best_static::{Candidate, Knowledge, Plan};
use tdmap_sim::policy::{ByName, Policy};
use tdmap_sim::synth::{Pattern, Synth};
use tdmap_sim::{simulate, simulate_many, SimAccess, SimConfig, SimError, SplitMix64, CHUNK};
use tdmap_topo::Topology;

const THREADS: usize = 8;

fn topo() -> Topology {
    tdmap_topo::preset("xeon-x7550-4s").unwrap()
}

/// Pairs of threads sharing buffers, then every thread reading lines others wrote, in a
/// shuffled order: pages first touched by one node and used most by another, so that
/// page homes and first touch give different replays.
fn trace(seed: u64) -> Vec<SimAccess> {
    let pairs = Synth::new(
        Pattern::Pairs { bytes: 256 << 10 },
        THREADS as u32,
        12_000,
        0.3,
        seed,
    );
    let mut out: Vec<SimAccess> = pairs.collect();
    let mut rng = SplitMix64::new(seed);
    for _ in 0..40_000 {
        let t = rng.below(THREADS) as u32;
        let owner = (t as u64 + 1 + rng.below(3) as u64) % THREADS as u64;
        let addr = (owner << 30) + rng.below(4096) as u64 * 64;
        out.push(SimAccess::read(t, addr, 8));
    }
    out
}

fn alone(
    topo: &Topology,
    cfg: &SimConfig,
    p: Box<dyn Policy>,
    t: &[SimAccess],
) -> tdmap_sim::SimReport {
    simulate(topo, cfg.clone(), p, THREADS, t.iter().copied()).unwrap()
}

/// Several chunks, eight policies on worker threads: the reports come back in the order
/// asked, each equal to the policy's replay on its own.
#[test]
fn policies_replayed_together_report_as_if_alone() {
    let topo = topo();
    let cfg = SimConfig::default();
    let t = trace(3);
    assert!(
        t.len() > 2 * CHUNK,
        "{} accesses: more than two chunks",
        t.len()
    );
    let names = [
        "os",
        "compact",
        "scatter",
        "random",
        "interleave",
        "numa-balancing",
        "sammu",
        "kmaf",
    ];
    let build = || {
        names
            .iter()
            .map(|n| ByName::build(n, 1).unwrap())
            .collect::<Vec<_>>()
    };
    let ok = t.iter().map(|&a| Ok::<_, SimError>(a));
    let together = simulate_many(&topo, &cfg, build(), THREADS, ok).unwrap();
    for (p, r) in build().into_iter().zip(&together) {
        assert_eq!(*r, alone(&topo, &cfg, p, &t), "{}", r.policy);
    }
}

/// best-static's plan shares replays between candidates (fewer replays than candidates
/// plus policies), yet every candidate's report is its own replay's.
#[test]
fn best_static_plan_shares_only_identical_replays() {
    let topo = topo();
    let cfg = SimConfig::default();
    let t = trace(5);
    let k = Knowledge::from_accesses(THREADS, &t).unwrap();
    let named = ["os", "compact", "scatter", "random", "interleave"];
    let mut policies: Vec<Box<dyn Policy>> = named
        .iter()
        .map(|n| ByName::build(n, cfg.seed).unwrap())
        .collect();
    let plan = Plan::new(&k, &topo, &cfg, &mut policies);
    let candidates = k.candidates(&topo, cfg.seed);
    let replays = policies.len();
    assert!(
        replays < named.len() + candidates.len() - named.len(),
        "{replays} replays for {} candidates: no duplicate found",
        candidates.len()
    );
    let ok = t.iter().map(|&a| Ok::<_, SimError>(a));
    let reports = simulate_many(&topo, &cfg, policies, THREADS, ok).unwrap();
    let best = plan.pick(Knowledge::from_accesses(THREADS, &t).unwrap(), &reports);
    assert_eq!(best.tried.len(), candidates.len());
    let mut homes_differ = false;
    for (c, r) in &best.tried {
        let mut own = alone(&topo, &cfg, k.policy(&topo, &cfg, c), &t);
        own.policy = c.label();
        assert_eq!(*r, own, "{}", c.label());
        if let Candidate::Mapping {
            homes: true,
            mapping,
            ..
        } = c
        {
            let first_touch = best.tried.iter().find(|(d, _)| {
                let same = |m: &Vec<usize>| m == mapping;
                matches!(d, Candidate::Mapping { homes: false, mapping: m, .. } if same(m))
            });
            homes_differ |= first_touch.is_some_and(|(_, f)| f.cycles_max != r.cycles_max);
        }
    }
    assert!(
        homes_differ,
        "the trace must tell page homes from first touch"
    );
}

/// On worker threads too, a read error of the stream and a simulator's error each stop
/// the run with that error, whichever chunk they come in.
#[test]
fn errors_stop_a_run_on_worker_threads() {
    #[derive(Debug, PartialEq)]
    enum ReadError {
        Truncated,
        Sim(SimError),
    }
    impl From<SimError> for ReadError {
        fn from(e: SimError) -> Self {
            ReadError::Sim(e)
        }
    }
    let topo = topo();
    let cfg = SimConfig::default();
    let three = || {
        ["os", "compact", "sammu"]
            .iter()
            .map(|n| ByName::build(n, 1).unwrap())
            .collect::<Vec<_>>()
    };
    let good = trace(1)
        .into_iter()
        .take(2 * CHUNK + 5)
        .map(Ok::<_, ReadError>);
    let cut = good.clone().chain([Err(ReadError::Truncated)]);
    let r = simulate_many(&topo, &cfg, three(), THREADS, cut);
    assert_eq!(r.err(), Some(ReadError::Truncated));
    let bad = good.chain([Ok(SimAccess::read(THREADS as u32, 64, 8))]);
    let r = simulate_many(&topo, &cfg, three(), THREADS, bad);
    assert!(
        matches!(r, Err(ReadError::Sim(SimError::ThreadOutOfRange { .. }))),
        "{r:?}"
    );
}
