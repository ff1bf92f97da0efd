//! Older format versions keep reading: committed fixtures written by earlier writers,
//! compared event by event with the generator that wrote them.

use proptest::prelude::*;
use tdmap_trace::*;

/// One appended batch: thread, accesses, collapsed reads (index, extra reads).
type Batch = (u32, Vec<Access>, Vec<(u32, u32)>);

/// The events of `v4-mixed.trace`, in the order it was written: per batch (thread,
/// accesses, collapsed reads), then thread 1's faults.
fn v4_batches() -> Vec<Batch> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::new();
    let mut time = [1_000u64, 5_000_000];
    for batch in 0..4u64 {
        for t in 0..2u32 {
            let v: Vec<Access> = (0..700u64)
                .map(|i| {
                    let r = rand();
                    // Thread 0 streams (plain columns); thread 1 jumps around a heap and
                    // now and then to the stack (shuffled columns), with clock jumps.
                    let addr = if t == 0 {
                        0x5555_0000_0000 + (batch * 700 + i) * 8
                    } else if r % 97 == 0 {
                        0x7ffc_1234_0000 + r % 4096
                    } else {
                        0x5555_8000_0000 + (r >> 20) % (1 << 30)
                    };
                    time[t as usize] += if r % 211 == 0 { 1 << 33 } else { r % 7 };
                    Access {
                        thread: t,
                        addr,
                        size: [1u8, 2, 4, 8, 16, 200][(r >> 8) as usize % 6],
                        write: (r >> 16) % 3 == 0,
                        time: time[t as usize],
                    }
                })
                .collect();
            let repeats: Vec<(u32, u32)> = (0..700u32)
                .filter(|&i| i % 50 == 7 && !v[i as usize].write)
                .map(|i| (i, i + 1))
                .collect();
            out.push((t, v, if batch % 2 == 1 { repeats } else { Vec::new() }));
        }
    }
    out
}

fn v4_faults() -> Vec<Fault> {
    (0..40u64)
        .map(|i| Fault {
            thread: 1,
            addr: 0x5555_8000_0000 + i * 4096 * 3,
            cpu: (i % 4) as u32,
            node: (i % 4 / 2) as u32,
            time: (1 << 40) + 10 * i,
        })
        .collect()
}

/// Reads the committed fixture `name`, written by a version-`version` writer from
/// [`v4_batches`] and [`v4_faults`] with `program`, and checks every event against them.
fn fixture_reads_back(name: &str, version: u32, program: &[&str]) {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let mut r = Reader::open(&p).unwrap();
    assert_eq!(r.header().version, version);
    assert_eq!(r.header().program, program);
    assert_eq!(r.threads().len(), 2);
    let mut want = v4_batches().into_iter();
    let mut faults = 0;
    while let Some(c) = r.next_chunk().unwrap() {
        match c {
            Chunk::Accesses(c) => {
                let (t, v, repeats) = want.next().expect("no more access frames written");
                assert_eq!(c.thread, t);
                assert_eq!(c.addrs, v.iter().map(|a| a.addr).collect::<Vec<_>>());
                assert_eq!(c.times, v.iter().map(|a| a.time).collect::<Vec<_>>());
                assert_eq!(c.sizes, v.iter().map(|a| a.size).collect::<Vec<_>>());
                assert_eq!(c.writes, v.iter().map(|a| a.write).collect::<Vec<_>>());
                assert_eq!(c.repeats, repeats);
            }
            Chunk::Faults(f) => {
                let w = v4_faults();
                assert_eq!(f.addrs, w.iter().map(|x| x.addr).collect::<Vec<_>>());
                assert_eq!(f.times, w.iter().map(|x| x.time).collect::<Vec<_>>());
                assert_eq!(f.cpus, w.iter().map(|x| x.cpu).collect::<Vec<_>>());
                assert_eq!(f.nodes, w.iter().map(|x| x.node).collect::<Vec<_>>());
                faults += 1;
            }
        }
    }
    assert!(want.next().is_none(), "every access frame was read");
    assert_eq!(faults, 1);
    assert!(r.ending().unwrap().complete());
    let rep = check(&p);
    assert!(rep.ok(), "{:?}", rep.problems);
    assert!(rep.collapsed_reads > 0);
}

/// A version-4 trace written before V5's access coding (shuffled and plain zigzag
/// columns, repeats frames, faults): readers must keep reading it, event for event.
#[test]
fn version_4_fixture_still_reads() {
    fixture_reads_back("v4-mixed.trace", 4, &["v4", "fixture"]);
}

/// The same events written by the version-5 writer (main at 420a161, before V6 stored
/// accesses as predictor symbols; `append_collapsed` per batch, then `append_faults`):
/// varint columns, repeats frames, faults.
#[test]
fn version_5_fixture_still_reads() {
    fixture_reads_back("v5-mixed.trace", 5, &["v5", "fixture"]);
}

/// Writes a trace of one accesses frame (3 accesses: 0x1000, 0x1008, 0x1010, 8-byte
/// reads at times 0, 1, 2) and returns its bytes and the offset of that frame.
fn one_frame() -> (Vec<u8>, usize) {
    let a: Vec<Access> = (0..3u64)
        .map(|i| Access {
            thread: 0,
            addr: 0x1000 + 8 * i,
            size: 8,
            write: false,
            time: i,
        })
        .collect();
    frame_of(&a)
}

/// Writes a trace of one accesses frame holding `a` (thread 0) and returns its bytes and
/// the offset of that frame.
fn frame_of(a: &[Access]) -> (Vec<u8>, usize) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!("tdmap-one-{}-{n}", std::process::id()));
    let mut h = Header::new(vec![], "m");
    h.threads = 1;
    let w = Writer::create(&p, h).unwrap();
    w.append_accesses(0, a).unwrap();
    w.finish(TraceStatus::Complete).unwrap();
    let at = Reader::open(&p).unwrap().offset() as usize;
    let bytes = std::fs::read(&p).unwrap();
    let _ = std::fs::remove_file(&p);
    (bytes, at)
}

/// `bytes` with its first frame's payload rebuilt from the raw streams `first` and
/// `second` (compressed, CRC and trailer fixed), as a writer with a broken coding would
/// leave it: damage that only the columns' own checks can find.
fn with_streams(bytes: &[u8], at: usize, first: &[u8], second: &[u8], raw_len: u32) -> Vec<u8> {
    let old_len = u32::from_le_bytes(bytes[at + 16..at + 20].try_into().unwrap()) as usize;
    let (c1, c2) = (
        zstd::bulk::compress(first, 3).unwrap(),
        zstd::bulk::compress(second, 3).unwrap(),
    );
    let mut payload = (c1.len() as u32).to_le_bytes().to_vec();
    payload.extend(&c1);
    payload.extend(&c2);
    let mut head = bytes[at..at + 24].to_vec();
    head[12..16].copy_from_slice(&raw_len.to_le_bytes());
    head[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&head[..20]);
    h.update(&payload);
    head[20..24].copy_from_slice(&h.finalize().to_le_bytes());
    let mut out = bytes[..at].to_vec();
    out.extend(&head);
    out.extend(&payload);
    out.extend(&bytes[at + 24 + old_len..]);
    // The trailer points at the threads frame, which moved with the payload's length.
    let t = out.len() - 16;
    let threads_at = u64::from_le_bytes(out[t..t + 8].try_into().unwrap());
    let moved = threads_at + payload.len() as u64 - old_len as u64;
    out[t..t + 8].copy_from_slice(&moved.to_le_bytes());
    out
}

/// The checker validates V5's varint columns: a column with a byte too many, a varint
/// cut short or a tag naming no base, or a raw length no 3 accesses can have, is
/// reported, not misread.
#[test]
fn trace_check_finds_malformed_v5_columns() {
    let (mut bytes, at) = one_frame();
    assert!(check_bytes(bytes.clone()).ok());
    bytes[8] = 5; // the version, outside the header's CRC: the payloads below are V5's
                  // Base 0 for all three; deltas of 0x1000, 8, 8 (zigzag 0x2000, 16, 16) and times 0,
                  // 1, 2; sizes 8, reads.
    let addrs = [0, 0, 0, 0x80, 0x40, 16, 16];
    let rest = [0, 2, 2, 16, 16, 16];
    let good = with_streams(&bytes, at, &addrs, &rest, 13);
    let rep = check_bytes(good);
    assert!(rep.ok(), "{:?}", rep.problems);
    assert_eq!(rep.accesses, 3);
    let bad = "malformed access columns";
    let cases: [(&[u8], &[u8], u32, &str); 5] = [
        (&[0, 0, 0, 0x80, 0x40, 16, 16, 0], &rest, 14, bad),
        (&addrs, &[0, 2, 2, 16, 16, 0x90], 13, bad),
        (&addrs[..6], &[0, 2, 2, 16, 16, 16, 16], 13, bad),
        (&[0, 9, 0, 0x80, 0x40, 16, 16], &rest, 13, bad),
        (&addrs, &rest, 100, "frame lengths do not match"),
    ];
    for (first, second, raw, what) in cases {
        let rep = check_bytes(with_streams(&bytes, at, first, second, raw));
        assert!(
            rep.problems.iter().any(|p| p.message.contains(what)),
            "{what}: {:?}",
            rep.problems
        );
    }
}

/// The checker validates V6's symbols and time blocks: a run past the frame's accesses
/// (a reset, fine anywhere, stands for none), a meta no writer makes, an escaped size
/// replayed by a run, blocks that do
/// not cover the accesses exactly or hold an impossible spread, and a raw length beyond
/// what the accesses can take are reported, not misread.
#[test]
fn trace_check_finds_malformed_v6_symbols() {
    let (bytes, at) = one_frame();
    // A literal (meta 3 << 1 = 6: tag 13) at 0x1000 (zigzag 0x2000), a literal at 8 on
    // from it (the predictor knows no stride yet), then a run of 1. One block: 3 times
    // from 0 stepping by 1 (span 1, den 1, phase 0).
    let syms = [13, 0x80, 0x40, 13, 16, 2];
    let times = [3, 0, 1, 1, 0];
    let good = with_streams(&bytes, at, &syms, &times, 11);
    let rep = check_bytes(good.clone());
    assert!(rep.ok(), "{:?}", rep.problems);
    assert_eq!(rep.accesses, 3);
    let r = Reader::with_source(std::io::Cursor::new(good), "good".into()).unwrap();
    let got: Vec<Event> = r.events().map(|e| e.unwrap()).collect();
    let want: Vec<Event> = (0..3u64)
        .map(|i| {
            Event::Access(Access {
                thread: 0,
                addr: 0x1000 + 8 * i,
                size: 8,
                write: false,
                time: i,
            })
        })
        .collect();
    assert_eq!(got, want);
    // Resets (varint 0) anywhere, twice in a row too: the run after the one between
    // the literals and the run replays the initial state's guess (address 0, 1 byte).
    let reset = with_streams(
        &bytes,
        at,
        &[0, 13, 0x80, 0x40, 0, 0, 13, 16, 0, 2, 0],
        &times,
        16,
    );
    let rep = check_bytes(reset.clone());
    assert!(rep.ok(), "{:?}", rep.problems);
    let r = Reader::with_source(std::io::Cursor::new(reset), "reset".into()).unwrap();
    let got: Vec<(u64, u8)> = r
        .events()
        .map(|e| match e.unwrap() {
            Event::Access(a) => (a.addr, a.size),
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(got, [(0x1000, 8), (0x1008, 8), (0, 1)]);
    let bad = "malformed access symbols or time blocks";
    // An escaped literal (meta 0x80: tag 257, size 3) whose meta a run then replays.
    let escaped_run: &[u8] = &[0x81, 0x02, 3, 0x80, 0x40, 2, 2];
    let cases: [(&[u8], &[u8], u32, &str); 9] = [
        (&[13, 0x80, 0x40, 13, 16, 4], &times, 11, bad),
        // A reset stands for no access: two accesses, not three.
        (&[0, 13, 0x80, 0x40, 0, 13, 16, 0], &times, 13, bad),
        (&[13, 0x80, 0x40, 33, 16, 2], &times, 11, bad),
        (&[13, 0x80, 0x40, 13, 16], &times, 10, bad),
        (escaped_run, &times, 12, bad),
        (&syms, &[2, 0, 1, 1, 0], 11, bad),
        (&syms, &[3, 0, 1, 0, 0], 11, bad),
        (&syms, &[3, 0, 1, 1, 0, 1, 0, 0, 1, 0], 16, bad),
        (&syms, &times, 100_000, "frame lengths do not match"),
    ];
    for (first, second, raw, what) in cases {
        let rep = check_bytes(with_streams(&bytes, at, first, second, raw));
        assert!(
            rep.problems.iter().any(|p| p.message.contains(what)),
            "{first:?} {second:?}: {what}: {:?}",
            rep.problems
        );
    }
}

/// The raw streams of the frame at `at`, decompressed.
fn streams_of(bytes: &[u8], at: usize) -> (Vec<u8>, Vec<u8>) {
    let u = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) as usize;
    let (comp, len1) = (u(at + 16), u(at + 24));
    let payload = &bytes[at + 28..at + 24 + comp];
    let first = zstd::bulk::decompress(&payload[..len1], 1 << 20).unwrap();
    let second = zstd::bulk::decompress(&payload[len1..], 1 << 20).unwrap();
    (first, second)
}

/// A trace's bytes, the offset of its frame and that frame's raw streams.
type Sample = (Vec<u8>, usize, Vec<u8>, Vec<u8>);

/// A frame of 600 accesses with runs, literals (an odd size among them) and time
/// blocks of several kinds, and its raw streams.
fn rich_frame() -> &'static Sample {
    static F: std::sync::OnceLock<Sample> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        let a: Vec<Access> = (0..600u64)
            .map(|i| Access {
                thread: 0,
                addr: if i % 97 == 5 {
                    i * 7919
                } else {
                    ((i % 3) << 30) | ((i / 3) * 8)
                },
                size: if i == 300 { 3 } else { 4 },
                write: i % 3 == 2,
                time: if i < 400 { 10 + 2 * i } else { 5000 + i * i },
            })
            .collect();
        let (bytes, at) = frame_of(&a);
        let (first, second) = streams_of(&bytes, at);
        (bytes, at, first, second)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Damage inside a V6 frame's streams, where the CRC (fixed up here) cannot see it
    /// (a writer with a bug): bytes changed, streams cut, the stored-state flag set.
    /// Reading returns an error at the frame or events, and never panics; the checker
    /// never passes a frame that does not decode.
    #[test]
    fn damaged_v6_streams_never_panic(
        flips in prop::collection::vec((any::<usize>(), any::<u8>(), any::<bool>()), 0..6),
        cut in prop::collection::vec(0usize..3, 2),
        flag in any::<bool>(),
    ) {
        let (bytes, at, first, second) = rich_frame();
        let (mut first, mut second) = (first.clone(), second.clone());
        for (i, x, which) in flips {
            let s = if which { &mut first } else { &mut second };
            let n = s.len();
            s[i % n] ^= x;
        }
        first.truncate(first.len() - cut[0]);
        second.truncate(second.len() - cut[1]);
        let mut bytes = bytes.clone();
        if flag {
            bytes[at + 1] |= 1;
        }
        let raw = (first.len() + second.len()) as u32;
        let b = with_streams(&bytes, *at, &first, &second, raw);
        let r = Reader::with_source(std::io::Cursor::new(b.clone()), "fuzz".into()).unwrap();
        let mut events = r.events();
        let mut n = 0;
        for e in events.by_ref() {
            match e {
                Ok(_) => n += 1,
                Err(e) => {
                    prop_assert_eq!(e.offset(), Some(*at as u64));
                    break;
                }
            }
        }
        let rep = check_bytes(b);
        prop_assert!(n == 600 || !rep.ok());
    }
}
