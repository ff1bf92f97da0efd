//! Version 4's collapsed reads (spin-waiting): a repeats frame travels with the accesses
//! frame it describes, readers attach it to that chunk, the checker counts it, and a
//! repeats frame that names no read of its frame is damage.

use tdmap_trace::*;

fn read(thread: u32, i: u64, write: bool) -> Access {
    Access {
        thread,
        addr: 0x4000 + (i % 4) * 64,
        size: 4,
        write,
        time: i,
    }
}

fn path(name: &str) -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("repeats");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Thread 0: 10 accesses, the 4th a write; reads 1 and 7 stand for runs.
fn write_sample(p: &std::path::Path) {
    let mut h = Header::new(vec!["spin".into()], "local");
    h.threads = 2;
    let w = Writer::create(p, h).unwrap();
    let acc: Vec<Access> = (0..10).map(|i| read(0, i, i == 3)).collect();
    w.append_collapsed(0, &acc, &[(1, 500), (7, 2)]).unwrap();
    w.append_accesses(1, &acc[..3]).unwrap();
    w.finish(TraceStatus::Complete).unwrap();
}

#[test]
fn collapsed_reads_round_trip_and_are_counted_apart_from_accesses() {
    let p = path("round.trace");
    write_sample(&p);
    let mut r = Reader::open(&p).unwrap();
    assert_eq!(r.header().version, VERSION);
    let mut seen = Vec::new();
    while let Some(c) = r.next_chunk().unwrap() {
        if let Chunk::Accesses(a) = c {
            seen.push((a.thread, a.addrs.len(), a.repeats.clone()));
        }
    }
    assert_eq!(
        seen,
        [(0, 10, vec![(1, 500), (7, 2)]), (1, 3, vec![])],
        "the repeats go with thread 0's frame only"
    );
    let rep = check(&p);
    assert!(rep.ok(), "{:?}", rep.problems);
    assert!(rep.complete);
    assert_eq!((rep.accesses, rep.collapsed_reads), (13, 502));
}

#[test]
fn the_writer_refuses_repeats_on_a_write_or_out_of_order() {
    let w = Writer::create(path("bad.trace"), Header::new(vec![], "local")).unwrap();
    let acc: Vec<Access> = (0..10).map(|i| read(0, i, i == 3)).collect();
    for bad in [&[(3, 1)][..], &[(7, 1), (1, 1)], &[(10, 1)], &[(2, 0)]] {
        assert!(
            matches!(
                w.append_collapsed(0, &acc, bad),
                Err(TraceError::Invalid(_))
            ),
            "{bad:?}"
        );
    }
}

/// A repeats frame spliced in front of another thread's frame, or naming a write, is
/// damage the reader reports at that frame (the checker lists it).
#[test]
fn a_repeat_that_names_a_write_or_another_frame_is_corrupt() {
    let trace = |name: &str, writes: bool, repeats: &[(u32, u32)]| {
        let p = path(name);
        let mut h = Header::new(vec!["spin".into()], "local");
        h.threads = 2;
        let w = Writer::create(&p, h).unwrap();
        let acc: Vec<Access> = (0..10).map(|i| read(0, i, writes && i == 3)).collect();
        w.append_collapsed(0, &acc, repeats).unwrap();
        w.append_accesses(1, &acc).unwrap();
        w.finish(TraceStatus::Complete).unwrap();
        std::fs::read(&p).unwrap()
    };
    let good = trace("with_repeat.trace", false, &[(3, 9)]);
    let writes = trace("with_write.trace", true, &[]);
    let rep = find_frame(&good, 6).unwrap();
    let acc = find_frame(&good, 1).unwrap();
    assert_eq!(
        acc,
        rep + frame_len(&good, rep),
        "the repeats frame comes first"
    );
    // The repeats frame, then a frame whose access 3 is a write.
    let w0 = find_frame(&writes, 1).unwrap();
    let mut on_write = good[..acc].to_vec();
    on_write.extend_from_slice(&writes[w0..w0 + frame_len(&writes, w0)]);
    // The repeats frame, then thread 1's accesses.
    let t1 = acc + frame_len(&good, acc);
    let mut other = good[..acc].to_vec();
    other.extend_from_slice(&good[t1..t1 + frame_len(&good, t1)]);
    for (bytes, want) in [
        (on_write, "collapsed reads name no read"),
        (other, "not followed by its thread's accesses"),
    ] {
        let rep = check_bytes(bytes);
        assert!(
            rep.problems.iter().any(|p| p.message.contains(want)),
            "{want}: {:?}",
            rep.problems
        );
    }
}

/// Offset of the first frame of `kind` after the header (frames are walked by length).
fn find_frame(bytes: &[u8], kind: u8) -> Option<usize> {
    let body = u32::from_le_bytes(bytes[28..32].try_into().unwrap()) as usize;
    let mut at = 32 + body + 4;
    while at + 24 <= bytes.len() {
        if bytes[at] == kind {
            return Some(at);
        }
        at += frame_len(bytes, at);
    }
    None
}

fn frame_len(bytes: &[u8], at: usize) -> usize {
    24 + u32::from_le_bytes(bytes[at + 16..at + 20].try_into().unwrap()) as usize
}
