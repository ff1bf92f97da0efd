//! `tdmap exec` end to end on this machine (2 CPUs, one node): a mapping made for
//! another machine is refused before the program runs (issue 22 must-show 1); a fitting
//! one pins each thread where the file says, as the program itself reads it from
//! `/proc/self/task/TID/status`, later batches included; the allocation (taskset) is
//! respected; --best-effort, --cycle, --ranks and the exit code; version 1 files.

mod common;

use common::{assert_bad_input, cargo_build, tdmap};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("exec-{name}"))
}

/// Compiles `tests/exec/<src>` with gcc and `flags` into `exe`.
fn gcc(src: &str, exe: &str, flags: &[&str]) -> PathBuf {
    let exe = tmp(exe);
    let ok = Command::new("gcc")
        .args(["-O2", "-Wall"])
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(common::test_path("exec").join(src))
        .status()
        .unwrap()
        .success();
    assert!(ok, "gcc failed on tests/exec/{src}");
    exe
}

/// tests/exec/batches.c, built once, and the runtime beside tdmap.
fn batches() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            cargo_build("tdmap-rt");
            gcc("batches.c", "batches", &["-pthread"])
        })
        .clone()
}

/// `tdmap map --format json` for two threads on `machine` (None: this one).
fn made_by_map(machine: Option<&str>) -> Value {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let csv = tmp(&format!("two-{n}.csv"));
    std::fs::write(&csv, "0,5\n5,0\n").unwrap();
    let mut args = vec!["map", "--matrix", csv.to_str().unwrap(), "--format", "json"];
    if let Some(m) = machine {
        args.extend(["--machine", m]);
    }
    let out = tdmap(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A mapping of this machine putting thread k on OS CPU `cpus[k]`, written as `name`.
fn mapping(name: &str, cpus: &[usize]) -> PathBuf {
    let mut m = made_by_map(None);
    let entry = m["mapping"][0].clone();
    m["mapping"] = cpus
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let mut e = entry.clone();
            e["thread"] = k.into();
            e["os"] = c.into();
            e
        })
        .collect();
    m["threads"] = cpus.len().into();
    let path = tmp(name);
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    path
}

fn exec(flags: &[&str], map: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tdmap"));
    c.arg("exec")
        .args(flags)
        .arg("--mapping")
        .arg(map)
        .arg("--");
    c.arg(batches()).args(args).output().unwrap()
}

/// The program's lines `thread K: LIST`, as LIST per thread.
fn lists(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_once(": ").unwrap().1.to_string())
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Must-show 1: a mapping for xeon-x7550-4s (64 PUs) on this 2-PU machine.
#[test]
fn a_mapping_for_another_machine_exits_2_and_the_program_does_not_run() {
    let path = tmp("xeon.json");
    let text = serde_json::to_string(&made_by_map(Some("xeon-x7550-4s"))).unwrap();
    std::fs::write(&path, text).unwrap();
    let mark = tmp("xeon-ran");
    let _ = std::fs::remove_file(&mark);
    let script = format!("touch {}", mark.display());
    let p = path.to_str().unwrap();
    let out = tdmap(&["exec", "--mapping", p, "--", "sh", "-c", &script]);
    assert_bad_input(&out, "made for xeon-x7550-4s");
    assert!(stderr(&out).contains("64 PUs"), "{}", stderr(&out));
    assert!(!mark.exists(), "the program ran");
    // --best-effort runs it, saying what does not fit, and passes its exit code on.
    let out = exec(&["--best-effort"], &path, &["1", "1", "7"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(stderr(&out).contains("--best-effort"), "{}", stderr(&out));
}

/// `tdmap run --mapping` goes through the same checks.
#[test]
fn run_refuses_a_mapping_for_another_machine_too() {
    let path = tmp("run-xeon.json");
    let text = serde_json::to_string(&made_by_map(Some("xeon-x7550-4s"))).unwrap();
    std::fs::write(&path, text).unwrap();
    let p = path.to_str().unwrap();
    let out = tdmap(&["run", "--mapping", p, "--", "true"]);
    assert_bad_input(&out, "made for xeon-x7550-4s");
}

/// Threads are pinned in creation order, the second batch continuing the first's
/// numbering: thread k on the k-th CPU of the mapping.
#[test]
fn every_thread_of_every_batch_is_pinned_where_the_file_says() {
    let cpus = [1, 0, 1, 1, 0];
    let map = mapping("five.json", &cpus);
    let out = exec(&[], &map, &["2", "2", "3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let want: Vec<String> = cpus.iter().map(usize::to_string).collect();
    assert_eq!(lists(&out), want, "{}", stderr(&out));
    assert!(stderr(&out).contains("5 threads of"), "{}", stderr(&out));
}

#[test]
fn threads_beyond_the_mapping_run_unpinned_or_cycle() {
    let map = mapping("three.json", &[1, 0, 1]);
    let out = exec(&[], &map, &["2", "2", "0"]);
    assert_eq!(
        lists(&out),
        ["1", "0", "1", "0-1", "0-1"],
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("threads 3-4 ran unpinned"),
        "{}",
        stderr(&out)
    );
    let out = exec(&["--cycle"], &map, &["2", "2", "0"]);
    assert_eq!(lists(&out), ["1", "0", "1", "1", "0"], "{}", stderr(&out));
}

#[test]
fn the_summary_comes_as_json_on_stderr() {
    let map = mapping("json.json", &[0, 1]);
    let out = exec(&["--json"], &map, &["1", "1", "0"]);
    let r: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(r["pinned"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["pinned"][1]["cpu"], 1, "{r}");
    assert_eq!(r["runtime_loaded"], true, "{r}");
}

/// The allocation: under `taskset -c 1`, CPU 0 is refused; a mapping within CPU 1 runs.
#[test]
fn cpus_outside_the_allocation_are_refused() {
    let both = mapping("both.json", &[0, 1]);
    let run = |map: &Path, flags: &[&str]| {
        let mut c = Command::new("taskset");
        c.args(["-c", "1", env!("CARGO_BIN_EXE_tdmap"), "exec"]);
        c.args(flags).arg("--mapping").arg(map).arg("--");
        c.arg(batches()).args(["1", "1", "0"]).output().unwrap()
    };
    let out = run(&both, &[]);
    assert_bad_input(&out, "CPU 0 outside the CPUs this process may use (1");
    assert!(out.stdout.is_empty(), "the program ran");
    let one = mapping("one.json", &[1, 1]);
    let out = run(&one, &[]);
    assert_eq!(lists(&out), ["1", "1"], "{}", stderr(&out));
    // --force pins outside the taskset binding (the kernel allows it).
    let out = run(&both, &["--force"]);
    assert_eq!(lists(&out), ["0", "1"], "{}", stderr(&out));
}

/// Version 1 files (before fingerprints) are still applied, with a warning.
#[test]
fn a_version_1_mapping_still_applies() {
    let v2 = mapping("v2.json", &[1, 0]);
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&v2).unwrap()).unwrap();
    m["version"] = 1.into();
    for k in ["fingerprint", "membind"] {
        m.as_object_mut().unwrap().remove(k);
    }
    let v1 = tmp("v1.json");
    std::fs::write(&v1, m.to_string()).unwrap();
    let out = exec(&[], &v1, &["1", "1", "0"]);
    assert_eq!(lists(&out), ["1", "0"], "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no machine fingerprint"),
        "{}",
        stderr(&out)
    );
}

/// MPI ranks: the local rank variable picks the entry; the process and so all its
/// threads are on that CPU. Without a variable, exit 2.
#[test]
fn a_rank_takes_the_cpu_of_its_local_rank() {
    let map = mapping("ranks.json", &[0, 1]);
    let run = |env: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_tdmap"));
        c.args(["exec", "--ranks", "--mapping"]).arg(&map).arg("--");
        c.arg(batches()).args(["1", "1", "0"]);
        for v in [
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "MPI_LOCALRANKID",
            "SLURM_LOCALID",
        ] {
            c.env_remove(v);
        }
        c.envs(env.iter().copied()).output().unwrap()
    };
    let out = run(&[("OMPI_COMM_WORLD_LOCAL_RANK", "1")]);
    assert_eq!(lists(&out), ["1", "1"], "{}", stderr(&out));
    let out = run(&[("SLURM_LOCALID", "0")]);
    assert_eq!(lists(&out), ["0", "0"], "{}", stderr(&out));
    assert_bad_input(&run(&[]), "OMPI_COMM_WORLD_LOCAL_RANK");
    // Bound to CPU 1 by its launcher, rank 1 (CPU 1) runs, rank 0 (CPU 0) is refused.
    let bound = |rank: &str| {
        let mut c = Command::new("taskset");
        c.args([
            "-c",
            "1",
            env!("CARGO_BIN_EXE_tdmap"),
            "exec",
            "--ranks",
            "--mapping",
        ]);
        c.arg(&map).arg("--").arg(batches()).args(["1", "1", "0"]);
        c.env("OMPI_COMM_WORLD_LOCAL_RANK", rank).output().unwrap()
    };
    assert_eq!(lists(&bound("1")), ["1", "1"]);
    assert_bad_input(
        &bound("0"),
        "rank 0 (OMPI_COMM_WORLD_LOCAL_RANK) is mapped to CPU 0",
    );
    assert_bad_input(&run(&[("MPI_LOCALRANKID", "5")]), "rank 5");
}

/// A static program ignores LD_PRELOAD: refused rather than run unpinned.
#[test]
fn a_static_program_is_refused_without_best_effort() {
    let exe = tmp("static-true");
    let src = tmp("static-true.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let ok = Command::new("gcc")
        .arg("-static")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status();
    if !ok.is_ok_and(|s| s.success()) {
        panic!("gcc -static failed: is libc6-dev's libc.a installed?");
    }
    let map = mapping("static.json", &[0]);
    let (m, e) = (map.to_str().unwrap(), exe.to_str().unwrap());
    assert_bad_input(
        &tdmap(&["exec", "--mapping", m, "--", e]),
        "statically linked",
    );
    let out = tdmap(&["exec", "--best-effort", "--mapping", m, "--", e]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn map_prints_a_numactl_line_and_a_memory_binding() {
    let csv = tmp("numactl.csv");
    std::fs::write(&csv, "0,5\n5,0\n").unwrap();
    let out = tdmap(&[
        "map",
        "--matrix",
        csv.to_str().unwrap(),
        "--format",
        "numactl",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l == "numactl --physcpubind=0-1 --membind=0 COMMAND"),
        "{text}"
    );
    let m = made_by_map(Some("package:2 [numa] core:2"));
    // The sharing pair shares a node: memory from that node only.
    assert_eq!(m["membind"], serde_json::json!([0]), "{m}");
    assert_eq!(m["fingerprint"]["pus"], 4, "{m}");
}

/// OpenMP: the places alone (--omp-only, libgomp pins), and with the runtime too, put
/// OpenMP thread k where the mapping says.
#[test]
fn openmp_threads_follow_the_places() {
    let exe = gcc("omp.c", "omp", &["-fopenmp"]);
    cargo_build("tdmap-rt");
    let map = mapping("omp.json", &[1, 0]);
    for flags in [&["--omp-only"][..], &[]] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_tdmap"));
        c.arg("exec")
            .args(flags)
            .arg("--mapping")
            .arg(&map)
            .arg("--")
            .arg(&exe);
        for v in [
            "OMP_NUM_THREADS",
            "OMP_PLACES",
            "OMP_PROC_BIND",
            "KMP_AFFINITY",
            "GOMP_CPU_AFFINITY",
        ] {
            c.env_remove(v);
        }
        let out = c.output().unwrap();
        assert_eq!(lists(&out), ["1", "0"], "{flags:?}: {}", stderr(&out));
    }
}

/// An OpenMP runtime's own affinity variable would override the places: refused.
#[test]
fn an_overriding_openmp_affinity_variable_is_refused() {
    let map = mapping("kmp.json", &[0]);
    let out = Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(["exec", "--mapping"])
        .arg(&map)
        .args(["--", "true"])
        .env("GOMP_CPU_AFFINITY", "0-1")
        .output()
        .unwrap();
    assert_bad_input(&out, "GOMP_CPU_AFFINITY=0-1 is set");
}

/// SIGTERM sent to tdmap reaches the program, whose death by it becomes 128 + 15.
#[test]
fn a_signal_to_tdmap_reaches_the_program() {
    cargo_build("tdmap-rt");
    let map = mapping("signal.json", &[0]);
    let sleep = std::fs::canonicalize("/bin/sleep").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(["exec", "--mapping"])
        .arg(&map)
        .arg("--")
        .arg(&sleep)
        .arg("30")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let prog = common::running_program(child.id(), &sleep);
    assert!(prog.is_some(), "the program never started");
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(child.wait().unwrap().code(), Some(128 + 15));
}

/// Without the runtime library, threads cannot be pinned: refused, naming the fix.
#[test]
fn a_missing_runtime_library_is_refused() {
    let map = mapping("no-rt.json", &[0]);
    let out = Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(["exec", "--mapping"])
        .arg(&map)
        .args(["--", "true"])
        .env("TDMAP_RT_SO", "/does/not/exist.so")
        .output()
        .unwrap();
    assert_bad_input(&out, "TDMAP_RT_SO");
}

/// A mapping made from an MPI communication matrix names ranks itself: no --ranks.
#[test]
fn a_mapping_of_a_comm_matrix_pins_by_local_rank() {
    let comm = tmp("ring.comm.json");
    let pair = |s: u32, d: u32| {
        serde_json::json!({"src": s, "dst": d, "p2p_bytes": 3200, "p2p_messages": 4,
            "coll_bytes": 0, "coll_messages": 0})
    };
    let cost = |r: u32| serde_json::json!({"rank": r, "calls": 6, "lib_ns": 1, "finalize_ns": 1});
    let file = serde_json::json!({"format": "tdmap-comm", "version": 1, "run": "1-2",
        "mpi": "openmpi", "program": ["mpirun", "./ring"], "ranks": 2, "model": "test",
        "wall_seconds": 0.5, "pairs": [pair(0, 1), pair(1, 0)], "costs": [cost(0), cost(1)]});
    std::fs::write(&comm, file.to_string()).unwrap();
    let out = tdmap(&["map", "--comm", comm.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["unit"], "rank", "{m}");
    let map = tmp("ring-map.json");
    std::fs::write(&map, &out.stdout).unwrap();
    let want = m["mapping"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["thread"] == 1)
        .unwrap()["os"]
        .to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(["exec", "--mapping"])
        .arg(&map)
        .arg("--")
        .arg(batches())
        .args(["1", "1", "0"])
        .env("OMPI_COMM_WORLD_LOCAL_RANK", "1")
        .output()
        .unwrap();
    assert_eq!(lists(&out), [want.clone(), want], "{}", stderr(&out));
}

/// --best-effort runs a mapping naming a CPU this machine lacks; that thread's pin fails
/// in the runtime and is reported with its errno and what it means.
#[test]
fn a_failed_pin_is_reported_with_errno_and_state() {
    let map = mapping("missing-cpu.json", &[0, 5]);
    assert_bad_input(
        &exec(&[], &map, &["1", "1", "0"]),
        "CPU 5 that this machine does not have",
    );
    let out = exec(&["--best-effort"], &map, &["1", "1", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(lists(&out)[0], "0");
    let err = stderr(&out);
    assert!(err.contains("1 failed"), "{err}");
    assert!(
        err.contains("thread 1 (tid ")
            && err
                .contains("not pinned to CPU 5: Invalid argument (os error 22) (CPU not allowed)"),
        "{err}"
    );
}
