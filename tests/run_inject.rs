//! `tdmap run --sampler inject` end to end on this machine (one node, no soft-dirty: the
//! kernel sampler sees first-touch faults only): the program's output is unchanged, the
//! injected faults show up as samples on pages already sampled, they reveal the pairs
//! workload's write sharing that first touches miss, and nothing hangs across fork,
//! exec, or the monitor's death. `correlation_table` (ignored, long) prints the
//! per-workload similarity of both samplers.

mod common;
#[allow(dead_code)]
mod workloads;

use common::{assert_bad_input, matrix_by_tid, matrix_by_tid_of, run_json, running_program, tdmap};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use workloads::gcc;

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");

/// Builds libtdmap_rt.so beside the tdmap binary (same profile), once.
fn runtime() {
    common::cargo_build("tdmap-rt");
}

/// Flags of a short-period inject run.
const INJECT: &[&str] = &["--sampler", "inject", "--period", "20", "--dry-run"];

fn bare_stdout(prog: &Path, args: &[&str]) -> String {
    let out = Command::new(prog).args(args).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Runs workload `name` with 8 threads under `flags`: its similarity with the expected
/// sharing, and the report.
fn similarity(name: &str, size: &str, flags: &[&str]) -> (f64, Value) {
    let prog = gcc(name);
    let (_, r, code) = run_json(flags, &prog, &["8", size]);
    assert_eq!(code, 0, "{name}: {r}");
    let m = matrix_by_tid(&r);
    assert_eq!(m.len(), 8, "{name}: threads seen: {r}");
    let s = workloads::similarity(&m, &workloads::expected(name, 8), 1.0);
    (s, r)
}

fn repeat(r: &Value) -> u64 {
    r["samples"]["repeat"].as_u64().unwrap()
}

#[test]
fn bad_inject_settings_exit_2_with_one_line() {
    runtime();
    assert_bad_input(
        &tdmap(&["run", "--inject-fraction", "0", "--", "true"]),
        "--inject-fraction",
    );
    assert_bad_input(
        &tdmap(&["run", "--inject-pages", "0", "--", "true"]),
        "--inject-pages",
    );
    let out = Command::new(TDMAP)
        .args(["run", "--sampler", "inject", "--", "true"])
        .env("TDMAP_RT_SO", "/does/not/exist.so")
        .output()
        .unwrap();
    assert_bad_input(&out, "TDMAP_RT_SO");
}

/// The handler thread is recognised (by its fault on the beacon page) and left out of
/// the program's threads even when the program ends within milliseconds.
#[test]
fn the_handler_is_not_counted_as_a_thread_of_a_short_program() {
    runtime();
    let prog = gcc("pairs");
    for _ in 0..3 {
        let (_, r, code) = run_json(INJECT, &prog, &["8", "4096"]);
        assert_eq!(code, 0);
        assert_eq!(r["threads"].as_array().unwrap().len(), 8, "{r}");
        let tid = r["inject"]["handler_tid"].as_u64();
        assert!(tid.is_some(), "{r}");
        assert!(r["threads"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["tid"].as_u64() != tid));
    }
}

/// Must-show 1 for the inject sampler, on the workload whose sharing is written by both
/// threads of each pair. Its sharing rests on a few hundred extra faults, whose timing
/// varies with the load: the best of three runs must reach 0.8 (measured here: 0.93 to
/// 1.00 per run at 03:20 UTC, with 2 CPUs shared with compilers).
#[test]
fn inject_keeps_the_output_and_sees_the_pairs_sharing_first_touches_miss() {
    runtime();
    let (prog, args) = (gcc("pairs"), ["8", "524288"]);
    let bare = bare_stdout(&prog, &args);
    let (out, kernel, _) = run_json(&["--sampler", "kernel", "--dry-run"], &prog, &args);
    assert_eq!(out, bare);
    let mut best = f64::MIN;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (out, r, code) = run_json(INJECT, &prog, &args);
        assert_eq!((code, out.as_str()), (0, bare.as_str()));
        assert_eq!(r["sampler"], "inject", "{r}");
        assert!(r["inject"]["handler_tid"].as_u64().is_some(), "{r}");
        assert_eq!(r["threads"].as_array().unwrap().len(), 8, "{r}");
        // First touches fault once per page; the injected faults hit touched pages.
        assert!(repeat(&r) > repeat(&kernel) + 100, "{r}");
        let m = matrix_by_tid(&r);
        let s = workloads::similarity(&m, &workloads::expected("pairs", 8), 1.0);
        seen.push(s);
        best = best.max(s);
        if best >= 0.8 {
            break;
        }
    }
    assert!(best >= 0.8, "pairs similarity per run: {seen:?}");
    if kernel["soft_dirty_extra_faults"] == false {
        let m = matrix_by_tid(&kernel);
        let s = workloads::similarity(&m, &workloads::expected("pairs", 8), 1.0);
        assert!(
            s < 0.5,
            "first touches alone should not show the pairs: {s}"
        );
    }
}

/// Runs `cmd`; its stdout and status, or a panic if it takes longer than `limit` (the
/// program hung).
fn stdout_within(cmd: Command, limit: Duration) -> (String, std::process::ExitStatus) {
    let o = common::output_within(cmd, limit);
    (String::from_utf8(o.stdout).unwrap(), o.status)
}

/// `tdmap run` of `prog` with every page of it protected every `period_ms` (add its
/// arguments).
fn protect_everything(prog: &Path, period_ms: &str) -> Command {
    let mut c = Command::new(TDMAP);
    c.args(["run", "--sampler", "inject", "--period", period_ms])
        .args(["--inject-fraction", "1", "--inject-pages", "100000", "--"])
        .arg(prog);
    c
}

fn fork_program() -> PathBuf {
    common::gcc_test_program("inject/fork.c", "inject-fork")
}

/// Every page protected every 10 ms, then fork: the children (no handler thread) and the
/// parent write all of it and finish.
#[test]
fn forked_children_write_protected_memory_without_hanging() {
    runtime();
    let prog = fork_program();
    let mut cmd = protect_everything(&prog, "10");
    cmd.arg("16");
    let (out, st) = stdout_within(cmd, Duration::from_secs(60));
    assert!(st.success(), "{st:?}: {out}");
    let pages = 16 * 256;
    assert_eq!(
        out,
        format!(
            "child {}\ngrandchild {}\nparent {} children ok\n",
            2 * pages,
            3 * pages,
            2 * pages
        )
    );
}

/// A multi-threaded program calls setuid again and again while every page is protected
/// every millisecond: glibc's set-id handler also runs on the handler thread and writes
/// the caller's stack, which must never leave that thread waiting on its own protection.
#[test]
fn setuid_in_a_threaded_program_does_not_hang() {
    runtime();
    let prog = common::gcc_test_program("inject/setuid.c", "inject-setuid");
    let mut cmd = protect_everything(&prog, "1");
    cmd.arg("20000");
    let (out, st) = stdout_within(cmd, Duration::from_secs(120));
    assert!(st.success(), "{st:?}: {out}");
    assert_eq!(out, "setuid 20000\n");
}

/// A `tdmap cc` program (the runtime linked in, its statics in the anonymous part of
/// `.bss`) runs with every resident page protected every 5 ms, the settings given
/// directly with this test as the monitor: the handler thread's own writes (its busy
/// flag) must never land on a page it protected. Before the fix it hung on every run.
#[test]
fn the_handlers_own_words_are_never_protected() {
    let prog = common::tdmap_cc_test_program("inject/statics.c", "inject-statics");
    for _ in 0..3 {
        let mut cmd = Command::new(&prog);
        cmd.env("TDMAP_INJECT", format!("5,1,100000,{}", std::process::id()));
        let (out, st) = stdout_within(cmd, Duration::from_secs(30));
        assert!(st.success(), "{st:?}: {out}");
        assert_eq!(out, "statics ok\n");
    }
}

/// The runtime follows an `exec` of the same process (the pid and its parent stay).
#[test]
fn the_program_an_exec_starts_is_injected_too() {
    runtime();
    let prog = gcc("pairs");
    let args = ["8", "262144"];
    let bare = bare_stdout(&prog, &args);
    let script = format!("exec {} {} {}", prog.display(), args[0], args[1]);
    let (out, r, code) = run_json(INJECT, Path::new("sh"), &["-c", &script]);
    assert_eq!((code, out), (0, bare));
    assert!(r["inject"]["handler_tid"].as_u64().is_some(), "{r}");
    assert!(repeat(&r) > 50, "{r}");
}

/// The monitor is SIGKILLed at several moments of the program's run, with the injector
/// protecting every page every 10 ms: the program, left alone, must still finish with
/// the right checksum. (Killed before the program starts, the gate stops it instead.)
#[test]
fn the_program_finishes_when_the_monitor_is_killed() {
    runtime();
    let prog = gcc("pairs");
    let args = ["8", "262144"];
    let bare = bare_stdout(&prog, &args);
    let mut during = 0;
    for delay in [0, 20, 50, 100, 200] {
        let mut c = protect_everything(&prog, "10")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut pipe = c.stdout.take().unwrap();
        let pid = running_program(c.id(), &prog).expect("the program starts");
        std::thread::sleep(Duration::from_millis(delay));
        during += usize::from(Path::new(&format!("/proc/{pid}")).exists());
        c.kill().unwrap();
        c.wait().unwrap();
        // The program holds the pipe until it exits: EOF means it finished.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            let _ = tx.send(s);
        });
        let Ok(out) = rx.recv_timeout(Duration::from_secs(60)) else {
            // The hung orphan must not outlive the test.
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("the program hung after the monitor died {delay} ms into its run");
        };
        assert_eq!(out, bare, "killed {delay} ms into the run");
    }
    assert!(during >= 3, "only {during} kills hit a running program");
}

/// Prints the similarity of the online matrix with the expected one for every workload
/// at 8 threads, with both samplers, at sizes that run about 0.5-2 s (the figures of the
/// closing note): `cargo test --release --test run_inject -- --ignored --nocapture`.
#[test]
#[ignore = "long: about a minute; prints the table, asserts nothing beyond the run"]
fn correlation_table() {
    runtime();
    let sizes = [
        ("ep", "20000000"),
        ("stencil1d", "16384"),
        ("stencil3d", "72"),
        ("pairs", "1572864"),
        ("alltoall", "4096"),
        ("pipeline", "262144"),
        ("cginit", "400000"),
        ("phase", "786432"),
    ];
    // A score of 1.000 with no sharing events between threads is the degenerate case of
    // `similarity` for ep (nothing expected) and alltoall (uniform expected). The last
    // column is the amount matrix with every sharer kept (tests/vm/corr-check.sh's).
    println!("workload   kernel (sharing events)  inject (sharing events, repeat samples)  inject amount, --sharers all");
    let all = ["--sampler", "inject", "--dry-run", "--sharers", "all"];
    for (name, size) in sizes {
        let (k, kr) = similarity(name, size, &["--sampler", "kernel", "--dry-run"]);
        let (i, ir) = similarity(name, size, &["--sampler", "inject", "--dry-run"]);
        let (_, ar) = similarity(name, size, &all);
        let amount = matrix_by_tid_of(&ar, "matrix_amount");
        let a = workloads::similarity(&amount, &workloads::expected(name, 8), 1.0);
        let events = |r: &Value| -> f64 {
            let m = matrix_by_tid(r);
            (0..m.len())
                .flat_map(|i| (i + 1..m.len()).map(move |j| (i, j)))
                .map(|(i, j)| m[i][j])
                .sum()
        };
        println!(
            "{name:10} {k:6.3} ({:6})          {i:6.3} ({:6}, {:5})                   {a:6.3}",
            events(&kr),
            events(&ir),
            repeat(&ir)
        );
    }
}
