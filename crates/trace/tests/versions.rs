//! Older format versions keep reading: committed fixtures written by earlier writers,
//! compared event by event with the generator that wrote them.

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

/// A version-4 trace written before V5's access coding (shuffled and plain zigzag
/// columns, repeats frames, faults): readers must keep reading it, event for event.
#[test]
fn version_4_fixture_still_reads() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v4-mixed.trace");
    let mut r = Reader::open(&p).unwrap();
    assert_eq!(r.header().version, 4);
    assert_eq!(r.header().program, vec!["v4", "fixture"]);
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
