//! One line of `/proc/PID/maps`, parsed without allocating (the runtime parses its own
//! maps inside a program whose heap may be write-protected). Pure: the callers read the
//! file (tdmap-sys through its `FsRoot`, the runtime with raw `read`s).
//!
//! Line format (proc(5)): `start-end perms offset major:minor inode [path]`, hex except
//! the inode.

/// The fields of one `/proc/PID/maps` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// "rw-p" and the like: the fourth byte is `s` for a shared mapping.
    pub perms: &'a [u8],
    /// Offset into the backing object of `start`, in bytes.
    pub offset: u64,
    /// The backing object's device, `major << 32 | minor` (0 for plain anonymous memory).
    pub dev: u64,
    /// Inode of the backing object, 0 for private anonymous memory.
    pub inode: u64,
    /// The path or pseudo-name, empty for plain anonymous memory.
    pub path: &'a [u8],
}

impl Line<'_> {
    /// Whether the mapping is `MAP_SHARED`: its pages belong to the backing object (a
    /// file, `/dev/shm`, SysV shm, a memfd or shared anonymous memory), so every process
    /// that maps them sees the same physical pages.
    pub fn shared(&self) -> bool {
        self.perms.get(3) == Some(&b's')
    }

    /// The offset in the backing object of address `addr` (inside this mapping).
    pub fn object_offset(&self, addr: u64) -> u64 {
        self.offset + (addr - self.start)
    }
}

fn hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    s.iter().try_fold(0u64, |v, &c| {
        let d = (c as char).to_digit(16)?;
        Some(v << 4 | u64::from(d))
    })
}

fn dec(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    s.iter().try_fold(0u64, |v, &c| {
        let d = (c as char).to_digit(10)?;
        v.checked_mul(10)?.checked_add(u64::from(d))
    })
}

/// Splits off the next space-separated field.
fn field(s: &[u8]) -> (&[u8], &[u8]) {
    let s = s.trim_ascii_start();
    match s.iter().position(|&c| c == b' ') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, &[]),
    }
}

/// Parses one line (without its newline); None if it is not a maps line.
pub fn parse_line(l: &[u8]) -> Option<Line<'_>> {
    let (range, rest) = field(l);
    let dash = range.iter().position(|&c| c == b'-')?;
    let (start, end) = (hex(&range[..dash])?, hex(&range[dash + 1..])?);
    if end < start {
        return None;
    }
    let (perms, rest) = field(rest);
    if perms.len() != 4 {
        return None;
    }
    let (offset, rest) = field(rest);
    let (dev, rest) = field(rest);
    let colon = dev.iter().position(|&c| c == b':')?;
    let (major, minor) = (hex(&dev[..colon])?, hex(&dev[colon + 1..])?);
    let (inode, rest) = field(rest);
    Some(Line {
        start,
        end,
        perms,
        offset: hex(offset)?,
        dev: major << 32 | minor,
        inode: dec(inode)?,
        path: rest.trim_ascii(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fields_of_private_and_shared_lines() {
        let heap = parse_line(
            b"55d0c2a4e000-55d0c2a6f000 rw-p 00000000 00:00 0                          [heap]",
        )
        .unwrap();
        assert_eq!((heap.start, heap.end), (0x55d0_c2a4_e000, 0x55d0_c2a6_f000));
        assert_eq!((heap.inode, heap.dev, heap.path), (0, 0, &b"[heap]"[..]));
        assert!(!heap.shared());
        let memfd =
            parse_line(b"7f0000001000-7f0000009000 rw-s 00002000 00:01 4242 /memfd:x (deleted)")
                .unwrap();
        assert!(memfd.shared());
        assert_eq!((memfd.dev, memfd.inode), (1, 4242));
        assert_eq!(memfd.object_offset(0x7f00_0000_3000), 0x4000);
        let file = parse_line(b"7f00-7f10 r--s 00001000 fd:1a 99 /data/x").unwrap();
        assert_eq!(file.dev, 0xfd << 32 | 0x1a);
        assert_eq!(parse_line(b"garbage"), None);
        assert_eq!(parse_line(b"7f00-zz rw-p 0 00:00 0"), None);
        assert_eq!(parse_line(b"7f00-7f10 rw-p 0 0000 0"), None);
        assert_eq!(parse_line(b"7f10-7f00 rw-p 0 00:00 0"), None);
    }

    proptest! {
        #[test]
        fn any_bytes_parse_or_not_without_panic(b in proptest::collection::vec(any::<u8>(), 0..120)) {
            let _ = parse_line(&b);
        }
    }
}
