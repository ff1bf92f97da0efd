//! Which mappings the injector write-protects, read from `/proc/self/maps` without
//! allocating (the handler thread must not call `malloc`: the heap may be protected).
//!
//! Eligible: private, writable, anonymous mappings, the heap, the main stack and named
//! anonymous mappings; never files, shared memory, `[vvar]`, `[vdso]` or the like.

pub use tdmap_wire::maps::{parse_line, Line};

/// Whether the injector may protect this mapping: private anonymous read-write memory.
pub fn eligible(l: &Line<'_>) -> bool {
    l.perms == b"rw-p"
        && l.inode == 0
        && (l.path.is_empty()
            || l.path == b"[heap]"
            || l.path == b"[stack]"
            || l.path.starts_with(b"[anon:"))
}

/// Calls `f` with every eligible mapping of this process, reading `/proc/self/maps`
/// through `buf`; does nothing if the file cannot be opened.
pub fn for_each_eligible(buf: &mut [u8], mut f: impl FnMut(Line<'_>)) {
    for_each_own_line(buf, |l| {
        if let Some(line) = parse_line(l).filter(eligible) {
            f(line);
        }
    });
}

/// Calls `f` with every line of this process's `/proc/self/maps`, read through `buf`
/// without allocating; false (and no call) if the file cannot be opened.
pub fn for_each_own_line(buf: &mut [u8], f: impl FnMut(&[u8])) -> bool {
    // SAFETY: a NUL-terminated path; open allocates nothing in this process.
    let fd = unsafe {
        libc::open(
            c"/proc/self/maps".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return false;
    }
    let _ = for_each_line(fd, buf, f);
    // SAFETY: the descriptor opened above.
    unsafe { libc::close(fd) };
    true
}

/// Calls `f` with every complete line of the file open at `fd`, read through `buf`
/// (longer lines than `buf` are skipped); returns the errno of a failed read.
pub fn for_each_line(fd: i32, buf: &mut [u8], mut f: impl FnMut(&[u8])) -> Result<(), i32> {
    let mut kept = 0;
    loop {
        if kept == buf.len() {
            kept = 0; // a line longer than the buffer: drop it
        }
        let free = &mut buf[kept..];
        // SAFETY: `free` is a live writable slice of `free.len()` bytes.
        let n = unsafe { libc::read(fd, free.as_mut_ptr().cast(), free.len()) };
        if n < 0 {
            // SAFETY: __errno_location returns this thread's errno slot.
            let e = unsafe { *libc::__errno_location() };
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Ok(());
        }
        let filled = kept + n as usize;
        let mut from = 0;
        while let Some(i) = buf[from..filled].iter().position(|&c| c == b'\n') {
            f(&buf[from..from + i]);
            from += i + 1;
        }
        buf.copy_within(from..filled, 0);
        kept = filled - from;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_only_private_anonymous_memory_is_eligible() {
        let heap =
            b"55d0c2a4e000-55d0c2a6f000 rw-p 00000000 00:00 0                          [heap]";
        let l = parse_line(heap).unwrap();
        assert_eq!((l.start, l.end), (0x55d0_c2a4_e000, 0x55d0_c2a6_f000));
        assert_eq!(
            (l.perms, l.inode, l.path),
            (&b"rw-p"[..], 0, &b"[heap]"[..])
        );
        assert!(eligible(&l));
        let anon = parse_line(b"7f0ef33f9000-7f0ef34f9000 rw-p 00000000 00:00 0 ").unwrap();
        assert!(eligible(&anon) && anon.path.is_empty());
        for no in [
            &b"7f00-7f10 rw-p 00001000 08:01 1234 /usr/lib/libc.so.6"[..],
            b"7f00-7f10 r--p 00000000 00:00 0 ",
            b"7f00-7f10 rw-s 00000000 00:01 77 /dev/zero (deleted)",
            b"7ffd-7ffe r--p 00000000 00:00 0 [vvar]",
            b"7f00-7f10 ---p 00000000 00:00 0 ",
        ] {
            assert!(
                !eligible(&parse_line(no).unwrap()),
                "{:?}",
                String::from_utf8_lossy(no)
            );
        }
        assert_eq!(parse_line(b"garbage"), None);
        assert_eq!(parse_line(b"7f00-zz rw-p 0 00:00 0"), None);
    }

    #[test]
    fn lines_split_across_reads_are_put_back_together() {
        let path = std::env::temp_dir().join(format!("tdmap-maps-{}", std::process::id()));
        let text = "1000-2000 rw-p 00000000 00:00 0 [heap]\n3000-4000 rw-p 00000000 00:00 0 \n";
        std::fs::write(&path, text).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let mut buf = [0u8; 48]; // smaller than the two lines together
        let mut got = Vec::new();
        use std::os::fd::AsRawFd;
        for_each_line(file.as_raw_fd(), &mut buf, |l| {
            got.push(parse_line(l).unwrap().start)
        })
        .unwrap();
        assert_eq!(got, [0x1000, 0x3000]);
        std::fs::remove_file(&path).unwrap();
    }
}
