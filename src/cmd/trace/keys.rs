//! Page keys of a multi-process trace (`tdmap_wire::pagekey`): an address of process p
//! inside one of its `MAP_SHARED` mappings becomes (backing object, offset), any other
//! address (p, address). Object indexes are given out here, per (device, inode), in the
//! order processes and their snapshots list them.
//!
//! Which mappings were shared comes from the snapshots each process's runtime took (at
//! each fork, in parent and child, and when a process ends). The rule: an address is shared when a snapshot of
//! its process has it in a shared mapping, the latest such snapshot naming the object.
//! Its limit: a shared mapping made and removed between two snapshots is not seen (its
//! accesses are keyed as the process's private memory), and an address range reused for
//! private memory after a shared mapping there was seen is keyed as that shared object.

use std::collections::HashMap;
use std::path::Path;
use tdmap_wire::maps::parse_line;
use tdmap_wire::pagekey::PageKey;

/// One shared mapping of a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mapping {
    start: u64,
    end: u64,
    object: u32,
    /// Offset in the object of `start`.
    offset: u64,
}

/// Translates addresses into page keys for every process of a run.
#[derive(Debug, Default)]
pub(super) struct Keys {
    /// Per process, its snapshots oldest first, each sorted by start address.
    procs: Vec<Vec<Vec<Mapping>>>,
    objects: HashMap<(u64, u64), u32>,
}

impl Keys {
    /// Keys for processes whose maps snapshot files are `maps` (index order); None
    /// for a single process, whose keys are its addresses.
    pub(super) fn read(maps: &[&Path]) -> Option<Keys> {
        if maps.len() < 2 {
            return None;
        }
        let mut k = Keys::default();
        for m in maps {
            let text = std::fs::read(m).unwrap_or_default();
            let snaps = k.parse(&text);
            k.procs.push(snaps);
        }
        Some(k)
    }

    /// The snapshots in one maps file: shared lines, each snapshot ended by an empty line.
    fn parse(&mut self, text: &[u8]) -> Vec<Vec<Mapping>> {
        let mut snaps = Vec::new();
        let mut cur = Vec::new();
        for line in text.split(|&c| c == b'\n') {
            if line.is_empty() {
                if !cur.is_empty() {
                    cur.sort_by_key(|m: &Mapping| m.start);
                    snaps.push(std::mem::take(&mut cur));
                }
                continue;
            }
            let Some(l) = parse_line(line).filter(|l| l.shared()) else {
                continue;
            };
            let next = self.objects.len() as u32;
            let object = *self.objects.entry((l.dev, l.inode)).or_insert(next);
            cur.push(Mapping {
                start: l.start,
                end: l.end,
                object,
                offset: l.offset,
            });
        }
        // A snapshot cut short by a killed process still counts.
        if !cur.is_empty() {
            cur.sort_by_key(|m: &Mapping| m.start);
            snaps.push(cur);
        }
        snaps
    }

    /// The key of `addr` in process `process` (kMAF keys by physical page, §3.1).
    pub(super) fn key(&self, process: u32, addr: u64) -> u64 {
        let shared = self.procs.get(process as usize).and_then(|snaps| {
            snaps.iter().rev().find_map(|s| {
                let i = s.partition_point(|m| m.start <= addr).checked_sub(1)?;
                let m = s[i];
                (addr < m.end).then_some(PageKey::Shared {
                    object: m.object,
                    offset: m.offset + (addr - m.start),
                })
            })
        });
        shared
            .unwrap_or(PageKey::Private { process, addr })
            .encode()
            // A field too wide for its bits (an offset past 1 TiB): the plain address.
            .unwrap_or(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNAPS: &[&str] = &[
        // Process 0: shared anonymous memory, then (later snapshot) a memfd at the same
        // place and the anonymous region elsewhere.
        "7f0000000000-7f0000010000 rw-s 00000000 00:01 11 /dev/zero (deleted)\n\n\
         7f0000000000-7f0000004000 rw-s 00002000 00:01 22 /memfd:x (deleted)\n\
         7f1000000000-7f1000010000 rw-s 00000000 00:01 11 /dev/zero (deleted)\n\n",
        // Process 1: the memfd at another address, and a private line that is ignored.
        "7e0000000000-7e0000008000 rw-s 00000000 00:01 22 /memfd:x (deleted)\n\
         55d0c2a4e000-55d0c2a6f000 rw-p 00000000 00:00 0 [heap]\n",
    ];

    fn keys() -> Keys {
        let mut k = Keys::default();
        for s in SNAPS {
            let snaps = k.parse(s.as_bytes());
            k.procs.push(snaps);
        }
        k
    }

    #[test]
    fn one_object_at_two_addresses_has_one_key() {
        let k = keys();
        // Offset 0x2000 + 0x1000 of the memfd in process 0, 0x3000 in process 1.
        assert_eq!(k.key(0, 0x7f00_0000_1000), k.key(1, 0x7e00_0000_3000));
        assert_eq!(
            PageKey::decode(k.key(1, 0x7e00_0000_3000)),
            PageKey::Shared {
                object: 1,
                offset: 0x3000
            }
        );
        // The anonymous region, seen at its later address.
        assert_eq!(
            k.key(0, 0x7f10_0000_0008),
            PageKey::Shared {
                object: 0,
                offset: 8
            }
            .encode()
            .unwrap()
        );
    }

    #[test]
    fn the_latest_snapshot_wins_and_private_addresses_keep_their_process() {
        let k = keys();
        // In the first snapshot's anonymous region but past the later memfd: older wins
        // only where the newer has nothing.
        assert_eq!(
            PageKey::decode(k.key(0, 0x7f00_0000_8000)),
            PageKey::Shared {
                object: 0,
                offset: 0x8000
            }
        );
        let heap = 0x55d0_c2a5_0000;
        assert_eq!(
            k.key(0, heap),
            heap,
            "process 0's private keys are addresses"
        );
        assert_ne!(
            k.key(1, heap),
            k.key(0, heap),
            "same address, other process"
        );
        assert_eq!(
            PageKey::decode(k.key(1, heap)),
            PageKey::Private {
                process: 1,
                addr: heap
            }
        );
    }

    #[test]
    fn one_process_needs_no_keys() {
        assert!(Keys::read(&[Path::new("/nonexistent")]).is_none());
    }
}
