//! The perf page-fault sampler against the live kernel: a child process, held at a gate
//! until the sampler is attached, touches fresh pages in two threads; every page's first
//! touch must come back as a sample from one of the child's threads, on an online CPU.
//! Per-process events (inherited by the child's threads) and CPU-wide ones (filtered to
//! the child) must both see exactly that. The same child started the way `tdmap run`
//! starts a program (fork, attach, then exec, through `sh`) is sampled from its first instruction. With rings too small and
//! not drained, the kernel's lost-sample count comes through. Attaching to a missing
//! process or (unprivileged) to another user's is refused with the errno and the fix. Another child rewrites its pages after soft-dirty bits are cleared: the extra write
//! faults appear exactly when this kernel has soft-dirty tracking (this machine's kernel
//! has none; the VM guest checks the other case).
//!
//! Runs as root, or as any user on a kernel whose perf_event_paranoid allows user-space
//! profiling of one's own processes (2 does). If the kernel refuses perf_event_open the
//! test fails with the kernel's reason and the fix: it never passes without sampling.
//! Its own `main` (harness = false) because the child is this executable re-run with
//! `--toucher`.

#[path = "common/faults.rs"]
#[allow(dead_code)]
mod faults;
#[path = "common/region.rs"]
#[allow(dead_code)]
mod region;
#[path = "common/sampler_checks.rs"]
mod sampler_checks;

use sampler_checks::Outcome;
use tdmap_sys::perf::Scope;

const PAGES: usize = 1500;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--toucher") => return faults::child_main(&args[1..]),
        Some("--try-open") => {
            let pid = args
                .get(1)
                .and_then(|p| p.parse().ok())
                .expect("--try-open PID");
            return println!("{}", sampler_checks::try_open(pid));
        }
        _ => {}
    }
    // `cargo test -- --list` asks what is here; the checks always run together.
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    let system = if sampler_checks::is_root() {
        sampler_checks::first_touch(&exe, PAGES, Scope::System)
    } else {
        Ok("not root: CPU-wide events not tried".into())
    };
    let checks: [(&str, Outcome); 9] = [
        (
            "first-touch",
            sampler_checks::first_touch(&exe, PAGES, Scope::Auto),
        ),
        (
            "first-touch per-process",
            sampler_checks::first_touch(&exe, PAGES, Scope::Process),
        ),
        ("first-touch system-wide", system),
        ("gated-exec", sampler_checks::gated_exec(&exe, PAGES)),
        ("overflow", sampler_checks::overflow(&exe, PAGES)),
        ("soft-dirty", sampler_checks::soft_dirty(&exe, PAGES, false)),
        ("page-size", sampler_checks::page_size(&exe)),
        ("missing-pid", sampler_checks::missing_pid()),
        ("foreign-pid", sampler_checks::foreign_pid(&exe)),
    ];
    let mut failed = Vec::new();
    for (name, outcome) in checks {
        match outcome {
            Ok(detail) => println!("ok   {name}: {detail}"),
            Err(why) => {
                println!("FAIL {name}: {why}");
                failed.push(name);
            }
        }
    }
    assert!(failed.is_empty(), "perf_faults: failed: {failed:?}");
    println!("perf_faults: 9 checks passed");
}
