//! The sharing model's speed on a real trace's accesses (`cargo run --release -p
//! tdmap-sharing --example model_speed -- TRACE`): the addresses are read into memory
//! first, then fed as `tdmap trace --model-only` shapes its model (per cache line, every
//! sharer), best of 3; prints M events per CPU-second and a checksum of the matrices so
//! that two builds can be compared for speed and for results.

use cpu_time::ThreadTime;
use tdmap_sharing::{Metric, SharingModel, TableConfig};
use tdmap_trace::{Chunk, Reader};

fn main() {
    let path = std::env::args().nth(1).expect("usage: model_speed TRACE");
    let mut r = Reader::open(&path).expect("trace");
    r.set_addresses_only(true);
    let threads = r.header().threads as usize;
    let mut batches = Vec::new();
    while let Some(c) = r.next_chunk().expect("readable trace") {
        if let Chunk::Accesses(c) = c {
            batches.push((c.thread, c.addrs.clone()));
        }
    }
    let n: usize = batches.iter().map(|b| b.1.len()).sum();
    let mut best = 0.0f64;
    let mut sum = 0u64;
    for _ in 0..3 {
        let cfg = TableConfig {
            sub_block: 64,
            ..TableConfig::all_sharers(1, threads)
        };
        let mut m = SharingModel::new(cfg, threads, &[]).expect("model");
        let c0 = ThreadTime::now();
        for (t, a) in &batches {
            m.accesses(*t, a).expect("thread in range");
        }
        best = best.max(n as f64 / c0.elapsed().as_secs_f64());
        sum = [Metric::Accesses, Metric::Amount]
            .iter()
            .flat_map(|&k| m.matrix(k).as_slice().to_vec())
            .fold(0u64, |h, v| h.wrapping_mul(1_000_003).wrapping_add(v));
    }
    println!(
        "{n} events, {:.1} M events per CPU-second, matrices {sum:016x}",
        best / 1e6
    );
}
