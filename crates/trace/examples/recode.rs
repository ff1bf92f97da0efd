//! Rewrites a trace with this build's writer (`cargo run --release -p tdmap-trace
//! --example recode -- IN OUT [read]`), to compare codings on real traces: run it under
//! `/usr/bin/time` for the writer's CPU time, beside `read` (which only reads IN) for the
//! reading part, and compare the sizes of IN and OUT.

use tdmap_trace::{Access, Chunk, Reader, TraceStatus, Writer};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut r = Reader::open(&args[1]).expect("input trace");
    let w = (args.get(3).map(String::as_str) != Some("read"))
        .then(|| Writer::create(&args[2], r.header().clone()).expect("output trace"));
    let (mut n, mut buf) = (0u64, Vec::new());
    while let Some(c) = r.next_chunk().expect("readable trace") {
        if let Chunk::Accesses(c) = c {
            buf.clear();
            buf.extend((0..c.addrs.len()).map(|i| Access {
                thread: c.thread,
                addr: c.addrs[i],
                size: c.sizes[i],
                write: c.writes[i],
                time: c.times[i],
            }));
            n += buf.len() as u64;
            if let Some(w) = &w {
                w.append_accesses(c.thread, &buf).expect("write");
            }
        }
    }
    if let Some(w) = w {
        w.set_threads(r.threads().to_vec()).expect("write");
        w.finish(TraceStatus::Complete).expect("finish");
        let out = std::fs::metadata(&args[2]).expect("output").len();
        println!("{n} accesses, {:.3} B/access", out as f64 / n as f64);
    }
}
