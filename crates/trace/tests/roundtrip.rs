//! Round trips through the writer and reader, and the errors for damaged files.

use std::sync::Arc;
use tdmap_trace::*;

// The workspace's folder guard: this crate has no common test module of its own.
#[path = "../../../tests/common/temp_dir.rs"]
mod temp_dir;

fn access(thread: u32, i: u64) -> Access {
    Access {
        thread,
        addr: 0x1000 + i * 8,
        size: 8,
        write: i.is_multiple_of(3),
        time: i,
    }
}

fn fault(thread: u32, i: u64) -> Fault {
    Fault {
        thread,
        addr: 0x7000 + i * 4096,
        cpu: thread,
        node: thread / 2,
        time: i,
    }
}

/// Writes a 4-thread trace (accesses from threads 0..3 concurrently, faults from 3).
fn sample(path: &std::path::Path) {
    let mut h = Header::new(vec!["prog".into(), "--arg".into()], "xeon-x7550-4s");
    h.threads = 4;
    let w = Arc::new(Writer::create(path, h).unwrap());
    let handles: Vec<_> = (0..3u32)
        .map(|t| {
            let w = Arc::clone(&w);
            std::thread::spawn(move || {
                for batch in 0..4u64 {
                    let v: Vec<Access> = (batch * 100..batch * 100 + 100)
                        .map(|i| access(t, i))
                        .collect();
                    w.append_accesses(t, &v).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let f: Vec<Fault> = (0..10).map(|i| fault(3, i)).collect();
    w.append_faults(3, &f).unwrap();
    let threads = (0..4)
        .map(|id| ThreadInfo {
            id,
            os_tid: 100 + id as i32,
            cpu: Some(id),
        })
        .collect();
    w.set_threads(threads).unwrap();
    w.finish(TraceStatus::Complete).unwrap();
}

#[test]
fn many_writer_threads_round_trip_in_per_thread_order() {
    let dir = tempdir();
    let p = dir.join("t.trace");
    sample(&p);
    let r = Reader::open(&p).unwrap();
    assert_eq!(r.header().program, vec!["prog", "--arg"]);
    assert_eq!(r.header().machine, "xeon-x7550-4s");
    assert_eq!(r.header().status, TraceStatus::Complete);
    assert_eq!(r.header().threads, 4);
    assert_eq!(r.threads().len(), 4, "threads known before the first event");
    assert_eq!(
        r.threads()[2],
        ThreadInfo {
            id: 2,
            os_tid: 102,
            cpu: Some(2)
        }
    );
    let mut per: Vec<Vec<Event>> = vec![Vec::new(); 4];
    for ev in r.events() {
        let ev = ev.unwrap();
        let t = match ev {
            Event::Access(a) => a.thread,
            Event::Fault(f) => f.thread,
        };
        per[t as usize].push(ev);
    }
    for t in 0..3 {
        let want: Vec<Event> = (0..400).map(|i| Event::Access(access(t, i))).collect();
        assert_eq!(per[t as usize], want);
    }
    let want: Vec<Event> = (0..10).map(|i| Event::Fault(fault(3, i))).collect();
    assert_eq!(per[3], want);
    let rep = check(&p);
    assert!(rep.ok(), "{:?}", rep.problems);
    assert_eq!((rep.accesses, rep.faults, rep.frames), (1200, 10, 13));
    assert_eq!(rep.writes, 3 * 134);
    assert_eq!(
        rep.totals,
        Some(Totals {
            accesses: 1200,
            faults: 10
        })
    );
}

#[test]
fn unfinished_writer_leaves_a_readable_incomplete_trace_with_threads_counted() {
    let dir = tempdir();
    let p = dir.join("t.trace");
    {
        let w = Writer::create(&p, Header::new(vec!["x".into()], "m")).unwrap();
        w.append_accesses(5, &[access(5, 1)]).unwrap();
    }
    let r = Reader::open(&p).unwrap();
    assert_eq!(r.header().status, TraceStatus::Incomplete);
    assert_eq!(
        r.header().threads,
        6,
        "the writer patches the count as threads appear"
    );
    assert_eq!(r.events().count(), 1);
    assert!(check(&p).ok());
}

#[test]
fn writer_refuses_use_after_finish() {
    let dir = tempdir();
    let w = Writer::create(dir.join("t"), Header::new(vec![], "m")).unwrap();
    w.finish(TraceStatus::Crashed).unwrap();
    assert!(matches!(
        w.append_accesses(0, &[access(0, 0)]),
        Err(TraceError::Finished)
    ));
    assert_eq!(
        Reader::open(dir.join("t")).unwrap().header().status,
        TraceStatus::Crashed
    );
}

fn read_all(bytes: Vec<u8>) -> Result<usize> {
    let mut r = Reader::with_source(std::io::Cursor::new(bytes), "mem".into())?;
    let mut n = 0;
    while let Some(c) = r.next_chunk()? {
        n += c.len();
    }
    Ok(n)
}

/// A frame cut short by the end of the file (a writer interrupted mid-frame) ends the
/// trace, Incomplete, at its last whole frame: readers go on with what was read, and the
/// checker names the cut frame's offset.
#[test]
fn truncation_names_the_byte_offset_of_the_cut_frame() {
    let dir = tempdir();
    let p = dir.join("t");
    sample(&p);
    let bytes = std::fs::read(&p).unwrap();
    let first = Reader::open(&p).unwrap().offset();
    let cut = bytes[..first as usize + 30].to_vec();
    assert_eq!(read_all(cut.clone()).unwrap(), 0);
    let e = ending_of(cut.clone()).unwrap();
    assert_eq!(
        (e.status, e.ends_at, e.cut_frame),
        (TraceStatus::Incomplete, first, true)
    );
    let rep = check_bytes(cut);
    let msg = &rep.problems[0].message;
    assert_eq!(rep.problems[0].offset, Some(first), "{msg}");
    assert!(msg.contains(&format!("truncated at byte {first}")), "{msg}");
}

#[test]
fn flipped_payload_byte_is_a_checksum_error_at_its_frame() {
    let dir = tempdir();
    let p = dir.join("t");
    sample(&p);
    let mut bytes = std::fs::read(&p).unwrap();
    let first_frame = Reader::open(&p).unwrap().offset();
    bytes[first_frame as usize + 30] ^= 0x40;
    let err = read_all(bytes).unwrap_err();
    assert_eq!(err.offset(), Some(first_frame), "{err}");
    assert!(err.to_string().contains("checksum"));
}

#[test]
fn wrong_version_is_named() {
    let dir = tempdir();
    let p = dir.join("t");
    sample(&p);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[8] = 9;
    let err = read_all(bytes).unwrap_err();
    assert!(matches!(err, TraceError::Version { found: 9, .. }), "{err}");
    assert!(err.to_string().contains("byte 8"));
}

#[test]
fn header_counting_fewer_threads_than_the_events_use_is_an_error() {
    let dir = tempdir();
    let p = dir.join("t");
    sample(&p);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[16..20].copy_from_slice(&3u32.to_le_bytes());
    let err = read_all(bytes.clone()).unwrap_err();
    assert!(
        matches!(
            err,
            TraceError::ThreadOutOfRange {
                thread: 3,
                threads: 3,
                ..
            }
        ),
        "{err}"
    );
    let rep = check_bytes(bytes);
    assert!(!rep.ok());
    assert!(rep.problems[0].message.contains("thread id 3"));
}

#[test]
fn not_a_trace() {
    let err = read_all(b"hello world, this is not a trace at all".to_vec()).unwrap_err();
    assert!(matches!(err, TraceError::NotATrace));
    assert!(matches!(
        read_all(b"TDMAP".to_vec()).unwrap_err(),
        TraceError::Truncated { offset: 0, .. }
    ));
}

#[test]
fn checker_flags_time_going_back_and_zero_sizes() {
    let dir = tempdir();
    let p = dir.join("t");
    let w = Writer::create(&p, Header::new(vec![], "m")).unwrap();
    let mut a = vec![access(0, 5), access(0, 2)];
    a[1].size = 0;
    w.append_accesses(0, &a).unwrap();
    w.finish(TraceStatus::Complete).unwrap();
    let rep = check(&p);
    let msgs: Vec<_> = rep.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(msgs.iter().any(|m| m.contains("size 0")));
    assert!(msgs.iter().any(|m| m.contains("time goes back")));
}

fn tempdir() -> temp_dir::TempDir {
    temp_dir::TempDir::new("tdmap-trace-test")
}

#[test]
fn addresses_only_mode_keeps_addresses_and_drops_the_rest() {
    let dir = tempdir();
    let p = dir.join("t");
    sample(&p);
    let mut r = Reader::open(&p).unwrap();
    r.set_addresses_only(true);
    let mut addrs = Vec::new();
    let mut faults = 0;
    while let Some(c) = r.next_chunk().unwrap() {
        match c {
            Chunk::Accesses(a) if a.thread == 1 => {
                assert!(a.times.is_empty() && a.sizes.is_empty() && a.writes.is_empty());
                addrs.extend_from_slice(&a.addrs);
            }
            Chunk::Faults(f) => faults += f.nodes.len(),
            _ => {}
        }
    }
    let want: Vec<u64> = (0..400).map(|i| access(1, i).addr).collect();
    assert_eq!(addrs, want);
    assert_eq!(faults, 10, "faults keep every column");
}

#[test]
fn prefetching_reader_yields_the_same_chunks_and_errors() {
    let dir = tempdir();
    let p = dir.join("t");
    sample(&p);
    let mut plain = Reader::open(&p).unwrap();
    let mut want = Vec::new();
    while let Some(c) = plain.next_chunk().unwrap() {
        want.push(c.clone());
    }
    let mut pre = Reader::open(&p).unwrap().prefetch();
    assert_eq!(pre.header().threads, 4);
    let mut got = Vec::new();
    while let Some(c) = pre.next_chunk().unwrap() {
        got.push(c.clone());
    }
    assert_eq!(got, want);
    assert_eq!(
        pre.totals(),
        Some(Totals {
            accesses: 1200,
            faults: 10
        })
    );
    assert!(pre.next_chunk().unwrap().is_none());

    let mut bytes = std::fs::read(&p).unwrap();
    let n = bytes.len();
    bytes.truncate(n - 60);
    std::fs::write(&p, bytes).unwrap();
    let mut pre = Reader::open(&p).unwrap().prefetch();
    while pre.next_chunk().unwrap().is_some() {}
    let e = pre.ending().unwrap();
    assert!(
        e.cut_frame && !e.complete(),
        "a cut trace ends Incomplete: {e:?}"
    );

    let mut bytes = std::fs::read(&p).unwrap();
    let first = Reader::open(&p).unwrap().offset() as usize;
    bytes[first + 30] ^= 0x40;
    std::fs::write(&p, bytes).unwrap();
    let mut pre = Reader::open(&p).unwrap().prefetch();
    let err = loop {
        match pre.next_chunk() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("a damaged trace must fail"),
            Err(e) => break e,
        }
    };
    assert!(err.to_string().contains("checksum"), "{err}");
}

/// A version-1 trace written before V2 existed: readers must keep reading it.
#[test]
fn version_1_fixture_still_reads() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-small.trace");
    let r = Reader::open(&p).unwrap();
    assert_eq!(r.header().version, 1);
    assert_eq!(r.header().program, vec!["v1", "fixture"]);
    assert_eq!(
        r.threads()[0],
        ThreadInfo {
            id: 0,
            os_tid: 10,
            cpu: Some(0)
        }
    );
    let evs: Vec<Event> = r.events().map(|e| e.unwrap()).collect();
    assert_eq!(evs.len(), 151);
    assert_eq!(
        evs[99],
        Event::Access(Access {
            thread: 0,
            addr: 0x1000 + 99 * 24,
            size: 4,
            write: false,
            time: 99
        })
    );
    assert_eq!(
        evs[149],
        Event::Access(Access {
            thread: 1,
            addr: 0x9000 - 49 * 8,
            size: 8,
            write: false,
            time: 59
        })
    );
    assert_eq!(
        evs[150],
        Event::Fault(Fault {
            thread: 1,
            addr: 0x7000,
            cpu: 3,
            node: 1,
            time: 99
        })
    );
    assert!(check(&p).ok());
}

#[test]
fn new_traces_are_the_current_version_and_keep_descending_addresses() {
    let dir = tempdir();
    let p = dir.join("t");
    let w = Writer::create(&p, Header::new(vec![], "m")).unwrap();
    let a: Vec<Access> = [u64::MAX, 0, 5, 3, 1 << 63]
        .iter()
        .enumerate()
        .map(|(i, &addr)| Access {
            thread: 0,
            addr,
            size: 1,
            write: false,
            time: i as u64,
        })
        .collect();
    w.append_accesses(0, &a).unwrap();
    w.finish(TraceStatus::Complete).unwrap();
    let r = Reader::open(&p).unwrap();
    assert_eq!(r.header().version, VERSION);
    let got: Vec<Event> = r.events().map(|e| e.unwrap()).collect();
    let want: Vec<Event> = a.into_iter().map(Event::Access).collect();
    assert_eq!(got, want);
}

/// Reads `bytes` to the end; the ending, or `None` if reading failed.
fn ending_of(bytes: Vec<u8>) -> Option<Ending> {
    let mut r = Reader::with_source(std::io::Cursor::new(bytes), "mem".into()).ok()?;
    while r.next_chunk().ok()?.is_some() {}
    r.ending()
}

/// Issue 21: a trace cut at a frame boundary read without error and its header still
/// said Complete, so `analyze`, `sim` and `map --trace` called it Complete. Every prefix
/// that reads must end Incomplete, at the cut, with a notice naming the byte.
#[test]
fn a_trace_cut_at_any_frame_boundary_is_never_complete() {
    let dir = tempdir();
    let p = dir.join("t");
    sample(&p);
    let bytes = std::fs::read(&p).unwrap();
    let whole = ending_of(bytes.clone()).unwrap();
    assert!(whole.complete() && whole.end_marker, "{whole:?}");
    assert_eq!(whole.notice("t"), None);
    let mut readable = 0;
    for cut in 1..bytes.len() {
        let Some(e) = ending_of(bytes[..cut].to_vec()) else {
            continue;
        };
        assert!(!e.complete(), "cut at {cut}: {e:?}");
        assert_eq!(e.status, TraceStatus::Incomplete, "cut at {cut}");
        if e.cut_frame {
            continue;
        }
        readable += 1;
        assert_eq!(e.ends_at, cut as u64);
        let note = e.notice("t").unwrap();
        assert!(
            note.contains(&format!("ends at byte {cut}, before its end marker")),
            "{note}"
        );
    }
    for cut in 1..bytes.len() {
        let rep = check_bytes(bytes[..cut].to_vec());
        assert!(!rep.complete && !rep.ok(), "cut at {cut}");
    }
    // The header end, 13 event frames, the threads frame and the end frame.
    assert_eq!(readable, 16);
}

#[test]
fn the_prefetching_reader_reports_the_same_ending() {
    let dir = tempdir();
    let p = dir.join("t");
    sample(&p);
    let bytes = std::fs::read(&p).unwrap();
    let cut = dir.join("cut");
    let first = Reader::open(&p).unwrap().offset() as usize;
    std::fs::write(&cut, &bytes[..first]).unwrap();
    let mut pre = Reader::open(&cut).unwrap().prefetch();
    assert_eq!(pre.ending(), None);
    while pre.next_chunk().unwrap().is_some() {}
    let e = pre.ending().unwrap();
    assert_eq!(
        (e.status, e.ends_at),
        (TraceStatus::Incomplete, first as u64)
    );
    let mut pre = Reader::open(&p).unwrap().prefetch();
    while pre.next_chunk().unwrap().is_some() {}
    assert!(pre.ending().unwrap().complete());
}

fn process(index: u32, pid: i32, parent: Option<u32>, first_task: u32, tasks: u32) -> ProcessInfo {
    ProcessInfo {
        index,
        pid,
        parent,
        first_task,
        tasks,
        status: TraceStatus::Complete,
    }
}

/// Writes a finished trace of 3 tasks with the given process table; returns its bytes.
fn with_processes(procs: Vec<ProcessInfo>) -> Vec<u8> {
    let dir = tempdir();
    let p = dir.join(format!("procs-{}", procs.len()));
    let w = Writer::create(&p, Header::new(vec!["fork".into()], "m")).unwrap();
    for t in 0..3 {
        w.append_accesses(t, &[access(t, 1)]).unwrap();
    }
    w.set_threads(
        (0..3)
            .map(|id| ThreadInfo {
                id,
                os_tid: 100 + id as i32,
                cpu: None,
            })
            .collect(),
    )
    .unwrap();
    w.set_processes(procs).unwrap();
    w.finish(TraceStatus::Complete).unwrap();
    std::fs::read(&p).unwrap()
}

/// Issue 19 item 5: a multi-process trace carries its task -> (process, thread) table,
/// readable before the first event, and the checker holds it to numbering by process.
#[test]
fn the_process_table_round_trips_and_the_checker_validates_it() {
    let good = vec![process(0, 50, None, 0, 2), process(1, 51, Some(0), 2, 1)];
    let bytes = with_processes(good.clone());
    let r = Reader::with_source(std::io::Cursor::new(bytes.clone()), "t".into()).unwrap();
    assert_eq!(
        r.processes(),
        &good[..],
        "known from the trailer, before any event"
    );
    assert_eq!(good[1].thread_of(2), Some((1, 0)));
    assert_eq!(good[0].thread_of(2), None);
    let rep = check_bytes(bytes);
    assert!(rep.ok(), "{:?}", rep.problems);
    assert_eq!(rep.processes, good);
    // Tasks not numbered by process, a parent after its child, a missing task.
    for (bad, what) in [
        (
            vec![process(0, 50, None, 0, 1), process(1, 51, Some(0), 2, 1)],
            "tasks start at 2",
        ),
        (
            vec![process(0, 50, None, 0, 2), process(1, 51, Some(1), 2, 1)],
            "not an earlier process",
        ),
        (
            vec![process(0, 50, None, 0, 2)],
            "hold 2 tasks, the header 3",
        ),
    ] {
        let rep = check_bytes(with_processes(bad));
        assert!(
            rep.problems.iter().any(|p| p.message.contains(what)),
            "{what}: {:?}",
            rep.problems
        );
    }
    let mut partial = good.clone();
    partial[1].status = TraceStatus::Incomplete;
    let rep = check_bytes(with_processes(partial));
    assert!(
        !rep.ok(),
        "Complete trace with an incomplete process passed"
    );
}

/// A V2 file is a V3 file without a processes frame: the same bytes with version 2 read
/// as before, and a processes frame in one is damage. (Only frames other than accesses
/// are laid out alike in V2 and V6, so the sample holds faults.)
#[test]
fn version_2_traces_still_read_and_cannot_hold_a_process_table() {
    let dir = tempdir();
    let p = dir.join("v2");
    let mut h = Header::new(vec!["prog".into()], "m");
    h.threads = 4;
    let w = Writer::create(&p, h).unwrap();
    for t in 0..4 {
        let f: Vec<Fault> = (0..10).map(|i| fault(t, i)).collect();
        w.append_faults(t, &f).unwrap();
    }
    w.finish(TraceStatus::Complete).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    let v3 = Reader::open(&p).unwrap().events().count();
    bytes[8] = 2; // the version, outside the header's CRC
    let r = Reader::with_source(std::io::Cursor::new(bytes.clone()), "v2".into()).unwrap();
    assert_eq!(r.header().version, 2);
    assert!(r.processes().is_empty());
    assert_eq!(r.events().filter(|e| e.is_ok()).count(), v3);
    assert!(check_bytes(bytes).ok());
    let mut two = with_processes(vec![process(0, 50, None, 0, 3)]);
    two[8] = 2;
    let err = Reader::with_source(std::io::Cursor::new(two), "v2".into())
        .err()
        .expect("a processes frame in V2 is refused");
    assert!(err.to_string().contains("processes frame"), "{err}");
}
