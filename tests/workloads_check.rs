//! Checks of the workload programs themselves (workloads/), untraced: the spin-barrier
//! twin computes what its pthread_barrier_wait original computes, and the kernels reject
//! sizes their decomposition cannot split. Tracing them is tests/trace.rs's job.

mod common;
#[allow(dead_code)] // this binary runs the programs, not the traced tests
mod workloads;

use std::process::{Command, Output};

fn run(name: &str, args: &[&str]) -> Output {
    Command::new(workloads::gcc(name))
        .args(args)
        .output()
        .expect("workload runs")
}

/// The checksum printed by `name` (the hex after "checksum").
fn checksum(name: &str, args: &[&str]) -> String {
    let out = run(name, args);
    assert!(out.status.success(), "{name} {args:?} failed");
    let line = String::from_utf8(out.stdout).unwrap();
    let (prog, sum) = line
        .trim()
        .split_once(" checksum ")
        .expect("one checksum line");
    assert_eq!(prog, name);
    sum.to_string()
}

/// spinbar is stencil1d.c with a hand-written spin barrier: a barrier that let a thread
/// through early would let it read rows of the wrong step, and change the checksum.
#[test]
fn spinbar_computes_what_stencil1d_computes() {
    let spin = workloads::SPINNING[0].name;
    for t in ["1", "3", "8"] {
        for rep in ["1", "3"] {
            let args = [t, "2", rep];
            assert_eq!(
                checksum(spin, &args),
                checksum("stencil1d", &args),
                "{args:?}"
            );
        }
    }
}

/// fft's transpose needs THREADS*ROWS to be a power of two, and mg's coarsest level whole
/// lines: other sizes are usage errors (exit 2, one line naming the constraint).
#[test]
fn kernels_reject_sizes_their_decomposition_cannot_split() {
    for (name, args) in [
        ("fft", ["3", "4"]),
        ("fft", ["4", "6"]),
        ("mg", ["2", "48"]),
        ("cg", ["2", "12"]),
    ] {
        let out = run(name, &args);
        assert_eq!(out.status.code(), Some(2), "{name} {args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("must be") && err.lines().count() == 1,
            "{name}: {err}"
        );
    }
    for (name, args) in [("fft", ["4", "4"]), ("mg", ["3", "32"]), ("cg", ["3", "8"])] {
        assert!(run(name, &args).status.success(), "{name} {args:?}");
    }
}
