//! Page keys of a program of several processes (`tdmap_wire::pagekey`): kMAF keys its
//! table by physical address (§3.1), so it sees pages that processes share. Here a page
//! of a `MAP_SHARED` mapping is keyed by its backing object (device + inode, from
//! `/proc/PID/maps`) and its offset in it, so two processes that map it at different
//! addresses share its key; any other page by (process, address). Process 0 is the one
//! `tdmap run` started, and its private keys are its addresses, so a program of one
//! process keys its pages as before.
//!
//! The maps are cached per process and read again when an address falls outside every
//! cached mapping (a new mmap). With system-wide perf events the kernel also reports
//! forks and mmaps ([`Task`]): a child starts with its parent's maps, and each mmap is
//! added as it happens, so a process that exits before its maps are read (a short
//! forked child) still keys its shared pages by object. Pure: whoever owns the keyer
//! reads the maps.

use std::collections::HashMap;
use tdmap_sys::perf::Task;
use tdmap_sys::procs::Mapping;
use tdmap_wire::pagekey::PageKey;

/// How pages are keyed, as the report says it.
pub const KEYING: &str = "maps: MAP_SHARED pages by backing object (device, inode, offset), \
                          others by (process, address)";

/// The keys of the pages of a set of processes, and the way back from a key to the
/// processes and addresses that map it now.
#[derive(Debug, Default, Clone)]
pub struct Keyer {
    index: HashMap<u32, u32>,
    pids: Vec<u32>,
    maps: HashMap<u32, Vec<Mapping>>,
    objects: HashMap<(u64, u64), u32>,
    shared: u64,
}

impl Keyer {
    /// A keyer whose process 0 is `root`.
    pub fn new(root: u32) -> Keyer {
        let mut k = Keyer::default();
        k.process(root);
        k
    }

    /// The index of process `pid`, giving it the next one if it is new.
    pub fn process(&mut self, pid: u32) -> u32 {
        let n = self.pids.len() as u32;
        *self.index.entry(pid).or_insert_with(|| {
            self.pids.push(pid);
            n
        })
    }

    /// The pids, by process index.
    pub fn pids(&self) -> &[u32] {
        &self.pids
    }

    /// Samples keyed by a shared object so far.
    pub fn shared_keys(&self) -> u64 {
        self.shared
    }

    /// The key of `addr` in process `pid`; `read` gives the process's maps when the
    /// cached ones do not cover `addr`. None when a field does not fit a key (more than
    /// `pagekey::MAX_PROCESSES` processes, an offset beyond 1 TiB).
    pub fn key(
        &mut self,
        pid: u32,
        addr: u64,
        read: &mut impl FnMut(u32) -> Option<Vec<Mapping>>,
    ) -> Option<u64> {
        let process = self.process(pid);
        let mut m = find(self.maps.get(&pid), addr);
        if m.is_none() {
            // A process that has exited has empty maps: the cache is all there is then.
            if let Some(fresh) = read(pid).filter(|m| !m.is_empty()) {
                self.maps.insert(pid, fresh);
                m = find(self.maps.get(&pid), addr);
            }
        }
        let key = match m {
            Some(m) if m.shared => {
                self.shared += 1;
                let n = self.objects.len() as u32;
                let object = *self.objects.entry((m.dev, m.inode)).or_insert(n);
                PageKey::Shared {
                    object,
                    offset: m.offset + (addr - m.start),
                }
            }
            _ => PageKey::Private { process, addr },
        };
        key.encode()
    }

    /// Where the page of `key` is mapped now, as (pid, address) pairs, process 0 first:
    /// the one process of a private page, every process whose cached maps hold the
    /// offset of a shared one.
    pub fn places(&self, key: u64) -> Vec<(u32, u64)> {
        match PageKey::decode(key) {
            PageKey::Private { process, addr } => self
                .pids
                .get(process as usize)
                .map(|&pid| vec![(pid, addr)])
                .unwrap_or_default(),
            PageKey::Shared { object, offset } => {
                let Some((&(dev, inode), _)) = self.objects.iter().find(|(_, &o)| o == object)
                else {
                    return Vec::new();
                };
                self.pids
                    .iter()
                    .filter_map(|pid| {
                        let m = self.maps.get(pid)?.iter().find(|m| {
                            m.shared
                                && (m.dev, m.inode) == (dev, inode)
                                && offset >= m.offset
                                && offset - m.offset < m.end - m.start
                        })?;
                        Some((*pid, m.start + (offset - m.offset)))
                    })
                    .collect()
            }
        }
    }

    /// Learns a fork (the child maps what its parent maps) or an mmap (replacing what it
    /// overlaps in the cache).
    pub fn learn(&mut self, t: &Task) {
        match *t {
            Task::Fork { pid, ppid, .. } => {
                if let (false, Some(m)) = (self.maps.contains_key(&pid), self.maps.get(&ppid)) {
                    self.maps.insert(pid, m.clone());
                }
            }
            // Kept: samples of a thread drained after its exit are keyed with them.
            Task::Exit { .. } => {}
            // An exec replaces every mapping: what the cache held is stale.
            Task::Exec { pid, .. } => {
                self.maps.remove(&pid);
            }
            Task::Mmap { pid, map, .. } => {
                let maps = self.maps.entry(pid).or_default();
                maps.retain(|m| m.end <= map.start || m.start >= map.end);
                let at = maps.partition_point(|m| m.end <= map.start);
                maps.insert(at, map);
            }
        }
    }

    /// Forgets the maps of a process that exited: its pages are moved through others.
    pub fn exited(&mut self, pid: u32) {
        self.maps.remove(&pid);
    }
}

/// The cached mapping that holds `addr` (mappings are in address order).
fn find(maps: Option<&Vec<Mapping>>, addr: u64) -> Option<Mapping> {
    let maps = maps?;
    let i = maps.partition_point(|m| m.end <= addr);
    maps.get(i).filter(|m| m.start <= addr).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdmap_sys::procs::parse_maps;

    /// Process 10 maps a memfd (inode 77) at 0x7000_0000, process 11 at 0x9000_0000 from
    /// offset 0x1000; both have private heaps at 0x5000_0000.
    fn maps(pid: u32) -> Option<Vec<Mapping>> {
        Some(parse_maps(match pid {
            10 => {
                "50000000-50010000 rw-p 00000000 00:00 0 [heap]\n\
                 70000000-70004000 rw-s 00000000 00:01 77 /memfd:r (deleted)\n"
            }
            11 => {
                "50000000-50010000 rw-p 00000000 00:00 0 [heap]\n\
                 90000000-90003000 rw-s 00001000 00:01 77 /memfd:r (deleted)\n"
            }
            _ => return None,
        }))
    }

    #[test]
    fn shared_pages_key_alike_across_processes_and_private_ones_do_not() {
        let mut k = Keyer::new(10);
        let mut reads = 0;
        let mut read = |pid| {
            reads += 1;
            maps(pid)
        };
        let a = k.key(10, 0x7000_2040, &mut read).unwrap();
        let b = k.key(11, 0x9000_1040, &mut read).unwrap();
        assert_eq!(a, b, "same memfd offset 0x2040, different addresses");
        assert_eq!(
            PageKey::decode(a),
            PageKey::Shared {
                object: 0,
                offset: 0x2040
            }
        );
        let p0 = k.key(10, 0x5000_0000, &mut read).unwrap();
        let p1 = k.key(11, 0x5000_0000, &mut read).unwrap();
        assert_eq!(p0, 0x5000_0000, "process 0's private keys are addresses");
        assert_ne!(p0, p1, "same address in two processes: two pages");
        // Unmapped address: keyed private after one more read (a new mmap may cover it).
        assert!(k.key(11, 0x1234_0000, &mut read).is_some());
        assert_eq!(reads, 3, "maps read once per process, again on a miss");
        assert_eq!(k.shared_keys(), 2);
        assert_eq!(
            k.places(a),
            vec![(10, 0x7000_2000 + 0x40), (11, 0x9000_1040)]
        );
        assert_eq!(k.places(p1), vec![(11, 0x5000_0000)]);
        k.exited(10);
        assert_eq!(k.places(a), vec![(11, 0x9000_1040)], "moved through 11");
    }

    /// A process that has exited reads as empty maps (a zombie's): the cache is kept.
    #[test]
    fn the_empty_maps_of_an_exited_process_do_not_replace_the_cache() {
        let mut k = Keyer::new(10);
        let key = k.key(10, 0x7000_0040, &mut maps).unwrap();
        assert_eq!(k.key(10, 0x7000_0040, &mut |_| Some(Vec::new())), Some(key));
        assert_eq!(k.key(10, 0x1000, &mut |_| Some(Vec::new())), Some(0x1000));
        assert_eq!(k.key(10, 0x7000_0040, &mut |_| Some(Vec::new())), Some(key));
    }

    /// A child forked and exited before its maps could be read: the kernel's records
    /// alone key its pages, the inherited mapping and the one it made.
    #[test]
    fn fork_and_mmap_records_key_the_pages_of_a_process_already_gone() {
        let mut k = Keyer::new(10);
        let heap = k.key(10, 0x5000_0000, &mut maps).unwrap();
        k.learn(&Task::Fork {
            pid: 12,
            ppid: 10,
            time: 0,
        });
        let memfd = parse_maps("90000000-90003000 rw-s 00001000 00:01 77 /memfd:r")[0];
        k.learn(&Task::Mmap {
            pid: 12,
            map: memfd,
            time: 0,
        });
        let mut gone = |_| None;
        assert_eq!(
            k.key(12, 0x9000_0040, &mut gone),
            k.key(10, 0x7000_1040, &mut maps),
            "the memfd page is the parent's"
        );
        assert_ne!(
            k.key(12, 0x5000_0000, &mut gone),
            Some(heap),
            "its own heap page"
        );
        let anon = parse_maps("90001000-90002000 rw-p 00000000 00:00 0")[0];
        k.learn(&Task::Mmap {
            pid: 12,
            map: anon,
            time: 0,
        });
        let key = k.key(12, 0x9000_1000, &mut gone).unwrap();
        assert!(
            !tdmap_wire::pagekey::is_shared(key),
            "remapped private over the memfd"
        );
    }

    #[test]
    fn offsets_outside_a_mapping_are_not_placed_there() {
        let mut k = Keyer::new(10);
        let key = k.key(10, 0x7000_0000, &mut maps).unwrap();
        assert_eq!(k.key(11, 0x9000_0000, &mut maps), Some(key + 0x1000));
        assert_eq!(
            k.places(key),
            vec![(10, 0x7000_0000)],
            "11 maps from 0x1000"
        );
    }
}
