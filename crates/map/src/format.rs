//! A mapping written for the tool that applies it: OpenMP places, an Open MPI rankfile,
//! an MPICH/Hydra hostfile, a Slurm host file and CPU binding, hwloc-bind or taskset
//! command lines. OS CPU numbers are used everywhere (hwloc-bind and Open MPI are told
//! so), because logical indexes change when tdmap sees only the CPUs it may use. The
//! launch formats live in [`crate::launch`].

use crate::MapError;
use tdmap_topo::Topology;

/// An output format of `tdmap map`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (written by the command itself).
    Json,
    /// `OMP_PLACES` and `OMP_PROC_BIND` for an OpenMP program.
    OmpPlaces,
    /// An Open MPI rankfile, with host names.
    Rankfile,
    /// An MPICH (Hydra) hostfile and its `-bind-to user:` list.
    Hostfile,
    /// A `SLURM_HOSTFILE` for `--distribution=arbitrary` and the `srun` lines.
    Slurm,
    /// One `hwloc-bind` command line per thread or rank.
    HwlocBind,
    /// One `taskset` command line per thread or rank.
    Taskset,
    /// One `numactl --physcpubind --membind` line: the mapped CPUs as a set, and the
    /// nodes of the mapped PUs for memory.
    Numactl,
}

impl Format {
    /// All formats.
    pub const ALL: [Format; 8] = [
        Format::Json,
        Format::OmpPlaces,
        Format::Rankfile,
        Format::Hostfile,
        Format::Slurm,
        Format::HwlocBind,
        Format::Taskset,
        Format::Numactl,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::OmpPlaces => "omp-places",
            Format::Rankfile => "rankfile",
            Format::Hostfile => "hostfile",
            Format::Slurm => "slurm",
            Format::HwlocBind => "hwloc-bind",
            Format::Taskset => "taskset",
            Format::Numactl => "numactl",
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

/// The OpenMP variables that put thread k on OS CPU `cpus[k]`: one place per thread,
/// `OMP_PROC_BIND=close` and as many threads as places. libgomp and libomp both read
/// them.
pub fn omp_env(cpus: &[usize]) -> [(&'static str, String); 3] {
    let places: Vec<String> = cpus.iter().map(|c| format!("{{{c}}}")).collect();
    [
        ("OMP_NUM_THREADS", cpus.len().to_string()),
        ("OMP_PLACES", places.join(",")),
        // With `close` and one place per thread, thread i gets place i (OpenMP 5.2 §10.1.3).
        ("OMP_PROC_BIND", "close".into()),
    ]
}

/// Renders `mapping` (thread → logical PU of `topo`) in a text format; the lines
/// starting with `#` are comments every target accepts.
pub fn render(format: Format, topo: &Topology, mapping: &[usize]) -> String {
    let os = |pu: usize| topo.pus[pu].os;
    let mut out = String::new();
    match format {
        Format::Json => {}
        Format::OmpPlaces => {
            let cpus: Vec<usize> = mapping.iter().map(|&p| os(p)).collect();
            for (var, value) in omp_env(&cpus) {
                if value.chars().all(|c| c.is_ascii_alphanumeric()) {
                    out.push_str(&format!("export {var}={value}\n"));
                } else {
                    out.push_str(&format!("export {var}=\"{value}\"\n"));
                }
            }
        }
        Format::Rankfile => crate::launch::rankfile(topo, mapping, &mut out),
        Format::Hostfile => crate::launch::hostfile(topo, mapping, &mut out),
        Format::Slurm => crate::launch::slurm(topo, mapping, &mut out),
        Format::HwlocBind => {
            for (t, &p) in mapping.iter().enumerate() {
                out.push_str(&format!(
                    "hwloc-bind -p pu:{} -- COMMAND  # rank {t} on {}\n",
                    os(p),
                    topo.host_name(p)
                ));
            }
        }
        Format::Taskset => {
            for (t, &p) in mapping.iter().enumerate() {
                out.push_str(&format!("taskset -c {} COMMAND  # rank {t}\n", os(p)));
            }
        }
        Format::Numactl => numactl(topo, mapping, &mut out),
    }
    out
}

/// `numactl` binds a process, not each thread: every thread may run on any mapped CPU,
/// and memory comes from the mapped PUs' nodes. One line per host on a cluster.
fn numactl(topo: &Topology, mapping: &[usize], out: &mut String) {
    out.push_str(
        "# numactl binds all threads to the set; per-thread placement: tdmap exec --mapping\n",
    );
    let mut hosts: Vec<usize> = mapping.iter().map(|&p| topo.pus[p].host).collect();
    hosts.sort_unstable();
    hosts.dedup();
    for h in hosts {
        let on: Vec<usize> = mapping
            .iter()
            .copied()
            .filter(|&p| topo.pus[p].host == h)
            .collect();
        let mut cpus: Vec<usize> = on.iter().map(|&p| topo.pus[p].os).collect();
        cpus.sort_unstable();
        cpus.dedup();
        let nodes: Vec<usize> = crate::membind(topo, &on);
        let host = if topo.is_cluster() {
            format!("  # on {}", topo.host_name(on[0]))
        } else {
            String::new()
        };
        out.push_str(&format!(
            "numactl --physcpubind={} --membind={} COMMAND{host}\n",
            tdmap_topo::cpu_list(&cpus),
            tdmap_topo::cpu_list(&nodes)
        ));
    }
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
        assert!(render(Format::Slurm, &topo, &m).contains("--cpu-bind=map_cpu:2,0 "));
        assert!(render(Format::Rankfile, &topo, &m).contains("rank 1=localhost slot=0\n"));
        assert!(render(Format::Taskset, &topo, &m).starts_with("taskset -c 2 COMMAND"));
        assert!(render(Format::HwlocBind, &topo, &m).contains("hwloc-bind -p pu:0 --"));
        assert_eq!("omp-places".parse::<Format>(), Ok(Format::OmpPlaces));
        assert_eq!("numactl".parse::<Format>(), Ok(Format::Numactl));
        assert!("xml".parse::<Format>().is_err());
    }

    #[test]
    fn numactl_binds_the_mapped_cpus_and_their_nodes() {
        let topo = tdmap_topo::from_synthetic("package:2 [numa] core:4").unwrap();
        let line = render(Format::Numactl, &topo, &[5, 4, 7]);
        assert!(
            line.ends_with("numactl --physcpubind=4-5,7 --membind=1 COMMAND\n"),
            "{line}"
        );
        let both = render(Format::Numactl, &topo, &[0, 6]);
        assert!(both.contains("--physcpubind=0,6 --membind=0-1 "), "{both}");
    }
}
