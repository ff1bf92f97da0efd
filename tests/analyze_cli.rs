//! `tdmap analyze` and `tdmap trace-check` run as a user would, on traces written here:
//! good traces give reports, damaged ones exit 2 with one line naming the byte offset.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use tdmap_sharing::patterns::{accesses, Pattern};
use tdmap_trace::{Header, TraceStatus, Writer};

fn tdmap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(args)
        .output()
        .unwrap()
}

fn dir() -> common::TempDir {
    common::TempDir::new("tdmap-cli")
}

/// A trace writer at `path` for `threads` threads of `program`, traced on the x7550.
fn writer(path: &Path, program: &str, threads: u32) -> Writer {
    let mut h = Header::new(vec![program.into()], "xeon-x7550-4s");
    h.threads = threads;
    Writer::create(path, h).unwrap()
}

/// An 8-thread trace of `p`.
fn trace(p: Pattern, path: &Path) {
    let w = writer(path, "gen", 8);
    for (t, v) in accesses(p, 8, 50, 64, 3, 0) {
        w.append_accesses(t, &v).unwrap();
    }
    w.finish(TraceStatus::Complete).unwrap();
}

fn assert_one_line_exit_2(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("tdmap: "), "{err}");
    assert!(err.contains(needle), "{err} should contain {needle}");
}

#[test]
fn corrupted_trace_exits_2_naming_the_byte_offset() {
    let d = dir();
    let p = d.join("t.trace");
    trace(Pattern::Pairs, &p);
    let mut b = std::fs::read(&p).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0xff;
    std::fs::write(&p, &b).unwrap();
    let out = tdmap(&["analyze", p.to_str().unwrap(), "--machine", "xeon-x7550-4s"]);
    assert_one_line_exit_2(&out, "at byte ");
    let chk = tdmap(&["trace-check", p.to_str().unwrap()]);
    assert_eq!(chk.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&chk.stdout).contains("PROBLEM at byte"));
}

#[test]
fn wrong_version_and_undercounted_threads_exit_2() {
    let d = dir();
    let p = d.join("t.trace");
    trace(Pattern::Pairs, &p);
    let good = std::fs::read(&p).unwrap();
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    // A cut file is no longer an error but an Incomplete trace (tests/trace_incomplete.rs).
    let cases: [(&str, Damage, &str); 2] = [
        (
            "version",
            Box::new(|b: &mut Vec<u8>| b[8] = 7),
            "version 7 at byte 8",
        ),
        (
            "threads",
            Box::new(|b: &mut Vec<u8>| b[16..20].copy_from_slice(&7u32.to_le_bytes())),
            "thread id 7 but the header says 7 threads",
        ),
    ];
    for (name, damage, needle) in cases {
        let mut b = good.clone();
        damage(&mut b);
        let q = d.join(name);
        std::fs::write(&q, b).unwrap();
        assert_one_line_exit_2(
            &tdmap(&["analyze", q.to_str().unwrap(), "--machine", "xeon-x7550-4s"]),
            needle,
        );
    }
}

#[test]
fn missing_trace_and_bad_heatmap_name_exit_2() {
    assert_one_line_exit_2(
        &tdmap(&["analyze", "/nonexistent/x.trace"]),
        "/nonexistent/x.trace",
    );
    assert_one_line_exit_2(
        &tdmap(&["trace-check", "/nonexistent/x.trace"]),
        "/nonexistent/x.trace",
    );
    let d = dir();
    let p = d.join("t.trace");
    trace(Pattern::Pairs, &p);
    let h = d.join("h.jpg");
    let out = tdmap(&[
        "analyze",
        p.to_str().unwrap(),
        "--machine",
        "xeon-x7550-4s",
        "--heatmap",
        h.to_str().unwrap(),
    ]);
    assert_one_line_exit_2(&out, ".png or .svg");
    let out = tdmap(&[
        "analyze",
        p.to_str().unwrap(),
        "--machine",
        "xeon-x7550-4s",
        "--heatmap",
        p.to_str().unwrap(),
    ]);
    assert_one_line_exit_2(&out, "overwrite the trace");
    assert!(
        tdmap(&["trace-check", p.to_str().unwrap()])
            .status
            .success(),
        "the trace is intact"
    );
}

#[test]
fn analyze_pairs_reports_pairs_and_writes_png_and_svg() {
    let d = dir();
    let p = d.join("t.trace");
    trace(Pattern::Pairs, &p);
    let png = d.join("m.png");
    let svg = d.join("m.svg");
    let out = tdmap(&[
        "analyze",
        p.to_str().unwrap(),
        "--machine",
        "xeon-x7550-4s",
        "--json",
        "--heatmap",
        png.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["threads"], 8);
    assert_eq!(v["nodes"], 4);
    for pair in v["top_pairs"].as_array().unwrap() {
        assert_eq!(
            pair[0].as_u64().unwrap() / 2,
            pair[1].as_u64().unwrap() / 2,
            "{pair}"
        );
    }
    assert_eq!(v["top_pairs"].as_array().unwrap().len(), 4);
    assert!(v["accesses"]["heterogeneity"].as_f64().unwrap() > 0.05);
    assert_eq!(v["data"][0]["page_size"], 4096);
    assert_eq!(v["data"][0]["avg_exclusivity"], 1.0);
    assert_eq!(v["data"][1]["page_size"], 2 << 20);
    assert!(v["verdict_threads"]
        .as_str()
        .unwrap()
        .starts_with("high potential"));
    let img = std::fs::read(&png).unwrap();
    assert_eq!(&img[..8], b"\x89PNG\r\n\x1a\n");
    let out = tdmap(&[
        "analyze",
        p.to_str().unwrap(),
        "--machine",
        "xeon-x7550-4s",
        "--page-size",
        "2M",
        "--metric",
        "amount",
        "--heatmap",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2.0M pages"), "{text}");
    assert!(!text.contains("4.0K pages"), "{text}");
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}

#[test]
fn trace_check_prints_counts_as_text_and_json() {
    let d = dir();
    let p = d.join("t.trace");
    trace(Pattern::AllToAll, &p);
    let out = tdmap(&["trace-check", p.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("accesses  25600 (0 writes)"), "{text}");
    assert!(text.trim_end().ends_with("ok"));
    let out = tdmap(&["trace-check", "--json", p.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["accesses"], 25600);
    assert_eq!(v["per_thread"].as_array().unwrap().len(), 8);
    assert!(v["problems"].as_array().unwrap().is_empty());
}

fn analyze_json(p: &Path) -> serde_json::Value {
    let out = tdmap(&[
        "analyze",
        p.to_str().unwrap(),
        "--machine",
        "xeon-x7550-4s",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What tdmap run --reference reads back: the typed report, header checked.
    let text = String::from_utf8(out.stdout).unwrap();
    let typed = tdmap_format::from_str::<tdmap_sharing::AnalyzeReport>(&text, p);
    assert_eq!(typed.unwrap().format, "tdmap-analyze");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn verdicts_follow_kmaf_section_2_3() {
    let d = dir();
    let p = d.join("t.trace");
    trace(Pattern::AllToAll, &p);
    let v = analyze_json(&p);
    assert!(
        v["verdict_threads"]
            .as_str()
            .unwrap()
            .contains("all threads share alike"),
        "{v}"
    );
    assert!(v["variation"].as_f64().unwrap() < 0.5);
    trace(Pattern::AllPrivate, &p);
    let v = analyze_json(&p);
    assert!(
        v["verdict_threads"]
            .as_str()
            .unwrap()
            .starts_with("no potential"),
        "{v}"
    );
    assert!(
        v["verdict_data"]
            .as_str()
            .unwrap()
            .contains("fits mostly in the caches"),
        "{v}"
    );
}

#[test]
fn page_fault_traces_use_kmaf_sub_blocks_and_their_own_nodes() {
    use tdmap_trace::Fault;
    let d = dir();
    let p = d.join("f.trace");
    let w = writer(&p, "faults", 2);
    // Both threads fault on the same 1 KiB sub-block, from nodes 1 and 3.
    for (t, node) in [(0u32, 1u32), (1, 3), (0, 1), (1, 3)] {
        let f = Fault {
            thread: t,
            addr: 0x5000 + 8 * t as u64,
            cpu: node * 16,
            node,
            time: 1,
        };
        w.append_faults(t, &[f]).unwrap();
    }
    w.finish(TraceStatus::Complete).unwrap();
    let v = analyze_json(&p);
    assert_eq!(v["table"]["sub_block"], 1024);
    assert_eq!(v["top_pairs"][0], serde_json::json!([0, 1, 3]), "{v}");
    assert_eq!(v["data"][0]["avg_exclusivity"], 0.5, "NV = [0, 2, 0, 2]");
    // On a 2-node machine node 3 does not exist: bad input, exit 2.
    let out = tdmap(&[
        "analyze",
        p.to_str().unwrap(),
        "--machine",
        "package:2 numa:1 core:2",
    ]);
    assert_one_line_exit_2(&out, "NUMA node 3");
}

#[test]
fn block_sets_the_sharing_granularity_and_json_carries_the_matrix() {
    let d = dir();
    let p = d.join("b.trace");
    let w = writer(&p, "lines", 2);
    // Thread 0 touches the first line of a 1 KiB block, thread 1 the last one.
    for (thread, addr) in [(0u32, 0x10000u64), (1, 0x10000 + 1024 - 64)] {
        let a = tdmap_trace::Access {
            thread,
            addr,
            size: 8,
            write: false,
            time: 1 + thread as u64,
        };
        w.append_accesses(thread, &[a]).unwrap();
    }
    w.finish(TraceStatus::Complete).unwrap();
    let json = |block: Option<&str>| {
        let mut args = vec![
            "analyze",
            p.to_str().unwrap(),
            "--metric",
            "amount",
            "--json",
        ];
        args.extend(block.map(|b| ["--block", b]).into_iter().flatten());
        let out = tdmap(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let lines = json(None);
    assert_eq!(lines["table"]["sub_block"], 64);
    assert_eq!(
        lines["matrix"],
        serde_json::json!({"n": 2, "cells": [64, 0, 0, 64]})
    );
    let blocks = json(Some("1K"));
    assert_eq!(blocks["table"]["sub_block"], 1024);
    assert_eq!(
        blocks["matrix"],
        serde_json::json!({"n": 2, "cells": [1024, 1024, 1024, 0]}),
        "thread 1 joins thread 0's block: 1 KiB shared"
    );
    for bad in ["3", "8K", "x"] {
        let out = tdmap(&["analyze", p.to_str().unwrap(), "--block", bad]);
        assert_one_line_exit_2(&out, "invalid block size");
    }
}

/// Regression: `analyze` and `map --trace` printed "X: X: No such file or directory (os
/// error 2): No such file or directory (os error 2)": the name was prefixed to an error
/// that names it, and the OS error was both in the message and in the chain.
#[test]
fn a_missing_trace_is_named_once_with_its_os_error_once() {
    let missing = "/nonexistent-tdmap-dir/missing.trace";
    for args in [
        vec!["analyze", missing],
        vec!["map", "--trace", missing],
        vec!["sim", missing],
    ] {
        let out = tdmap(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert_eq!(err.matches(missing).count(), 1, "{args:?}: {err}");
        assert_eq!(err.matches("(os error 2)").count(), 1, "{args:?}: {err}");
    }
}
