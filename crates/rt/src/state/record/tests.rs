//! The record path's tests: chunks written by the general path and the callbacks'
//! inlined path, expanded by the reader, against what a version-6 chunk held.

use super::super::tests::{fresh_state, test_bitmap, FLUSHED};
use super::*;
use proptest::prelude::*;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use tdmap_wire::raw::{ChunkHeader, HEADER_BYTES, KIND_PREDICTED, TICKS};

/// A chunk as this thread flushed it: header, body words, and its words expanded by
/// the reader's `tdmap_wire::raw::expand`.
struct Flushed {
    hdr: ChunkHeader,
    /// The clock ticks of the chunk's positions (one per TICK_EVERY).
    ticks: Vec<u64>,
    body: Vec<u64>,
    words: Vec<u64>,
}

/// The chunks flushed on this thread since the last call.
fn flushed() -> Vec<Flushed> {
    let raws = FLUSHED.with(|f| f.take());
    raws.into_iter()
        .map(|raw| {
            let hdr = ChunkHeader::decode(&raw).unwrap();
            assert_eq!(raw.len(), HEADER_BYTES + hdr.body_bytes().unwrap());
            let body: Vec<u64> = raw[HEADER_BYTES + TICKS * 8..]
                .chunks_exact(8)
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
                .collect();
            let mut words = Vec::new();
            wire::expand(&body, hdr.extra, &mut words).unwrap();
            let ticks = raw[HEADER_BYTES..HEADER_BYTES + TICKS * 8]
                .chunks_exact(8)
                .take((hdr.extra as usize).div_ceil(TICK_EVERY))
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
                .collect();
            Flushed {
                hdr,
                ticks,
                body,
                words,
            }
        })
        .collect()
}

/// Records an access as `record` does in a recording thread.
fn access(s: &mut ThreadState, addr: u64, size_log2: u32, write: bool) {
    if fast_path(s) {
        record_body::<false>(s, addr, size_log2, write)
    } else {
        record_body::<true>(s, addr, size_log2, write)
    }
}

/// CPU words with the CPU left out (the thread may move between two readings).
fn no_cpu(words: &[u64]) -> Vec<u64> {
    let is_cpu = |w: u64| w >> 61 == 1;
    words
        .iter()
        .map(|&w| if is_cpu(w) { wire::pack_cpu(0) } else { w })
        .collect()
}

/// Far above the tests' first-touch bitmap: no first touches there.
const HIGH: u64 = 1 << 40;

/// A loop body over three arrays (two read, one written) at irregular distances.
fn three_arrays(i: u64) -> [(u64, bool); 3] {
    [0u64, 1, 2].map(|j| (HIGH + (j + 1) * (j + 3) * (1 << 24) + 8 * i, j == 2))
}

#[test]
fn a_chunk_of_strided_accesses_is_a_handful_of_words_and_expands_to_them() {
    let mut s = fresh_state(false, true);
    let mut want = Vec::new();
    for i in 0..3000 {
        for (a, w) in three_arrays(i) {
            access(&mut s, a, 3, w);
            want.push(wire::pack(a, 3, w, false));
        }
    }
    flush(&mut s);
    let chunks = flushed();
    assert_eq!(chunks.len(), 2, "9,000 accesses take two chunks");
    for c in &chunks {
        assert_eq!(c.hdr.kind, KIND_PREDICTED);
        assert!(c.hdr.extra as usize <= CHUNK_RECORDS);
        assert!(c.body.len() <= 12, "{} words: {:x?}", c.body.len(), c.body);
    }
    let got: Vec<u64> = chunks.iter().flat_map(|c| c.words.clone()).collect();
    assert_eq!(got, want);
    assert_eq!(s.seen(), 9000);
}

/// `fast_end` covers the positions where `fast_path` holds, from wherever it is
/// set to the end of that stretch of the tick block, and no more: the callbacks'
/// one compare stands for `fast_path`.
#[test]
fn fast_end_is_the_end_of_the_fast_positions_it_starts_in() {
    let mut s = fresh_state(false, true);
    for len in 0..2 * TICK_EVERY {
        s.len = len;
        s.fast_end = 0;
        if !fast_path_from(&mut s) {
            assert_eq!(s.fast_end, 0, "{len}");
            continue;
        }
        let end = s.fast_end as usize;
        assert!(end > len, "{len}");
        for p in len..end {
            s.len = p;
            assert!(fast_path(&s), "{len}: position {p} below {end}");
        }
        s.len = end;
        assert!(!fast_path(&s), "{len}: {end} ends the stretch");
    }
    s.len = 0;
}

/// `TDMAP_RT_PREDICT=0`: the same chunk, a record per access, no run word.
#[test]
fn without_runs_every_access_is_a_record() {
    let mut s = fresh_state(false, true);
    s.no_runs = true;
    s.settle();
    let mut want = Vec::new();
    for i in 0..1000 {
        for (a, w) in three_arrays(i) {
            access(&mut s, a + (1 << 38), 3, w);
            want.push(wire::pack(a + (1 << 38), 3, w, false));
        }
    }
    flush(&mut s);
    let c = &flushed()[0];
    assert_eq!(c.body, want);
    assert_eq!(c.words, want);
}

#[test]
fn first_touches_are_records_with_their_cpu_word_even_when_predicted() {
    let bitmap = test_bitmap();
    // Pages 8192-8195, this test's own.
    bitmap[128].fetch_and(!0xf, Ordering::Relaxed);
    let base = 8192u64 << 12;
    let mut s = fresh_state(false, false);
    let mut want = Vec::new();
    for pass in 0..2 {
        for i in 0..2048 {
            let a = base + 8 * i;
            access(&mut s, a, 3, true);
            let first = pass == 0 && i % 512 == 0;
            want.push(wire::pack(a, 3, true, first));
            if first {
                want.push(wire::pack_cpu(0));
            }
        }
    }
    flush(&mut s);
    let chunks = flushed();
    assert_eq!(chunks.len(), 1);
    let c = &chunks[0];
    assert_eq!(no_cpu(&c.words), want);
    // Per pass two records to learn the stride; then each first touch, its CPU word
    // and the run after it.
    assert!(c.body.len() <= 2 * 2 + 4 * 3, "{:x?}", c.body);
    assert_eq!(bitmap[128].load(Ordering::Relaxed) & 0xf, 0xf);
}

#[test]
fn a_collapsed_run_names_its_read_by_access_index_and_expands_to_its_word() {
    // A line whose watch word no other test writes.
    let flag = 0x108_0004_0000u64;
    let mut s = fresh_state(false, true);
    for _ in 0..crate::collapse::WATCH_AFTER + 10 {
        access(&mut s, flag, 2, false);
    }
    access(&mut s, flag, 2, true);
    access(&mut s, flag, 2, false);
    flush(&mut s);
    let c = &flushed()[0];
    let r = wire::pack(flag, 2, false, false);
    let mut want = vec![r; crate::collapse::WATCH_AFTER as usize];
    let last = want.len() as u32 - 1;
    want.push(wire::pack(flag, 2, true, false));
    // The 32nd read (access and word 31) stands for 10 more.
    want.push(wire::pack_repeat(last, 10));
    want.push(r);
    assert_eq!(c.words, want);
    // In the chunk itself the repeat word names access 31 too, between two runs.
    let repeats: Vec<_> = (c.body.iter())
        .filter(|&&w| wire::unpack_run(w).is_none())
        .filter_map(|&w| wire::unpack_repeat(w))
        .collect();
    assert!(repeats.contains(&(last, 10)), "{:x?}", c.body);
    assert!(c.body.len() < want.len());
}

/// The first page of the proptest's 64 pages: word 64 of the tests' bitmap.
const REGION_PAGE: u64 = 4096;

/// A stretch of a loop: `arrays` interleaved arrays stepped by `stride` from page
/// `page` of the region, `len` times; `repeat` names an earlier read before its first
/// access.
#[derive(Debug, Clone)]
struct Seg {
    page: u64,
    stride: i64,
    len: u64,
    arrays: u64,
    log2: u32,
    write_last: bool,
    repeat: Option<(usize, u32)>,
}

fn seg() -> impl Strategy<Value = Seg> {
    (
        0u64..64,
        prop::sample::select(vec![0i64, 8, 16, -8, 4096, 24, 4104]),
        1u64..400,
        1u64..4,
        0u32..5,
        any::<bool>(),
        prop::option::weighted(0.2, (any::<usize>(), 1u32..1000)),
    )
        .prop_map(
            |(page, stride, len, arrays, log2, write_last, repeat)| Seg {
                page,
                stride,
                len,
                arrays,
                log2,
                write_last,
                repeat,
            },
        )
}

/// Records an access as a callback of this size and kind does (`record_sized`): by
/// `record_known` below `fast_end`, else by `record_fast` where `fast_path_from`
/// holds (and sets `fast_end`), else by the general path.
fn access_known(s: &mut ThreadState, addr: u64, log2: u32, write: bool) {
    if s.len >= s.fast_end as usize {
        if fast_path_from(s) {
            return record_fast(s, addr, log2, write);
        }
        return record_body::<true>(s, addr, log2, write);
    }
    match (log2, write) {
        (0, false) => record_known::<0, false>(s, addr),
        (1, false) => record_known::<1, false>(s, addr),
        (2, false) => record_known::<2, false>(s, addr),
        (3, false) => record_known::<3, false>(s, addr),
        (0, true) => record_known::<0, true>(s, addr),
        (1, true) => record_known::<1, true>(s, addr),
        (2, true) => record_known::<2, true>(s, addr),
        (3, true) => record_known::<3, true>(s, addr),
        _ => unreachable!("the test's sizes"),
    }
}

/// The first of the 64 pages of `the_inlined_common_case_records_what_the_general_path_does`:
/// word 200 of the tests' first-touch bitmap.
const KNOWN_PAGE: u64 = 200 * 64;

/// The flushed chunks of `accesses` recorded by `f` on a fresh state, CPU words and
/// times left out, with the state's access count; the pages from [`KNOWN_PAGE`] on
/// were touched as `touched_before` says (one bit per page).
fn recorded_by(
    f: fn(&mut ThreadState, u64, u32, bool),
    accesses: &[(u64, u32, bool)],
    touched_before: u64,
) -> (Vec<(u32, u64, Vec<u64>)>, u64) {
    test_bitmap()[(KNOWN_PAGE / 64) as usize].store(touched_before, Ordering::Relaxed);
    // Each recording starts from unwatched lines, whatever the one before it watched.
    for &(a, _, _) in accesses {
        crate::collapse::forget(a >> LINE_SHIFT);
    }
    let mut s = fresh_state(false, true);
    for &(a, log2, w) in accesses {
        f(&mut s, a, log2, w);
    }
    flush(&mut s);
    let chunks = flushed();
    // Every tick position of a chunk read the clock, in order, after the last chunk
    // ended: a skipped tick keeps an older chunk's time.
    let mut last = 0;
    for c in &chunks {
        for &t in &c.ticks {
            assert!(
                t >= last && t <= c.hdr.t1,
                "ticks out of order: {:?}",
                c.ticks
            );
            last = t;
        }
    }
    let got = chunks
        .into_iter()
        .map(|c| (c.hdr.count, c.hdr.extra, no_cpu(&c.body)))
        .collect();
    (got, s.seen())
}

/// Past a flush, the callbacks' path records the next chunk as the general path
/// does, its clock ticks included (`recorded_by` checks them): `flush` clears
/// `fast_end`, which would otherwise let the new chunk's tick positions through.
#[test]
fn a_chunk_after_a_flush_starts_as_the_general_path_starts_it() {
    let accesses: Vec<_> = (0..3000)
        .flat_map(|i| three_arrays(i).map(|(a, w)| (a, 3, w)))
        .collect();
    let (chunks, seen) = recorded_by(access_known, &accesses, 0);
    assert_eq!((chunks.len(), seen), (2, 9000));
    assert_eq!(recorded_by(access, &accesses, 0), (chunks, seen));
}

/// A transpose's loop as clang builds alltoall's: a column read that steps by a row,
/// a reload of the loop bound (the same address each time) and a row write, with four
/// scattered reads every 40 iterations. The column reads, which the predictor foresees
/// with a nonzero step, never reach the collapse; the bound's line, which no thread
/// writes, is watched at its 32nd record and keeps its way while the scattered reads
/// come and go, so its reads stay collapsed: one run per chunk, two positions per
/// iteration and the scattered reads. Both paths agree.
#[test]
fn a_loops_stepping_reads_leave_its_reloaded_bound_collapsed() {
    let (n, rows) = (3000u64, 2560 * 8);
    let bound = HIGH + (1 << 30) + 8;
    let scattered = |i: u64| {
        (0..4).map(move |j| {
            (
                HIGH + (1 << 32) + ((i * 4 + j) * 7919 % 4099) * 64,
                3,
                false,
            )
        })
    };
    let accesses: Vec<_> = (0..n)
        .flat_map(|i| {
            [
                (HIGH + i * rows, 3, false),
                (bound, 3, false),
                (HIGH + (1 << 31) + 8 * i, 3, true),
            ]
            .into_iter()
            .chain(scattered(i).filter(move |_| i % 40 == 39))
        })
        .collect();
    let (chunks, seen) = recorded_by(access_known, &accesses, 0);
    assert_eq!(seen, accesses.len() as u64);
    assert_eq!(recorded_by(access, &accesses, 0), (chunks.clone(), seen));
    // Positions: the 32 records of the bound before each watch, a repeat word for each
    // run, and two per iteration.
    let positions: u64 = chunks.iter().map(|c| c.1).sum();
    let repeats = chunks
        .iter()
        .flat_map(|c| &c.2)
        .filter(|&&w| wire::unpack_repeat(w).is_some() && wire::unpack_run(w).is_none())
        .count();
    let most = 2 * n + 4 * (n / 40) + 2 * 40;
    assert!(
        positions <= most,
        "{positions} positions for {n} iterations"
    );
    assert!(
        repeats <= chunks.len(),
        "{repeats} repeat words in {} chunks",
        chunks.len()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The callbacks' inlined common case (`record_known`) writes the very words,
    /// chunk lengths and positions that the general path (`record_body`) writes:
    /// strided loops over a few arrays (first touches among them), with spin-waits on one line (collapsed runs,
    /// ended by writes, some foreseen) and lines that fall out of the collapse's ways mixed in.
    #[test]
    fn the_inlined_common_case_records_what_the_general_path_does(
        segs in prop::collection::vec(seg(), 1..30),
        spins in prop::collection::vec((0usize..30, 1u64..120, 0u64..4, any::<bool>()), 0..8),
        touched_before in any::<u64>(),
    ) {
        let mut accesses = Vec::new();
        for (i, g) in segs.iter().enumerate() {
            for (_, n, line, alternate) in spins.iter().filter(|sp| sp.0 == i) {
                let flag = HIGH + (1 << 30) + line * 64;
                accesses.extend((0..*n).map(|_| (flag, 2, false)));
                // A write ends the run; a thread that writes and rereads its flag
                // in turn watches it anew at each read and ends it at each write.
                let turns = if *alternate { *n } else { 1 };
                accesses.extend((0..turns).flat_map(|_| [(flag, 2, true), (flag, 2, false)]));
            }
            for i in 0..g.len {
                for j in 0..g.arrays {
                    let off = (g.page * 4096 + j * (3 * 4096 + 40)) as i64;
                    let addr = (KNOWN_PAGE << 12) + (off + i as i64 * g.stride).rem_euclid(64 * 4096) as u64;
                    accesses.push((addr, g.log2 % 4, g.write_last && j + 1 == g.arrays));
                }
            }
        }
        let want = recorded_by(access, &accesses, touched_before);
        prop_assert_eq!(recorded_by(access_known, &accesses, touched_before), want);
    }

    /// Random accesses with random first touches (random pages touched before) and
    /// random collapsed runs (repeat words naming earlier reads), written through the
    /// runtime's packing (`end_run`, `take`) as `record_body` does after the collapse,
    /// and expanded by the reader, give the
    /// words a version-6 chunk held: a record per access, a CPU word after each first
    /// touch, each repeat word naming its read's word position.
    #[test]
    fn packed_then_expanded_gives_the_version_6_words(
        segs in prop::collection::vec(seg(), 1..40),
        touched_before in any::<u64>(),
    ) {
        let bitmap = test_bitmap();
        bitmap[(REGION_PAGE / 64) as usize].store(touched_before, Ordering::Relaxed);
        let mut touched: HashSet<u64> = (0..64)
            .filter(|p| touched_before >> p & 1 == 1)
            .map(|p| REGION_PAGE + p)
            .collect();
        let span = 64 * 4096i64;
        let mut s = fresh_state(false, false);
        let mut want: Vec<Vec<u64>> = vec![Vec::new()];
        // This chunk's reads that no repeat word names yet: (access index, word).
        let mut reads: Vec<(u32, u32)> = Vec::new();
        let mut index = 0u32;
        for g in &segs {
            for i in 0..g.len {
                for j in 0..g.arrays {
                    let off = (g.page * 4096 + j * (3 * 4096 + 40)) as i64;
                    let addr = (REGION_PAGE << 12) + (off + i as i64 * g.stride).rem_euclid(span) as u64;
                    let write = g.write_last && j + 1 == g.arrays;
                    if full(&s) {
                        flush(&mut s);
                        want.push(Vec::new());
                        reads.clear();
                        index = 0;
                    }
                    let fast = fast_path(&s);
                    let cur = want.last_mut().unwrap();
                    if let (Some((pick, extra)), 0, 0, false) = (g.repeat, i, j, reads.is_empty()) {
                        let (at, word) = reads.remove(pick % reads.len());
                        let w = wire::pack_repeat(at, extra);
                        let next = if fast { end_run::<false>(&mut s, Some(w)) } else { end_run::<true>(&mut s, Some(w)) };
                        prop_assert_eq!(next, index);
                        cur.push(wire::pack_repeat(word, extra));
                    }
                    if fast { take::<false>(&mut s, addr, g.log2, write, NO_WATCH) } else { take::<true>(&mut s, addr, g.log2, write, NO_WATCH) }
                    let first = touched.insert(addr >> 12);
                    if !write {
                        reads.push((index, cur.len() as u32));
                    }
                    cur.push(wire::pack(addr, g.log2, write, first));
                    if first {
                        cur.push(wire::pack_cpu(0));
                    }
                    index += 1;
                }
            }
        }
        flush(&mut s);
        want.retain(|c| !c.is_empty());
        let got: Vec<Vec<u64>> = flushed().iter().map(|c| no_cpu(&c.words)).collect();
        prop_assert_eq!(got, want);
    }
}
