//! Writes a trace of a known sharing pattern, to try `tdmap analyze` on:
//! `cargo run -p tdmap-sharing --example pattern_trace -- neighbours 16 out.trace`.
//! Patterns: private, pairs, neighbours, all, pipeline.

use tdmap_sharing::patterns::{accesses, Pattern};
use tdmap_trace::{Header, ThreadInfo, TraceStatus, Writer};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(p), Some(t), Some(out)) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("usage: pattern_trace private|pairs|neighbours|all|pipeline THREADS OUT");
        std::process::exit(2);
    };
    let pattern = match p.as_str() {
        "private" => Pattern::AllPrivate,
        "pairs" => Pattern::Pairs,
        "neighbours" => Pattern::Neighbours,
        "all" => Pattern::AllToAll,
        "pipeline" => Pattern::Pipeline,
        _ => {
            eprintln!("unknown pattern {p:?}");
            std::process::exit(2);
        }
    };
    let threads: usize = t.parse().unwrap_or(8);
    let mut h = Header::new(
        vec!["pattern_trace".into(), p.clone(), t.clone()],
        "xeon-x7550-4s",
    );
    h.threads = threads as u32;
    let w = Writer::create(out, h).expect("create trace");
    for (t, batch) in accesses(pattern, threads, 400, 256, 1, 4) {
        w.append_accesses(t, &batch).expect("append");
    }
    let infos = (0..threads as u32)
        .map(|id| ThreadInfo {
            id,
            os_tid: 1000 + id as i32,
            cpu: None,
        })
        .collect();
    w.set_threads(infos).expect("threads");
    w.finish(TraceStatus::Complete).expect("finish");
}
