//! End-to-end tests of `tdmap sim` on traces of the workloads (8 threads, traced on this
//! one-node machine and replayed on the modelled xeon-x7550-4s): the sharing-aware
//! policies order as the papers report (best-static ≤ kmaf ≤ os) on all seven
//! sharing-heavy patterns run as iterative programs (REPEAT 16); best-static (alias
//! oracle) is no slower than any static policy on every trace these tests make; every
//! mapping policy ties (within 3 %) on the private-only one, output is deterministic,
//! and bad input exits 2 with one line. All figures here are SIMULATED.

mod common;
#[allow(dead_code)]
mod workloads;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");
const MACHINE: &str = "xeon-x7550-4s";

fn scratch() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("sim-tests")
}

/// Traces workload `name` with 8 threads at `size`, once per test binary.
fn traced(name: &str, size: &str) -> PathBuf {
    traced_repeat(name, size, "1")
}

/// Traces workload `name` with 8 threads at `size`, its parallel part run `repeat`
/// times, once per test binary.
fn traced_repeat(name: &str, size: &str, repeat: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = BUILT.get_or_init(|| workloads::build(TDMAP, &scratch().join("build")));
    let trace = scratch().join(format!("{name}-{size}-{repeat}.trace"));
    if !trace.exists() {
        let out = Command::new(TDMAP)
            .args(["trace", "--force", "-o"])
            .arg(&trace)
            .arg("--")
            .arg(dir.join("tdmap").join(name))
            .args(["8", size, repeat])
            .env("OMP_WAIT_POLICY", "passive")
            .output()
            .expect("tdmap trace runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    trace
}

fn sim(trace: &Path, args: &[&str]) -> Output {
    Command::new(TDMAP)
        .arg("sim")
        .arg(trace)
        .args(args)
        .output()
        .expect("tdmap sim runs")
}

/// `tdmap sim --json` on the x7550: policy name -> (report, normalised figures).
fn results(trace: &Path, policies: &str) -> Vec<(String, Value)> {
    let out = sim(
        trace,
        &["--machine", MACHINE, "--policies", policies, "--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["simulated"], true);
    let text = String::from_utf8(out.stdout).unwrap();
    let typed = tdmap_format::from_str::<tdmap_sim::Comparison>(&text, trace).unwrap();
    assert_eq!(typed.results.len(), v["results"].as_array().unwrap().len());
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["policy"].as_str().unwrap().to_string(), r.clone()))
        .collect()
}

fn cycles(rs: &[(String, Value)], policy: &str) -> u64 {
    let r = &rs.iter().find(|(p, _)| p == policy).unwrap().1;
    r["report"]["cycles_max"].as_u64().unwrap()
}

/// The static policies best-static must never lose to (issue 18, item 1).
const STATIC: &str = "os,compact,scatter,random,interleave,worst";

/// Issue 18 must-show 1: on `rs`, best-static is no slower than any static policy.
fn assert_best_static_bounds(what: &str, rs: &[(String, Value)]) {
    let best = cycles(rs, "best-static");
    for p in STATIC.split(',') {
        let c = cycles(rs, p);
        assert!(best <= c, "{what}: best-static {best} > {p} {c} cycles");
    }
}

/// Issue 8 must-show 2: oracle ≤ kmaf ≤ os on every sharing-heavy workload, with kmaf at
/// least 5 % below os. The workloads repeat their pattern 16 times (1-3.5 M accesses),
/// as the iterative programs kMAF was measured on do: kMAF learns the sharing online,
/// after first touch has placed the data, and pays for its extra faults, so it needs a
/// run of some length to win. Run once (REPEAT 1), the traces last 5-12 ms of modelled
/// time and kmaf misses on stencil1d and stencil3d (crates/sim/README.md). Over 4
/// fresh traces each (release build, 2026-11-22): kmaf/os 0.20-0.92, oracle below kmaf by
/// 0.03-0.11.
#[test]
fn sharing_heavy_workloads_give_oracle_then_kmaf_then_os() {
    let cases = [
        ("stencil1d", "4"),
        ("stencil3d", "4"),
        ("pairs", "256"),
        ("alltoall", "128"),
        ("pipeline", "64"),
        ("cginit", "1024"),
        ("phase", "128"),
    ];
    for (name, size) in cases {
        // `oracle` is best-static's alias; the row is named best-static.
        let rs = results(
            &traced_repeat(name, size, "16"),
            &format!("{STATIC},kmaf,oracle"),
        );
        assert_best_static_bounds(name, &rs);
        let (os, kmaf, oracle) = (
            cycles(&rs, "os"),
            cycles(&rs, "kmaf"),
            cycles(&rs, "best-static"),
        );
        assert!(
            oracle <= kmaf && kmaf <= os,
            "{name}: oracle {oracle}, kmaf {kmaf}, os {os} cycles"
        );
        // Not a tie: mapping the sharing threads together must show on these patterns.
        assert!(
            kmaf * 20 < os * 19,
            "{name}: kmaf {kmaf} not 5% below os {os}"
        );
        let moved = rs.iter().find(|(p, _)| p == "kmaf").unwrap().1["report"]["thread_migrations"]
            .as_u64()
            .unwrap();
        assert!(moved > 0, "{name}: kmaf never remapped");
    }
}

/// ep has private data only, so where threads run does not matter: every mapping policy
/// (sammu included: it must not remap on the few sharing events of a reduction) is
/// within 3 % of os. The 3 % is not noise in the model (it is deterministic) but kMAF's
/// own cost: its extra faults may take 2 % of the threads' work (kMAF §5.4 measured under
/// 4 %), spread over the run by the sweep. `interleave` is a data policy that puts 3
/// pages in 4 on remote nodes by design, and `random` now randomises page homes as
/// kMAF's random mapping does (issue 18; it was os's placement with first touch): both
/// must be slower, not equal.
///
/// The claim is about the model, so the trace is a fixture (`ep 8 65536`, the command in
/// tests/fixtures/traces/README.md): on live traces numa-balancing went 1.00-1.14 of os
/// with the interleaving of the run traced (1.112 in a CI run beside other tests).
#[test]
fn private_only_ep_ties_every_mapping_policy() {
    let all = "os,compact,scatter,random,numa-balancing,sammu,kmaf,best-static,interleave,worst";
    let rs = results(&common::test_path("fixtures/traces/ep-8t.trace"), all);
    assert_best_static_bounds("ep", &rs);
    let os = cycles(&rs, "os") as f64;
    for (p, _) in &rs {
        let c = cycles(&rs, p) as f64;
        if p == "interleave" || p == "random" {
            assert!(c > os * 1.05, "{p} {c} vs os {os}");
        } else if p == "numa-balancing" {
            // Not a mapping policy but Linux's balancing, which since issue 18 acts: its
            // hinting faults, and the task it moves on its first faults with the pages
            // that follow it, cost it 1.00-1.07 of os on fresh ep traces of an idle
            // machine (a 6.6 % run: 2 task moves, 132 page moves), and up to 1.14 on
            // traces taken beside a busy loop, whose coarser interleaving gives it longer
            // runs of one thread's first faults to follow. On the fixture: 1.022 (5 page
            // moves). Held to the idle machine's bound again, as before the live traces.
            assert!(c <= os * 1.10, "{p}: {c} cycles vs os {os}");
        } else {
            assert!((c / os - 1.0).abs() <= 0.03, "{p}: {c} cycles vs os {os}");
        }
    }
}

/// Issue 18 must-show 1 on the traces the other tests do not check it on (they check
/// the seven REPEAT 16 workloads and ep): best-static ≤ every static policy.
#[test]
fn best_static_is_no_slower_than_any_static_policy_on_the_other_traces() {
    for (name, size) in [("pairs", "4096"), ("pipeline", "512")] {
        let rs = results(&traced(name, size), &format!("{STATIC},best-static"));
        assert_best_static_bounds(name, &rs);
    }
}

/// Issue 18 must-show 3: the papers' baselines run side by side on a master-initialised
/// trace, and numa-balancing acts there: its scans find cginit's pages, first touched by
/// the master, used from other nodes, and migrate them (it never moved a page on any of
/// 22 traces before). `random` is no longer `os`.
#[test]
fn the_papers_baselines_run_on_cginit_and_numa_balancing_moves_pages() {
    let trace = traced_repeat("cginit", "1024", "16");
    let list = "os,random,worst,kmaf,kmaf-threads,kmaf-data,numa-balancing,sammu,oracle";
    let rs = results(&trace, list);
    let names: Vec<&str> = rs.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "os",
            "random",
            "worst",
            "kmaf",
            "kmaf-threads",
            "kmaf-data",
            "numa-balancing",
            "sammu",
            "best-static"
        ]
    );
    let report = |p: &str| &rs.iter().find(|(n, _)| n == p).unwrap().1["report"];
    let moved = report("numa-balancing")["page_migrations"]
        .as_u64()
        .unwrap();
    assert!(moved > 0, "numa-balancing moved no page on cginit");
    assert!(
        report("numa-balancing")["injected_faults"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_ne!(report("random"), report("os"), "random is os again");
    assert!(cycles(&rs, "best-static") <= cycles(&rs, "worst"));
    let out = sim(&trace, &["--machine", MACHINE, "--policies", list]);
    let text = String::from_utf8_lossy(&out.stdout);
    // Inter-chip traffic is an amount next to its ratio, never a bare ratio.
    for row in text.lines().skip(2).take(names.len()) {
        assert!(row.contains("iB("), "{row}");
        assert!(row.contains("J("), "an energy column: {row}");
        assert_eq!(
            row.split_whitespace().count(),
            8,
            "one word per column: {row}"
        );
    }
}

/// Issue 18 item 4: on the FFT-like all-to-all transpose, sammu is within 2 % of os or
/// better. Every page of the matrix being read is read by every thread, and in a trace of
/// 8 threads on this machine's 2 cores each thread's column walk comes in a burst: with
/// each notification migrated at once, each burst pulled pages to the walking thread's
/// node, and greedy kept permuting the threads on the noisy uniform matrix (1.095-1.144
/// of os on `alltoall 8 128` traces; 1.89 with 1,323 page migrations at 256, now 1.06).
/// `crates/sim/tests/sammu_alltoall.rs` checks the same on synthetic streams.
///
/// Not on a single run of the pattern (`alltoall 8 N 1`), where the paper has no rule
/// that would keep sammu within 2 % (crates/sim/README.md, `sammu`): at N = 128 the one
/// remap packs the threads onto one package at 84-87 % of the run, too late to pay back
/// (0.987-1.032 of os over 3 traces, 0-1 page migrations); at 192 and 256 each thread's
/// whole step comes as one burst in a trace of 8 threads on 2 cores, and Eq. 6 moves the
/// matrix it reads to the burst's node in batches (0.99-1.35, up to 838 migrations).
/// From two runs on (0.91-0.95 of os over 4 traces; 0.83-0.87 at 4) the pages follow.
#[test]
fn sammu_is_within_2_percent_of_os_on_the_all_to_all_transpose() {
    for repeat in ["2", "16"] {
        let rs = results(&traced_repeat("alltoall", "128", repeat), "os,sammu");
        let (os, sammu) = (cycles(&rs, "os"), cycles(&rs, "sammu"));
        let report = &rs.iter().find(|(p, _)| p == "sammu").unwrap().1["report"];
        assert!(
            sammu as f64 <= os as f64 * 1.02,
            "alltoall 128 x{repeat}: sammu {sammu} cycles, os {os}; {} page and {} thread migrations",
            report["page_migrations"],
            report["thread_migrations"]
        );
    }
}

#[test]
fn same_trace_machine_and_seed_give_identical_output() {
    let trace = traced("pipeline", "512");
    let args = [
        "--machine",
        MACHINE,
        "--policies",
        "os,kmaf,sammu,oracle",
        "--seed",
        "7",
    ];
    let a = sim(&trace, &args);
    let b = sim(&trace, &args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout, "two runs differ");
    let mut json = args.to_vec();
    json.push("--json");
    assert_eq!(sim(&trace, &json).stdout, sim(&trace, &json).stdout);
}

#[test]
fn the_table_says_simulated_and_the_plot_is_a_png() {
    let trace = traced("pairs", "4096");
    let png = scratch().join("pairs.png");
    let out = sim(
        &trace,
        &["--machine", MACHINE, "--policies", "kmaf,oracle", "--plot"],
    );
    assert_eq!(out.status.code(), Some(2), "--plot needs a path");
    let out = Command::new(TDMAP)
        .arg("sim")
        .arg(&trace)
        .args(["--machine", MACHINE, "--policies", "kmaf,oracle", "--plot"])
        .arg(&png)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("SIMULATED"), "{text}");
    let rows: Vec<&str> = text.lines().skip(2).take(3).collect();
    // `oracle` is accepted and its row is best-static, which names its winner below.
    assert!(
        rows[0].starts_with("os ")
            && rows[1].starts_with("kmaf")
            && rows[2].starts_with("best-static")
    );
    assert!(text.contains("best-static = "), "{text}");
    assert!(rows[0].contains("1.000"), "os is the baseline: {}", rows[0]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
}

fn bad(trace: &Path, args: &[&str], says: &str) {
    let out = sim(trace, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("tdmap: ") && err.contains(says), "{err}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let trace = traced("pairs", "4096");
    let m = ["--machine", MACHINE];
    bad(Path::new("/nonexistent/x.trace"), &m, "x.trace");
    let junk = scratch().join("junk.trace");
    std::fs::write(&junk, b"not a trace at all, just some bytes").unwrap();
    bad(&junk, &m, "junk.trace");
    // A trace damaged in the middle of its frames (a cut one is Incomplete, not bad:
    // tests/trace_incomplete.rs).
    let cut = scratch().join("cut.trace");
    let mut full = std::fs::read(&trace).unwrap();
    let mid = full.len() / 2;
    full[mid..mid + 64].fill(0x5a);
    std::fs::write(&cut, &full).unwrap();
    bad(&cut, &m, "cut.trace");
    bad(
        &trace,
        &["--machine", MACHINE, "--policies", "os,nope"],
        "unknown policy",
    );
    bad(&trace, &["--machine", "no-such-machine"], "no-such-machine");
    let small = ["--machine", "package:1 core:2 pu:1"];
    bad(&trace, &small, "--oversubscribe");
    let trace_s = trace.to_str().unwrap();
    bad(
        &trace,
        &["--machine", MACHINE, "--plot", trace_s],
        "would overwrite the trace",
    );
    bad(
        &trace,
        &["--machine", MACHINE, "--plot", "/nonexistent/dir/x.png"],
        "--plot",
    );
    let mut over = small.to_vec();
    over.extend(["--oversubscribe", "--policies", "kmaf,oracle"]);
    let out = sim(&trace, &over);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 16 must-show 6: the simulator offers tdmap run's loop under both rule sets, and
/// kMAF Fig. 11's variants, each a row of its own.
#[test]
fn kmaf_and_kmaf_paper_are_both_rows() {
    let trace = traced("pairs", "4096");
    let policies = "kmaf,kmaf-paper,kmaf-threads,kmaf-data";
    let out = sim(&trace, &["--machine", MACHINE, "--policies", policies]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for p in policies.split(',') {
        assert!(
            text.lines().any(|l| l.split_whitespace().next() == Some(p)),
            "no {p} row: {text}"
        );
    }
}

/// Issue 18 item 8: `tdmap analyze --sim` prints the gain `tdmap sim` shows for
/// best-static over os on the same trace and machine, and the potential it stands for
/// (high from 5 %, low under 2 %), beside the metrics' verdict.
#[test]
fn analyze_sim_prints_the_gain_tdmap_sim_shows() {
    for (name, size) in [("pairs", "128"), ("ep", "4096")] {
        let trace = traced(name, size);
        let rs = results(&trace, "oracle");
        let gain = 1.0 - cycles(&rs, "best-static") as f64 / cycles(&rs, "os") as f64;
        let out = Command::new(TDMAP)
            .arg("analyze")
            .arg(&trace)
            .args(["--machine", MACHINE, "--sim", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.starts_with("{\n  \"format\": \"tdmap-analyze\""),
            "{text}"
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        let s = &v["simulated"];
        assert!(
            (s["gain"].as_f64().unwrap() - gain).abs() < 1e-12,
            "{name}: {s} vs {gain}"
        );
        let expected = match gain {
            g if g >= 0.05 => "high potential",
            g if g < 0.02 => "low potential",
            _ => "moderate potential",
        };
        assert_eq!(s["potential"], expected, "{name}: {s}");
        // The file still reads as an analyze report (tdmap run --reference).
        tdmap_format::from_str::<tdmap_sharing::AnalyzeReport>(&text, &trace).unwrap();
        let out = Command::new(TDMAP)
            .arg("analyze")
            .arg(&trace)
            .args(["--machine", MACHINE, "--sim"])
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("simulated:"))
            .expect(&text);
        assert!(
            line.contains(expected) && line.contains("SIMULATED"),
            "{line}"
        );
        assert!(text.contains("(access-weighted, Eq. 4)"), "{text}");
    }
}

/// A trace too short for the 100 ms period gets a period cut to fit 20 periods, and the
/// text output says what that does to the online policies' figures; a period the user
/// chose, or --json, does not.
#[test]
fn a_cut_period_is_told_in_the_text_output() {
    let trace = traced("pairs", "4096");
    let run = |args: &[&str]| {
        let out = sim(
            &trace,
            &[&["--machine", MACHINE, "--policies", "os"], args].concat(),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stderr).unwrap()
    };
    let cut = run(&[]);
    assert_eq!(cut.lines().count(), 1, "{cut}");
    assert!(
        cut.starts_with("tdmap: note: a short trace: online policies act every ")
            && cut.contains(" instead of 100 ms"),
        "{cut}"
    );
    assert_eq!(run(&["--period-ms", "100"]), "");
    assert_eq!(run(&["--json"]), "");
}

/// A reader that closed the pipe (`tdmap sim ... | head`) is no error (STYLE.md): the
/// table and the JSON go out by writes whose broken pipe ends tdmap quietly with 0, not
/// by a print that panics (exit 101 and a backtrace, before).
#[test]
fn a_closed_stdout_pipe_is_no_error() {
    let trace = traced("pipeline", "512");
    for json in [false, true] {
        let mut cmd = Command::new(TDMAP);
        cmd.arg("sim").arg(&trace);
        cmd.args(["--machine", MACHINE, "--policies", "os,compact"]);
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Nobody reads: every write to stdout fails with EPIPE.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "json {json}: {err}");
        assert_eq!(out.status.code(), Some(0), "json {json}: {err}");
    }
}
