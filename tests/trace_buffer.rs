//! Issue 17 item 1: `tdmap trace --model-only` never writes the raw stream to the disk
//! (it goes through /dev/shm), and the runtime stays at most `--buffer-mib` ahead of the
//! model: a thread about to write past it waits for tdmap to consume and free the blocks.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");

fn scratch() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace-buffer")
}

fn stencil3d() -> PathBuf {
    common::cargo_build("tdmap-rt");
    let dir = scratch().join("build");
    let prog = dir.join("tdmap/stencil3d");
    let out = Command::new("make")
        .args(["-s", "-C"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads"))
        .arg(format!("TDMAP={TDMAP}"))
        .arg(format!("BUILD={}", dir.display()))
        .arg(&prog)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    prog
}

#[test]
fn model_only_keeps_its_stream_in_memory_within_the_buffer() {
    let prog = stencil3d();
    let dir = scratch().join("out");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("s.model.json");
    let out = Command::new(TDMAP)
        .args(["trace", "--model-only", "--json", "--buffer-mib", "1", "-o"])
        .arg(&model)
        .arg("--")
        .arg(&prog)
        .args(["8", "16"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let json: serde_json::Value = serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap();
    let raw = PathBuf::from(json["scratch"].as_str().unwrap());
    assert!(raw.starts_with("/dev/shm"), "{json}");
    assert!(!raw.exists(), "the raw stream is removed");
    // The stream is far larger than the buffer: 8 bytes per access.
    let events = json["events"].as_u64().unwrap();
    assert!(events * 8 > 8 << 20, "{json}");
    // Each of the 8 threads may pass the check with one chunk (64 KiB and its header)
    // before the others' land.
    let peak = json["peak_buffer_bytes"].as_u64().unwrap();
    eprintln!(
        "{events} events, {} MiB of raw stream, peak {peak} bytes held",
        (events * 8) >> 20
    );
    assert!(
        peak > 0 && peak <= (1 << 20) + 8 * (66 << 10),
        "peak {peak}"
    );
    // Only the model reached the output folder.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("s.model.json")]);
}
