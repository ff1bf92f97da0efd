//! Outputs never destroy inputs (issue 21, item 1): every overwrite the adversarial test
//! found exits 2 with one line before any work, leaving the file byte for byte as it
//! was; a symlink planted at an output's name is replaced or refused, never followed;
//! and an existing output that is no input is still replaced, so reruns keep working.

mod common;

use common::{assert_bad_input, cargo_build, tdmap};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tdmap_sharing::patterns::{accesses, Pattern};
use tdmap_trace::{Header, TraceStatus, Writer};

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");

/// A fresh folder for one test.
fn dir(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("outputs-tests")
        .join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `bytes` at `path` and returns them, to compare the file with afterwards.
fn file(path: &Path, bytes: &[u8]) -> Vec<u8> {
    std::fs::write(path, bytes).unwrap();
    bytes.to_vec()
}

/// A copy of `true` at `path`: a program whose loss would be noticed.
fn program(path: &Path) -> Vec<u8> {
    let exe = std::fs::read("/usr/bin/true").unwrap();
    std::fs::write(path, &exe).unwrap();
    let mut perm = std::fs::metadata(path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(path, perm).unwrap();
    exe
}

/// An 8-thread trace at `path`; its bytes.
fn trace(path: &Path) -> Vec<u8> {
    let mut h = Header::new(vec!["gen".into()], "xeon-x7550-4s");
    h.threads = 8;
    let w = Writer::create(path, h).unwrap();
    for (t, v) in accesses(Pattern::Pairs, 8, 50, 64, 3, 0) {
        w.append_accesses(t, &v).unwrap();
    }
    w.finish(TraceStatus::Complete).unwrap();
    std::fs::read(path).unwrap()
}

/// Runs tdmap in `cwd` with `args`.
fn tdmap_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(TDMAP)
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

fn assert_unchanged(path: &Path, before: &[u8]) {
    let after = std::fs::read(path).unwrap();
    assert!(after == before, "{} changed", path.display());
}

fn assert_ok(out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {err}", out.status);
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The measured failure: `cp pairs gprog; tdmap run --report gprog -- ./gprog 2` left a
/// text file where the program was. Also through PATH, as exec finds it.
#[test]
fn run_report_over_the_program_exits_2_and_keeps_it() {
    let d = dir("program");
    let exe = program(&d.join("gprog"));
    let out = tdmap_in(&d, &["run", "--report", "gprog", "--", "./gprog", "2"]);
    assert_bad_input(&out, "--report gprog would overwrite the program ./gprog");
    assert_unchanged(&d.join("gprog"), &exe);
    let path = format!("{}:/usr/bin:/bin", d.display());
    let out = Command::new(TDMAP)
        .env("PATH", path)
        .args(["run", "--report", s(&d.join("gprog")), "--", "gprog"])
        .output()
        .unwrap();
    assert_bad_input(&out, "would overwrite the program");
    assert_unchanged(&d.join("gprog"), &exe);
}

#[test]
fn run_report_over_the_mapping_exits_2_and_keeps_it() {
    let d = dir("mapping");
    let m = file(&d.join("map.json"), b"{\"mapping\": []}\n");
    let p = s(&d.join("map.json")).to_string();
    let out = tdmap(&["run", "--mapping", &p, "--report", &p, "--", "true"]);
    assert_bad_input(&out, "would overwrite --mapping");
    assert_unchanged(&d.join("map.json"), &m);
}

#[test]
fn run_report_over_the_reference_exits_2_and_keeps_it() {
    let d = dir("reference");
    let r = file(&d.join("ref.json"), b"{\"threads\": 2}\n");
    // Another name for the same file: the check goes by inode.
    std::fs::hard_link(d.join("ref.json"), d.join("also.json")).unwrap();
    let out = tdmap(&[
        "run",
        "--reference",
        s(&d.join("ref.json")),
        "--report",
        s(&d.join("also.json")),
        "--",
        "true",
    ]);
    assert_bad_input(&out, "would overwrite --reference");
    assert_unchanged(&d.join("ref.json"), &r);
}

/// A trace is no input of `tdmap run`, but a report or image never replaces one.
#[test]
fn run_report_over_a_trace_exits_2_and_keeps_it() {
    let d = dir("trace");
    let t = trace(&d.join("t.trace"));
    let out = tdmap(&["run", "--report", s(&d.join("t.trace")), "--", "true"]);
    assert_bad_input(&out, "would overwrite a tdmap trace");
    assert_unchanged(&d.join("t.trace"), &t);
}

#[test]
fn run_heatmap_over_the_mapping_exits_2_and_keeps_it() {
    let d = dir("heatmap-mapping");
    let m = file(&d.join("m.svg"), b"{\"mapping\": []}\n");
    let out = tdmap_in(
        &d,
        &[
            "run",
            "--heatmap",
            "m.svg",
            "--mapping",
            "m.svg",
            "--",
            "true",
        ],
    );
    assert_bad_input(&out, "--heatmap m.svg would overwrite --mapping m.svg");
    assert_unchanged(&d.join("m.svg"), &m);
}

/// Two outputs on one file, existing or not yet (then by folder and name).
#[test]
fn run_report_and_heatmap_on_one_file_exit_2() {
    let d = dir("two-outputs");
    let out = tdmap_in(
        &d,
        &[
            "run",
            "--report",
            "x.svg",
            "--heatmap",
            "./x.svg",
            "--",
            "true",
        ],
    );
    assert_bad_input(
        &out,
        "--report x.svg and --heatmap ./x.svg are the same file",
    );
    assert!(!d.join("x.svg").exists(), "nothing was written");
    let x = file(&d.join("x.svg"), b"<svg>an older chart</svg>\n");
    let out = tdmap_in(
        &d,
        &[
            "run",
            "--report",
            "x.svg",
            "--heatmap",
            "x.svg",
            "--",
            "true",
        ],
    );
    assert_bad_input(&out, "are the same file");
    assert_unchanged(&d.join("x.svg"), &x);
}

/// The trace is an input of analyze and sim, by inode: a symlink to it is refused too.
#[test]
fn analyze_heatmap_and_sim_plot_over_the_trace_exit_2() {
    let d = dir("analyze-sim");
    let t = trace(&d.join("t.trace"));
    symlink(d.join("t.trace"), d.join("t.svg")).unwrap();
    let m = ["--machine", "xeon-x7550-4s"];
    let heatmap = ["analyze", "t.trace", "--heatmap", "t.svg"];
    let out = tdmap_in(&d, &[&heatmap[..], &m].concat());
    assert_bad_input(&out, "--heatmap t.svg would overwrite the trace t.trace");
    let plot = ["sim", "t.trace", "--plot", "t.svg"];
    let out = tdmap_in(&d, &[&plot[..], &m].concat());
    assert_bad_input(&out, "--plot t.svg would overwrite the trace t.trace");
    assert_unchanged(&d.join("t.trace"), &t);
}

/// An hwloc XML `--machine` is an input too.
#[test]
fn analyze_heatmap_over_the_machine_file_exits_2() {
    let d = dir("machine-xml");
    trace(&d.join("t.trace"));
    let xml = file(&d.join("m.xml"), b"<?xml version=\"1.0\"?>\n<topology/>\n");
    let args = [
        "analyze",
        "t.trace",
        "--machine",
        "m.xml",
        "--heatmap",
        "m.xml",
    ];
    assert_bad_input(&tdmap_in(&d, &args), "would overwrite --machine m.xml");
    assert_unchanged(&d.join("m.xml"), &xml);
}

/// Even with --force, `tdmap trace -o` never replaces the program it traces.
#[test]
fn trace_output_over_the_program_exits_2_even_with_force() {
    let d = dir("trace-program");
    let exe = program(&d.join("prog"));
    let out = tdmap_in(&d, &["trace", "--force", "-o", "prog", "--", "./prog"]);
    assert_bad_input(&out, "-o prog would overwrite the program ./prog");
    assert_unchanged(&d.join("prog"), &exe);
}

/// A dangling symlink planted at the output's name got around the "exists" check: the
/// trace went to wherever it pointed.
#[test]
fn trace_refuses_a_planted_dangling_symlink_without_force() {
    let d = dir("trace-dangling");
    program(&d.join("prog"));
    symlink(d.join("victim"), d.join("out.trace")).unwrap();
    let out = tdmap_in(&d, &["trace", "-o", "out.trace", "--", "./prog"]);
    assert_bad_input(&out, "exists; pass --force");
    assert!(!d.join("victim").exists(), "the link was followed");
}

/// With --force, the link itself is replaced by the trace; its target is left alone.
#[test]
fn trace_force_replaces_a_planted_symlink_not_its_target() {
    let d = dir("trace-force-link");
    let exe = tdmap_cc(&d);
    let v = file(&d.join("victim"), b"someone else's file\n");
    symlink(d.join("victim"), d.join("out.trace")).unwrap();
    let out = tdmap_in(&d, &["trace", "--force", "-o", "out.trace", "--", s(&exe)]);
    assert_ok(&out);
    assert_unchanged(&d.join("victim"), &v);
    let meta = d.join("out.trace").symlink_metadata().unwrap();
    assert!(meta.is_file(), "the link was replaced by the trace");
    assert_ok(&tdmap(&["trace-check", s(&d.join("out.trace"))]));
}

/// A small program built with `tdmap cc` in `d`.
fn tdmap_cc(d: &Path) -> PathBuf {
    cargo_build("tdmap-rt");
    let src = d.join("touch.c");
    std::fs::write(
        &src,
        "#include <stdlib.h>\nint main(void) { volatile int *a = malloc(1 << 16);\n\
         for (int i = 0; i < (1 << 14); i++) a[i] = i; return 0; }\n",
    )
    .unwrap();
    let exe = d.join("touch");
    assert_ok(&tdmap(&["cc", "-O1", "-o", s(&exe), s(&src)]));
    exe
}

/// `--report` on a planted symlink: the report replaces the link, the target (existing
/// or not) is untouched.
#[test]
fn run_report_replaces_a_planted_symlink_not_its_target() {
    let d = dir("run-link");
    let v = file(&d.join("victim"), b"someone else's file\n");
    symlink(d.join("victim"), d.join("r.txt")).unwrap();
    symlink(d.join("nothing"), d.join("dangling.txt")).unwrap();
    for link in ["r.txt", "dangling.txt"] {
        assert_ok(&tdmap_in(&d, &["run", "--report", link, "--", "true"]));
        let meta = d.join(link).symlink_metadata().unwrap();
        assert!(meta.is_file(), "{link} was replaced by the report");
        let text = std::fs::read_to_string(d.join(link)).unwrap();
        assert!(
            text.starts_with("== tdmap run: true exited with 0"),
            "{text}"
        );
    }
    assert_unchanged(&d.join("victim"), &v);
    assert!(
        !d.join("nothing").exists(),
        "the dangling link was followed"
    );
}

/// An existing output that is no input is replaced, as `make demo` needs on a rerun.
#[test]
fn an_existing_output_that_is_no_input_is_replaced() {
    let d = dir("replace");
    file(&d.join("r.json"), b"an old report\n");
    file(&d.join("m.svg"), b"an old heatmap\n");
    let out = tdmap_in(
        &d,
        &[
            "run",
            "--json",
            "--report",
            "r.json",
            "--heatmap",
            "m.svg",
            "--",
            "true",
        ],
    );
    assert_ok(&out);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(report["exit_code"], 0, "{report}");
    assert!(std::fs::read_to_string(d.join("m.svg"))
        .unwrap()
        .starts_with("<svg"));
    trace(&d.join("t.trace"));
    file(&d.join("a.svg"), b"an old heatmap\n");
    let m = ["--machine", "xeon-x7550-4s"];
    assert_ok(&tdmap_in(
        &d,
        &[&["analyze", "t.trace", "--heatmap", "a.svg"][..], &m].concat(),
    ));
    assert!(std::fs::read_to_string(d.join("a.svg"))
        .unwrap()
        .starts_with("<svg"));
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}
