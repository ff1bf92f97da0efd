//! Issue 20 must-show 3: the Open MPI rankfile and the MPICH hostfile that `tdmap map`
//! prints for a localhost "cluster" are accepted by `mpirun.openmpi` and
//! `mpiexec.mpich`, run with the command tdmap prints in the file's first lines, and
//! each rank lands where the file says: each rank reports its own `Cpus_allowed_list`
//! from `/proc/self/status` (a binding, not `sched_getcpu()`, which on 2 CPUs matches
//! by chance half the time). Skipped, with a message, without the MPI binaries or with
//! fewer than 2 CPUs; `scripts/setup.sh` installs both MPIs.

mod common;

use std::path::Path;
use std::process::Command;

fn scratch(name: &str) -> common::TempDir {
    common::TempDir::new(&format!("tdmap-launch-{name}"))
}

fn have(bin: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {bin}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn two_cpus() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .is_some_and(|l| l.trim().starts_with("0-") || l.trim().starts_with("0,1"))
}

/// A rank: prints its rank (Open MPI's or MPICH's variable) and the CPU list of its own
/// process (`$$` is the shell the MPI launcher started and bound).
fn rank_script(dir: &Path) -> String {
    let p = dir.join("where.sh");
    std::fs::write(
        &p,
        "#!/bin/sh\nr=${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\n\
         while read k v; do [ \"$k\" = Cpus_allowed_list: ] && echo \"rank $r cpus $v\"; done < /proc/$$/status\nexit 0\n",
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&p).status().unwrap();
    p.to_str().unwrap().to_string()
}

/// `tdmap map` of a 2-rank matrix onto a one-host localhost cluster, in `format`, with
/// the seed of a random mapping that swaps the ranks (rank 0 on CPU 1), so that a
/// launcher ignoring the file would not land there by its defaults.
fn launch_file(dir: &Path, format: &str) -> String {
    let m = dir.join("m.csv");
    std::fs::write(&m, "0,1\n1,0\n").unwrap();
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "localhost\n").unwrap();
    for seed in 0..64 {
        let out = Command::new(env!("CARGO_BIN_EXE_tdmap"))
            .args([
                "map",
                "--whole-machine",
                "-a",
                "random",
                "--seed",
                &seed.to_string(),
            ])
            .args([
                "--matrix",
                m.to_str().unwrap(),
                "--hosts",
                hosts.to_str().unwrap(),
            ])
            .args(["--format", format])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let swapped = match format {
            "rankfile" => text.contains("rank 0=localhost slot=1\n"),
            _ => text.contains("-bind-to user:1,0 "),
        };
        if swapped {
            return text;
        }
    }
    panic!("no seed in 0..64 swaps two ranks");
}

/// The command in the file's comment lines, FILE and COMMAND filled in.
fn command_of(text: &str, prefix: &str, file: &Path, program: &str) -> Vec<String> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("# ").filter(|l| l.starts_with(prefix)))
        .unwrap_or_else(|| panic!("no '# {prefix}' line in {text}"));
    line.split_whitespace()
        .map(|w| match w {
            "FILE" => file.to_str().unwrap().to_string(),
            "COMMAND" => program.to_string(),
            w => w.to_string(),
        })
        .collect()
}

/// Runs the launcher and returns the CPU list each rank reported, by rank.
fn ranks_cpus(cmd: &[String], extra: &[&str]) -> Vec<String> {
    let mut c = Command::new("timeout");
    c.arg("60").arg(&cmd[0]).args(extra).args(&cmd[1..]);
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{cmd:?}: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut got: Vec<(usize, String)> = text
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("rank ")?;
            let (r, cpus) = rest.split_once(" cpus ")?;
            Some((r.parse().ok()?, cpus.trim().to_string()))
        })
        .collect();
    got.sort();
    got.into_iter().map(|(_, c)| c).collect()
}

#[test]
fn open_mpi_accepts_the_rankfile_and_ranks_land_on_its_slots() {
    if !have("mpirun.openmpi") || !two_cpus() {
        eprintln!(
            "skipped: needs mpirun.openmpi (scripts/setup.sh installs openmpi-bin) and CPUs 0-1"
        );
        return;
    }
    let dir = scratch("ompi");
    let text = launch_file(&dir, "rankfile");
    let file = dir.join("rankfile");
    std::fs::write(&file, &text).unwrap();
    let cmd = command_of(&text, "mpirun.openmpi", &file, &rank_script(&dir));
    // As root, Open MPI wants these; they change nothing in the placement.
    let got = ranks_cpus(&cmd, &["--allow-run-as-root", "--oversubscribe"]);
    assert_eq!(got, ["1", "0"], "{text}");
}

#[test]
fn mpich_accepts_the_hostfile_and_ranks_land_on_its_binding() {
    if !have("mpiexec.mpich") || !two_cpus() {
        eprintln!("skipped: needs mpiexec.mpich (scripts/setup.sh installs mpich) and CPUs 0-1");
        return;
    }
    let dir = scratch("mpich");
    let text = launch_file(&dir, "hostfile");
    let file = dir.join("hostfile");
    std::fs::write(&file, &text).unwrap();
    let cmd = command_of(&text, "mpiexec.mpich", &file, &rank_script(&dir));
    let got = ranks_cpus(&cmd, &[]);
    assert_eq!(got, ["1", "0"], "{text}");
}

/// Two "hosts" that are both this machine (`localhost` and its hostname, which Hydra
/// starts locally), ranks alternating between them: Hydra gives each hostfile line its
/// own proxy, so one `-bind-to user:` list cannot place them, and tdmap's hostfile falls
/// back to each rank binding itself from `tdmap.cpus`. The printed commands (the
/// `printf` and the `mpiexec.mpich`) are run by a shell as printed.
#[test]
fn mpich_ranks_alternating_between_hosts_bind_through_the_cpu_file() {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let hostname = hostname.trim();
    if !have("mpiexec.mpich") || !two_cpus() || hostname.is_empty() || hostname == "localhost" {
        eprintln!("skipped: needs mpiexec.mpich, CPUs 0-1 and a hostname other than localhost");
        return;
    }
    let dir = scratch("mpich-alt");
    let m = dir.join("m.csv");
    std::fs::write(&m, "0,1,1\n1,0,1\n1,1,0\n").unwrap();
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, format!("localhost\n{hostname}\n")).unwrap();
    let text = (0..256)
        .map(|seed| {
            let out = Command::new(env!("CARGO_BIN_EXE_tdmap"))
                .args([
                    "map",
                    "--whole-machine",
                    "-a",
                    "random",
                    "--seed",
                    &seed.to_string(),
                ])
                .args([
                    "--matrix",
                    m.to_str().unwrap(),
                    "--hosts",
                    hosts.to_str().unwrap(),
                ])
                .args(["--format", "hostfile"])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        })
        .find(|t| {
            t.contains("tdmap.cpus") && t.lines().filter(|l| !l.starts_with('#')).count() == 3
        })
        .expect("a seed that alternates hosts with differing CPU lists");
    let file = dir.join("hostfile");
    std::fs::write(&file, &text).unwrap();
    let script = rank_script(&dir);
    let printf = text
        .lines()
        .find_map(|l| l.strip_prefix("#  printf"))
        .expect("the printf line");
    let run = text
        .lines()
        .find_map(|l| l.strip_prefix("# mpiexec.mpich"))
        .expect("the mpiexec line")
        .replace("FILE", file.to_str().unwrap())
        .replace("COMMAND", &script);
    let out = Command::new("timeout")
        .current_dir(&dir)
        .args([
            "60",
            "sh",
            "-c",
            &format!("printf{printf} && mpiexec.mpich{run}"),
        ])
        .output()
        .unwrap();
    let got = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{got}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<String> = std::fs::read_to_string(dir.join("tdmap.cpus"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut ranks: Vec<(usize, String)> = got
        .lines()
        .filter_map(|l| {
            let (r, c) = l.strip_prefix("rank ")?.split_once(" cpus ")?;
            Some((r.parse().ok()?, c.trim().to_string()))
        })
        .collect();
    ranks.sort();
    let ranks: Vec<String> = ranks.into_iter().map(|(_, c)| c).collect();
    assert_eq!(ranks, want, "{text}");
}
