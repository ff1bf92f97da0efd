//! Reading a runtime's raw data file while the program appends to it, for `--model-only`
//! (`model.rs`) and for the conversion while the program runs (`early.rs`): at the file's
//! end it waits for more while the program runs, and ends once the program has exited
//! and everything is read. It frees the blocks its owner has consumed, which is what lets
//! a runtime waiting under `--buffer-mib` (`tdmap_rt::io`) go on.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;
use tdmap_sys::GatedChild;

/// Consumed bytes between two hole punches; also punched whenever the reader has caught
/// up, so that a runtime waiting for room gets it however small the buffer.
const PUNCH_EVERY: u64 = 256 << 10;

/// How far a file read from its front has been freed (its length so far, in bytes): the
/// one rule by which the followers here and the spills (`spill.rs`) punch out what they
/// have read, every [`PUNCH_EVERY`] bytes or whenever the reader caught up.
#[derive(Debug, Clone, Copy)]
pub(super) struct Freed(pub(super) u64);

impl Freed {
    /// Frees `f` before byte `upto` when [`PUNCH_EVERY`] bytes came since the last time,
    /// or when `caught_up` and anything did.
    pub(super) fn upto(&mut self, f: &File, upto: u64, caught_up: bool) {
        if upto >= self.0 + PUNCH_EVERY || (caught_up && upto > self.0) {
            // Only disk space is at stake: a file system without holes keeps the bytes.
            let _ = tdmap_sys::punch_hole(f, upto);
            self.0 = upto;
        }
    }
}

/// How long a reader that has caught up with the runtime's files sleeps before it looks
/// again (a follower here, `spill.rs`'s readers). Each look wakes tdmap on a CPU that the
/// program's threads are using: at 0.5 ms, `--model-only` took 1.5-5 % more CPU than at
/// 2 ms on five of six programs of `make bench-trace`, side by side
/// (docs/bench-trace.md). The runtime's files hold what comes meanwhile (at most
/// `--buffer-mib`, whose writers wait for the reader), and a program's end is seen
/// at most this late.
pub(super) const IDLE_WAIT: Duration = Duration::from_millis(2);

/// How often a follower waiting for more asks whether to stop (`Follow::stop_if`).
const ASK_EVERY: Duration = Duration::from_millis(20);

/// A data file followed as it grows.
pub(super) struct Follow<'a> {
    path: PathBuf,
    file: Option<File>,
    child: &'a mut GatedChild,
    /// The program's exit status, once it has exited.
    pub(super) status: Option<ExitStatus>,
    read: u64,
    punched: Freed,
    /// How far the owner has consumed the file (what may be freed); None: all it read.
    consumed: Option<u64>,
    /// The most the file held at once (allocated bytes, sampled at each read).
    pub(super) peak: u64,
    /// Asked while waiting for more: true ends the reading early (`stopped`).
    stop_if: Option<Box<dyn FnMut() -> bool + 'a>>,
    asked: Option<std::time::Instant>,
    /// Reading ended because `stop_if` said so, the program still running.
    pub(super) stopped: bool,
}

impl<'a> Follow<'a> {
    /// Follows `path` (created by the runtime, perhaps not yet) while `child` runs.
    pub(super) fn new(path: &Path, child: &'a mut GatedChild) -> Follow<'a> {
        Follow {
            path: path.to_path_buf(),
            file: None,
            child,
            status: None,
            read: 0,
            punched: Freed(0),
            consumed: None,
            peak: 0,
            stop_if: None,
            asked: None,
            stopped: false,
        }
    }

    /// Also ends the reading (as if at the end, setting `stopped`) when `stop` says so,
    /// asked every [`ASK_EVERY`] while waiting for more: a reader that waits for this
    /// file only must not wait while it has other work (`early.rs`: other processes).
    pub(super) fn stop_if(mut self, stop: impl FnMut() -> bool + 'a) -> Follow<'a> {
        self.stop_if = Some(Box::new(stop));
        self
    }

    /// True when `stop_if` says to stop now (asked at most every [`ASK_EVERY`]).
    fn should_stop(&mut self) -> bool {
        let Some(stop) = &mut self.stop_if else {
            return false;
        };
        if self.asked.is_some_and(|t| t.elapsed() < ASK_EVERY) {
            return false;
        }
        self.asked = Some(std::time::Instant::now());
        self.stopped = stop();
        self.stopped
    }

    /// Lets the blocks before byte `upto` be freed, and only those: the owner may still
    /// need what it has read past it from the file.
    pub(super) fn consumed(&mut self, upto: u64) {
        self.consumed = Some(upto);
    }

    /// Notes whether the program has exited; false while it runs.
    fn exited(&mut self) -> std::io::Result<bool> {
        if self.status.is_none() {
            self.status = self.child.try_wait().map_err(std::io::Error::other)?;
        }
        Ok(self.status.is_some())
    }

    /// Frees what was consumed, every [`PUNCH_EVERY`] bytes or, with `all`, all of it.
    fn punch(&mut self, all: bool) {
        let upto = self.consumed.unwrap_or(self.read).min(self.read);
        if let Some(f) = &self.file {
            self.punched.upto(f, upto, all);
        }
    }
}

/// Tells a runtime waiting for room that raw file `f` is no longer read while the
/// program runs ([`tdmap_wire::raw::MODE_UNFOLLOWED`]), so it stops waiting at once
/// rather than after its time-out.
pub(super) fn release(f: &File) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = f.metadata() {
        let mode = m.permissions().mode() | tdmap_wire::raw::MODE_UNFOLLOWED;
        // If it fails, the runtime stops waiting after its time-out instead.
        let _ = f.set_permissions(std::fs::Permissions::from_mode(mode));
    }
}

/// The offset in the file of the next byte `src` hands out.
pub(super) fn position(src: &BufReader<Follow<'_>>) -> u64 {
    src.get_ref().read - src.buffer().len() as u64
}

impl Read for Follow<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            // Checked before reading, so a read that finds nothing after the exit is
            // the true end: every write of the program happened before it exited.
            let exited = self.exited()?;
            if self.file.is_none() {
                // The runtime creates the file; read+write so that holes can be punched.
                let opened = File::options().read(true).write(true).open(&self.path);
                match opened {
                    Ok(f) => self.file = Some(f),
                    Err(_) if exited => return Ok(0),
                    Err(_) => {}
                }
            }
            if let Some(f) = &mut self.file {
                let n = f.read(buf)?;
                if n > 0 {
                    use std::os::unix::fs::MetadataExt;
                    let held = f.metadata().map_or(0, |m| m.blocks() * 512);
                    self.peak = self.peak.max(held);
                    self.read += n as u64;
                    self.punch(false);
                    return Ok(n);
                }
                self.punch(true);
                if exited {
                    return Ok(0);
                }
            }
            if self.should_stop() {
                return Ok(0);
            }
            std::thread::sleep(IDLE_WAIT);
        }
    }
}
