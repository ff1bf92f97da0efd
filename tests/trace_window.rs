//! Issue 17 item 6: `tdmap trace --window N:M` records N ms of every M ms and only
//! counts the accesses in between. A windowed trace of an iterative workload (mg: its
//! neighbour exchange recurs every V-cycle) records a clearly smaller share of the
//! accesses, still checks and analyses, and its sharing matrix follows the full trace's.

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use tdmap_sharing::SharingMatrix;
use tdmap_trace::{Event, Reader};

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");

fn scratch() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace-window")
}

/// The `tdmap cc` build of mg.
fn build() -> PathBuf {
    common::tdmap_cc_workload(&scratch().join("build"), "mg")
}

/// Traces `mg 8 32 12` with `flags`; returns the trace and the JSON summary, after
/// checking the trace's invariants.
fn trace(name: &str, prog: &Path, flags: &[&str]) -> (PathBuf, serde_json::Value) {
    let t = scratch().join(format!("{name}.trace"));
    let out = Command::new(TDMAP)
        .args(["trace", "--force", "--json", "-o"])
        .arg(&t)
        .args(flags)
        .arg("--")
        .arg(prog)
        .args(["8", "32", "12"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name}: {err}");
    let json = serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap();
    let check = common::tdmap(&["trace-check", t.to_str().unwrap()]);
    assert!(check.status.success(), "{name}: {check:?}");
    (t, json)
}

/// The amount metric's sharing matrix, as `tdmap analyze --json` gives it.
fn matrix(trace: &Path) -> SharingMatrix {
    let out = common::tdmap(&[
        "analyze",
        "--json",
        "--metric",
        "amount",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &json["matrix"];
    let cells = m["cells"].as_array().unwrap().iter();
    let cells = cells.map(|c| c.as_u64().unwrap()).collect();
    SharingMatrix::from_rows(m["n"].as_u64().unwrap() as usize, cells).unwrap()
}

/// The pages the trace's accesses touch and its first-touch records, as page sets
/// (the first-touch count, which must equal its set's size, separately).
fn pages_and_first_touches(trace: &Path) -> (HashSet<u64>, HashSet<u64>, usize) {
    let rd = Reader::open(trace).unwrap();
    let mask = !(rd.header().page_size as u64 - 1);
    let (mut pages, mut touched, mut faults) = (HashSet::new(), HashSet::new(), 0);
    for ev in rd.events() {
        match ev.unwrap() {
            Event::Access(a) => {
                pages.insert(a.addr & mask);
            }
            Event::Fault(f) => {
                touched.insert(f.addr & mask);
                faults += 1;
            }
        }
    }
    (pages, touched, faults)
}

/// Accesses recorded (records, filtered, collapsed reads) over accesses made.
fn recorded_share(j: &serde_json::Value) -> f64 {
    let n = |k: &str| j[k].as_u64().unwrap_or_else(|| panic!("{k} in {j}")) as f64;
    (n("accesses") + n("filtered") + n("collapsed_reads")) / n("accesses_made")
}

#[test]
fn a_windowed_trace_records_a_share_of_the_accesses_and_keeps_the_matrix() {
    let _ = std::fs::create_dir_all(scratch());
    let prog = build();
    let (full_t, full_j) = trace("full", &prog, &[]);
    let (win_t, win_j) = trace("window", &prog, &["--window", "5:20"]);
    let (full, win) = (recorded_share(&full_j), recorded_share(&win_j));
    eprintln!(
        "recorded share: full {full:.3}, --window 5:20 {win:.3} over {} windows",
        win_j["windows"]
    );
    assert_eq!(full_j["window"], serde_json::Value::Null, "{full_j}");
    assert_eq!(full_j["windows"], 1, "{full_j}");
    assert!(full > 0.99, "a full trace records every access: {full_j}");
    assert_eq!(win_j["window"], "5:20", "{win_j}");
    assert!(win_j["windows"].as_u64().unwrap() >= 2, "{win_j}");
    // 5 ms of 20 records a quarter of the time; recording is slower than counting, so
    // less than a quarter of the accesses, but a loaded machine can stretch a window.
    assert!(win > 0.0 && win < 0.6, "recorded share {win:.3}: {win_j}");
    assert_eq!(
        win_j["threads"], 8,
        "the window helper is not a traced thread"
    );
    // Every page the recorded accesses touch has exactly one first-touch record, windowed
    // or not: the runtime's fast path skips the first-touch step only for pages already
    // touched, and counting between windows leaves the first-touch bitmap alone.
    for t in [&full_t, &win_t] {
        let (pages, touched, faults) = pages_and_first_touches(t);
        assert_eq!(faults, touched.len(), "{t:?}: a page has two first touches");
        let missing = pages.difference(&touched).count();
        let extra = touched.difference(&pages).count();
        assert!(
            missing == 0 && extra == 0,
            "{t:?}: of {} pages, {missing} have no first touch, {extra} first touches name no accessed page",
            pages.len()
        );
    }
    let sim = tdmap_sharing::similarity(&matrix(&win_t), &matrix(&full_t)).unwrap();
    eprintln!("similarity to the full trace: {sim:?}");
    assert!(sim.value >= 0.9, "{sim:?}");
}

#[test]
fn a_window_must_be_n_of_m_whole_milliseconds_with_n_at_most_m() {
    for (bad, flags) in [
        ("0:20", &[][..]),
        ("21:20", &[]),
        ("5", &[]),
        ("1.5:20", &[]),
        ("a:b", &[]),
        ("5:20", &["--count-only"]),
    ] {
        let mut args = vec!["trace", "--window", bad];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "/bin/true"]);
        let out = common::tdmap(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad} {flags:?}: {err}");
        assert!(
            err.starts_with("tdmap: ") && err.trim_end().lines().count() == 1,
            "{bad} {flags:?}: {err}"
        );
    }
}
