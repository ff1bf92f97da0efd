//! End-to-end tests of `tdmap cc` and `tdmap trace` on the workloads: the traced sharing
//! matches the sharing each workload has by construction, checksums do not change under
//! tracing, and bad input (uninstrumented or missing programs) exits 2.
//!
//! The sharing matrix here is computed from the trace by a small line-sharing count:
//! M[i][j] = number of 64-byte lines accessed (read or written) by both thread i and j.
//! (It is the "amount of memory shared" metric of trace-based mapping §III-B.)

mod common;
#[path = "trace/fronts.rs"]
mod fronts;
#[path = "trace/interleave.rs"]
mod interleave;
#[path = "trace/model_only.rs"]
mod model_only;
mod workloads;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};
use tdmap_trace::{Event, Reader, TraceStatus};

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");

fn scratch() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace-tests")
}

/// Builds the runtime and every workload with gcc, `tdmap cc` and `tdmap gcc`, once per
/// test binary.
fn built() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| workloads::build(TDMAP, &scratch().join("build")))
}

fn run(cmd: &mut Command) -> Output {
    cmd.env("OMP_WAIT_POLICY", "passive")
        .output()
        .expect("command runs")
}

/// Runs `tdmap trace [flags] --force -o SCRATCH/out -- prog args`.
fn trace_to(out: &str, flags: &[&str], prog: &Path, args: &[String]) -> (PathBuf, Output) {
    std::fs::create_dir_all(scratch()).unwrap();
    let trace = scratch().join(out);
    let mut cmd = Command::new(TDMAP);
    cmd.arg("trace")
        .args(flags)
        .args(["--force", "-o"])
        .arg(&trace);
    (trace.clone(), run(cmd.arg("--").arg(prog).args(args)))
}

/// One traced run: the trace path and the program's stdout (its checksum line).
#[derive(Clone)]
struct Traced {
    trace: PathBuf,
    stdout: String,
}

/// The instrumented builds of the workloads: `tdmap cc`'s and `tdmap gcc`'s (their
/// folders under [`built`]).
const FRONTS: [&str; 2] = ["tdmap", "tdmap-gcc"];

/// Traces workload `name` built by `tdmap cc` with `t` threads, once per test binary.
fn traced(name: &str, size: &str, t: usize) -> Traced {
    traced_by("tdmap", name, size, t)
}

/// Traces workload `name` built by `front` (one of [`FRONTS`]) with `t` threads, once per
/// test binary.
fn traced_by(front: &str, name: &str, size: &str, t: usize) -> Traced {
    type Key = (String, String, usize);
    static CACHE: Mutex<Option<HashMap<Key, Traced>>> = Mutex::new(None);
    // Held throughout, so two tests never trace into the same file at once.
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    let key = (front.to_string(), name.to_string(), t);
    if let Some(hit) = cache.get(&key) {
        return hit.clone();
    }
    let prog = built().join(front).join(name);
    let args = [t.to_string(), size.to_string()];
    let (trace, out) = trace_to(&format!("{front}-{name}-{t}.trace"), &[], &prog, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "tdmap trace {front} {name} {t}: {err}"
    );
    let report = tdmap_trace::check(&trace);
    assert!(
        report.ok(),
        "{front} {name} {t}: invariant checker: {:?}",
        report.problems
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    cache.insert(key.clone(), Traced { trace, stdout });
    cache[&key].clone()
}

/// Line-sharing matrix of a trace's accesses with time in `window`, and lines touched.
fn line_matrix(trace: &Path, t: usize, window: std::ops::Range<u64>) -> (Vec<Vec<f64>>, f64) {
    let mut lines: HashMap<u64, u64> = HashMap::new();
    for ev in Reader::open(trace).expect("trace opens").events() {
        if let Event::Access(a) = ev.expect("trace reads") {
            if (a.thread as usize) < t.min(64) && window.contains(&a.time) {
                *lines.entry(a.addr >> 6).or_default() |= 1 << a.thread;
            }
        }
    }
    let mut m = vec![vec![0.0; t]; t];
    let mut touched = 0.0;
    for mask in lines.values() {
        touched += mask.count_ones() as f64;
        let ids: Vec<usize> = (0..t).filter(|i| mask & (1 << i) != 0).collect();
        for (k, &i) in ids.iter().enumerate() {
            for &j in &ids[k + 1..] {
                m[i][j] += 1.0;
                m[j][i] += 1.0;
            }
        }
    }
    (m, touched)
}

fn gcc_checksum(name: &str, size: &str, t: usize) -> String {
    let out = run(Command::new(built().join("gcc").join(name))
        .arg(t.to_string())
        .arg(size));
    assert!(out.status.success(), "{name} (gcc) failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Under both fronts: `tdmap cc` (clang callbacks) and `tdmap gcc` (gcc's tsan hooks).
#[test]
fn traced_sharing_matches_each_workloads_expected_blocks_at_8_and_16_threads() {
    let mut report = Vec::new();
    for front in FRONTS {
        for w in workloads::ALL {
            for t in [8, 16] {
                let tr = traced_by(front, w.name, w.size, t);
                let (m, touched) = line_matrix(&tr.trace, t, 0..u64::MAX);
                let score = workloads::similarity(&m, &workloads::expected(w.name, t), touched);
                report.push(format!(
                    "{front:<9} {:<10} T={t:<2} similarity {score:.3}",
                    w.name
                ));
                assert!(
                    score >= 0.9,
                    "{front}: {} at {t} threads: similarity {score:.3}\n{m:?}",
                    w.name
                );
            }
        }
    }
    eprintln!("{}", report.join("\n"));
}

/// The sharing matrix `tdmap analyze` finds by default (amount of shared memory, every
/// sharer of each line kept, as the trace paper counts), from all its top pairs, and the
/// lines touched.
fn analyze_matrix(trace: &Path, t: usize) -> (Vec<Vec<f64>>, f64) {
    let (mut m, json) = analyze_pairs(trace, t, "amount");
    m.iter_mut().flatten().for_each(|v| *v /= 64.0); // bytes to lines
    (m, json["footprint_bytes"].as_f64().unwrap() / 64.0)
}

/// The off-diagonal sharing matrix of `metric` that `tdmap analyze --json` reports (from
/// all its top pairs), and its whole JSON.
fn analyze_pairs(trace: &Path, t: usize, metric: &str) -> (Vec<Vec<f64>>, serde_json::Value) {
    let out = Command::new(TDMAP)
        .args(["analyze", "--json", "--metric", metric, "--top", "100000"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "analyze: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut m = vec![vec![0.0; t]; t];
    for p in json["top_pairs"].as_array().unwrap() {
        let (i, j) = (
            p[0].as_u64().unwrap() as usize,
            p[1].as_u64().unwrap() as usize,
        );
        m[i][j] = p[2].as_f64().unwrap();
        m[j][i] = m[i][j];
    }
    (m, json)
}

#[test]
fn tdmap_analyze_of_each_trace_matches_the_expected_blocks() {
    let mut report = Vec::new();
    for w in workloads::ALL {
        for t in [8, 16] {
            let (m, touched) = analyze_matrix(&traced(w.name, w.size, t).trace, t);
            let score = workloads::similarity(&m, &workloads::expected(w.name, t), touched);
            report.push(format!(
                "{:<10} T={t:<2} analyze similarity {score:.3}",
                w.name
            ));
            assert!(
                score >= 0.9,
                "{} at {t} threads: analyze similarity {score:.3}\n{m:?}",
                w.name
            );
        }
    }
    eprintln!("{}", report.join("\n"));
}

/// Under both fronts: gcc's instrumented atomics must act as the plain build's.
#[test]
fn checksums_are_the_same_with_and_without_tracing() {
    for front in FRONTS {
        for w in workloads::ALL {
            for t in [8, 16] {
                let traced = traced_by(front, w.name, w.size, t).stdout;
                assert!(
                    traced.contains("checksum"),
                    "{front}: {}: no checksum in {traced:?}",
                    w.name
                );
                assert_eq!(
                    traced,
                    gcc_checksum(w.name, w.size, t),
                    "{front}: {} at {t} threads",
                    w.name
                );
            }
        }
    }
}

#[test]
fn threads_are_numbered_in_creation_order_with_their_os_tids() {
    let tr = traced("pairs", "128", 8);
    let rd = Reader::open(&tr.trace).unwrap();
    assert_eq!(rd.header().status, TraceStatus::Complete);
    assert_eq!(rd.header().threads, 8);
    let ids: Vec<u32> = rd.threads().iter().map(|t| t.id).collect();
    assert_eq!(ids, (0..8).collect::<Vec<_>>());
    let mut tids: Vec<i32> = rd.threads().iter().map(|t| t.os_tid).collect();
    tids.dedup();
    assert_eq!(tids.len(), 8, "OS tids must be distinct: {tids:?}");
}

/// First-touch records: cginit's master touches (nearly) every page first, while in
/// stencil1d every thread first-touches its own rows.
#[test]
fn first_touch_records_show_the_master_initialisation() {
    let by_thread = |name: &str, size: &str| {
        let mut n = vec![0u64; 8];
        for ev in Reader::open(traced(name, size, 8).trace).unwrap().events() {
            if let Event::Fault(f) = ev.unwrap() {
                n[f.thread as usize] += 1;
            }
        }
        n
    };
    let cg = by_thread("cginit", "2048");
    let total: u64 = cg.iter().sum();
    assert!(
        cg[0] as f64 >= 0.9 * total as f64,
        "cginit first touches: {cg:?}"
    );
    let st = by_thread("stencil1d", "4");
    assert!(
        st.iter().all(|&n| n >= 4),
        "stencil1d first touches: {st:?}"
    );
}

/// The phase workload changes partners half-way: each half of the run, split at the
/// median access time, matches its own pairing.
#[test]
fn phase_change_shows_in_each_half_of_the_run() {
    let tr = traced("phase", "64", 8);
    let times: Vec<u64> = Reader::open(&tr.trace)
        .unwrap()
        .events()
        .filter_map(|e| match e.unwrap() {
            Event::Access(a) => Some(a.time),
            _ => None,
        })
        .collect();
    // Both phases make the same number of accesses, so the median time separates them.
    let mut times = times;
    let half = times.len() / 2;
    let mid = *times.select_nth_unstable(half).1;
    for (second, window) in [(false, 0..mid), (true, mid..u64::MAX)] {
        let (m, touched) = line_matrix(&tr.trace, 8, window);
        let score = workloads::similarity(&m, &workloads::phase_half(8, second), touched);
        assert!(
            score >= 0.9,
            "half {} similarity {score:.3}: {m:?}",
            second as u8 + 1
        );
    }
}

#[test]
fn the_line_filter_drops_repeats_but_keeps_the_pattern() {
    let prog = built().join("tdmap").join("stencil1d");
    let flags = ["--json", "--filter-lines"];
    let (trace, out) = trace_to("filtered.trace", &flags, &prog, &["8".into(), "4".into()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The summary goes to stderr: stdout is the program's.
    let err = String::from_utf8_lossy(&out.stderr);
    let json: serde_json::Value =
        serde_json::from_str(&err[err.find('{').unwrap()..=err.rfind('}').unwrap()]).unwrap();
    assert!(json["filtered"].as_u64().unwrap() > 0, "{json}");
    let unfiltered = Reader::open(traced("stencil1d", "4", 8).trace)
        .unwrap()
        .events()
        .count() as u64;
    assert!(json["accesses"].as_u64().unwrap() < unfiltered);
    let (m, touched) = line_matrix(&trace, 8, 0..u64::MAX);
    assert!(workloads::similarity(&m, &workloads::expected("stencil1d", 8), touched) >= 0.9);
}

#[test]
fn an_uninstrumented_program_exits_2_and_writes_nothing() {
    let trace = scratch().join("true.trace");
    std::fs::create_dir_all(scratch()).unwrap();
    let out = Command::new(TDMAP)
        .args(["trace", "-o"])
        .arg(&trace)
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not built with a tdmap front")
            && err.contains("tdmap gcc")
            && err.lines().count() == 1,
        "{err}"
    );
    assert!(!trace.exists());
}

#[test]
fn a_missing_program_exits_2_with_one_line() {
    let out = Command::new(TDMAP)
        .args(["trace", "--", "./no-such-program-here"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no-such-program-here") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn an_unwritable_output_directory_exits_2_before_running() {
    let prog = built().join("tdmap").join("ep");
    let out = Command::new(TDMAP)
        .args(["trace", "-o", "/nonexistent-dir-tdmap/x.trace", "--"])
        .arg(&prog)
        .arg("2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "the program must not have run");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write in /nonexistent-dir-tdmap"));
}

#[test]
fn an_existing_output_is_kept_without_force() {
    std::fs::create_dir_all(scratch()).unwrap();
    let keep = scratch().join("keep.trace");
    std::fs::write(&keep, b"precious").unwrap();
    let prog = built().join("tdmap").join("ep");
    let out = Command::new(TDMAP)
        .args(["trace", "-o"])
        .arg(&keep)
        .arg("--")
        .arg(&prog)
        .arg("2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(&keep).unwrap(), b"precious");
}

/// Compiles a small program (`file` names its language) with `tdmap cc` or `tdmap c++`.
fn compile(file: &str, source: &str) -> PathBuf {
    let driver = if file.ends_with(".cpp") { "c++" } else { "cc" };
    compile_by(driver, file, source)
}

/// Compiles a small program with front `driver` (`cc`, `c++`, `gcc`, `g++`, `gfortran`)
/// into SCRATCH/c/<file stem>-<driver>.
fn compile_by(driver: &str, file: &str, source: &str) -> PathBuf {
    built();
    let dir = scratch().join("c");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(file);
    std::fs::write(&src, source).unwrap();
    let stem = src.file_stem().unwrap().to_string_lossy();
    let exe = dir.join(format!("{stem}-{driver}"));
    let out = Command::new(TDMAP)
        .args([driver, "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tdmap {driver}: {err}");
    exe
}

/// Under `tdmap c++` and `tdmap g++`.
#[test]
fn cxx_programs_build_with_tdmap_cxx_and_trace() {
    for driver in ["c++", "g++"] {
        let exe = compile_by(
            driver,
            "vec.cpp",
            "#include <vector>\n#include <cstdio>\nint main(){ std::vector<long> v(1000);\n\
            for (size_t i = 0; i < v.size(); i++) v[i] = i; long s = 0; for (long x : v) s += x;\n\
            std::printf(\"%ld\\n\", s); return 0; }\n",
        );
        let (trace, out) = trace_to(&format!("vec-{driver}.trace"), &[], &exe, &[]);
        assert!(
            out.status.success(),
            "{driver}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "499500\n");
        let n = Reader::open(&trace).unwrap().events().count();
        assert!(n >= 2000, "{driver}: {n} events");
    }
}

#[test]
fn tdmap_cc_without_arguments_exits_2() {
    let out = Command::new(TDMAP).arg("cc").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Under `tdmap cc` and `tdmap gcc`.
#[test]
fn a_crash_flushes_the_trace_and_marks_it_crashed() {
    for driver in ["cc", "gcc"] {
        let exe = compile_by(
            driver,
            "crash.c",
            "#include <stdlib.h>\nvolatile long a[4096];\nint main(void){ for (int i = 0; i < 4096; i++) a[i] = i; abort(); }\n",
        );
        let (trace, out) = trace_to(&format!("crash-{driver}.trace"), &[], &exe, &[]);
        // The program's status, as a shell reports it: 128 + SIGABRT (issue 17 item 7).
        assert_eq!(
            out.status.code(),
            Some(134),
            "{driver}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            tdmap_trace::check(&trace).ok(),
            "{driver}: a crashed trace is still well formed"
        );
        let rd = Reader::open(&trace).unwrap();
        assert_eq!(rd.header().status, TraceStatus::Crashed);
        assert!(
            rd.events().count() >= 4096,
            "{driver}: the buffered accesses were not flushed"
        );
    }
}

/// Under `tdmap cc` and `tdmap gcc`.
#[test]
fn a_failed_write_marks_the_trace_incomplete() {
    // The program caps its own file size once the runtime is up: the next chunk fails
    // with EFBIG, as it would with a full disk. Its indexes are random, so that the
    // runtime's predictor cannot shrink the stream below the cap.
    for driver in ["cc", "gcc"] {
        let exe = compile_by(
            driver,
            "fsize.c",
            "#include <sys/resource.h>\nvolatile long a[1 << 16];\nint main(void){\n\
             struct rlimit r = {200000, 200000}; setrlimit(RLIMIT_FSIZE, &r);\n\
             unsigned x = 1;\n\
             for (int k = 0; k < 8; k++) for (int i = 0; i < (1 << 16); i++) {\n\
             x ^= x << 13; x ^= x >> 17; x ^= x << 5; a[x & 0xffff] += i; }\nreturn 0; }\n",
        );
        let (trace, out) = trace_to(&format!("fsize-{driver}.trace"), &[], &exe, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{driver}: {err}");
        assert!(err.contains("Incomplete"), "{driver}: {err}");
        assert_eq!(
            Reader::open(&trace).unwrap().header().status,
            TraceStatus::Incomplete
        );
    }
}
