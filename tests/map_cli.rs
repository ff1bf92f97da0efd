//! `tdmap map` end to end: bad input gives one line and exit code 2, and the omp-places
//! output really pins the threads of an OpenMP program (compiled here with gcc -fopenmp)
//! where the mapping says.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tdmap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(args)
        .output()
        .expect("run tdmap")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdmap-map-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
        (&"tdmap-mapping".into(), &1.into())
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
