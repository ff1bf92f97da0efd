//! The streaming reader: one pass over the frames with memory bounded by one frame,
//! either chunk by chunk (fast path for the model) or event by event.

use crate::chunk::{
    decode_accesses, decode_faults, decode_repeats, Chunk, Coding, SHUFFLED_ADDRS, SHUFFLED_TIMES,
};
use crate::codec::{self, corrupt, FrameHead, Kind, FRAME_HEADER, HEADER_FIXED};
use crate::columns;
use crate::error::{Result, TraceError};
use crate::replay;
use crate::types::{Event, Header, ProcessInfo, ThreadInfo, TraceStatus};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use tdmap_wire::predict::Predictor;

/// Totals recorded in a finished trace's end frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Totals {
    /// Accesses in the file.
    pub accesses: u64,
    /// Faults in the file.
    pub faults: u64,
}

/// How a trace ends, known once the reader has reached the end of its frames. This is the
/// one place that decides whether a trace is Complete: only when its end frame, with
/// totals that agree with the frames read, and its trailer are present. A file cut at a
/// frame boundary reads without error, so every reader must ask here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Ending {
    /// The header's status when the end marker (end frame and trailer) is present, else
    /// Incomplete whatever the header says.
    pub status: TraceStatus,
    /// True when the end frame and the trailer were read and the totals agree.
    pub end_marker: bool,
    /// The byte where the whole frames stop: the file's length, less the trailer if
    /// present, or the start of a last frame that the end of the file cuts short.
    pub ends_at: u64,
    /// True when a frame cut short by the end of the file follows `ends_at` (a writer
    /// interrupted mid-frame); it is not read.
    pub cut_frame: bool,
}

impl Ending {
    /// True only for a whole trace of a run that ended normally.
    pub fn complete(&self) -> bool {
        self.status == TraceStatus::Complete
    }

    /// The one line a reader prints (after `tdmap: `) when the trace is Incomplete, naming
    /// it as `name`; `None` otherwise.
    pub fn notice(&self, name: &str) -> Option<String> {
        if self.status != TraceStatus::Incomplete {
            return None;
        }
        Some(if self.end_marker {
            format!("{name} is incomplete: the run it records was cut short; results cover what was read")
        } else {
            format!(
                "{name} is incomplete: it ends at byte {}, before its end marker; results cover what was read",
                self.ends_at
            )
        })
    }
}

/// Reads a trace in one pass; see [`Reader::next_chunk`] and [`Reader::events`].
pub struct Reader<R = BufReader<File>> {
    src: R,
    path: PathBuf,
    header: Header,
    threads: Vec<ThreadInfo>,
    processes: Vec<ProcessInfo>,
    pos: u64,
    data_end: u64,
    comp: Vec<u8>,
    raw: Vec<u8>,
    rest: Vec<u8>,
    addrs_only: bool,
    dec: zstd::bulk::Decompressor<'static>,
    slots: [Chunk; 2],
    cur: usize,
    seen: Totals,
    end: Option<Totals>,
    trailer: bool,
    done: bool,
    cut_frame: bool,
    /// The pairs of the last repeats frame, for the accesses frame after it.
    repeats: Vec<(u32, u32)>,
    /// The thread of a repeats frame whose accesses frame is still to come.
    repeats_for: Option<u32>,
    /// Each thread's stride predictor as its last V6 accesses frame left it, for a frame
    /// that continues it.
    predictors: HashMap<u32, Predictor>,
}

impl Reader<BufReader<File>> {
    /// Opens a trace file, reading its header and (for a finished trace) its thread table.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|err| TraceError::Io {
            path: path.clone(),
            err,
        })?;
        Reader::with_source(BufReader::with_capacity(1 << 20, file), path)
    }
}

impl<R: Read + Seek> Reader<R> {
    /// Reads a trace from any seekable source; `path` only names it in errors.
    pub fn with_source(mut src: R, path: PathBuf) -> Result<Self> {
        let io = |err| TraceError::Io {
            path: path.clone(),
            err,
        };
        let len = src.seek(SeekFrom::End(0)).map_err(io)?;
        src.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut fixed = [0u8; HEADER_FIXED];
        read_exact(&mut src, &mut fixed, 0, "header", &path)?;
        let body = codec::decode_header_fixed(&fixed)?;
        let mut rest = vec![0u8; body as usize + 4];
        read_exact(&mut src, &mut rest, 0, "header", &path)?;
        let header = codec::decode_header(&fixed, &rest)?;
        let start = (HEADER_FIXED + rest.len()) as u64;
        let dec = zstd::bulk::Decompressor::new().map_err(io)?;
        let mut r = Reader {
            src,
            path,
            header,
            threads: Vec::new(),
            processes: Vec::new(),
            pos: start,
            data_end: len,
            comp: Vec::new(),
            raw: Vec::new(),
            rest: Vec::new(),
            addrs_only: false,
            dec,
            slots: [
                Chunk::Accesses(Default::default()),
                Chunk::Faults(Default::default()),
            ],
            cur: 0,
            seen: Totals::default(),
            end: None,
            trailer: false,
            done: false,
            cut_frame: false,
            repeats: Vec::new(),
            repeats_for: None,
            predictors: HashMap::new(),
        };
        r.load_trailer(start, len)?;
        Ok(r)
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Per-thread metadata: known from the start for a finished trace, else once read.
    pub fn threads(&self) -> &[ThreadInfo] {
        &self.threads
    }

    /// The process table of a multi-process trace (V3): known from the start for a
    /// finished trace, else once read; empty for a trace of one process.
    pub fn processes(&self) -> &[ProcessInfo] {
        &self.processes
    }

    /// Totals from the end frame, once it has been read.
    pub fn totals(&self) -> Option<Totals> {
        self.end
    }

    /// Reads only the addresses of accesses (times, sizes and write flags come back
    /// empty), which is all the sharing model needs and saves half the decompression.
    pub fn set_addresses_only(&mut self, on: bool) {
        self.addrs_only = on;
    }

    /// True when the file ends with the trailer a finished writer leaves.
    pub fn has_trailer(&self) -> bool {
        self.trailer
    }

    /// How the trace ends: `None` until [`Reader::next_chunk`] has returned `Ok(None)`.
    pub fn ending(&self) -> Option<Ending> {
        self.done.then(|| {
            let end_marker = self.end.is_some() && self.trailer;
            Ending {
                status: if end_marker {
                    self.header.status
                } else {
                    TraceStatus::Incomplete
                },
                end_marker,
                ends_at: self.data_end,
                cut_frame: self.cut_frame,
            }
        })
    }

    /// Byte offset of the next frame.
    pub fn offset(&self) -> u64 {
        self.pos
    }

    /// The next chunk of events, or `None` at the end of the trace.
    pub fn next_chunk(&mut self) -> Result<Option<&Chunk>> {
        loop {
            if self.pos >= self.data_end {
                self.done = true;
                return Ok(None);
            }
            let at = self.pos;
            let head = match self.read_frame() {
                // Without a trailer the writer was interrupted, maybe mid-frame: the
                // trace ends Incomplete at its last whole frame.
                Err(TraceError::Truncated { .. }) if !self.trailer => {
                    self.cut_frame = true;
                    self.data_end = at;
                    continue;
                }
                r => r?,
            };
            let pending = self.repeats_for;
            if pending.is_some_and(|t| head.kind != Kind::Accesses || head.thread != t) {
                return Err(corrupt(
                    at,
                    "a repeats frame is not followed by its thread's accesses".into(),
                ));
            }
            match head.kind {
                Kind::Accesses | Kind::Faults => {
                    self.check_thread(head.thread, at)?;
                    self.decode_events(&head, at)?;
                    return Ok(Some(&self.slots[self.cur]));
                }
                Kind::Threads => self.take_threads(at)?,
                Kind::Processes => self.take_processes(at)?,
                Kind::End => self.take_end(at)?,
                Kind::Repeats => self.take_repeats(&head, at)?,
            }
        }
    }

    /// Turns the reader into an iterator over single events.
    pub fn events(self) -> Events<R> {
        Events {
            reader: self,
            next: 0,
            len: 0,
        }
    }

    fn load_trailer(&mut self, start: u64, len: u64) -> Result<()> {
        if len < start + codec::TRAILER_LEN as u64 {
            return Ok(());
        }
        let mut t = [0u8; codec::TRAILER_LEN];
        let tail = len - codec::TRAILER_LEN as u64;
        self.seek(tail)?;
        read_exact(&mut self.src, &mut t, tail, "trailer", &self.path)?;
        if &t[8..] != codec::TRAILER_MAGIC {
            self.seek(start)?;
            return Ok(());
        }
        let at = u64::from_le_bytes(t[..8].try_into().expect("8 bytes"));
        if at < start || at >= tail {
            return Err(corrupt(
                tail,
                format!("trailer points to byte {at}, outside the frames"),
            ));
        }
        self.data_end = tail;
        self.trailer = true;
        self.pos = at;
        self.seek(at)?;
        let head = self.read_frame()?;
        if head.kind != Kind::Threads {
            return Err(corrupt(
                at,
                "trailer does not point to the threads frame".into(),
            ));
        }
        self.take_threads(at)?;
        // A processes frame, if any, follows the threads frame.
        let next = self.pos;
        if next < tail && self.read_frame()?.kind == Kind::Processes {
            self.take_processes(next)?;
        }
        self.pos = start;
        self.seek(start)
    }

    fn seek(&mut self, to: u64) -> Result<()> {
        self.src
            .seek(SeekFrom::Start(to))
            .map(|_| ())
            .map_err(|err| TraceError::Io {
                path: self.path.clone(),
                err,
            })
    }

    /// Reads the frame at `self.pos`, checks it and leaves its raw payload in `self.raw`.
    fn read_frame(&mut self) -> Result<FrameHead> {
        let at = self.pos;
        if at + FRAME_HEADER as u64 > self.data_end {
            return Err(TraceError::Truncated {
                offset: at,
                what: "frame header",
            });
        }
        let mut hb = [0u8; FRAME_HEADER];
        read_exact(&mut self.src, &mut hb, at, "frame header", &self.path)?;
        let head = codec::decode_frame_head(&hb, at, self.header.version)?;
        let end = at + FRAME_HEADER as u64 + head.comp_len as u64;
        if end > self.data_end {
            return Err(TraceError::Truncated {
                offset: at,
                what: "frame payload",
            });
        }
        self.comp.resize(head.comp_len as usize, 0);
        read_exact(
            &mut self.src,
            &mut self.comp,
            at,
            "frame payload",
            &self.path,
        )?;
        if !codec::frame_crc_ok(&hb, &self.comp, head.crc) {
            return Err(corrupt(at, "frame checksum mismatch".into()));
        }
        self.unpack(&head)
            .ok_or_else(|| corrupt(at, "frame payload does not decompress to its length".into()))?;
        self.pos = end;
        Ok(head)
    }

    /// Decompresses the frame's two streams into `raw` and `rest` (the second one skipped
    /// for accesses in addresses-only mode); `None` if either is malformed.
    fn unpack(&mut self, head: &FrameHead) -> Option<()> {
        let want = head.raw_len as usize;
        let varint = head.kind == Kind::Accesses && codec::varint_accesses(self.header.version);
        // V5 accesses: the address column's length is known once decompressed, and the
        // second stream holds the rest of the frame's raw length; so V6's symbols.
        let max1 = if codec::symbol_accesses(self.header.version) && varint {
            want
        } else if varint {
            want.min(head.count as usize * columns::MAX_ADDRESS_BYTES)
        } else {
            head.kind.first_stream(head.count)
        };
        let len1 = u32::from_le_bytes(self.comp.get(..4)?.try_into().ok()?) as usize;
        let first = self.comp.get(4..4usize.checked_add(len1)?)?;
        let got = unzstd(&mut self.dec, first, &mut self.raw, max1)?;
        if !varint && got != max1 {
            return None;
        }
        self.rest.clear();
        if self.addrs_only && head.kind == Kind::Accesses {
            return Some(());
        }
        let want2 = want - got;
        let got2 = unzstd(&mut self.dec, &self.comp[4 + len1..], &mut self.rest, want2)?;
        (got2 == want2).then_some(())
    }

    fn check_thread(&self, thread: u32, at: u64) -> Result<()> {
        if thread >= self.header.threads {
            return Err(TraceError::ThreadOutOfRange {
                offset: at,
                thread,
                threads: self.header.threads,
            });
        }
        Ok(())
    }

    /// Takes the chunk last returned by `next_chunk`, leaving `spare` (or a new buffer if
    /// it is of the other kind) in its place; for the prefetching reader.
    pub(crate) fn take_current(&mut self, spare: Option<Chunk>) -> Chunk {
        let fresh = match (&self.slots[self.cur], spare) {
            (Chunk::Accesses(_), Some(s @ Chunk::Accesses(_))) => s,
            (Chunk::Faults(_), Some(s @ Chunk::Faults(_))) => s,
            (Chunk::Accesses(_), _) => Chunk::Accesses(Default::default()),
            (Chunk::Faults(_), _) => Chunk::Faults(Default::default()),
        };
        std::mem::replace(&mut self.slots[self.cur], fresh)
    }

    fn decode_events(&mut self, head: &FrameHead, at: u64) -> Result<()> {
        let n = head.count as usize;
        let v = self.header.version;
        let coding = [
            Coding::of(v, head.flags, SHUFFLED_ADDRS),
            Coding::of(v, head.flags, SHUFFLED_TIMES),
        ];
        if head.kind == Kind::Accesses {
            self.cur = 0;
            self.seen.accesses += n as u64;
            if let Chunk::Accesses(c) = &mut self.slots[0] {
                let rest = (!self.addrs_only).then_some(&self.rest[..]);
                if codec::symbol_accesses(v) {
                    let state = self.predictors.entry(head.thread).or_default();
                    let h = (head.thread, n, head.flags);
                    if !replay::decode(c, h, state, &self.raw, rest) {
                        return Err(corrupt(
                            at,
                            "malformed access symbols or time blocks".into(),
                        ));
                    }
                } else if codec::varint_accesses(v) {
                    if !columns::decode(c, head.thread, n, &self.raw, rest) {
                        return Err(corrupt(at, "malformed access columns".into()));
                    }
                } else if !decode_accesses(c, head.thread, &self.raw, rest, coding) {
                    return Err(corrupt(at, "write flag is neither 0 nor 1".into()));
                }
                c.repeats.clear();
                if self.repeats_for.take().is_some_and(|t| t == head.thread) {
                    std::mem::swap(&mut c.repeats, &mut self.repeats);
                }
                let bad = c.repeats.windows(2).any(|w| w[0].0 >= w[1].0)
                    || c.repeats.iter().any(|&(i, e)| {
                        i as usize >= n || e == 0 || c.writes.get(i as usize) == Some(&true)
                    });
                if bad {
                    return Err(corrupt(
                        at,
                        "collapsed reads name no read of their frame".into(),
                    ));
                }
            }
        } else {
            self.cur = 1;
            self.seen.faults += n as u64;
            if let Chunk::Faults(c) = &mut self.slots[1] {
                decode_faults(c, head.thread, &self.raw, &self.rest, coding);
            }
        }
        Ok(())
    }

    /// Keeps a repeats frame's pairs for the accesses frame that must follow it.
    fn take_repeats(&mut self, head: &FrameHead, at: u64) -> Result<()> {
        if self.header.version < crate::TraceVersion::V4 as u32 {
            return Err(corrupt(
                at,
                format!("a repeats frame in a version {} trace", self.header.version),
            ));
        }
        self.check_thread(head.thread, at)?;
        decode_repeats(&mut self.repeats, &self.raw);
        self.repeats_for = Some(head.thread);
        Ok(())
    }

    fn take_threads(&mut self, at: u64) -> Result<()> {
        let threads = codec::decode_threads(&self.raw);
        for t in &threads {
            self.check_thread(t.id, at)?;
        }
        self.threads = threads;
        Ok(())
    }

    fn take_processes(&mut self, at: u64) -> Result<()> {
        if self.header.version < crate::TraceVersion::V3 as u32 {
            return Err(corrupt(
                at,
                format!(
                    "a processes frame in a version {} trace",
                    self.header.version
                ),
            ));
        }
        let procs = codec::decode_processes(&self.raw)
            .ok_or_else(|| corrupt(at, "unknown process status byte".into()))?;
        for p in &procs {
            let end = p.first_task.saturating_add(p.tasks);
            if end > self.header.threads {
                return Err(TraceError::ThreadOutOfRange {
                    offset: at,
                    thread: end.saturating_sub(1),
                    threads: self.header.threads,
                });
            }
        }
        self.processes = procs;
        Ok(())
    }

    fn take_end(&mut self, at: u64) -> Result<()> {
        let r = &self.raw;
        let totals = Totals {
            accesses: u64::from_le_bytes(r[..8].try_into().expect("8 bytes")),
            faults: u64::from_le_bytes(r[8..16].try_into().expect("8 bytes")),
        };
        if totals != self.seen {
            return Err(corrupt(
                at,
                format!(
                    "end frame counts {} accesses and {} faults but the file holds {} and {}",
                    totals.accesses, totals.faults, self.seen.accesses, self.seen.faults
                ),
            ));
        }
        if self.pos != self.data_end {
            return Err(corrupt(self.pos, "data after the end frame".into()));
        }
        self.end = Some(totals);
        Ok(())
    }
}

/// Decompresses `src` into `dst`, refusing more than `max` bytes; returns the length.
fn unzstd(
    dec: &mut zstd::bulk::Decompressor<'static>,
    src: &[u8],
    dst: &mut Vec<u8>,
    max: usize,
) -> Option<usize> {
    dst.clear();
    dst.reserve(max);
    let n = dec.decompress_to_buffer(src, dst).ok()?;
    (n <= max).then_some(n)
}

fn read_exact(
    src: &mut impl Read,
    buf: &mut [u8],
    at: u64,
    what: &'static str,
    path: &Path,
) -> Result<()> {
    src.read_exact(buf).map_err(|e| match e.kind() {
        ErrorKind::UnexpectedEof => TraceError::Truncated { offset: at, what },
        _ => TraceError::Io {
            path: path.to_path_buf(),
            err: e,
        },
    })
}

/// Iterator over the single events of a trace, in file order.
pub struct Events<R> {
    reader: Reader<R>,
    next: usize,
    len: usize,
}

impl<R> Events<R> {
    /// The reader, e.g. to look at its threads or totals after the last event.
    pub fn reader(&self) -> &Reader<R> {
        &self.reader
    }
}

impl<R: Read + Seek> Iterator for Events<R> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        while self.next >= self.len {
            match self.reader.next_chunk() {
                Ok(Some(c)) => {
                    self.len = c.len();
                    self.next = 0;
                }
                Ok(None) => return None,
                Err(e) => {
                    self.reader.pos = self.reader.data_end;
                    return Some(Err(e));
                }
            }
        }
        let ev = self.reader.slots[self.reader.cur].event(self.next);
        self.next += 1;
        Some(Ok(ev))
    }
}
