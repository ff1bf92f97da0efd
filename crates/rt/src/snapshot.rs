//! Snapshots of this process's `MAP_SHARED` mappings, appended to its maps file
//! (`tdmap_wire::raw::MAPS_SUFFIX`): `tdmap trace` keys the pages of a multi-process
//! trace by backing object from them (`tdmap_wire::pagekey`). Taken when a process forks
//! (in the parent and in the child) and when a process ends (exit, `_exit`, exec, a
//! fatal signal), without allocating: the child of a multi-threaded program and signal
//! handlers must not call `malloc`.

use crate::inject::maps::{for_each_own_line, parse_line};
use crate::io;

/// Appends the shared lines of `/proc/self/maps`, then an empty line ending the snapshot.
pub fn maps() {
    if io::MAPS_FD.load(std::sync::atomic::Ordering::Relaxed) < 0 {
        return;
    }
    crate::state::quiet(|| {
        let mut buf = [0u8; 4096];
        let mut out = Out {
            bytes: [0u8; 4096],
            len: 0,
        };
        let opened = for_each_own_line(&mut buf, |l| {
            if parse_line(l).is_some_and(|m| m.shared()) {
                out.put(l);
            }
        });
        if !opened {
            return;
        }
        out.put(b"");
        io::write_maps(&out.bytes[..out.len]);
    });
}

/// Lines gathered into whole writes.
struct Out {
    bytes: [u8; 4096],
    len: usize,
}

impl Out {
    /// Appends `line` and a newline, writing out what was gathered when it is full.
    fn put(&mut self, line: &[u8]) {
        if self.len + line.len() + 1 > self.bytes.len() {
            io::write_maps(&self.bytes[..self.len]);
            self.len = 0;
        }
        if line.len() < self.bytes.len() {
            self.bytes[self.len..self.len + line.len()].copy_from_slice(line);
            self.bytes[self.len + line.len()] = b'\n';
            self.len += line.len() + 1;
        }
    }
}
