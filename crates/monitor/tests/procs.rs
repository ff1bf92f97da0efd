//! The live actuator on a program of several processes, on the fake kernel: pages are
//! keyed from each process's maps (a fake `/proc`), a shared page is moved through a
//! process that maps it, each process gets its own move_pages call, and a process that
//! exits during a batch fails only its own pages, with their errno.

use tdmap_monitor::live::SysActuator;
use tdmap_monitor::Actuator;
use tdmap_sys::fake::{Call, RecordingSys};
use tdmap_sys::FsRoot;

/// Processes 10 and 11 map a memfd (inode 77) at different addresses; both have a heap.
fn fake_proc() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tdmap-live-procs-{}", std::process::id()));
    for (pid, maps) in [
        (
            10,
            "50000000-50010000 rw-p 00000000 00:00 0 [heap]\n\
             70000000-70004000 rw-s 00000000 00:01 77 /memfd:r (deleted)\n",
        ),
        (
            11,
            "50000000-50010000 rw-p 00000000 00:00 0 [heap]\n\
             90000000-90004000 rw-s 00000000 00:01 77 /memfd:r (deleted)\n",
        ),
    ] {
        std::fs::create_dir_all(dir.join(format!("proc/{pid}"))).unwrap();
        std::fs::write(dir.join(format!("proc/{pid}/maps")), maps).unwrap();
    }
    dir
}

#[test]
fn moves_go_through_each_process_and_an_exited_one_fails_alone() {
    let dir = fake_proc();
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let sys = RecordingSys::new();
    let mut act = SysActuator::new(&sys, 10, &topo).keyed_by_maps(FsRoot::new(&dir));
    let shared = act.key(11, 0x9000_1000).unwrap();
    assert_eq!(
        act.key(10, 0x7000_1000),
        Some(shared),
        "one memfd page, two addresses"
    );
    let heap10 = act.key(10, 0x5000_0000).unwrap();
    let heap11 = act.key(11, 0x5000_0000).unwrap();
    assert_ne!(heap10, heap11);
    for (page, node) in [(0x7000_1000, 0), (0x9000_1000, 0), (0x5000_0000, 0)] {
        sys.place(page, node);
    }
    // Process 10 exits: its heap page fails with ESRCH, the shared page moves through 11.
    sys.exit_process(10);
    let node1 = (0..topo.num_nodes())
        .find(|&n| topo.node_os_index(n) == 1)
        .unwrap();
    let st = act
        .move_pages(&[(shared, node1), (heap10, node1), (heap11, node1)])
        .unwrap();
    assert_eq!(st, vec![Ok(()), Err(libc::ESRCH), Ok(())]);
    let moves: Vec<(i32, Vec<usize>)> = sys
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::MovePages {
                pid,
                pages,
                nodes: Some(_),
            } => Some((pid, pages)),
            _ => None,
        })
        .collect();
    assert!(moves.contains(&(11, vec![0x9000_1000])), "{moves:?}");
    assert!(moves.contains(&(11, vec![0x5000_0000])), "{moves:?}");
    assert_eq!(
        moves.iter().filter(|m| m.0 == 10).count(),
        2,
        "tried 10 first: {moves:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
