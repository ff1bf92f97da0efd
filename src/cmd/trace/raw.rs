//! Reading the runtime's raw chunk file (format: `tdmap_wire::raw`) and the control file.
//!
//! A predicted chunk (wire version 7, a recording thread's) is checked here
//! (`tdmap_wire::raw::walk`: damage reads as a torn chunk) and kept as it came, runs and
//! misses: the conversion takes its runs straight into the trace's symbols
//! (`decode/predicted.rs`), with no work per access. A reader that needs a word per
//! access ([`RawChunk::expand`]) expands it into the words of an access chunk of
//! version 6.

pub use tdmap_wire::raw as wire;

use std::io::{self, Read};
use wire::{ChunkHeader, HEADER_BYTES};

/// One decoded chunk of the raw data file.
#[derive(Debug, PartialEq, Eq)]
pub enum RawEvent {
    /// A thread registered: its id, OS tid and time.
    Thread { id: u32, os_tid: u64, time: u64 },
    /// A batch of packed records of one thread.
    Accesses(RawChunk),
    /// An aggregating thread's counted chunk (`--model-only`): blocks of counted lines
    /// and first touches, its words checked by [`wire::check_counted`].
    Counted {
        /// The thread's id.
        thread: u32,
        /// When its first entry was written.
        time: u64,
        /// Its entries' words.
        words: Vec<u64>,
    },
    /// A thread finished; `filtered` accesses were dropped by the line filter.
    End {
        thread: u32,
        filtered: u64,
        time: u64,
    },
}

impl RawEvent {
    /// When it happened (an access chunk: its first record), for merging the streams of
    /// several processes in time order.
    pub fn time(&self) -> u64 {
        match self {
            RawEvent::Thread { time, .. }
            | RawEvent::End { time, .. }
            | RawEvent::Counted { time, .. } => *time,
            RawEvent::Accesses(c) => c.ticks.first().copied().unwrap_or(c.t1),
        }
    }
}

/// One thread's access chunk as the runtime flushed it.
#[derive(Debug, PartialEq, Eq)]
pub struct RawChunk {
    /// The thread's id.
    pub thread: u32,
    /// Clock readings, one per [`wire::TICK_EVERY`] records.
    pub ticks: Vec<u64>,
    /// The flush time.
    pub t1: u64,
    /// Packed access records, each first-touch one followed by a CPU word; a predicted
    /// chunk's words as it came (run words, missed records, side words).
    pub records: Vec<u64>,
    /// For a predicted chunk, the positions (version-6 words) it stands for; None for
    /// an access chunk.
    pub predicted: Option<u64>,
}

impl RawChunk {
    /// Shifts every time so that `base` becomes 0.
    pub fn rebase(&mut self, base: u64) {
        self.ticks
            .iter_mut()
            .for_each(|t| *t = t.saturating_sub(base));
        self.t1 = self.t1.saturating_sub(base);
    }

    /// Makes a predicted chunk an access chunk of version 6 (a word per access), for a
    /// consumer that needs each access's address: the model, page keys. Does nothing to
    /// an access chunk.
    pub fn expand(&mut self) -> Result<(), tdmap_wire::WireError> {
        let Some(words) = self.predicted else {
            return Ok(());
        };
        let mut out = Vec::with_capacity(words.min(wire::CHUNK_RECORDS as u64) as usize);
        wire::expand(&self.records, words, &mut out)?;
        self.records = out;
        self.predicted = None;
        Ok(())
    }
}

/// Streams [`RawEvent`]s; stops at the first torn or foreign chunk and remembers it.
pub struct RawReader<R> {
    src: R,
    /// True when the file ended inside a chunk or held a bad header (a failed write).
    pub torn: bool,
    /// A chunk's body as read, kept from chunk to chunk (not zeroed and freed each time).
    body: Vec<u8>,
    /// The words of a counted chunk given back by [`RawReader::recycle`], for the next.
    spare: Vec<u64>,
}

impl<R: Read> RawReader<R> {
    /// Reads chunks from `src`.
    pub fn new(src: R) -> Self {
        RawReader {
            src,
            torn: false,
            body: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// The source it reads from.
    pub fn get_ref(&self) -> &R {
        &self.src
    }

    /// The source it reads from, to tell it what was consumed.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.src
    }

    /// The next chunk, None at the end (or at a torn chunk, setting `torn`).
    pub fn next_event(&mut self) -> io::Result<Option<RawEvent>> {
        let mut hb = [0u8; HEADER_BYTES];
        match read_full(&mut self.src, &mut hb)? {
            0 => return Ok(None),
            n if n < HEADER_BYTES => return self.tear(),
            _ => {}
        }
        // A foreign magic, an unknown kind or an oversized count: a damaged file.
        let Ok((h, body)) = ChunkHeader::decode(&hb).and_then(|h| Ok((h, h.body_bytes()?))) else {
            return self.tear();
        };
        let ev = match h.kind {
            wire::KIND_THREAD => RawEvent::Thread {
                id: h.thread,
                os_tid: h.extra,
                time: h.t0,
            },
            wire::KIND_END => RawEvent::End {
                thread: h.thread,
                filtered: h.extra,
                time: h.t0,
            },
            _ => {
                self.body.resize(body, 0);
                if read_full(&mut self.src, &mut self.body)? < body {
                    return self.tear();
                }
                let (tick_bytes, words) = self.body.split_at(wire::TICKS * 8);
                if h.kind == wire::KIND_COUNTED {
                    // Only its first clock word is read; the words go into the spare
                    // buffer, whose memory the last counted chunk gave back.
                    let time = u64::from_ne_bytes(tick_bytes[..8].try_into().unwrap());
                    let mut records = std::mem::take(&mut self.spare);
                    words_into(words, &mut records);
                    // Damaged words: as a torn chunk, nothing after it is read.
                    if wire::check_counted(&records).is_err() {
                        return self.tear();
                    }
                    return Ok(Some(RawEvent::Counted {
                        thread: h.thread,
                        time,
                        words: records,
                    }));
                }
                let (mut ticks, mut records) = (Vec::new(), Vec::new());
                words_into(tick_bytes, &mut ticks);
                words_into(words, &mut records);
                let predicted = (h.kind == wire::KIND_PREDICTED).then_some(h.extra);
                // Damaged words: as a torn chunk, nothing after it is read.
                if let Some(n) = predicted {
                    if wire::walk(&records, n, |_, _| {}).is_err() {
                        return self.tear();
                    }
                }
                RawEvent::Accesses(RawChunk {
                    thread: h.thread,
                    ticks,
                    t1: h.t1,
                    records,
                    predicted,
                })
            }
        };
        Ok(Some(ev))
    }

    /// Takes back a counted chunk's words once used: the next one reuses their memory
    /// (a fresh 64 KiB a chunk cost `--model-only` page faults at every chunk).
    pub fn recycle(&mut self, words: Vec<u64>) {
        self.spare = words;
    }

    fn tear(&mut self) -> io::Result<Option<RawEvent>> {
        self.torn = true;
        Ok(None)
    }
}

/// How many threads a process's raw stream names (its highest thread id + 1), from the
/// chunk headers only (bodies are passed over); stops at a torn chunk as [`RawReader`]
/// does. The stream may come in pieces: the spiller (`spill.rs`) feeds it every byte it
/// moves, so that counting after the exit reads only what was left in the raw file, not
/// the whole spill a second time.
#[derive(Debug, Clone)]
pub struct ThreadCount {
    threads: u32,
    /// The header being gathered, and how many of its bytes came.
    head: [u8; HEADER_BYTES],
    have: usize,
    /// Body bytes still to pass over.
    skip: u64,
    /// A torn or foreign header came: nothing after it counts.
    torn: bool,
}

impl Default for ThreadCount {
    fn default() -> ThreadCount {
        ThreadCount {
            threads: 0,
            head: [0; HEADER_BYTES],
            have: 0,
            skip: 0,
            torn: false,
        }
    }
}

impl ThreadCount {
    /// Counts the chunk headers in `bytes`, the stream's next bytes.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && !self.torn {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len() as u64);
                bytes = &bytes[n as usize..];
                self.skip -= n;
                continue;
            }
            let n = (HEADER_BYTES - self.have).min(bytes.len());
            self.head[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have < HEADER_BYTES {
                return;
            }
            self.have = 0;
            match ChunkHeader::decode(&self.head).and_then(|h| Ok((h, h.body_bytes()?))) {
                Ok((h, body)) => {
                    self.threads = self.threads.max(h.thread.saturating_add(1));
                    self.skip = body as u64;
                }
                Err(_) => self.torn = true,
            }
        }
    }

    /// Feeds everything `src` still has, seeking past the chunk bodies: only the headers
    /// name threads, and a raw file is mostly bodies.
    pub fn read_from(&mut self, src: &mut (impl Read + io::Seek)) -> io::Result<()> {
        let mut buf = [0u8; HEADER_BYTES];
        loop {
            if self.skip > 0 {
                src.seek(io::SeekFrom::Current(self.skip as i64))?;
                self.skip = 0;
            }
            let want = HEADER_BYTES - self.have;
            let n = read_full(src, &mut buf[..want])?;
            self.feed(&buf[..n]);
            if n < want || self.torn {
                return Ok(());
            }
        }
    }

    /// Threads named so far (the highest thread id + 1).
    pub fn threads(&self) -> u32 {
        self.threads
    }
}

/// Puts the 8-byte words of `bytes` (a whole number of them) in `out`, in place of what
/// it held: in a loop that compiles to a copy (an iterator over the bytes made
/// `--model-only`'s reader convert them one by one).
fn words_into(bytes: &[u8], out: &mut Vec<u64>) {
    out.clear();
    out.resize(bytes.len() / 8, 0);
    for (w, b) in out.iter_mut().zip(bytes.chunks_exact(8)) {
        *w = u64::from_ne_bytes(b.try_into().unwrap());
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(src: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
pub use tdmap_wire::times::time_of;
pub use tdmap_wire::times::{blocks, times};

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u32, thread: u32, count: u32, extra: u64) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [wire::MAGIC, kind, thread, count] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        for v in [10u64, 20, extra] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b
    }

    /// A counted chunk (an aggregating thread's) reads with its first tick as its time;
    /// one whose entries are damaged reads as torn, and nothing after it.
    #[test]
    fn reads_counted_chunks_and_tears_at_damaged_ones() {
        let mut counts = [0u32; wire::BLOCK_LINES];
        counts[3] = 7;
        counts[4] = 1;
        let mut block = [0u64; wire::MAX_BLOCK_WORDS];
        let n = wire::pack_block(0x42, wire::lines_of(&counts), &counts, &mut block);
        let counted = |words: &[u64]| {
            let mut f = header(wire::KIND_COUNTED, 3, words.len() as u32, 0);
            let mut ticks = [0u8; wire::TICKS * 8];
            ticks[..8].copy_from_slice(&77u64.to_ne_bytes());
            f.extend(ticks);
            words.iter().for_each(|w| f.extend(w.to_ne_bytes()));
            f
        };
        let mut f = counted(&block[..n]);
        let mut r = RawReader::new(&f[..]);
        assert_eq!(
            r.next_event().unwrap(),
            Some(RawEvent::Counted {
                thread: 3,
                time: 77,
                words: block[..n].to_vec(),
            })
        );
        assert_eq!(r.next_event().unwrap(), None);
        assert!(!r.torn);
        // Its counts cut off: torn, and the good chunk after it is not read.
        f = counted(&block[..n - 1]);
        f.extend(counted(&block[..n]));
        let mut r = RawReader::new(&f[..]);
        assert_eq!(r.next_event().unwrap(), None);
        assert!(r.torn);
    }

    #[test]
    fn reads_thread_access_and_end_chunks() {
        let mut f = header(wire::KIND_THREAD, 0, 0, 4242);
        f.extend(header(wire::KIND_ACCESS, 0, 2, 0));
        f.extend([0u8; wire::TICKS * 8]);
        f.extend(wire::pack(0x1000, 3, true, true).to_ne_bytes());
        f.extend(wire::pack(0x1008, 2, false, false).to_ne_bytes());
        f.extend(header(wire::KIND_END, 0, 0, 5));
        let mut r = RawReader::new(&f[..]);
        assert_eq!(
            r.next_event().unwrap(),
            Some(RawEvent::Thread {
                id: 0,
                os_tid: 4242,
                time: 10
            })
        );
        let Some(RawEvent::Accesses(RawChunk { records, .. })) = r.next_event().unwrap() else {
            panic!("no accesses")
        };
        assert_eq!(wire::unpack(records[1]).addr, 0x1008);
        assert_eq!(
            r.next_event().unwrap(),
            Some(RawEvent::End {
                thread: 0,
                filtered: 5,
                time: 10
            })
        );
        assert_eq!(r.next_event().unwrap(), None);
        assert!(!r.torn);
    }

    /// A predicted chunk (version 7) is kept as it came, and expands to the access chunk
    /// (version 6) of the same accesses: a strided write loop with a first touch and its CPU word, and a repeat
    /// word naming access 5 (word 6, after the CPU word). Damaged words tear it.
    #[test]
    fn a_predicted_chunk_reads_as_the_access_chunk_it_stands_for() {
        let rec = |i: u64, first| wire::pack(0x7000 + 8 * i, 3, i != 5, first);
        let mut v6: Vec<u64> = (0..10).map(|i| rec(i, i == 3)).collect();
        v6.insert(4, wire::pack_cpu(1));
        v6.insert(11, wire::pack_repeat(6, 9));
        let v7 = [
            rec(0, false),
            rec(1, false),
            wire::pack_run(1),
            rec(3, true),
            wire::pack_cpu(1),
            wire::pack_run(1),
            rec(5, false),
            rec(6, false),
            rec(7, false),
            wire::pack_run(2),
            wire::pack_repeat(5, 9),
        ];
        let chunk = |kind, words: &[u64], extra| {
            let mut f = header(kind, 2, words.len() as u32, extra);
            f.extend((0..wire::TICKS as u64).flat_map(|t| (100 + t).to_ne_bytes()));
            f.extend(words.iter().flat_map(|w| w.to_ne_bytes()));
            f
        };
        let read = |f: Vec<u8>| {
            let mut r = RawReader::new(&f[..]);
            (r.next_event().unwrap(), r.torn)
        };
        let (old, _) = read(chunk(wire::KIND_ACCESS, &v6, 0));
        let (new, torn) = read(chunk(wire::KIND_PREDICTED, &v7, v6.len() as u64));
        assert!(!torn && old.is_some());
        let Some(RawEvent::Accesses(mut new)) = new else {
            panic!("no accesses")
        };
        assert_eq!(new.records, v7, "kept as it came");
        new.expand().unwrap();
        assert_eq!(Some(RawEvent::Accesses(new)), old);
        let (none, torn) = read(chunk(wire::KIND_PREDICTED, &v7, v6.len() as u64 + 1));
        assert!(torn && none.is_none());
    }

    #[test]
    fn thread_count_skips_bodies_and_takes_the_highest_id() {
        let mut f = header(wire::KIND_THREAD, 0, 0, 1);
        f.extend(header(wire::KIND_ACCESS, 2, 1, 0));
        // Clock ticks that would read as a chunk of thread 9 if the body were not skipped.
        let mut body = header(wire::KIND_THREAD, 9, 0, 0);
        body.resize(wire::TICKS * 8, 0);
        f.extend(body);
        f.extend(wire::pack(0x1000, 3, true, false).to_ne_bytes());
        f.extend(header(wire::KIND_END, 1, 0, 0));
        let mut count = ThreadCount::default();
        count.read_from(&mut std::io::Cursor::new(&f)).unwrap();
        assert_eq!(count.threads(), 3);
        // The header after a body is found where the body ends.
        let mut later = f.clone();
        later.extend(header(wire::KIND_THREAD, 4, 0, 1));
        let mut count = ThreadCount::default();
        count.read_from(&mut std::io::Cursor::new(&later)).unwrap();
        assert_eq!(count.threads(), 5);
        // Fed in pieces of any size, split headers and bodies included, it counts alike.
        for piece in [1, 7, 40, 41, 1000] {
            let mut c = ThreadCount::default();
            f.chunks(piece).for_each(|p| c.feed(p));
            assert_eq!(c.threads(), 3, "pieces of {piece}");
        }
        // A torn header ends the count: nothing after it is taken for a chunk.
        let mut torn = header(wire::KIND_THREAD, 1, 0, 0);
        torn.extend(header(9, 0, 0, 0));
        torn.extend(header(wire::KIND_THREAD, 5, 0, 0));
        let mut c = ThreadCount::default();
        torn.chunks(3).for_each(|p| c.feed(p));
        assert_eq!(c.threads(), 2);
    }

    #[test]
    fn a_truncated_chunk_is_reported_as_torn() {
        let mut f = header(wire::KIND_ACCESS, 1, 4, 0);
        f.extend([0u8; wire::TICKS * 8]);
        f.extend(wire::pack(0x1000, 3, true, false).to_ne_bytes());
        let mut r = RawReader::new(&f[..]);
        assert_eq!(r.next_event().unwrap(), None);
        assert!(r.torn);
    }

    #[test]
    fn an_unknown_kind_or_an_oversized_count_is_torn() {
        for h in [
            header(9, 0, 0, 0),
            header(wire::KIND_ACCESS, 0, wire::CHUNK_RECORDS as u32 + 1, 0),
        ] {
            let mut f = h;
            f.extend([0u8; 1 << 17]);
            let mut r = RawReader::new(&f[..]);
            assert_eq!(r.next_event().unwrap(), None);
            assert!(r.torn);
        }
    }
}
