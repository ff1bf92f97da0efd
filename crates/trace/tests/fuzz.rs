//! Property-based fuzzing of the reader and checker on damaged bytes: whatever the bytes,
//! reading returns events or an error naming an offset inside the file, and never panics.
//! `TDMAP_FUZZ_CASES=N` runs N cases per property (default 1000, kept small for `make test`).
//! `make fuzz` runs the same reader and checker under the mutation harness of `crates/fuzz`.

use proptest::prelude::*;
use std::sync::OnceLock;
use tdmap_trace::*;

fn valid() -> &'static Vec<u8> {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let p = std::env::temp_dir().join(format!("tdmap-fuzz-{}.trace", std::process::id()));
        let mut h = Header::new(vec!["a".into()], "m");
        h.threads = 2;
        let w = Writer::create(&p, h).unwrap();
        for t in 0..2u32 {
            let a: Vec<Access> = (0..50)
                .map(|i| Access {
                    thread: t,
                    addr: i * 64,
                    size: 4,
                    write: i % 2 == 1,
                    time: i,
                })
                .collect();
            w.append_accesses(t, &a).unwrap();
            let f = [Fault {
                thread: t,
                addr: 4096,
                cpu: t,
                node: 0,
                time: 60,
            }];
            w.append_faults(t, &f).unwrap();
        }
        w.set_threads(vec![ThreadInfo {
            id: 0,
            os_tid: 1,
            cpu: None,
        }])
        .unwrap();
        w.finish(TraceStatus::Complete).unwrap();
        let b = std::fs::read(&p).unwrap();
        let _ = std::fs::remove_file(&p);
        b
    })
}

/// Reads everything; returns the event count or the error's offset.
fn read(bytes: Vec<u8>) -> std::result::Result<usize, Option<u64>> {
    let len = bytes.len() as u64;
    let r = Reader::with_source(std::io::Cursor::new(bytes), "fuzz".into());
    let mut n = 0;
    let res = r.and_then(|mut r| {
        while let Some(c) = r.next_chunk()? {
            n += c.len();
        }
        Ok(n)
    });
    res.map_err(|e| {
        let off = e.offset();
        assert!(
            off.is_some_and(|o| o <= len),
            "error without an offset in the file: {e}"
        );
        off
    })
}

fn cases() -> u32 {
    std::env::var("TDMAP_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn flipped_bytes_never_panic(flips in prop::collection::vec((any::<usize>(), 1u8..=255), 1..8)) {
        let mut b = valid().clone();
        for (at, x) in flips {
            let i = at % b.len();
            b[i] ^= x;
        }
        let _ = read(b.clone());
        let _ = check_bytes(b);
    }

    #[test]
    fn truncation_is_always_an_error(cut in 1usize..2000) {
        let b = valid().clone();
        let keep = b.len().saturating_sub(cut);
        prop_assume!(keep < b.len());
        // A cut leaves a readable prefix of whole frames, Incomplete (a cut inside the
        // header is a reader error), and the checker still sees that a trace marked
        // Complete lost its end.
        if let Ok(n) = read(b[..keep].to_vec()) {
            prop_assert!(n <= 102);
            let mut r = Reader::with_source(std::io::Cursor::new(b[..keep].to_vec()), "cut".into()).unwrap();
            while r.next_chunk().unwrap().is_some() {}
            prop_assert!(!r.ending().unwrap().complete());
        }
        prop_assert!(!check_bytes(b[..keep].to_vec()).ok());
    }

    #[test]
    fn random_bytes_after_magic_never_panic(tail in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut b = b"TDMAPTRC\x01\0\0\0".to_vec();
        b.extend(tail);
        let _ = read(b.clone());
        let _ = check_bytes(b);
    }
}

#[test]
fn the_valid_sample_reads_whole() {
    assert_eq!(read(valid().clone()), Ok(102));
    assert!(check_bytes(valid().clone()).ok());
}
