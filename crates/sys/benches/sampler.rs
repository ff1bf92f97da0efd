//! The cost of a sampled page fault (issue 7 goal: median <= 3 us extra): a child process
//! times each first touch of fresh 4 KiB pages, with and without the perf page-fault
//! sampler attached (every fault sampled, rings drained every few ms by this process, as
//! the monitor will). Runs alternate bare/sampled to spread drift over both; the figure
//! is the median over runs of each run's median fault time. Also prints the monitor-side
//! cost of draining one sample. `make bench-sampler`, release build.

#[path = "../tests/common/faults.rs"]
#[allow(dead_code)]
mod faults;
#[path = "../tests/common/region.rs"]
#[allow(dead_code)]
mod region;

use faults::{Run, Session};
use std::time::Duration;
use tdmap_sys::perf::SamplerConfig;

const PAGES: usize = 4096;
const ROUNDS: usize = 5;
const RUNS: usize = 7;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn field(run: &Run, key: &str) -> f64 {
    let l = run
        .lines
        .iter()
        .find(|l| l.starts_with("bench "))
        .expect("bench line");
    let mut w = l.split(' ');
    w.find(|&k| k == key).expect("key");
    w.next().and_then(|v| v.parse().ok()).expect("number")
}

fn one(exe: &std::path::Path, sampled: bool) -> Run {
    let cfg = SamplerConfig::default();
    let args = ["bench", &PAGES.to_string(), &ROUNDS.to_string()];
    let mut s = Session::start(exe, &args, sampled.then_some(&cfg))
        .unwrap_or_else(|e| panic!("bench-sampler: {e}"));
    s.go();
    s.finish(Duration::from_secs(120)).expect("bench child")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--toucher") {
        faults::child_main(&args[1..]);
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    let (mut bare, mut with, mut bare_mean, mut with_mean) = (vec![], vec![], vec![], vec![]);
    let (mut samples, mut lost, mut drain_ns) = (0u64, 0u64, 0u128);
    for _ in 0..RUNS {
        let b = one(&exe, false);
        bare.push(field(&b, "median_ns"));
        bare_mean.push(field(&b, "mean_ns"));
        let w = one(&exe, true);
        with.push(field(&w, "median_ns"));
        with_mean.push(field(&w, "mean_ns"));
        samples += w.drained.samples;
        lost += w.drained.lost;
        drain_ns += w.drain_ns;
    }
    let (b, w) = (median(&mut bare), median(&mut with));
    let (bm, wm) = (median(&mut bare_mean), median(&mut with_mean));
    println!(
        "sampler bench: {RUNS} runs x {ROUNDS} rounds x {PAGES} first-touch faults, 4 KiB pages, \
         THP off, period 1, {} CPUs online",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "  fault, bare:    median {:.2} us, mean {:.2} us",
        b / 1e3,
        bm / 1e3
    );
    println!(
        "  fault, sampled: median {:.2} us, mean {:.2} us",
        w / 1e3,
        wm / 1e3
    );
    println!(
        "  extra per sampled fault: median {:.2} us, mean {:.2} us (goal: median <= 3 us)",
        (w - b) / 1e3,
        (wm - bm) / 1e3
    );
    println!(
        "  monitor side: {samples} samples drained, {lost} lost, {:.0} ns per sample drained",
        drain_ns as f64 / samples.max(1) as f64
    );
}
