//! What a `tdmap` process loads at start (issue 22 item 9, `make bench-startup`):
//! libscotch only when `drb` maps (crates/scotch/src/load.rs), libgcc_s never (build.rs
//! links the static unwinder), as the dynamic loader itself reports them (LD_DEBUG=files).
//! Without libscotch, `drb` is one line and exit 2, and the other algorithms still run.

mod common;

use std::process::{Command, Output};

/// A 4-thread matrix (pairs 0-1 and 2-3 share): its path, in the folder returned with it
/// that must outlive the path's use.
fn matrix() -> (common::TempDir, String) {
    let dir = common::TempDir::new("tdmap-startup-libs");
    let p = dir.join("m4.csv");
    std::fs::write(&p, "0,9,1,1\n9,0,1,1\n1,1,0,9\n1,1,9,0\n").unwrap();
    (dir, p.to_str().unwrap().to_string())
}

fn tdmap(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(args)
        .env_remove("TDMAP_LIBSCOTCH")
        .envs(env.iter().copied())
        .output()
        .expect("run tdmap")
}

/// The shared libraries the dynamic loader opened for `tdmap args`, by file name.
fn loaded(args: &[&str]) -> Vec<String> {
    let out = tdmap(args, &[("LD_DEBUG", "files")]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.split("file=").nth(1))
        .filter_map(|f| f.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn greedy_loads_neither_libscotch_nor_libgcc_s_and_drb_loads_libscotch() {
    let (_dir, m) = matrix();
    let map = ["map", "--matrix", &m, "-m", "xeon-x7550-4s"];
    let libs = loaded(&map);
    assert!(libs.iter().any(|l| l.starts_with("libhwloc")), "{libs:?}");
    for lib in ["libscotch", "libgcc_s"] {
        assert!(
            !libs.iter().any(|l| l.starts_with(lib)),
            "{lib} loaded by a greedy mapping: {libs:?}"
        );
    }
    let drb = loaded(&[&map[..], &["-a", "drb"]].concat());
    assert!(
        drb.iter().any(|l| l.starts_with("libscotch")),
        "drb mapped without opening libscotch? {drb:?}"
    );
}

#[test]
fn a_missing_libscotch_fails_drb_only_with_one_line_and_exit_2() {
    let (_dir, m) = matrix();
    let map = ["map", "--matrix", &m, "-m", "xeon-x7550-4s"];
    let gone = [("TDMAP_LIBSCOTCH", "/nonexistent/libscotch-7.0.so")];
    let out = tdmap(&[&map[..], &["-a", "drb"]].concat(), &gone);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("tdmap: "), "{err}");
    assert!(err.contains("/nonexistent/libscotch-7.0.so"), "{err}");
    assert!(err.contains("apt-get install libscotch-7.0"), "{err}");
    let greedy = tdmap(&map, &gone);
    assert!(greedy.status.success(), "{greedy:?}");
}
