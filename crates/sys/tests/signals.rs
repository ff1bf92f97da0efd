//! `forward_signals` and the program's start state. A binary of its own: it installs
//! process-wide signal handlers, raises signals and blocks one in the test thread.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::ExitStatusExt;
use tdmap_sys::{forward_signals, spawn_gated};

fn sh(script: &str) -> tdmap_sys::GatedChild {
    let args = [OsString::from("-c"), script.into()];
    let mut c = spawn_gated(OsStr::new("sh"), &args).unwrap();
    c.release().unwrap();
    c
}

/// Every test here touches the dispositions or the mask: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_signal_sent_to_this_process_goes_to_the_program_instead() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = sh("sleep 30");
    let fwd = forward_signals(c.pid()).unwrap();
    assert!(
        forward_signals(c.pid()).is_err(),
        "one forwarding at a time"
    );
    // SAFETY: the handler is installed, so this process survives its own SIGTERM.
    unsafe { libc::raise(libc::SIGTERM) };
    assert_eq!(c.wait().unwrap().signal(), Some(libc::SIGTERM));
    assert_eq!(fwd.received(), Some(libc::SIGTERM));
    drop(fwd);
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: reads the current disposition into a live struct.
    unsafe { libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut old) };
    assert_eq!(
        old.sa_sigaction,
        libc::SIG_DFL,
        "dropping restores the disposition"
    );
}

#[test]
fn the_program_keeps_the_signal_mask_and_gets_sigpipes_default() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: plain sigset manipulation on locals, then this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let dir = std::env::temp_dir().join(format!("tdmap-sigmask-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("status");
    // cp's own status, read by cp itself: no shell that could change its mask.
    let args = [OsString::from("/proc/self/status"), out.clone().into()];
    let mut c = spawn_gated(OsStr::new("cp"), &args).unwrap();
    c.release().unwrap();
    assert!(c.wait().unwrap().success());
    // SAFETY: as above.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
    let text = std::fs::read_to_string(&out).unwrap();
    let mask = |key: &str| {
        let line = text.lines().find(|l| l.starts_with(key)).unwrap();
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    };
    let bit = |sig: i32| 1u64 << (sig - 1);
    assert_ne!(mask("SigBlk:") & bit(libc::SIGUSR1), 0, "{text}");
    assert_eq!(mask("SigIgn:") & bit(libc::SIGPIPE), 0, "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
