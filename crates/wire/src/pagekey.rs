//! The key of a page when several processes are watched or traced: kMAF keys its table
//! by physical address (§3.1), so that processes that map one page share it. Without
//! the kernel's help tdmap keys a page by what backs it, read from `/proc/PID/maps`:
//! - a page of a `MAP_SHARED` mapping (a file, `/dev/shm`, SysV shm, a memfd, shared
//!   anonymous memory) by its backing object (device + inode) and its offset in it, so
//!   that two processes that map it at different addresses get the same key;
//! - any other page by (process, address): after a fork, parent and child have the same
//!   addresses but, once written, different pages.
//!
//! Encoding in one u64 (x86-64 and arm64 user addresses fit in 48 bits):
//! - private: bit 63 clear, bits 48..63 the process index, bits 0..48 the address. With
//!   one process (index 0) the key is the address itself, so single-process traces and
//!   runs keep their keys;
//! - shared: bit 63 set, bits 40..63 the object index (one per (device, inode), given out
//!   by whoever reads the maps), bits 0..40 the byte offset in the object (1 TiB).
//!
//! Keys keep page order within an object or a process, so sub-page blocks and page
//! numbers (key >> 12) work on them as on addresses.

/// Bits of a private address (user space on x86-64 with 4-level paging, and arm64).
pub const ADDR_BITS: u32 = 48;
/// Bits of the offset in a shared object.
pub const OFFSET_BITS: u32 = 40;
/// Processes a private key can name (bits 48..63).
pub const MAX_PROCESSES: u32 = 1 << (63 - ADDR_BITS);
/// Shared objects a key can name (bits 40..63).
pub const MAX_OBJECTS: u32 = 1 << (63 - OFFSET_BITS);
const SHARED: u64 = 1 << 63;

/// A decoded page key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageKey {
    /// A private page: the process index and the address in it.
    Private {
        /// The process's index (0 for the first process watched).
        process: u32,
        /// The virtual address.
        addr: u64,
    },
    /// A page of a shared object: its index and the byte offset in it.
    Shared {
        /// The object's index (one per device + inode).
        object: u32,
        /// The byte offset in the object.
        offset: u64,
    },
}

impl PageKey {
    /// The key as one u64, or None when a field does not fit its bits.
    pub fn encode(self) -> Option<u64> {
        match self {
            PageKey::Private { process, addr } => (process < MAX_PROCESSES
                && addr < 1 << ADDR_BITS)
                .then(|| u64::from(process) << ADDR_BITS | addr),
            PageKey::Shared { object, offset } => (object < MAX_OBJECTS
                && offset < 1 << OFFSET_BITS)
                .then(|| SHARED | u64::from(object) << OFFSET_BITS | offset),
        }
    }

    /// The key that `encode` made.
    pub fn decode(key: u64) -> PageKey {
        if key & SHARED != 0 {
            PageKey::Shared {
                object: ((key & !SHARED) >> OFFSET_BITS) as u32,
                offset: key & ((1 << OFFSET_BITS) - 1),
            }
        } else {
            PageKey::Private {
                process: (key >> ADDR_BITS) as u32,
                addr: key & ((1 << ADDR_BITS) - 1),
            }
        }
    }
}

/// Whether a key names a page of a shared object.
pub fn is_shared(key: u64) -> bool {
    key & SHARED != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn process_zero_keys_are_addresses_and_fields_that_overflow_are_refused() {
        let k = PageKey::Private {
            process: 0,
            addr: 0x7f00_1234_5000,
        };
        assert_eq!(k.encode(), Some(0x7f00_1234_5000));
        assert_eq!(
            PageKey::Private {
                process: 0,
                addr: 1 << 48
            }
            .encode(),
            None
        );
        assert_eq!(
            PageKey::Private {
                process: MAX_PROCESSES,
                addr: 0
            }
            .encode(),
            None
        );
        assert_eq!(
            PageKey::Shared {
                object: MAX_OBJECTS,
                offset: 0
            }
            .encode(),
            None
        );
        assert_eq!(
            PageKey::Shared {
                object: 0,
                offset: 1 << 40
            }
            .encode(),
            None
        );
        let s = PageKey::Shared {
            object: 3,
            offset: 0x2000,
        }
        .encode()
        .unwrap();
        assert!(is_shared(s) && !is_shared(k.encode().unwrap()));
    }

    proptest! {
        #[test]
        fn keys_round_trip_and_keep_page_order(p in 0..MAX_PROCESSES, a in 0u64..1 << 47, o in 0..MAX_OBJECTS, off in 0u64..1 << 39) {
            for k in [PageKey::Private { process: p, addr: a }, PageKey::Shared { object: o, offset: off }] {
                prop_assert_eq!(PageKey::decode(k.encode().unwrap()), k);
            }
            let (x, y) = (PageKey::Private { process: p, addr: a }, PageKey::Private { process: p, addr: a + 4096 });
            prop_assert_eq!((y.encode().unwrap() >> 12) - (x.encode().unwrap() >> 12), 1);
        }
    }
}
