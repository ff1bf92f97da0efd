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
//! files and that `/proc/PID/maps` holds no shared mapping; otherwise it stops, every
//! process's stream is spilled while the program runs (`spill.rs`), and the rest is
//! converted after the exit. Process 0's private pages are keyed by their plain
//! addresses either way, so what was converted early stays valid; the events read but
//! not converted go on to the conversion after the exit in memory, so that every chunk
//! read can be freed at once and a writer never waits on a batch being gathered.

use super::convert::Conv;
use super::follow::{position, Follow};
use super::raw::{RawEvent, RawReader};
use super::{procs, Control, Scratch};
use anyhow::{Context, Result};
use std::cell::Cell;
use std::io::BufReader;
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, SystemTime};
use tdmap_sys::GatedChild;
use tdmap_trace::{ProcessInfo, TraceStatus, Writer};

/// Chunks read before each check and conversion: 4 MiB of raw records at most.
const BATCH: usize = 64;

/// What was converted while the program ran.
pub(super) struct Early {
    /// The conversion's state, to go on with.
    pub(super) conv: Conv,
    /// Bytes of process 0's data file read (the rest starts there).
    pub(super) from: u64,
    /// Events read before `from` but not converted (their blocks may be freed): the
    /// rest starts with them.
    pub(super) pending: Vec<RawEvent>,
    /// The program's exit status, if it ended while being followed.
    pub(super) status: Option<ExitStatus>,
}

impl Early {
    /// Nothing converted yet (`--count-only`).
    pub(super) fn none() -> Early {
        Early {
            conv: Conv::new(tdmap_sys::page_size() as u64),
            from: 0,
            pending: Vec::new(),
            status: None,
        }
    }

    /// How many threads of process 0 the converted and pending parts name.
    pub(super) fn threads(&self) -> u32 {
        self.pending
            .iter()
            .filter_map(|ev| match ev {
                RawEvent::Thread { id, .. } => Some(id + 1),
                RawEvent::Accesses(c) => Some(c.thread + 1),
                RawEvent::Counted { thread, .. } => Some(thread + 1),
                RawEvent::End { .. } => None,
            })
            .fold(self.conv.stats.threads, u32::max)
    }
}

/// Follows process 0's data file and converts it into `writer` while the program runs
/// alone (see the module doc); returns when the program has exited or that stops.
pub(super) fn convert_while_alone(
    scratch: &Scratch,
    child: &mut GatedChild,
    writer: &Writer,
) -> Result<Early> {
    let mut early = Early::none();
    // One cache of the folder's listing, for the waits and the batches alike.
    let quiet = Quiet::default();
    // Waiting for process 0's next chunk must not hold up the others (a parent waiting
    // for its children): once it is not alone, the reading stops and spilling starts.
    let mut follow = Follow::new(&scratch.data, child).stop_if(|| not_alone(scratch, &quiet));
    // Nothing is freed before the first event is converted: the follower would free all
    // it read ahead into the read buffer, which the conversion after the exit reads
    // again from `from` once the early one stops (the replays of bench/trace_same.sh,
    // whose stream is written at once, read holes there: a torn, Incomplete trace).
    follow.consumed(0);
    let mut rd = RawReader::new(BufReader::with_capacity(1 << 20, follow));
    let alone = ProcessInfo {
        index: 0,
        pid: 0,
        parent: None,
        first_task: 0,
        tasks: u32::MAX,
        status: TraceStatus::Incomplete,
    };
    loop {
        while early.pending.len() < BATCH {
            let Some(ev) = rd.next_event().context("reading the raw trace")? else {
                break;
            };
            early.pending.push(ev);
            // In memory now: its blocks can go, so a runtime waiting for room (however
            // small --buffer-mib is) is never left waiting on this batch.
            early.from = position(rd.get_ref());
            rd.get_mut().get_mut().consumed(early.from);
        }
        // Checked after reading: every event of the batch was written before this. A
        // stopped follower may have read part of an event: the rest starts at `from`.
        let stopped = rd.get_ref().get_ref().stopped;
        if early.pending.is_empty() || stopped || !alone_and_private(scratch, &quiet) {
            break;
        }
        let mut batch = std::mem::take(&mut early.pending).into_iter();
        // A write error stops here; the conversion after the exit meets it again with
        // the events left and reports it.
        if batch.any(|ev| early.conv.event(ev, &alone, None, writer).is_err()) {
            early.pending = batch.collect();
            break;
        }
    }
    // Still running: the rest of every process's stream goes to spills (`spill.rs`),
    // which go on freeing process 0's file from `early.from`.
    early.status = rd.get_ref().get_ref().status;
    Ok(early)
}

/// True once another process has left files or process 0 maps something shared (or its
/// maps cannot be read: it is gone, or not this run's); false before it said hello.
fn not_alone(scratch: &Scratch, quiet: &Quiet) -> bool {
    let pid = Control::read(&scratch.ctl).pid;
    pid.is_some_and(|pid| !alone_with(scratch, quiet, pid))
}

/// True while process 0 is the only traced process and maps nothing shared.
fn alone_and_private(scratch: &Scratch, quiet: &Quiet) -> bool {
    let pid = Control::read(&scratch.ctl).pid;
    pid.is_some_and(|pid| alone_with(scratch, quiet, pid))
}

/// True while process 0, `pid`, is the only traced process and maps nothing shared (the
/// control file read once by the caller).
fn alone_with(scratch: &Scratch, quiet: &Quiet, pid: u32) -> bool {
    quiet.no_children(scratch)
        && std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|m| !has_shared(&m))
}

/// How long a folder must have stood unchanged before a listing of it is trusted to
/// hold until its modification time changes: well over a file system's clock tick (a
/// jiffy, 1-10 ms), so that a file created after the listing cannot keep the time the
/// folder had; short, since the run itself just changed the folder.
const SETTLED: Duration = Duration::from_millis(100);

/// The scratch folder's modification time when a listing found no other process's files
/// in it, if the folder had stood unchanged for [`SETTLED`] then.
#[derive(Default)]
struct Quiet(Cell<Option<SystemTime>>);

impl Quiet {
    /// True while no process other than process 0 has left a control file; lists the
    /// folder again only when it changed, since listing a large one (`/tmp`) before
    /// every batch was a measurable part of the tracer's time.
    fn no_children(&self, scratch: &Scratch) -> bool {
        let dir = match scratch.ctl.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let m = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
        if m.is_some() && m == self.0.get() {
            return true;
        }
        let none = procs::no_children(scratch);
        let settled = m.is_some_and(|t| t.elapsed().is_ok_and(|d| d > SETTLED));
        self.0.set(m.filter(|_| none && settled));
        none
    }
}

/// Whether a `/proc/PID/maps` text lists a shared mapping (permissions `rw-s`).
fn has_shared(maps: &str) -> bool {
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .any(|perms| perms.as_bytes().get(3) == Some(&b's'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The folder's listing is kept while it stands unchanged, and a child's control file
    /// created later is still seen: creating it changes the folder's time.
    #[test]
    fn a_child_appearing_after_a_kept_listing_is_seen() {
        let dir = std::env::temp_dir().join(format!("tdmap-quiet-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let scratch = Scratch {
            data: dir.join("raw"),
            ctl: dir.join("ctl"),
        };
        std::fs::write(&scratch.ctl, b"").unwrap();
        let q = Quiet::default();
        assert!(q.no_children(&scratch));
        assert!(
            q.0.get().is_none(),
            "a folder changed just now is listed again"
        );
        // As if the folder had stood unchanged for a while.
        let old = SystemTime::now() - 10 * SETTLED;
        std::fs::File::open(&dir)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert!(q.no_children(&scratch));
        assert!(q.0.get().is_some(), "the listing is kept");
        assert!(q.no_children(&scratch));
        std::fs::write(dir.join("ctl.4242"), b"").unwrap();
        assert!(!q.no_children(&scratch));
        drop(scratch);
        let _ = std::fs::remove_dir_all(&dir);
    }

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
