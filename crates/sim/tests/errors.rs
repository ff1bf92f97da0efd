//! Bad input gives an error that names the problem, never a panic.

use tdmap_sim::policy::{ByName, Fixed};
use tdmap_sim::{simulate, simulate_many, SimAccess, SimConfig, SimError, Simulator};

fn topo() -> tdmap_topo::Topology {
    tdmap_topo::preset("simics-4x2").unwrap()
}

#[test]
fn an_access_by_an_unknown_thread_is_an_error() {
    let t = topo();
    let p = ByName::build("compact", 1).unwrap();
    let r = simulate(&t, SimConfig::default(), p, 2, [SimAccess::read(5, 64, 8)]);
    assert_eq!(
        r,
        Err(SimError::ThreadOutOfRange {
            thread: 5,
            threads: 2
        })
    );
    let msg = r.unwrap_err().to_string();
    assert!(
        msg.contains("thread 5") && msg.contains("2 threads"),
        "{msg}"
    );
}

#[test]
fn zero_threads_and_bad_configurations_are_refused() {
    let t = topo();
    let p = || ByName::build("os", 1).unwrap();
    assert_eq!(
        Simulator::new(&t, SimConfig::default(), p(), 0).err(),
        Some(SimError::NoThreads)
    );
    let cfg = SimConfig {
        page_size: 3000,
        ..SimConfig::default()
    };
    let e = Simulator::new(&t, cfg, p(), 1).err().unwrap();
    assert!(e.to_string().contains("page size"), "{e}");
}

#[test]
fn a_policy_mapping_beyond_the_machine_is_refused() {
    let t = topo();
    let p = Box::new(Fixed::new("bad", vec![0, 99]));
    let e = Simulator::new(&t, SimConfig::default(), p, 2)
        .err()
        .unwrap();
    assert!(matches!(e, SimError::BadPolicyOutput { .. }), "{e}");
    assert!(e.to_string().contains("PU 99"), "{e}");
    let empty = Box::new(Fixed::new("empty", vec![]));
    let e = Simulator::new(&t, SimConfig::default(), empty, 2)
        .err()
        .unwrap();
    assert!(e.to_string().contains("0 PUs for 2 threads"), "{e}");
}

#[test]
fn unknown_policy_names_are_none() {
    assert!(ByName::build("kmaf-typo", 1).is_none());
    for n in ByName::NAMES {
        assert!(ByName::build(n, 1).is_some(), "{n}");
    }
}

#[test]
fn a_stream_error_stops_the_run_with_that_error() {
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
    let t = topo();
    let stream = vec![Ok(SimAccess::read(0, 64, 8)), Err(ReadError::Truncated)];
    let p = vec![ByName::build("os", 1).unwrap()];
    let r = simulate_many(&t, &SimConfig::default(), p, 1, stream);
    assert_eq!(r.err(), Some(ReadError::Truncated));
    let bad = vec![Ok::<_, ReadError>(SimAccess::read(3, 64, 8))];
    let p = vec![ByName::build("os", 1).unwrap()];
    let r = simulate_many(&t, &SimConfig::default(), p, 1, bad);
    assert!(matches!(
        r,
        Err(ReadError::Sim(SimError::ThreadOutOfRange { .. }))
    ));
}
