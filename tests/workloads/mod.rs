//! The workloads under workloads/ and the sharing each one has by construction, as a
//! T*T matrix of weights (0 = no sharing), for comparing with what a trace shows.

/// One workload: its program name and a small size argument that keeps tests fast.
pub struct Workload {
    /// Program name under workloads/ (build/<compiler>/<name>).
    pub name: &'static str,
    /// The SIZE argument used in tests.
    pub size: &'static str,
}

/// Every workload, with test sizes.
pub const ALL: &[Workload] = &[
    Workload {
        name: "ep",
        size: "4096",
    },
    Workload {
        name: "stencil1d",
        size: "4",
    },
    Workload {
        name: "stencil3d",
        size: "4",
    },
    Workload {
        name: "pairs",
        size: "128",
    },
    Workload {
        name: "alltoall",
        size: "256",
    },
    Workload {
        name: "pipeline",
        size: "32",
    },
    Workload {
        name: "cginit",
        size: "2048",
    },
    Workload {
        name: "phase",
        size: "64",
    },
    Workload {
        name: "cg",
        size: "8",
    },
    Workload {
        name: "mg",
        size: "32",
    },
    Workload {
        name: "fft",
        size: "8",
    },
    Workload {
        name: "spinbar",
        size: "2",
    },
];

/// The expected sharing of workload `name` run with `t` threads.
pub fn expected(name: &str, t: usize) -> Vec<Vec<f64>> {
    let w = |f: &dyn Fn(usize, usize) -> f64| -> Vec<Vec<f64>> {
        (0..t)
            .map(|i| (0..t).map(|j| if i == j { 0.0 } else { f(i, j) }).collect())
            .collect()
    };
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    match name {
        // Private data only.
        "ep" => w(&|_, _| 0.0),
        // Row blocks and pipeline stages: neighbours only. spinbar is stencil1d with a
        // spin barrier (its flag line, like pthread's barrier, adds the same to all
        // pairs); mg's levels are all split into the same row blocks.
        "stencil1d" | "pipeline" | "spinbar" | "mg" => w(&|i, j| flag(i.abs_diff(j) == 1)),
        // Row blocks whose SpMV reads a plane of p beyond each end, plus the reduction's
        // partial sums that every thread reads (the same lines for every pair).
        "cg" => w(&|i, j| 1.0 + flag(i.abs_diff(j) == 1)),
        // Face neighbours of the 3-D process grid, all faces holding the same lines.
        "stencil3d" => {
            let d = dims3(t);
            let at = |i: usize| [i % d[0], (i / d[0]) % d[1], i / (d[0] * d[1])];
            w(&|i, j| {
                let (a, b) = (at(i), at(j));
                let dist: usize = (0..3).map(|k| a[k].abs_diff(b[k])).sum();
                flag(dist == 1)
            })
        }
        // Thread i with thread T-1-i.
        "pairs" => w(&|i, j| flag(j == t - 1 - i)),
        // Every pair equally (transposes; fft's twiddle table is read by all).
        "alltoall" | "fft" => w(&|_, _| 1.0),
        // Everyone through x, and thread 0 also with everyone's rows (it initialised them).
        "cginit" => w(&|i, j| 1.0 + flag(i == 0 || j == 0)),
        // Buffer b is used by b, b^1 (first half) and (b+T/2)%T (second half); over the
        // whole run, lines shared = buffers whose users include both threads.
        "phase" => w(&|i, j| {
            let users = |b: usize| [b, b ^ 1, (b + t / 2) % t];
            (0..t)
                .filter(|&b| users(b).contains(&i) && users(b).contains(&j))
                .count() as f64
        }),
        other => panic!("no expected sharing for workload {other}"),
    }
}

/// The near pairs of the phase workload's first half, for checking each half alone.
pub fn phase_half(t: usize, second: bool) -> Vec<Vec<f64>> {
    (0..t)
        .map(|i| {
            (0..t)
                .map(|j| {
                    let partner = if second { (i + t / 2) % t } else { i ^ 1 };
                    if i != j && j == partner {
                        1.0
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect()
}

/// stencil3d's process grid: each prime factor of `t`, largest first, multiplies the
/// smallest dimension (the C program's dims3).
pub fn dims3(mut t: usize) -> [usize; 3] {
    let mut d = [1, 1, 1];
    while t > 1 {
        let p = largest_prime(t);
        let k = (0..3).fold(0, |k, j| if d[j] < d[k] { j } else { k });
        d[k] *= p;
        t /= p;
    }
    d
}

fn largest_prime(mut f: usize) -> usize {
    let mut big = 1;
    let mut q = 2;
    while q <= f {
        while f.is_multiple_of(q) {
            big = q;
            f /= q;
        }
        q += 1;
    }
    big
}

/// How well `detected` matches `expected`, in [-1, 1], over the pairs i < j.
///
/// Pearson correlation of the pair weights when the expected weights vary. When they
/// do not, correlation is undefined, so: all-zero expected (private data) scores
/// 1 - (shared lines / lines touched); uniform expected (all-to-all) scores
/// 1 - the coefficient of variation of the detected weights.
pub fn similarity(detected: &[Vec<f64>], expected: &[Vec<f64>], touched: f64) -> f64 {
    let t = expected.len();
    let pairs: Vec<(f64, f64)> = (0..t)
        .flat_map(|i| (i + 1..t).map(move |j| (i, j)))
        .map(|(i, j)| (detected[i][j], expected[i][j]))
        .collect();
    let n = pairs.len() as f64;
    let (md, me) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let (mut sde, mut sdd, mut see) = (0.0, 0.0, 0.0);
    for (d, e) in &pairs {
        sde += (d - md) * (e - me);
        sdd += (d - md) * (d - md);
        see += (e - me) * (e - me);
    }
    if see > 0.0 {
        return if sdd > 0.0 {
            sde / (sdd * see).sqrt()
        } else {
            0.0
        };
    }
    if me == 0.0 {
        return 1.0 - pairs.iter().map(|p| p.0).sum::<f64>() / touched.max(1.0);
    }
    1.0 - (sdd / n).sqrt() / md.max(f64::MIN_POSITIVE)
}

#[test]
fn dims3_matches_the_c_program() {
    assert_eq!(dims3(8), [2, 2, 2]);
    assert_eq!(dims3(16), [4, 2, 2]);
    assert_eq!(dims3(6), [3, 2, 1]);
}

#[test]
fn similarity_tells_matching_from_unrelated_patterns() {
    let band = expected("stencil1d", 8);
    let pairs = expected("pairs", 8);
    assert!(similarity(&band, &band, 1.0) > 0.999);
    assert!(similarity(&pairs, &band, 1.0) < 0.5);
    let uniform = expected("alltoall", 8);
    assert!(similarity(&uniform, &uniform, 1.0) > 0.999);
    assert!(similarity(&band, &uniform, 1.0) < 0.5);
    let none = expected("ep", 8);
    assert!(similarity(&none, &none, 100.0) > 0.999);
    assert!(similarity(&uniform, &none, 28.0) < 0.5);
}

/// Builds the runtime (same profile as `tdmap`) and every workload with gcc, `tdmap cc`
/// and `tdmap gcc` (the `tdmap` binary at path `tdmap`) under `dir` (`gcc/`, `tdmap/`,
/// `tdmap-gcc/`); returns `dir`. The test
/// crate must also declare `mod common`.
pub fn build(tdmap: &str, dir: &std::path::Path) -> std::path::PathBuf {
    use std::path::Path;
    use std::process::Command;
    crate::common::cargo_build("tdmap-rt");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let out = Command::new("make")
        .args(["-s", "-j2", "-C"])
        .arg(&src)
        .args(["gcc", "tdmap", "tdmap-gcc"])
        .arg(format!("TDMAP={tdmap}"))
        .arg(format!("BUILD={}", dir.display()))
        .output()
        .expect("make runs");
    assert!(
        out.status.success(),
        "make failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.to_path_buf()
}

/// The gcc build of workload `name` (all of them made once per test binary, under the
/// test target's temporary directory).
#[allow(dead_code)] // not every test binary that includes this module runs workloads
pub fn gcc(name: &str) -> std::path::PathBuf {
    use std::path::{Path, PathBuf};
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("run-tests");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let ok = std::process::Command::new("make")
            .args(["-s", "-j2", "-C"])
            .arg(&src)
            .arg("gcc")
            .arg(format!("BUILD={}", dir.display()))
            .status()
            .expect("make runs")
            .success();
        assert!(ok, "building the workloads failed");
        dir
    });
    dir.join("gcc").join(name)
}
