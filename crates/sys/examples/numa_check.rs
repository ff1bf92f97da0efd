//! The guest checker of the VM harness (tests/vm): inside a multi-node guest it checks
//! that `tdmap topo --json` sees the NUMA shape QEMU was given, and that the sys layer's
//! move_pages, mbind, set_mempolicy and sched_setaffinity wrappers really move pages and
//! pin threads, by querying each effect back through the kernel. It prints one `ok` or
//! `FAIL` line per check and exits 1 if any check failed, 2 on bad arguments.
//!
//! `--wrong-expectation` inverts one expectation on purpose (after moving pages to node 1
//! it expects them on node 0), so that the harness can prove it reports guest failures.

#[path = "../tests/common/region.rs"]
mod region;

use region::Region;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use tdmap_sys::{LinuxSys, MbindFlags, MemPolicy, Sys};

const USAGE: &str = "usage: numa_check --tdmap PATH --cpus-per-node C \
                     --distances \"10,21;21,10\" [--wrong-expectation]";

/// What the guest should look like, from the harness.
struct Opts {
    tdmap: PathBuf,
    cpus_per_node: usize,
    distances: Vec<Vec<i64>>,
    wrong_expectation: bool,
}

impl Opts {
    fn nodes(&self) -> usize {
        self.distances.len()
    }

    fn cpus(&self) -> usize {
        self.nodes() * self.cpus_per_node
    }

    /// QEMU gives node n the CPUs n*C .. (n+1)*C (tests/vm/vm.sh).
    fn node_of_cpu(&self, cpu: usize) -> i32 {
        (cpu / self.cpus_per_node) as i32
    }
}

fn parse_matrix(s: &str) -> Option<Vec<Vec<i64>>> {
    let rows: Vec<Vec<i64>> = s
        .split(';')
        .map(|r| r.split(',').map(|v| v.trim().parse().ok()).collect())
        .collect::<Option<_>>()?;
    let n = rows.len();
    (n >= 2 && rows.iter().all(|r| r.len() == n)).then_some(rows)
}

fn parse_args() -> Result<Opts, String> {
    let (mut tdmap, mut cpn, mut dist, mut wrong) = (None, None, None, false);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--tdmap" => tdmap = it.next().map(PathBuf::from),
            "--cpus-per-node" => cpn = it.next().and_then(|v| v.parse().ok()),
            "--distances" => dist = it.next().and_then(|v| parse_matrix(&v)),
            "--wrong-expectation" => wrong = true,
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    match (tdmap, cpn, dist) {
        (Some(tdmap), Some(cpus_per_node), Some(distances)) if cpus_per_node > 0 => Ok(Opts {
            tdmap,
            cpus_per_node,
            distances,
            wrong_expectation: wrong,
        }),
        _ => Err("missing or malformed --tdmap, --cpus-per-node or --distances".into()),
    }
}

/// The result of one check: a detail line, or what mismatched.
type Outcome = Result<String, String>;

/// A named check of the guest.
type Check = (&'static str, fn(&Opts) -> Outcome);

fn sys_err(e: tdmap_sys::SysError) -> String {
    e.to_string()
}

/// Fails at the first page whose status is not `node`, naming the page and the errno.
fn expect_all(what: &str, status: &[i32], node: i32) -> Result<(), String> {
    match status.iter().position(|&s| s != node) {
        None => Ok(()),
        Some(i) if status[i] < 0 => Err(format!(
            "{what}: page {i} of {} has error {} ({}), expected node {node}",
            status.len(),
            status[i],
            std::io::Error::from_raw_os_error(-status[i])
        )),
        Some(i) => Err(format!(
            "{what}: page {i} of {} is on node {}, expected node {node}",
            status.len(),
            status[i]
        )),
    }
}

fn query(r: &Region) -> Result<Vec<i32>, String> {
    LinuxSys.move_pages(0, &r.pages(), None).map_err(sys_err)
}

fn pin(cpu: usize) -> Result<(), String> {
    LinuxSys.set_affinity(0, &[cpu]).map_err(sys_err)
}

fn check_topo(o: &Opts) -> Outcome {
    let out = Command::new(&o.tdmap)
        .args(["topo", "--json"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", o.tdmap.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("tdmap topo --json: {}: {}", out.status, err.trim()));
    }
    let j: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let nodes = j["summary"]["numa_nodes"].as_u64();
    if nodes != Some(o.nodes() as u64) {
        return Err(format!(
            "tdmap sees {nodes:?} nodes, expected {}",
            o.nodes()
        ));
    }
    let matrix: Option<Vec<Vec<i64>>> =
        serde_json::from_value(j["distances"]["matrix"].clone()).ok();
    if matrix.as_ref() != Some(&o.distances) || j["distances"]["source"] != "hwloc" {
        return Err(format!(
            "tdmap distances {} from {}, expected {:?} from hwloc",
            j["distances"]["matrix"], j["distances"]["source"], o.distances
        ));
    }
    for n in 0..o.nodes() {
        let want: Vec<u64> = (n * o.cpus_per_node..(n + 1) * o.cpus_per_node)
            .map(|c| c as u64)
            .collect();
        let node = &j["nodes"][n];
        let got: Vec<u64> = node["pus"]
            .as_array()
            .map(|pus| {
                pus.iter()
                    .filter_map(|p| j["pus"][p.as_u64()? as usize]["os"].as_u64())
                    .collect()
            })
            .unwrap_or_default();
        if node["os"].as_u64() != Some(n as u64) || got != want {
            return Err(format!(
                "node L#{n} is {node}, expected P#{n} with CPUs {want:?}"
            ));
        }
    }
    Ok(format!(
        "{} nodes, distances {:?}, CPUs by node as given",
        o.nodes(),
        o.distances
    ))
}

/// Pins the caller to each CPU in turn; reads the mask and the running CPU back, and
/// checks that a first touch lands on that CPU's node.
fn check_pinning(o: &Opts) -> Outcome {
    for cpu in 0..o.cpus() {
        pin(cpu)?;
        let mask = LinuxSys.get_affinity(0).map_err(sys_err)?;
        let now = LinuxSys.current_cpu().map_err(sys_err)?;
        if mask != [cpu] || now != cpu {
            return Err(format!(
                "pinned to CPU {cpu}, mask reads {mask:?}, running on {now}"
            ));
        }
        let r = Region::new(16);
        r.touch();
        expect_all(
            &format!("first touch on CPU {cpu}"),
            &query(&r)?,
            o.node_of_cpu(cpu),
        )?;
    }
    Ok(format!(
        "CPUs 0-{}: mask, sched_getcpu and first-touch node as expected",
        o.cpus() - 1
    ))
}

fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Pins another thread by its tid, as tdmap pins an application's threads.
fn check_pin_other_thread(o: &Opts) -> Outcome {
    use std::sync::mpsc::channel;
    let cpu = o.cpus() - 1;
    let (tid_tx, tid_rx) = channel();
    let (go_tx, go_rx) = channel::<()>();
    let t = std::thread::spawn(move || {
        tid_tx.send(gettid()).unwrap();
        go_rx.recv().unwrap();
        let mask = LinuxSys.get_affinity(0).map_err(sys_err)?;
        let now = LinuxSys.current_cpu().map_err(sys_err)?;
        Ok::<_, String>((mask, now))
    });
    let tid = tid_rx.recv().map_err(|e| e.to_string())?;
    LinuxSys.set_affinity(tid, &[cpu]).map_err(sys_err)?;
    go_tx.send(()).map_err(|e| e.to_string())?;
    let (mask, now) = t.join().map_err(|_| "thread panicked".to_string())??;
    if mask != [cpu] || now != cpu {
        return Err(format!(
            "tid {tid} pinned to CPU {cpu}, reads mask {mask:?}, runs on {now}"
        ));
    }
    Ok(format!(
        "tid {tid} pinned from outside to CPU {cpu}, runs there"
    ))
}

/// Moves 256 touched pages to every node in turn and queries them back.
fn check_move_pages(o: &Opts) -> Outcome {
    pin(0)?;
    let r = Region::new(256);
    r.touch();
    expect_all("first touch on CPU 0", &query(&r)?, 0)?;
    let order = (1..o.nodes()).chain([0]);
    for target in order.map(|n| n as i32) {
        let targets = vec![target; r.pages().len()];
        let moved = LinuxSys
            .move_pages(0, &r.pages(), Some(&targets))
            .map_err(sys_err)?;
        expect_all(&format!("move_pages to node {target}"), &moved, target)?;
        // The deliberate mistake: claim pages moved to node 1 are still on node 0.
        let expected = if o.wrong_expectation && target == 1 {
            0
        } else {
            target
        };
        expect_all(
            &format!("query after move to node {target}"),
            &query(&r)?,
            expected,
        )?;
    }
    Ok(format!(
        "256 pages moved to nodes 1..{} and back to 0, queried back",
        o.nodes() - 1
    ))
}

fn expect_policy(r: &Region, want: &MemPolicy) -> Result<(), String> {
    let got = LinuxSys.get_mempolicy(Some(r.addr())).map_err(sys_err)?;
    if &got != want {
        return Err(format!("get_mempolicy reads {got:?}, expected {want:?}"));
    }
    Ok(())
}

fn set_policy(r: &Region, p: &MemPolicy, f: MbindFlags) -> Result<(), String> {
    LinuxSys.mbind(r.addr(), r.len(), p, f).map_err(sys_err)?;
    expect_policy(r, p)
}

/// Binds fresh pages to the last node from CPU 0, then moves them to node 0 with
/// MPOL_MF_MOVE; and a preferred node for fresh pages.
fn check_mbind_bind(o: &Opts) -> Outcome {
    pin(0)?;
    let last = o.nodes() - 1;
    let r = Region::new(64);
    set_policy(&r, &MemPolicy::Bind(vec![last]), MbindFlags::NONE)?;
    r.touch();
    expect_all(
        "bound to the last node, touched on CPU 0",
        &query(&r)?,
        last as i32,
    )?;
    set_policy(&r, &MemPolicy::Bind(vec![0]), MbindFlags::MOVE_STRICT)?;
    expect_all("rebound to node 0 with MPOL_MF_MOVE", &query(&r)?, 0)?;
    let p = Region::new(64);
    set_policy(&p, &MemPolicy::Preferred(last), MbindFlags::NONE)?;
    p.touch();
    expect_all(
        "preferred last node, touched on CPU 0",
        &query(&p)?,
        last as i32,
    )?;
    Ok(format!(
        "bind to node {last}, move to node 0, prefer node {last}: placed and read back"
    ))
}

/// Interleaves fresh pages over all nodes: consecutive pages take the nodes in turn.
fn check_mbind_interleave(o: &Opts) -> Outcome {
    pin(0)?;
    let n = o.nodes();
    let r = Region::new(64);
    set_policy(
        &r,
        &MemPolicy::Interleave((0..n).collect()),
        MbindFlags::NONE,
    )?;
    r.touch();
    let st = query(&r)?;
    let first = st[0];
    for (i, &s) in st.iter().enumerate() {
        let want = (first + i as i32).rem_euclid(n as i32);
        if s != want {
            return Err(format!(
                "interleave: page {i} on node {s}, expected {want} (round-robin)"
            ));
        }
    }
    Ok(format!(
        "64 pages round-robin over {n} nodes, policy read back"
    ))
}

/// A thread policy from set_mempolicy places the thread's fresh pages.
fn check_set_mempolicy(o: &Opts) -> Outcome {
    let last = o.nodes() - 1;
    std::thread::spawn(move || {
        pin(0)?;
        let p = MemPolicy::Bind(vec![last]);
        LinuxSys.set_mempolicy(&p).map_err(sys_err)?;
        let got = LinuxSys.get_mempolicy(None).map_err(sys_err)?;
        if got != p {
            return Err(format!("thread policy reads {got:?}, expected {p:?}"));
        }
        let r = Region::new(32);
        r.touch();
        expect_all("thread bound to the last node", &query(&r)?, last as i32)?;
        Ok(format!(
            "thread policy bind to node {last}: read back, pages placed"
        ))
    })
    .join()
    .map_err(|_| "thread panicked".to_string())?
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("numa_check: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let checks: [Check; 7] = [
        ("topo", check_topo),
        ("pinning", check_pinning),
        ("pin-other-thread", check_pin_other_thread),
        ("move_pages", check_move_pages),
        ("mbind-bind", check_mbind_bind),
        ("mbind-interleave", check_mbind_interleave),
        ("set_mempolicy", check_set_mempolicy),
    ];
    let mut failed = 0;
    for (name, check) in checks {
        match check(&o) {
            Ok(detail) => println!("ok   {name}: {detail}"),
            Err(why) => {
                println!("FAIL {name}: {why}");
                failed += 1;
            }
        }
    }
    let all: Vec<usize> = (0..o.cpus()).collect();
    let _ = LinuxSys.set_affinity(0, &all);
    println!("numa_check: {failed} of {} checks failed", checks.len());
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
