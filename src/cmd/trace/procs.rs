//! The processes of a traced run: the program started and every child it forked, each
//! with raw files of its own (`tdmap_wire::raw`: the parent's names with `.PID`
//! appended). Processes are numbered 0 for the program, then by the time of their fork;
//! tasks by process, then by thread (creation order within the process).

use super::raw::wire;
use super::spill::Spilled;
use super::{status_of, Scratch};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use tdmap_sys::STOP_SIGNALS;
use tdmap_trace::{ProcessInfo, TraceStatus};

/// What one process's runtime said through its control file.
#[derive(Debug, Default)]
pub(super) struct Control {
    pub(super) hello: bool,
    pub(super) pid: Option<u32>,
    pub(super) page_size: u64,
    pub(super) write_errno: Option<u64>,
    pub(super) crashed: Option<u32>,
    pub(super) done: Option<u64>,
    /// The parent's pid and the time of the fork, for a forked child.
    pub(super) forked: Option<(u32, u64)>,
    /// The parent's pid and the start time, for a program a traced process exec'd.
    pub(super) execed: Option<(u32, u64)>,
    /// The process exec'd another program after flushing its threads.
    pub(super) exec: bool,
    /// Recording windows opened (`--window`; `tdmap_wire::raw::MSG_WINDOW`).
    pub(super) windows: u64,
}

impl Control {
    pub(super) fn read(path: &Path) -> Control {
        let mut c = Control {
            page_size: 4096,
            ..Control::default()
        };
        for m in wire::Msg::decode_all(&std::fs::read(path).unwrap_or_default()) {
            match m.tag {
                wire::MSG_HELLO => {
                    c.hello = true;
                    c.pid = Some(m.a as u32);
                }
                wire::MSG_PAGE_SIZE => c.page_size = m.a,
                wire::MSG_WRITE_FAILED => c.write_errno = Some(m.a),
                wire::MSG_CRASHED => c.crashed = Some(m.b),
                wire::MSG_DONE => c.done = Some(m.a),
                wire::MSG_FORKED => c.forked = Some((m.b, m.a)),
                wire::MSG_EXECED => c.execed = Some((m.b, m.a)),
                wire::MSG_EXEC => c.exec = true,
                wire::MSG_WINDOW => c.windows += 1,
                _ => {}
            }
        }
        c
    }
}

/// One traced process and its files.
pub(super) struct Proc {
    pub(super) ctl: Control,
    pub(super) data: PathBuf,
    pub(super) maps: PathBuf,
    pub(super) info: ProcessInfo,
}

/// The files a child of pid `pid` writes beside `base` (the program's data path).
fn with_suffix(base: &Path, suffix: &str) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The suffixes (`.PID` or `.PID-N`) of the processes other than process 0 that left a
/// control file beside `ctl`, with their pids.
fn child_pids(ctl: &Path) -> Vec<(String, u32)> {
    let (Some(dir), Some(name)) = (ctl.parent(), ctl.file_name()) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{}.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| {
            let n = e.ok()?.file_name().into_string().ok()?;
            let sfx = n.strip_prefix(&prefix)?;
            let (pid, _) = wire::parse_child_suffix(sfx)?;
            Some((format!(".{sfx}"), pid))
        })
        .collect()
}

/// The raw data files of the processes other than process 0 that left a control file.
pub(super) fn child_data_files(scratch: &Scratch) -> Vec<PathBuf> {
    child_pids(&scratch.ctl)
        .into_iter()
        .map(|(sfx, _)| with_suffix(&scratch.data, &sfx))
        .collect()
}

/// True while no process other than process 0 has left a control file.
pub(super) fn no_children(scratch: &Scratch) -> bool {
    child_pids(&scratch.ctl).is_empty()
}

/// Every process of the run, in index order, with its tasks counted; `main` is the
/// program's own control file's content, `(from0, threads0)` how far process 0's file
/// was converted while it ran and how many threads that part named (its front may be
/// freed, so counting starts at `from0`); `spilled`, where the streams were moved while
/// it ran. A child whose files cannot be read is left out.
pub(super) fn discover(
    scratch: &Scratch,
    main: Control,
    (from0, threads0): (u64, u32),
    spilled: &Spilled,
) -> Vec<Proc> {
    let mut procs = vec![Proc {
        info: info(0, main.pid),
        ctl: main,
        data: scratch.data.clone(),
        maps: with_suffix(&scratch.data, wire::MAPS_SUFFIX),
    }];
    let mut children: Vec<Proc> = child_pids(&scratch.ctl)
        .into_iter()
        .map(|(sfx, pid)| {
            let data = with_suffix(&scratch.data, &sfx);
            Proc {
                info: info(0, Some(pid)),
                ctl: Control::read(&with_suffix(&scratch.ctl, &sfx)),
                maps: with_suffix(&data, wire::MAPS_SUFFIX),
                data,
            }
        })
        .filter(|p| p.ctl.hello)
        .collect();
    children.sort_by_key(|p| (p.ctl.started().map_or(u64::MAX, |f| f.1), p.info.pid));
    procs.extend(children);
    let mut first = 0;
    for i in 0..procs.len() {
        let parent = parent_of(&procs[..i], &procs[i]);
        let from = if i == 0 { from0 } else { 0 };
        let counted = spilled.threads(&procs[i].data, from).unwrap_or(0);
        let tasks = if i == 0 {
            counted.max(threads0)
        } else {
            counted
        };
        let p = &mut procs[i].info;
        p.index = i as u32;
        // A process whose parent is not traced (a program a shell started) is put under
        // the program, so the table stays a tree.
        p.parent = (i > 0).then(|| parent.unwrap_or(0));
        p.first_task = first;
        p.tasks = tasks;
        first += tasks;
    }
    // A process that recorded no thread takes no task; the table lists those that did.
    let mut kept: Vec<Proc> = procs
        .into_iter()
        .enumerate()
        .filter(|(i, p)| *i == 0 || p.info.tasks > 0)
        .map(|(_, p)| p)
        .collect();
    renumber(&mut kept);
    kept
}

impl Control {
    /// The parent's pid and the time this process started recording, unless it is the
    /// program's own.
    fn started(&self) -> Option<(u32, u64)> {
        self.forked.or(self.execed)
    }
}

/// The index among `earlier` of `p`'s parent: for an exec'd program the image it replaced
/// (the latest process of the same pid that exec'd), else the latest process whose pid is
/// the parent's pid.
fn parent_of(earlier: &[Proc], p: &Proc) -> Option<u32> {
    let latest = |f: &dyn Fn(&Proc) -> bool| earlier.iter().rposition(f).map(|i| i as u32);
    let replaced = p
        .ctl
        .execed
        .and_then(|_| latest(&|q| q.info.pid == p.info.pid && q.ctl.exec));
    let ppid = p.ctl.started()?.0 as i32;
    replaced.or_else(|| latest(&|q| q.info.pid == ppid))
}

/// Gives the kept processes consecutive indexes, their parents following.
fn renumber(procs: &mut [Proc]) {
    let old: Vec<u32> = procs.iter().map(|p| p.info.index).collect();
    for p in procs.iter_mut() {
        p.info.index = old.iter().position(|&o| o == p.info.index).unwrap_or(0) as u32;
        p.info.parent = p
            .info
            .parent
            .map(|q| old.iter().position(|&o| o == q).unwrap_or(0) as u32);
    }
}

fn info(index: u32, pid: Option<u32>) -> ProcessInfo {
    ProcessInfo {
        index,
        pid: pid.unwrap_or(0) as i32,
        parent: None,
        first_task: 0,
        tasks: 0,
        status: TraceStatus::Incomplete,
    }
}

/// How a forked child's part of the trace ends: whole when it exited or exec'd after
/// flushing; Incomplete when it was stopped or killed (no end marker), failed to write or
/// its stream is torn; Crashed when it died of another signal.
pub(super) fn child_status(ctl: &Control, torn: bool) -> TraceStatus {
    match ctl.crashed.map(|s| s as i32) {
        Some(sig) if STOP_SIGNALS.contains(&sig) => TraceStatus::Incomplete,
        Some(_) => TraceStatus::Crashed,
        None if torn || ctl.write_errno.is_some() => TraceStatus::Incomplete,
        None if ctl.done.is_some() || ctl.exec => TraceStatus::Complete,
        None => TraceStatus::Incomplete,
    }
}

/// Sets each process's status (the program's from its exit status) and returns the
/// trace's: the program's, but never Complete when a child's part is not.
pub(super) fn settle(procs: &mut [Proc], torn: &[bool], status: &ExitStatus) -> TraceStatus {
    for (i, p) in procs.iter_mut().enumerate() {
        let torn = torn.get(i).copied().unwrap_or(false);
        p.info.status = if i == 0 {
            status_of(&p.ctl, status, torn)
        } else {
            child_status(&p.ctl, torn)
        };
    }
    let main = procs[0].info.status;
    if main == TraceStatus::Complete && procs.iter().any(|p| p.info.status != main) {
        return TraceStatus::Incomplete;
    }
    main
}

/// Every scratch file of the run: the program's, its children's and the maps snapshots.
pub(super) fn scratch_files(scratch: &Scratch) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for base in [&scratch.data, &scratch.ctl] {
        let (Some(dir), Some(name)) = (base.parent(), base.file_name()) else {
            continue;
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let name = name.to_string_lossy().into_owned();
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        all.extend(entries.filter_map(|e| {
            let e = e.ok()?;
            let n = e.file_name().into_string().ok()?;
            n.strip_prefix(&name)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
                .then(|| e.path())
        }));
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_part_is_whole_only_after_exit_or_exec() {
        let ctl = |done, exec, crashed, errno| Control {
            hello: true,
            done,
            exec,
            crashed,
            write_errno: errno,
            ..Control::default()
        };
        assert_eq!(
            child_status(&ctl(Some(1), false, None, None), false),
            TraceStatus::Complete
        );
        assert_eq!(
            child_status(&ctl(None, true, None, None), false),
            TraceStatus::Complete
        );
        // Killed (SIGKILL leaves no message), torn, failed to write, stopped, crashed.
        assert_eq!(
            child_status(&ctl(None, false, None, None), false),
            TraceStatus::Incomplete
        );
        assert_eq!(
            child_status(&ctl(Some(1), false, None, None), true),
            TraceStatus::Incomplete
        );
        assert_eq!(
            child_status(&ctl(Some(1), false, None, Some(28)), false),
            TraceStatus::Incomplete
        );
        assert_eq!(
            child_status(&ctl(None, false, Some(15), None), false),
            TraceStatus::Incomplete
        );
        assert_eq!(
            child_status(&ctl(None, false, Some(11), None), false),
            TraceStatus::Crashed
        );
    }
}
