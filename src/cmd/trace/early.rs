//! Converting the program's raw stream while it runs, so that the scratch file stays
//! within the runtime's buffer (`--buffer-mib`) instead of growing to the whole run
//! (issue 17 item 1): this process follows process 0's data file as it grows, converts
//! each batch of chunks into the trace and frees the blocks behind it; the runtime waits
//! when it gets too far ahead.
//!
//! Only while process 0 runs alone with no `MAP_SHARED` mapping: a forked child, an
//! exec'd program or a shared mapping makes the trace key pages by backing object, which
//! needs every process's snapshots (`keys.rs`), and merges the processes' streams by time
//! (`convert.rs`). So before converting each batch this checks that no other process left
//! files and that `/proc/PID/maps` holds no shared mapping; otherwise it stops, and the
//! rest is converted after the exit as before (the runtime, no longer consumed, stops
//! waiting after 2 s). Process 0's private pages are keyed by their plain addresses
//! either way, so what was converted early stays valid.

use super::convert::Conv;
use super::raw::{RawEvent, RawReader};
use super::{procs, Control, Scratch};
use anyhow::{Context, Result};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;
use tdmap_sys::GatedChild;
use tdmap_trace::{ProcessInfo, TraceStatus, Writer};

/// Chunks read before each check and conversion: 4 MiB of raw records at most.
const BATCH: usize = 64;
/// Converted bytes between two hole punches.
const PUNCH_EVERY: u64 = 1 << 20;

/// What was converted while the program ran.
pub(super) struct Early {
    /// The conversion's state, to go on with.
    pub(super) conv: Conv,
    /// Bytes of process 0's data file converted (the rest starts there).
    pub(super) from: u64,
    /// The program's exit status, if it ended while being followed.
    pub(super) status: Option<ExitStatus>,
}

/// Follows process 0's data file and converts it into `writer` while the program runs
/// alone (see the module doc); returns when the program has exited or that stops.
pub(super) fn convert_while_alone(
    scratch: &Scratch,
    child: &mut GatedChild,
    writer: &Writer,
) -> Result<Early> {
    let mut conv = Conv::new(tdmap_sys::page_size() as u64);
    let tail = Tail {
        path: scratch.data.clone(),
        file: None,
        child,
        status: None,
        read: 0,
    };
    let mut rd = RawReader::new(BufReader::with_capacity(1 << 20, tail));
    let alone = ProcessInfo {
        index: 0,
        pid: 0,
        parent: None,
        first_task: 0,
        tasks: u32::MAX,
        status: TraceStatus::Incomplete,
    };
    let (mut from, mut punched) = (0u64, 0u64);
    loop {
        let mut batch: Vec<(RawEvent, u64)> = Vec::with_capacity(BATCH);
        while batch.len() < BATCH {
            let Some(ev) = rd.next_event().context("reading the raw trace")? else {
                break;
            };
            let src = rd.get_ref();
            batch.push((ev, src.get_ref().read - src.buffer().len() as u64));
        }
        if batch.is_empty() || !alone_and_private(scratch) {
            break;
        }
        for (ev, end) in batch {
            // A write error stops here; the conversion after the exit reports it.
            if conv.event(ev, &alone, None, writer).is_err() {
                return Ok(done(conv, from, rd));
            }
            from = end;
        }
        if from - punched >= PUNCH_EVERY {
            if let Some(f) = &rd.get_ref().get_ref().file {
                // Only disk space is at stake: a file system without holes keeps the bytes.
                let _ = tdmap_sys::punch_hole(f, from);
            }
            punched = from;
        }
    }
    Ok(done(conv, from, rd))
}

fn done(conv: Conv, from: u64, rd: RawReader<BufReader<Tail<'_>>>) -> Early {
    Early {
        conv,
        from,
        status: rd.get_ref().get_ref().status,
    }
}

/// True while process 0 is the only traced process and maps nothing shared.
fn alone_and_private(scratch: &Scratch) -> bool {
    let Some(pid) = Control::read(&scratch.ctl).pid else {
        return false;
    };
    procs::no_children(scratch)
        && std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|m| !has_shared(&m))
}

/// Whether a `/proc/PID/maps` text lists a shared mapping (permissions `rw-s`).
fn has_shared(maps: &str) -> bool {
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .any(|perms| perms.as_bytes().get(3) == Some(&b's'))
}

/// Process 0's data file read as it grows: at its end, waits for more while the program
/// runs, and ends once the program has exited and everything is read.
struct Tail<'a> {
    path: PathBuf,
    file: Option<File>,
    child: &'a mut GatedChild,
    status: Option<ExitStatus>,
    read: u64,
}

impl Read for Tail<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            // Checked before reading, so a read that finds nothing after the exit is
            // the true end: every write of the program happened before it exited.
            if self.status.is_none() {
                self.status = self.child.try_wait().map_err(std::io::Error::other)?;
            }
            let exited = self.status.is_some();
            if self.file.is_none() {
                // Read and write, so that holes can be punched.
                match File::options().read(true).write(true).open(&self.path) {
                    Ok(f) => self.file = Some(f),
                    Err(_) if exited => return Ok(0),
                    Err(_) => {}
                }
            }
            if let Some(f) = &mut self.file {
                let n = f.read(buf)?;
                if n > 0 {
                    self.read += n as u64;
                    return Ok(n);
                }
                if exited {
                    return Ok(0);
                }
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_mapping_is_told_by_its_permissions() {
        let private =
            "7f00-7f10 rw-p 00000000 00:00 0\n7f10-7f20 r-xp 00001000 08:01 42 /lib/x.so\n";
        assert!(!has_shared(private));
        let shm = format!("{private}7f20-7f30 rw-s 00000000 00:05 7 /dev/shm/x\n");
        assert!(has_shared(&shm));
        assert!(!has_shared(""));
    }
}
