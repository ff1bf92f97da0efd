//! Prints a raw data file (`TDMAP_RT_DATA`) chunk by chunk, one line per word: each
//! chunk's kind, thread, word count and `extra`, its body words (a predicted chunk's
//! runs and records as the runtime wrote them), then, for a predicted chunk, the words
//! `tdmap_wire::raw::expand` gives back. Times (t0, t1, ticks) are left out, and CPU
//! words print as `cpu`, so that two runs of one program (`setarch -R`, one thread)
//! under two runtimes compare word for word with `diff` (docs/bench-trace.md).
//! `cargo run --release -p tdmap-rt --example rawwords -- FILE`

#![forbid(unsafe_code)]

use std::io::Write;
use tdmap_wire::raw::{self as wire, ChunkHeader, HEADER_BYTES, KIND_PREDICTED, TICKS};

fn main() {
    let path = std::env::args().nth(1).expect("usage: rawwords FILE");
    let data = std::fs::read(&path).expect("read the raw data file");
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let word = |w: u64| {
        if w >> 61 == 1 {
            "cpu".to_string()
        } else {
            format!("{w:016x}")
        }
    };
    let mut at = 0;
    while at < data.len() {
        let hdr = ChunkHeader::decode(&data[at..]).expect("a chunk header");
        let body = hdr.body_bytes().expect("a known chunk kind");
        let raw = &data[at + HEADER_BYTES..at + HEADER_BYTES + body];
        at += HEADER_BYTES + body;
        let (kind, thread, count) = (hdr.kind, hdr.thread, hdr.count);
        writeln!(out, "chunk kind {kind} thread {thread} count {count}").unwrap();
        // A thread chunk's `extra` is its system thread id, which differs between runs.
        if kind != wire::KIND_THREAD {
            writeln!(out, "extra {}", hdr.extra).unwrap();
        }
        if !matches!(kind, wire::KIND_ACCESS | KIND_PREDICTED) {
            continue;
        }
        let words: Vec<u64> = raw[TICKS * 8..]
            .chunks_exact(8)
            .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        for &w in &words {
            writeln!(out, "body {}", word(w)).unwrap();
        }
        if kind == KIND_PREDICTED {
            let mut v6 = Vec::new();
            wire::expand(&words, hdr.extra, &mut v6).expect("an expandable chunk");
            for w in v6 {
                writeln!(out, "v6 {}", word(w)).unwrap();
            }
        }
    }
}
