//! The perf page-fault sampler against the live kernel: a child process, held at a gate
//! until the sampler is attached, touches fresh pages in two threads; every page's first
//! touch must come back as a sample from one of the child's threads, on an online CPU.
//! A second child rewrites its pages after soft-dirty bits are cleared: the extra write
//! faults appear exactly when this kernel has soft-dirty tracking.
//!
//! Runs as root (or with perf_event_paranoid low enough). If the kernel refuses
//! perf_event_open the test fails with the kernel's reason and the fix: it never passes
//! without having sampled. Its own `main` (harness = false) because the child is this
//! executable re-run with `--toucher`.

#[path = "common/faults.rs"]
#[allow(dead_code)]
mod faults;
#[path = "common/region.rs"]
#[allow(dead_code)]
mod region;

use faults::{Run, Session};
use std::collections::HashSet;
use std::time::Duration;
use tdmap_sys::perf::{PerfSampler, SamplerConfig};
use tdmap_sys::{inject_soft_dirty_faults, soft_dirty_available, FsRoot};

const PAGES: usize = 1500;
const LIMIT: Duration = Duration::from_secs(30);

fn exe() -> std::path::PathBuf {
    std::env::current_exe().expect("own path")
}

fn start(args: &[&str]) -> Session {
    Session::start(&exe(), args, Some(&SamplerConfig::default()))
        .unwrap_or_else(|e| panic!("the perf sampler could not attach to a child: {e}"))
}

fn first_touch_faults_of_both_threads_are_sampled() {
    let mut s = start(&["first-touch", "2", &PAGES.to_string()]);
    s.go();
    let run = s.finish(LIMIT).unwrap();
    let tids: HashSet<u32> = run.values("tid").into_iter().map(|t| t as u32).collect();
    let workers: HashSet<u32> = tids.iter().copied().filter(|&t| t != run.pid).collect();
    assert_eq!(workers.len(), 2, "child reported {:?}", run.lines);
    assert_eq!(run.drained.lost, 0, "samples were lost: {:?}", run.drained);
    for smp in &run.samples {
        assert_eq!(smp.pid, run.pid, "sample of another process: {smp:?}");
        assert!(
            tids.contains(&smp.tid),
            "sample of tid {} not the child's {tids:?}",
            smp.tid
        );
        assert!(
            run.cpus.contains(&(smp.cpu as usize)),
            "CPU {} not online",
            smp.cpu
        );
    }
    let mine = run.in_region();
    assert!(
        mine.len() >= 2 * PAGES,
        "{} samples in the region, expected >= {}",
        mine.len(),
        2 * PAGES
    );
    assert_eq!(
        Run::distinct_pages(&mine),
        2 * PAGES,
        "not every touched page was sampled"
    );
    let by: HashSet<u32> = mine.iter().map(|s| s.tid).collect();
    assert_eq!(
        by, workers,
        "region faults came from {by:?}, the workers are {workers:?}"
    );
    let times_ordered = mine
        .windows(2)
        .filter(|w| w[0].cpu == w[1].cpu)
        .all(|w| w[0].time <= w[1].time);
    assert!(times_ordered, "samples of one CPU ring out of time order");
    println!(
        "ok   first-touch: {} samples, {} in the region ({} pages, 2 threads), CPUs {:?}",
        run.samples.len(),
        mine.len(),
        2 * PAGES,
        run.cpus
    );
}

fn soft_dirty_injection_matches_the_kernel() {
    let available = soft_dirty_available(&FsRoot::default()).expect("soft-dirty probe");
    let mut s = start(&["rewrite", &PAGES.to_string()]);
    s.go();
    s.until("touched", LIMIT).unwrap();
    let before = s.run.in_region().len();
    inject_soft_dirty_faults(&FsRoot::default(), s.pid() as i32).expect("clear_refs");
    s.go();
    let run = s.finish(LIMIT).unwrap();
    let extra = run.in_region().len() - before;
    assert!(
        before >= PAGES,
        "{before} first-touch samples for {PAGES} pages"
    );
    if available {
        assert!(
            extra >= PAGES,
            "soft-dirty on, but only {extra} extra faults for {PAGES} rewritten pages"
        );
    } else {
        assert_eq!(
            extra, 0,
            "soft-dirty off, yet {extra} extra faults on present pages"
        );
    }
    println!("ok   soft-dirty: available={available}, {extra} extra write faults after clear_refs 4 on {PAGES} pages");
}

fn a_missing_process_is_named_with_the_fix() {
    // pid_max is at most 2^22: this pid cannot exist.
    let err = PerfSampler::open(&FsRoot::default(), (1 << 22) + 1, &SamplerConfig::default())
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("perf_event_open") && msg.contains("exited"),
        "{msg}"
    );
    println!("ok   missing pid: {msg}");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--toucher") {
        faults::child_main(&args[1..]);
        return;
    }
    // `cargo test -- --list` and filters from the harness are ignored: three checks, all run.
    if args.iter().any(|a| a == "--list") {
        return;
    }
    first_touch_faults_of_both_threads_are_sampled();
    soft_dirty_injection_matches_the_kernel();
    a_missing_process_is_named_with_the_fix();
    println!("perf_faults: 3 checks passed");
}
