//! Keeping the raw streams of a run of several processes (or with a `MAP_SHARED`
//! mapping) within `--buffer-mib` while it runs (issue 17 item 1): the final conversion
//! (`convert.rs`) must wait for the exit, since page keys need every process's latest
//! snapshot and task ids the thread counts of all earlier processes, so until then each
//! process's raw stream is moved, as it grows, into a compressed **spill** beside it
//! (`DATA.spill`, removed with the other scratch files) and its raw blocks are freed, so
//! the runtime's wait (`tdmap_rt::io`) goes on bounding each raw file.
//!
//! A spill holds the raw stream's bytes themselves, cut into frames ([`FrameHeader`]),
//! each delta-coded word by word and compressed: reading it back ([`Source`]) gives the
//! exact bytes the runtime wrote, so the conversion after the exit sees the same events
//! in the same order as it would from the raw files, and writes the same trace. What is
//! not spilled (a spill that could not be written) stays in memory or in the raw file,
//! after the spill. The conversion frees each spill's blocks behind its reader, so the
//! disk holds about the larger of the spills and the trace, not their sum.

use super::follow::{release, Freed};
use super::procs::child_data_files;
use super::raw::ThreadCount;
use super::Scratch;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};
use tdmap_sys::GatedChild;

/// Raw bytes compressed into one spill frame (also what each process's spiller holds in
/// memory at most, besides one read).
const FRAME: usize = 1 << 20;
/// Raw bytes read from one process's file at a time, so that every process is served.
const READ: usize = 256 << 10;
/// How often the scratch folder is listed for processes that started since.
const LIST_EVERY: Duration = Duration::from_millis(20);
/// zstd's level for spills: its fastest regular level, since the spiller sets the
/// program's pace once the buffer is full.
const LEVEL: i32 = 1;
/// Marks a spill frame's header.
const MAGIC: u32 = u32::from_le_bytes(*b"TDSP");

/// The header of one spill frame, followed by `stored` bytes of zstd data that give
/// `raw` bytes of the raw stream, whole words delta-coded ([`delta`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FrameHeader {
    raw: u32,
    stored: u32,
}

impl FrameHeader {
    const BYTES: usize = 12;

    fn encode(self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&self.raw.to_le_bytes());
        b[8..].copy_from_slice(&self.stored.to_le_bytes());
        b
    }

    fn decode(b: &[u8; Self::BYTES]) -> Option<FrameHeader> {
        let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        (word(0) == MAGIC).then(|| FrameHeader {
            raw: word(4),
            stored: word(8),
        })
    }
}

/// Replaces each whole 8-byte word after the first by its difference from the word
/// before (a bytes tail is kept): strided addresses and clock ticks become repeats,
/// which compress well. [`undelta`] reverses it.
fn delta(bytes: &mut [u8]) {
    let mut prev = 0u64;
    for w in bytes.chunks_exact_mut(8) {
        let v = u64::from_ne_bytes((*w).try_into().expect("8 bytes"));
        w.copy_from_slice(&v.wrapping_sub(prev).to_ne_bytes());
        prev = v;
    }
}

/// Reverses [`delta`].
fn undelta(bytes: &mut [u8]) {
    let mut prev = 0u64;
    for w in bytes.chunks_exact_mut(8) {
        let v = u64::from_ne_bytes((*w).try_into().expect("8 bytes")).wrapping_add(prev);
        w.copy_from_slice(&v.to_ne_bytes());
        prev = v;
    }
}

/// The spill of the raw data file `data`.
pub(super) fn spill_path(data: &Path) -> PathBuf {
    let mut s = data.as_os_str().to_owned();
    s.push(".spill");
    PathBuf::from(s)
}

/// What was moved out of one process's raw file while the program ran: its stream is
/// the spill's frames, then `mem`, then the raw file from byte `raw_from`; `count`, the
/// threads named before `raw_from`.
#[derive(Debug, Default)]
pub(super) struct Part {
    spill: Option<PathBuf>,
    mem: Vec<u8>,
    raw_from: u64,
    count: ThreadCount,
}

/// What spilling did: each process's part, by raw data file.
#[derive(Debug, Default)]
pub(super) struct Spilled {
    parts: HashMap<PathBuf, Part>,
    /// The program's exit status, once it exited while spilling.
    pub(super) status: Option<ExitStatus>,
}

impl Spilled {
    /// How many threads raw file `data` names from byte `from` (process 0's start past
    /// what was converted early; 0 for the others), as [`ThreadCount`] counts
    /// them: a spilled stream was counted while it was spilled, so only what was
    /// left in the raw file is read.
    pub(super) fn threads(&self, data: &Path, from: u64) -> std::io::Result<u32> {
        let (mut count, at) = match self.parts.get(data) {
            Some(p) => (p.count.clone(), p.raw_from),
            None => (ThreadCount::default(), from),
        };
        let mut raw = File::open(data)?;
        raw.seek(SeekFrom::Start(at))?;
        count.read_from(&mut raw)?;
        Ok(count.threads())
    }

    /// The stream of raw file `data` from byte `from` (process 0's start past what was
    /// converted early; 0 for the others): through its spill when it has one. The
    /// spill's and the raw file's blocks are freed behind the reader.
    pub(super) fn source(&self, data: &Path, from: u64) -> Result<Source> {
        // Writable, or fallocate cannot punch holes in it.
        let mut raw = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(data)
            .with_context(|| format!("opening the raw trace {}", data.display()))?;
        let part = self.parts.get(data);
        let at = part.map_or(from, |p| p.raw_from);
        raw.seek(SeekFrom::Start(at))?;
        let spill = match part.and_then(|p| p.spill.as_ref()) {
            Some(s) => Some(
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(s)
                    .with_context(|| format!("opening the spill {}", s.display()))?,
            ),
            None => None,
        };
        Ok(Source {
            spill,
            spill_at: 0,
            frame: Vec::new(),
            pos: 0,
            mem: part.map(|p| p.mem.clone()).unwrap_or_default(),
            mem_at: 0,
            raw,
            raw_at: at,
            punched: Freed(at),
        })
    }
}

/// One process's raw stream read back: its spill's frames, then the bytes kept in
/// memory, then the rest of its raw file.
pub(super) struct Source {
    spill: Option<File>,
    spill_at: u64,
    frame: Vec<u8>,
    pos: usize,
    mem: Vec<u8>,
    mem_at: usize,
    raw: File,
    raw_at: u64,
    punched: Freed,
}

impl Source {
    /// Loads the spill's next frame; false at its end (a frame cut short by a failed
    /// write ends it too: what follows it was kept elsewhere).
    fn next_frame(&mut self) -> std::io::Result<bool> {
        let Some(f) = &mut self.spill else {
            return Ok(false);
        };
        let mut hb = [0u8; FrameHeader::BYTES];
        let header = match f.read_exact(&mut hb) {
            Ok(()) => FrameHeader::decode(&hb),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
            Err(e) => return Err(e),
        };
        let Some(h) = header else {
            self.spill = None;
            return Ok(false);
        };
        let mut stored = vec![0u8; h.stored as usize];
        match f.read_exact(&mut stored) {
            Ok(()) => {}
            // Cut short by a failed write (a full disk): its bytes were kept in memory.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                self.spill = None;
                return Ok(false);
            }
            Err(e) => return Err(e),
        }
        self.frame = zstd::bulk::decompress(&stored, h.raw as usize)?;
        undelta(&mut self.frame);
        self.pos = 0;
        self.spill_at += (FrameHeader::BYTES + stored.len()) as u64;
        // In memory now. Only disk space is at stake if it fails.
        let _ = tdmap_sys::punch_hole(f, self.spill_at);
        Ok(true)
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.frame.len() && self.spill.is_some() {
            self.next_frame()?;
        }
        if self.pos < self.frame.len() {
            let n = (self.frame.len() - self.pos).min(buf.len());
            buf[..n].copy_from_slice(&self.frame[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        if self.mem_at < self.mem.len() {
            let n = (self.mem.len() - self.mem_at).min(buf.len());
            buf[..n].copy_from_slice(&self.mem[self.mem_at..self.mem_at + n]);
            self.mem_at += n;
            return Ok(n);
        }
        let n = self.raw.read(buf)?;
        self.raw_at += n as u64;
        // What was read is in the caller's memory: its blocks can go.
        self.punched.upto(&self.raw, self.raw_at, n == 0);
        Ok(n)
    }
}

/// One process's raw file being moved into its spill.
struct Spilling {
    data: PathBuf,
    raw: Option<File>,
    /// Bytes of the raw file read (its offset), and freed.
    read: u64,
    punched: Freed,
    /// Read, not yet in the spill.
    buf: Vec<u8>,
    /// The threads named in what was read.
    count: ThreadCount,
    out: Option<File>,
    /// A spill write failed: the rest stays in `buf` and the raw file.
    failed: bool,
}

impl Spilling {
    fn new(data: PathBuf, from: u64) -> Spilling {
        Spilling {
            data,
            raw: None,
            read: from,
            punched: Freed(from),
            buf: Vec::new(),
            count: ThreadCount::default(),
            out: None,
            failed: false,
        }
    }

    /// Moves what the raw file got since into memory and the spill; false if nothing.
    fn pump(&mut self) -> bool {
        if self.failed {
            return false;
        }
        if self.raw.is_none() {
            // The runtime creates it; read+write so that holes can be punched.
            let Ok(mut f) = File::options().read(true).write(true).open(&self.data) else {
                return false;
            };
            if f.seek(SeekFrom::Start(self.read)).is_err() {
                return false;
            }
            self.raw = Some(f);
        }
        let f = self.raw.as_mut().expect("opened above");
        let len = self.buf.len();
        self.buf.resize(len + READ, 0);
        let n = f.read(&mut self.buf[len..]).unwrap_or(0);
        self.buf.truncate(len + n);
        self.count.feed(&self.buf[len..]);
        self.read += n as u64;
        // In memory now: its blocks can go, so a runtime waiting for room goes on.
        self.punched.upto(f, self.read, n < READ);
        if self.buf.len() >= FRAME {
            self.flush();
        }
        n > 0
    }

    /// Compresses what is held into a spill frame; on failure keeps it and stops.
    fn flush(&mut self) {
        if self.buf.is_empty() || self.failed {
            return;
        }
        let mut frame = self.buf.clone();
        delta(&mut frame);
        let wrote = zstd::bulk::compress(&frame, LEVEL).and_then(|z| {
            let h = FrameHeader {
                raw: self.buf.len() as u32,
                stored: z.len() as u32,
            };
            if self.out.is_none() {
                // A scratch name of this run (a stale one is not ours).
                let path = spill_path(&self.data);
                let _ = std::fs::remove_file(&path);
                self.out = Some(crate::paths::create_new(&path, false)?);
            }
            let out = self.out.as_mut().expect("created above");
            out.write_all(&[&h.encode()[..], &z].concat())
        });
        match wrote {
            Ok(()) => self.buf.clear(),
            Err(_) => self.give_up(),
        }
    }

    /// Stops spilling (the spill could not be written): the runtime is told the raw file
    /// is no longer read while the program runs, so it stops waiting and writes on.
    fn give_up(&mut self) {
        self.failed = true;
        if let Some(f) = &self.raw {
            release(f);
        }
    }

    /// What the conversion reads back: the spill (cut after its last whole frame), the
    /// bytes held, the raw file's rest.
    fn part(mut self) -> (PathBuf, Part) {
        self.flush();
        if let Some(f) = &self.raw {
            release(f);
        }
        let spill = self.out.is_some().then(|| spill_path(&self.data));
        let part = Part {
            spill,
            mem: self.buf,
            raw_from: self.read,
            count: self.count,
        };
        (self.data, part)
    }
}

/// Moves every process's raw stream into its spill while the program runs, process 0's
/// from byte `from0` (what the early conversion read); returns when it has exited,
/// with its status (what it wrote since the last read stays in the raw files).
pub(super) fn spill_while_running(
    scratch: &Scratch,
    child: &mut GatedChild,
    from0: u64,
) -> Result<Spilled> {
    let mut procs = vec![Spilling::new(scratch.data.clone(), from0)];
    let mut listed: Option<Instant> = None;
    let status = loop {
        // What the program wrote after the last read is left in the raw files, which
        // the conversion reads after the spills: once it exited, nothing waits on them.
        if let Some(s) = child.try_wait().context("waiting for the program")? {
            break s;
        }
        if listed.is_none_or(|t| t.elapsed() >= LIST_EVERY) {
            for data in child_data_files(scratch) {
                if !procs.iter().any(|p| p.data == data) {
                    procs.push(Spilling::new(data, 0));
                }
            }
            listed = Some(Instant::now());
        }
        // Every process served in turn, each by one read at most.
        if !procs.iter_mut().fold(false, |m, p| p.pump() | m) {
            std::thread::sleep(super::follow::IDLE_WAIT);
        }
    };
    Ok(Spilled {
        parts: procs.into_iter().map(Spilling::part).collect(),
        status: Some(status),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What spilling one raw file left: that file's part.
    fn spilled_one((path, part): (PathBuf, Part)) -> Spilled {
        let mut spilled = Spilled::default();
        spilled.parts.insert(path, part);
        spilled
    }

    /// `back`, a stream read back, is `bytes` (compared whole: printing two MiB-long
    /// vectors on a failure helps nobody).
    fn assert_same(back: &[u8], bytes: &[u8]) {
        assert!(
            back == bytes,
            "{} bytes back of {}",
            back.len(),
            bytes.len()
        );
    }

    /// Raw file `data`'s whole stream as the conversion reads it.
    fn read_back(spilled: &Spilled, data: &Path) -> Result<Vec<u8>> {
        let mut back = Vec::new();
        std::io::BufReader::new(spilled.source(data, 0)?).read_to_end(&mut back)?;
        Ok(back)
    }

    /// Threads are counted as the stream is spilled, so counting after the exit reads
    /// only the raw file's rest: the spill itself is not read again (here it is gone).
    #[test]
    fn threads_are_counted_while_spilling() {
        use super::super::raw::wire::{self, ChunkHeader};
        let dir = std::env::temp_dir().join(format!("tdmap-spill-count-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("raw");
        let chunk = |id: u32| {
            ChunkHeader {
                magic: wire::MAGIC,
                kind: wire::KIND_THREAD,
                thread: id,
                ..ChunkHeader::default()
            }
            .encode()
        };
        // Ids up to 69,999 spilled (over two frames of them), then ids up to 999 and a
        // header cut in two left in the raw file.
        let spilled_part: Vec<u8> = (0..70_000).flat_map(chunk).collect();
        std::fs::write(&data, &spilled_part).unwrap();
        let mut s = Spilling::new(data.clone(), 0);
        while s.pump() {}
        let (path, part) = s.part();
        let spill = part.spill.clone().expect("spilled");
        let mut rest: Vec<u8> = (0..1_000).flat_map(chunk).collect();
        rest.truncate(rest.len() - 20);
        File::options()
            .append(true)
            .open(&data)
            .unwrap()
            .write_all(&rest)
            .unwrap();
        std::fs::remove_file(&spill).unwrap();
        let spilled = spilled_one((path, part));
        let n = spilled.threads(&data, 0).unwrap();
        // Not spilled: counted from the raw file, from the byte given.
        let other = dir.join("other");
        std::fs::write(&other, [chunk(3), chunk(7)].concat()).unwrap();
        let m = spilled.threads(&other, wire::HEADER_BYTES as u64).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(n, 70_000);
        assert_eq!(m, 8);
    }

    #[test]
    fn delta_coding_is_undone_exactly() {
        let orig: Vec<u8> = (0..8 * 100 + 5).map(|i| (i * 37 % 251) as u8).collect();
        let mut b = orig.clone();
        delta(&mut b);
        assert_ne!(b, orig);
        undelta(&mut b);
        assert_eq!(b, orig);
    }

    /// A raw file moved into a spill in several frames, with bytes left in memory and in
    /// the raw file after it, reads back as the same bytes, and reading frees the spill.
    #[test]
    fn a_spilled_stream_reads_back_as_written() {
        let dir = std::env::temp_dir().join(format!("tdmap-spill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("raw");
        // Strided words, as access records are, and a tail that is not a whole word.
        let bytes: Vec<u8> = (0..(3 * FRAME / 8 + 77) as u64)
            .flat_map(|i| (0x7f00_0000_0000 + 8 * i).to_ne_bytes())
            .chain([1, 2, 3])
            .collect();
        let head = 4096 + 8;
        std::fs::write(&data, &bytes[..bytes.len() - 1000]).unwrap();
        let mut s = Spilling::new(data.clone(), head as u64);
        while s.pump() {}
        // More written after the spill stopped: read from the raw file.
        let mut f = File::options().append(true).open(&data).unwrap();
        f.write_all(&bytes[bytes.len() - 1000..]).unwrap();
        let (path, part) = s.part();
        assert!(part.spill.is_some());
        assert!(part.mem.is_empty());
        let spill = spill_path(&data);
        let stored = std::fs::metadata(&spill).unwrap().len();
        assert!(
            stored < (bytes.len() / 20) as u64,
            "{stored} bytes for {}",
            bytes.len()
        );
        let back = read_back(&spilled_one((path, part)), &data).unwrap();
        use std::os::unix::fs::MetadataExt;
        let held = std::fs::metadata(&spill).unwrap().blocks() * 512;
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(back.len(), bytes.len() - head);
        assert!(back == bytes[head..]);
        assert!(held < 8192, "the spill is freed behind the reader: {held}");
    }

    /// A spill that cannot be written (here a folder stands at its name; on a full disk
    /// the write fails) stops spilling: the runtime is told to stop waiting, the bytes
    /// read stay in memory and the rest in the raw file, and the stream reads back whole.
    #[test]
    fn a_spill_that_cannot_be_written_leaves_the_stream_in_memory_and_the_raw_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tdmap-nospill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("raw");
        std::fs::create_dir_all(spill_path(&data)).unwrap();
        let bytes: Vec<u8> = (0..(FRAME + 3 * READ) as u32).map(|i| i as u8).collect();
        std::fs::write(&data, &bytes).unwrap();
        let mut s = Spilling::new(data.clone(), 0);
        while s.pump() {}
        assert!(s.failed);
        let mode = std::fs::metadata(&data).unwrap().permissions().mode();
        let (path, part) = s.part();
        assert!(part.spill.is_none());
        assert!(!part.mem.is_empty() && part.raw_from < bytes.len() as u64);
        let back = read_back(&spilled_one((path, part)), &data).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(mode & tdmap_wire::raw::MODE_UNFOLLOWED, 0o010);
        assert_same(&back, &bytes);
    }

    /// A spill whose last frame a failed write cut short ends before that frame, whose
    /// bytes were kept in memory.
    #[test]
    fn a_torn_last_frame_ends_the_spill() {
        let dir = std::env::temp_dir().join(format!("tdmap-torn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("raw");
        let bytes: Vec<u8> = (0..3 * FRAME as u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&data, &bytes).unwrap();
        let mut s = Spilling::new(data.clone(), 0);
        while s.pump() {}
        let (path, mut part) = s.part();
        let spill = spill_path(&data);
        let len = std::fs::metadata(&spill).unwrap().len();
        File::options()
            .write(true)
            .open(&spill)
            .unwrap()
            .set_len(len - 10)
            .unwrap();
        part.mem = bytes[2 * FRAME..].to_vec();
        let back = read_back(&spilled_one((path, part)), &data);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_same(&back.unwrap(), &bytes);
    }

    #[test]
    fn a_frame_header_is_told_by_its_magic() {
        let h = FrameHeader {
            raw: 1 << 20,
            stored: 4321,
        };
        assert_eq!(FrameHeader::decode(&h.encode()), Some(h));
        let mut b = h.encode();
        b[0] ^= 1;
        assert_eq!(FrameHeader::decode(&b), None);
    }
}
