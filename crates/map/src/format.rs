//! A mapping written for the tool that applies it: OpenMP places, an Open MPI rankfile,
//! a Slurm CPU map, hwloc-bind or taskset command lines. OS CPU numbers are used where
//! the tool expects them, hwloc logical indexes where it expects those.

use crate::MapError;
use tdmap_topo::Topology;

/// An output format of `tdmap map`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (written by the command itself).
    Json,
    /// `OMP_PLACES` and `OMP_PROC_BIND` for an OpenMP program.
    OmpPlaces,
    /// An Open MPI rankfile.
    Rankfile,
    /// `srun --cpu-bind=map_cpu:…`.
    Slurm,
    /// One `hwloc-bind` command line per thread or rank.
    HwlocBind,
    /// One `taskset` command line per thread or rank.
    Taskset,
}

impl Format {
    /// All formats.
    pub const ALL: [Format; 6] = [
        Format::Json,
        Format::OmpPlaces,
        Format::Rankfile,
        Format::Slurm,
        Format::HwlocBind,
        Format::Taskset,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::OmpPlaces => "omp-places",
            Format::Rankfile => "rankfile",
            Format::Slurm => "slurm",
            Format::HwlocBind => "hwloc-bind",
            Format::Taskset => "taskset",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = MapError;
    fn from_str(s: &str) -> Result<Format, MapError> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| MapError::UnknownFormat(s.to_string()))
    }
}

/// Renders `mapping` (thread → logical PU of `topo`) in a text format; the lines
/// starting with `#` are comments every target accepts.
pub fn render(format: Format, topo: &Topology, mapping: &[usize]) -> String {
    let os = |pu: usize| topo.pus[pu].os;
    let mut out = String::new();
    match format {
        Format::Json => {}
        Format::OmpPlaces => {
            let places: Vec<String> = mapping.iter().map(|&p| format!("{{{}}}", os(p))).collect();
            out.push_str(&format!("export OMP_NUM_THREADS={}\n", mapping.len()));
            out.push_str(&format!("export OMP_PLACES=\"{}\"\n", places.join(",")));
            // With `close` and one place per thread, thread i gets place i (OpenMP 5.2 §10.1.3).
            out.push_str("export OMP_PROC_BIND=close\n");
        }
        Format::Rankfile => {
            out.push_str("# mpirun --use-hwthread-cpus --rankfile FILE; slot = hwloc logical PU\n");
            for (r, &p) in mapping.iter().enumerate() {
                out.push_str(&format!("rank {r}=localhost slot={p}\n"));
            }
        }
        Format::Slurm => {
            let cpus: Vec<String> = mapping.iter().map(|&p| os(p).to_string()).collect();
            out.push_str(&format!("srun --cpu-bind=map_cpu:{} ", cpus.join(",")));
            out.push_str(&format!("--ntasks={} COMMAND\n", mapping.len()));
        }
        Format::HwlocBind => {
            for (t, &p) in mapping.iter().enumerate() {
                out.push_str(&format!(
                    "hwloc-bind pu:{p} -- COMMAND  # rank {t}, OS CPU {}\n",
                    os(p)
                ));
            }
        }
        Format::Taskset => {
            for (t, &p) in mapping.iter().enumerate() {
                out.push_str(&format!("taskset -c {} COMMAND  # rank {t}\n", os(p)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_use_os_numbers_where_tools_expect_them() {
        let topo = tdmap_topo::from_synthetic("package:2 core:2").unwrap();
        let m = [2, 0];
        let omp = render(Format::OmpPlaces, &topo, &m);
        assert!(omp.contains("OMP_PLACES=\"{2},{0}\""), "{omp}");
        assert!(omp.contains("OMP_PROC_BIND=close"));
        assert!(render(Format::Slurm, &topo, &m).starts_with("srun --cpu-bind=map_cpu:2,0 "));
        assert!(render(Format::Rankfile, &topo, &m).contains("rank 1=localhost slot=0\n"));
        assert!(render(Format::Taskset, &topo, &m).starts_with("taskset -c 2 COMMAND"));
        assert!(render(Format::HwlocBind, &topo, &m).contains("hwloc-bind pu:0 --"));
        assert_eq!("omp-places".parse::<Format>(), Ok(Format::OmpPlaces));
        assert!("xml".parse::<Format>().is_err());
    }
}
