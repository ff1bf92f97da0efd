//! Writes a trace of a known sharing pattern, to try `tdmap analyze` on:
//! `cargo run -p tdmap-sharing --example pattern_trace -- neighbours 16 out.trace`.
//! Patterns: private, pairs, neighbours, all, pipeline.

use tdmap_sharing::patterns::{generate, Pattern};
use tdmap_trace::{Access, Header, ThreadInfo, TraceStatus, Writer};

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
    let mut time = 0u64;
    for (t, addrs) in generate(pattern, threads, 400, 256, 1) {
        let batch: Vec<Access> = addrs
            .into_iter()
            .map(|addr| {
                time += 1;
                Access {
                    thread: t,
                    addr,
                    size: 8,
                    write: time.is_multiple_of(4),
                    time,
                }
            })
            .collect();
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
