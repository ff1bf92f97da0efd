//! Issue 19 item 5: `tdmap trace` records forked children. Their threads become tasks
//! numbered by process, then by thread. Their shared mappings are keyed by backing object,
//! so `tdmap analyze` sees sharing between processes, as kMAF's physical addresses do.
//! Their private pages keep their process, so parent and child at one address share nothing.
//! A child that is killed or execs leaves a readable trace. An instrumented program that a
//! traced process execs, directly or through a shell, is a process of its own.

mod common;
#[allow(dead_code)] // this binary uses `similarity` only
mod workloads;

use common::tdmap;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use tdmap_trace::{Event, ProcessInfo, Reader, TraceStatus};
use tdmap_wire::pagekey::PageKey;

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");
/// forkshare's size: pages per region (and per private buffer).
const PAGES: u64 = 64;

fn scratch() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace-fork")
}

/// `tdmap cc` builds of forkshare and of `tests/trace/forks.c`, once per test binary.
fn built() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        common::cargo_build("tdmap-rt");
        let dir = scratch().join("build");
        let out = Command::new("make")
            .args(["-s", "-C"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads"))
            .arg(format!("TDMAP={TDMAP}"))
            .arg(format!("BUILD={}", dir.display()))
            .arg(dir.join("tdmap/forkshare"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let forks = dir.join("forks");
        let src = common::test_path("trace/forks.c");
        let out = tdmap(&[
            "cc",
            "-O2",
            "-o",
            forks.to_str().unwrap(),
            src.to_str().unwrap(),
            "-lpthread",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (dir.join("tdmap/forkshare"), forks)
    })
}

/// Traces `prog args` into a directory of its own (named `name`); the trace and the output.
fn trace(name: &str, prog: &Path, args: &[&str]) -> (PathBuf, Output) {
    let dir = scratch().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join(format!("{name}.trace"));
    let out = Command::new(TDMAP)
        .args(["trace", "-o", t.to_str().unwrap(), "--"])
        .arg(prog)
        .args(args)
        .output()
        .unwrap();
    // Every scratch file, the children's and the maps snapshots included, is gone.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != t.file_name().unwrap())
        .collect();
    assert!(left.is_empty(), "scratch files left: {left:?}");
    (t, out)
}

fn check_json(t: &Path) -> serde_json::Value {
    let out = tdmap(&["trace-check", "--json", t.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["problems"].as_array().unwrap().is_empty(), "{v}");
    v
}

fn processes(t: &Path) -> Vec<ProcessInfo> {
    Reader::open(t).unwrap().processes().to_vec()
}

/// forkshare 4, traced once per test binary.
fn forkshare() -> &'static PathBuf {
    static T: OnceLock<PathBuf> = OnceLock::new();
    T.get_or_init(|| {
        let (t, out) = trace("forkshare", &built().0, &["4", &PAGES.to_string()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("forkshare checksum"));
        t
    })
}

/// Must-show 5: the trace of 4 forked processes where 2k and 2k+1 share region k, read
/// by `tdmap analyze`, shows the pairs (0,1) and (2,3).
#[test]
fn analyze_of_traced_forkshare_shows_the_two_sharing_pairs() {
    let t = forkshare();
    let v = check_json(t);
    assert_eq!(v["header"]["status"], "Complete");
    let procs = processes(t);
    let table: Vec<(u32, u32, u32, Option<u32>)> = procs
        .iter()
        .map(|p| (p.index, p.first_task, p.tasks, p.parent))
        .collect();
    assert_eq!(
        table,
        [
            (0, 0, 1, None),
            (1, 1, 1, Some(0)),
            (2, 2, 1, Some(0)),
            (3, 3, 1, Some(0))
        ]
    );
    let out = tdmap(&["analyze", "--json", t.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cells: Vec<f64> = r["matrix"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect();
    let m: Vec<Vec<f64>> = cells.chunks(4).map(|r| r.to_vec()).collect();
    let want: Vec<Vec<f64>> = (0..4)
        .map(|i| {
            (0..4)
                .map(|j| f64::from(i != j && i / 2 == j / 2))
                .collect()
        })
        .collect();
    let sim = workloads::similarity(&m, &want, 1.0);
    assert!(
        sim >= 0.9,
        "correlation {sim:.3} with the pairs; matrix {m:?}"
    );
    let top = &r["top_pairs"].as_array().unwrap()[..2];
    let mut pairs: Vec<(u64, u64)> = top
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect();
    pairs.sort();
    assert_eq!(pairs, [(0, 1), (2, 3)], "{top:?}");
}

/// Lines (64 B) each task touched, by key, and by (process, address) for private keys.
fn lines(t: &Path) -> (Vec<HashSet<u64>>, Vec<HashSet<u64>>) {
    let (mut keyed, mut private) = (vec![HashSet::new(); 4], vec![HashSet::new(); 4]);
    for e in Reader::open(t).unwrap().events() {
        if let Event::Access(a) = e.unwrap() {
            keyed[a.thread as usize].insert(a.addr >> 6);
            if let PageKey::Private { addr, .. } = PageKey::decode(a.addr) {
                private[a.thread as usize].insert(addr >> 6);
            }
        }
    }
    (keyed, private)
}

/// The memfd region is mapped at a different address in processes 2 and 3, and still
/// counts as shared (one key per page of the object); private buffers at the same address
/// in two processes never count as shared.
#[test]
fn a_memfd_at_two_addresses_is_shared_and_one_private_address_in_two_processes_is_not() {
    let (keyed, private) = lines(forkshare());
    let region = PAGES * 4096 / 64;
    let common = |a: &HashSet<u64>, b: &HashSet<u64>| a.intersection(b).count() as u64;
    // The odd region is the memfd: its lines are shared keys of one object.
    let objects_23: HashMap<u32, u64> = keyed[2]
        .intersection(&keyed[3])
        .filter_map(|&l| match PageKey::decode(l << 6) {
            PageKey::Shared { object, .. } => Some(object),
            _ => None,
        })
        .fold(HashMap::new(), |mut m, o| {
            *m.entry(o).or_default() += 1;
            m
        });
    assert!(
        objects_23.values().any(|&n| n >= region),
        "processes 2 and 3 share no whole region: {objects_23:?}"
    );
    // The case is exercised: processes 0 and 1 (both on the anonymous region, so no
    // mapping after the fork moves their heaps) write private buffers at the same addresses.
    let same = common(&private[0], &private[1]);
    assert!(same >= region, "{same} common private lines");
    // Processes 0 and 1 share their region, not their private buffers.
    let n = common(&keyed[0], &keyed[1]);
    assert!(
        (region..region + region / 16).contains(&n),
        "tasks 0 and 1 share {n} lines, their region has {region}"
    );
    // But across pairs they share only the barrier's few lines.
    for (i, j) in [(0, 2), (0, 3), (1, 2), (1, 3)] {
        let n = common(&keyed[i], &keyed[j]);
        assert!(n < region / 16, "tasks {i} and {j} share {n} lines");
    }
}

/// Tasks are numbered by process (fork order), then by thread in creation order.
#[test]
fn a_childs_threads_are_tasks_after_its_parents() {
    let (t, out) = trace("threads", &built().1, &["threads"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_json(&t);
    let p = processes(&t);
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].first_task, p[0].tasks), (0, 2));
    assert_eq!((p[1].first_task, p[1].tasks, p[1].parent), (2, 3, Some(0)));
    assert_eq!(p[1].thread_of(4), Some((1, 2)));
    let r = Reader::open(&t).unwrap();
    assert_eq!(r.header().threads, 5);
    assert_eq!(r.header().status, TraceStatus::Complete);
    let tids: HashSet<i32> = r.threads().iter().map(|t| t.os_tid).collect();
    assert_eq!(tids.len(), 5, "{:?}", r.threads());
    // Each of the child's three threads recorded its accesses as its own task.
    let mut per_task = [0u64; 5];
    for e in r.events() {
        if let Event::Access(a) = e.unwrap() {
            per_task[a.thread as usize] += 1;
        }
    }
    assert!(per_task.iter().all(|&n| n >= 4096), "{per_task:?}");
}

/// A child killed by a signal, or one that leaves through the variadic `execl` (which
/// the runtime cannot wrap), leaves its part Incomplete; the rest reads, with no hang.
/// Through `execv`, `exit` or `_exit` its part ends whole.
#[test]
fn a_killed_child_leaves_a_readable_trace_with_its_part_incomplete() {
    for (mode, child, whole) in [
        ("kill", TraceStatus::Incomplete, TraceStatus::Incomplete),
        ("execl", TraceStatus::Incomplete, TraceStatus::Incomplete),
        ("execv", TraceStatus::Complete, TraceStatus::Complete),
        ("exit", TraceStatus::Complete, TraceStatus::Complete),
    ] {
        let (t, out) = trace(mode, &built().1, &[mode]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{mode}: {err}");
        let v = check_json(&t);
        assert_eq!(v["header"]["status"], format!("{whole:?}"), "{mode}");
        let p = processes(&t);
        assert_eq!(p.len(), 2, "{mode}");
        assert_eq!(p[0].status, TraceStatus::Complete, "{mode}");
        assert_eq!(p[1].status, child, "{mode}");
        if child != TraceStatus::Complete {
            assert!(err.contains("process 1 (pid"), "{mode}: {err}");
        }
        let a = tdmap(&["analyze", t.to_str().unwrap()]);
        assert!(
            a.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&a.stderr)
        );
    }
}

/// Regression (trace_fork failed once, then 1 run in 12 beside 4 busy loops: forkshare's
/// processes 1 and 3 swapped, so the pairs read (0,3) and (1,2)): children are numbered
/// by the time of their fork, which the child used to read when it first ran, so the
/// order the scheduler ran them in decided. Here the second child always runs first.
#[test]
fn children_are_numbered_in_fork_order_whichever_runs_first() {
    let (t, out) = trace("late", &built().1, &["late"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if stdout.contains("unordered") {
        eprintln!("SKIPPED: SCHED_FIFO refused here, the children's order cannot be forced");
        return;
    }
    let pids: Vec<i32> = stdout
        .trim()
        .rsplit(' ')
        .take(2)
        .map(|p| p.parse().unwrap())
        .collect();
    let p = processes(&t);
    let got: Vec<i32> = p.iter().skip(1).map(|p| p.pid).collect();
    assert_eq!(got, [pids[1], pids[0]], "{stdout}: {p:?}");
}

/// (index, parent, status) of each process.
fn tree(t: &Path) -> Vec<(u32, Option<u32>, TraceStatus)> {
    processes(t)
        .iter()
        .map(|p| (p.index, p.parent, p.status))
        .collect()
}

/// fork + exec of an instrumented program: the forked child's part ends at the exec,
/// whole, and the program it exec'd (same pid) is the next process, its child. Through
/// `system` (an untraced shell between them) the exec'd program hangs under process 0.
#[test]
fn an_instrumented_program_execd_by_a_traced_process_is_a_process_of_its_own() {
    use TraceStatus::Complete;
    let (t, out) = trace("spawn", &built().1, &["spawn"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_json(&t);
    assert_eq!(
        tree(&t),
        [
            (0, None, Complete),
            (1, Some(0), Complete),
            (2, Some(1), Complete)
        ]
    );
    let p = processes(&t);
    assert_eq!(
        p[1].pid, p[2].pid,
        "the exec'd program replaced the forked child"
    );
    let (t, out) = trace("system", &built().1, &["system"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_json(&t);
    assert_eq!(tree(&t), [(0, None, Complete), (1, Some(0), Complete)]);
}

/// `tdmap trace -- sh -c './prog'`: the shell holds no runtime, but the program it names
/// does, so the trace is that program's; a shell naming none is still refused up front.
#[test]
fn a_shell_that_starts_an_instrumented_program_is_traced_through() {
    let forks = built().1.to_str().unwrap().to_string();
    let (t, out) = trace(
        "sh",
        Path::new("sh"),
        &["-c", &format!("{forks} threads; true")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_json(&t);
    assert_eq!(processes(&t).len(), 2);
    assert_eq!(Reader::open(&t).unwrap().header().threads, 5);
    let (_, out) = trace("sh-none", Path::new("sh"), &["-c", "true"]);
    common::assert_bad_input(&out, "nor does a program named in its arguments");
}

/// `tdmap map --trace` and `tdmap sim` read the multi-process trace: the mapping puts
/// each sharing pair on one core, and the simulator replays every task's accesses.
#[test]
fn map_and_sim_read_the_traced_forkshare() {
    let t = forkshare().to_str().unwrap();
    let m = [
        "map",
        "--trace",
        t,
        "--machine",
        "xeon-x7550-4s",
        "--format",
        "json",
    ];
    let out = tdmap(&m);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let core: Vec<u64> = r["mapping"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["core"].as_u64().unwrap())
        .collect();
    assert!(core[0] == core[1] && core[2] == core[3], "{core:?}");
    assert_ne!(core[0], core[2], "{core:?}");
    let out = tdmap(&["sim", t, "--machine", "xeon-x7550-4s", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["threads"], 4);
    assert_eq!(s["accesses"], check_json(forkshare())["accesses"]);
    assert_eq!(s["complete"], true);
}
