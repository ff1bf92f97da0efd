//! The VM guest checker of the `kernel` sampler (tests/vm): inside a multi-node guest it
//! attaches the perf page-fault sampler to child processes and checks that it sees
//! (1) every first touch, also of a program started by fork, attach, exec, (2) the extra
//! write faults that clearing soft-dirty bits injects, and (3) NUMA-balancing hinting
//! faults: a thread on node 1 writing pages first touched on node 0 faults again on
//! pages already present, and (4) the size of the page a fault hit (2 MiB on transparent
//! huge pages, which the guest kernel makes by default). It prints one `ok` or
//! `FAIL` line per check, then `fault_check: N of M checks failed`; exit 1 if any failed,
//! 2 on bad arguments. The children are this executable re-run with `--toucher`.

#[path = "../tests/common/faults.rs"]
#[allow(dead_code)]
mod faults;
#[path = "../tests/common/region.rs"]
#[allow(dead_code)]
mod region;
// foreign_pid needs setpriv(1), which the guest lacks; it runs on the host only.
#[path = "../tests/common/sampler_checks.rs"]
#[allow(dead_code)]
mod sampler_checks;

use faults::Session;
use sampler_checks::Outcome;
use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;
use tdmap_sys::perf::{SamplerConfig, Scope};
use tdmap_sys::FsRoot;

const USAGE: &str =
    "usage: fault_check --cpus-per-node C [--millis MS] [--pages N] [--require-soft-dirty]";

struct Opts {
    cpus_per_node: usize,
    millis: usize,
    pages: usize,
    require_soft_dirty: bool,
}

/// A named check of the guest.
type Check = (&'static str, fn(&Path, &Opts) -> Outcome);

fn parse_args(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        cpus_per_node: 0,
        millis: 3000,
        pages: 2048,
        require_soft_dirty: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = || {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or(format!("{a} needs a number"))
        };
        match a.as_str() {
            "--cpus-per-node" => o.cpus_per_node = num()?,
            "--millis" => o.millis = num()?,
            "--pages" => o.pages = num()?,
            "--require-soft-dirty" => o.require_soft_dirty = true,
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    if o.cpus_per_node == 0 {
        return Err("--cpus-per-node is required".into());
    }
    Ok(o)
}

/// A thread pinned to node 1's first CPU writes, for `millis` ms, pages first touched on
/// CPU 0 (node 0). With numa_balancing on, the kernel's scanner unmaps them now and then
/// and each later access faults again: samples from the writer on pages already present.
fn numa_hinting(exe: &Path, o: &Opts) -> Outcome {
    let fs = FsRoot::default();
    let nb = fs
        .read("/proc/sys/kernel/numa_balancing")
        .map_err(|e| e.to_string())?;
    if nb.trim() != "1" {
        return Err(format!(
            "kernel.numa_balancing is {}, the check needs 1",
            nb.trim()
        ));
    }
    let args = [
        "remote".to_string(),
        o.pages.to_string(),
        "0".into(),
        o.cpus_per_node.to_string(),
        o.millis.to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut s = Session::start(exe, &args, Some(&SamplerConfig::default()))?;
    s.go();
    let run = s.finish(Duration::from_millis(o.millis as u64 + 60_000))?;
    let tids = run.values("tid");
    let (toucher, writer) = match tids[..] {
        [t, w, ..] => (t as u32, w as u32),
        _ => return Err(format!("child reported {:?}", run.lines)),
    };
    let mine = run.in_region();
    let first = mine.iter().filter(|s| s.tid == toucher).count();
    let again: Vec<_> = mine.iter().filter(|s| s.tid == writer).copied().collect();
    let mut per_page: HashMap<u64, usize> = HashMap::new();
    for s in &mine {
        *per_page.entry(s.addr / 4096).or_default() += 1;
    }
    let refaulted = per_page.values().filter(|&&n| n >= 2).count();
    let elsewhere = again
        .iter()
        .filter(|s| s.cpu as usize != o.cpus_per_node)
        .count();
    let start = mine.iter().map(|s| s.time).min().unwrap_or(0);
    let first_hint_ms = again
        .iter()
        .map(|s| s.time)
        .min()
        .map_or(0, |t| t.saturating_sub(start) / 1_000_000);
    let detail = format!(
        "{} pages: {first} first touches on node 0, {} faults by the node-1 writer on present \
         pages ({refaulted} pages faulted more than once, the first {first_hint_ms} ms after \
         the first touch), {} writer passes, pages per node after: [{}], lost {}",
        o.pages,
        again.len(),
        run.values("passes").first().copied().unwrap_or(0),
        run.lines
            .iter()
            .find_map(|l| l.strip_prefix("pages_per_node "))
            .unwrap_or("?"),
        run.drained.lost
    );
    if first < o.pages || again.is_empty() || mine.len() <= o.pages {
        return Err(format!("no hinting faults seen: {detail}"));
    }
    if elsewhere > 0 {
        return Err(format!(
            "{elsewhere} writer samples not on its CPU {}: {detail}",
            o.cpus_per_node
        ));
    }
    Ok(detail)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--toucher") {
        faults::child_main(&args[1..]);
        return ExitCode::SUCCESS;
    }
    let o = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("fault_check: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let exe = std::env::current_exe().expect("own path");
    let checks: [Check; 9] = [
        ("sampler-first-touch", |e, o| {
            sampler_checks::first_touch(e, o.pages / 2, Scope::Auto)
        }),
        ("sampler-first-touch-per-process", |e, o| {
            sampler_checks::first_touch(e, o.pages / 2, Scope::Process)
        }),
        ("sampler-first-touch-system-wide", |e, o| {
            sampler_checks::first_touch(e, o.pages / 2, Scope::System)
        }),
        ("sampler-gated-exec", |e, o| {
            sampler_checks::gated_exec(e, o.pages / 2)
        }),
        ("sampler-overflow", |e, o| {
            sampler_checks::overflow(e, o.pages / 2)
        }),
        ("sampler-soft-dirty", |e, o| {
            sampler_checks::soft_dirty(e, o.pages, o.require_soft_dirty)
        }),
        ("sampler-numa-hinting", numa_hinting),
        ("sampler-page-size", |e, _| sampler_checks::page_size(e)),
        ("sampler-missing-pid", |_, _| sampler_checks::missing_pid()),
    ];
    let mut failed = 0;
    for (name, check) in checks {
        match check(&exe, &o) {
            Ok(detail) => println!("ok   {name}: {detail}"),
            Err(why) => {
                println!("FAIL {name}: {why}");
                failed += 1;
            }
        }
    }
    println!("fault_check: {failed} of {} checks failed", checks.len());
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
