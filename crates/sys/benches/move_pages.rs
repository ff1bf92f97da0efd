//! Throughput of page migration as `tdmap run` does it (move_pages in batches of 16384
//! pages, `BATCH` in src/cmd/run/act.rs) against one raw move_pages call for all pages,
//! on PAGES pages of this process, each target being the page's own node (on a one-node
//! machine nothing moves, so this measures the call's cost per page). Median of REPS
//! interleaved rounds.

use std::time::Instant;
use tdmap_sys::{LinuxSys, Sys};

const PAGES: usize = 65536;
const BATCH: usize = 16384;
const REPS: usize = 7;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let ps = tdmap_sys::page_size();
    let mut buf = vec![1u8; PAGES * ps + ps];
    let base = (buf.as_mut_ptr() as usize).div_ceil(ps) * ps;
    let pages: Vec<usize> = (0..PAGES).map(|i| base + i * ps).collect();
    let sys = LinuxSys;
    let nodes = sys.move_pages(0, &pages, None).expect("move_pages query");
    assert!(nodes.iter().all(|&n| n >= 0), "every page is present");
    let time = |batch: usize| -> f64 {
        let t = Instant::now();
        for (p, n) in pages.chunks(batch).zip(nodes.chunks(batch)) {
            sys.move_pages(0, p, Some(n)).expect("move_pages");
        }
        PAGES as f64 / t.elapsed().as_secs_f64()
    };
    // One of each first (the first calls fill the kernel's caches), then raw and batched
    // in turn, so that whatever else the machine does meanwhile weighs on both alike.
    time(PAGES);
    time(BATCH);
    let (raw, batched): (Vec<f64>, Vec<f64>) =
        (0..REPS).map(|_| (time(PAGES), time(BATCH))).unzip();
    let (raw, batched) = (median(raw), median(batched));
    println!("move_pages, {PAGES} pages to their own node, median of {REPS} interleaved rounds:");
    println!("  raw (one call)       {:>12.0} pages/s", raw);
    println!(
        "  batched ({BATCH}/call) {:>12.0} pages/s  = {:.2}x raw",
        batched,
        batched / raw
    );
    std::hint::black_box(&buf);
}
