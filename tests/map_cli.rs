//! `tdmap map` end to end: bad input gives one line and exit code 2, and the omp-places
//! output really pins the threads of an OpenMP program (compiled here with gcc -fopenmp)
//! where the mapping says.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tdmap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(args)
        .output()
        .expect("run tdmap")
}

fn scratch(name: &str) -> common::TempDir {
    common::TempDir::new(&format!("tdmap-map-cli-{name}"))
}

fn write_matrix(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = scratch("bad");
    let good = write_matrix(&dir, "good.csv", "0,1\n1,0\n");
    let cases = [
        (
            write_matrix(&dir, "rect.csv", "0,1,2\n1,0,2\n"),
            vec![],
            "not square",
        ),
        (
            write_matrix(&dir, "neg.csv", "0,-1\n-1,0\n"),
            vec![],
            ">= 0",
        ),
        (
            write_matrix(&dir, "nan.csv", "0,nan\n1,0\n"),
            vec![],
            ">= 0",
        ),
        (good.clone(), vec!["-a", "magic"], "unknown algorithm"),
        (good.clone(), vec!["-f", "xml"], "unknown format"),
        (good.clone(), vec!["oversubscribe"], "--oversubscribe"),
        (
            dir.join("missing.csv").to_str().unwrap().into(),
            vec![],
            "cannot read matrix",
        ),
    ];
    for (matrix, extra, needle) in cases {
        let mut args = vec!["map", "--matrix", &matrix];
        if extra == ["oversubscribe"] {
            args.extend(["-m", "core:1"]);
        } else {
            args.extend(["-m", "package:2 core:2"]);
            args.extend(extra);
        }
        let out = tdmap(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("tdmap: ") && err.contains(needle), "{err}");
    }
    let ok = tdmap(&["map", "--matrix", &good, "-m", "core:1", "--oversubscribe"]);
    assert_eq!(ok.status.code(), Some(0));
}

/// Cells of 1e308 are finite, but the cost summed to infinity and `--json` printed
/// `"cost": null` with exit 0.
#[test]
fn a_cost_that_overflows_is_exit_2_naming_the_matrix() {
    let dir = scratch("huge");
    let m = write_matrix(
        &dir,
        "huge.csv",
        "0,1e308,1e308\n1e308,0,1e308\n1e308,1e308,0\n",
    );
    for extra in [&["--json"][..], &[]] {
        let mut args = vec!["map", "--matrix", &m, "-m", "package:2 core:2"];
        args.extend(extra);
        let out = tdmap(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("tdmap: {m}: ")), "{err}");
        assert!(err.contains("finite cells small enough to sum"), "{err}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn json_reports_the_mapping_and_the_reference_costs() {
    let dir = scratch("json");
    let m = write_matrix(&dir, "m.csv", "0,1,9,1\n1,0,1,9\n9,1,0,1\n1,9,1,0\n");
    let out = tdmap(&[
        "map",
        "--matrix",
        &m,
        "-m",
        "package:2 core:2",
        "-a",
        "matching",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pkg = |t: usize| v["mapping"][t]["package"].as_u64().unwrap();
    assert_eq!(pkg(0), pkg(2));
    assert_eq!(pkg(1), pkg(3));
    assert_ne!(pkg(0), pkg(1));
    let cost = v["cost"].as_f64().unwrap();
    assert!(cost < v["compact_cost"].as_f64().unwrap(), "{v}");
    assert!(cost <= v["random_cost"].as_f64().unwrap(), "{v}");
    assert_eq!(
        (&v["format"], &v["version"]),
        (&"tdmap-mapping".into(), &2.into())
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let file = tdmap_map::MappingFile::parse(&text, std::path::Path::new("stdout")).unwrap();
    assert_eq!(
        file.mapping.len(),
        4,
        "what tdmap run --mapping and libmai read back"
    );
}

#[test]
fn trace_input_maps_the_sharing_pairs_of_the_trace() {
    use tdmap_sharing::patterns::{generate, Pattern};
    use tdmap_trace::{Access, Header, TraceStatus, Writer};
    let dir = scratch("trace");
    let path = dir.join("pairs.trace");
    let mut h = Header::new(vec!["gen".into()], "package:2 core:2");
    h.threads = 4;
    let w = Writer::create(&path, h).unwrap();
    let mut time = 0;
    // Pattern::Pairs shares between t and t^1; renumber so that pairs are (0,2) and (1,3).
    let rename = [0u32, 2, 1, 3];
    for (t, addrs) in generate(Pattern::Pairs, 4, 50, 64, 3) {
        let v: Vec<Access> = addrs
            .into_iter()
            .map(|addr| {
                time += 1;
                Access {
                    thread: rename[t as usize],
                    addr,
                    size: 8,
                    write: false,
                    time,
                }
            })
            .collect();
        w.append_accesses(rename[t as usize], &v).unwrap();
    }
    w.finish(TraceStatus::Complete).unwrap();
    let p = path.to_str().unwrap();
    let out = tdmap(&["map", "--trace", p, "-a", "matching", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["machine"], "package:2 core:2",
        "the trace's machine is used"
    );
    let pkg = |t: usize| v["mapping"][t]["package"].as_u64().unwrap();
    assert_eq!(pkg(0), pkg(2), "{v}");
    assert_eq!(pkg(1), pkg(3), "{v}");
    assert_ne!(pkg(0), pkg(1), "{v}");
    let missing = tdmap(&["map", "--trace", dir.join("none.trace").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    let neither = tdmap(&["map", "-m", "core:2"]);
    assert_eq!(neither.status.code(), Some(2));
}

const OMP_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
#pragma omp parallel
  {
    char path[64], line[256], allowed[256] = "?";
    snprintf(path, sizeof path, "/proc/self/task/%ld/status", (long)syscall(SYS_gettid));
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
      if (!strncmp(line, "Cpus_allowed_list:", 18)) sscanf(line + 18, "%255s", allowed);
    if (f) fclose(f);
#pragma omp critical
    printf("%d %d %s\n", omp_get_thread_num(), sched_getcpu(), allowed);
  }
  return 0;
}
"#;

fn compile_omp(dir: &Path) -> PathBuf {
    let src = dir.join("where.c");
    let bin = dir.join("where");
    std::fs::write(&src, OMP_PROGRAM).unwrap();
    let st = Command::new("gcc")
        .args(["-O1", "-fopenmp", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .expect("gcc (build-essential) is needed for this test");
    assert!(st.success(), "gcc -fopenmp failed");
    bin
}

/// Pairs (NAME, VALUE) from `export NAME=VALUE` lines.
fn exports(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

#[test]
fn omp_places_output_pins_openmp_threads_where_the_mapping_says() {
    let dir = scratch("omp");
    let bin = compile_omp(&dir);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n = cpus.clamp(1, 4);
    let rows: Vec<String> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| if i == j { "0" } else { "1" })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    let m = write_matrix(&dir, "m.csv", &(rows.join("\n") + "\n"));
    let mut saw_non_identity = false;
    for seed in 0..16 {
        let seed = seed.to_string();
        let base = [
            "map",
            "--matrix",
            m.as_str(),
            "-a",
            "random",
            "--seed",
            seed.as_str(),
        ];
        let json = tdmap(&[&base[..], &["--json"]].concat());
        assert_eq!(
            json.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&json.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let want: Vec<u64> = (0..n)
            .map(|t| v["mapping"][t]["os"].as_u64().unwrap())
            .collect();
        saw_non_identity |= want.iter().enumerate().any(|(t, &os)| os != t as u64);
        let places = tdmap(&[&base[..], &["-f", "omp-places"]].concat());
        let env = exports(&String::from_utf8_lossy(&places.stdout));
        assert_eq!(env.len(), 3, "{env:?}");
        let run = Command::new(&bin).envs(env).output().unwrap();
        let text = String::from_utf8_lossy(&run.stdout);
        let mut seen = 0;
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let t: usize = f[0].parse().unwrap();
            let cpu: u64 = f[1].parse().unwrap();
            assert_eq!(
                f[2],
                want[t].to_string(),
                "thread {t} allowed {} want {want:?}",
                f[2]
            );
            assert_eq!(cpu, want[t], "thread {t} ran on {cpu}, want {want:?}");
            seen += 1;
        }
        assert_eq!(seen, n, "{text}");
        if saw_non_identity && seed.parse::<u32>().unwrap() >= 2 {
            break;
        }
    }
    assert!(
        saw_non_identity || n == 1,
        "every seed gave the identity mapping"
    );
}

/// A dense 384 × 384 matrix whose weights have no structure, so that Scotch's random
/// choices decide ties: with libscotch's global generator each run gave another mapping.
fn dense_384(dir: &Path) -> String {
    let n = 384;
    let mut x: u64 = 5;
    let mut text = String::new();
    let mut m = vec![0u64; n * n];
    for i in 0..n {
        for j in 0..i {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let w = (x >> 33) % 1000;
            m[i * n + j] = w;
            m[j * n + i] = w;
        }
    }
    for row in m.chunks(n) {
        let cells: Vec<String> = row.iter().map(u64::to_string).collect();
        text.push_str(&cells.join(","));
        text.push('\n');
    }
    write_matrix(dir, "dense384.csv", &text)
}

/// Issue 18 must-show 4: `drb` with a seed is deterministic (it was not: 8 runs gave 8
/// mappings at 384 threads), and another seed may give another mapping.
#[test]
fn drb_with_a_seed_gives_identical_output_at_384_threads() {
    let dir = scratch("drb384");
    let matrix = dense_384(&dir);
    let args = |seed: &'static str| {
        vec![
            "map",
            "--matrix",
            matrix.as_str(),
            "--machine",
            "package:8 core:24 pu:2",
            "-a",
            "drb",
            "--seed",
            seed,
        ]
    };
    let a = tdmap(&args("1"));
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let b = tdmap(&args("1"));
    assert!(!a.stdout.is_empty());
    assert_eq!(a.stdout, b.stdout, "two runs with --seed 1 differ");
}

/// The CPUs this test process may use, from /proc/self/status.
fn allowed_cpus() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("")
        .trim()
        .to_string()
}

fn taskset_tdmap(cpu: &str, args: &[&str]) -> Output {
    Command::new("taskset")
        .args(["-c", cpu, env!("CARGO_BIN_EXE_tdmap")])
        .args(args)
        .output()
        .expect("run taskset")
}

/// Issue 20 must-show 4: under `taskset -c 1`, tdmap maps onto CPU 1 only (hwloc alone
/// still reports both CPUs allowed), says so on stderr and in JSON, and --whole-machine
/// maps onto every CPU again.
#[test]
fn under_taskset_c_1_omp_places_use_only_cpu_1() {
    let cpus = allowed_cpus();
    let has_taskset = Command::new("taskset").arg("-V").output().is_ok();
    if !has_taskset || !(cpus == "0-1" || cpus.starts_with("0-") || cpus.starts_with("0,1")) {
        eprintln!("skipped: needs taskset and CPUs 0 and 1 allowed (allowed: {cpus:?})");
        return;
    }
    let dir = scratch("taskset");
    let one = write_matrix(&dir, "one.csv", "0\n");
    let two = write_matrix(&dir, "two.csv", "0,5\n5,0\n");
    let out = taskset_tdmap("1", &["map", "--matrix", &one, "--format", "omp-places"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(text.contains("export OMP_PLACES=\"{1}\"\n"), "{text}");
    assert!(err.contains("restricted to CPUs 1 of"), "{err}");
    // Two threads on one allowed CPU: refused, or both on CPU 1 when oversubscribing.
    let out = taskset_tdmap("1", &["map", "--matrix", &two]);
    assert_eq!(out.status.code(), Some(2));
    let out = taskset_tdmap("1", &["map", "--matrix", &two, "--oversubscribe"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("OMP_PLACES=\"{1},{1}\""), "{text}");
    let out = taskset_tdmap("1", &["map", "--matrix", &one, "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["restricted"], serde_json::json!([1]), "{json}");
    assert_eq!(json["mapping"][0]["os"], 1);
    let out = taskset_tdmap("1", &["map", "--matrix", &two, "--whole-machine"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("OMP_PLACES=\"{0},{1}\""), "{text}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("restricted"));
    let out = taskset_tdmap("1", &["topo", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["summary"]["pus"], 1);
    assert_eq!(json["restricted"]["allowed"], serde_json::json!([1]));
}

/// A 2-D halo as an edge list and as Matrix Market give the same mapping and cost as
/// its dense CSV, and neighbouring ranks share hosts on a cluster.
#[test]
fn sparse_inputs_map_like_the_dense_matrix() {
    let dir = scratch("sparse");
    let side = 8;
    let n = side * side;
    let mut dense = vec![vec![0u32; n]; n];
    let mut edges = String::from("# 8x8 halo\n");
    let mut mtx = format!("%%MatrixMarket matrix coordinate integer symmetric\n{n} {n} ");
    let mut entries = Vec::new();
    for r in 0..side {
        for c in 0..side {
            let i = r * side + c;
            for j in [
                (c + 1 < side).then_some(i + 1),
                (r + 1 < side).then_some(i + side),
            ]
            .into_iter()
            .flatten()
            {
                dense[i][j] = 2;
                dense[j][i] = 2;
                edges.push_str(&format!("{i} {j} 2\n"));
                entries.push(format!("{} {} 2\n", j + 1, i + 1));
            }
        }
    }
    mtx.push_str(&format!("{}\n{}", entries.len(), entries.concat()));
    let csv: String = dense
        .iter()
        .map(|r| r.iter().map(u32::to_string).collect::<Vec<_>>().join(",") + "\n")
        .collect();
    let machine = "cluster:4x(package:2 core:8)";
    let mut results = Vec::new();
    for (name, text) in [("h.csv", csv), ("h.edges", edges), ("h.mtx", mtx)] {
        let path = write_matrix(&dir, name, &text);
        let out = tdmap(&["map", "--matrix", &path, "-m", machine, "--json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let hosts: Vec<String> = (0..n)
            .map(|t| json["mapping"][t]["host"].as_str().unwrap().to_string())
            .collect();
        results.push((json["cost"].as_f64().unwrap(), hosts));
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0], results[2]);
    // Neighbours share hosts: at least 3 of 4 neighbour pairs (a random mapping: 1 in 4).
    let hosts = &results[0].1;
    let pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|i| [(i, i + 1), (i, i + side)])
        .filter(|&(i, j)| j < n && (j != i + 1 || j % side != 0))
        .collect();
    let same = pairs.iter().filter(|&&(i, j)| hosts[i] == hosts[j]).count();
    assert!(
        same * 4 >= pairs.len() * 3,
        "{same} of {} pairs: {hosts:?}",
        pairs.len()
    );
}

#[test]
fn cluster_and_hosts_errors_name_the_line_and_the_fix() {
    let dir = scratch("hosts");
    let m = write_matrix(&dir, "m.csv", "0,1\n1,0\n");
    let dup = write_matrix(&dir, "dup.txt", "node[01-03]\nnode02\n");
    let blank = write_matrix(&dir, "blank.txt", "a\n\nb\n");
    let three = write_matrix(&dir, "three.txt", "a,b,c\n");
    for (extra, needle) in [
        (
            vec!["--hosts", &dup],
            "\"node02\" on line 2 is already on line 1",
        ),
        (vec!["--hosts", &blank], "line 2 is blank"),
        (
            vec!["-m", "cluster:2x(core:1)", "--hosts", &three],
            "3 host names for a cluster of 2",
        ),
        (vec!["-m", "cluster:2(core:1)"], "cluster:Nx(HOST)"),
        (vec!["-m", "cluster:5000x(core:1)"], "5000 hosts"),
        (vec!["-m", "cluster:1x(core:1)"], "--oversubscribe"),
    ] {
        let mut args = vec!["map", "--matrix", &m];
        args.extend(extra);
        let out = tdmap(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let ok = write_matrix(&dir, "ok.txt", "# two hosts\nnode[7-8]\n");
    let out = tdmap(&[
        "map", "--matrix", &m, "-m", "core:1", "--hosts", &ok, "-f", "rankfile",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("=node7 slot=0\n") && text.contains("=node8 slot=0\n"),
        "{text}"
    );
}
