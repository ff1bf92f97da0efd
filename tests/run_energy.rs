//! `tdmap run` reports the energy that RAPL counters imply (issue 18 must-show 5): a fake
//! powercap tree under `TDMAP_FSROOT` whose counters the traced program itself advances,
//! the package counter across its wrap; and "unavailable" without one. This machine has
//! no powercap folder, so the fake tree is the only way to see a figure here.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");
const PKG_MAX: u64 = 262_143_328_850;
const DRAM_MAX: u64 = 65_712_999_613;

fn zone(root: &Path, dir: &str, name: &str, energy: u64, max: u64) -> PathBuf {
    let d = root.join("sys/class/powercap").join(dir);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
    std::fs::write(d.join("energy_uj"), format!("{energy}\n")).unwrap();
    std::fs::write(d.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
    d.join("energy_uj")
}

/// `tdmap run --json` of `sh -c script` with the root at `root`; the report's JSON.
fn run_json(root: &Path, script: &str) -> Value {
    let report = root.with_extension("report.json");
    let _ = std::fs::remove_file(&report);
    let out = Command::new(TDMAP)
        .args(["run", "--dry-run", "--json", "--report"])
        .arg(&report)
        .args(["--", "sh", "-c", script])
        .env("TDMAP_FSROOT", root)
        .output()
        .expect("tdmap runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&std::fs::read(&report).unwrap()).expect("a JSON report")
}

#[test]
fn the_energy_of_fake_rapl_counters_is_reported_across_a_wrap() {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake-rapl");
    let _ = std::fs::remove_dir_all(&root);
    // 850 µJ before the package counter wraps, then 2,999,150 µJ after: 3 J in all.
    let pkg = zone(&root, "intel-rapl:0", "package-0", PKG_MAX - 850, PKG_MAX);
    let dram = zone(&root, "intel-rapl:0:0", "dram", 1_000_000, DRAM_MAX);
    zone(&root, "intel-rapl:0:1", "core", 5, PKG_MAX);
    let script = format!(
        "echo 2999150 > '{}'; echo 3500000 > '{}'",
        pkg.display(),
        dram.display()
    );
    let v = run_json(&root, &script);
    let e = &v["energy"];
    let pj = e["package_j"].as_f64().expect("package energy");
    let dj = e["dram_j"].as_f64().expect("DRAM energy");
    assert!((pj - 3.0).abs() < 1e-9, "{e}");
    assert!((dj - 2.5).abs() < 1e-9, "{e}");

    // The text report says the same.
    zone(&root, "intel-rapl:0", "package-0", 10_000_000, PKG_MAX);
    let out = Command::new(TDMAP)
        .args(["run", "--dry-run", "--", "sh", "-c"])
        .arg(format!("echo 11250000 > '{}'", pkg.display()))
        .env("TDMAP_FSROOT", &root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        format!("{text}{err}").contains("package 1.250 J, DRAM 0.000 J"),
        "{text}{err}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn without_a_powercap_folder_energy_is_unavailable() {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-rapl");
    std::fs::create_dir_all(&root).unwrap();
    let v = run_json(&root, "true");
    assert!(v["energy"].is_null(), "{}", v["energy"]);
    let out = Command::new(TDMAP)
        .args(["run", "--dry-run", "--", "true"])
        .env("TDMAP_FSROOT", &root)
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("energy (RAPL): unavailable"), "{all}");
}
