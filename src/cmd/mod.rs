//! The subcommands, one file each; this module only dispatches.

mod analyze;
mod canvas;
mod cc;
mod comm;
mod exec;
mod from_trace;
mod generate;
mod heatmap;
mod map;
mod mapping;
mod report;
mod run;
mod sim;
mod topo;
mod trace;
mod trace_check;

use clap::{Parser, Subcommand};

/// Sharing-aware thread and data mapping for NUMA machines.
///
/// tdmap finds out which threads share which data and which NUMA node touches each page,
/// then places threads on cores and pages on memory nodes so that accesses stay local.
#[derive(Debug, Parser)]
#[command(name = "tdmap", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show a machine's topology: the tree, node distances and NUMA factor.
    Topo(topo::Args),
    /// Map threads onto PUs from a sharing matrix and print the mapping ready to paste.
    Map(map::Args),
    /// Compile C for exact tracing: clang with load/store callbacks and the tdmap runtime.
    ///
    /// Runs clang-16 with `-fsanitize-coverage=edge,trace-loads,trace-stores` and links
    /// tdmap's runtime, which records every load and store for `tdmap trace`.
    Cc(cc::Args),
    /// Compile C++ for exact tracing, like `tdmap cc` (clang++-16).
    #[command(name = "c++")]
    Cxx(cc::Args),
    /// Compile C for exact tracing with gcc: ThreadSanitizer's hooks, tdmap's runtime.
    ///
    /// Runs gcc with `-fsanitize=thread` given to the compiler proper only, and links
    /// tdmap's runtime (which defines the `__tsan_*` entry points and performs every
    /// atomic for real) instead of libtsan; OpenMP programs keep libgomp.
    Gcc(cc::Args),
    /// Compile C++ for exact tracing with g++, like `tdmap gcc`.
    #[command(name = "g++")]
    Gxx(cc::Args),
    /// Compile Fortran for exact tracing with gfortran, like `tdmap gcc`.
    Gfortran(cc::Args),
    /// Run a program built with a tdmap front (`tdmap cc`, `tdmap gcc`, ...) and write
    /// the exact trace of its accesses.
    Trace(trace::Args),
    /// Check a trace file's invariants and print its counts.
    TraceCheck(trace_check::Args),
    /// Analyse a trace: sharing metrics, top pairs, heatmap and a mapping verdict.
    ///
    /// Without --machine, the machine recorded in the trace is used if tdmap knows it,
    /// else this machine. Threads sit on the node of the CPU recorded for them, or else
    /// in blocks (thread t of T on node t*N/T).
    Analyze(analyze::Args),
    /// Replay a trace on a modelled NUMA machine under each policy (SIMULATED figures).
    Sim(sim::Args),
    /// Run a program with its threads (or MPI ranks) pinned as a mapping file says.
    ///
    /// Refuses to start (exit 2) a mapping made for another machine or naming CPUs
    /// outside this process's allocation; exits with the program's exit code.
    Exec(exec::Args),
    /// Run a program under kMAF-style online thread and data mapping, then report.
    ///
    /// The program's output is untouched; the report goes to stderr (or --report FILE);
    /// tdmap exits with the program's exit code.
    Run(run::Args),
    /// Run an MPI job with libtdmap_mpi preloaded and write its communication matrix.
    ///
    /// Each rank counts the bytes and messages it sends per destination (point-to-point
    /// exactly, collectives by a documented model, any communicator in world ranks) and
    /// writes its row at MPI_Finalize; tdmap assembles them into a `tdmap-comm` file that
    /// `tdmap map --comm` reads, and reports the time spent in the library.
    Comm(comm::Args),
    /// Write one self-contained HTML page from a trace or its analysis, a sim result, a
    /// run report and a mapping.
    ///
    /// The page holds the machine with each thread in its PU, the sharing heatmaps with
    /// NUMA-node and package boundaries, the exclusivity histogram and top pairs, the
    /// SIMULATED policy chart and a run's timeline; its CSS, script and pictures are
    /// inline, so it opens with no network.
    Report(report::Args),
    /// Write the man pages, shell completions or CLI reference made from this command line.
    #[command(hide = true)]
    Generate(generate::Args),
}

/// `--machine SPEC` and `--distances`, shared by every command that needs a machine.
#[derive(Debug, Clone, clap::Args)]
pub struct MachineArgs {
    /// The machine: a preset name (see `tdmap topo --list-presets`), an hwloc synthetic
    /// string such as "package:2 numa:2 core:4 pu:2", an hwloc XML file from `lstopo
    /// machine.xml`, or a cluster of N hosts of one such machine, `cluster:Nx(HOST)` or
    /// `cluster:Nx(HOST),net=D` with D the node distance between hosts (default 5 × the
    /// host's largest), e.g. "cluster:64x(xeon-x7550-4s),net=200" or
    /// "cluster:4x(package:1 core:64)". Default: this machine.
    #[arg(long, short = 'm', value_name = "SPEC")]
    pub machine: Option<String>,
    /// Host names of a cluster, one per line or as Slurm nodelists (node[01-64]); `#`
    /// starts a comment line; a blank line or a name given twice is an error. With a
    /// machine that is not a cluster:, the cluster is one such machine per name.
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<std::path::PathBuf>,
    /// Map onto every PU of this machine, not only the CPUs this process may use (its
    /// CPU binding from taskset, cgroups or a Slurm step, within hwloc's allowed set).
    #[arg(long)]
    pub whole_machine: bool,
    /// Node distances replacing the machine's: "local:remote" (e.g. 10:21) or a square
    /// matrix with rows separated by ';' (e.g. "10,21;21,10"). For a cluster, each
    /// host's (the network distance is the spec's net=D).
    #[arg(long, value_name = "D")]
    pub distances: Option<String>,
}

impl MachineArgs {
    /// Loads the named machine, or this one: on this machine, only the CPUs this process
    /// may use unless --whole-machine (said on stderr); with --hosts, named hosts.
    pub fn load(&self) -> anyhow::Result<tdmap_topo::Topology> {
        let mut spec = tdmap_topo::MachineSpec::parse(self.machine.as_deref().unwrap_or(""));
        let names = match &self.hosts {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| crate::exit::input(format!("--hosts {}: {e}", path.display())))?;
                let names = tdmap_topo::parse_hosts(&text)
                    .map_err(|e| crate::exit::input(format!("--hosts {}: {e}", path.display())))?;
                if !matches!(spec, tdmap_topo::MachineSpec::Cluster { .. }) {
                    spec = tdmap_topo::MachineSpec::Cluster {
                        hosts: names.len(),
                        host: Box::new(spec),
                        net: None,
                    };
                }
                Some(names)
            }
            None => None,
        };
        let allowed = allowed_cpus(spec.is_live() && !self.whole_machine)?;
        let mut topo = spec
            .load_within(self.distances.as_deref(), allowed.as_deref())
            .map_err(crate::exit::input)?;
        if let (Some(names), Some(path)) = (names, &self.hosts) {
            topo.set_host_names(names)
                .map_err(|e| crate::exit::input(format!("--hosts {}: {e}", path.display())))?;
        }
        say_restricted(&topo);
        Ok(topo)
    }

    /// The machine named by `--machine`, else `recorded` (the one the trace or model
    /// `file` was made on) if tdmap knows it, else this machine; a bad spec is bad input,
    /// and a recorded machine over the size limits is refused rather than replaced by
    /// this one, which would map onto a machine nobody asked for.
    pub fn load_or_recorded(
        &self,
        recorded: &str,
        file: &std::path::Path,
    ) -> anyhow::Result<tdmap_topo::Topology> {
        if self.machine.is_none() && !recorded.is_empty() {
            let spec = tdmap_topo::MachineSpec::parse(recorded);
            match spec.load(self.distances.as_deref()) {
                Ok(t) => return Ok(t),
                Err(e @ tdmap_topo::TopoError::TooBig { .. }) => {
                    return Err(crate::exit::input(format!(
                        "{}: the machine it records: {e}; pass --machine",
                        file.display()
                    )))
                }
                Err(_) => {}
            }
        }
        self.load()
    }

    /// The hwloc XML file `--machine` names, if it names one: an input of the command.
    pub fn file(&self) -> Option<std::path::PathBuf> {
        match tdmap_topo::MachineSpec::parse(self.machine.as_deref()?) {
            tdmap_topo::MachineSpec::Xml(p) => Some(p),
            _ => None,
        }
    }
}

/// The CPUs this process may use (its `sched_getaffinity`), when `wanted`: what the live
/// machine is restricted to (hwloc has already dropped the PUs outside its allowed set).
/// A machine replayed from a capture (`TDMAP_FSROOT`) is not the one tdmap runs on, so
/// its binding says nothing about it: no restriction then.
pub(crate) fn allowed_cpus(wanted: bool) -> anyhow::Result<Option<Vec<usize>>> {
    use tdmap_sys::Sys;
    let replayed = tdmap_sys::FsRoot::from_env() != tdmap_sys::FsRoot::default();
    Ok(if wanted && !replayed {
        Some(tdmap_sys::LinuxSys.get_affinity(0)?)
    } else {
        None
    })
}

/// Says in one stderr line that `topo` is this machine restricted to the CPUs tdmap may
/// use, if it is.
pub(crate) fn say_restricted(topo: &tdmap_topo::Topology) {
    if let Some(r) = &topo.restricted {
        eprintln!(
            "tdmap: restricted to CPUs {} of this machine's {} (this process's CPU binding); --whole-machine uses all",
            cpu_list(&r.allowed),
            r.of
        );
    }
}

pub(crate) use tdmap_topo::cpu_list;

/// Bad input about file `path`: `err` prefixed with the file's name, unless it names the
/// file already (a trace's I/O errors do), so that the name is printed once.
pub(crate) fn input_about(path: &std::path::Path, err: impl std::fmt::Display) -> anyhow::Error {
    let msg = err.to_string();
    let name = path.display().to_string();
    if msg.contains(&name) {
        crate::exit::input(msg)
    } else {
        crate::exit::input(format!("{name}: {msg}"))
    }
}

/// Says on stderr, in one line, that the trace `name` is Incomplete and where it ends
/// (the rule is [`tdmap_trace::Ending`]'s); returns whether it is Complete.
pub(crate) fn say_ending(name: &str, ending: Option<tdmap_trace::Ending>) -> bool {
    match ending {
        Some(e) => {
            if let Some(note) = e.notice(name) {
                eprintln!("tdmap: {note}");
            }
            e.complete()
        }
        None => false,
    }
}

/// Runs the chosen subcommand and returns its exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Topo(args) => topo::run(args),
        Command::Map(args) => map::run(args),
        Command::Cc(args) => cc::run(args, cc::Lang::C),
        Command::Cxx(args) => cc::run(args, cc::Lang::Cxx),
        Command::Gcc(args) => cc::run(args, cc::Lang::Gcc),
        Command::Gxx(args) => cc::run(args, cc::Lang::Gxx),
        Command::Gfortran(args) => cc::run(args, cc::Lang::Gfortran),
        Command::Trace(args) => trace::run(args),
        Command::TraceCheck(args) => trace_check::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Exec(args) => exec::run(args),
        Command::Run(args) => run::run(args),
        Command::Comm(args) => comm::run(args),
        Command::Report(args) => report::run(args),
        Command::Generate(args) => generate::run(args),
    }
}
