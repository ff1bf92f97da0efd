//! Benchmark of the sharing model (run with `make bench` or
//! `cargo bench -p tdmap-sharing --bench model`): events per second for the model alone
//! from memory and for reading a compressed trace plus the model, and the affinity
//! table's bytes per tracked 4 KiB page. Prints figures; asserts nothing about speed.
//! `TDMAP_BENCH_EVENTS` sets the number of events (default 64 Mi).

use cpu_time::{ProcessTime, ThreadTime};
use std::time::Instant;
use tdmap_sharing::patterns::{generate, Pattern};
use tdmap_sharing::{SharingModel, TableConfig};
use tdmap_trace::{Access, Header, Reader, TraceStatus, Writer};

const T: usize = 8;
const NODES: usize = 4;
const BATCH: usize = 4096;

/// Thread t streams its own 8 MiB array with an 8-byte stride, and each batch starts
/// with 512 accesses to the halo it shares with thread t+1 (a stencil's shape).
fn stream(events: usize) -> Vec<(u32, Vec<u64>)> {
    let rounds = events / (T * BATCH);
    let mut pos = [0u64; T];
    let mut out = Vec::with_capacity(rounds * T);
    for _ in 0..rounds {
        for (t, pos) in pos.iter_mut().enumerate() {
            let own = 0x10_0000_0000 + t as u64 * (16 << 20);
            let halo = 0x20_0000_0000 + (t as u64 / 2) * (64 << 10);
            let v: Vec<u64> = (0..BATCH as u64)
                .map(|i| {
                    if i < 512 {
                        halo + (i * 8) % (64 << 10)
                    } else {
                        *pos = (*pos + 8) % (8 << 20);
                        own + *pos
                    }
                })
                .collect();
            out.push((t as u32, v));
        }
    }
    out
}

fn node_of() -> Vec<u32> {
    (0..T).map(|t| (t * NODES / T) as u32).collect()
}

fn model_alone(name: &str, batches: &[(u32, Vec<u64>)]) -> f64 {
    model_alone_with(name, batches, TableConfig::exact(NODES))
}

fn model_alone_with(name: &str, batches: &[(u32, Vec<u64>)], cfg: TableConfig) -> f64 {
    let n: usize = batches.iter().map(|b| b.1.len()).sum();
    let (mut best, mut best_cpu) = (0.0f64, 0.0f64);
    for _ in 0..3 {
        let mut m = SharingModel::new(cfg, T, &node_of()).unwrap();
        let (t0, c0) = (Instant::now(), ThreadTime::now());
        for (t, a) in batches {
            m.accesses(*t, a).unwrap();
        }
        best = best.max(n as f64 / t0.elapsed().as_secs_f64());
        best_cpu = best_cpu.max(n as f64 / c0.elapsed().as_secs_f64());
        std::hint::black_box(m.matrix(tdmap_sharing::Metric::Accesses).get(0, 1));
    }
    println!(
        "model alone, {name:<28} {n:>10} events  {:>7.1} M events/s wall, {:>7.1} M per CPU-second (best of 3)",
        best / 1e6,
        best_cpu / 1e6
    );
    best_cpu
}

fn write_trace(path: &std::path::Path, batches: &[(u32, Vec<u64>)]) {
    let mut h = Header::new(vec!["bench".into()], "bench");
    h.threads = T as u32;
    let w = Writer::create(path, h).unwrap();
    let t0 = Instant::now();
    let mut time = 0;
    let mut n = 0;
    for (t, addrs) in batches {
        let acc: Vec<Access> = addrs
            .iter()
            .map(|&addr| {
                time += 1;
                Access {
                    thread: *t,
                    addr,
                    size: 8,
                    write: false,
                    time,
                }
            })
            .collect();
        w.append_accesses(*t, &acc).unwrap();
        n += acc.len();
    }
    w.finish(TraceStatus::Complete).unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let size = std::fs::metadata(path).unwrap().len();
    println!(
        "writer (1 appending thread)        {n:>10} events  {:>7.1} M events/s, {:.2} bytes/event on disk",
        n as f64 / secs / 1e6,
        size as f64 / n as f64
    );
}

fn read_and_model(name: &str, path: &std::path::Path) -> f64 {
    let mut best = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for _ in 0..3 {
        let t0 = ThreadTime::now();
        let mut r = Reader::open(path).unwrap();
        r.set_addresses_only(true);
        let mut n = 0;
        while let Some(c) = r.next_chunk().unwrap() {
            n += c.len();
        }
        let read = n as f64 / t0.elapsed().as_secs_f64();
        let t0 = ThreadTime::now();
        let mut r = Reader::open(path).unwrap();
        r.set_addresses_only(true);
        let mut m = SharingModel::new(TableConfig::exact(NODES), T, &node_of()).unwrap();
        while let Some(c) = r.next_chunk().unwrap() {
            m.feed(c).unwrap();
        }
        let both = m.events() as f64 / t0.elapsed().as_secs_f64();
        let (t0, c0) = (Instant::now(), ProcessTime::now());
        let mut r = Reader::open(path).unwrap();
        r.set_addresses_only(true);
        let mut r = r.prefetch();
        let mut m = SharingModel::new(TableConfig::exact(NODES), T, &node_of()).unwrap();
        while let Some(c) = r.next_chunk().unwrap() {
            m.feed(c).unwrap();
        }
        let pre = m.events() as f64 / t0.elapsed().as_secs_f64();
        let pre_cpu = m.events() as f64 / c0.elapsed().as_secs_f64();
        best = (
            best.0.max(read),
            best.1.max(both),
            best.2.max(pre),
            best.3.max(pre_cpu),
        );
    }
    println!(
        "read alone, {name:<29} {:>7.1} M events per CPU-second (1 thread)",
        best.0 / 1e6
    );
    println!(
        "read + model, {name:<27} {:>7.1} M events per CPU-second (1 thread)",
        best.1 / 1e6
    );
    println!(
        "read + model, {name:<27} {:>7.1} M events/s wall, {:.1} M per CPU-second of both threads (prefetch)",
        best.2 / 1e6,
        best.3 / 1e6
    );
    best.1
}

fn bytes_per_page() {
    for (name, cfg) in [
        ("page faults (kMAF)", TableConfig::page_faults(NODES)),
        ("exact, 64 B lines", TableConfig::exact(NODES)),
        ("exact, all sharers", TableConfig::all_sharers(NODES, T)),
    ] {
        let mut m = SharingModel::new(cfg, T, &node_of()).unwrap();
        // 1 GiB touched page by page by 8 threads in turn.
        let pages = 1u64 << 18;
        for p in 0..pages {
            m.fault(
                (p % T as u64) as u32,
                0x10_0000_0000 + p * 4096 + 8,
                (p % NODES as u64) as u32,
            )
            .unwrap();
        }
        let t = m.table();
        println!(
            "affinity table, {name:<22} {:>8} pages  {:>6.2} bytes/page (Eq. 7 entry: {} bytes)",
            t.tracked_pages(),
            t.memory_bytes() as f64 / t.tracked_pages() as f64,
            cfg.entry_bytes()
        );
    }
}

fn main() {
    let events: usize = std::env::var("TDMAP_BENCH_EVENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64 << 20);
    println!("tdmap-sharing bench: {T} threads, {NODES} nodes, exact config (64 B sub-blocks, K=2), batches of {BATCH}");
    let s = stream(events);
    let alone = model_alone("stream + halos", &s);
    let path = std::env::temp_dir().join(format!("tdmap-bench-{}.trace", std::process::id()));
    write_trace(&path, &s);
    drop(s);
    let both = read_and_model("stream + halos", &path);
    println!(
        "read + model (1 thread) / model alone, per CPU-second: {:.2}",
        both / alone
    );
    std::fs::remove_file(&path).unwrap();
    let rounds = events / 4 / (T * 4096);
    for p in [Pattern::Neighbours, Pattern::AllToAll] {
        let g = generate(p, T, rounds, 4096, 1);
        let name = format!("random in 64 KiB, {p:?}");
        let alone = model_alone(&name, &g);
        let all = TableConfig::all_sharers(NODES, T);
        model_alone_with(&format!("{p:?}, all sharers"), &g, all);
        write_trace(&path, &g);
        let both = read_and_model(&name, &path);
        println!(
            "read + model (1 thread) / model alone, per CPU-second: {:.2}",
            both / alone
        );
        std::fs::remove_file(&path).unwrap();
    }
    bytes_per_page();
}
