//! Helpers shared by the CLI tests: running the binary and golden files.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

mod temp_dir;
// Not every test binary that shares this module makes a folder.
#[allow(unused_imports)]
pub use temp_dir::TempDir;

/// Runs the built `tdmap` with `args`.
pub fn tdmap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(args)
        .output()
        .expect("the tdmap binary runs")
}

/// The path of a file below `tests/`.
pub fn test_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(rel)
}

/// Compares `actual` with the golden file `tests/golden/<rel>`; `BLESS=1` rewrites it.
pub fn golden(rel: &str, actual: &str) {
    let path = test_path("golden").join(rel);
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden file {}; run with BLESS=1", path.display()));
    assert!(
        expected == actual,
        "output differs from {} (rerun with BLESS=1 if the change is intended)\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

/// Asserts that `out` failed with exit code 2 and one line on stderr containing `needle`.
pub fn assert_bad_input(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err}");
    assert!(err.starts_with("tdmap: "), "{err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

/// Runs `tdmap run FLAGS --json --report FILE -- PROG ARGS`: (stdout, report, exit code).
pub fn run_json(flags: &[&str], prog: &Path, args: &[&str]) -> (String, serde_json::Value, i32) {
    run_json_env(flags, &[], prog, args)
}

/// [`run_json`] with `env` added to tdmap's environment (which the program inherits).
pub fn run_json_env(
    flags: &[&str],
    env: &[(&str, &str)],
    prog: &Path,
    args: &[&str],
) -> (String, serde_json::Value, i32) {
    // Tests of one binary run in parallel: each run gets its own report file.
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let report = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "run-{}-{}-{}.json",
        prog.file_name().unwrap().to_string_lossy(),
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    let out = Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .envs(env.iter().copied())
        .arg("run")
        .args(flags)
        .args(["--json", "--report"])
        .arg(&report)
        .arg("--")
        .arg(prog)
        .args(args)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&report).expect("a report was written");
    std::fs::remove_file(&report).unwrap();
    let json = serde_json::from_str(&text).expect("the report is JSON");
    let stdout = String::from_utf8(out.stdout).unwrap();
    (stdout, json, out.status.code().unwrap())
}

/// The report's sharing matrix with the threads in creation order. The monitor numbers
/// threads in the order their first samples arrive, which per-CPU rings can shuffle;
/// the kernel hands out tids in creation order.
pub fn matrix_by_tid(r: &serde_json::Value) -> Vec<Vec<f64>> {
    matrix_by_tid_of(r, "matrix")
}

/// The report's matrix `key` (`matrix`, or `matrix_amount`) with the threads in
/// creation order, as [`matrix_by_tid`].
pub fn matrix_by_tid_of(r: &serde_json::Value, key: &str) -> Vec<Vec<f64>> {
    let n = r[key]["n"].as_u64().unwrap() as usize;
    let cells: Vec<f64> = r[key]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect();
    let tids: Vec<u64> = r["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tid"].as_u64().unwrap())
        .collect();
    let mut order: Vec<usize> = (0..tids.len().min(n)).collect();
    order.sort_by_key(|&k| tids[k]);
    order
        .iter()
        .map(|&i| order.iter().map(|&j| cells[i * n + j]).collect())
        .collect()
}

/// The pid of the program `tdmap` (pid `monitor`) runs, once it runs `prog` (released
/// from its gate and exec'd); None after 20 s.
pub fn running_program(monitor: u32, prog: &Path) -> Option<u32> {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(20) {
        let kids = std::fs::read_to_string(format!("/proc/{monitor}/task/{monitor}/children"))
            .unwrap_or_default();
        for pid in kids.split_whitespace() {
            if std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e == prog) {
                return pid.parse().ok();
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    None
}

/// Builds the workspace crate `package` with the profile of the tested `tdmap`, so that
/// its libraries land beside the binary where `tdmap run` looks for them; once per test
/// binary and package.
pub fn cargo_build(package: &str) {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.iter().any(|p| p == package) {
        return;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.args(["build", "-q", "-p", package]);
    if env!("CARGO_BIN_EXE_tdmap").contains("/release/") {
        c.arg("--release");
    }
    assert!(c.status().unwrap().success(), "building {package} failed");
    built.push(package.into());
}

/// Builds `workloads/<name>.c` with `tdmap cc` (and the runtime it links) into
/// `dir/tdmap/<name>`; returns its path.
pub fn tdmap_cc_workload(dir: &Path, name: &str) -> PathBuf {
    cargo_build("tdmap-rt");
    let prog = dir.join("tdmap").join(name);
    let out = Command::new("make")
        .args(["-s", "-C"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads"))
        .arg(format!("TDMAP={}", env!("CARGO_BIN_EXE_tdmap")))
        .arg(format!("BUILD={}", dir.display()))
        .arg(&prog)
        .output()
        .expect("make runs");
    assert!(
        out.status.success(),
        "building {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    prog
}

/// Compiles the C program `tests/<rel>` with `gcc -O2 -Wall` into the test target's
/// temporary directory as `exe`; returns its path.
pub fn gcc_test_program(rel: &str, exe: &str) -> PathBuf {
    test_program(Command::new("gcc"), rel, exe)
}

/// As [`gcc_test_program`], with `tdmap cc` (the runtime linked in).
pub fn tdmap_cc_test_program(rel: &str, exe: &str) -> PathBuf {
    cargo_build("tdmap-rt");
    let mut cc = Command::new(env!("CARGO_BIN_EXE_tdmap"));
    cc.arg("cc");
    test_program(cc, rel, exe)
}

fn test_program(mut cc: Command, rel: &str, exe: &str) -> PathBuf {
    let src = test_path(rel);
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(exe);
    let ok = cc
        .args(["-O2", "-Wall", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap()
        .success();
    assert!(ok, "{cc:?} failed on {}", src.display());
    exe
}

/// Runs `cmd` to its end with stdout and stderr captured, like `Command::output`; kills
/// it and panics if it takes longer than `limit`, so that a hang fails the test instead
/// of stalling the whole run.
pub fn output_within(mut cmd: Command, limit: std::time::Duration) -> Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let drain = |mut p: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = p.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// What the files in a trace's output folder hold: the raw data files' and the spills'
/// allocated bytes, and those plus every other file's length (lengths, since a file
/// system may reserve blocks ahead of an appending writer, the trace's, and trim them
/// at close).
#[derive(Debug, Default, Clone, Copy)]
pub struct Held {
    pub raw: u64,
    pub spills: u64,
    pub all: u64,
}

impl Held {
    /// What `dir` holds now.
    pub fn of(dir: &Path) -> Held {
        use std::os::unix::fs::MetadataExt;
        let mut h = Held::default();
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let Ok(m) = e.metadata() else { continue };
            let name = e.file_name().to_string_lossy().into_owned();
            let blocks = m.blocks() * 512;
            if name.ends_with(".spill") {
                h.spills += blocks;
                h.all += blocks;
            } else if name.contains(".raw-") && !name.ends_with(".maps") {
                h.raw += blocks;
                h.all += blocks;
            } else {
                h.all += m.len();
            }
        }
        h
    }

    /// Samples `dir` every millisecond until `child` exits: its status, and the most
    /// each kind of file held at once.
    pub fn peak_while(
        child: &mut std::process::Child,
        dir: &Path,
    ) -> (std::process::ExitStatus, Held) {
        let mut peak = Held::default();
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return (s, peak);
            }
            let h = Held::of(dir);
            peak.raw = peak.raw.max(h.raw);
            peak.spills = peak.spills.max(h.spills);
            peak.all = peak.all.max(h.all);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
