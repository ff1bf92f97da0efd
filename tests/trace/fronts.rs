//! The compiler fronts beyond `tdmap cc`: legacy C and C++ (tests/legacy) build with
//! every front; `tdmap gcc`, `g++` and `gfortran` build through gcc's tsan hooks with
//! atomics that keep their meaning; their traces agree with `tdmap cc`'s; a Fortran
//! OpenMP program shows its neighbours; and library calls (`memcpy`, `strcpy`) are
//! recorded, so a thread copying another's data shares with it.

use super::{analyze_pairs, built, compile_by, scratch, trace_to, traced_by, workloads, TDMAP};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn legacy(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/legacy")
        .join(name)
}

/// Runs `tdmap FRONT flags -o SCRATCH/legacy/<exe> srcs`.
fn build(front: &str, flags: &[&str], srcs: &[PathBuf], exe: &str) -> (PathBuf, Output) {
    built();
    let dir = scratch().join("legacy");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(exe);
    let _ = std::fs::remove_file(&exe);
    let out = Command::new(TDMAP)
        .arg(front)
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .args(srcs)
        .output()
        .unwrap();
    (exe, out)
}

/// Each legacy source with the fronts that compile its language.
fn legacy_cases() -> Vec<(&'static str, Vec<PathBuf>, [&'static str; 2])> {
    let c = ["cc", "gcc"];
    let cases: [(&str, &[&str], [&str; 2]); 6] = [
        ("implicit_int", &["implicit_int.c"], c),
        ("implicit_decl", &["implicit_decl.c"], c),
        ("knr", &["knr.c"], c),
        ("int_conversion", &["int_conversion.c"], c),
        ("common", &["common_a.c", "common_b.c"], c),
        ("register", &["register.cpp"], ["c++", "g++"]),
    ];
    cases
        .into_iter()
        .map(|(n, files, fronts)| (n, files.iter().map(|f| legacy(f)).collect(), fronts))
        .collect()
}

/// Must-show 4: what gcc accepts from old code, every front accepts (with warnings),
/// and the program runs; clang-16 alone refuses all but the K&R case.
#[test]
fn legacy_sources_build_and_run_with_every_front() {
    for (name, srcs, fronts) in legacy_cases() {
        for front in fronts {
            let (exe, out) = build(front, &["-O1"], &srcs, &format!("{name}-{front}"));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "tdmap {front} {name}: {err}");
            let ran = Command::new(&exe).status().unwrap();
            assert!(ran.success(), "{name} built by tdmap {front} exits {ran}");
        }
    }
}

/// The user's own flags win: `-Werror`, a specific `-Werror=...` and `-fno-common`
/// make the legacy sources fail again under the clang fronts.
#[test]
fn the_users_werror_and_fno_common_still_refuse_legacy_code() {
    let refused = [
        ("cc", "-Werror", "implicit_int.c"),
        ("cc", "-Werror=implicit-int", "implicit_int.c"),
        (
            "cc",
            "-Werror=implicit-function-declaration",
            "implicit_decl.c",
        ),
        ("c++", "-Werror", "register.cpp"),
        ("gcc", "-Werror", "implicit_decl.c"),
    ];
    for (front, flag, file) in refused {
        let (_, out) = build(front, &[flag], &[legacy(file)], "refused");
        assert!(!out.status.success(), "tdmap {front} {flag} {file} built");
    }
    let srcs = [legacy("common_a.c"), legacy("common_b.c")];
    for front in ["cc", "gcc"] {
        let (_, out) = build(front, &["-fno-common"], &srcs, "refused");
        assert!(!out.status.success(), "tdmap {front} -fno-common linked");
    }
}

/// Item 5 of issue 17: `--help` is tdmap's, not the compiler's, and names the way to
/// reach the compiler's own.
#[test]
fn each_fronts_help_is_tdmaps_and_says_how_to_pass_flags_through() {
    for front in ["cc", "c++", "gcc", "g++", "gfortran"] {
        let out = Command::new(TDMAP)
            .args([front, "--help"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{front}: {out:?}");
        assert!(
            text.contains(&format!("Usage: tdmap {front}")),
            "{front}: {text}"
        );
        assert!(text.contains("-- --help"), "{front}: {text}");
        assert!(!text.contains("OVERVIEW") && !text.contains("[options] file"));
    }
    let out = Command::new(TDMAP)
        .args(["gcc", "--", "--version"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("gcc"),
        "{out:?}"
    );
}

/// Pearson correlation of the pair weights (i < j) of two sharing matrices.
fn pearson(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    let t = a.len();
    let pairs: Vec<(f64, f64)> = (0..t)
        .flat_map(|i| (i + 1..t).map(move |j| (a[i][j], b[i][j])))
        .collect();
    let n = pairs.len() as f64;
    let (ma, mb) = pairs
        .iter()
        .fold((0.0, 0.0), |s, p| (s.0 + p.0 / n, s.1 + p.1 / n));
    let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
    for (x, y) in &pairs {
        ab += (x - ma) * (y - mb);
        aa += (x - ma) * (x - ma);
        bb += (y - mb) * (y - mb);
    }
    ab / (aa * bb).sqrt()
}

/// Must-show 3, second half: each workload whose pairs share unequally, traced through
/// `tdmap cc` and through `tdmap gcc` at 8 threads, gives sharing matrices (amount of
/// shared memory, `tdmap analyze --json`) with a Pearson correlation of at least 0.99.
/// ep (nothing shared), alltoall and fft (all pairs equal) have no pattern to correlate:
/// both fronts match their expected matrices in the test above. cg's correlation once
/// went 0.985-0.995 from run to run: analyze fed the trace's first-touch records as
/// accesses, so whichever thread first touched a page shared its first line (cg's blocks
/// are half a page; thread 1 often starts before thread 0, the main thread, and its pair
/// got 29-35 lines instead of 28). Since first touches are no accesses there, both
/// fronts give the same line counts on every run (3 traces of each beside busy loops).
#[test]
fn cc_and_gcc_traces_of_each_workload_give_the_same_matrix() {
    let t = 8;
    let mut report = Vec::new();
    for w in workloads::ALL {
        if ["ep", "alltoall", "fft"].contains(&w.name) {
            continue;
        }
        let [cc, gcc] = ["tdmap", "tdmap-gcc"].map(|f| traced_by(f, w.name, w.size, t).trace);
        let (m_cc, _) = analyze_pairs(&cc, t, "amount");
        let (m_gcc, _) = analyze_pairs(&gcc, t, "amount");
        let r = pearson(&m_cc, &m_gcc);
        report.push(format!("{:<10} cc vs gcc: Pearson {r:.4}", w.name));
        assert!(r >= 0.99, "{}: {r:.4}\ncc  {m_cc:?}\ngcc {m_gcc:?}", w.name);
    }
    eprintln!("{}", report.join("\n"));
}

/// Must-show 3, first half: a Fortran OpenMP program (tests/fortran/neighbours.f90)
/// built with `tdmap gfortran` traces with libgomp, computes what the plain gfortran
/// build computes, and `tdmap analyze --json` shows threads t and t+1 sharing and no
/// other pair sharing more than a twentieth of that.
#[test]
fn a_fortran_openmp_program_built_with_tdmap_gfortran_shows_its_neighbours() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fortran/neighbours.f90");
    let (exe, out) = build(
        "gfortran",
        &["-O2", "-fopenmp"],
        std::slice::from_ref(&src),
        "neighbours",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = 8;
    let (trace, out) = trace_to("neighbours.trace", &[], &exe, &[t.to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(tdmap_trace::check(&trace).ok());
    let plain = scratch().join("legacy/neighbours-plain");
    let ok = Command::new("gfortran")
        .args(["-O2", "-fopenmp", "-o"])
        .arg(&plain)
        .arg(&src)
        .status()
        .unwrap();
    assert!(ok.success());
    let expected_out = super::run(Command::new(&plain).arg(t.to_string())).stdout;
    assert_eq!(out.stdout, expected_out, "tracing changed the result");

    let (m, json) = analyze_pairs(&trace, t, "amount");
    let touched = json["footprint_bytes"].as_f64().unwrap();
    let band = workloads::expected("stencil1d", t);
    let score = workloads::similarity(&m, &band, touched);
    let pairs = || (0..t).flat_map(|i| (i + 1..t).map(move |j| (i, j)));
    let near = pairs().filter(|&(i, j)| j == i + 1).map(|(i, j)| m[i][j]);
    let far = pairs().filter(|&(i, j)| j > i + 1).map(|(i, j)| m[i][j]);
    let (near, far) = (near.fold(f64::MAX, f64::min), far.fold(0.0, f64::max));
    eprintln!("fortran neighbours: similarity {score:.3}, least neighbour pair {near} B, most other pair {far} B");
    assert!(score >= 0.99, "similarity {score:.3}: {m:?}");
    assert!(
        near >= 20.0 * far.max(1.0),
        "neighbours {near} B, others up to {far} B: {m:?}"
    );
}

/// Threads t and t^1 exchange data only through libc: `memcpy` of the partner's buffer
/// and `strcpy` of its string. Neither compiler instruments inside libc, so without the
/// runtime's interceptors the threads would share nothing.
const COPY_PAIRS: &str = r#"#include <pthread.h>
#include <stdio.h>
#include <string.h>
#define T 4
#define N (1 << 14)
static char src[T][N] __attribute__((aligned(64)));
static char dst[T][N] __attribute__((aligned(64)));
static char str[T][1024] __attribute__((aligned(64)));
static char strd[T][1024] __attribute__((aligned(64)));
static pthread_barrier_t bar;
static void *work(void *arg) {
    long t = (long)arg, p = t ^ 1;
    for (int i = 0; i < N; i++) src[t][i] = (char)(i * (t + 1));
    for (int i = 0; i < 1023; i++) str[t][i] = 'a' + (i + t) % 26;
    pthread_barrier_wait(&bar);
    memcpy(dst[t], src[p], N);
    strcpy(strd[t], str[p]);
    return NULL;
}
int main(void) {
    pthread_t th[T];
    pthread_barrier_init(&bar, NULL, T);
    for (long t = 1; t < T; t++) pthread_create(&th[t], NULL, work, (void *)t);
    work(0);
    long sum = 0;
    for (long t = 1; t < T; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < T; t++) sum += dst[t][N - 1] + strd[t][1000];
    printf("checksum %ld\n", sum);
    return 0;
}
"#;

/// Item 5 of issue 17: a thread that `memcpy`s (and `strcpy`s) its partner's data
/// shares the copied lines with it, under both fronts.
#[test]
fn a_memcpy_of_another_threads_data_shows_as_sharing() {
    for front in ["cc", "gcc"] {
        let exe = compile_by(front, "copy_pairs.c", COPY_PAIRS);
        let (trace, out) = trace_to(&format!("copy-pairs-{front}.trace"), &[], &exe, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(tdmap_trace::check(&trace).ok());
        let (m, _) = analyze_pairs(&trace, 4, "amount");
        let copied = (1 << 14) + 1024;
        for (i, j) in [(0, 1), (2, 3)] {
            assert!(m[i][j] >= copied as f64, "{front}: pair {i},{j}: {m:?}");
        }
        for (i, j) in [(0, 2), (0, 3), (1, 2), (1, 3)] {
            assert!(m[i][j] < 1024.0, "{front}: pair {i},{j}: {m:?}");
        }
    }
}

/// Every kind of atomic gcc turns into a `__tsan_atomic*` call, hammered by 4 threads:
/// the tdmap runtime must perform each for real (the results are exact only if it does).
const ATOMICS: &str = r#"#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#define T 4
static long K;
static pthread_barrier_t bar;
static _Atomic char c8; static _Atomic short c16; static _Atomic int c32; static _Atomic long c64;
static __int128 c128; static _Atomic int lock; static long guarded; static unsigned long bits;
static int n32 = 0x0f;
static void *work(void *arg) {
    long t = (long)arg;
    pthread_barrier_wait(&bar);
    for (long k = 0; k < K; k++) {
        atomic_fetch_add(&c8, 1); atomic_fetch_sub_explicit(&c16, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&c32, 3, memory_order_acq_rel);
        long old = atomic_load_explicit(&c64, memory_order_acquire);
        while (!atomic_compare_exchange_weak(&c64, &old, old + 2)) {}
        __atomic_fetch_add(&c128, (__int128)1 << 70, __ATOMIC_SEQ_CST);
        while (atomic_exchange_explicit(&lock, 1, memory_order_acquire)) {}
        guarded++;
        atomic_store_explicit(&lock, 0, memory_order_release);
    }
    __atomic_fetch_or(&bits, 1ul << t, __ATOMIC_SEQ_CST);
    __atomic_fetch_xor(&bits, 1ul << (t + 8), __ATOMIC_SEQ_CST);
    __atomic_fetch_and(&bits, ~(1ul << (t + 16)), __ATOMIC_SEQ_CST);
    __sync_fetch_and_nand(&n32, 0xff);
    atomic_thread_fence(memory_order_seq_cst);
    return NULL;
}
int main(int argc, char **argv) {
    pthread_t th[T];
    K = argc > 1 ? atol(argv[1]) : 20000;
    pthread_barrier_init(&bar, NULL, T);
    bits = 0xff0000;
    for (long t = 0; t < T; t++) pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    printf("%d %d %d %ld %ld %ld %lx %x\n", (int)c8, (int)c16, (int)c32, (long)c64,
           (long)(c128 >> 70), guarded, bits, n32);
    return 0;
}
"#;

/// gcc's atomics keep their semantics under `tdmap gcc`, traced or not: the result is
/// the plain gcc build's. The untraced run is long (10^6 rounds per thread) so that a
/// non-atomic entry point would lose updates even on two cores.
#[test]
fn atomics_under_tdmap_gcc_behave_as_in_the_plain_build() {
    let exe = compile_by("gcc", "atomics.c", ATOMICS);
    let plain = scratch().join("c/atomics-plain");
    let ok = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&plain)
        .arg(scratch().join("c/atomics.c"))
        .args(["-lpthread", "-latomic"]) // __atomic_fetch_add_16 comes from libatomic
        .status()
        .unwrap();
    assert!(ok.success());
    // A broken exchange can leave the spin lock taken forever: bounded by timeout(1).
    let stdout = |prog: &Path, rounds: &str| {
        let out = Command::new("timeout")
            .arg("60")
            .arg(prog)
            .arg(rounds)
            .output();
        String::from_utf8_lossy(&out.unwrap().stdout).into_owned()
    };
    for rounds in ["1000000", "20000"] {
        let want = stdout(&plain, rounds);
        assert_eq!(stdout(&exe, rounds), want, "untraced, {rounds} rounds");
    }
    let want = stdout(&plain, "20000");
    let (_, out) = trace_to("atomics.trace", &[], &exe, &["20000".into()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), want, "traced");
}

/// C++ through `tdmap g++`: `std::atomic` (fetch_add, a compare-exchange loop, an
/// exchange spin lock with acquire/release) and virtual calls on objects whose vtable
/// pointers gcc reports with `__tsan_vptr_update`.
const CXX_ATOMICS: &str = r#"#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
struct Shape { virtual ~Shape() {} virtual long area() const { return 1; } };
struct Square : Shape { long s; explicit Square(long s) : s(s) {} long area() const override { return s * s; } };
static std::atomic<long> total{0}, maxv{0};
static std::atomic<bool> lock{false};
static long guarded = 0;
int main(int argc, char **argv) {
    long rounds = argc > 1 ? std::atol(argv[1]) : 20000;
    std::vector<std::thread> ts;
    for (long t = 0; t < 4; t++)
        ts.emplace_back([t, rounds] {
            for (long k = 0; k < rounds; k++) {
                Shape *p = k % 2 ? new Square(t + 1) : new Shape();
                total.fetch_add(p->area(), std::memory_order_relaxed);
                delete p;
                long m = maxv.load(std::memory_order_acquire);
                while (m < k && !maxv.compare_exchange_weak(m, k)) {}
                while (lock.exchange(true, std::memory_order_acquire)) {}
                guarded++;
                lock.store(false, std::memory_order_release);
            }
        });
    for (auto &t : ts) t.join();
    std::printf("%ld %ld %ld\n", total.load(), maxv.load(), guarded);
    return 0;
}
"#;

/// `tdmap g++` keeps C++ atomics and virtual calls working, traced or not.
#[test]
fn cxx_atomics_under_tdmap_gxx_behave_as_in_the_plain_build() {
    let exe = compile_by("g++", "cxx_atomics.cpp", CXX_ATOMICS);
    let plain = scratch().join("c/cxx_atomics-plain");
    let ok = Command::new("g++")
        .args(["-O1", "-o"])
        .arg(&plain)
        .arg(scratch().join("c/cxx_atomics.cpp"))
        .status()
        .unwrap();
    assert!(ok.success());
    let stdout = |prog: &Path, rounds: &str| {
        let out = Command::new("timeout")
            .arg("60")
            .arg(prog)
            .arg(rounds)
            .output();
        String::from_utf8_lossy(&out.unwrap().stdout).into_owned()
    };
    let want = stdout(&plain, "200000");
    assert_eq!(stdout(&exe, "200000"), want, "untraced");
    let (_, out) = trace_to("cxx_atomics.trace", &[], &exe, &["5000".into()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        stdout(&plain, "5000"),
        "traced"
    );
}
