//! `tdmap comm` end to end (issue 20, must-show 1): the test MPI programs of tests/mpi
//! (a ring, a 2-D halo, an all-to-all and collectives on a 6-rank communicator in C,
//! and a ring with collectives in Fortran),
//! built with each installed MPI's wrappers, run on 8 ranks (oversubscribed on this
//! machine) under `tdmap comm`. The assembled matrix must equal the bytes and messages
//! each program sends by construction, exactly for point-to-point, and exactly the
//! documented model for collectives. An MPI whose compilers, launcher or
//! libtdmap_mpi_<mpi>.so are missing is skipped with a message (scripts/setup.sh
//! installs both, so `make test` runs them). Bad rows (a rank missing, two runs mixed)
//! are exit 2 with one line naming the ranks, with or without MPI.

mod common;

use common::assert_bad_input;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use tdmap_mpi::CommFile;

const P: usize = 8;
/// One MPI job at a time: 8 ranks already oversubscribe the 2 CPUs.
static JOBS: Mutex<()> = Mutex::new(());

/// (src, dst) -> (bytes, messages).
type Cells = BTreeMap<(usize, usize), (u64, u64)>;

struct Mpi {
    name: &'static str,
    cc: &'static str,
    fc: &'static str,
    launch: &'static [&'static str],
}

const OPENMPI: Mpi = Mpi {
    name: "openmpi",
    cc: "mpicc.openmpi",
    fc: "mpif90.openmpi",
    launch: &["mpirun.openmpi", "--oversubscribe", "-np", "8"],
};
const MPICH: Mpi = Mpi {
    name: "mpich",
    cc: "mpicc.mpich",
    fc: "mpif90.mpich",
    launch: &["mpiexec.mpich", "-n", "8"],
};

fn on_path(name: &str) -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join(name).is_file())
}

/// The library tdmap would preload: `TDMAP_MPI_SO` (as tdmap reads it), else beside it.
fn library(mpi: &Mpi) -> PathBuf {
    if let Some(so) = std::env::var_os("TDMAP_MPI_SO") {
        return so.into();
    }
    Path::new(env!("CARGO_BIN_EXE_tdmap")).with_file_name(format!("libtdmap_mpi_{}.so", mpi.name))
}

/// Why `mpi` cannot be tested here, if it cannot.
fn missing(mpi: &Mpi) -> Option<String> {
    for tool in [mpi.cc, mpi.fc, mpi.launch[0]] {
        if !on_path(tool) {
            return Some(format!("{tool} not found (scripts/setup.sh installs it)"));
        }
    }
    let lib = library(mpi);
    (!lib.is_file()).then(|| format!("{} not built", lib.display()))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdmap-mpi-comm-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds tests/mpi/`src` with `compiler` into `dir`.
fn build(compiler: &str, src: &str, dir: &Path) -> PathBuf {
    let exe = dir.join(src.split('.').next().unwrap());
    let out = Command::new(compiler)
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(common::test_path("mpi").join(src))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{compiler} {src}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// `tdmap comm ARGS -- LAUNCHER PROGRAM`, as root if need be.
fn comm(mpi: &Mpi, args: &[&str], prog: &Path) -> Output {
    let _one = JOBS.lock().unwrap_or_else(|e| e.into_inner());
    Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .arg("comm")
        .args(args)
        .arg("--")
        .args(mpi.launch)
        .arg(prog)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap()
}

fn run_job(mpi: &Mpi, prog: &Path, dir: &Path) -> CommFile {
    let out_file = dir.join(format!(
        "{}.json",
        prog.file_name().unwrap().to_string_lossy()
    ));
    let out = comm(mpi, &["-o", out_file.to_str().unwrap()], prog);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {err}", prog.display());
    assert!(
        err.contains("tdmap comm: 8 ranks") && err.contains(" calls ("),
        "{err}"
    );
    let file = CommFile::read(&out_file).unwrap();
    assert_eq!(
        (file.ranks, file.mpi.as_str()),
        (P, mpi.name),
        "the library matching the program"
    );
    file
}

fn p2p(f: &CommFile) -> Cells {
    f.pairs
        .iter()
        .filter(|p| p.p2p_messages > 0)
        .map(|p| ((p.src, p.dst), (p.p2p_bytes, p.p2p_messages)))
        .collect()
}

fn coll(f: &CommFile) -> Cells {
    f.pairs
        .iter()
        .filter(|p| p.coll_messages > 0)
        .map(|p| ((p.src, p.dst), (p.coll_bytes, p.coll_messages)))
        .collect()
}

fn add(c: &mut Cells, src: usize, dst: usize, bytes: u64, times: u64) {
    let e = c.entry((src, dst)).or_default();
    e.0 += bytes * times;
    e.1 += times;
}

/// The collective model for P = 8 (a power of two), written out independently of the
/// library: recursive doubling exchanges with r^1, r^2, r^4; the binomial broadcast
/// tree from 0 (children at distances below the lowest set bit); pairwise all-to-all.
fn allreduce(c: &mut Cells, n: u64, times: u64) {
    for r in 0..P {
        for m in [1, 2, 4] {
            add(c, r, r ^ m, n, times);
        }
    }
}

fn bcast_from_0(c: &mut Cells, n: u64, times: u64) {
    for (s, d) in [(0, 1), (0, 2), (0, 4), (2, 3), (4, 5), (4, 6), (6, 7)] {
        add(c, s, d, n, times);
    }
}

fn alltoall(c: &mut Cells, n: impl Fn(usize, usize) -> u64, times: u64) {
    for r in 0..P {
        for j in (0..P).filter(|&j| j != r) {
            add(c, r, j, n(r, j), times);
        }
    }
}

/// What colls.c charges, worked out by hand for p = 6 in comm ranks (world = 6 - c).
fn six_rank_collectives(times: u64) -> Cells {
    let mut c = Cells::new();
    let mut edge = |s: usize, d: usize, bytes: u64, msgs: u64| {
        let e = c.entry((6 - s, 6 - d)).or_default();
        e.0 += bytes * times;
        e.1 += msgs * times;
    };
    // Bcast of 16 bytes from 3: the tree 0->1, 0->2, 0->4, 2->3, 4->5 in vr = c - 3.
    for (s, d) in [(0, 1), (0, 2), (0, 4), (2, 3), (4, 5)] {
        edge((s + 3) % 6, (d + 3) % 6, 16, 1);
    }
    // Reduce of 12 bytes to 2: vr 1->0, 2->0, 3->2, 4->0, 5->4 in vr = c - 2.
    for (s, d) in [(1, 0), (2, 0), (3, 2), (4, 0), (5, 4)] {
        edge((s + 2) % 6, (d + 2) % 6, 12, 1);
    }
    // Allreduce of 8 bytes, q = 4, e = 2: 0->1, 2->3; among 1, 3, 4, 5 (new ranks 0-3)
    // distance 1: 1<->3, 4<->5, distance 2: 1<->4, 3<->5; then 1->0, 3->2.
    for (s, d) in [
        (0, 1),
        (2, 3),
        (1, 3),
        (3, 1),
        (4, 5),
        (5, 4),
        (1, 4),
        (4, 1),
        (3, 5),
        (5, 3),
        (1, 0),
        (3, 2),
    ] {
        edge(s, d, 8, 1);
    }
    for r in 0..6 {
        // Allgather of 4 bytes: 5 messages to r + 1.
        edge(r, (r + 1) % 6, 5 * 4, 5);
        // Allgatherv: every block but r + 1's, block j being j + 1 ints.
        let blocks: u64 = (0..6)
            .filter(|&j| j != (r + 1) % 6)
            .map(|j| (j as u64 + 1) * 4)
            .sum();
        edge(r, (r + 1) % 6, blocks, 5);
        if r != 1 {
            edge(r, 1, 4, 1); // Gather to 1
        }
        if r != 4 {
            edge(4, r, 5, 1); // Scatter from 4
        }
        if r != 0 {
            edge(0, r, (r as u64 + 1) * 4, 1); // Scatterv from 0
        }
    }
    c
}

fn check_mpi(mpi: &Mpi) {
    if let Some(why) = missing(mpi) {
        println!("skipped: {} tests: {why}", mpi.name);
        return;
    }
    let dir = scratch(mpi.name);
    let iter = 20;

    // ring.c: (100 + r) doubles to r + 1, 20 times, by four kinds of send.
    let f = run_job(mpi, &build(mpi.cc, "ring.c", &dir), &dir);
    let mut want = Cells::new();
    for r in 0..P {
        add(&mut want, r, (r + 1) % P, (100 + r as u64) * 8, iter);
    }
    assert_eq!(p2p(&f), want, "{}: ring", mpi.name);
    assert_eq!(
        coll(&f),
        Cells::new(),
        "{}: ring has no collective",
        mpi.name
    );

    // halo2d.c: 4 x 2 grid, rank = 2x + y; rows of 5 doubles along x, columns of 6 along y.
    let f = run_job(mpi, &build(mpi.cc, "halo2d.c", &dir), &dir);
    let mut want = Cells::new();
    for r in 0..P {
        let (x, y) = (r / 2, r % 2);
        for nx in [x.wrapping_sub(1), x + 1].into_iter().filter(|&v| v < 4) {
            add(&mut want, r, nx * 2 + y, 5 * 8, iter);
        }
        add(&mut want, r, x * 2 + (1 - y), 6 * 8, iter);
    }
    assert_eq!(p2p(&f), want, "{}: halo2d", mpi.name);
    let mut want = Cells::new();
    allreduce(&mut want, 8, iter);
    assert_eq!(coll(&f), want, "{}: halo2d's allreduce", mpi.name);

    // alltoall.c: r*10 + j + 1 bytes to every j, 10 times; Alltoall 3 ints, Alltoallv r+j+1 ints.
    let f = run_job(mpi, &build(mpi.cc, "alltoall.c", &dir), &dir);
    let mut want = Cells::new();
    alltoall(&mut want, |r, j| (r * 10 + j + 1) as u64, 10);
    assert_eq!(p2p(&f), want, "{}: alltoall", mpi.name);
    let mut want = Cells::new();
    alltoall(&mut want, |_, _| 12, 10);
    alltoall(&mut want, |r, j| (r + j + 1) as u64 * 4, 10);
    assert_eq!(coll(&f), want, "{}: alltoall's collectives", mpi.name);

    // fring.f90: 50 + r doubles and (persistent) 10 integers to r + 1 and 30 integers to
    // r - 1, 20 times; allreduce of
    // one double, bcast of 4 integers from 0, alltoall of 2 integers, 20 times.
    let f = run_job(mpi, &build(mpi.fc, "fring.f90", &dir), &dir);
    let mut want = Cells::new();
    for r in 0..P {
        add(&mut want, r, (r + 1) % P, (50 + r as u64) * 8, iter);
        add(&mut want, r, (r + 1) % P, 10 * 4, iter);
        add(&mut want, r, (r + P - 1) % P, 30 * 4, iter);
    }
    assert_eq!(p2p(&f), want, "{}: Fortran ring", mpi.name);
    let mut want = Cells::new();
    allreduce(&mut want, 8, iter);
    bcast_from_0(&mut want, 16, iter);
    alltoall(&mut want, |_, _| 8, iter);
    assert_eq!(coll(&f), want, "{}: Fortran collectives", mpi.name);
    assert!(
        f.costs.iter().all(|c| c.calls > 0 && c.lib_ns > 0),
        "{:?}",
        f.costs
    );

    // colls.c: collectives on comm ranks c = 6 - w of world ranks 1..6 (p = 6), 10 times.
    let f = run_job(mpi, &build(mpi.cc, "colls.c", &dir), &dir);
    assert_eq!(
        p2p(&f),
        Cells::new(),
        "{}: colls has no point-to-point",
        mpi.name
    );
    assert_eq!(coll(&f), six_rank_collectives(10), "{}: colls", mpi.name);

    // Real rows, one of them deleted: the missing rank is named.
    let rows = dir.join("rows");
    let kept = dir.join("kept.json");
    let ring = dir.join("ring");
    let args = [
        "-o",
        kept.to_str().unwrap(),
        "--rows",
        rows.to_str().unwrap(),
        "--keep-rows",
    ];
    let out = comm(mpi, &args, &ring);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(rows.join("rank-5.row")).unwrap();
    let out = common::tdmap(&[
        "comm",
        "--assemble",
        rows.to_str().unwrap(),
        "-o",
        dir.join("x.json").to_str().unwrap(),
    ]);
    assert_bad_input(&out, "no row for rank 5 of 8");

    // Preloaded by hand, without TDMAP_MPI_RUN: the ranks agree on rank 0's run id.
    let hand = dir.join("hand");
    let out = {
        let _one = JOBS.lock().unwrap_or_else(|e| e.into_inner());
        Command::new(mpi.launch[0])
            .args(&mpi.launch[1..])
            .arg(&ring)
            .env("LD_PRELOAD", library(mpi))
            .env("TDMAP_MPI_DIR", &hand)
            .env_remove("TDMAP_MPI_RUN")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap()
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hand_json = dir.join("hand.json");
    let out = common::tdmap(&[
        "comm",
        "--assemble",
        hand.to_str().unwrap(),
        "-o",
        hand_json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut want = Cells::new();
    for r in 0..P {
        add(&mut want, r, (r + 1) % P, (100 + r as u64) * 8, iter);
    }
    assert_eq!(
        p2p(&CommFile::read(&hand_json).unwrap()),
        want,
        "{}: ring by hand",
        mpi.name
    );

    // A job that never calls MPI: no rows, exit 2, and no empty folder left behind.
    let none = dir.join("none.json");
    let out = common::tdmap(&[
        "comm",
        "-o",
        none.to_str().unwrap(),
        "--mpi",
        mpi.name,
        "--",
        "true",
    ]);
    assert_bad_input(&out, "no rank-*.row files");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("none.json"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn openmpi_matrices_equal_what_the_programs_send() {
    check_mpi(&OPENMPI);
}

#[test]
fn mpich_matrices_equal_what_the_programs_send() {
    check_mpi(&MPICH);
}

fn row(run: &str, rank: usize, size: usize) -> String {
    format!(
        "tdmap-mpi-row 1\nrun {run}\nmpi mpich\nrank {rank}\nsize {size}\ncalls 1\nlib_ns 10\np2p {} 8 1\nfinalize_ns 5\nend\n",
        (rank + 1) % size
    )
}

#[test]
fn rows_missing_or_from_two_runs_are_exit_2_naming_the_ranks() {
    let dir = scratch("bad-rows");
    let rows = dir.join("rows");
    std::fs::create_dir_all(&rows).unwrap();
    let out_file = dir.join("m.json");
    let assemble = || {
        common::tdmap(&[
            "comm",
            "--assemble",
            rows.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ])
    };
    for r in [0, 1, 2, 4, 5, 7] {
        std::fs::write(rows.join(format!("rank-{r}.row")), row("a", r, 8)).unwrap();
    }
    assert_bad_input(&assemble(), "no row for ranks 3, 6 of 8 (run a)");
    for r in [3, 6] {
        std::fs::write(rows.join(format!("rank-{r}.row")), row("b", r, 8)).unwrap();
    }
    assert_bad_input(
        &assemble(),
        "rows of different runs: ranks 0-2, 4-5, 7 of run a, ranks 3, 6 of run b",
    );
    std::fs::write(rows.join("rank-3.row"), &row("a", 3, 8)[..40]).unwrap();
    assert_bad_input(&assemble(), "rank-3.row: line");
    for r in [3, 6] {
        std::fs::write(rows.join(format!("rank-{r}.row")), row("a", r, 8)).unwrap();
    }
    let out = assemble();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = CommFile::read(&out_file).unwrap();
    assert_eq!((f.ranks, f.pairs.len(), f.total_bytes()), (8, 8, (64, 0)));
    // `tdmap map --comm` reads it: 8 ranks, each pair of ring neighbours weighted alike.
    let m = common::tdmap(&[
        "map",
        "--comm",
        out_file.to_str().unwrap(),
        "-m",
        "package:2 core:4",
        "--json",
    ]);
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    let v: serde_json::Value = serde_json::from_slice(&m.stdout).unwrap();
    assert_eq!(v["threads"], 8);
    let _ = std::fs::remove_dir_all(&dir);
}
