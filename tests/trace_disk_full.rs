//! Issue 21 item 5 and issue 17's full disk: `tdmap trace` on a full disk exited 1 with
//! its error printed twice and left a 0-byte trace. Now the trace keeps every whole
//! frame, reads as Incomplete, and the error is one line. Each test mounts a small tmpfs
//! (root only; skipped with a message otherwise), so they sit in a binary of their own.

mod common;
#[allow(dead_code)]
mod workloads;

use std::path::{Path, PathBuf};
use std::process::Command;

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");

/// A tmpfs of `size` at a fresh folder, unmounted on drop; None when not root.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(name: &str, size: &str) -> Option<Tmpfs> {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("disk-full-{name}"));
        let _ = Command::new("umount").arg(&dir).output();
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        Some(Tmpfs(dir))
    }

    fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn instrumented(name: &str) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("disk-full-build");
        workloads::build(TDMAP, &d)
    });
    dir.join("tdmap").join(name)
}

#[test]
fn a_disk_the_run_fills_leaves_a_readable_incomplete_trace_and_one_error() {
    let Some(fs) = Tmpfs::mount("fills", "8m") else {
        return;
    };
    // All but 32 KiB taken, a fraction of the trace alone (about 120 KB at 0.01 B per
    // access): the run fills the disk however well the conversion keeps up with the raw
    // stream (a converter that kept up left the raw file small enough to fit, and the
    // run completed: at 256 KiB, once predicted chunks went into the trace unexpanded).
    std::fs::write(fs.0.join("fill"), vec![1u8; (8 << 20) - (32 << 10)]).unwrap();
    let trace = fs.0.join("p.trace");
    let out = Command::new(TDMAP)
        .args(["trace", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(instrumented("pairs"))
        .args(["2", "64", "3000"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("No space left on device").count(), 1, "{err}");
    assert_eq!(fs.files(), ["fill", "p.trace"], "scratch files left: {err}");
    let mut r = tdmap_trace::Reader::open(&trace).unwrap();
    let mut events = 0;
    while let Some(c) = r.next_chunk().unwrap() {
        events += c.len();
    }
    assert!(events > 0, "{err}");
    assert_eq!(
        r.ending().unwrap().status,
        tdmap_trace::TraceStatus::Incomplete
    );
    assert!(tdmap_trace::check(&trace).ok());
}

#[test]
fn a_disk_full_before_the_run_is_exit_2_before_the_program_starts() {
    let Some(fs) = Tmpfs::mount("full", "1m") else {
        return;
    };
    let fill = fs.0.join("fill");
    let _ = std::fs::write(&fill, vec![0u8; 2 << 20]);
    let out = Command::new(TDMAP)
        .args(["trace", "-o"])
        .arg(fs.0.join("p.trace"))
        .arg("--")
        .arg(instrumented("pairs"))
        .args(["2", "64"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(err.matches("No space left on device").count(), 1, "{err}");
    assert!(out.stdout.is_empty(), "the program ran");
    assert_eq!(fs.files(), ["fill"]);
}
