//! Issue 21, item 2: a trace cut at a frame boundary read without an error, and `analyze`,
//! `sim` and `map --trace` called it Complete. Every reader must say, in one line on
//! stderr, that it is Incomplete and where it ends, go on with what was read, and carry
//! `"complete": false` in its JSON. The trace is committed
//! (`tests/fixtures/traces/pairs-8t.trace`); `BLESS=1` writes it again from its generator.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tdmap_sharing::patterns::{accesses, Pattern};
use tdmap_trace::{Header, Reader, TraceStatus, Writer};

fn tdmap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args(args)
        .output()
        .unwrap()
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("tdmap-incomplete-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The committed 8-thread trace of distant pairs, 3 frames per thread; with `BLESS=1`
/// written first from its generator.
fn trace(path: &Path) -> Vec<u8> {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/pairs-8t.trace");
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(fixture.parent().unwrap()).unwrap();
        let mut h = Header::new(vec!["pairs".into(), "8".into()], "xeon-x7550-4s");
        h.threads = 8;
        let w = Writer::create(&fixture, h).unwrap();
        for (t, v) in accesses(Pattern::Pairs, 8, 3, 64, 3, 4) {
            w.append_accesses(t, &v).unwrap();
        }
        w.finish(TraceStatus::Complete).unwrap();
    }
    let bytes = std::fs::read(&fixture).unwrap();
    std::fs::write(path, &bytes).unwrap();
    bytes
}

/// Every length at which the trace ends on a frame boundary (not whole).
fn frame_boundaries(bytes: &[u8]) -> Vec<usize> {
    (1..bytes.len())
        .filter(|&cut| {
            let Ok(mut r) = Reader::with_source(std::io::Cursor::new(&bytes[..cut]), "t".into())
            else {
                return false;
            };
            while let Ok(Some(_)) = r.next_chunk() {}
            r.ending().is_some_and(|e| !e.cut_frame)
        })
        .collect()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Runs analyze, sim and map --trace (JSON) on `p`; checks each says `ends at byte
/// {ends}` once on stderr and carries `"complete": false`, or for `None` that it is
/// Complete and says nothing.
fn readers_agree(p: &Path, ends: Option<usize>) {
    let p = p.to_str().unwrap();
    let x = ["--machine", "xeon-x7550-4s"];
    let runs = [
        ("analyze", tdmap(&["analyze", p, "--json", x[0], x[1]])),
        (
            "sim",
            tdmap(&["sim", p, "--json", "--policies", "os", x[0], x[1]]),
        ),
        ("map", tdmap(&["map", "--trace", p, "--json", x[0], x[1]])),
    ];
    for (cmd, out) in runs {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{cmd} {p}: {err}");
        let v = json(&out);
        match ends {
            Some(n) => {
                let line = format!(
                    "tdmap: {p} is incomplete: it ends at byte {n}, before its end marker; results cover what was read\n"
                );
                assert_eq!(err, line, "{cmd}");
                assert_eq!(v["complete"], false, "{cmd} {p}");
            }
            None => {
                assert_eq!(err, "", "{cmd}");
                assert_eq!(v["complete"], true, "{cmd} {p}");
            }
        }
        if cmd == "analyze" {
            let want = if ends.is_some() {
                "Incomplete"
            } else {
                "Complete"
            };
            assert_eq!(v["status"], want);
        }
    }
}

#[test]
fn a_trace_cut_at_670_bytes_and_at_every_frame_boundary_reads_incomplete() {
    let d = dir();
    let whole = d.join("whole.trace");
    let bytes = trace(&whole);
    readers_agree(&whole, None);
    let cuts = frame_boundaries(&bytes);
    // Header end, 24 event frames, the threads frame and the end frame.
    assert_eq!(cuts.len(), 27, "{cuts:?}");
    let p = d.join("cut.trace");
    for &cut in &cuts {
        std::fs::write(&p, &bytes[..cut]).unwrap();
        readers_agree(&p, Some(cut));
        let text = tdmap(&["analyze", p.to_str().unwrap()]);
        let out = String::from_utf8_lossy(&text.stdout);
        assert!(
            out.starts_with(&format!("trace     {} (Incomplete,", p.display())),
            "{out}"
        );
    }
    // 670 bytes falls inside a frame here: the reader stops at the last whole one.
    std::fs::write(&p, &bytes[..670]).unwrap();
    let last = cuts.iter().copied().filter(|&c| c <= 670).max().unwrap();
    assert!(last < 670, "670 is a boundary: {cuts:?}");
    readers_agree(&p, Some(last));
    let chk = tdmap(&["trace-check", p.to_str().unwrap()]);
    assert_eq!(chk.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&chk.stderr).contains("is incomplete: it ends at byte"));
    std::fs::remove_dir_all(&d).unwrap();
}
