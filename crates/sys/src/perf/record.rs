//! The perf ring-buffer record parser: bytes of a ring's data area between the tail and
//! the head become [`FaultSample`]s and a count of lost records. Pure code, no kernel:
//! the ring module hands it the mapped bytes, tests hand it hand-built buffers (the
//! procfs-core split). Layouts are those of `include/uapi/linux/perf_event.h`.

use super::FaultSample;
use crate::procs::Mapping;

/// `PERF_RECORD_LOST`: the kernel dropped `lost` records because the ring was full.
pub(crate) const RECORD_LOST: u32 = 2;
/// `PERF_RECORD_THROTTLE`: the kernel throttled the event (too many samples per tick).
pub(crate) const RECORD_THROTTLE: u32 = 5;
/// `PERF_RECORD_SAMPLE`.
pub(crate) const RECORD_SAMPLE: u32 = 9;
/// `PERF_RECORD_EXIT` (with `attr.task`): a task ended; same layout as a fork record.
pub(crate) const RECORD_EXIT: u32 = 4;
/// `PERF_RECORD_FORK` (with `attr.task`): a task was created; pid, ppid, tid, ptid, time.
pub(crate) const RECORD_FORK: u32 = 7;
/// Bytes of a fork record without `sample_id_all`: header, 4 u32, time.
const FORK_BYTES: usize = HEADER + 16 + 8;
/// `PERF_RECORD_MMAP2` (with `attr.mmap2`, and `mmap_data` for data mappings): pid, tid,
/// addr, len, pgoff (bytes), maj, min, ino, ino_generation, prot, flags, filename.
pub(crate) const RECORD_MMAP2: u32 = 10;
/// Bytes of an mmap2 record up to its file name.
const MMAP2_BYTES: usize = HEADER + 64;
/// `PERF_RECORD_COMM` (with `attr.comm`): a task's name changed; pid, tid, name.
pub(crate) const RECORD_COMM: u32 = 3;
/// `PERF_RECORD_MISC_COMM_EXEC` in a comm record's header: the change is an exec.
const MISC_COMM_EXEC: u16 = 1 << 13;
/// `MAP_SHARED` in an mmap2 record's flags.
const MAP_SHARED: u32 = 0x01;

/// A process event the kernel reported with the samples (system-wide events), so that
/// processes are followed and their mappings known even when they exit before `/proc`
/// is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// Process `pid` was created by process `ppid` (threads are not reported).
    Fork {
        /// The new process.
        pid: u32,
        /// Its parent.
        ppid: u32,
        /// The perf clock at the fork (ns).
        time: u64,
    },
    /// Thread `tid` of process `pid` ended.
    Exit {
        /// Its process.
        pid: u32,
        /// The thread.
        tid: u32,
        /// The perf clock at the exit (ns).
        time: u64,
    },
    /// Process `pid` executed a program named `name` (the kernel's 16-byte comm).
    Exec {
        /// The process.
        pid: u32,
        /// The program's name, NUL-padded.
        name: [u8; 16],
        /// The perf clock at the exec (ns, from `sample_id_all`; 0 without it).
        time: u64,
    },
    /// Process `pid` mapped memory.
    Mmap {
        /// The process.
        pid: u32,
        /// The new mapping.
        map: Mapping,
        /// The perf clock at the mmap (ns, from `sample_id_all`; 0 without it).
        time: u64,
    },
}

impl Task {
    /// When it happened: events from per-CPU rings are applied in this order.
    pub fn time(&self) -> u64 {
        match *self {
            Task::Fork { time, .. }
            | Task::Exit { time, .. }
            | Task::Exec { time, .. }
            | Task::Mmap { time, .. } => time,
        }
    }
}

/// Bytes of the `sample_id` trailer of non-sample records with `sample_id_all` and
/// [`SAMPLE_TYPE`]: pid/tid, time, cpu/res; the time is 16 bytes before the end.
const SAMPLE_ID_BYTES: usize = 24;

/// `PERF_SAMPLE_*` bits tdmap asks for; a sample's fields come in this bit order.
pub(crate) const SAMPLE_TID: u64 = 1 << 1;
pub(crate) const SAMPLE_TIME: u64 = 1 << 2;
pub(crate) const SAMPLE_ADDR: u64 = 1 << 3;
pub(crate) const SAMPLE_CPU: u64 = 1 << 7;
/// `PERF_SAMPLE_DATA_PAGE_SIZE` (Linux 5.11): the size of the page that maps the address
/// when the sample is taken, 0 if none does yet (a first touch).
pub(crate) const SAMPLE_DATA_PAGE_SIZE: u64 = 1 << 22;
/// The sample layout every kernel gives: pid/tid, time, addr, cpu/res.
pub(crate) const SAMPLE_TYPE: u64 = SAMPLE_TID | SAMPLE_TIME | SAMPLE_ADDR | SAMPLE_CPU;
/// [`SAMPLE_TYPE`] and then the data page size, where the kernel has it.
pub(crate) const SAMPLE_TYPE_SIZED: u64 = SAMPLE_TYPE | SAMPLE_DATA_PAGE_SIZE;

/// Bytes of `struct perf_event_header`: type u32, misc u16, size u16.
const HEADER: usize = 8;
/// Bytes of a sample record with [`SAMPLE_TYPE`].
pub(crate) const SAMPLE_BYTES: usize = HEADER + 8 + 8 + 8 + 8;
/// Bytes of a sample record with [`SAMPLE_TYPE_SIZED`].
pub(crate) const SAMPLE_BYTES_SIZED: usize = SAMPLE_BYTES + 8;

/// What one pass over a ring found, besides the samples.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Samples appended to the output.
    pub samples: u64,
    /// Samples the kernel dropped because a ring was full (`PERF_RECORD_LOST`).
    pub lost: u64,
    /// Times the kernel throttled the event (`PERF_RECORD_THROTTLE`).
    pub throttled: u64,
    /// Records of other types, skipped.
    pub other: u64,
    /// Samples of other processes, dropped (system-wide events only).
    pub foreign: u64,
}

impl Drained {
    /// Adds another pass's counts to these.
    pub fn add(&mut self, o: Drained) {
        self.samples += o.samples;
        self.lost += o.lost;
        self.throttled += o.throttled;
        self.other += o.other;
        self.foreign += o.foreign;
    }
}

/// The ring's bytes were not a sequence of well-formed records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Corrupt {
    /// The ring position of the bad record.
    pub at: u64,
    /// What was wrong with it.
    pub what: String,
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

/// Copies `len` bytes starting at ring position `pos` into `buf`, across the wrap.
fn copy_out(ring: &[u8], pos: u64, buf: &mut [u8]) {
    let start = (pos % ring.len() as u64) as usize;
    let first = buf.len().min(ring.len() - start);
    buf[..first].copy_from_slice(&ring[start..start + first]);
    let rest = buf.len() - first;
    buf[first..].copy_from_slice(&ring[..rest]);
}

/// Decodes one sample record (header included) laid out as [`SAMPLE_TYPE`], or as
/// [`SAMPLE_TYPE_SIZED`] when `rec` holds that many bytes: an event's records all have
/// its one layout, so the size tells which.
fn decode_sample(rec: &[u8]) -> FaultSample {
    FaultSample {
        pid: u32_at(rec, 8),
        tid: u32_at(rec, 12),
        time: u64_at(rec, 16),
        addr: u64_at(rec, 24),
        cpu: u32_at(rec, 32),
        page_size: if rec.len() >= SAMPLE_BYTES_SIZED {
            u64_at(rec, SAMPLE_BYTES)
        } else {
            0
        },
    }
}

/// Parses the records in `ring` (the data area, a power-of-two length) from position
/// `tail` to `head`, positions counting bytes since the ring was created, as the
/// kernel's `data_tail` and `data_head` do. Appends samples to `out`.
#[cfg(test)]
pub(crate) fn parse(
    ring: &[u8],
    tail: u64,
    head: u64,
    out: &mut Vec<FaultSample>,
) -> Result<Drained, Corrupt> {
    parse_tasks(ring, tail, head, out, &mut Vec::new())
}

/// [`parse`], also appending the process events (forks of processes, mmaps) to `tasks`.
pub(crate) fn parse_tasks(
    ring: &[u8],
    tail: u64,
    head: u64,
    out: &mut Vec<FaultSample>,
    tasks: &mut Vec<Task>,
) -> Result<Drained, Corrupt> {
    let mut d = Drained::default();
    let bad = |at, what: String| Err(Corrupt { at, what });
    if head < tail || head - tail > ring.len() as u64 {
        return bad(
            tail,
            format!("head {head} is not within a ring past tail {tail}"),
        );
    }
    let mut pos = tail;
    let mut rec = [0u8; MMAP2_BYTES];
    while pos < head {
        if head - pos < HEADER as u64 {
            return bad(
                pos,
                format!("{} bytes left, less than a header", head - pos),
            );
        }
        copy_out(ring, pos, &mut rec[..HEADER]);
        let (kind, size) = (u32_at(&rec, 0), u16::from_ne_bytes([rec[6], rec[7]]) as u64);
        let misc = u16::from_ne_bytes([rec[4], rec[5]]);
        if size < HEADER as u64 || size > head - pos {
            return bad(pos, format!("record of type {kind} has size {size}"));
        }
        match kind {
            RECORD_SAMPLE if size as usize >= SAMPLE_BYTES => {
                let n = (size as usize).min(SAMPLE_BYTES_SIZED);
                copy_out(ring, pos, &mut rec[..n]);
                out.push(decode_sample(&rec[..n]));
                d.samples += 1;
            }
            RECORD_SAMPLE => return bad(pos, format!("sample of {size} bytes is too short")),
            RECORD_LOST if size >= 24 => {
                // id u64, then the number of lost records.
                copy_out(ring, pos, &mut rec[..24]);
                d.lost += u64_at(&rec, 16);
            }
            RECORD_THROTTLE => d.throttled += 1,
            RECORD_FORK if size as usize >= FORK_BYTES => {
                copy_out(ring, pos, &mut rec[..FORK_BYTES]);
                let (pid, ppid, time) = (u32_at(&rec, 8), u32_at(&rec, 12), u64_at(&rec, 24));
                if pid != ppid {
                    tasks.push(Task::Fork { pid, ppid, time });
                }
            }
            RECORD_EXIT if size as usize >= FORK_BYTES => {
                copy_out(ring, pos, &mut rec[..FORK_BYTES]);
                tasks.push(Task::Exit {
                    pid: u32_at(&rec, 8),
                    tid: u32_at(&rec, 16),
                    time: u64_at(&rec, 24),
                });
            }
            RECORD_COMM if misc & MISC_COMM_EXEC != 0 && size as usize >= HEADER + 8 => {
                let n = (size as usize).min(HEADER + 8 + 16);
                copy_out(ring, pos, &mut rec[..n]);
                let mut name = [0u8; 16];
                name[..n - HEADER - 8].copy_from_slice(&rec[HEADER + 8..n]);
                let end = name.iter().position(|&b| b == 0).unwrap_or(16);
                name[end..].fill(0);
                let mut time = [0u8; 8];
                if size as usize >= HEADER + 16 + SAMPLE_ID_BYTES {
                    copy_out(ring, pos + size - 16, &mut time);
                }
                tasks.push(Task::Exec {
                    pid: u32_at(&rec, 8),
                    name,
                    time: u64::from_ne_bytes(time),
                });
            }
            RECORD_MMAP2 if size as usize >= MMAP2_BYTES => {
                copy_out(ring, pos, &mut rec[..MMAP2_BYTES]);
                let start = u64_at(&rec, 16);
                let map = Mapping {
                    start,
                    end: start.saturating_add(u64_at(&rec, 24)),
                    offset: u64_at(&rec, 32),
                    dev: u64::from(u32_at(&rec, 40)) << 32 | u64::from(u32_at(&rec, 44)),
                    inode: u64_at(&rec, 48),
                    shared: u32_at(&rec, 68) & MAP_SHARED != 0,
                };
                let mut time = [0u8; 8];
                if size as usize >= MMAP2_BYTES + SAMPLE_ID_BYTES {
                    copy_out(ring, pos + size - 16, &mut time);
                }
                tasks.push(Task::Mmap {
                    pid: u32_at(&rec, 8),
                    map,
                    time: u64::from_ne_bytes(time),
                });
            }
            _ => d.other += 1,
        }
        pos += size;
    }
    Ok(d)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A sample record as the kernel writes it: with the data page size when `s` has
    /// one (an event opened with [`SAMPLE_TYPE_SIZED`]), else without.
    pub(crate) fn sample_bytes(s: &FaultSample) -> Vec<u8> {
        let size = if s.page_size > 0 {
            SAMPLE_BYTES_SIZED
        } else {
            SAMPLE_BYTES
        };
        let mut b = Vec::with_capacity(size);
        b.extend(RECORD_SAMPLE.to_ne_bytes());
        b.extend(0u16.to_ne_bytes());
        b.extend((size as u16).to_ne_bytes());
        b.extend(s.pid.to_ne_bytes());
        b.extend(s.tid.to_ne_bytes());
        b.extend(s.time.to_ne_bytes());
        b.extend(s.addr.to_ne_bytes());
        b.extend(s.cpu.to_ne_bytes());
        b.extend(0u32.to_ne_bytes());
        if s.page_size > 0 {
            b.extend(s.page_size.to_ne_bytes());
        }
        b
    }

    fn lost_bytes(n: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(RECORD_LOST.to_ne_bytes());
        b.extend(0u16.to_ne_bytes());
        b.extend(24u16.to_ne_bytes());
        b.extend(7u64.to_ne_bytes());
        b.extend(n.to_ne_bytes());
        b
    }

    fn other_bytes(kind: u32, size: u16) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(kind.to_ne_bytes());
        b.extend(0u16.to_ne_bytes());
        b.extend(size.to_ne_bytes());
        b.resize(size as usize, 0xee);
        b
    }

    fn s(i: u32) -> FaultSample {
        FaultSample {
            pid: 100,
            tid: 100 + i,
            addr: 0x7f00_0000_0000 + u64::from(i) * 4096,
            cpu: i % 2,
            time: 1000 + u64::from(i),
            page_size: 0,
        }
    }

    /// Writes `bytes` into a ring of `len` bytes starting at position `tail`, wrapping.
    fn ring_with(len: usize, tail: u64, bytes: &[u8]) -> Vec<u8> {
        let mut ring = vec![0xaau8; len];
        for (i, &b) in bytes.iter().enumerate() {
            ring[((tail + i as u64) % len as u64) as usize] = b;
        }
        ring
    }

    #[test]
    fn samples_decode_in_order() {
        let bytes: Vec<u8> = (0..3).flat_map(|i| sample_bytes(&s(i))).collect();
        let ring = ring_with(256, 0, &bytes);
        let mut out = Vec::new();
        let d = parse(&ring, 0, bytes.len() as u64, &mut out).unwrap();
        assert_eq!(out, vec![s(0), s(1), s(2)]);
        assert_eq!(d.samples, 3);
        assert_eq!((d.lost, d.throttled, d.other), (0, 0, 0));
    }

    #[test]
    fn the_data_page_size_is_read_when_the_record_has_it() {
        let huge = FaultSample {
            page_size: 2 << 20,
            ..s(1)
        };
        let bytes: Vec<u8> = [sample_bytes(&huge), sample_bytes(&s(2))].concat();
        assert_eq!(bytes.len(), SAMPLE_BYTES_SIZED + SAMPLE_BYTES);
        let ring = ring_with(256, 200, &bytes);
        let mut out = Vec::new();
        parse(&ring, 200, 200 + bytes.len() as u64, &mut out).unwrap();
        assert_eq!(out, vec![huge, s(2)]);
        assert_eq!((out[0].page_size, out[1].page_size), (2 << 20, 0));
    }

    #[test]
    fn a_record_split_by_the_wrap_is_reassembled() {
        // 256-byte ring; the second sample straddles the end at every possible split.
        let bytes: Vec<u8> = (0..3).flat_map(|i| sample_bytes(&s(i))).collect();
        for tail in 256 - 2 * SAMPLE_BYTES as u64..256 + 8 {
            let ring = ring_with(256, tail, &bytes);
            let mut out = Vec::new();
            parse(&ring, tail, tail + bytes.len() as u64, &mut out).unwrap();
            assert_eq!(out, vec![s(0), s(1), s(2)], "tail {tail}");
        }
    }

    #[test]
    fn positions_beyond_many_laps_wrap() {
        let bytes = sample_bytes(&s(5));
        let tail = 1_000_000 * 256 + 250;
        let ring = ring_with(256, tail, &bytes);
        let mut out = Vec::new();
        parse(&ring, tail, tail + bytes.len() as u64, &mut out).unwrap();
        assert_eq!(out, vec![s(5)]);
    }

    #[test]
    fn lost_throttle_and_unknown_records_are_counted_not_sampled() {
        let mut bytes = sample_bytes(&s(0));
        bytes.extend(lost_bytes(42));
        bytes.extend(other_bytes(RECORD_THROTTLE, 24));
        bytes.extend(other_bytes(8, 48)); // PERF_RECORD_READ
        bytes.extend(sample_bytes(&s(1)));
        let ring = ring_with(512, 100, &bytes);
        let mut out = Vec::new();
        let d = parse(&ring, 100, 100 + bytes.len() as u64, &mut out).unwrap();
        assert_eq!(out, vec![s(0), s(1)]);
        assert_eq!(
            d,
            Drained {
                samples: 2,
                lost: 42,
                throttled: 1,
                other: 1,
                foreign: 0
            }
        );
    }

    #[test]
    fn fork_and_mmap_records_are_kept_and_new_threads_are_not() {
        let fork = |pid: u32, ppid: u32| {
            let mut b = Vec::new();
            b.extend(RECORD_FORK.to_ne_bytes());
            b.extend(0u16.to_ne_bytes());
            b.extend((FORK_BYTES as u16).to_ne_bytes());
            for x in [pid, ppid, pid, ppid] {
                b.extend(x.to_ne_bytes());
            }
            b.extend(5u64.to_ne_bytes());
            b
        };
        let mut bytes = fork(20, 10);
        bytes.extend(fork(10, 10)); // a new thread of process 10
        bytes.extend(sample_bytes(&s(1)));
        // mmap2 of a memfd, 8 KiB from offset 4 KiB, device 0:1, inode 77, MAP_SHARED.
        bytes.extend(RECORD_MMAP2.to_ne_bytes());
        bytes.extend(0u16.to_ne_bytes());
        let trailer = SAMPLE_ID_BYTES as u16;
        bytes.extend((MMAP2_BYTES as u16 + 8 + trailer).to_ne_bytes());
        for x in [20u32, 20] {
            bytes.extend(x.to_ne_bytes());
        }
        for x in [0x7000_0000u64, 0x2000, 0x1000] {
            bytes.extend(x.to_ne_bytes());
        }
        bytes.extend([0u32.to_ne_bytes(), 1u32.to_ne_bytes()].concat());
        bytes.extend([77u64.to_ne_bytes(), 0u64.to_ne_bytes()].concat());
        bytes.extend([3u32.to_ne_bytes(), 1u32.to_ne_bytes()].concat());
        bytes.extend(b"/memfd:\0");
        bytes.extend([0u64.to_ne_bytes(), 9u64.to_ne_bytes(), 0u64.to_ne_bytes()].concat());
        let ring = ring_with(512, 0, &bytes);
        let (mut out, mut tasks) = (Vec::new(), Vec::new());
        let d = parse_tasks(&ring, 0, bytes.len() as u64, &mut out, &mut tasks).unwrap();
        let map = Mapping {
            start: 0x7000_0000,
            end: 0x7000_2000,
            offset: 0x1000,
            dev: 1,
            inode: 77,
            shared: true,
        };
        assert_eq!(
            tasks,
            vec![
                Task::Fork {
                    pid: 20,
                    ppid: 10,
                    time: 5
                },
                Task::Mmap {
                    pid: 20,
                    map,
                    time: 9
                }
            ]
        );
        assert_eq!((d.samples, out.len()), (1, 1));
    }

    #[test]
    fn an_empty_range_yields_nothing() {
        let ring = vec![0u8; 64];
        let mut out = Vec::new();
        assert_eq!(parse(&ring, 40, 40, &mut out), Ok(Drained::default()));
        assert!(out.is_empty());
    }

    #[test]
    fn malformed_rings_are_refused_with_the_position() {
        let mut out = Vec::new();
        let ring = ring_with(64, 0, &other_bytes(9, 4)[..4]);
        // A header claiming 4 bytes, smaller than the header itself.
        let mut zero = vec![0u8; 64];
        zero[6] = 4;
        let e = parse(&zero, 0, 16, &mut out).unwrap_err();
        assert!(e.what.contains("size 4"), "{e:?}");
        // Fewer bytes than a header between tail and head.
        let e = parse(&ring, 8, 12, &mut out).unwrap_err();
        assert_eq!(e.at, 8);
        // A record running past the head.
        let rec = sample_bytes(&s(0));
        let ring = ring_with(64, 0, &rec);
        assert!(parse(&ring, 0, 16, &mut out).is_err());
        // A head more than a ring ahead of the tail.
        assert!(parse(&ring, 0, 65, &mut out).is_err());
        assert!(parse(&ring, 10, 0, &mut out).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn a_sample_too_short_for_the_layout_is_refused() {
        let mut rec = other_bytes(RECORD_SAMPLE, 16);
        rec[6..8].copy_from_slice(&16u16.to_ne_bytes());
        let ring = ring_with(64, 0, &rec);
        let mut out = Vec::new();
        let e = parse(&ring, 0, 16, &mut out).unwrap_err();
        assert!(e.what.contains("too short"), "{e:?}");
    }

    #[derive(Debug, Clone)]
    enum Rec {
        Sample(FaultSample),
        Lost(u64),
        Other(u16),
    }

    fn rec_strategy() -> impl proptest::strategy::Strategy<Value = Rec> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (any::<u32>(), any::<u32>(), any::<u64>(), any::<u32>(), any::<u64>(), 0u64..3)
                .prop_map(|(pid, tid, addr, cpu, time, k)| {
                    // Both layouts: without the page size, and with 4 KiB or 2 MiB.
                    let page_size = [0, 4096, 2 << 20][k as usize];
                    Rec::Sample(FaultSample { pid, tid, addr, cpu, time, page_size })
                }),
            1 => (1u64..1000).prop_map(Rec::Lost),
            1 => (1u16..8).prop_map(|w| Rec::Other(8 * w)),
        ]
    }

    proptest::proptest! {
        /// Whatever the records, the ring size, the start position and where the drains
        /// cut the stream (always at record boundaries, as data_head only moves by whole
        /// records), the parser returns every sample in order and every lost count.
        #[test]
        fn any_stream_survives_any_wrap_and_drain_cuts(
            recs in proptest::collection::vec(rec_strategy(), 0..60),
            tail in 0u64..1 << 40,
            cuts in proptest::collection::vec(proptest::bool::ANY, 60),
        ) {
            let ring_len = 1024usize;
            let mut ring = vec![0u8; ring_len];
            let (mut pos, mut read) = (tail, tail);
            let (mut got, mut lost) = (Vec::new(), 0);
            let drain = |ring: &[u8], from: u64, to: u64, got: &mut Vec<FaultSample>| {
                parse(ring, from, to, got).unwrap().lost
            };
            for (i, r) in recs.iter().enumerate() {
                let bytes = match r {
                    Rec::Sample(s) => sample_bytes(s),
                    Rec::Lost(n) => lost_bytes(*n),
                    Rec::Other(size) => other_bytes(4, *size),
                };
                // The kernel never writes past the reader's tail: drain first if full.
                if pos + bytes.len() as u64 - read > ring_len as u64 {
                    lost += drain(&ring, read, pos, &mut got);
                    read = pos;
                }
                for (k, &b) in bytes.iter().enumerate() {
                    ring[((pos + k as u64) % ring_len as u64) as usize] = b;
                }
                pos += bytes.len() as u64;
                if cuts[i] {
                    lost += drain(&ring, read, pos, &mut got);
                    read = pos;
                }
            }
            lost += drain(&ring, read, pos, &mut got);
            let want: Vec<FaultSample> = recs
                .iter()
                .filter_map(|r| match r { Rec::Sample(s) => Some(*s), _ => None })
                .collect();
            let want_lost: u64 = recs.iter().map(|r| match r { Rec::Lost(n) => *n, _ => 0 }).sum();
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert_eq!(lost, want_lost);
        }
    }
}
