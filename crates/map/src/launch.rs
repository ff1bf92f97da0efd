//! Launch files for MPI jobs: an Open MPI rankfile, an MPICH (Hydra) hostfile with its
//! `-bind-to user:` list, and Slurm's `SLURM_HOSTFILE` with `srun` lines. Each names
//! hosts (`localhost` on a single machine) and OS CPU numbers, and starts with the exact
//! command that applies it, as a `#` comment the tool ignores.
//!
//! Rank r of the mapping is MPI rank r (world rank). Hydra and Slurm bind by a rank's
//! local index: Slurm's among the ranks of its node, Hydra's among the ranks of its
//! hostfile line (checked with MPICH 4.0.2: lines `localhost:1`, `vm:1`, `localhost:1`
//! start three proxies, each rank local 0 of 1; adjacent lines of one host merge). One
//! list serves all only when those lists agree, so otherwise each rank binds itself with
//! `taskset` to the CPU on its line of a CPU file.

use tdmap_topo::Topology;

/// The CPUs (OS numbers) of the ranks of each host, in rank order.
fn per_host(topo: &Topology, mapping: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); topo.num_hosts()];
    for &p in mapping {
        out[topo.pus[p].host].push(topo.pus[p].os);
    }
    out
}

/// The one local-rank → CPU list that fits every list of `lists` (each a prefix of
/// it), if there is one.
fn common_list(lists: Vec<Vec<usize>>) -> Option<Vec<usize>> {
    let longest = lists.iter().max_by_key(|l| l.len())?.clone();
    lists
        .iter()
        .all(|l| longest.starts_with(l))
        .then_some(longest)
}

fn joined(cpus: &[usize]) -> String {
    let v: Vec<String> = cpus.iter().map(usize::to_string).collect();
    v.join(",")
}

/// Runs of consecutive ranks on one host: (host name, the ranks' OS CPUs in order).
fn runs<'t>(topo: &'t Topology, mapping: &[usize]) -> Vec<(&'t str, Vec<usize>)> {
    let mut out: Vec<(&str, Vec<usize>)> = Vec::new();
    for &p in mapping {
        let h = topo.host_name(p);
        let cpu = topo.pus[p].os;
        match out.last_mut() {
            Some((name, cpus)) if *name == h => cpus.push(cpu),
            _ => out.push((h, vec![cpu])),
        }
    }
    out
}

/// An Open MPI rankfile: `rank R=HOST slot=CPU`, CPU an OS number, hence
/// `rmaps_rank_file_physical`; `--use-hwthread-cpus` makes a slot a hardware thread
/// (otherwise Open MPI reads it as a core).
pub fn rankfile(topo: &Topology, mapping: &[usize], out: &mut String) {
    out.push_str(&format!(
        "# mpirun.openmpi --rankfile FILE --use-hwthread-cpus --mca rmaps_rank_file_physical 1 -np {} COMMAND\n",
        mapping.len()
    ));
    out.push_str("# slot = OS CPU number (physical), one hardware thread per rank\n");
    for (r, &p) in mapping.iter().enumerate() {
        out.push_str(&format!(
            "rank {r}={} slot={}\n",
            topo.host_name(p),
            topo.pus[p].os
        ));
    }
}

/// An MPICH (Hydra) hostfile: `HOST:COUNT` lines give consecutive ranks to hosts in
/// order; the command in the first line binds them (`-bind-to user:` by the rank's
/// index within its line).
pub fn hostfile(topo: &Topology, mapping: &[usize], out: &mut String) {
    let n = mapping.len();
    let lines = runs(topo, mapping);
    match common_list(lines.iter().map(|(_, cpus)| cpus.clone()).collect()) {
        Some(list) => out.push_str(&format!(
            "# mpiexec.mpich -f FILE -n {n} -bind-to user:{} COMMAND\n",
            joined(&list)
        )),
        None => {
            out.push_str(&format!(
                "# mpiexec.mpich -f FILE -n {n} sh -c 'exec taskset -c \"$(sed -n \"$((PMI_RANK+1))p\" tdmap.cpus)\" COMMAND'\n"
            ));
            out.push_str("# (the lines' CPU lists differ, and Hydra's user binding takes one list for all lines;\n");
            out.push_str("#  tdmap.cpus holds rank r's OS CPU on line r+1:)\n");
            let cpus: Vec<String> = mapping
                .iter()
                .map(|&p| topo.pus[p].os.to_string())
                .collect();
            out.push_str(&format!(
                "#  printf '%s\\n' {} > tdmap.cpus\n",
                cpus.join(" ")
            ));
        }
    }
    for (host, cpus) in lines {
        out.push_str(&format!("{host}:{}\n", cpus.len()));
    }
}

/// Slurm: a shell script that writes the `SLURM_HOSTFILE` (rank r on line r+1's host,
/// `--distribution=arbitrary`) and each rank's CPU, then the `srun` line that binds them.
///
/// tdmap must have run inside the job (a step or the batch script, whose CPU binding is
/// the job's CPUs on the node), so that the mapping uses only the job's CPUs. Checked on
/// slurmd 22.05 with task/affinity (`make slurm-check`): `map_cpu` is honoured in a
/// partial allocation when every CPU it names is the step's, and refused otherwise
/// ("CPU binding outside of job step allocation"), so a mapping made outside the job
/// fails loudly rather than running on CPUs the job does not hold; hence it is the
/// command when one list fits every host. Otherwise each rank binds itself with taskset,
/// which Slurm does not check (without cgroups, taskset can leave the job's CPUs).
pub fn slurm(topo: &Topology, mapping: &[usize], out: &mut String) {
    let n = mapping.len();
    out.push_str(
        "# Slurm: tdmap must run inside the job, so that the CPUs below are the job's: in the\n",
    );
    out.push_str(
        "# sbatch script, or `srun --ntasks=1 tdmap map ...` under salloc (salloc's own shell is\n",
    );
    out.push_str("# not bound to the job's CPUs). Rank r runs on line r+1's host (--distribution=arbitrary).\n");
    out.push_str(
        "# On several nodes, each node must give the job the CPUs of the node tdmap ran on\n",
    );
    out.push_str("# (whole nodes: --exclusive).\n");
    out.push_str("cat > tdmap.hosts <<'EOF'\n");
    for &p in mapping {
        out.push_str(topo.host_name(p));
        out.push('\n');
    }
    out.push_str("EOF\ncat > tdmap.cpus <<'EOF'\n");
    for &p in mapping {
        out.push_str(&format!("{}\n", topo.pus[p].os));
    }
    out.push_str("EOF\n");
    let srun = format!("SLURM_HOSTFILE=tdmap.hosts srun --distribution=arbitrary --ntasks={n}");
    let taskset = format!(
        "{srun} --cpu-bind=none sh -c 'exec taskset -c \"$(sed -n \"$((SLURM_PROCID+1))p\" tdmap.cpus)\" COMMAND'"
    );
    match common_list(per_host(topo, mapping)) {
        Some(list) => {
            out.push_str("# Slurm binds each node's k-th rank to the k-th CPU, and refuses a CPU outside the step.\n");
            out.push_str(&format!(
                "{srun} --cpu-bind=map_cpu:{} COMMAND\n",
                joined(&list)
            ));
            out.push_str("# Or each rank binds itself (not checked by Slurm):\n");
            out.push_str(&format!("# {taskset}\n"));
        }
        None => {
            out.push_str(
                "# Each rank binds itself to its CPU: the hosts' CPU lists differ, which one\n",
            );
            out.push_str(
                "# --cpu-bind=map_cpu list cannot say (Slurm does not check taskset's CPU).\n",
            );
            out.push_str(&format!("{taskset}\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{render, Format};

    fn cluster() -> Topology {
        let host = tdmap_topo::from_synthetic("core:2").unwrap();
        let mut t = tdmap_topo::cluster(&host, 2, 100, "c").unwrap();
        t.set_host_names(vec!["a".into(), "b".into()]).unwrap();
        t
    }

    #[test]
    fn launch_files_name_hosts_and_os_cpus() {
        let t = cluster();
        // Ranks 0,1 on host a (CPUs 1,0), ranks 2,3 on host b (CPUs 1,0).
        let m = [1, 0, 3, 2];
        let rf = render(Format::Rankfile, &t, &m);
        assert!(
            rf.contains("rank 0=a slot=1\nrank 1=a slot=0\nrank 2=b slot=1\n"),
            "{rf}"
        );
        assert!(rf.contains("rmaps_rank_file_physical 1 -np 4"), "{rf}");
        let hf = render(Format::Hostfile, &t, &m);
        assert!(hf.contains("-bind-to user:1,0 COMMAND\na:2\nb:2\n"), "{hf}");
        let sl = render(Format::Slurm, &t, &m);
        assert!(
            sl.contains("cat > tdmap.hosts <<'EOF'\na\na\nb\nb\nEOF\n"),
            "{sl}"
        );
        assert!(
            sl.contains("cat > tdmap.cpus <<'EOF'\n1\n0\n1\n0\nEOF\n"),
            "{sl}"
        );
        // One list fits both hosts: map_cpu is the command (not a comment), which Slurm
        // checks against the step's CPUs; taskset is the commented alternative.
        assert!(
            sl.contains("\nSLURM_HOSTFILE=tdmap.hosts srun --distribution=arbitrary --ntasks=4 --cpu-bind=map_cpu:1,0 COMMAND\n"),
            "{sl}"
        );
        assert!(sl.contains("\n# SLURM_HOSTFILE=tdmap.hosts srun --distribution=arbitrary --ntasks=4 --cpu-bind=none sh -c 'exec taskset"), "{sl}");
    }

    /// Regression: the hostfile's binding list was checked per host, but Hydra indexes
    /// it per hostfile line: with ranks on a, b, a (CPUs 0, 0, 1), host a's list is 0,1
    /// yet the third line's only rank is local rank 0 of its proxy, which `user:0,1`
    /// would bind to CPU 0, not 1.
    #[test]
    fn hydra_binds_by_line_not_by_host() {
        let t = cluster();
        let m = [0, 2, 1, 3];
        let hf = render(Format::Hostfile, &t, &m);
        assert!(!hf.contains("-bind-to user:"), "{hf}");
        // By line, agreeing lists still give one command: a:2 (0,1), b:2 (0,1).
        let hf = render(Format::Hostfile, &t, &[0, 1, 2, 3]);
        assert!(hf.contains("-bind-to user:0,1 COMMAND\na:2\nb:2\n"), "{hf}");
    }

    #[test]
    fn hosts_with_different_lists_bind_through_the_cpu_file() {
        let t = cluster();
        // Host a: ranks 0, 2 on CPUs 0, 1; host b: rank 1 on CPU 1, rank 3 on CPU 0.
        let m = [0, 3, 1, 2];
        let hf = render(Format::Hostfile, &t, &m);
        assert!(!hf.contains("-bind-to user:"), "{hf}");
        assert!(hf.contains("PMI_RANK+1"), "{hf}");
        assert!(hf.contains("printf '%s\\n' 0 1 1 0 > tdmap.cpus"), "{hf}");
        assert!(hf.ends_with("a:1\nb:1\na:1\nb:1\n"), "{hf}");
        let sl = render(Format::Slurm, &t, &m);
        assert!(!sl.contains("map_cpu:"), "{sl}");
        assert!(
            sl.contains("\nSLURM_HOSTFILE=tdmap.hosts srun --distribution=arbitrary --ntasks=4 --cpu-bind=none sh -c 'exec taskset -c \"$(sed -n \"$((SLURM_PROCID+1))p\" tdmap.cpus)\" COMMAND'\n"),
            "{sl}"
        );
    }
}
