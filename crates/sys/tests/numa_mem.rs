//! The NUMA memory wrappers against the live kernel. They change memory policies, so they
//! sit in their own test binary (hwlocality's `tests/single-threaded.rs` does the same);
//! the thread-policy test runs in a thread of its own.
//!
//! They hold on any machine: "node 0" and "a node that does not exist" come from
//! /sys/devices/system/node/online. The multi-node behaviour is checked in the VM
//! (tests/vm).

#[path = "common/region.rs"]
#[allow(dead_code)]
mod region;

use region::Region;
use tdmap_sys::{parse_list, FsRoot, LinuxSys, MbindFlags, MemPolicy, Sys, SysError};

fn online_nodes() -> Vec<usize> {
    let text = FsRoot::new("/")
        .read("/sys/devices/system/node/online")
        .expect("node list");
    parse_list(&text).expect("node list parses")
}

fn first_node() -> usize {
    online_nodes()[0]
}

fn missing_node() -> usize {
    online_nodes().last().unwrap() + 1
}

fn assert_errno(err: SysError, call: &str, errno: i32) {
    assert_eq!(err.errno(), Some(errno), "{err}");
    assert!(err.to_string().starts_with(call), "{err}");
}

#[test]
fn touched_pages_report_their_node() {
    let r = Region::new(8);
    r.touch();
    let st = LinuxSys.move_pages(0, &r.pages(), None).unwrap();
    assert_eq!(st, vec![first_node() as i32; 8]);
}

#[test]
fn untouched_pages_report_enoent() {
    let r = Region::new(4);
    let st = LinuxSys.move_pages(0, &r.pages(), None).unwrap();
    assert_eq!(st, vec![-libc::ENOENT; 4]);
}

#[test]
fn moving_to_an_existing_node_reports_that_node() {
    let r = Region::new(4);
    r.touch();
    let n = first_node() as i32;
    let st = LinuxSys.move_pages(0, &r.pages(), Some(&[n; 4])).unwrap();
    assert_eq!(st, vec![n; 4]);
}

#[test]
fn moving_to_a_missing_node_fails_with_enodev() {
    let r = Region::new(2);
    r.touch();
    let m = missing_node() as i32;
    let err = LinuxSys
        .move_pages(0, &r.pages(), Some(&[m; 2]))
        .unwrap_err();
    assert_errno(err, "move_pages", libc::ENODEV);
}

#[test]
fn bind_is_reported_back_and_places_pages() {
    let r = Region::new(4);
    let n = first_node();
    LinuxSys
        .mbind(
            r.addr(),
            r.len(),
            &MemPolicy::Bind(vec![n]),
            MbindFlags::NONE,
        )
        .unwrap();
    assert_eq!(
        LinuxSys.get_mempolicy(Some(r.addr())).unwrap(),
        MemPolicy::Bind(vec![n])
    );
    r.touch();
    let st = LinuxSys.move_pages(0, &r.pages(), None).unwrap();
    assert_eq!(st, vec![n as i32; 4]);
}

#[test]
fn binding_to_a_missing_node_fails_with_einval() {
    let r = Region::new(2);
    let policy = MemPolicy::Bind(vec![missing_node()]);
    let err = LinuxSys
        .mbind(r.addr(), r.len(), &policy, MbindFlags::MOVE_STRICT)
        .unwrap_err();
    assert_errno(err, "mbind", libc::EINVAL);
    assert_eq!(
        LinuxSys.get_mempolicy(Some(r.addr())).unwrap(),
        MemPolicy::Default
    );
}

#[test]
fn unaligned_range_fails_with_einval() {
    let r = Region::new(2);
    let policy = MemPolicy::Bind(vec![first_node()]);
    let err = LinuxSys
        .mbind(r.addr() + 1, 10, &policy, MbindFlags::NONE)
        .unwrap_err();
    assert_errno(err, "mbind", libc::EINVAL);
}

#[test]
fn each_policy_reads_back_as_set() {
    let n = first_node();
    for p in [
        MemPolicy::Interleave(vec![n]),
        MemPolicy::Preferred(n),
        MemPolicy::Bind(vec![n]),
        MemPolicy::Default,
    ] {
        let r = Region::new(2);
        LinuxSys
            .mbind(r.addr(), r.len(), &p, MbindFlags::MOVE_STRICT)
            .unwrap();
        assert_eq!(LinuxSys.get_mempolicy(Some(r.addr())).unwrap(), p);
    }
}

#[test]
fn node_beyond_the_mask_never_reaches_the_kernel() {
    let r = Region::new(1);
    let err = LinuxSys
        .mbind(
            r.addr(),
            r.len(),
            &MemPolicy::Preferred(5000),
            MbindFlags::NONE,
        )
        .unwrap_err();
    assert!(
        matches!(err, SysError::Invalid { call: "mbind", .. }),
        "{err}"
    );
}

#[test]
fn thread_policy_reads_back_and_resets() {
    let n = first_node();
    std::thread::spawn(move || {
        assert_eq!(LinuxSys.get_mempolicy(None).unwrap(), MemPolicy::Default);
        LinuxSys.set_mempolicy(&MemPolicy::Preferred(n)).unwrap();
        assert_eq!(
            LinuxSys.get_mempolicy(None).unwrap(),
            MemPolicy::Preferred(n)
        );
        let err = LinuxSys
            .set_mempolicy(&MemPolicy::Bind(vec![missing_node()]))
            .unwrap_err();
        assert_errno(err, "set_mempolicy", libc::EINVAL);
        LinuxSys.set_mempolicy(&MemPolicy::Default).unwrap();
        assert_eq!(LinuxSys.get_mempolicy(None).unwrap(), MemPolicy::Default);
    })
    .join()
    .unwrap();
}
