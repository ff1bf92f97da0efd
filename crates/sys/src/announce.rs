//! The pipe through which a preloaded runtime talks to tdmap before the program's main
//! starts: its write end is inherited across exec (its number goes to the program in the
//! environment), its read end stays in tdmap, non-blocking.

use crate::SysError;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A pipe whose write end the next exec'd child inherits.
#[derive(Debug)]
pub struct InheritedPipe {
    read: std::fs::File,
    write: Option<OwnedFd>,
    eof: bool,
}

impl InheritedPipe {
    /// A new pipe: read end non-blocking and close-on-exec, write end inheritable.
    pub fn new() -> Result<InheritedPipe, SysError> {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` is a writable array of two ints, as pipe2 requires.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(SysError::last_os("pipe2"));
        }
        // SAFETY: pipe2 just returned these two descriptors, owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on descriptors we own, with integer arguments only.
        let ok = unsafe {
            libc::fcntl(write.as_raw_fd(), libc::F_SETFD, 0) == 0
                && libc::fcntl(read.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) == 0
        };
        if !ok {
            return Err(SysError::last_os("fcntl"));
        }
        Ok(InheritedPipe {
            read: std::fs::File::from(read),
            write: Some(write),
            eof: false,
        })
    }

    /// The write end's descriptor number, as the child will know it; -1 once closed.
    pub fn write_fd(&self) -> i32 {
        self.write.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    /// Closes tdmap's copy of the write end, once the child holds its own: the reader
    /// then sees the end of the stream when the child closes it (or exits).
    pub fn close_write(&mut self) {
        self.write = None;
    }

    /// Appends whatever has arrived to `out`, without blocking; true once the stream has
    /// ended (every write end closed).
    pub fn read_available(&mut self, out: &mut Vec<u8>) -> Result<bool, SysError> {
        let mut buf = [0u8; 256];
        while !self.eof {
            match self.read.read(&mut buf) {
                Ok(0) => self.eof = true,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) => return Err(SysError::Syscall { call: "read", err }),
            }
        }
        Ok(self.eof)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn bytes_then_the_end_arrive_without_blocking() {
        let mut p = InheritedPipe::new().unwrap();
        let mut w = std::fs::File::from(p.write.take().unwrap());
        let mut got = Vec::new();
        assert!(
            !p.read_available(&mut got).unwrap(),
            "nothing yet, no block"
        );
        w.write_all(b"abc").unwrap();
        assert!(!p.read_available(&mut got).unwrap());
        drop(w);
        assert!(p.read_available(&mut got).unwrap(), "every writer gone");
        assert_eq!(got, b"abc");
    }
}
