//! Version 6's accesses frames (the stride predictor's runs and literals, times as
//! blocks) give back every event as written: random streams with random times, sizes
//! and collapsed reads through the writer; the conversion's way (accesses, then time
//! blocks cut at any phase); and symbols handed over whole from a predictor's state.

use proptest::prelude::*;
use tdmap_trace::*;
use tdmap_wire::predict::{Encoder, Symbol};
use tdmap_wire::times::BlockTime;

fn path(name: &str) -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("symbols");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Every event of a trace, per thread in its order: accesses as (addr, size, write,
/// time, extra reads), faults as (addr, 0, false, time, cpu + 1 << 32 | node).
type Ev = (u64, u8, bool, u64, u64);

fn read_back(p: &std::path::Path, threads: usize) -> Vec<Vec<Ev>> {
    let mut r = Reader::open(p).unwrap();
    let mut ev = vec![Vec::new(); threads];
    while let Some(c) = r.next_chunk().unwrap() {
        match c {
            Chunk::Accesses(a) => {
                let mut reps = a.repeats.iter().peekable();
                for i in 0..a.addrs.len() {
                    let extra = reps.next_if(|r| r.0 as usize == i).map_or(0, |r| r.1);
                    let e = (
                        a.addrs[i],
                        a.sizes[i],
                        a.writes[i],
                        a.times[i],
                        extra as u64,
                    );
                    ev[a.thread as usize].push(e);
                }
            }
            Chunk::Faults(f) => {
                for i in 0..f.addrs.len() {
                    let cpu = (f.cpus[i] as u64) << 32 | f.nodes[i] as u64;
                    ev[f.thread as usize].push((f.addrs[i], 0, false, f.times[i], cpu));
                }
            }
        }
    }
    assert!(r.ending().unwrap().complete());
    ev
}

/// One thread's accesses: `body` strided arrays in turn (a loop the predictor learns),
/// then `random` accesses anywhere, `reps` times; times step evenly by `step` with a
/// jump (backwards too) every `jump` accesses.
fn stream(
    t: u32,
    (body, iters, random): (u64, u64, &[(u64, u8, bool)]),
    (step, jump): (u64, usize),
) -> Vec<Access> {
    let mut v = Vec::new();
    let mut time = 1000u64;
    let mut tick = |i: usize| {
        time = if jump > 0 && i % jump == jump - 1 {
            time.wrapping_add(u64::MAX / 3 * (i as u64 % 3))
        } else {
            time.wrapping_add(step)
        };
        time
    };
    for i in 0..iters {
        for j in 0..body {
            let addr = ((j + 1) << 32) + i * 8;
            v.push((addr, 8u8, j + 1 == body));
        }
        v.extend(random.iter().copied());
    }
    v.into_iter()
        .enumerate()
        .map(|(i, (addr, size, write))| Access {
            thread: t,
            addr,
            size,
            write,
            time: tick(i),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the accesses, times (even steps, jumps, going back), sizes (odd ones
    /// included, which are never predicted), collapsed reads and faults between them,
    /// the reader gives back each thread's events exactly.
    #[test]
    fn random_streams_round_trip(
        body in 0u64..40,
        iters in 1u64..300,
        random in prop::collection::vec((any::<u64>(), any::<u8>(), any::<bool>()), 0..6),
        step in prop_oneof![Just(0u64), 1u64..5, any::<u64>()],
        jump in 0usize..700,
        rep_every in 2usize..50,
        cut in 1usize..5000,
    ) {
        let p = path(&format!("rt-{}", std::process::id()));
        let mut h = Header::new(vec!["p".into()], "m");
        h.threads = 2;
        let w = Writer::create(&p, h).unwrap();
        let mut want = vec![Vec::new(); 2];
        for t in 0..2u32 {
            let acc = stream(t, (body + t as u64, iters, &random), (step, jump));
            for (k, part) in acc.chunks(cut).enumerate() {
                let reps: Vec<(u32, u32)> = (0..part.len())
                    .filter(|&i| i % rep_every == 1 && !part[i].write)
                    .map(|i| (i as u32, (i + k) as u32 % 7 + 1))
                    .collect();
                w.append_collapsed(t, part, &reps).unwrap();
                let mut extra = reps.iter().peekable();
                for (i, a) in part.iter().enumerate() {
                    let e = extra.next_if(|r| r.0 as usize == i).map_or(0, |r| r.1);
                    want[t as usize].push((a.addr, a.size, a.write, a.time, e as u64));
                }
                let f = Fault { thread: t, addr: k as u64 * 4096, cpu: t, node: 1, time: 7 };
                w.append_faults(t, &[f]).unwrap();
                want[t as usize].push((f.addr, 0, false, 7, (t as u64) << 32 | 1));
            }
        }
        w.finish(TraceStatus::Complete).unwrap();
        let got = read_back(&p, 2);
        let _ = std::fs::remove_file(&p);
        prop_assert_eq!(got, want);
    }

    /// The conversion's way: accesses pushed without times, then blocks that give them
    /// (a chunk's clock ticks spread evenly, cut at side words so that a block goes on
    /// at a phase): the times read back are the blocks' own steps.
    #[test]
    fn time_blocks_at_any_phase_round_trip(
        blocks in prop::collection::vec((1usize..600, any::<u32>(), 0u64..1 << 40, 1u64..600, 0u64..600), 1..20),
    ) {
        let p = path(&format!("blocks-{}", std::process::id()));
        let w = Writer::create(&p, Header::new(vec![], "m")).unwrap();
        let mut frames = OpenFrames::default();
        let mut want = vec![Vec::new()];
        for (n, t0, span, den, rem) in blocks {
            let start = BlockTime::new(t0 as u64, span, den, rem % den).unwrap();
            let mut f = frames.frame(&w, 0, n).unwrap();
            f.times(n, start);
            let mut time = start;
            for i in 0..n as u64 {
                f.access(0x10_0000 + i * 8, 4, i % 2 == 0);
                want[0].push((0x10_0000 + i * 8, 4, i % 2 == 0, time.step(), 0));
            }
        }
        frames.close_all(&w).unwrap();
        w.finish(TraceStatus::Complete).unwrap();
        let got = read_back(&p, 1);
        let _ = std::fs::remove_file(&p);
        prop_assert_eq!(got, want);
    }
}

/// Symbols handed over whole (the runtime predicts in the program's thread, stage 2)
/// from a predictor that already ran: the frame stores that state, decodes alone, and
/// gives back the accesses; a frame refuses symbols that stand for another count, and
/// accesses mixed with symbols.
#[test]
fn symbols_from_a_running_predictor_round_trip() {
    let acc = stream(0, (5, 400, &[(0xdead_beef, 4, true)]), (3, 0));
    let meta = |a: &Access| meta_of(a.size, a.write);
    let (head, tail) = acc.split_at(777);
    let mut enc = Encoder::default();
    head.iter()
        .for_each(|a| enc.push(a.addr, meta(a), false, |_| {}));
    enc.finish(|_| {});
    let start = enc.predictor().clone();
    let mut syms = Vec::new();
    tail.iter()
        .for_each(|a| enc.push(a.addr, meta(a), false, |s| syms.push(s)));
    enc.finish(|s| syms.push(s));
    assert!(syms.len() < tail.len() / 10, "{} symbols", syms.len());

    let p = path("handed");
    let w = Writer::create(&p, Header::new(vec![], "m")).unwrap();
    let mut frames = OpenFrames::default();
    let mut f = frames.frame(&w, 0, tail.len()).unwrap();
    f.symbols(Some(&start), &syms, tail.len()).unwrap();
    f.times(tail.len(), BlockTime::every(tail[0].time, 3));
    assert!(f.symbols(None, &[Symbol::Run(2)], 3).is_err(), "2 is not 3");
    frames.close_all(&w).unwrap();
    let mut f = frames.frame(&w, 0, 2).unwrap();
    f.access(64, 8, false);
    assert!(f.symbols(None, &[Symbol::Run(1)], 1).is_err(), "mixed");
    drop(frames);
    w.finish(TraceStatus::Complete).unwrap();
    let got = read_back(&p, 1);
    let want: Vec<Ev> = tail
        .iter()
        .map(|a| (a.addr, a.size, a.write, a.time, 0))
        .collect();
    assert_eq!(got, [want]);
    assert!(check(&p).ok());
    let _ = std::fs::remove_file(&p);
}

/// Symbols of predictors that run on across frames (the runtime's, which knows nothing
/// of frames): each frame goes on from where its thread's previous one ended, with
/// faults frames and another thread's frames between, and no state stored.
#[test]
fn symbols_that_continue_across_frames_round_trip() {
    let p = path("continues");
    let mut h = Header::new(vec![], "m");
    h.threads = 2;
    let w = Writer::create(&p, h).unwrap();
    let mut frames = OpenFrames::default();
    let mut want = vec![Vec::new(), Vec::new()];
    let mut enc = [Encoder::default(), Encoder::default()];
    let acc: Vec<Vec<Access>> = (0..2)
        .map(|t| stream(t, (3 + t as u64, 300, &[(0x42 << 20, 2, false)]), (1, 0)))
        .collect();
    for (k, part) in (0..acc[0].len()).step_by(250).enumerate() {
        for t in 0..2u32 {
            let a = &acc[t as usize][part..(part + 250).min(acc[t as usize].len())];
            if a.is_empty() {
                continue;
            }
            let e = &mut enc[t as usize];
            let mut syms = Vec::new();
            for x in a {
                e.push(x.addr, meta_of(x.size, x.write), false, |s| syms.push(s));
            }
            e.finish(|s| syms.push(s));
            let mut f = frames.frame(&w, t, a.len()).unwrap();
            f.symbols(None, &syms, a.len()).unwrap();
            f.times(a.len(), BlockTime::every(a[0].time, 1));
            want[t as usize].extend(a.iter().map(|x| (x.addr, x.size, x.write, x.time, 0)));
            if k % 3 == 1 {
                let f = Fault {
                    thread: t,
                    addr: 4096 * k as u64,
                    cpu: 0,
                    node: 0,
                    time: a[a.len() - 1].time,
                };
                frames.faults(&w, t, &[f]).unwrap();
                want[t as usize].push((f.addr, 0, false, f.time, 0));
            }
        }
    }
    frames.close_all(&w).unwrap();
    w.finish(TraceStatus::Complete).unwrap();
    assert_eq!(read_back(&p, 2), want);
    assert!(check(&p).ok());
    let _ = std::fs::remove_file(&p);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Symbols of a predictor that restarts at every chunk (the runtime's), several
    /// chunks to a frame with a reset between them, some frames continuing their
    /// thread's previous one after a fault, and a frame of accesses reset mid-way: the
    /// reader gives back every access, and the checker passes the resets wherever they
    /// are.
    #[test]
    fn symbols_of_a_predictor_that_restarts_round_trip(
        body in 1u64..12,
        iters in 1u64..200,
        random in prop::collection::vec((any::<u64>(), 0u8..4, any::<bool>()), 0..4),
        chunks in prop::collection::vec(1usize..700, 1..12),
        fault_every in 1usize..5,
        resets in prop::collection::vec(0usize..400, 0..4),
    ) {
        let random: Vec<_> = random.iter().map(|&(a, s, w)| (a, 1u8 << s, w)).collect();
        let acc = stream(0, (body, iters, &random), (2, 0));
        let p = path(&format!("restart-{}", std::process::id()));
        let mut h = Header::new(vec![], "m");
        h.threads = 2;
        let w = Writer::create(&p, h).unwrap();
        let mut frames = OpenFrames::default();
        let mut want = vec![Vec::new(), Vec::new()];
        let (mut at, mut k) = (0, 0);
        while at < acc.len() {
            let n = chunks[k % chunks.len()].min(acc.len() - at);
            let a = &acc[at..at + n];
            // A fresh encoder per chunk, and the chunk cut in two at its middle by a
            // fault frame: the second half continues the first's predictor.
            let mut enc = Encoder::default();
            let half = if k % fault_every == 0 { n.div_ceil(2) } else { n };
            for (lo, hi) in [(0, half), (half, n)] {
                if lo == hi {
                    continue;
                }
                let mut syms = Vec::new();
                for x in &a[lo..hi] {
                    enc.push(x.addr, meta_of(x.size, x.write), false, |s| syms.push(s));
                }
                enc.finish(|s| syms.push(s));
                let mut f = frames.frame(&w, 0, hi - lo).unwrap();
                if lo == 0 {
                    f.reset();
                    f.symbols(Some(&Default::default()), &syms, hi - lo).unwrap();
                } else {
                    prop_assert!(f.is_empty());
                    f.symbols(None, &syms, hi - lo).unwrap();
                }
                f.times(hi - lo, BlockTime::every(a[lo].time, 2));
                want[0].extend(a[lo..hi].iter().map(|x| (x.addr, x.size, x.write, x.time, 0)));
                if lo == 0 && half < n {
                    let time = a[hi - 1].time;
                    let fault = Fault { thread: 0, addr: 4096, cpu: 0, node: 0, time };
                    frames.faults(&w, 0, &[fault]).unwrap();
                    want[0].push((fault.addr, 0, false, fault.time, 0));
                }
            }
            at += n;
            k += 1;
        }
        // Thread 1: accesses pushed one by one, the frame's own encoder reset anywhere.
        let mut f = frames.frame(&w, 1, acc.len()).unwrap();
        for (i, x) in acc.iter().enumerate() {
            if resets.contains(&i) {
                f.reset();
            }
            f.push(x.addr, x.size, x.write, x.time);
            want[1].push((x.addr, x.size, x.write, x.time, 0));
        }
        frames.close_all(&w).unwrap();
        w.finish(TraceStatus::Complete).unwrap();
        let got = read_back(&p, 2);
        let ok = check(&p);
        let _ = std::fs::remove_file(&p);
        prop_assert_eq!(got, want);
        prop_assert!(ok.ok(), "{:?}", ok);
    }
}
