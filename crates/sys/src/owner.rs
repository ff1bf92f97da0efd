//! Who owns a process: `tdmap run` acts (affinity, page moves) only on processes of the
//! user running it, checked from `/proc/PID/status` before each round of actions, since
//! a set-user-ID program changes owner at exec.

use crate::{FsRoot, SysError};

/// The real and effective uid of `pid`, from its `Uid:` line.
pub fn process_uids(fs: &FsRoot, pid: i32) -> Result<(u32, u32), SysError> {
    let abs = format!("/proc/{pid}/status");
    let text = fs.read(&abs)?;
    parse_uids(&text).ok_or_else(|| SysError::Parse {
        path: fs.path(&abs),
        what: "no 'Uid:' line with real and effective uids".into(),
    })
}

fn parse_uids(status: &str) -> Option<(u32, u32)> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_whitespace().map(|w| w.parse().ok());
    Some((ids.next()??, ids.next()??))
}

/// True when `pid`'s real and effective uids are both the caller's real uid.
pub fn owned_by_caller(fs: &FsRoot, pid: i32) -> Result<bool, SysError> {
    // SAFETY: getuid has no arguments and cannot fail.
    let me = unsafe { libc::getuid() };
    let (real, effective) = process_uids(fs, pid)?;
    Ok(real == me && effective == me)
}

/// The tids of `pid`'s threads alive now, ascending (`/proc/PID/task`): the kernel hands
/// out tids in creation order, so this is the threads' creation order until tids wrap.
pub fn task_ids(fs: &FsRoot, pid: i32) -> Result<Vec<u32>, SysError> {
    let mut tids: Vec<u32> = fs
        .list(format!("/proc/{pid}/task"))?
        .iter()
        .filter_map(|t| t.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_line_is_parsed_and_a_missing_one_is_named() {
        assert_eq!(
            parse_uids("Name:\tx\nUid:\t1000\t0\t0\t0\n"),
            Some((1000, 0))
        );
        assert_eq!(parse_uids("Name:\tx\n"), None);
    }

    #[test]
    fn our_own_process_is_ours() {
        let pid = std::process::id() as i32;
        assert!(owned_by_caller(&FsRoot::default(), pid).unwrap());
    }

    #[test]
    fn our_main_thread_is_among_our_tasks_in_ascending_order() {
        let pid = std::process::id();
        let tids = task_ids(&FsRoot::default(), pid as i32).unwrap();
        assert!(tids.contains(&pid), "{tids:?}");
        assert!(tids.windows(2).all(|w| w[0] < w[1]), "{tids:?}");
    }
}
