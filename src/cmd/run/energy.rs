//! The energy `tdmap run` reports: two RAPL readings (tdmap-sys's reader, through
//! `TDMAP_FSROOT` when set), one as the program is released and one when it has ended.

use tdmap_monitor::report::MeasuredEnergy;
use tdmap_sys::rapl::{read_rapl, RaplReading};
use tdmap_sys::FsRoot;

/// A reading, or none when RAPL is unreadable (a malformed counter is said on stderr).
pub fn reading() -> Option<RaplReading> {
    match read_rapl(&FsRoot::from_env()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tdmap: RAPL: {e}; energy is reported unavailable");
            None
        }
    }
}

/// The energy from `before` to now, if both readings were taken.
pub fn since(before: Option<RaplReading>) -> Option<MeasuredEnergy> {
    let e = before?.energy_to(&reading()?);
    (e.package_j.is_some() || e.dram_j.is_some()).then_some(MeasuredEnergy {
        package_j: e.package_j,
        dram_j: e.dram_j,
    })
}

/// The report's energy line.
pub fn line(e: Option<&MeasuredEnergy>) -> String {
    let j = |v: Option<f64>| v.map_or("unavailable".to_string(), |v| format!("{v:.3} J"));
    match e {
        Some(e) => format!(
            "energy (RAPL, measured): package {}, DRAM {}",
            j(e.package_j),
            j(e.dram_j)
        ),
        None => {
            "energy (RAPL): unavailable (no readable /sys/class/powercap/intel-rapl:* zone)".into()
        }
    }
}
