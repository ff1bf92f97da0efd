//! A recorded raw stream written back at once by a script, where the runtime would write
//! it (how `bench/trace_same.sh` replays a run): the trace must be whole. The early
//! conversion's follower freed all it had read ahead into its read buffer until the
//! first event was converted; when it then stopped (the recording's pid is gone, so
//! process 0 is never alone), the conversion after the exit read those bytes again from
//! the raw file and met a hole: an Incomplete trace of a fraction of the accesses.

mod common;
#[allow(dead_code)]
mod workloads;

use std::path::Path;
use std::process::Command;

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");

#[test]
fn a_stream_written_at_once_converts_whole() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay");
    std::fs::create_dir_all(&dir).unwrap();
    let prog = workloads::build(TDMAP, &dir.join("build")).join("tdmap/cg");
    let (raw, ctl) = (dir.join("rec.raw"), dir.join("rec.ctl"));
    let rec = Command::new(&prog)
        .args(["8", "40", "1"])
        .env("TDMAP_RT_DATA", &raw)
        .env("TDMAP_RT_CTL", &ctl)
        .output()
        .unwrap();
    assert!(rec.status.success());
    let script = dir.join("replay.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat \"$2\" >\"$TDMAP_RT_CTL\" && cat \"$1\" >\"$TDMAP_RT_DATA\"\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    let trace = dir.join("replay.trace");
    // The race needs the follower's first read to catch up: a few runs.
    for _ in 0..3 {
        let out = Command::new(TDMAP)
            .args(["trace", "--force", "-o"])
            .arg(&trace)
            .arg("--")
            .args([&script, &raw, &ctl])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        let r = tdmap_trace::check(&trace);
        assert!(r.ok() && r.complete, "{err}: {:?}", r.problems);
        // cg 8 40 makes 13.9 M accesses; the torn traces held 0.46 M.
        assert!(r.accesses > 10_000_000, "{err}: {} accesses", r.accesses);
    }
}
