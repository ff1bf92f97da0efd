//! The contract between `tdmap exec` and the pinning half of the preloaded runtime
//! (`tdmap-rt`'s `pin`): two environment variables in, one file of records out.
//!
//! In: [`ENV`] = `PARENT_PID,CYCLE,CPU:CPU:...` ([`Settings`]): the OS CPU of thread k
//! (main = 0, then threads in `pthread_create` order) is the k-th; CYCLE 1 means thread
//! k takes CPU k mod n, 0 that threads beyond the list stay unpinned. Only the process
//! whose parent is PARENT_PID pins (an `exec` keeps the pid and the parent, so a shell
//! that execs the program passes it on; the program's own children do not pin).
//! [`ENV_LOG`] names a file `tdmap exec` created; the runtime appends records to it.
//!
//! Out: [`RECORD_BYTES`]-byte records, native endianness (same machine), each written
//! with one `write` to a file opened `O_APPEND`, so threads never interleave:
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | [`MAGIC`] |
//! | 4..8 | kind: [`KIND_HELLO`], [`KIND_PIN`] or [`KIND_BEYOND`] |
//! | 8..12 | pid |
//! | 12..16 | thread number (creation order, main = 0) |
//! | 16..20 | tid |
//! | 20..24 | CPU asked for (hello: the number of CPUs in the list) |
//! | 24..28 | errno of `sched_setaffinity`, 0 when the pin held |
//! | 28..32 | 0 |

use crate::WireError;

/// The settings variable.
pub const ENV: &str = "TDMAP_PIN";
/// The variable naming the record file.
pub const ENV_LOG: &str = "TDMAP_PIN_LOG";
/// Marks a record ("TDPN").
pub const MAGIC: u32 = 0x5444_504e;
/// Size of one record.
pub const RECORD_BYTES: usize = 32;
/// Kind: the runtime loaded and read its settings (written before `main`).
pub const KIND_HELLO: u32 = 1;
/// Kind: a thread was pinned, or its pin failed (errno set).
pub const KIND_PIN: u32 = 2;
/// Kind: a thread beyond the list, not pinned (no `--cycle`).
pub const KIND_BEYOND: u32 = 3;

/// What `tdmap exec` asks the runtime to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// pid of `tdmap exec`: only its direct child pins.
    pub parent: i32,
    /// Thread k beyond the list takes CPU k mod n.
    pub cycle: bool,
    /// The OS CPU of each thread, in creation order.
    pub cpus: Vec<u32>,
}

impl Settings {
    /// The variable's value.
    pub fn encode(&self) -> String {
        let cpus: Vec<String> = self.cpus.iter().map(u32::to_string).collect();
        format!(
            "{},{},{}",
            self.parent,
            u8::from(self.cycle),
            cpus.join(":")
        )
    }

    /// Parses a value made by [`Settings::encode`].
    pub fn decode(s: &str) -> Result<Settings, WireError> {
        let bad = |why: String| WireError::Malformed {
            what: "pin settings",
            why,
        };
        let mut parts = s.splitn(3, ',');
        let (Some(parent), Some(cycle), Some(cpus)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad(format!("{s:?} is not PARENT,CYCLE,CPUS")));
        };
        let parent = parent
            .parse()
            .map_err(|_| bad(format!("parent {parent:?}")))?;
        let cycle = match cycle {
            "0" => false,
            "1" => true,
            c => return Err(bad(format!("cycle {c:?} is not 0 or 1"))),
        };
        let cpus = cpus
            .split(':')
            .map(|c| c.parse().map_err(|_| bad(format!("CPU {c:?}"))))
            .collect::<Result<Vec<u32>, _>>()?;
        Ok(Settings {
            parent,
            cycle,
            cpus,
        })
    }

    /// The CPU of thread `k`, None when it is beyond the list and not cycling.
    pub fn cpu_of(&self, k: u32) -> Option<u32> {
        let n = self.cpus.len();
        match self.cpus.get(k as usize) {
            Some(&c) => Some(c),
            None if self.cycle && n > 0 => Some(self.cpus[k as usize % n]),
            None => None,
        }
    }
}

/// One record of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// [`KIND_HELLO`], [`KIND_PIN`] or [`KIND_BEYOND`].
    pub kind: u32,
    /// The process.
    pub pid: u32,
    /// The thread's number in creation order (main = 0).
    pub thread: u32,
    /// The thread's tid.
    pub tid: u32,
    /// The CPU asked for (hello: how many CPUs the list holds).
    pub cpu: u32,
    /// `sched_setaffinity`'s errno, 0 when the pin held.
    pub errno: u32,
}

impl Record {
    /// The record's bytes.
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        let words = [
            MAGIC,
            self.kind,
            self.pid,
            self.thread,
            self.tid,
            self.cpu,
            self.errno,
            0,
        ];
        for (i, w) in words.iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
        }
        b
    }

    /// Decodes one record.
    pub fn decode(b: &[u8]) -> Result<Record, WireError> {
        if b.len() < RECORD_BYTES {
            return Err(WireError::Truncated {
                what: "pin record",
                need: RECORD_BYTES,
                got: b.len(),
            });
        }
        let w = |i: usize| u32::from_ne_bytes([b[i * 4], b[i * 4 + 1], b[i * 4 + 2], b[i * 4 + 3]]);
        if w(0) != MAGIC {
            return Err(WireError::BadMagic {
                what: "pin record",
                expected: MAGIC,
                found: w(0),
            });
        }
        let kind = w(1);
        if !(KIND_HELLO..=KIND_BEYOND).contains(&kind) {
            return Err(WireError::UnknownKind {
                what: "pin record",
                kind,
            });
        }
        Ok(Record {
            kind,
            pid: w(2),
            thread: w(3),
            tid: w(4),
            cpu: w(5),
            errno: w(6),
        })
    }

    /// Every record of a file's bytes; a cut last record is an error.
    pub fn decode_all(bytes: &[u8]) -> Result<Vec<Record>, WireError> {
        bytes.chunks(RECORD_BYTES).map(Record::decode).collect()
    }
}

/// What the runtime of one process reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The runtime loaded and read its settings (its hello record is there).
    pub loaded: bool,
    /// Pins that held.
    pub pinned: Vec<Record>,
    /// Pins that failed, with their errno.
    pub failed: Vec<Record>,
    /// Threads beyond the list, left unpinned.
    pub beyond: Vec<Record>,
}

impl Outcome {
    /// The records of process `pid` by kind, each kind in thread order (other processes'
    /// are ignored).
    pub fn of(records: &[Record], pid: u32) -> Outcome {
        let mut o = Outcome::default();
        for r in records.iter().filter(|r| r.pid == pid) {
            match (r.kind, r.errno) {
                (KIND_HELLO, _) => o.loaded = true,
                (KIND_PIN, 0) => o.pinned.push(*r),
                (KIND_PIN, _) => o.failed.push(*r),
                _ => o.beyond.push(*r),
            }
        }
        // Threads write as they start, which need not be their creation order.
        for v in [&mut o.pinned, &mut o.failed, &mut o.beyond] {
            v.sort_by_key(|r| r.thread);
        }
        o
    }
}

/// What a failed `sched_setaffinity` says about the thread: ESRCH means it had exited
/// before the pin (only a pin from outside can meet that), EINVAL that the CPU is not
/// one the thread may use (outside its cpuset or offline).
pub fn failure_state(errno: i32) -> &'static str {
    match errno {
        3 => "thread had exited",
        22 => "CPU not allowed",
        1 => "not permitted",
        _ => "pin failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_cycle() {
        let s = Settings {
            parent: 42,
            cycle: true,
            cpus: vec![3, 0, 1],
        };
        assert_eq!(s.encode(), "42,1,3:0:1");
        assert_eq!(Settings::decode(&s.encode()).unwrap(), s);
        assert_eq!(s.cpu_of(1), Some(0));
        assert_eq!(s.cpu_of(4), Some(0));
        let once = Settings { cycle: false, ..s };
        assert_eq!(once.cpu_of(2), Some(1));
        assert_eq!(once.cpu_of(3), None);
        for bad in ["", "1,2,3", "x,0,1", "1,0,a:b", "1,0"] {
            assert!(Settings::decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn records_round_trip_and_damage_is_an_error() {
        let r = Record {
            kind: KIND_PIN,
            pid: 7,
            thread: 2,
            tid: 9,
            cpu: 1,
            errno: 22,
        };
        let mut all = r.encode().to_vec();
        all.extend_from_slice(&r.encode());
        assert_eq!(Record::decode_all(&all).unwrap(), vec![r, r]);
        assert!(Record::decode_all(&all[..40]).is_err());
        all[0] ^= 1;
        assert!(Record::decode_all(&all).is_err());
        let hello = Record {
            kind: KIND_HELLO,
            errno: 0,
            ..r
        };
        let ok = Record { errno: 0, ..r };
        let other = Record { pid: 8, ..ok };
        let o = Outcome::of(&[hello, ok, r, other], 7);
        assert!(o.loaded);
        assert_eq!((o.pinned, o.failed, o.beyond.len()), (vec![ok], vec![r], 0));
        assert_eq!(failure_state(3), "thread had exited");
        assert_eq!(failure_state(22), "CPU not allowed");
    }
}
