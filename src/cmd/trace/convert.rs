//! Converting the runtime's raw chunks into the trace after the program ended: decoded
//! chunk by chunk, the scratch file's blocks freed behind the reader, stopped early by a
//! write error (the trace keeps its whole frames) or by a signal meant for tdmap.

use super::raw::{RawEvent, RawReader};
use super::{status_of, Control, Decoder};
use anyhow::{Context, Result};
use std::io::BufReader;
use std::path::Path;
use std::process::ExitStatus;
use tdmap_trace::{Access, Fault, ThreadInfo, TraceStatus, Writer};

/// Counts gathered while converting.
#[derive(Debug, Default)]
pub(super) struct Stats {
    pub(super) threads: u32,
    pub(super) accesses: u64,
    pub(super) faults: u64,
    pub(super) filtered: u64,
}

/// What converting the raw chunks did.
pub(super) struct Converted {
    /// The raw file ended inside a chunk.
    pub(super) torn: bool,
    pub(super) stats: Stats,
    /// The trace's write error that stopped it (the trace keeps its whole frames).
    pub(super) write_err: Option<tdmap_trace::TraceError>,
    /// The signal that stopped it.
    pub(super) stopped: Option<i32>,
}

/// Converts the raw chunks into the trace, until the end or until `stop` names a signal.
/// Frees the raw file's disk blocks behind the reader as it goes, so the trace can grow
/// on a disk the raw file filled.
pub(super) fn convert(
    raw: &Path,
    writer: &Writer,
    ctl: &Control,
    status: &ExitStatus,
    stop: impl Fn() -> Option<i32>,
) -> Result<Converted> {
    // Writable, or fallocate cannot punch holes in it.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(raw)
        .with_context(|| format!("opening the raw trace {}", raw.display()))?;
    let mut rd = RawReader::new(BufReader::with_capacity(1 << 20, file));
    let mut punched = 0u64;
    let mut stats = Stats::default();
    let mut threads: Vec<ThreadInfo> = Vec::new();
    let dec = Decoder::new(ctl.page_size);
    let mut base = None;
    let (mut acc, mut faults) = (Vec::new(), Vec::new());
    // Cut short by a write error or a signal: the writer keeps its whole frames.
    let cut = |stats, write_err, stopped| {
        let _ = writer.finish(TraceStatus::Incomplete);
        Ok(Converted {
            torn: false,
            stats,
            write_err,
            stopped,
        })
    };
    while let Some(ev) = rd.next_event().context("reading the raw trace")? {
        if let Some(sig) = stop() {
            return cut(stats, None, Some(sig));
        }
        punched = punch_behind(rd.get_ref(), punched);
        match ev {
            RawEvent::Thread { id, os_tid, time } => {
                base.get_or_insert(time);
                threads.push(ThreadInfo {
                    id,
                    os_tid: os_tid as i32,
                    cpu: None,
                });
                stats.threads = stats.threads.max(id + 1);
            }
            RawEvent::End { filtered, .. } => stats.filtered += filtered,
            RawEvent::Accesses(mut c) => {
                c.rebase(*base.get_or_insert(c.ticks[0]));
                let split = dec.chunk(&c, &mut acc, &mut faults);
                let thread = c.thread;
                if let Err(e) = append(writer, thread, &acc, split, &faults) {
                    return cut(stats, Some(e), None);
                }
                stats.accesses += acc.len() as u64;
                stats.faults += faults.len() as u64;
                stats.threads = stats.threads.max(thread + 1);
            }
        }
    }
    threads.sort_by_key(|t| t.id);
    let end = writer
        .set_threads(threads)
        .and_then(|_| writer.finish(status_of(ctl, status, rd.torn)));
    Ok(Converted {
        torn: rd.torn,
        stats,
        write_err: end.err(),
        stopped: None,
    })
}

/// Appends one chunk's accesses, with its first-touch faults after the first `split`.
fn append(
    writer: &Writer,
    thread: u32,
    acc: &[Access],
    split: usize,
    faults: &[Fault],
) -> tdmap_trace::Result<()> {
    writer.append_accesses(thread, &acc[..split])?;
    if !faults.is_empty() {
        writer.append_faults(thread, faults)?;
        writer.append_accesses(thread, &acc[split..])?;
    }
    Ok(())
}

/// Bytes of the raw file read between two hole punches: small, since the disk may be
/// full and the trace needs the room (a syscall per 64 KiB costs nothing next to decoding).
const PUNCH_EVERY: u64 = 64 << 10;

/// Frees the raw file's blocks before what `src` still has to hand out, every
/// [`PUNCH_EVERY`] bytes; returns the new punched length.
fn punch_behind(src: &BufReader<std::fs::File>, punched: u64) -> u64 {
    use std::io::Seek;
    let Ok(pos) = src.get_ref().stream_position() else {
        return punched;
    };
    let done = pos.saturating_sub(src.buffer().len() as u64);
    if done < punched + PUNCH_EVERY {
        return punched;
    }
    // Only disk space is at stake: a file system without holes keeps the bytes.
    let _ = tdmap_sys::punch_hole(src.get_ref(), done);
    done
}
