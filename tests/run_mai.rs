//! `tdmap run --mai-auto` on this machine: the program runs with libmai preloaded in
//! automatic mode (MApp §3.2), whose choices show in `MAI_AUTO_LOG`, with its output
//! unchanged and the report saying so; with `--sampler inject` both libraries are
//! preloaded ahead of the user's; a libmai.so that cannot be preloaded exits 2 with one
//! line naming it and the fix.

mod common;

use common::{assert_bad_input, cargo_build, gcc_test_program, run_json_env};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");

/// tests/mai/sum.c built with gcc, and libmai.so beside tdmap; once.
fn sum_program() -> &'static Path {
    static PROG: OnceLock<PathBuf> = OnceLock::new();
    PROG.get_or_init(|| {
        cargo_build("tdmap-mai");
        gcc_test_program("mai/sum.c", "mai-sum")
    })
}

/// A fresh path under the test target's temporary directory.
fn tmp(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mai-{name}"));
    let _ = std::fs::remove_file(&p);
    p
}

/// libmai's log lines for the 4 MiB malloc and calloc of sum.c, with a policy applied.
fn allocation_lines(log: &str) -> Vec<&str> {
    placed(log, &["malloc(4194304)", "calloc(4194304)"])
}

/// libmai's log lines naming one of `what`, with a policy applied.
fn placed<'a>(log: &'a str, what: &[&str]) -> Vec<&'a str> {
    log.lines()
        .filter(|l| what.iter().any(|w| l.contains(w)))
        .filter(|l| l.ends_with(": cyclic") || l.ends_with(": bind_block"))
        .collect()
}

#[test]
fn mai_auto_logs_a_policy_per_large_array_and_keeps_the_output() {
    let prog = sum_program();
    let bare = Command::new(prog).output().unwrap();
    assert!(bare.status.success());
    let bare = String::from_utf8(bare.stdout).unwrap();
    let log = tmp("auto.log");
    let env = [
        ("MAI_AUTO_LOG", log.to_str().unwrap()),
        ("MAI_AUTO_THRESHOLD", "1048576"),
    ];
    let (out, r, code) = run_json_env(&["--mai-auto", "--dry-run"], &env, prog, &[]);
    assert_eq!((code, out.as_str()), (0, bare.as_str()), "{r}");
    assert_eq!(r["mai_auto"], true, "{r}");
    let text = std::fs::read_to_string(&log).expect("libmai wrote MAI_AUTO_LOG");
    assert!(text.contains("(MApp §3.2)"), "no choice line: {text}");
    assert_eq!(allocation_lines(&text).len(), 2, "{text}");
    // Issue 22 item 7: the static table too, placed before main.
    assert_eq!(placed(&text, &["static table(4194304)"]).len(), 1, "{text}");

    let off = tmp("off.log");
    let env = [
        ("MAI_AUTO_LOG", off.to_str().unwrap()),
        ("MAI_AUTO_THRESHOLD", "1048576"),
    ];
    let (out, r, code) = run_json_env(&["--dry-run"], &env, prog, &[]);
    assert_eq!((code, out.as_str()), (0, bare.as_str()), "{r}");
    assert_eq!(r["mai_auto"], false, "{r}");
    assert!(!off.exists(), "libmai ran without --mai-auto");
}

/// Page moves stay on with a static mapping: libmai places first, Eq. 6 corrects.
#[test]
fn mai_auto_runs_with_a_static_mapping() {
    let prog = sum_program();
    let mapping = tmp("mapping.json");
    let csv = tmp("one-thread.csv");
    std::fs::write(&csv, "1\n").unwrap();
    let map = Command::new(TDMAP)
        .args(["map", "--json", "-a", "identity", "--matrix"])
        .arg(&csv)
        .output()
        .unwrap();
    assert!(
        map.status.success(),
        "{}",
        String::from_utf8_lossy(&map.stderr)
    );
    std::fs::write(&mapping, &map.stdout).unwrap();
    let log = tmp("mapping.log");
    let env = [
        ("MAI_AUTO_LOG", log.to_str().unwrap()),
        ("MAI_AUTO_THRESHOLD", "1048576"),
    ];
    let flags = ["--mai-auto", "--mapping", mapping.to_str().unwrap()];
    let (_, r, code) = run_json_env(&flags, &env, prog, &[]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(
        (&r["mode"], &r["mai_auto"]),
        (&"static mapping".into(), &true.into())
    );
    let text = std::fs::read_to_string(&log).expect("libmai wrote MAI_AUTO_LOG");
    assert_eq!(allocation_lines(&text).len(), 2, "{text}");
}

/// One LD_PRELOAD: the runtime, libmai, then the user's; libmai's settings inherited.
#[test]
fn inject_and_mai_auto_preload_both_ahead_of_the_users() {
    sum_program();
    cargo_build("tdmap-rt");
    let dir = Path::new(TDMAP).parent().unwrap();
    let log = tmp("inject.log");
    let env = [
        ("LD_PRELOAD", "libm.so.6"),
        ("MAI_AUTO_LOG", log.to_str().unwrap()),
        ("MAI_AUTO_THRESHOLD", "12345"),
    ];
    let flags = ["--sampler", "inject", "--mai-auto", "--dry-run"];
    let show = r#"printf '%s\n' "$LD_PRELOAD" "$MAI_AUTO" "$MAI_AUTO_THRESHOLD""#;
    let (out, r, code) = run_json_env(&flags, &env, Path::new("/bin/sh"), &["-c", show]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(
        (&r["sampler"], &r["mai_auto"]),
        (&"inject".into(), &true.into())
    );
    let preload = format!(
        "{}:{}:libm.so.6",
        dir.join("libtdmap_rt.so").display(),
        dir.join("libmai.so").display()
    );
    assert_eq!(out, format!("{preload}\n1\n12345\n"));
}

#[test]
fn the_text_report_says_mai_auto_is_on() {
    sum_program();
    let log = tmp("text.log");
    let out = Command::new(TDMAP)
        .args(["run", "--mai-auto", "--dry-run", "--", "true"])
        .env("MAI_AUTO_LOG", &log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines().any(|l| l.starts_with("mai-auto: on (")),
        "{err}"
    );
    let out = Command::new(TDMAP)
        .args(["run", "--dry-run", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().any(|l| l == "mai-auto: off"), "{err}");
}

#[test]
fn a_missing_libmai_exits_2_with_one_line_naming_it() {
    let out = Command::new(TDMAP)
        .args(["run", "--mai-auto", "--", "true"])
        .env("TDMAP_MAI_SO", "/nonexistent/libmai.so")
        .output()
        .unwrap();
    assert_bad_input(&out, "/nonexistent/libmai.so");
    assert_bad_input(&out, "cargo build -p tdmap-mai");

    // A tdmap with no libmai.so beside it (a link to the binary in an empty folder).
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mai-alone");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let alone = dir.join("tdmap");
    if std::fs::hard_link(TDMAP, &alone).is_err() {
        std::fs::copy(TDMAP, &alone).unwrap();
    }
    let out = Command::new(&alone)
        .args(["run", "--mai-auto", "--", "true"])
        .env_remove("TDMAP_MAI_SO")
        .output()
        .unwrap();
    assert_bad_input(&out, &dir.join("libmai.so").display().to_string());
    assert_bad_input(&out, "cargo build -p tdmap-mai");
}

#[test]
fn a_libmai_path_ld_preload_cannot_carry_is_refused() {
    let so = tmp("lib mai.so");
    std::fs::write(&so, "").unwrap();
    let out = Command::new(TDMAP)
        .args(["run", "--mai-auto", "--", "true"])
        .env("TDMAP_MAI_SO", &so)
        .output()
        .unwrap();
    assert_bad_input(&out, "TDMAP_MAI_SO");
}
