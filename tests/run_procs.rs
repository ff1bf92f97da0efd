//! `tdmap run` on programs of several processes (issue 19): forked children sharing
//! memory, a shell around the real program, a set-user-ID child. On this one-node
//! machine the kernel sampler sees first-touch faults only and the inject sampler adds
//! extra faults in the started process; the two-node guest (`tests/vm`) checks the page
//! moves.

mod common;
#[allow(dead_code)]
mod workloads;

use common::run_json;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use workloads::gcc;

/// Processes of `forkshare` (pairs (0,1) and (2,3) share a region each).
const PROCS: usize = 4;

/// The report's thread matrix summed per process, processes in creation order (pid
/// order: the monitor numbers them in the order of their first samples).
fn process_matrix(r: &Value) -> Vec<Vec<f64>> {
    let n = r["matrix"]["n"].as_u64().unwrap() as usize;
    let cells: Vec<f64> = r["matrix"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect();
    let mut pids: Vec<u64> = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    pids.sort_unstable();
    let of: Vec<usize> = r["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let pid = t["pid"].as_u64().unwrap();
            pids.iter()
                .position(|&p| p == pid)
                .expect("every thread has a process")
        })
        .collect();
    let mut m = vec![vec![0.0; pids.len()]; pids.len()];
    for i in 0..n {
        for j in 0..n {
            m[of[i]][of[j]] += cells[i * n + j];
        }
    }
    m
}

/// forkshare's construction: processes 2k and 2k+1 share every page of region k.
fn construction(pages: f64) -> Vec<Vec<f64>> {
    let mut m = vec![vec![0.0; PROCS]; PROCS];
    for p in (0..PROCS).step_by(2) {
        m[p][p + 1] = pages;
        m[p + 1][p] = pages;
    }
    m
}

/// Must-show 1 on this machine: the four processes are followed, named, and their
/// matrix correlates with the construction, with either sampler. The odd region is a
/// memfd mapped at a different address in each process: only keys by backing object
/// make processes 2 and 3 share it.
#[test]
fn forkshare_pairs_are_found_across_processes() {
    common::cargo_build("tdmap-rt");
    let prog = gcc("forkshare");
    let bare = Command::new(&prog).arg("4").output().unwrap();
    assert!(bare.status.success());
    for sampler in ["inject", "kernel"] {
        let flags = ["--sampler", sampler, "--period", "20", "--dry-run"];
        let (stdout, r, code) = run_json(&flags, &prog, &["4"]);
        assert_eq!(code, 0, "{r}");
        assert_eq!(stdout.as_bytes(), bare.stdout, "output unchanged");
        let procs = r["processes"].as_array().unwrap();
        assert_eq!(procs.len(), PROCS, "{sampler}: {r}");
        for (k, p) in procs.iter().enumerate() {
            assert_eq!(p["index"], k, "numbered in order of first sample: {p}");
            assert_eq!(p["left_alone"], false, "{p}");
            assert!(p["command"].as_str().unwrap().contains("forkshare"), "{p}");
            assert_eq!(p["threads"].as_array().unwrap().len(), 1, "{p}");
        }
        assert!(r["page_keys"].as_str().unwrap().contains("backing object"));
        let m = process_matrix(&r);
        let s = workloads::similarity(&m, &construction(256.0), 1.0);
        eprintln!("{sampler}: process matrix {m:?}, similarity {s:.3}");
        assert!(s >= 0.9, "{sampler}: similarity {s:.3} < 0.9: {m:?}");
        assert!(
            m[2][3] > 0.0,
            "{sampler}: the memfd pair shares nothing: {m:?}"
        );
        if sampler == "inject" {
            let children = r["inject"]["children"].as_str().unwrap();
            assert!(children.contains("kernel sampler"), "{children}");
        }
    }
}

/// Must-show 2: `tdmap run -- sh -c './prog 8'` sees the 8 threads of prog, whether the
/// shell executes it in its own process or forks it; the shell's exit code passes.
#[test]
fn a_shell_around_the_program_shows_its_threads() {
    let prog = gcc("pairs");
    let p = prog.display();
    for (script, code) in [
        (format!("'{p}' 8 4096"), 0),
        (format!("'{p}' 8 4096; exit 3"), 3),
    ] {
        let (stdout, r, got) = run_json(
            &["--period", "20", "--dry-run", "--sampler", "kernel"],
            Path::new("sh"),
            &["-c", &script],
        );
        assert_eq!(got, code, "{script}: {r}");
        assert!(stdout.contains("pairs checksum"), "{stdout}");
        let ours: Vec<&Value> = r["processes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| {
                // The command line, or the program's name when it ended before its
                // command line was read.
                let c = p["command"].as_str().unwrap();
                c.contains("pairs") && !c.starts_with("sh")
            })
            .collect();
        assert_eq!(ours.len(), 1, "{script}: {r}");
        let threads = ours[0]["threads"].as_array().unwrap().len();
        assert_eq!(threads, 8, "{script}: {r}");
    }
}

/// A child that executes a set-user-ID program of another user is left alone: named in
/// the report, its samples dropped, nothing pinned. Needs root (to make a program
/// set-user-ID `nobody`); otherwise it says why and passes.
#[test]
fn a_setuid_child_is_left_alone_and_named() {
    // SAFETY-free check of the caller's uid through /proc.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    if !status.lines().any(|l| l.starts_with("Uid:\t0\t")) {
        eprintln!("skipped: making a set-user-ID program of another user needs root");
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("setuid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("pairs-nobody");
    std::fs::copy(gcc("pairs"), &copy).unwrap();
    let ok = Command::new("chown")
        .args(["65534"])
        .arg(&copy)
        .status()
        .unwrap()
        .success();
    assert!(ok, "chown");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o4755)).unwrap();
    // The program runs long enough for a period or two to pass after its exec.
    let script = format!("'{}' 4 200000; true", copy.display());
    let (_, r, code) = run_json(
        &["--period", "10", "--sampler", "kernel"],
        Path::new("sh"),
        &["-c", &script],
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, 0, "{r}");
    let alone: Vec<&Value> = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["left_alone"] == true)
        .collect();
    assert_eq!(alone.len(), 1, "{r}");
    assert!(
        alone[0]["command"]
            .as_str()
            .unwrap()
            .contains("pairs-nobody"),
        "{r}"
    );
    for t in r["threads"].as_array().unwrap() {
        if t["pid"] == alone[0]["pid"] {
            assert!(t["pinned_cpu"].is_null(), "a thread of it was pinned: {t}");
        }
    }
}

/// `--mapping` naming tasks by (process, thread): under `sh -c 'pairs 8 …; true'`
/// process 0 is the shell and process 1 pairs. The file lists pairs' threads first and
/// the shell last, so that reading it by thread index would pin the shell to pairs'
/// first CPU: the shell goes to CPU 1, thread t of pairs to CPU t % 2.
#[test]
fn a_mapping_names_tasks_by_process_and_thread() {
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    if cpus.trim() == "0" {
        eprintln!("skipped: one CPU, every task would be on it");
        return;
    }
    let tasks: Vec<(u32, u32, usize)> = (0..8)
        .map(|t| (1, t, t as usize % 2))
        .chain([(0, 0, 1)])
        .collect();
    let entries: Vec<String> = tasks
        .iter()
        .enumerate()
        .map(|(k, (p, t, cpu))| {
            format!(
                r#"{{"thread": {k}, "pu": {cpu}, "os": {cpu}, "core": {cpu}, "package": 0, "node": 0, "task": {{"process": {p}, "thread": {t}}}}}"#
            )
        })
        .collect();
    let file = format!(
        r#"{{"format": "tdmap-mapping", "version": 1, "machine": "local", "algorithm": "hand", "threads": {}, "distance": "hops", "seed": 0, "cost": 0, "compact_cost": 0, "random_cost": 0, "mapping": [{}]}}"#,
        tasks.len(),
        entries.join(", ")
    );
    let path =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tasks-{}.json", std::process::id()));
    std::fs::write(&path, file).unwrap();
    let script = format!("'{}' 8 262144; true", gcc("pairs").display());
    let (_, r, code) = run_json(
        &[
            "--period",
            "20",
            "--sampler",
            "kernel",
            "--whole-machine",
            "--mapping",
            path.to_str().unwrap(),
        ],
        Path::new("sh"),
        &["-c", &script],
    );
    std::fs::remove_file(&path).unwrap();
    assert_eq!(code, 0, "{r}");
    let threads = r["threads"].as_array().unwrap();
    let procs = r["processes"].as_array().unwrap();
    let pid_of = |index: u64| procs.iter().find(|p| p["index"] == index).unwrap()["pid"].clone();
    let of = |pid: &Value| -> Vec<&Value> {
        let mut v: Vec<&Value> = threads.iter().filter(|t| &t["pid"] == pid).collect();
        v.sort_by_key(|t| t["tid"].as_u64().unwrap());
        v
    };
    let shell = of(&pid_of(0));
    assert_eq!(shell[0]["pinned_cpu"], 1, "the shell: {r}");
    let pairs = of(&pid_of(1));
    assert_eq!(pairs.len(), 8, "{r}");
    for (t, th) in pairs.iter().enumerate() {
        assert_eq!(th["pinned_cpu"], t % 2, "thread {t} of pairs: {r}");
    }
}
