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

/// The longest run of consecutive accesses of one thread in replay order.
fn longest_run(trace: &std::path::Path) -> (usize, usize) {
    let (mut best, mut run, mut last, mut total) = (0, 0, u32::MAX, 0);
    for a in tdmap_sim::TraceInput::open(trace).unwrap() {
        let a = a.unwrap();
        total += 1;
        run = if a.thread == last { run + 1 } else { 1 };
        last = a.thread;
        best = best.max(run);
    }
    (best, total)
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
    let (run, total) = longest_run(&trace);
    // 2 Mi accesses; without the yields each thread runs a whole slice (tens of
    // thousands of accesses, and whole threads when the scheduler lets them).
    assert!(total >= 4 * 8 * (1 << 16), "{total} accesses");
    // Two yields in a row may give the CPU back to the same thread (8,176 seen when the
    // runtime yielded every 4,096 records); a loaded machine may do so more often: up to
    // 8 yield periods. (Since the runtime yields every 8,192, 4fda733, the bound of
    // 8 * 4,096 was 4 periods, and a loaded machine ran 33,711.)
    const YIELD_EVERY: usize = 8192;
    assert!(
        run <= 8 * YIELD_EVERY,
        "a thread ran {run} accesses in a row"
    );
}
