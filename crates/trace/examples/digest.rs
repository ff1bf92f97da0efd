//! Prints what a trace says, thread by thread, as a digest: `cargo run --release -p
//! tdmap-trace --example digest -- TRACE [--no-time]`. Two traces with the same lines hold
//! the same events for every thread, in the same order (accesses: address, size, write,
//! time and collapsed reads; faults: address, time, CPU and node), however they are cut
//! into frames and however the threads' frames interleave. `--no-time` leaves out the
//! times and the fault CPUs, which differ from run to run, to compare two runs of a
//! deterministic program; the header's status and thread count are printed too.
//! Used to check that a faster conversion writes the same trace (docs/bench-trace.md).

use std::collections::BTreeMap;
use tdmap_format::Fnv;
use tdmap_trace::{Chunk, Reader};

/// One thread's events so far.
struct Thread {
    accesses: u64,
    faults: u64,
    collapsed: u64,
    digest: Fnv,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let no_time = args.iter().any(|a| a == "--no-time");
    let Some(path) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: digest TRACE [--no-time]");
        std::process::exit(2);
    };
    let mut r = Reader::open(path).unwrap_or_else(|e| {
        eprintln!("digest: {e}");
        std::process::exit(2)
    });
    let mut threads: BTreeMap<u32, Thread> = BTreeMap::new();
    let time = |t: u64| if no_time { 0 } else { t };
    while let Some(c) = r.next_chunk().expect("a readable trace") {
        let th = threads.entry(c.thread()).or_insert(Thread {
            accesses: 0,
            faults: 0,
            collapsed: 0,
            digest: Fnv::new(),
        });
        let d = &mut th.digest;
        match c {
            Chunk::Accesses(a) => {
                let mut reps = a.repeats.iter().peekable();
                for i in 0..a.addrs.len() {
                    let extra = match reps.peek() {
                        Some(&&(at, n)) if at as usize == i => {
                            reps.next();
                            n
                        }
                        _ => 0,
                    };
                    d.add(1);
                    d.add(a.addrs[i]);
                    d.add(a.sizes[i] as u64 | (a.writes[i] as u64) << 8);
                    d.add(time(a.times[i]));
                    d.add(extra as u64);
                    th.collapsed += extra as u64;
                }
                th.accesses += a.addrs.len() as u64;
            }
            Chunk::Faults(f) => {
                for i in 0..f.addrs.len() {
                    d.add(2);
                    d.add(f.addrs[i]);
                    d.add(time(f.times[i]));
                    d.add(if no_time { 0 } else { f.cpus[i] as u64 });
                    d.add(f.nodes[i] as u64);
                }
                th.faults += f.addrs.len() as u64;
            }
        }
    }
    let h = r.header();
    println!("status {:?} threads {}", h.status, h.threads);
    for (t, th) in &threads {
        println!(
            "thread {t}: {} accesses, {} faults, {} collapsed, digest {:016x}",
            th.accesses,
            th.faults,
            th.collapsed,
            th.digest.value()
        );
    }
}
