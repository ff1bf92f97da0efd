//! RAPL energy counters (`/sys/class/powercap/intel-rapl:*`), read through an
//! [`FsRoot`] so that a fake powercap tree under `TDMAP_FSROOT` stands in for the kernel's
//! (`tdmap run` reports the package and DRAM energy of the run from two readings).
//!
//! Each zone directory holds `name` (`package-N` for a package, `dram` for a package's
//! DRAM subzone, `core`, `uncore`, ...), `energy_uj` (a counter in microjoules that wraps
//! to 0 after `max_energy_range_uj`) and `max_energy_range_uj` (the kernel's
//! `Documentation/power/powercap/powercap.rst`). Parsing is pure; only [`read_rapl`]
//! touches the file system.

use crate::{FsRoot, SysError};

/// Where the powercap zones live.
pub const POWERCAP: &str = "/sys/class/powercap";

/// One zone's reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    /// The zone's directory name, e.g. `intel-rapl:0:1`.
    pub dir: String,
    /// Its `name` file, trimmed: `package-0`, `dram`, `core`...
    pub name: String,
    /// `energy_uj`.
    pub energy_uj: u64,
    /// `max_energy_range_uj`: the counter's range before it wraps.
    pub max_uj: u64,
}

/// Every readable RAPL zone at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RaplReading {
    /// The zones, by directory name.
    pub zones: Vec<Zone>,
}

/// Energy used between two readings, in joules; `None` where no zone of that kind was
/// readable both times.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RaplEnergy {
    /// Every `package-N` zone, added up.
    pub package_j: Option<f64>,
    /// Every `dram` zone, added up.
    pub dram_j: Option<f64>,
}

/// Reads every `intel-rapl:*` zone (top-level and subzones) that can be read whole.
/// A missing powercap folder, or one with no readable RAPL zone, is `Ok(None)`: RAPL is
/// then unavailable (no Intel RAPL driver, a VM, no permission on `energy_uj`, which
/// kernels since 5.10 restrict to root).
pub fn read_rapl(fs: &FsRoot) -> Result<Option<RaplReading>, SysError> {
    let Ok(dirs) = fs.list(POWERCAP) else {
        return Ok(None);
    };
    let mut zones = Vec::new();
    for dir in dirs.into_iter().filter(|d| d.starts_with("intel-rapl:")) {
        let file = |f: &str| fs.read(format!("{POWERCAP}/{dir}/{f}"));
        let (Ok(name), Ok(energy), Ok(max)) =
            (file("name"), file("energy_uj"), file("max_energy_range_uj"))
        else {
            continue;
        };
        let number = |text: &str, f: &str| {
            parse_uj(text).ok_or_else(|| SysError::Parse {
                path: fs.path(format!("{POWERCAP}/{dir}/{f}")),
                what: "a counter in microjoules (a non-negative integer)".into(),
            })
        };
        zones.push(Zone {
            name: name.trim().to_string(),
            energy_uj: number(&energy, "energy_uj")?,
            max_uj: number(&max, "max_energy_range_uj")?,
            dir,
        });
    }
    Ok((!zones.is_empty()).then_some(RaplReading { zones }))
}

/// Parses one counter file (`123456\n`).
pub fn parse_uj(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// Microjoules from `before` to `after` of a counter that wraps to 0 past `max`: one
/// wrap at most is seen (at 130 W, a 2^38 µJ range wraps every half hour or so; a
/// longer run between readings undercounts).
pub fn delta_uj(before: u64, after: u64, max: u64) -> u64 {
    if after >= before {
        after - before
    } else {
        max.saturating_sub(before) + after
    }
}

impl RaplReading {
    /// The package and DRAM energy from this reading to `later`, zone by zone.
    pub fn energy_to(&self, later: &RaplReading) -> RaplEnergy {
        let mut out = RaplEnergy::default();
        for b in &self.zones {
            let Some(a) = later.zones.iter().find(|z| z.dir == b.dir) else {
                continue;
            };
            let j = delta_uj(b.energy_uj, a.energy_uj, b.max_uj) as f64 * 1e-6;
            let slot = if b.name.starts_with("package") {
                &mut out.package_j
            } else if b.name == "dram" {
                &mut out.dram_j
            } else {
                continue;
            };
            *slot = Some(slot.unwrap_or(0.0) + j);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn zone(root: &Path, dir: &str, name: &str, energy: u64, max: u64) {
        let d = root.join("sys/class/powercap").join(dir);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(d.join("energy_uj"), format!("{energy}\n")).unwrap();
        std::fs::write(d.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
    }

    #[test]
    fn a_wrapping_counter_counts_across_the_wrap() {
        assert_eq!(delta_uj(100, 250, 1000), 150);
        assert_eq!(delta_uj(900, 50, 1000), 150, "wrapped past 1000");
        assert_eq!(delta_uj(7, 7, 1000), 0);
        assert_eq!(parse_uj(" 42\n"), Some(42));
        assert_eq!(parse_uj("-1"), None);
    }

    #[test]
    fn package_and_dram_zones_of_a_fake_tree_are_added_up() {
        let root = std::env::temp_dir().join(format!("tdmap-rapl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let max = 262_143_328_850;
        zone(&root, "intel-rapl:0", "package-0", max - 1_000_000, max);
        zone(&root, "intel-rapl:0:0", "dram", 5_000_000, 65_712_999_613);
        zone(&root, "intel-rapl:1", "package-1", 10_000_000, max);
        zone(&root, "intel-rapl:1:0", "core", 1, max);
        let fs = FsRoot::new(&root);
        let before = read_rapl(&fs).unwrap().unwrap();
        assert_eq!(before.zones.len(), 4);
        zone(&root, "intel-rapl:0", "package-0", 2_000_000, max); // wrapped: +3 J
        zone(&root, "intel-rapl:0:0", "dram", 6_500_000, 65_712_999_613); // +1.5 J
        zone(&root, "intel-rapl:1", "package-1", 14_000_000, max); // +4 J
        let after = read_rapl(&fs).unwrap().unwrap();
        let e = before.energy_to(&after);
        assert!((e.package_j.unwrap() - 7.0).abs() < 1e-9, "{e:?}");
        assert!((e.dram_j.unwrap() - 1.5).abs() < 1e-9, "{e:?}");
        std::fs::write(root.join("sys/class/powercap/intel-rapl:1/energy_uj"), "x").unwrap();
        let err = read_rapl(&fs).unwrap_err().to_string();
        assert!(err.contains("intel-rapl:1/energy_uj"), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn no_powercap_folder_is_unavailable() {
        let fs = FsRoot::new("/nonexistent-tdmap-root");
        assert_eq!(read_rapl(&fs).unwrap(), None);
        let e = RaplReading::default().energy_to(&RaplReading::default());
        assert_eq!((e.package_j, e.dram_j), (None, None));
    }
}
