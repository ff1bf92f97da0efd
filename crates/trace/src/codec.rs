//! The byte layout of the format: header, frame headers, payloads and trailer.
//!
//! All integers are little-endian. The header's status (byte 12) and thread count
//! (bytes 16..20) stay outside its CRC so that the writer can patch them in place while
//! the program runs; readers check them by value instead.

use crate::columns;
use crate::error::{Result, TraceError};
use crate::symbols;
use crate::types::{Header, ProcessInfo, ThreadInfo, TraceStatus};

/// The first 8 bytes of every trace.
pub const MAGIC: &[u8; 8] = b"TDMAPTRC";
/// The last 8 bytes of a finished trace.
pub const TRAILER_MAGIC: &[u8; 8] = b"TDMAPEND";
/// Bytes of the trailer: threads-frame offset then [`TRAILER_MAGIC`].
pub const TRAILER_LEN: usize = 16;
/// Bytes before the header's variable body.
pub const HEADER_FIXED: usize = 32;
/// Bytes of a frame header.
pub const FRAME_HEADER: usize = 24;
/// Byte offset of the status in the header.
pub const STATUS_AT: u64 = 12;
/// Byte offset of the thread count in the header.
pub const THREADS_AT: u64 = 16;
/// Most events one frame may hold; larger batches are split.
pub const MAX_FRAME_EVENTS: u32 = 1 << 20;
/// Largest header body accepted, so a corrupt length cannot ask for gigabytes.
const MAX_HEADER_BODY: u32 = 1 << 20;

/// Raw bytes per access up to V4: address, time, size, write flag (V5: `columns`).
pub const ACCESS_BYTES: usize = 18;
/// Raw bytes per fault: address, time, cpu, node.
pub const FAULT_BYTES: usize = 24;
/// Raw bytes per thread record: id, os tid, cpu (u32::MAX for unknown).
pub const THREAD_BYTES: usize = 12;
/// Raw bytes per process record: index, pid, parent (u32::MAX for none), first task,
/// tasks, status byte and 3 bytes of padding.
pub const PROCESS_BYTES: usize = 24;
/// Raw bytes per repeat record (V4): index in the next accesses frame, extra reads.
pub const REPEAT_BYTES: usize = 8;
/// Raw bytes of the end frame: total accesses and total faults.
pub const END_BYTES: usize = 16;

/// What a frame holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Accesses of one thread.
    Accesses = 1,
    /// Faults of one thread.
    Faults = 2,
    /// Per-thread metadata.
    Threads = 3,
    /// Totals, written last.
    End = 4,
    /// The process table (V3), right after the threads frame.
    Processes = 5,
    /// Collapsed reads (V4): for the accesses frame of the same thread that follows it,
    /// which of its reads stand for a run of reads of their line and how many more.
    Repeats = 6,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Accesses),
            2 => Some(Kind::Faults),
            3 => Some(Kind::Threads),
            4 => Some(Kind::End),
            5 => Some(Kind::Processes),
            6 => Some(Kind::Repeats),
            _ => None,
        }
    }

    /// Raw bytes of the first of a frame's two compressed streams: the address column of
    /// event frames (which a reader that wants addresses only decompresses alone), else
    /// all. Not for V5 and V6 accesses, whose streams vary in length.
    pub fn first_stream(self, count: u32) -> usize {
        match self {
            Kind::Accesses | Kind::Faults => 8 * count as usize,
            _ => count as usize * self.record_bytes(),
        }
    }

    /// Raw bytes per record of this kind (the end frame has one record).
    pub fn record_bytes(self) -> usize {
        match self {
            Kind::Accesses => ACCESS_BYTES,
            Kind::Faults => FAULT_BYTES,
            Kind::Threads => THREAD_BYTES,
            Kind::End => END_BYTES,
            Kind::Processes => PROCESS_BYTES,
            Kind::Repeats => REPEAT_BYTES,
        }
    }
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy)]
pub struct FrameHead {
    /// What the frame holds.
    pub kind: Kind,
    /// Column codings (`chunk::SHUFFLED_*`); always 0 in V1.
    pub flags: u8,
    /// The thread of an accesses or faults frame.
    pub thread: u32,
    /// Records in the frame.
    pub count: u32,
    /// Bytes of the decompressed payload (both streams).
    pub raw_len: u32,
    /// Bytes of the compressed payload.
    pub comp_len: u32,
    /// CRC-32 of the frame header's first 20 bytes and the payload.
    pub crc: u32,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Encodes a header (with its CRC) into bytes.
pub fn encode_header(h: &Header) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&(h.program.len() as u32).to_le_bytes());
    for s in h.program.iter().chain(std::iter::once(&h.machine)) {
        body.extend_from_slice(&(s.len() as u32).to_le_bytes());
        body.extend_from_slice(s.as_bytes());
    }
    let mut out = Vec::with_capacity(HEADER_FIXED + body.len() + 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&h.version.to_le_bytes());
    out.extend_from_slice(&[h.status.to_byte(), 0, 0, 0]);
    out.extend_from_slice(&h.threads.to_le_bytes());
    out.extend_from_slice(&h.page_size.to_le_bytes());
    out.extend_from_slice(&h.line_size.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    let crc = crc32fast::hash(&out[20..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks the fixed part of a header and returns the length of its body.
pub fn decode_header_fixed(b: &[u8; HEADER_FIXED]) -> Result<u32> {
    if &b[..8] != MAGIC {
        return Err(TraceError::NotATrace);
    }
    let version = u32_at(b, 8);
    if crate::TraceVersion::from_u32(version).is_none() {
        return Err(TraceError::Version {
            found: version,
            supported: crate::VERSION,
        });
    }
    let body = u32_at(b, 28);
    if body > MAX_HEADER_BODY {
        return Err(corrupt(
            28,
            format!("header body of {body} bytes is too long"),
        ));
    }
    Ok(body)
}

/// Decodes a whole header: `fixed` then `rest` (the body and the CRC).
pub fn decode_header(fixed: &[u8; HEADER_FIXED], rest: &[u8]) -> Result<Header> {
    let body = &rest[..rest.len() - 4];
    let mut h = crc32fast::Hasher::new();
    h.update(&fixed[20..]);
    h.update(body);
    if h.finalize() != u32_at(rest, rest.len() - 4) {
        return Err(corrupt(0, "header checksum mismatch".into()));
    }
    let status = TraceStatus::from_byte(fixed[12])
        .ok_or_else(|| corrupt(STATUS_AT, format!("unknown status byte {}", fixed[12])))?;
    let mut strings = Vec::new();
    let mut at = 4usize;
    let count = u32_at(body, 0) as usize;
    for _ in 0..=count {
        let len = body
            .get(at..at + 4)
            .map(|_| u32_at(body, at) as usize)
            .ok_or_else(|| corrupt(HEADER_FIXED as u64, "header strings overrun".into()))?;
        let bytes = body
            .get(at + 4..at + 4 + len)
            .ok_or_else(|| corrupt(HEADER_FIXED as u64, "header strings overrun".into()))?;
        let s = std::str::from_utf8(bytes)
            .map_err(|_| corrupt((HEADER_FIXED + at) as u64, "header string not UTF-8".into()))?;
        strings.push(s.to_string());
        at += 4 + len;
    }
    let machine = strings.pop().unwrap_or_default();
    Ok(Header {
        version: u32_at(fixed, 8),
        page_size: u32_at(fixed, 20),
        line_size: u32_at(fixed, 24),
        threads: u32_at(fixed, 16),
        program: strings,
        machine,
        status,
    })
}

/// Encodes a frame header whose CRC covers `payload`, which decompresses to `raw` bytes.
pub fn encode_frame_head(
    kind: Kind,
    thread: u32,
    count: u32,
    flags: u8,
    raw: usize,
    payload: &[u8],
) -> [u8; 24] {
    let mut out = [0u8; FRAME_HEADER];
    out[0] = kind as u8;
    out[1] = flags;
    out[4..8].copy_from_slice(&thread.to_le_bytes());
    out[8..12].copy_from_slice(&count.to_le_bytes());
    out[12..16].copy_from_slice(&(raw as u32).to_le_bytes());
    out[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&out[..20]);
    h.update(payload);
    out[20..24].copy_from_slice(&h.finalize().to_le_bytes());
    out
}

/// True when accesses frames of a version-`version` file have streams of varying
/// length: V5's varint columns or V6's symbols.
pub fn varint_accesses(version: u32) -> bool {
    version >= crate::TraceVersion::V5 as u32
}

/// True when accesses frames of a version-`version` file hold V6's predictor symbols.
pub fn symbol_accesses(version: u32) -> bool {
    version >= crate::TraceVersion::V6 as u32
}

/// Whether `raw` bytes are a possible raw length for `count` records of `kind` in a
/// version-`version` file: fixed per record, except V5's varint access columns.
fn raw_len_ok(kind: Kind, version: u32, count: u32, raw: u32) -> bool {
    let (n, raw) = (count as usize, raw as usize);
    if kind == Kind::Accesses && symbol_accesses(version) {
        // A symbol and a block at least; at most a literal and a block per access.
        let most = n * symbols::MAX_ACCESS_BYTES + symbols::MAX_STATE_BYTES;
        (n == 0 || raw >= 2) && raw <= most
    } else if kind == Kind::Accesses && varint_accesses(version) {
        (n * columns::MIN_ACCESS_BYTES..=n * columns::MAX_ACCESS_BYTES).contains(&raw)
    } else {
        raw == n * kind.record_bytes()
    }
}

/// Decodes and sanity-checks a frame header found at `offset` in a version-`version` file.
pub fn decode_frame_head(b: &[u8; FRAME_HEADER], offset: u64, version: u32) -> Result<FrameHead> {
    let kind = Kind::from_byte(b[0])
        .ok_or_else(|| corrupt(offset, format!("unknown frame kind {}", b[0])))?;
    let count = u32_at(b, 8);
    let raw = u32_at(b, 12);
    let limit = if kind == Kind::End {
        1
    } else {
        MAX_FRAME_EVENTS
    };
    if count > limit || !raw_len_ok(kind, version, count, raw) {
        return Err(corrupt(
            offset,
            format!("frame lengths do not match ({count} records, {raw} bytes)"),
        ));
    }
    // V5 access columns are never shuffled: no flag is defined for them; V6 accesses
    // say where their predictor starts (one of the two).
    let known = match kind {
        Kind::Accesses if symbol_accesses(version) => {
            if b[1] == symbols::FROM_STATE | symbols::CONTINUES {
                return Err(corrupt(
                    offset,
                    "frame flags name two predictor starts".into(),
                ));
            }
            symbols::FROM_STATE | symbols::CONTINUES
        }
        Kind::Accesses if varint_accesses(version) => 0,
        _ => 3,
    };
    if b[1] & !known != 0 {
        return Err(corrupt(offset, format!("unknown frame flags {:#x}", b[1])));
    }
    Ok(FrameHead {
        kind,
        flags: b[1],
        thread: u32_at(b, 4),
        count,
        raw_len: raw,
        comp_len: u32_at(b, 16),
        crc: u32_at(b, 20),
    })
}

/// Checks a frame's CRC against its header bytes and payload.
pub fn frame_crc_ok(head: &[u8; FRAME_HEADER], payload: &[u8], want: u32) -> bool {
    let mut h = crc32fast::Hasher::new();
    h.update(&head[..20]);
    h.update(payload);
    h.finalize() == want
}

/// Encodes thread records.
pub fn encode_threads(threads: &[ThreadInfo]) -> Vec<u8> {
    let mut out = Vec::with_capacity(threads.len() * THREAD_BYTES);
    for t in threads {
        out.extend_from_slice(&t.id.to_le_bytes());
        out.extend_from_slice(&t.os_tid.to_le_bytes());
        out.extend_from_slice(&t.cpu.unwrap_or(u32::MAX).to_le_bytes());
    }
    out
}

/// Decodes thread records.
pub fn decode_threads(raw: &[u8]) -> Vec<ThreadInfo> {
    raw.chunks_exact(THREAD_BYTES)
        .map(|r| ThreadInfo {
            id: u32_at(r, 0),
            os_tid: u32_at(r, 4) as i32,
            cpu: Some(u32_at(r, 8)).filter(|&c| c != u32::MAX),
        })
        .collect()
}

/// Encodes process records.
pub fn encode_processes(procs: &[ProcessInfo]) -> Vec<u8> {
    let mut out = Vec::with_capacity(procs.len() * PROCESS_BYTES);
    for p in procs {
        for v in [
            p.index,
            p.pid as u32,
            p.parent.unwrap_or(u32::MAX),
            p.first_task,
            p.tasks,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&[p.status.to_byte(), 0, 0, 0]);
    }
    out
}

/// Decodes process records; None when a status byte is unknown.
pub fn decode_processes(raw: &[u8]) -> Option<Vec<ProcessInfo>> {
    raw.chunks_exact(PROCESS_BYTES)
        .map(|r| {
            Some(ProcessInfo {
                index: u32_at(r, 0),
                pid: u32_at(r, 4) as i32,
                parent: Some(u32_at(r, 8)).filter(|&p| p != u32::MAX),
                first_task: u32_at(r, 12),
                tasks: u32_at(r, 16),
                status: TraceStatus::from_byte(r[20])?,
            })
        })
        .collect()
}

/// A corrupt-file error at `offset`.
pub fn corrupt(offset: u64, what: String) -> TraceError {
    TraceError::Corrupt { offset, what }
}
