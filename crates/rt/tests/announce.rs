//! The inject handler announced by construction (issue 16 item 5): a program started
//! with `libtdmap_rt.so` preloaded and an announcement pipe in `TDMAP_INJECT` (this test
//! process plays `tdmap run`'s part: it is the monitor, the program's parent) writes one
//! message on the pipe and closes it before `main`; the program's children never see
//! the descriptor.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use tdmap_wire::inject::{Settings, ENV, THREAD_NAME};
use tdmap_wire::{Announcement, AnnouncementReader, WireError};

/// libtdmap_rt.so of this profile (`target/PROFILE/`, beside the test's `deps/`),
/// built once per test binary: `cargo test` builds the crate's test harness, not its
/// cdylib, which would be stale.
fn runtime_so() -> PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let dir = exe.parent().unwrap().parent().unwrap();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut c = Command::new(cargo);
        c.args(["build", "-q", "-p", "tdmap-rt"]);
        if dir.ends_with("release") {
            c.arg("--release");
        }
        assert!(
            c.status().unwrap().success(),
            "cargo build -p tdmap-rt failed"
        );
        dir.join("libtdmap_rt.so")
    })
    .clone()
}

/// What one run shows: the announcement read up to EOF, whether EOF came while the
/// program still ran, and the program's stdout.
struct Run {
    announced: Result<Announcement, WireError>,
    eof_before_exit: bool,
    pid: u32,
    /// The pipe's write end's number in the program.
    fd: i32,
    stdout: String,
}

/// Runs `sh -c script` with the runtime preloaded and its settings naming the write
/// end of a pipe; `pre` runs in the child before `exec`. The script's first line of
/// input holds the program until the pipe reached EOF.
fn run(script: &str, pre: fn() -> std::io::Result<()>) -> Run {
    let (mut rd, wr) = std::io::pipe().unwrap();
    let wfd = wr.as_raw_fd();
    let settings = Settings {
        period_ms: 50,
        fraction: 0.1,
        pages: 16,
        monitor: std::process::id() as i32,
        announce_fd: Some(wfd),
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .env("LD_PRELOAD", runtime_so())
        .env(ENV, settings.encode())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    // SAFETY: fcntl and the given hook are async-signal-safe enough for a fresh child.
    unsafe {
        cmd.pre_exec(move || {
            // The program inherits the write end, as `tdmap run` will leave it.
            if libc::fcntl(wfd, libc::F_SETFD, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            pre()
        });
    }
    let mut child = cmd.spawn().unwrap();
    drop(wr);
    let mut r = AnnouncementReader::new();
    let mut buf = [0u8; 64];
    // The program waits on its stdin: EOF on the pipe within the time limit came while
    // it still ran. Past the limit, its stdin is closed and the pipe read to the end.
    let mut eof_before_exit = true;
    loop {
        if eof_before_exit && !readable_within(&rd, 10_000) {
            eof_before_exit = false;
            drop(child.stdin.take());
        }
        match rd.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                r.feed(&buf[..n]);
            }
            Err(e) => panic!("reading the pipe: {e}"),
        }
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    Run {
        announced: r.finish(),
        eof_before_exit,
        pid: child_pid(&out.stdout),
        fd: wfd,
        stdout: String::from_utf8(out.stdout).unwrap(),
    }
}

/// Whether this user and kernel have userfaultfd write-protection, without which the
/// runtime starts no handler; says so when not.
fn injects() -> bool {
    let probe = tdmap_sys::uffd::wp_probe();
    if let Err(e) = &probe {
        eprintln!("skipped: no handler thread can start here: {e}");
    }
    probe.is_ok()
}

/// Whether `rd` has data or EOF within `ms` milliseconds.
fn readable_within(rd: &impl AsRawFd, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd: rd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd.
    unsafe { libc::poll(&mut p, 1, ms) == 1 }
}

/// The script prints `pid N` first.
fn child_pid(stdout: &[u8]) -> u32 {
    let text = String::from_utf8_lossy(stdout);
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("pid ").unwrap().trim().parse().unwrap()
}

/// Prints the shell's pid, waits for its stdin to close, then prints its environment
/// value, the descriptors a child of it inherits, and its threads' names.
const SCRIPT: &str = r#"echo pid $$; read -r _ || true
echo "inject=$TDMAP_INJECT"
echo "fds=$(ls /proc/self/fd | tr '\n' ' ')"
for t in /proc/$$/task/*; do echo "task ${t##*/} $(cat $t/comm)"; done"#;

#[test]
fn the_handler_announces_its_tid_and_the_pipe_closes_before_main() {
    if !injects() {
        return;
    }
    let r = run(SCRIPT, || Ok(()));
    let Ok(Announcement::Handler { pid, tid }) = r.announced else {
        panic!("no handler announced: {:?}\n{}", r.announced, r.stdout);
    };
    assert_eq!(pid, r.pid, "{}", r.stdout);
    assert_ne!(tid, pid, "the handler is not the main thread");
    assert!(
        r.stdout
            .lines()
            .any(|l| l == format!("task {tid} {THREAD_NAME}")),
        "the announced tid is the handler thread: {}",
        r.stdout
    );
    assert!(r.eof_before_exit, "the runtime closed the pipe before main");
}

/// Pins the program to the CPU it starts on: the constructor and the new handler
/// thread then race for one CPU, where a constructor that did not wait for the handler
/// would close the pipe first.
fn one_cpu() -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(libc::sched_getcpu().max(0) as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[test]
fn the_announcement_is_never_lost_to_the_constructor_closing_first() {
    if !injects() {
        return;
    }
    for _ in 0..20 {
        let r = run("echo pid $$; read -r _ || true", one_cpu);
        assert!(
            matches!(r.announced, Ok(Announcement::Handler { pid, .. }) if pid == r.pid),
            "{:?}",
            r.announced
        );
    }
}

#[test]
fn children_neither_inherit_the_pipe_nor_see_its_number() {
    let r = run(SCRIPT, || Ok(()));
    let inject = r.stdout.lines().find_map(|l| l.strip_prefix("inject="));
    let s = Settings::decode(inject.unwrap()).unwrap();
    assert_eq!(s.announce_fd, None, "{}", r.stdout);
    let fds = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("fds="))
        .unwrap();
    assert!(
        !fds.split_whitespace().any(|fd| fd == r.fd.to_string()),
        "fd {} inherited: {fds}",
        r.fd
    );
}

/// A seccomp filter that makes `userfaultfd` fail with ENOSYS, in the child before exec.
fn no_userfaultfd() -> std::io::Result<()> {
    const LD_NR: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    let f = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let prog = [
        f(LD_NR, 0, 0, 0),
        f(JEQ, 0, 1, libc::SYS_userfaultfd as u32),
        f(RET, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        f(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: the filter outlives the calls, which copy it.
    let ok = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &fprog) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[test]
fn without_userfaultfd_the_runtime_announces_no_handler_and_closes() {
    let r = run(SCRIPT, no_userfaultfd);
    assert_eq!(
        r.announced,
        Ok(Announcement::NoHandler {
            pid: r.pid,
            errno: libc::ENOSYS as u32
        }),
        "{}",
        r.stdout
    );
    assert!(r.eof_before_exit);
    assert!(!r.stdout.contains(THREAD_NAME), "{}", r.stdout);
}
