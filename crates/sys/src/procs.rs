//! The processes of a program: `tdmap run` follows every process the program starts
//! (fork, clone, vfork+exec, shells, launch scripts, `mpirun`), so it needs to know which
//! processes descend from the one it started, what each one runs (its command, its MPI
//! ranks) and what backs its memory (`/proc/PID/maps`, for page keys shared across
//! processes, see `tdmap_wire::pagekey`). Every read goes through an [`FsRoot`]; the
//! parsers are pure and tested on embedded text.

use crate::perf::Task;
use crate::{FsRoot, SysError};
use std::collections::HashSet;

/// Parents followed at most from one process up to a member of the family: deeper
/// chains are not the program's (and a loop in a damaged capture must end).
const MAX_DEPTH: usize = 64;

/// The command name and parent pid of a `/proc/PID/stat` line; None if it is not one.
/// The name is in parentheses and may hold spaces and parentheses itself, so the fields
/// after it are found from its last `)`.
pub fn parse_stat(text: &str) -> Option<(&str, u32)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?;
    let mut rest = text.get(close + 1..)?.split_ascii_whitespace();
    let _state = rest.next()?;
    Some((comm, rest.next()?.parse().ok()?))
}

/// The parent pid of `pid`.
pub fn parent(fs: &FsRoot, pid: u32) -> Result<u32, SysError> {
    let abs = format!("/proc/{pid}/stat");
    let text = fs.read(&abs)?;
    parse_stat(&text)
        .map(|(_, ppid)| ppid)
        .ok_or_else(|| SysError::Parse {
            path: fs.path(&abs),
            what: "not a stat line".into(),
        })
}

/// The process `tdmap run` started and every process that descends from it, learnt as
/// pids show up (in samples or in `/proc`). A process stays a member once seen, even
/// if its parent exits and it is reparented.
#[derive(Debug, Clone)]
pub struct Family {
    fs: FsRoot,
    root: u32,
    members: HashSet<u32>,
    outside: HashSet<u32>,
}

impl Family {
    /// The family of `root`, read under `fs`.
    pub fn new(fs: FsRoot, root: u32) -> Family {
        Family {
            fs,
            root,
            members: HashSet::from([root]),
            outside: HashSet::new(),
        }
    }

    /// The process the family descends from.
    pub fn root(&self) -> u32 {
        self.root
    }

    /// Whether `pid` descends from the root (or is it). A process whose parents cannot
    /// be read any more (it exited) is not a member, and is asked about again next time.
    pub fn follows(&mut self, pid: u32) -> bool {
        if self.members.contains(&pid) {
            return true;
        }
        if self.outside.contains(&pid) {
            return false;
        }
        let mut chain = vec![pid];
        let mut p = pid;
        for _ in 0..MAX_DEPTH {
            let Ok(up) = parent(&self.fs, p) else {
                return false;
            };
            if self.members.contains(&up) {
                self.members.extend(chain);
                return true;
            }
            if up <= 1 || self.outside.contains(&up) {
                break;
            }
            chain.push(up);
            p = up;
        }
        self.outside.extend(chain);
        false
    }

    /// Learns from the kernel's fork records (`attr.task`) which new processes are
    /// members: those forked by a member, in any order within the batch (the records
    /// come from per-CPU rings).
    pub fn forked(&mut self, tasks: &[Task]) {
        let mut grew = true;
        while grew {
            grew = false;
            for t in tasks {
                if let &Task::Fork { pid, ppid, .. } = t {
                    if self.members.contains(&ppid) && self.members.insert(pid) {
                        self.outside.remove(&pid);
                        grew = true;
                    }
                }
            }
        }
    }

    /// The members alive now, ascending (pids are handed out in creation order until
    /// they wrap).
    pub fn alive(&mut self) -> Vec<u32> {
        let pids: Vec<u32> = match self.fs.list("/proc") {
            Ok(names) => names.iter().filter_map(|n| n.parse().ok()).collect(),
            Err(_) => return vec![self.root],
        };
        let mut out: Vec<u32> = pids.into_iter().filter(|&p| self.follows(p)).collect();
        out.sort_unstable();
        out
    }
}

/// What a process runs, as `tdmap run`'s report names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its pid.
    pub pid: u32,
    /// Its command line, arguments joined by spaces (empty for a zombie or a kernel
    /// thread).
    pub command: String,
    /// Its name (`/proc/PID/stat`), for when the command line is empty.
    pub name: String,
    /// Its MPI world rank, from its environment.
    pub rank: Option<u32>,
    /// Its node-local MPI rank, from its environment.
    pub local_rank: Option<u32>,
}

/// Variables that give an MPI process its world rank: Open MPI, MPICH's PMI, PMIx, Slurm.
pub const RANK_VARS: [&str; 4] = [
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_PROCID",
];
/// Variables that give its node-local rank: Open MPI, MPICH (Hydra), Slurm.
pub const LOCAL_RANK_VARS: [&str; 3] = [
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "SLURM_LOCALID",
];

/// The world and local rank named in an environment (`/proc/PID/environ`: NUL-separated
/// `NAME=value`), each from the first variable of its list that is set to a number.
pub fn ranks(environ: &[u8]) -> (Option<u32>, Option<u32>) {
    let find = |names: &[&str]| {
        names.iter().find_map(|name| {
            environ.split(|&b| b == 0).find_map(|kv| {
                let v = kv.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
                std::str::from_utf8(v).ok()?.trim().parse().ok()
            })
        })
    };
    (find(&RANK_VARS), find(&LOCAL_RANK_VARS))
}

/// What `pid` runs: its command line and ranks. Fields that cannot be read (it exited,
/// or its environment is not ours to read) stay empty.
pub fn process_info(fs: &FsRoot, pid: u32) -> ProcessInfo {
    let read = |name: &str| std::fs::read(fs.path(format!("/proc/{pid}/{name}"))).ok();
    let command = read("cmdline")
        .map(|c| {
            c.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(String::from_utf8_lossy)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let name = fs
        .read(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| parse_stat(&stat).map(|s| s.0.to_string()))
        .unwrap_or_default();
    let (rank, local_rank) = read("environ").map_or((None, None), |e| ranks(&e));
    ProcessInfo {
        pid,
        command,
        name,
        rank,
        local_rank,
    }
}

/// One mapping of `/proc/PID/maps`, owned (see `tdmap_wire::maps` for the fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Offset in the backing object of `start`.
    pub offset: u64,
    /// The backing object's device.
    pub dev: u64,
    /// The backing object's inode.
    pub inode: u64,
    /// Whether it is `MAP_SHARED`.
    pub shared: bool,
}

/// Parses a whole `/proc/PID/maps` text; lines that are not maps lines are skipped.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|l| tdmap_wire::maps::parse_line(l.as_bytes()))
        .map(|l| Mapping {
            start: l.start,
            end: l.end,
            offset: l.offset,
            dev: l.dev,
            inode: l.inode,
            shared: l.shared(),
        })
        .collect()
}

/// The mappings of `pid`, in address order.
pub fn read_maps(fs: &FsRoot, pid: u32) -> Result<Vec<Mapping>, SysError> {
    Ok(parse_maps(&fs.read(format!("/proc/{pid}/maps"))?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    #[test]
    fn stat_names_with_spaces_and_parentheses_are_skipped_whole() {
        assert_eq!(
            parse_stat("42 (a b) c)) S 7 42 42 0 -1"),
            Some(("a b) c)", 7))
        );
        assert_eq!(parse_stat("42 (x) S"), None);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn ranks_come_from_the_first_variable_set_to_a_number() {
        let env = b"HOME=/root\0PMI_RANK=x\0PMIX_RANK=3\0OMPI_COMM_WORLD_LOCAL_RANK=1\0";
        assert_eq!(ranks(env), (Some(3), Some(1)));
        assert_eq!(
            ranks(b"OMPI_COMM_WORLD_RANK=2\0MPI_LOCALRANKID=0"),
            (Some(2), Some(0))
        );
        assert_eq!(
            ranks(b"XOMPI_COMM_WORLD_RANK=2\0PMI_RANKS=1\0"),
            (None, None)
        );
    }

    /// A fake `/proc` with processes (pid, ppid, cmdline, environ).
    fn fake_proc(name: &str, procs: &[(u32, u32, &str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tdmap-procs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for &(pid, ppid, cmd, env) in procs {
            write(&dir, pid, "stat", &format!("{pid} (p{pid}) S {ppid} 1 1 0"));
            write(&dir, pid, "cmdline", &cmd.replace(' ', "\0"));
            write(&dir, pid, "environ", &env.replace(' ', "\0"));
        }
        dir
    }

    fn write(dir: &Path, pid: u32, name: &str, text: &str) {
        let p = dir.join(format!("proc/{pid}"));
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join(name), text).unwrap();
    }

    #[test]
    fn the_family_is_the_root_and_its_descendants_even_reparented() {
        // 10 started 11 (which started 12 and 13); 20 is someone else's, 1 is init.
        let dir = fake_proc(
            "family",
            &[
                (1, 0, "init", ""),
                (10, 1, "sh -c run.sh", ""),
                (11, 10, "mpirun -np 2 x", ""),
                (12, 11, "x", "PMI_RANK=0 MPI_LOCALRANKID=0"),
                (13, 11, "x", "PMI_RANK=1"),
                (20, 1, "other", ""),
            ],
        );
        let fs = FsRoot::new(&dir);
        let mut f = Family::new(fs.clone(), 10);
        assert!(f.follows(13) && f.follows(12) && !f.follows(20) && !f.follows(1));
        assert!(!f.follows(99), "a process that is gone is not followed");
        // Gone, but the kernel said who forked it (grandchild first: per-CPU rings).
        f.forked(&[
            Task::Fork {
                pid: 98,
                ppid: 99,
                time: 0,
            },
            Task::Fork {
                pid: 99,
                ppid: 13,
                time: 0,
            },
        ]);
        assert!(f.follows(99) && f.follows(98));
        // 11 exits: its children go to init, but stay in the family.
        write(&dir, 12, "stat", "12 (x) S 1 1 1 0");
        std::fs::remove_dir_all(dir.join("proc/11")).unwrap();
        assert!(f.follows(12));
        // A child of a member appears later.
        write(&dir, 14, "stat", "14 (y) S 12 1 1 0");
        assert_eq!(f.alive(), vec![10, 12, 13, 14]);
        let info = process_info(&fs, 13);
        assert_eq!((info.command.as_str(), info.rank), ("x", Some(1)));
        let info = process_info(&fs, 12);
        assert_eq!((info.rank, info.local_rank), (Some(0), Some(0)));
        let info = process_info(&fs, 14);
        assert_eq!((info.command.as_str(), info.name.as_str()), ("", "y"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn maps_keep_shared_mappings_and_their_objects() {
        let m = parse_maps(
            "55d0-55e0 rw-p 00000000 00:00 0 [heap]\nbad line\n\
             7f00-7f10 rw-s 00002000 00:01 4242 /memfd:x (deleted)\n",
        );
        assert_eq!(m.len(), 2);
        assert!(!m[0].shared && m[1].shared);
        assert_eq!((m[1].dev, m[1].inode, m[1].offset), (1, 4242, 0x2000));
    }
}
