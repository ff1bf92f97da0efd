//! A program traced with more threads than CPUs: the replay (which merges the threads in
//! the trace's time order) must see them interleaved finely, as a machine with a core
//! per thread runs them, not in whole scheduler slices. The runtime yields the CPU every
//! 8,192 positions (`YIELD_EVERY` in crates/rt/src/state.rs, a chunk's records).

use super::{compile_by, trace_to};

/// Four threads pinned to one CPU, each writing its own 64 Ki longs 8 times over.
const PINNED: &str = r#"#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#define T 4
#define N (1 << 16)
static long a[T][N];
static void *work(void *arg) {
    long t = (long)arg;
    for (int r = 0; r < 8; r++)
        for (int i = 0; i < N; i++) a[t][i] += i + r;
    return NULL;
}
int main(void) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof one, &one);
    pthread_t th[T];
    for (long t = 1; t < T; t++) pthread_create(&th[t], NULL, work, (void *)t);
    work(0);
    long sum = 0;
    for (long t = 1; t < T; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < T; t++) sum += a[t][N - 1];
    printf("checksum %ld\n", sum);
    return 0;
}
"#;

/// The lengths of the runs of consecutive accesses of one thread in replay order.
fn runs(trace: &std::path::Path) -> Vec<usize> {
    let (mut runs, mut run, mut last) = (Vec::new(), 0, u32::MAX);
    for a in tdmap_sim::TraceInput::open(trace).unwrap() {
        let a = a.unwrap();
        if a.thread != last && run > 0 {
            runs.push(run);
            run = 0;
        }
        run += 1;
        last = a.thread;
    }
    runs.push(run);
    runs
}

/// The shortest run length such that the runs no longer than it hold at least
/// `share` of all accesses: a percentile of the accesses, not of the runs.
fn run_percentile(runs: &[usize], share: f64) -> usize {
    let mut sorted = runs.to_vec();
    sorted.sort_unstable();
    let total: usize = sorted.iter().sum();
    let mut held = 0;
    for r in sorted {
        held += r;
        if held as f64 >= share * total as f64 {
            return r;
        }
    }
    0
}

#[test]
fn threads_sharing_one_cpu_are_interleaved_finely_in_the_trace() {
    let exe = compile_by("cc", "pinned.c", PINNED);
    let (trace, out) = trace_to("pinned.trace", &[], &exe, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = runs(&trace);
    let total: usize = runs.iter().sum();
    let longest = runs.iter().copied().max().unwrap_or(0);
    let p95 = run_percentile(&runs, 0.95);
    // 2 Mi accesses; without the yields each thread runs a whole slice (tens of
    // thousands of accesses, and whole threads when the scheduler lets them).
    assert!(total >= 4 * 8 * (1 << 16), "{total} accesses");
    // With the yields, every access is in a run of one or two yield periods (two when
    // a yield gives the CPU back to the same thread). Without them (yield_cpu made a
    // no-op, 2026-11-26), 95 % of the accesses were in runs of up to 27,262-860,040
    // accesses in 9 tries, and the longest run was 69,232-860,040 in 13. A loaded machine can
    // still give one thread the CPU over many yields, for instance while the others
    // wait in a write: a CI run on 2026-11-26 saw one run of 156,502 (before, the
    // longest runs seen loaded were 33,711 and 8,176). So most accesses must be in runs
    // of at most two periods, and no run may be longer than 24.
    const YIELD_EVERY: usize = 8192;
    assert!(
        p95 <= 2 * YIELD_EVERY,
        "95 % of the accesses are in runs of up to {p95} accesses (longest {longest})"
    );
    assert!(
        longest <= 24 * YIELD_EVERY,
        "a thread ran {longest} accesses in a row"
    );
}
