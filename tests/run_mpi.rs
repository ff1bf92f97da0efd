//! `tdmap run -- mpirun -np 4 …` (issue 19, must-show 3): a hybrid MPI + OpenMP halo
//! exchange (tests/mpi/hybrid_halo.c, 4 ranks × 2 OpenMP threads, halos with r±1 through
//! the shared-memory transport), with Open MPI and with MPICH. Every rank is followed
//! and named by its world rank with its local rank beside it, with its OpenMP threads;
//! the exit code passes through and the output is the bare run's.
//!
//! An MPI whose compiler or launcher is missing is skipped with a message, unless `CI`
//! is set: then it must run (`scripts/setup.sh` installs both).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// One MPI job at a time: 4 ranks × 2 threads already oversubscribe the 2 CPUs.
static JOBS: Mutex<()> = Mutex::new(());

/// The exit code every rank returns, so that passing it through is tested.
const CODE: &str = "3";

struct Mpi {
    name: &'static str,
    cc: &'static str,
    launch: &'static [&'static str],
}

const OPENMPI: Mpi = Mpi {
    name: "openmpi",
    cc: "mpicc.openmpi",
    launch: &[
        "mpirun.openmpi",
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        "4",
    ],
};
const MPICH: Mpi = Mpi {
    name: "mpich",
    cc: "mpicc.mpich",
    launch: &["mpiexec.mpich", "-n", "4"],
};

fn on_path(name: &str) -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join(name).is_file())
}

/// The program built with `mpi`'s compiler, or why it cannot be (None: skip).
fn build(mpi: &Mpi) -> Option<PathBuf> {
    for tool in [mpi.cc, mpi.launch[0]] {
        if !on_path(tool) {
            let why = format!("{tool} not found (scripts/setup.sh installs it)");
            assert!(std::env::var_os("CI").is_none(), "CI: {why}");
            eprintln!("skipped {}: {why}", mpi.name);
            return None;
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mpi/hybrid_halo.c");
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hybrid_halo-{}", mpi.name));
    let out = Command::new(mpi.cc)
        .args(["-O2", "-fopenmp", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        mpi.cc,
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

/// The launcher command for `exe` (50 steps, every rank exiting with [`CODE`]). OpenMP
/// threads sleep when idle: spinning, 8 threads on 2 CPUs take 10-20 times longer.
fn launch(mpi: &Mpi, exe: &Path) -> Command {
    let mut c = Command::new(mpi.launch[0]);
    c.args(&mpi.launch[1..])
        .arg(exe)
        .args(["50", CODE])
        .env("OMP_WAIT_POLICY", "passive");
    c
}

fn check(mpi: &Mpi) {
    let Some(exe) = build(mpi) else { return };
    let _one = JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let bare = launch(mpi, &exe).output().unwrap();
    assert_eq!(bare.status.code(), Some(3), "{}: the bare run", mpi.name);
    let report = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("run-mpi-{}.json", mpi.name));
    let plain = launch(mpi, &exe);
    let out = Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(["run", "--sampler", "kernel", "--period", "20", "--dry-run"])
        .args(["--json", "--report"])
        .arg(&report)
        .arg("--")
        .arg(plain.get_program())
        .args(plain.get_args())
        .env("OMP_WAIT_POLICY", "passive")
        .output()
        .unwrap();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    std::fs::remove_file(&report).unwrap();
    assert_eq!(out.status.code(), Some(3), "{}: exit code: {r}", mpi.name);
    assert_eq!(out.stdout, bare.stdout, "{}: output changed", mpi.name);
    let procs = r["processes"].as_array().unwrap();
    let mut tasks = 0;
    for rank in 0..4u64 {
        let p: Vec<&Value> = procs.iter().filter(|p| p["rank"] == rank).collect();
        assert_eq!(p.len(), 1, "{}: rank {rank}: {r}", mpi.name);
        let p = p[0];
        assert!(p["local_rank"].is_u64(), "{}: {p}", mpi.name);
        assert!(
            p["command"].as_str().unwrap().contains("hybrid_halo"),
            "{p}"
        );
        // Its main thread, its OpenMP worker, and the MPI library's own threads.
        let threads = p["threads"].as_array().unwrap().len();
        assert!(
            threads >= 2,
            "{}: rank {rank} has {threads} threads: {p}",
            mpi.name
        );
        tasks += threads;
    }
    assert!(tasks >= 8, "{}: {tasks} tasks", mpi.name);
    eprintln!("{}: ranks × threads seen: {tasks} tasks", mpi.name);
}

#[test]
fn open_mpi_ranks_and_their_threads_are_followed_and_named() {
    check(&OPENMPI);
}

#[test]
fn mpich_ranks_and_their_threads_are_followed_and_named() {
    check(&MPICH);
}
